// The service's systemd unit, enabled for `mojoup-node setup --service`.
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "mojoup/probe/command_runner.h"
#include "mojoup/service/server.h"

namespace mojoup {

absl::Status EnableServiceUnit(std::string_view kind) {
  if (kind != "user" && kind != "system") {
    return absl::InvalidArgumentError(
        fmt::format("--service {}: expected user, system or no", kind));
  }
  if (kind == "system" && geteuid() != 0) {
    return absl::FailedPreconditionError(
        "the system service is root's to enable: run `sudo systemctl enable --now "
        "mojoup-node.service`");
  }
  std::vector<std::string> argv = {"systemctl"};
  if (kind == "user") argv.push_back("--user");
  argv.insert(argv.end(), {"enable", "--now", "mojoup-node.service"});
  auto runner = probe::MakeSystemCommandRunner();
  probe::CommandResult done = runner->Run(argv, std::chrono::seconds(60));
  if (done.Succeeded()) return absl::OkStatus();
  std::string why = done.err.empty() ? done.out : done.err;
  while (!why.empty() && (why.back() == '\n' || why.back() == '.')) why.pop_back();
  return absl::FailedPreconditionError(
      fmt::format("cannot enable the {} sandbox service ({}); `mojoup-node serve` runs it without "
                  "systemd",
                  kind, why.empty() ? std::string("systemctl failed") : why));
}

}  // namespace mojoup
