// Spawn: the one way this project starts a process.
//
// The caller says everything the child gets: its argv, its whole
// environment (nothing is inherited by accident, and this process's
// environment is never changed), where each of stdin/stdout/stderr goes, any
// further descriptors it keeps (every other descriptor is closed in the
// child), its working directory, process group or session, and the
// credentials it drops to. Wait() reaps it, with an optional deadline at
// which it and its group are killed, and returns its output when captured,
// bounded.
//
//   SpawnOptions options;
//   options.argv = {"git", "config", "--get", "user.name"};
//   options.environment = CurrentEnvironment();
//   options.out = Stream::Capture();
//   auto child = Spawn(options);
//   if (!child.ok()) return child.status();  // "cannot run git: No such file or directory"
//   ChildExit done = child->Wait(std::chrono::steady_clock::now() + std::chrono::seconds(2));
//   if (done.Succeeded()) use(done.out);
//
// A missing program, an exec that fails and a working directory that
// cannot be entered are errors of Spawn itself (the child reports them
// before it exits), not exit codes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/internal/fd.h"

namespace mojoup::internal {

// Where one of the child's standard streams goes.
class Stream {
 public:
  enum class Kind { kInherit, kNull, kFd, kCapture };
  static Stream Inherit() { return Stream(Kind::kInherit, -1); }  // this process's own
  static Stream Null() { return Stream(Kind::kNull, -1); }        // /dev/null
  // `fd` stays the caller's: the child gets a copy.
  static Stream Descriptor(int fd) { return Stream(Kind::kFd, fd); }
  // Descriptor(fd), or Null() when there is none (fd < 0).
  static Stream DescriptorOrNull(int fd) { return fd >= 0 ? Descriptor(fd) : Null(); }
  // A pipe: for stdin the caller writes to Child::TakeStdin(); for stdout
  // and stderr Wait() collects what the child writes.
  static Stream Capture() { return Stream(Kind::kCapture, -1); }

  Kind kind() const { return kind_; }
  int fd() const { return fd_; }

 private:
  Stream(Kind kind, int fd) : kind_(kind), fd_(fd) {}
  Kind kind_;
  int fd_;
};

// The uid, gid and supplementary groups the child drops to before exec.
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

struct SpawnOptions {
  // argv[0] names the program: a path, or a name looked up on this
  // process's PATH (as execvp does, scripts without `#!` run by /bin/sh).
  std::vector<std::string> argv;
  // When set, the file executed instead of argv[0] (argv[0] still is what
  // the program sees), e.g. /proc/self/exe.
  std::string program;
  // NAME=VALUE entries: exactly the child's environment.
  std::vector<std::string> environment;
  Stream in = Stream::Null();
  Stream out = Stream::Inherit();
  Stream err = Stream::Inherit();
  // Further descriptors the child keeps: {this process's fd, the child's fd},
  // with the child's fd above 2. All others are closed in the child.
  std::vector<std::pair<int, int>> keep;
  // Empty: this process's working directory.
  std::string workdir;
  // kGroup: its own process group; kSession: its own session (and group).
  // A deadline then kills the whole group.
  enum class Group { kSame, kGroup, kSession };
  Group group = Group::kSame;
  std::optional<Credentials> credentials;
  // The child starts with no signal blocked and every handled signal at its
  // default; these are set to their default even when this process ignores
  // them (an ignored signal otherwise stays ignored across exec).
  std::vector<int> default_signals;
};

// How a child ended.
struct ChildExit {
  bool timed_out = false;  // killed at the deadline (then signal is SIGKILL)
  int exit_code = -1;      // when it exited
  int signal = 0;          // when a signal ended it
  std::string out;         // captured stdout, at most the cap
  std::string err;         // captured stderr, at most the cap
  bool out_truncated = false;
  bool err_truncated = false;

  bool Exited() const { return signal == 0 && !timed_out; }
  bool Succeeded() const { return Exited() && exit_code == 0; }
  // As a shell reports it: the exit code, or 128 + the signal.
  int ShellCode() const { return signal != 0 ? 128 + signal : exit_code; }
};

// Captured output beyond this many bytes per stream is dropped, unless the
// caller gives its own cap.
inline constexpr std::size_t kDefaultCaptureCap = 1 << 20;

// A started child. Destroying one that was neither waited for nor released
// kills it (SIGKILL) and reaps it.
class Child {
 public:
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  // The write end of a captured stdin (invalid otherwise); close it for EOF.
  Fd TakeStdin() { return std::move(in_); }
  // Sends `signal` to the child (to its group when it has its own), unless
  // it was reaped already.
  void Signal(int signal) const;
  // Reads captured output until the child ends and its pipes close, and
  // reaps it. At `deadline` (if given) the child, or its group, is killed
  // with SIGKILL, reaped and reported as timed out. After the child ends,
  // output still held open by its own children is read for at most 100 ms.
  ChildExit Wait(std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt,
                 std::size_t cap = kDefaultCaptureCap);
  // Hands the process over to the caller, who reaps it; returns its pid.
  pid_t Release();

 private:
  friend absl::StatusOr<Child> Spawn(const SpawnOptions& options);
  Child() = default;
  void Kill() const;
  void KillAndReap();

  pid_t pid_ = -1;
  Fd pidfd_;
  Fd in_, out_, err_;
  bool group_ = false;
  bool reaped_ = false;
};

// Starts the child. Errors are one sentence naming the program
// ("cannot run foo: No such file or directory"); a failed exec of a missing
// program is NotFound, other failures in the child FailedPrecondition,
// failures to make the process at all (a pipe, the fork) Internal, and bad
// options InvalidArgument. SpawnErrno tells the errno behind an error, and
// SpawnExecFailed whether the exec itself failed (the program could not be
// run, as a shell's 126 or 127 says) rather than the setting up before it.
absl::StatusOr<Child> Spawn(const SpawnOptions& options);
int SpawnErrno(const absl::Status& status);
bool SpawnExecFailed(const absl::Status& status);

// This process's environment as NAME=VALUE entries, the entries of
// `overrides` (NAME=VALUE each) replacing those of the same name.
std::vector<std::string> CurrentEnvironment(const std::vector<std::string>& overrides = {});

}  // namespace mojoup::internal
