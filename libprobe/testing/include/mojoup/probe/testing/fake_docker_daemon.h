// FakeDockerDaemon: an in-process Docker Engine API stand-in on a real unix
// socket, for testing Docker clients against each way a daemon can fail.
//
//   FakeDockerDaemon daemon("/tmp/t/docker.sock", FakeDockerDaemon::Mode::kHang);
//   setenv("DOCKER_HOST", daemon.host().c_str(), 1);   // "unix:///tmp/t/docker.sock"
//   ... the client times out ...
//
// The daemon serves until it is destroyed, then removes its socket (except in
// kRefuse mode, whose point is the stale socket file it leaves).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mojoup::probe::testing {

class FakeDockerDaemon {
 public:
  enum class Mode {
    kAnswer,    // /_ping -> 200 OK, /version -> version_json
    kRefuse,    // a socket file with nothing listening: ECONNREFUSED
    kHang,      // accepts, reads, never answers
    kError500,  // every request -> 500 {"message": ...}
    kGarbage,   // answers with bytes that are not HTTP
  };

  FakeDockerDaemon(std::string socket_path, Mode mode);
  ~FakeDockerDaemon();
  FakeDockerDaemon(const FakeDockerDaemon&) = delete;
  FakeDockerDaemon& operator=(const FakeDockerDaemon&) = delete;

  // The engine and API versions the daemon reports: in /_ping's Server and
  // Api-Version headers, as dockerd does, and in /version (kAnswer).
  void SetVersion(std::string engine, std::string api_version);
  // Answer /_ping without those headers, as a proxy in front of a daemon may,
  // so clients must ask /version.
  void OmitPingHeaders();

  // An image the daemon holds (kAnswer): GET /images/<reference>/json, with
  // or without an API version prefix, answers its Id, Size and Config.Labels;
  // any other reference is a 404 "No such image: <reference>", as dockerd says.
  void AddImage(std::string reference, std::string id,
                std::map<std::string, std::string> labels = {}, std::int64_t size_bytes = 0);

  // "unix://<socket_path>"
  std::string host() const { return "unix://" + socket_path_; }
  const std::string& socket_path() const { return socket_path_; }
  // The request targets served so far ("/_ping", "/version").
  std::vector<std::string> requests() const;

 private:
  void Serve();

  struct State;
  std::string socket_path_;
  Mode mode_;
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace mojoup::probe::testing
