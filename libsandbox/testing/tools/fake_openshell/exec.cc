// Running a command in a sandbox: `sandbox exec`, and the exec machinery
// `sandbox create -- CMD` shares.

#include <fcntl.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"
#include "stream_pump.h"

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

std::optional<std::string> CreateExec(Docker& docker, const std::string& container,
                                      const std::vector<std::string>& argv, bool stdin_attached,
                                      std::string& error) {
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
    w.Bool(false);
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

// A command that outlived --timeout is killed with its process group (runc
// makes each exec a session leader): from the host when we may, else from
// inside the sandbox as its own user.
void KillExec(Docker& docker, const std::string& container, const std::string& exec_id) {
  DockerReply reply = docker.Call("GET", "/exec/" + exec_id + "/json");
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  if (!Answered(reply, {200}) || info.HasParseError() || !info.IsObject() ||
      !info.HasMember("Pid") || !info["Pid"].IsInt() || info["Pid"].GetInt() <= 0) {
    return;
  }
  const pid_t pid = info["Pid"].GetInt();
  if (::kill(-pid, SIGKILL) == 0 || ::kill(pid, SIGKILL) == 0) return;
  // Its pid inside the sandbox: the last NSpid entry.
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  std::string inner;
  while (std::getline(status, line)) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream fields(line.substr(6));
    for (std::string field; fields >> field;) inner = field;
  }
  if (inner.empty()) return;
  std::string error;
  auto killer =
      CreateExec(docker, container,
                 {"/bin/sh", "-c", fmt::format("kill -9 -{0} 2>/dev/null || kill -9 {0}", inner)},
                 false, error);
  if (killer) docker.Call("POST", "/exec/" + *killer + "/start", R"({"Detach":true,"Tty":false})");
}

// Runs `argv` in the container with `input` as its whole stdin, its stdout
// and stderr copied to ours as they arrive. Returns its exit code (124 when
// `timeout_seconds` ran out), or nothing when Docker failed (`error`).
std::optional<int> RunInSandbox(Docker& docker, const std::string& container,
                                const std::vector<std::string>& argv, const std::string& input,
                                unsigned timeout_seconds, std::string& error) {
  auto exec_id = CreateExec(docker, container, argv, !input.empty(), error);
  if (!exec_id) return std::nullopt;
  mojoup::probe::DockerStream stream;
  DockerReply started =
      docker.Upgrade("/exec/" + *exec_id + "/start", R"({"Detach":false,"Tty":false})", stream);
  if (!Answered(started, {101, 200})) {
    error = "start exec: " + DockerReplyProblem(started);
    return std::nullopt;
  }
  const int fd = stream.fd;
  if (int flags = ::fcntl(fd, F_GETFL); flags >= 0 && (flags & O_NONBLOCK) != 0) {
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  std::thread feeder;
  if (!input.empty()) {
    feeder = std::thread([fd, &input] {
      WriteAllWaiting(fd, input.data(), input.size());
      ::shutdown(fd, SHUT_WR);  // the command sees end of file
    });
  }

  mojoup::sandbox::FrameSplitter frames;
  auto deliver = [](unsigned char which, const char* data, std::size_t size) {
    WriteAllWaiting(which == 2 ? STDERR_FILENO : STDOUT_FILENO, data, size);
  };
  frames.Feed(stream.pending.data(), stream.pending.size(), deliver);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_seconds);
  bool timed_out = false;
  std::vector<char> buffer(64 * 1024);
  while (true) {
    int wait_ms = -1;
    if (timeout_seconds > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<std::int64_t>(left.count(), 1000));
    }
    pollfd ready{fd, POLLIN, 0};
    int polled = ::poll(&ready, 1, wait_ms);
    if (polled < 0 && errno == EINTR) continue;
    if (polled == 0) continue;
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    frames.Feed(buffer.data(), static_cast<std::size_t>(got), deliver);
  }
  if (timed_out) KillExec(docker, container, *exec_id);
  ::shutdown(fd, SHUT_RDWR);  // frees a feeder still writing to a command that quit reading
  if (feeder.joinable()) feeder.join();
  ::close(fd);
  if (timed_out) return kTimedOutExit;

  // The stream ends as the command exits; Docker records the code a moment later.
  for (int attempt = 0; attempt < 100; ++attempt) {
    DockerReply reply = docker.Call("GET", "/exec/" + *exec_id + "/json");
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
                                  {.name = "env", .takes_value = true, .since = Release(59)}},
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
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::string error;
  StringMap env = ParseEnv(args.All("env"), error);
  if (!error.empty()) return PrintError(error);
  if (!args.Has("name"))
    return PrintError("no sandbox name given and no last-used sandbox recorded");
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
  auto input = ReadStdin(error);
  if (!input) return PrintError(error);
  const std::string line = RemoteCommandLine(args.command, env, args.Last("workdir"));
  auto code =
      RunInSandbox(*docker, sandbox->container, {"/bin/sh", "-c", line}, *input, *timeout, error);
  if (!code) return PrintError(GrpcError("Unavailable", error));
  return *code;
}

}  // namespace mojoup::fake_openshell
