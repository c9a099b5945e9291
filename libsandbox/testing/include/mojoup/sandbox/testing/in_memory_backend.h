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
#include <mutex>
#include <string>
#include <vector>

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

  std::string_view name() const override { return "memory"; }
  absl::StatusOr<std::string> Create(const SandboxSpec& spec) override;
  absl::StatusOr<int> Run(const std::string& sandbox, const Stdio& stdio) override;
  absl::Status Signal(const std::string& sandbox, int signal) override;
  absl::Status Resize(const std::string& sandbox, unsigned short rows,
                      unsigned short columns) override;
  absl::Status Remove(const std::string& sandbox) override;
  absl::StatusOr<std::vector<SandboxInfo>> List(
      const std::map<std::string, std::string>& labels) override;

  void SetScript(Script script);
  // The next call of `operation` ("create", "run", "remove", "list") fails
  // with `status`.
  void FailNext(const std::string& operation, absl::Status status);

  // A copy of what exists now, by id.
  std::map<std::string, Sandbox> sandboxes() const;
  // Adds a sandbox as if another process had created it.
  std::string Adopt(const SandboxSpec& spec);

 private:
  absl::Status Injected(const std::string& operation);

  mutable std::mutex mutex_;
  std::map<std::string, Sandbox> sandboxes_;
  std::map<std::string, absl::Status> failures_;
  Script script_;
  int next_ = 0;
};

}  // namespace mojoup::sandbox::testing
