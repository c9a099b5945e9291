// Backend: what builds, runs and removes one session's sandbox.
//
// SessionManager decides what goes into a sandbox (SandboxSpec); a backend
// makes it real. `native` speaks the Docker Engine API (MakeNativeBackend);
// InMemoryBackend (mojoup/sandbox/testing/in_memory_backend.h) records what
// it was asked, for tests and harnesses.
//
//   auto backend = MakeNativeBackend(endpoint);
//   auto id = backend->Create(spec);              // labelled mojoup.session=<id>
//   int code = *backend->Run(*id, Stdio{});       // the caller's own stdio; streams
//                                                 // until the command exits
//   backend->Remove(*id);
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/policy/network_rules.h"
#include "mojoup/sandbox/mount.h"
#include "mojoup/sandbox/stdio.h"

namespace mojoup::sandbox {

// The label every runtime puts on a sandbox, with its session's id
// (SandboxSpec::session): a sandbox whose creation was cut short, or whose
// owner died, is found by it.
inline constexpr std::string_view kSessionLabel = "mojoup.session";

// The label every sandbox carries with the node that made it (NodeId): on a
// gateway several nodes share, a node reaps only its own.
inline constexpr std::string_view kNodeLabel = "mojoup.node";

// A real credential of the session, for a backend that hands it to its own
// placement (OpenShell's providers) instead of the session's proxy.
struct SandboxCredential {
  std::string name;                // the environment variable
  std::string value;               // the real value
  std::vector<std::string> hosts;  // the exact hosts it is bound to
};

struct SandboxSpec {
  std::string session;  // the session id (label mojoup.session)
  std::map<std::string, std::string> labels;
  std::string image;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string workdir;               // where the command starts, in the repository
  std::string repo;                  // the repository's root, mounted at its own path
  std::string home;                  // the user's home, at its own path (the staged one)
  std::vector<std::string> command;  // what the agent runs
  std::map<std::string, std::string> environment;
  std::vector<BindMount> mounts;
  // The only places the command may write: the repository, the home, /tmp
  // and any others (a worktree's main git directory).
  std::vector<std::string> writable;
  std::string proxy_socket;   // host path of the session proxy's unix socket
  std::string proxy_address;  // or its TCP address, for backends that reach it so
  std::string supervisor;     // host path of mojoup-sandbox-init
  std::string session_dir;    // the session's own directory on the host (0700)
  // Where a runtime that works on a copy keeps what it brought back and did
  // not apply (Backend::BringBack): <state>/returns/<session>, made by it.
  std::string returns_dir;
  std::string tool;           // the agent tool, "" for none
  // The session's egress rules, for backends that enforce them themselves.
  const policy::NetworkRules* rules = nullptr;
  bool tty = false;
  // The session's real credentials (their stand-ins are in `environment`).
  std::vector<SandboxCredential> credentials;
  // Tells the user what the backend decided (one sentence); may be empty.
  std::function<void(const std::string&)> notice;
  std::int64_t memory_bytes = 8LL << 30;
  std::int64_t pids = 1024;
  double cpus = 0;  // CPUs the sandbox may use; 0: no limit
};

// A request the runtime's own egress control refused, as the runtime
// reported it (a runtime whose proxy owns the sandbox's egress:
// Backend::RefusesEgressItself).
struct EgressRefusal {
  std::string method;  // "CONNECT", or a forwarded request's method
  std::string host;    // policy::CanonicalHost's spelling
  std::uint16_t port = 0;
  std::string path;     // a forwarded request's, without its query
  std::string by;       // who refused, for the audit's source: "openshell"
  std::string code;     // its own word for the refusal ("policy_denied")
  std::string reason;   // its reason, one sentence, as it gave it
  std::string program;  // the program it names, "" when none
  // No rule of the runtime's policy allowed it (not, say, its address): a
  // request the operator could be asked about.
  bool unlisted = false;
};

// What NewRefusals read since it was last asked.
struct EgressRefusals {
  std::vector<EgressRefusal> refusals;
  // One sentence when refusals may have been missed; else empty.
  std::string missed;
};

struct SandboxInfo {
  std::string id;       // the backend's id
  std::string session;  // its mojoup.session label
  std::map<std::string, std::string> labels;
  bool running = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "native", "openshell", "memory"
  virtual std::string_view name() const = 0;

  // Where the session's proxy must listen for this backend's sandboxes to
  // reach it: empty for a unix socket (mounted in), else a TCP address such
  // as "172.18.0.1:0".
  virtual std::string ProxyListen() const { return {}; }

  // What sets one runtime apart from another, for whoever drives it: asked
  // of the runtime, never inferred from its name.

  // Create needs SandboxSpec::supervisor, the host path of
  // mojoup-sandbox-init (the native runtime's first process in a sandbox).
  virtual bool NeedsSupervisor() const { return false; }

  // Create says itself, in the node's words (image/missing_image.h: the image
  // is not on the node's Docker, and how to get it), when the sandbox image
  // is missing. A runtime that words it its own way leaves that to whoever
  // drives it, who then looks the image up.
  virtual bool ExplainsMissingImage() const { return false; }

  // Whether the runtime can hand a session this command, environment and
  // working directory (OpenShell's exec has limits): InvalidArgument in one
  // sentence when it cannot, asked before anything is made.
  virtual absl::Status CheckCommand(const std::string& /*workdir*/,
                                    const std::map<std::string, std::string>& /*environment*/,
                                    const std::vector<std::string>& /*command*/) const {
    return absl::OkStatus();
  }

  // Empty when a command without a terminal still gets input from the
  // caller's terminal; else the one sentence saying it gets none (OpenShell's
  // exec never reads a terminal without one), and the caller gives it none.
  virtual std::string TerminalInputLimit() const { return {}; }

  // The address the command's proxy variables (HTTP(S)_PROXY) give for the
  // session's proxy, as the sandbox reaches it; empty: the command gets none
  // (a runtime whose own proxy owns egress reaches ours another way).
  virtual std::string ProxyAddressInside() const { return {}; }

  // True when the runtime's own proxy decides the sandbox's egress and
  // refuses a request outside its list at once (OpenShell's): such a
  // request never reaches the session's proxy to be held, so "ask" reads
  // the refusals (NewRefusals) and applies a grant (AllowEgress) instead.
  virtual bool RefusesEgressItself() const { return false; }

  // The refusals the runtime reported for the sandbox since the last call
  // (since Create, the first time). Each read of the runtime has a deadline.
  virtual absl::StatusOr<EgressRefusals> NewRefusals(const std::string& sandbox) {
    return absl::UnimplementedError("the " + std::string(name()) +
                                    " runtime reports no refusals of " + sandbox);
  }

  // Lets the sandbox reach host:port from now on, for its life: what was
  // done, in one sentence, or why not. Waits for the runtime, with a
  // deadline.
  virtual absl::StatusOr<std::string> AllowEgress(const std::string& sandbox,
                                                  const std::string& host, std::uint16_t port) {
    return absl::UnimplementedError("the " + std::string(name()) + " runtime cannot let " +
                                    sandbox + " reach " + host + ":" + std::to_string(port));
  }

  // Before the sandbox is removed, for a runtime whose sandbox works on a
  // copy of the repository (a remote gateway's, which shares no filesystem
  // with the node): brings the session's work back into the host
  // repository, as far as it is safe to (the commits under a namespace of
  // the session's own, the work tree's changes when the host's tree did not
  // change meanwhile). One sentence saying what came back and where
  // anything kept is; empty when nothing is to come back. An error leaves
  // the sandbox for the caller to keep, so the work is not lost.
  virtual absl::StatusOr<std::string> BringBack(const std::string& sandbox) {
    (void)sandbox;
    return std::string();
  }

  // Builds the sandbox, not yet running. Returns the backend's id for it.
  virtual absl::StatusOr<std::string> Create(const SandboxSpec& spec) = 0;

  // Starts the command and streams its standard streams until it ends;
  // returns its exit code (128 + signal when a signal ended it).
  virtual absl::StatusOr<int> Run(const std::string& sandbox, const Stdio& stdio) = 0;

  // Sends a signal to the command (SIGINT, SIGTERM, ...).
  virtual absl::Status Signal(const std::string& sandbox, int signal) = 0;

  // Tells the command's terminal its new size.
  virtual absl::Status Resize(const std::string& sandbox, unsigned short rows,
                              unsigned short columns) = 0;

  // Removes the sandbox, running or not. A sandbox already gone is not an
  // error.
  virtual absl::Status Remove(const std::string& sandbox) = 0;

  // The sandboxes whose labels include every one of `labels`.
  virtual absl::StatusOr<std::vector<SandboxInfo>> List(
      const std::map<std::string, std::string>& labels) = 0;
};

}  // namespace mojoup::sandbox
