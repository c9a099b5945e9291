// SignInKeeper: the host's side of a session's sign-in. The proxy tells it of
// every refresh it saw the provider answer, and it writes the provider's new
// tokens into the host's sign-in file at once (so the host is not logged out
// while the session runs) and again at the end: atomically, and only when
// the host file is still the copy it staged or last wrote (compare and
// swap), keeping the file's other members. Before the proxy uses a
// sign-in's tokens it asks whether the host's file changed: a user who
// refreshed on the host wins, and the session goes on with the host's new
// tokens, or is told its sign-in went stale.
//
//   auto keeper = std::make_shared<SignInKeeper>(*staging, now);
//   options.on_refresh = [keeper](const auto& r) { keeper->Refreshed(r); };
//   options.check_sign_in = [keeper](const auto& s) { return keeper->Check(s); };
//   ... the session ...
//   WriteBackReport report = keeper->Finish();
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/sandbox/signin.h"
#include "staging/signin_standins.h"

namespace mojoup::sandbox {

class SignInKeeper {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  SignInKeeper(const SignInStaging& staging, Clock now);

  // ProxyOptions::on_refresh: writes the new tokens to the host file now.
  void Refreshed(const credproxy::TokenRefresh& refresh) ABSL_LOCKS_EXCLUDED(mu_);
  // ProxyOptions::check_sign_in.
  credproxy::SignInCheck Check(const std::string& sign_in) ABSL_LOCKS_EXCLUDED(mu_);
  // Writes what could not be written yet; what was written during the
  // session and now, what the host kept, and what failed.
  WriteBackReport Finish() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct HostFile {
    std::string home_relative;
    std::string host_path;
    unsigned mode = 0600;
    std::string expected_sha;  // the host file as staged, or as last written here
    std::vector<JsonUpdate> pending;
    std::string last_error;  // why the pending write failed last
    bool seen_stat = false;
    struct stat last {};  // the host file when it last had expected_sha
  };

  HostFile* FileOf(const std::string& sign_in) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `file.pending` if the host file is still expected_sha.
  void TryWrite(HostFile& file) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notice(std::string sentence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The host's copy changed under a pending write: it wins, the write is dropped.
  void HostKept(HostFile& file) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // Set at construction, read-only after.
  std::string tool_;
  Clock now_;
  std::vector<StagedSecret> secrets_;
  std::map<std::string, HostFile> files_ ABSL_GUARDED_BY(mu_);  // by home_relative
  WriteBackReport report_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mojoup::sandbox
