#include "mojoup/sandbox/testing/in_memory_backend.h"

namespace mojoup::sandbox::testing {

absl::Status InMemoryBackend::Injected(const std::string& operation) {
  auto it = failures_.find(operation);
  if (it == failures_.end()) return absl::OkStatus();
  absl::Status status = it->second;
  failures_.erase(it);
  return status;
}

absl::StatusOr<std::string> InMemoryBackend::Create(const SandboxSpec& spec) {
  absl::MutexLock lock(&mutex_);
  if (absl::Status failed = Injected("create"); !failed.ok()) return failed;
  std::string id = "memory-" + std::to_string(++next_);
  sandboxes_[id] = Sandbox{spec, false, {}};
  return id;
}

absl::StatusOr<int> InMemoryBackend::Run(const std::string& sandbox, const Stdio& stdio) {
  Script script;
  SandboxSpec spec;
  {
    absl::MutexLock lock(&mutex_);
    if (absl::Status failed = Injected("run"); !failed.ok()) return failed;
    auto it = sandboxes_.find(sandbox);
    if (it == sandboxes_.end()) return absl::NotFoundError("no sandbox " + sandbox);
    it->second.running = true;
    script = script_;
    spec = it->second.spec;
  }
  // The script runs unlocked: it may call back into the backend.
  int code = script ? script(spec, stdio) : 0;
  absl::MutexLock lock(&mutex_);
  if (auto it = sandboxes_.find(sandbox); it != sandboxes_.end()) it->second.running = false;
  return code;
}

absl::Status InMemoryBackend::Signal(const std::string& sandbox, int signal) {
  absl::MutexLock lock(&mutex_);
  auto it = sandboxes_.find(sandbox);
  if (it == sandboxes_.end()) return absl::NotFoundError("no sandbox " + sandbox);
  it->second.signals.push_back(signal);
  return absl::OkStatus();
}

absl::Status InMemoryBackend::Resize(const std::string& sandbox, unsigned short, unsigned short) {
  absl::MutexLock lock(&mutex_);
  if (sandboxes_.count(sandbox) == 0) return absl::NotFoundError("no sandbox " + sandbox);
  return absl::OkStatus();
}

absl::Status InMemoryBackend::Remove(const std::string& sandbox) {
  absl::MutexLock lock(&mutex_);
  if (absl::Status failed = Injected("remove"); !failed.ok()) return failed;
  sandboxes_.erase(sandbox);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SandboxInfo>> InMemoryBackend::List(
    const std::map<std::string, std::string>& labels) {
  absl::MutexLock lock(&mutex_);
  if (absl::Status failed = Injected("list"); !failed.ok()) return failed;
  std::vector<SandboxInfo> found;
  for (const auto& [id, sandbox] : sandboxes_) {
    std::map<std::string, std::string> all = sandbox.spec.labels;
    all[std::string(kSessionLabel)] = sandbox.spec.session;
    bool match = true;
    for (const auto& [name, value] : labels) {
      auto it = all.find(name);
      match = match && it != all.end() && it->second == value;
    }
    if (match) found.push_back({id, sandbox.spec.session, all, sandbox.running});
  }
  return found;
}

bool InMemoryBackend::NeedsSupervisor() const {
  absl::MutexLock lock(&mutex_);
  return traits_.needs_supervisor;
}

bool InMemoryBackend::ExplainsMissingImage() const {
  absl::MutexLock lock(&mutex_);
  return traits_.explains_missing_image;
}

std::string InMemoryBackend::TerminalInputLimit() const {
  absl::MutexLock lock(&mutex_);
  return traits_.terminal_input_limit;
}

std::string InMemoryBackend::ProxyAddressInside() const {
  absl::MutexLock lock(&mutex_);
  return traits_.proxy_address_inside;
}

void InMemoryBackend::SetTraits(Traits traits) {
  absl::MutexLock lock(&mutex_);
  traits_ = std::move(traits);
}

void InMemoryBackend::SetScript(Script script) {
  absl::MutexLock lock(&mutex_);
  script_ = std::move(script);
}

void InMemoryBackend::FailNext(const std::string& operation, absl::Status status) {
  absl::MutexLock lock(&mutex_);
  failures_[operation] = std::move(status);
}

std::map<std::string, InMemoryBackend::Sandbox> InMemoryBackend::sandboxes() const {
  absl::MutexLock lock(&mutex_);
  return sandboxes_;
}

std::string InMemoryBackend::Adopt(const SandboxSpec& spec) {
  absl::MutexLock lock(&mutex_);
  std::string id = "memory-" + std::to_string(++next_);
  sandboxes_[id] = Sandbox{spec, true, {}};
  return id;
}

}  // namespace mojoup::sandbox::testing
