// InMemoryBackend: a Backend that keeps its sandboxes in memory, for testing
// the session lifecycle (and other programs' harnesses) without Docker.
//
// Each sandbox remembers the spec it was created from. Run() "runs" it by
// calling the script given for its command (default: exit 0), which may
// write to the caller's stdout. Failures can be injected per operation.
//
//   InMemoryBackend backend;
//   backend.SetScript([](const SandboxSpec& spec, const Stdio&) { return 3; });
//   SessionManager manager({.state_dir = dir, .backend = &backend, ...});
//   ...
//   CHECK(backend.sandboxes().empty());  // nothing left behind
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "mojoup/sandbox/backend.h"

namespace mojoup::sandbox::testing {

class InMemoryBackend final : public Backend {
 public:
  struct Sandbox {
    SandboxSpec spec;
    bool running = false;
    std::vector<int> signals;  // what Signal() delivered
  };
  using Script = std::function<int(const SandboxSpec& spec, const Stdio& stdio)>;

  // Backend's runtime properties, as this double reports them. By default
  // it needs no supervisor, leaves a missing image to its caller and gives a
  // command without a terminal no terminal input, as the openshell runtime
  // does, and names the proxy as the native runtime's sandboxes reach it; a
  // harness imitating another runtime sets that one's.
  struct Traits {
    bool needs_supervisor = false;
    bool explains_missing_image = false;
    std::string terminal_input_limit =
        "the openshell runtime streams input only to a command on a terminal; with output "
        "redirected the command gets none (pipe or redirect a file instead)";
    std::string proxy_address_inside = "127.0.0.1:3128";
  };

  std::string_view name() const override { return "memory"; }
  bool NeedsSupervisor() const override;
  bool ExplainsMissingImage() const override;
  std::string TerminalInputLimit() const override;
  std::string ProxyAddressInside() const override;
  absl::StatusOr<std::string> Create(const SandboxSpec& spec) override;
  absl::StatusOr<int> Run(const std::string& sandbox, const Stdio& stdio) override;
  absl::Status Signal(const std::string& sandbox, int signal) override;
  absl::Status Resize(const std::string& sandbox, unsigned short rows,
                      unsigned short columns) override;
  absl::Status Remove(const std::string& sandbox) override;
  absl::StatusOr<std::vector<SandboxInfo>> List(
      const std::map<std::string, std::string>& labels) override;

  void SetScript(Script script);
  void SetTraits(Traits traits);
  // The next call of `operation` ("create", "run", "remove", "list") fails
  // with `status`.
  void FailNext(const std::string& operation, absl::Status status);

  // A copy of what exists now, by id.
  std::map<std::string, Sandbox> sandboxes() const;
  // Adds a sandbox as if another process had created it.
  std::string Adopt(const SandboxSpec& spec);

 private:
  absl::Status Injected(const std::string& operation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  mutable absl::Mutex mutex_;
  std::map<std::string, Sandbox> sandboxes_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, absl::Status> failures_ ABSL_GUARDED_BY(mutex_);
  Script script_ ABSL_GUARDED_BY(mutex_);
  Traits traits_ ABSL_GUARDED_BY(mutex_);
  int next_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace mojoup::sandbox::testing
