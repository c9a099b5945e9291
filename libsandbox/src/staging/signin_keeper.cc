#include "staging/signin_keeper.h"

#include <limits.h>
#include <stdlib.h>

#include <cmath>

#include "fileinfo/file_info.h"
#include "fmt/format.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/rfc3339.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/sha256.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::sandbox {
namespace {

// The file a host path names, links followed: what is read and replaced (a
// sign-in kept in a dotfiles repository stays a link to it).
std::string Resolved(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return path;
  return resolved;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

// The parent object's path of a sign-in's secret: where its stamps are.
std::vector<std::string> Parent(const std::vector<std::string>& path) {
  return {path.begin(), path.end() - 1};
}

// Where `pattern` ("claudeAiOauth/expiresAt", "*" for any one name) puts a
// stamp of the sign-in in `object`: beside its tokens, or at the top of the
// file when the pattern is one name (Codex's last_refresh). nullopt when it
// is not this sign-in's.
std::optional<std::vector<std::string>> StampPath(std::string_view pattern,
                                                  const std::vector<std::string>& object) {
  const std::string name(pattern.substr(pattern.rfind('/') + 1));
  if (name.size() == pattern.size()) return std::vector<std::string>{name};
  std::vector<std::string> path = object;
  path.push_back(name);
  if (!PathMatches(pattern, path)) return std::nullopt;
  return path;
}

}  // namespace

SignInKeeper::SignInKeeper(const SignInStaging& staging, Clock now)
    : tool_(staging.tool), now_(std::move(now)), secrets_(staging.secrets) {
  for (const SignInFile& file : staging.files) {
    if (!file.stand_ins) continue;
    HostFile host;
    host.home_relative = file.home_relative;
    host.host_path = file.host_path;
    host.mode = file.mode;
    host.expected_sha = file.host_sha256;
    files_.emplace(file.home_relative, std::move(host));
  }
}

SignInKeeper::HostFile* SignInKeeper::FileOf(const std::string& sign_in) {
  for (const StagedSecret& secret : secrets_) {
    if (secret.sign_in != sign_in) continue;
    auto found = files_.find(secret.home_relative);
    return found == files_.end() ? nullptr : &found->second;
  }
  return nullptr;
}

void SignInKeeper::Notice(std::string sentence) {
  for (const std::string& said : report_.notices) {
    if (said == sentence) return;
  }
  report_.notices.push_back(std::move(sentence));
}

void SignInKeeper::Refreshed(const credproxy::TokenRefresh& refresh) {
  absl::MutexLock lock(&mu_);
  HostFile* file = FileOf(refresh.sign_in);
  if (file == nullptr) return;
  std::vector<std::string> object;
  for (const credproxy::TokenRefresh::Token& token : refresh.tokens) {
    for (const StagedSecret& secret : secrets_) {
      if (secret.credential != token.name) continue;
      file->pending.push_back({secret.path, token.value});
      object = Parent(secret.path);
    }
  }
  if (file->pending.empty()) return;
  // The bookkeeping a refresh rewrites, as the provider answered it.
  const auto now = now_();
  if (const policy::ToolProfile* profile = policy::FindToolProfile(tool_)) {
    for (const policy::SignInStamp& stamp : profile->sign_in_stamps) {
      if (stamp.file != file->home_relative) continue;
      const std::optional<std::vector<std::string>> at = StampPath(stamp.path, object);
      if (!at) continue;
      const std::vector<std::string>& path = *at;
      if (stamp.kind == policy::RefreshStamp::kRefreshedAt) {
        file->pending.push_back({path, internal::Rfc3339(now)});
      } else if (refresh.expires_in && std::isfinite(*refresh.expires_in) &&
                 *refresh.expires_in > 0 && *refresh.expires_in < 1e9) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            now.time_since_epoch())
                            .count() +
                        static_cast<std::int64_t>(*refresh.expires_in * 1000);
        file->pending.push_back({path, static_cast<std::int64_t>(ms)});
      }
    }
  }
  TryWrite(*file);
}

void SignInKeeper::HostKept(HostFile& file) {
  Notice(fmt::format(
      "{} changed on the host during the session, so the host's copy was kept and the "
      "session's refreshed tokens were not written to it",
      file.host_path));
  file.pending.clear();
}

void SignInKeeper::TryWrite(HostFile& file) {
  if (file.pending.empty()) return;
  const std::string path = Resolved(file.host_path);
  auto host = internal::ReadRegularFile(path, kMaxSignInFileBytes);
  if (!host.ok() || internal::Sha256Hex(host->bytes) != file.expected_sha) {
    // The user's copy changed (or went): it wins over the session's.
    HostKept(file);
    return;
  }
  absl::StatusOr<std::string> updated = UpdateJson(file.host_path, host->bytes, file.pending);
  if (!updated.ok()) {
    report_.errors.push_back(fmt::format("{} was not given the refreshed tokens: {}",
                                         file.host_path, Message(updated.status())));
    file.pending.clear();
    return;
  }
  // Compare and swap: the file is read once more just before it is replaced.
  auto again = internal::ReadRegularFile(path, kMaxSignInFileBytes);
  if (!again.ok() || again->bytes != host->bytes) {
    HostKept(file);
    return;
  }
  if (absl::Status put = internal::ReplaceAtomically(path, *updated, host->info.st_mode & 0777u);
      !put.ok()) {
    // Kept pending: Finish tries again, and says so if that fails too.
    file.last_error = fmt::format("{} was not given the session's refreshed tokens: {}",
                                  file.host_path, Message(put));
    return;
  }
  file.expected_sha = internal::Sha256Hex(*updated);
  file.pending.clear();
  file.seen_stat = ::stat(path.c_str(), &file.last) == 0;
  if (std::find(report_.written.begin(), report_.written.end(), file.host_path) ==
      report_.written.end()) {
    report_.written.push_back(file.host_path);
  }
}

credproxy::SignInCheck SignInKeeper::Check(const std::string& sign_in) {
  absl::MutexLock lock(&mu_);
  HostFile* file = FileOf(sign_in);
  if (file == nullptr) return {};
  const std::string path = Resolved(file->host_path);
  struct stat now {};
  if (file->seen_stat && ::stat(path.c_str(), &now) == 0 && SameFile(now, file->last)) return {};
  auto host = internal::ReadRegularFile(path, kMaxSignInFileBytes);
  const std::string sha = host.ok() ? internal::Sha256Hex(host->bytes) : "";
  if (sha == file->expected_sha) {
    file->last = host->info;
    file->seen_stat = true;
    return {};
  }
  // The user signed in or refreshed on the host: their copy wins.
  std::vector<const StagedSecret*> secrets;
  std::vector<std::vector<std::string>> paths;
  for (const StagedSecret& secret : secrets_) {
    if (secret.sign_in != sign_in) continue;
    secrets.push_back(&secret);
    paths.push_back(secret.path);
  }
  const std::vector<std::optional<std::string>> values =
      JsonStringsAt(host.ok() ? std::string_view(host->bytes) : std::string_view(), paths);
  credproxy::SignInCheck check;
  check.state = credproxy::SignInCheck::State::kRenewed;
  for (std::size_t i = 0; i < secrets.size(); ++i) {
    if (!values[i] || values[i]->size() < 8) {
      check.state = credproxy::SignInCheck::State::kStale;
      check.tokens.clear();
      check.why = fmt::format("{} changed on the host during the session and no longer holds {}",
                              file->host_path, DottedPath(secrets[i]->path));
      Notice(check.why + ", so the session's sign-in went stale");
      return check;
    }
    check.tokens.emplace_back(secrets[i]->credential, *values[i]);
  }
  file->expected_sha = sha;
  file->pending.clear();
  file->last = host->info;
  file->seen_stat = true;
  Notice(fmt::format("{} changed on the host during the session; the session went on with the "
                     "host's new tokens",
                     file->host_path));
  return check;
}

WriteBackReport SignInKeeper::Finish() {
  absl::MutexLock lock(&mu_);
  for (auto& [name, file] : files_) {
    TryWrite(file);
    if (!file.pending.empty() && !file.last_error.empty()) report_.errors.push_back(file.last_error);
  }
  return report_;
}

}  // namespace mojoup::sandbox
