#include "mojoup/service/anywhere.h"

#include "fmt/format.h"

namespace mojoup {

absl::StatusOr<std::vector<std::string>> StopSessionAnywhere(Node& node, ServiceClient* service,
                                                             const std::string& id) {
  if (service != nullptr && service->Get(id).ok()) {
    if (auto code = service->Stop(id); !code.ok()) return code.status();
    return std::vector<std::string>{};
  }
  auto stopped = node.Stop(id);
  if (!stopped.ok()) return stopped.status();
  return stopped->errors;
}

std::optional<std::string> ServiceStatusLine() {
  auto client = ServiceClient::Connect();
  if (!client.ok()) return std::nullopt;
  auto listed = client->Sessions();
  return fmt::format(
      "The sandbox service on {} answers{}.", client->socket(),
      listed.ok() ? fmt::format(" and runs {} of your sessions", listed->size()) : "");
}

}  // namespace mojoup
