// Reading a session's audit through the node: found by the session's id in
// this node's state directory, whether the session still runs or not.
#include <filesystem>

#include "fmt/format.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/session_id.h"
#include "mojoup/sandbox/node.h"
#include "mojoup/sandbox/session.h"
#include "node/node_state.h"

namespace mojoup {
namespace {

// The bound a reader takes: the node's for a session (the writer keeps its
// end line within it).
sandbox::AuditReadOptions AuditBound(const policy::NodeConfig& config, std::uint64_t since) {
  return {.since = since, .max_bytes = policy::AuditMaxBytes(config)};
}

absl::StatusOr<std::string> AuditOf(const std::string& state_dir, const std::string& id) {
  if (!internal::IsRandomHex(id)) {
    return absl::InvalidArgumentError(
        fmt::format("the session id \"{}\" is not 16 lowercase hex digits", id));
  }
  // Nobody else may have put the file there, nor swapped the directory.
  if (absl::Status checked = internal::CheckPrivateDir(state_dir, "the node's state directory");
      !checked.ok()) {
    return checked;
  }
  return sandbox::AuditPath(state_dir, id);
}

absl::Status Unknown(const absl::Status& status, const std::string& id) {
  if (!absl::IsNotFound(status)) return status;
  return absl::NotFoundError(fmt::format("no audit of session {} on this node", id));
}

}  // namespace

absl::StatusOr<std::vector<sandbox::AuditLine>> Node::Audit(const std::string& id,
                                                            std::uint64_t since) const {
  auto path = AuditOf(state_->state_dir, id);
  if (!path.ok()) return Unknown(path.status(), id);
  auto lines = sandbox::ReadAudit(*path, AuditBound(state_->config, since));
  if (!lines.ok()) return Unknown(lines.status(), id);
  return lines;
}

absl::Status Node::FollowAudit(const std::string& id, std::uint64_t since,
                               const std::function<bool(const sandbox::AuditLine&)>& on_line,
                               std::function<bool()> stop) const {
  auto path = AuditOf(state_->state_dir, id);
  if (!path.ok()) return Unknown(path.status(), id);
  // A session whose owner died writes no end line: once its record is gone
  // (Reap), what was written is all there is. Its owner writes the end line
  // just after removing the record, so the record must be gone on two waits
  // in a row.
  const std::string record = state_->state_dir + "/sessions/" + id + ".json";
  sandbox::AuditFollowOptions options{.read = AuditBound(state_->config, since)};
  options.stop = [record, stop = std::move(stop), gone = 0]() mutable {
    std::error_code ec;
    gone = std::filesystem::exists(record, ec) ? 0 : gone + 1;
    return (stop && stop()) || gone >= 2;
  };
  return Unknown(sandbox::FollowAudit(*path, options, on_line), id);
}

}  // namespace mojoup
