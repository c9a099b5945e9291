// CannedDocker: a DockerApi that answers each GET from a table of bodies,
// for what a reader of Docker's answers makes of a body the fake daemon
// would never send. A target it was not given answers 404.
//
//   CannedDocker docker;
//   docker.Answer("/version", R"({"Version": 24})");
//   DockerReply reply = docker.Get(endpoint, "/version", timeout);
#pragma once

#include <map>
#include <string>

#include "mojoup/probe/docker_api.h"

namespace mojoup::test {

class CannedDocker : public probe::DockerApi {
 public:
  // `target` answers HTTP `status` with `body` (and an Api-Version header
  // when `api_version` is not empty).
  void Answer(const std::string& target, std::string body, int status = 200,
              std::string api_version = {}) {
    probe::DockerReply reply;
    reply.failure = probe::DockerReply::Failure::kNone;
    reply.status = status;
    reply.body = std::move(body);
    reply.api_version = std::move(api_version);
    replies_[target] = std::move(reply);
  }

  probe::DockerReply Send(const probe::DockerEndpoint& /*endpoint*/, std::string_view /*method*/,
                          std::string_view target, std::string_view /*body*/,
                          std::chrono::milliseconds /*timeout*/) override {
    if (auto it = replies_.find(std::string(target)); it != replies_.end()) return it->second;
    probe::DockerReply missing;
    missing.failure = probe::DockerReply::Failure::kNone;
    missing.status = 404;
    return missing;
  }

  probe::DockerReply Upgrade(const probe::DockerEndpoint& endpoint, std::string_view method,
                             std::string_view target, std::string_view body,
                             std::chrono::milliseconds timeout,
                             probe::DockerStream& /*stream*/) override {
    return Send(endpoint, method, target, body, timeout);
  }

 private:
  std::map<std::string, probe::DockerReply> replies_;
};

}  // namespace mojoup::test
