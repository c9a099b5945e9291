// What `sandbox upload` and `sandbox download` share (v0.0.111
// crates/openshell-cli/src/ssh.rs): the SSH session the CLI opens (here a
// command run the way every exec runs: through the supervisor, as the
// sandbox's user, in its network namespace, under its Landlock rules, in
// its workspace), tar streams in and out of it, and host-side tar.

#include "transfer.h"

#include <fcntl.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "mojoup/internal/spawn.h"
#include "runtime/native/stream_pump.h"

namespace mojoup::fake_openshell {

std::optional<int> TransferPositionals(Args& args, std::string_view usage,
                                       std::string_view second) {
  args.positionals.insert(args.positionals.end(), args.command.begin(), args.command.end());
  if (args.positionals.size() > 3) {
    return ClapError(fmt::format("unexpected argument '{}' found", args.positionals[3]), usage);
  }
  if (args.positionals.size() < 2) {
    return ClapError(fmt::format("the following required arguments were not provided:\n{}<{}>",
                                 args.positionals.empty() ? "  <NAME>\n  " : "  ", second),
                     usage);
  }
  return std::nullopt;
}

std::optional<int> OpenSession(const Context& ctx, const std::string& name, Session& session) {
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::string error;
  session.docker = ConnectDocker(error);
  if (!session.docker) return NoDocker(error);
  auto sandbox = FindSandbox(*session.docker, ctx, name, error);
  if (!error.empty()) return PrintError(GrpcError("Internal", error));
  if (!sandbox) return NotFound();
  // handle_create_ssh_session (v0.0.111 crates/openshell-server/src/grpc/
  // sandbox.rs): only a Ready sandbox gets a session.
  if (sandbox->phase != "Ready") {
    return PrintError(GrpcError("FailedPrecondition", "sandbox is not ready"));
  }
  session.sandbox = *std::move(sandbox);
  // The CLI runs the host's `ssh` (ssh.rs ssh_base_command).
  if (DirOnPath("ssh").empty()) return PrintError("No such file or directory (os error 2)");
  // The session's working directory: the workspace the driver gave the
  // supervisor (--workdir: /sandbox on Kubernetes, the image's WORKDIR or
  // /sandbox on Docker; process.rs ResolvedWorkspace, ssh.rs current_dir).
  DockerReply reply =
      session.docker->Call("GET", "/containers/" + session.sandbox.container + "/json");
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  if (!Answered(reply, {200}) || info.HasParseError() || !info.IsObject() ||
      !info.HasMember("Config") || !info["Config"].IsObject()) {
    return DockerFailed("inspect Docker container", reply);
  }
  const auto& config = info["Config"];
  std::string workdir = config.HasMember("WorkingDir") && config["WorkingDir"].IsString()
                            ? config["WorkingDir"].GetString()
                            : "";
  while (workdir.size() > 1 && workdir.back() == '/') workdir.pop_back();
  session.workdir = workdir.empty() || workdir == "/" ? std::string(kDefaultWorkspace) : workdir;
  return std::nullopt;
}

std::optional<int> RunRemote(Session& session, const std::string& command, int input_fd,
                             const std::function<void(const char*, std::size_t)>& out,
                             std::string& error) {
  const std::string line = "cd " + ShellQuote(session.workdir) + " && " + command;
  const std::vector<std::string> argv =
      ShellArgv(line, true, session.sandbox.run_as, session.sandbox.landlock,
                WithTerm(session.sandbox.child_environment, ExecMode::kPiped));
  Docker& docker = *session.docker;
  std::string exec_id;
  mojoup::probe::DockerStream stream;
  if (!StartExec(docker, session.sandbox.container, argv, input_fd >= 0, false, exec_id, stream,
                 error)) {
    return std::nullopt;
  }
  const int fd = stream.fd;
  std::thread feeder;
  if (input_fd >= 0) {
    feeder = std::thread([fd, input_fd] {
      std::vector<char> chunk(64 * 1024);
      while (true) {
        ssize_t got = ::read(input_fd, chunk.data(), chunk.size());
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        WriteAllWaiting(fd, chunk.data(), static_cast<std::size_t>(got));
      }
      ::shutdown(fd, SHUT_WR);  // the command sees end of file
    });
  }
  mojoup::sandbox::FrameSplitter frames;
  auto deliver = [&](unsigned char which, const char* data, std::size_t size) {
    if (which == 2 || !out) {
      WriteAllWaiting(which == 2 ? STDERR_FILENO : STDOUT_FILENO, data, size);
    } else {
      out(data, size);
    }
  };
  frames.Feed(stream.pending.data(), stream.pending.size(), deliver);
  std::vector<char> buffer(64 * 1024);
  while (true) {
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    frames.Feed(buffer.data(), static_cast<std::size_t>(got), deliver);
  }
  ::shutdown(fd, SHUT_RDWR);
  if (feeder.joinable()) feeder.join();
  ::close(fd);
  return ExecExitCode(docker, exec_id, error);
}

std::optional<std::string> RunRemoteCapture(Session& session, const std::string& command,
                                            int& status, std::string& error) {
  std::string out;
  auto code = RunRemote(
      session, command, -1, [&](const char* data, std::size_t size) { out.append(data, size); },
      error);
  if (!code) return std::nullopt;
  status = *code;
  return out;
}

std::optional<HostTar> StartHostTar(const std::vector<std::string>& args, bool reading,
                                    std::string& error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    error = fmt::format("pipe: {}", std::strerror(errno));
    return std::nullopt;
  }
  internal::Fd read_end(fds[0]);
  internal::Fd write_end(fds[1]);
  internal::SpawnOptions options;
  options.argv = {"tar"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.environment = internal::CurrentEnvironment({"LC_ALL=C"});
  options.err = internal::Stream::Capture();
  // Creating: tar writes the archive into the pipe we read. Extracting: it
  // reads the archive we write.
  if (reading) {
    options.in = internal::Stream::Descriptor(read_end.get());
  } else {
    options.out = internal::Stream::Descriptor(write_end.get());
  }
  auto child = internal::Spawn(options);
  if (!child.ok()) {
    error = std::string(child.status().message());
    return std::nullopt;
  }
  HostTar tar{std::move(*child), reading ? std::move(write_end) : std::move(read_end)};
  return tar;
}

std::string FinishHostTar(HostTar& tar) {
  tar.pipe = internal::Fd();
  internal::ChildExit done =
      tar.child.Wait(std::chrono::steady_clock::now() + std::chrono::hours(1));
  if (done.Succeeded()) return {};
  std::string said = Trim(done.err);
  if (said.empty()) said = fmt::format("tar exited with status {}", done.ShellCode());
  return said;
}

}  // namespace mojoup::fake_openshell
