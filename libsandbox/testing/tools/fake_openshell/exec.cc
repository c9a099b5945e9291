// Running a command in a sandbox: `sandbox exec`, and the exec machinery
// `sandbox create -- CMD` shares.

#include <fcntl.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"
#include "runtime/native/stream_pump.h"

namespace mojoup::fake_openshell {

// POSIX single quotes, the way the gateway quotes each word before handing
// the command line to the sandbox's shell.
std::string ShellQuote(std::string_view word) {
  if (word.empty()) return "''";
  bool plain = std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '/' || c == '-' || c == '_';
  });
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\"'\"'";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The gateway runs `cd WORKDIR && K=V... CMD...` through the sandbox's shell
// (over SSH), not the argv directly: a missing workdir is the shell's error.
std::string RemoteCommandLine(const std::vector<std::string>& command, const StringMap& env,
                              const std::string& workdir) {
  std::vector<std::string> words;
  for (const auto& [key, value] : env) words.push_back(key + "=" + ShellQuote(value));
  for (const std::string& word : command) words.push_back(ShellQuote(word));
  std::string line;
  for (const std::string& word : words) {
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!workdir.empty()) line = "cd " + ShellQuote(workdir) + " && " + line;
  return line;
}

namespace {

// v0.0.26..v0.0.111 crates/openshell-server/src/grpc/validation.rs
// MAX_EXEC_COMMAND_ARGS, MAX_EXEC_ARG_LEN, MAX_EXEC_WORKDIR_LEN; grpc/sandbox.rs
// MAX_COMMAND_STRING_LEN.
constexpr std::size_t kMaxExecArgs = 1024;
constexpr std::size_t kMaxExecArg = 32 * 1024;
constexpr std::size_t kMaxExecWorkdir = 4096;
constexpr std::size_t kMaxCommandLine = 256 * 1024;

bool HasLineBreak(std::string_view value) {
  return value.find_first_of("\r\n") != std::string_view::npos;
}

// What the gateway's validate_exec_request_fields refuses (InvalidArgument),
// in its order; nothing when it admits the request. A command argument with
// a line break is refused until 0.0.81 (reject_control_chars), only NUL from
// 0.0.82 (reject_null_char), and NUL cannot reach it through the CLI's argv.
// The real gateway walks the environment in HashMap order: with two bad
// values it may name either; this double names the first by key.
std::optional<std::string> ExecRequestRefusal(const Version& gateway,
                                              const std::vector<std::string>& command,
                                              const StringMap& env, const std::string& workdir) {
  if (command.size() > kMaxExecArgs) {
    return fmt::format("command array exceeds {} argument limit", kMaxExecArgs);
  }
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (command[i].size() > kMaxExecArg) {
      return fmt::format("command argument {} exceeds {} byte limit", i, kMaxExecArg);
    }
    if (gateway < Release(82) && HasLineBreak(command[i])) {
      return fmt::format("command argument {} contains newline or carriage return characters", i);
    }
  }
  for (const auto& [key, value] : env) {
    if (value.size() > kMaxExecArg) {
      return fmt::format("environment value for '{}' exceeds {} byte limit", key, kMaxExecArg);
    }
    if (HasLineBreak(value)) {
      return fmt::format(
          "environment value for '{}' contains newline or carriage return characters", key);
    }
  }
  if (workdir.size() > kMaxExecWorkdir) {
    return fmt::format("workdir exceeds {} byte limit", kMaxExecWorkdir);
  }
  if (HasLineBreak(workdir)) return "workdir contains newline or carriage return characters";
  return std::nullopt;
}

// The gateway's refusal of an exec request: its fields, then (after the
// sandbox is found) the command line build_remote_exec_command assembles,
// at most 256 KiB (v0.0.37..v0.0.111 grpc/sandbox.rs handle_exec_sandbox).
std::optional<std::string> ExecRefusal(const Context& ctx, const Args& args, const StringMap& env,
                                       const std::string& line) {
  if (auto refused =
          ExecRequestRefusal(ctx.gateway_version, args.command, env, args.Last("workdir"))) {
    return refused;
  }
  if (line.size() <= kMaxCommandLine) return std::nullopt;
  return fmt::format("command construction failed: assembled command string exceeds {} byte limit",
                     kMaxCommandLine);
}

}  // namespace

std::optional<std::string> CreateExec(Docker& docker, const std::string& container,
                                      const std::vector<std::string>& argv, bool stdin_attached,
                                      bool tty, std::string& error) {
  rapidjson::StringBuffer body;
  {
    rapidjson::Writer<rapidjson::StringBuffer> w(body);
    w.StartObject();
    w.Key("AttachStdin");
    w.Bool(stdin_attached);
    w.Key("AttachStdout");
    w.Bool(true);
    w.Key("AttachStderr");
    w.Bool(true);
    w.Key("Tty");
    w.Bool(tty);
    // No "User": an exec runs as the container's user, the policy's
    // run_as_user the sandbox was created with.
    w.Key("Cmd");
    w.StartArray();
    for (const std::string& word : argv) w.String(word);
    w.EndArray();
    w.EndObject();
  }
  DockerReply reply = docker.Call("POST", "/containers/" + container + "/exec", body.GetString());
  if (!Answered(reply, {201})) {
    error = "create exec: " + DockerReplyProblem(reply);
    return std::nullopt;
  }
  rapidjson::Document created;
  created.Parse(reply.body.c_str());
  if (created.HasParseError() || !created.IsObject() || !created.HasMember("Id") ||
      !created["Id"].IsString()) {
    error = "Docker's answer to exec create has no id";
    return std::nullopt;
  }
  return std::string(created["Id"].GetString());
}

bool StartExec(Docker& docker, const std::string& container, const std::vector<std::string>& argv,
               bool stdin_attached, bool tty, std::string& exec_id,
               mojoup::probe::DockerStream& stream, std::string& error) {
  auto created = CreateExec(docker, container, argv, stdin_attached, tty, error);
  if (!created) return false;
  exec_id = *created;
  DockerReply started = docker.Upgrade(
      "/exec/" + exec_id + "/start",
      tty ? R"({"Detach":false,"Tty":true})" : R"({"Detach":false,"Tty":false})", stream);
  if (!Answered(started, {101, 200})) {
    error = "start exec: " + DockerReplyProblem(started);
    return false;
  }
  if (int flags = ::fcntl(stream.fd, F_GETFL); flags >= 0 && (flags & O_NONBLOCK) != 0) {
    ::fcntl(stream.fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  return true;
}

namespace {

// SIGWINCH seen since the last resize.
volatile sig_atomic_t g_window_changed = 0;
void OnWindowChange(int) { g_window_changed = 1; }

// The terminal in raw mode for an interactive session, restored on exit.
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (::tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(fd_, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

void ResizeExec(Docker& docker, const std::string& exec_id) {
  winsize size{};
  if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &size) != 0 || size.ws_row == 0) return;
  docker.Call("POST", fmt::format("/exec/{}/resize?h={}&w={}", exec_id, size.ws_row, size.ws_col));
}

}  // namespace

// The exit code of the exec `exec_id`, once Docker records it: the stream
// ends as the command exits, the code comes a moment later. Nothing when
// Docker failed or it never came (`error`).
std::optional<int> ExecExitCode(Docker& docker, const std::string& exec_id, std::string& error) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    DockerReply reply = docker.Call("GET", "/exec/" + exec_id + "/json");
    if (!Answered(reply, {200})) {
      error = "inspect exec: " + DockerReplyProblem(reply);
      return std::nullopt;
    }
    rapidjson::Document info;
    info.Parse(reply.body.c_str());
    if (!info.HasParseError() && info.IsObject() && info.HasMember("Running") &&
        info["Running"].IsBool() && !info["Running"].GetBool() && info.HasMember("ExitCode") &&
        info["ExitCode"].IsInt()) {
      return info["ExitCode"].GetInt();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  error = "the command's exit code never arrived";
  return std::nullopt;
}

// Runs `argv` in the container, its stdout and stderr copied to ours as they
// arrive. kPiped: `input` is the command's whole stdin. kTty: the same under
// a pseudo-terminal (output merged, as the sandbox's PTY merges it).
// kInteractive: our terminal's input streams to the command and window
// changes follow it. Returns the exit code (124 when `timeout_seconds` ran
// out), or nothing when Docker failed (`error`).
std::optional<int> RunInSandbox(Docker& docker, const std::string& container,
                                const std::vector<std::string>& argv, const std::string& input,
                                unsigned timeout_seconds, std::string& error, ExecMode mode) {
  const bool tty = mode != ExecMode::kPiped;
  const bool interactive = mode == ExecMode::kInteractive;
  std::string exec_id_text;
  mojoup::probe::DockerStream stream;
  if (!StartExec(docker, container, argv, interactive || !input.empty(), tty, exec_id_text, stream,
                 error)) {
    return std::nullopt;
  }
  const std::optional<std::string> exec_id = exec_id_text;
  const int fd = stream.fd;
  std::optional<RawTerminal> raw;
  std::thread feeder;
  if (interactive) {
    raw.emplace(STDIN_FILENO);
    struct sigaction action {};
    action.sa_handler = OnWindowChange;
    ::sigaction(SIGWINCH, &action, nullptr);
    ResizeExec(docker, *exec_id);
    // Detached: a read on our terminal cannot be interrupted when the
    // command ends first; the process exits soon after.
    std::thread([fd] {
      std::vector<char> chunk(4096);
      while (true) {
        ssize_t got = ::read(STDIN_FILENO, chunk.data(), chunk.size());
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        WriteAllWaiting(fd, chunk.data(), static_cast<std::size_t>(got));
      }
      ::shutdown(fd, SHUT_WR);
    }).detach();
  } else if (!input.empty()) {
    feeder = std::thread([fd, &input] {
      WriteAllWaiting(fd, input.data(), input.size());
      ::shutdown(fd, SHUT_WR);  // the command sees end of file
    });
  }

  mojoup::sandbox::FrameSplitter frames;
  auto deliver = [](unsigned char which, const char* data, std::size_t size) {
    WriteAllWaiting(which == 2 ? STDERR_FILENO : STDOUT_FILENO, data, size);
  };
  auto feed = [&](const char* data, std::size_t size) {
    // Under a TTY Docker sends the raw stream, not frames.
    if (tty) {
      WriteAllWaiting(STDOUT_FILENO, data, size);
    } else {
      frames.Feed(data, size, deliver);
    }
  };
  feed(stream.pending.data(), stream.pending.size());
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_seconds);
  bool timed_out = false;
  std::vector<char> buffer(64 * 1024);
  while (true) {
    int wait_ms = interactive ? 200 : -1;
    if (timeout_seconds > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<std::int64_t>(left.count(), interactive ? 200 : 1000));
    }
    if (interactive && g_window_changed) {
      g_window_changed = 0;
      ResizeExec(docker, *exec_id);
    }
    pollfd ready{fd, POLLIN, 0};
    int polled = ::poll(&ready, 1, wait_ms);
    if (polled < 0 && errno == EINTR) continue;
    if (polled == 0) continue;
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    feed(buffer.data(), static_cast<std::size_t>(got));
  }
  // Past --timeout the gateway reports 124 and drops the exec's channel,
  // whose end kills nothing: the command runs on (v0.0.111
  // crates/openshell-server/src/grpc/sandbox.rs, the exec timeout;
  // crates/openshell-supervisor-process/src/ssh.rs).
  ::shutdown(fd, SHUT_RDWR);  // frees a feeder still writing to a command that quit reading
  if (feeder.joinable()) feeder.join();
  ::close(fd);
  raw.reset();
  if (timed_out) return kTimedOutExit;
  return ExecExitCode(docker, *exec_id, error);
}

// Whether the container has /bin/bash: the sandbox's SSH server spawns every
// command through it (v0.0.37 crates/openshell-sandbox/src/ssh.rs, v0.0.111
// crates/openshell-supervisor-process/src/ssh.rs spawn_pipe_exec and the PTY
// path: `/bin/bash -lc COMMAND`).
bool HasBash(Docker& docker, const std::string& container) {
  // GET, not HEAD: the Engine client waits for a body HEAD never sends.
  DockerReply reply =
      docker.Call("GET", "/containers/" + container + "/archive?path=%2Fbin%2Fbash");
  return !Answered(reply, {404});
}

// The argv the sandbox's SSH server runs for a command line: a login shell
// unless --no-login-shell (refs/pull/2852/head crates/openshell-supervisor-
// process/src/ssh.rs login_shell_flag; released in 0.1.0 per its release
// note, 2026-09-25).
// It runs as the child of the supervisor (fake-openshell-sandbox at the
// supervisor's path), which reports its end as the real one does, confines
// it with Landlock where there is a policy, and gives it the supervisor's
// environment (ChildEnvironment) where the sandbox has one.
std::vector<std::string> ShellArgv(const std::string& line, bool login, const std::string& run_as,
                                   const std::string& landlock, const std::string& environment) {
  std::vector<std::string> argv = {kSupervisorPath, "exec"};
  if (!run_as.empty()) argv.insert(argv.end(), {"--user", run_as});
  if (!environment.empty()) argv.insert(argv.end(), {"--env", environment});
  if (!landlock.empty()) argv.insert(argv.end(), {"--landlock", landlock});
  argv.insert(argv.end(), {"--", "/bin/bash", login ? "-lc" : "-c", line});
  return argv;
}

// A sandbox's child environment with an exec's TERM: "dumb" without a
// terminal, else the client's TERM or xterm-256color (v0.0.111 ssh.rs
// spawn_pipe_exec, spawn_pty_shell).
std::string WithTerm(const std::string& child_environment, ExecMode mode) {
  if (child_environment.empty()) return {};
  const char* term = std::getenv("TERM");
  std::string value = "xterm-256color";
  if (mode == ExecMode::kPiped) {
    value = "dumb";
  } else if (term != nullptr && *term != '\0') {
    value = term;
  }
  return child_environment + "set TERM=" + value + "\n";
}

// The CLI reads stdin whole before it starts the command, unless it is a
// terminal. Nothing when it is too much (`error` says so).
std::optional<std::string> ReadStdin(std::string& error) {
  std::string input;
  if (::isatty(STDIN_FILENO)) return input;
  std::vector<char> chunk(64 * 1024);
  while (input.size() <= kMaxStdin) {
    ssize_t got = ::read(STDIN_FILENO, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end of file, or no stdin at all
    input.append(chunk.data(), static_cast<std::size_t>(got));
  }
  if (input.size() > kMaxStdin) {
    error = fmt::format(
        "stdin payload exceeds {} byte limit; pipe smaller inputs or use `sandbox upload`",
        kMaxStdin);
    return std::nullopt;
  }
  return input;
}

int SandboxExec(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell sandbox exec [OPTIONS] <COMMAND>...",
                        .flags = {{.name = "name", .short_name = 'n', .takes_value = true},
                                  {.name = "workdir", .takes_value = true},
                                  {.name = "timeout", .takes_value = true},
                                  {.name = "tty"},
                                  {.name = "no-tty"},
                                  {.name = "env", .takes_value = true, .since = Release(59)},
                                  {.name = "no-login-shell", .since = Release01(0)}},
                        .command_at_first_positional = true};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (args.command.empty()) {
    return ClapError("the following required arguments were not provided:\n  <COMMAND>...",
                     grammar.usage);
  }
  int exit_code = 0;
  auto timeout = ParseCount(args, "timeout", grammar.usage, 0, exit_code);
  if (!timeout) return exit_code;
  std::string error;
  StringMap env = ParseEnv(args.All("env"), error);
  if (!error.empty()) return PrintError(error);
  if (!args.Has("name"))
    return PrintError("no sandbox name given and no last-used sandbox recorded");
  if (auto code = GatewayRefuses(ctx)) return *code;
  const std::string name = args.Last("name");

  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  auto sandbox = FindSandbox(*docker, ctx, name, error);
  if (!error.empty()) return PrintError(GrpcError("Internal", error));
  if (!sandbox) return NotFound();
  if (sandbox->phase != "Ready") {
    return PrintError(
        fmt::format("sandbox '{}' is not ready (phase: {}); wait for it to reach Ready state", name,
                    sandbox->phase));
  }
  // v0.0.111 crates/openshell-cli/src/run.rs sandbox_exec_grpc: stdin is read
  // whole unless it is a terminal; --tty with a terminal on stdin takes the
  // interactive RPC (ExecSandboxInteractive, since v0.0.43); otherwise the
  // request's tty is --tty/--no-tty, else whether stdin and stdout are both
  // terminals.
  // --no-tty overrides_with --tty: the later of the two wins (v0.0.111
  // main.rs SandboxCommands::Exec).
  std::optional<bool> tty_override;
  for (std::size_t i = 3; i < argv.size() && argv[i] != "--"; ++i) {
    if (argv[i] == "--tty") tty_override = true;
    if (argv[i] == "--no-tty") tty_override = false;
  }
  const bool stdin_tty = ::isatty(STDIN_FILENO) != 0;
  ExecMode mode = ExecMode::kPiped;
  if (tty_override == true && stdin_tty && ctx.version >= Release(43)) {
    mode = ExecMode::kInteractive;
  } else if (tty_override.value_or(stdin_tty && ::isatty(STDOUT_FILENO))) {
    mode = ExecMode::kTty;
  }
  std::string input;
  if (mode != ExecMode::kInteractive) {
    auto read = ReadStdin(error);
    if (!read) return PrintError(error);
    input = std::move(*read);
  }
  // The request reaches the gateway only now, after the CLI's own checks
  // and its reading of stdin (v0.0.111 run.rs sandbox_exec_grpc).
  const std::string line = RemoteCommandLine(args.command, env, args.Last("workdir"));
  if (auto refused = ExecRefusal(ctx, args, env, line)) {
    return PrintError(GrpcError("InvalidArgument", *refused));
  }
  if (!HasBash(*docker, sandbox->container)) {
    // The SSH server's spawn fails and the relay closes without an exit
    // status (v0.0.111 crates/openshell-server/src/grpc/sandbox.rs
    // exec_loop_result).
    return PrintError(
        GrpcError("Unavailable", "exec relay closed before the command reported an exit status"));
  }
  auto code = RunInSandbox(*docker, sandbox->container,
                           ShellArgv(line, !args.Has("no-login-shell"), sandbox->run_as,
                                     sandbox->landlock, WithTerm(sandbox->child_environment, mode)),
                           input, *timeout, error, mode);
  if (!code) return PrintError(GrpcError("Unavailable", error));
  return *code;
}

}  // namespace mojoup::fake_openshell
