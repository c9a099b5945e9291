// What a mojoup::Node holds, shared by its source files.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mojoup/sandbox/node.h"

namespace mojoup {

// Where a node says what it did on the side (NodeOptions::notice).
struct Notices {
  std::function<void(std::string_view)> sink;
  void operator()(std::string_view sentence) const;
  void WriteBack(const sandbox::WriteBackReport& report) const;
  void Close(const sandbox::CloseReport& report) const;
};

struct Node::State {
  NodeOptions options;
  policy::NodeConfig config;
  std::string state_dir;
  std::string supervisor;
  // The runtime, made when first needed; backend_error says why it could not be.
  std::unique_ptr<sandbox::Backend> owned_backend;
  sandbox::Backend* backend = nullptr;
  std::string backend_error;
  std::optional<sandbox::SessionManager> manager;

  Notices notice;
  probe::Report Probe() const;
  std::unique_ptr<sandbox::Backend> MakeBackend(std::string& error) const;
  // The session manager over the runtime; an error when the runtime cannot be had.
  absl::StatusOr<sandbox::SessionManager*> Manager();
  // Reaps, telling of each session cleaned up, notice and error.
  sandbox::ReapReport ReapWith(sandbox::SessionManager& sessions) const;
  // The effective policy for `dir`; InvalidArgument when a policy file is bad.
  absl::StatusOr<policy::EffectivePolicy> PolicyFor(const std::string& dir) const;
};

// The canonical directory `dir` (a request's workdir, as `--repo` gives it);
// InvalidArgument naming it when it is not a directory.
absl::StatusOr<std::string> RepositoryDirectory(const std::string& dir);

// --upstream-ca must be a readable PEM file of certificates, --audit a file
// that can be created: InvalidArgument naming the flag otherwise.
absl::Status CheckProxyFiles(const std::string& upstream_ca, const std::string& audit_file);

}  // namespace mojoup
