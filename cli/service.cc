// mojoup-node serve, attach, service: the node's sandbox service and the
// sessions it runs; and run's way through it.
#include <signal.h>
#include <sys/ioctl.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <iostream>

#include "commands.h"
#include "fmt/format.h"
#include "mojoup/service/client.h"
#include "mojoup/service/server.h"

namespace mojoup::cli {
namespace {

void Notices(const std::vector<std::string>& notices) {
  for (const std::string& notice : notices) std::cerr << kProgram << ": " << notice << "\n";
}

std::string SocketFlag(const cxxopts::ParseResult& parsed) { return FlagValue(parsed, "socket"); }

// The session's notices that come while it runs, on stderr.
ForegroundAttach Foreground(bool terminal, bool detach_on_end) {
  ForegroundAttach how;
  how.terminal = terminal;
  how.detach_on_end = detach_on_end;
  how.hooks.notice = [](std::string_view sentence) {
    std::cerr << kProgram << ": " << sentence << "\n";
  };
  return how;
}

}  // namespace

std::optional<int> RunThroughService(ServiceClient& client, RunRequest request, bool detach) {
  StartOptions options;
  options.detach = detach;
  if (request.terminal) {
    if (const char* term = std::getenv("TERM"); term != nullptr) {
      request.environment.emplace("TERM", term);
    }
    if (winsize size{}; ioctl(1, TIOCGWINSZ, &size) == 0) {
      options.rows = size.ws_row;
      options.columns = size.ws_col;
    }
  }
  auto started = client.Start(request, options);
  if (!started.ok()) {
    // A host that cannot sandbox: run decides in the foreground, as without
    // a service (a warning and no sandbox, or its refusal).
    if ((client.reason() == Reason::kCannotSandbox || client.reason() == Reason::kNotAllowed) &&
        !detach) {
      return std::nullopt;
    }
    if (client.reason() == Reason::kRefused) {
      std::cerr << kProgram << ": " << started.status().message() << "\n";
      return kExitNotPossible;
    }
    return PrintError("run", started.status());
  }
  if (started->unsandboxed) {
    if (!detach) return std::nullopt;
    return PrintError("run",
                      "--detach runs only sandboxed sessions, and nothing asks for a "
                      "sandbox for this repository",
                      kExitNotPossible);
  }
  Notices(started->notices);
  if (detach) {
    std::cout << started->id << "\n";
    return kExitOk;
  }
  auto attachment = client.Attach(started->id);
  if (!attachment.ok()) return PrintError("run", attachment.status());
  absl::StatusOr<int> code = AttachInForeground(**attachment, Foreground(started->terminal, false));
  if (!code.ok()) return PrintError("run", code.status());
  return *code;
}

int Serve(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node serve",
                           "Run the node's sandbox service: sessions that outlive their client.");
  options.add_options()("socket", "the API's unix socket (default: see README)",
                        cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, "mojoup-node serve [--socket PATH] [--config FILE]",
                        std::move(args), parsed)) {
    return *stop;
  }
  ServiceOptions service;
  service.config_path = ConfigPath(parsed);
  service.config_named = parsed.count("config") > 0;
  service.socket = SocketFlag(parsed);
  service.log = [](std::string_view line) {
    std::cerr << kProgram << " serve: " << line << "\n" << std::flush;
  };
  service.notify = [](std::string_view state) {
    sd_notify(0, std::string(state).c_str());  // nothing when systemd did not ask
  };
  return RunService(std::move(service));
}

int Attach(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node attach",
                           "Attach to a session the sandbox service runs: its last 1 MiB of "
                           "output, then its output live.");
  options.add_options()("socket", "the service's socket", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, "mojoup-node attach ID [--socket PATH]", std::move(args), parsed,
                        {"id"})) {
    return *stop;
  }
  std::vector<std::string> ids = FlagValues(parsed, "positional");
  if (ids.size() != 1) return PrintError("attach", "give one session ID");
  auto client = ServiceClient::Connect(SocketFlag(parsed));
  if (!client.ok()) return PrintError("attach", client.status());
  auto session = client->Get(ids.front());
  if (!session.ok()) return PrintError("attach", session.status());
  auto attachment = client->Attach(ids.front());
  if (!attachment.ok()) return PrintError("attach", attachment.status());
  BlockForegroundSignals();
  absl::StatusOr<int> code =
      AttachInForeground(**attachment, Foreground(session->terminal && isatty(0) == 1, true));
  if (absl::IsCancelled(code.status())) {
    std::cerr << kProgram << ": detached from " << ids.front() << "; `mojoup-node attach "
              << ids.front() << "` reattaches\n";
    return kExitOk;
  }
  if (!code.ok()) return PrintError("attach", code.status());
  return *code;
}

int Service(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node service", "Ask the node's sandbox service.");
  options.add_options()("socket", "the service's socket", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, "mojoup-node service drain|node|sessions [--socket PATH]",
                        std::move(args), parsed, {"what"})) {
    return *stop;
  }
  std::vector<std::string> what = FlagValues(parsed, "positional");
  if (what.size() != 1 || (what[0] != "drain" && what[0] != "node" && what[0] != "sessions")) {
    return PrintError("service", "give drain, node or sessions");
  }
  auto client = ServiceClient::Connect(SocketFlag(parsed));
  if (!client.ok()) return PrintError("service", client.status());
  if (what[0] == "drain") {
    if (absl::Status drained = client->Drain(); !drained.ok()) {
      return PrintError("service", drained);
    }
    std::cout << "draining: the service admits no new sessions and exits once they end\n";
    return kExitOk;
  }
  auto json = client->GetJson(what[0] == "node" ? "/v1/node" : "/v1/sessions");
  if (!json.ok()) return PrintError("service", json.status());
  std::cout << *json << "\n";
  return kExitOk;
}

int SessionWorker(std::vector<std::string>) { return RunSessionWorker(3, 4); }

int SessionReap(std::vector<std::string>) {
  NodeOptions options;
  auto node = Node::Open(std::move(options));
  if (!node.ok()) return 0;
  auto reaped = node->Reap();
  if (!reaped.ok()) return 0;
  return static_cast<int>(std::min<std::size_t>(100, reaped->sessions.size()));
}

}  // namespace mojoup::cli
