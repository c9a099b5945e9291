// Ask, the operator's side: a session's approvals, listed and decided
// through its control socket (credproxy/approvals.h).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "fmt/format.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/session_id.h"
#include "mojoup/sandbox/node.h"
#include "node_state.h"

namespace mojoup {
namespace {

// The control socket of one of this node's sessions: an error that says
// why there is none. The session's directory is looked at without following
// links: the state directory is the user's alone (CheckPrivateDir). Each
// call on the socket requires this user to serve it, all the same.
absl::StatusOr<std::string> ControlSocketOf(const std::string& state_dir,
                                            const std::string& session) {
  if (!internal::IsRandomHex(session)) {
    return absl::InvalidArgumentError(
        fmt::format("session id \"{}\": expected 16 lowercase hex digits", session));
  }
  struct stat info {};
  const std::string dir = state_dir + "/sessions/" + session;
  if (lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return absl::NotFoundError(
        fmt::format("no session {} on this node (state directory {})", session, state_dir));
  }
  std::string socket = sandbox::ControlSocketPath(state_dir, session);
  if (lstat(socket.c_str(), &info) != 0 || !S_ISSOCK(info.st_mode)) {
    return absl::FailedPreconditionError(fmt::format(
        "session {} does not ask: its policy or this node leaves ask off (mojoup-node policy "
        "explain says which)",
        session));
  }
  return socket;
}

// The ids of the sessions in the state directory's sessions/.
std::vector<std::string> SessionIds(const std::string& state_dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir + "/sessions", ec)) {
    const std::string name = entry.path().filename().string();
    if (internal::IsRandomHex(name)) ids.push_back(name);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// A decided approval as explain shows it.
policy::SessionRule RuleOf(const credproxy::ApprovalInfo& approval) {
  return {approval.id, approval.host,    approval.port,  approval.scope,
          approval.by, approval.decided, approval.reason};
}

}  // namespace

absl::StatusOr<policy::SessionRules> SessionRulesOf(const std::string& state_dir,
                                                    const std::string& id) {
  // Every way of not being a live asking session of this user is the
  // caller's to fix: one sentence, InvalidArgument.
  auto refuse = [](const absl::Status& why) { return absl::InvalidArgumentError(why.message()); };
  if (!internal::IsRandomHex(id)) {
    return absl::InvalidArgumentError(
        fmt::format("--session {}: expected a session's id, 16 lowercase hex digits", id));
  }
  if (absl::Status dir = internal::CheckPrivateDir(state_dir, "the node's state directory");
      !dir.ok()) {
    if (!absl::IsNotFound(dir)) return refuse(dir);
    return absl::InvalidArgumentError(
        fmt::format("no session {} on this node (state directory {})", id, state_dir));
  }
  auto socket = ControlSocketOf(state_dir, id);
  if (!socket.ok()) return refuse(socket.status());
  auto list = credproxy::FetchApprovals(*socket, std::nullopt, {}, geteuid());
  if (absl::IsUnavailable(list.status())) {
    return absl::InvalidArgumentError(
        fmt::format("session {} is not running: {}", id, std::string(list.status().message())));
  }
  if (!list.ok()) return refuse(list.status());
  policy::SessionRules rules;
  rules.session = id;
  for (const credproxy::ApprovalInfo& approval : list->approvals) {
    if (approval.state == credproxy::ApprovalStateName(credproxy::ApprovalState::kDenied)) {
      rules.Add(RuleOf(approval), false);
    } else if (approval.state ==
                   credproxy::ApprovalStateName(credproxy::ApprovalState::kApproved) &&
               !(approval.used &&
                 approval.scope == credproxy::ApprovalScopeName(credproxy::ApprovalScope::kOnce))) {
      rules.Add(RuleOf(approval), true);
    }
  }
  return rules;
}

absl::StatusOr<credproxy::ApprovalList> Node::Approvals(const std::string& session,
                                                        std::optional<std::uint64_t> after,
                                                        std::chrono::milliseconds wait) const {
  const std::string& state_dir = state_->state_dir;
  if (absl::Status dir = internal::CheckPrivateDir(state_dir, "the node's state directory");
      !dir.ok()) {
    // No state directory yet: no sessions, so nothing asked.
    if (absl::IsNotFound(dir) && session.empty()) return credproxy::ApprovalList{};
    return dir;
  }
  if (!session.empty()) {
    auto socket = ControlSocketOf(state_dir, session);
    if (!socket.ok()) return socket.status();
    return credproxy::FetchApprovals(*socket, after, wait, geteuid());
  }
  credproxy::ApprovalList all;
  for (const std::string& id : SessionIds(state_dir)) {
    auto socket = ControlSocketOf(state_dir, id);
    if (!socket.ok()) continue;  // a session that does not ask has none
    auto list = credproxy::FetchApprovals(*socket, std::nullopt, {}, geteuid());
    if (!list.ok()) {
      state_->notice(fmt::format("session {}: {}", id, std::string(list.status().message())));
      continue;
    }
    for (credproxy::ApprovalInfo& approval : list->approvals) {
      all.approvals.push_back(std::move(approval));
    }
  }
  return all;
}

absl::StatusOr<credproxy::ApprovalInfo> Node::DecideApproval(const std::string& session,
                                                             const std::string& id, bool approve,
                                                             credproxy::ApprovalScope scope,
                                                             const std::string& reason) const {
  if (absl::Status dir = internal::CheckPrivateDir(state_->state_dir, "the node's state directory");
      !dir.ok()) {
    return dir;
  }
  auto socket = ControlSocketOf(state_->state_dir, session);
  if (!socket.ok()) return socket.status();
  return credproxy::SendDecision(*socket, id, approve, scope, reason, "", geteuid());
}

}  // namespace mojoup
