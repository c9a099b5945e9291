// run_session REPO COMMAND [ARG...]: runs COMMAND for the repository holding
// REPO the way `mojoup-node run` does (in a per-session sandbox when the
// policy or the node asks for one) and exits with its exit code. What the
// node decided and did on the side goes to stderr.
//
// The native runtime runs mojoup-sandbox-init as the sandbox's first
// process. mojoup-node finds it beside itself; a program installed elsewhere
// says where the package put it (<prefix>/libexec/mojoup/), here through
// MOJOUP_SANDBOX_INIT.
//
//   $ MOJOUP_SANDBOX_INIT=/usr/local/libexec/mojoup/mojoup-sandbox-init run_session ~/src/app make
//   test
#include <cstdlib>
#include <iostream>

#include "mojoup/sandbox/node.h"

namespace {

// Like the CLI: 125 when the command could not be run at all.
constexpr int kCannotRun = 125;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: run_session REPO COMMAND [ARG...]\n";
    return kCannotRun;
  }
  mojoup::NodeOptions options;
  if (const char* init = std::getenv("MOJOUP_SANDBOX_INIT"); init != nullptr)
    options.supervisor = init;
  options.notice = [](std::string_view line) { std::cerr << "run_session: " << line << "\n"; };
  absl::StatusOr<mojoup::Node> node = mojoup::Node::Open(std::move(options));
  if (!node.ok()) {
    std::cerr << "run_session: " << node.status().message() << "\n";
    return kCannotRun;
  }

  mojoup::RunRequest request;
  request.workdir = argv[1];
  request.command.assign(argv + 2, argv + argc);
  // This program's own stdin, stdout and stderr, no terminal: see
  // cli/ for resizing a terminal the sandbox shares.
  absl::StatusOr<mojoup::RunResult> result =
      node->Run(std::move(request), mojoup::sandbox::Stdio{});
  if (!result.ok()) {
    std::cerr << "run_session: " << result.status().message() << "\n";
    return kCannotRun;
  }
  for (const std::string& error : result->closed.errors)
    std::cerr << "run_session: " << error << "\n";
  return result->exit_code;
}
