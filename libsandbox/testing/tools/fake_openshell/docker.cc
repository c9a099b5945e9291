// Docker access: the Engine API client and how its failures reach the user.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <optional>
#include <string>
#include <string_view>

#include "fake_openshell.h"
#include "fmt/format.h"
#include "mojoup/probe/kernel.h"

namespace mojoup::fake_openshell {

std::optional<Docker> ConnectDocker(std::string& error) {
  auto kernel = mojoup::probe::MakeSystemKernel();
  auto endpoint = mojoup::probe::ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) {
    error = std::string(endpoint.status().message());
    return std::nullopt;
  }
  return Docker(*endpoint, mojoup::probe::MakeDockerApi());
}

bool Answered(const DockerReply& reply, std::initializer_list<int> statuses) {
  return reply.failure == DockerReply::Failure::kNone &&
         std::find(statuses.begin(), statuses.end(), reply.status) != statuses.end();
}

int DockerFailed(std::string_view what, const DockerReply& reply) {
  return PrintError(GrpcError("Internal", fmt::format("{}: {}", what, DockerReplyProblem(reply))));
}

int NoDocker(std::string_view why) {
  return PrintError(GrpcError("Unavailable", fmt::format("docker compute driver: {}", why)));
}

void WriteAllWaiting(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t put = ::write(fd, data, size);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && errno == EAGAIN) {
      pollfd wait{fd, POLLOUT, 0};
      ::poll(&wait, 1, -1);
      continue;
    }
    if (put <= 0) return;
    data += put;
    size -= static_cast<std::size_t>(put);
  }
}

}  // namespace mojoup::fake_openshell
