// A session's worker: one process per session, started by the service. It
// runs today's session code (Node::Start, RunningCommand::Wait, Close) with
// its stdio on pipes or a terminal of its own, keeps the last 1 MiB of the
// session's output, and serves the service's requests on its socket:
// attach (the client's connection passed over), signal, resize, stop,
// info and watch. It outlives the service: a service started again finds
// it by its socket. It tells the service its session's tally (the proxy's
// decisions, the approvals) on its control socket and to its watchers as
// it changes, at most every kTallyEvery, never waiting for the service.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fmt/format.h"
#include "mojoup/sandbox/node.h"
#include "mojoup/service/client.h"
#include "mojoup/service/server.h"
#include "protocol/protocol.h"

namespace mojoup {
namespace {

using service::EncodeFrame;
using service::FrameType;

constexpr std::size_t kScrollback = 1 << 20;
// A client that falls this far behind is dropped, never waited for.
constexpr std::size_t kClientBacklog = 4 << 20;
constexpr auto kFirstAttach = std::chrono::seconds(30);
constexpr auto kStopGrace = std::chrono::seconds(10);
constexpr auto kTallyEvery = std::chrono::milliseconds(250);
// How long the worker's end waits, in all, for room for its last tally and
// its exit on the service's sockets.
constexpr auto kLastSend = std::chrono::seconds(5);
using Deadline = std::chrono::steady_clock::time_point;

struct Client {
  int fd = -1;
  std::string pending;  // frames not yet written
  service::FrameReader reader;
  bool detached = false;
};

std::string Reply(bool ok, std::string_view error = "") {
  return ok ? service::WorkerOkJson() : service::ErrorJson(error, Reason::kWorker);
}

service::WorkerTally TallyOf(const sandbox::SessionTally& session) {
  auto bounded = [](std::uint64_t count) { return std::min(count, service::kMaxTallyCount); };
  const credproxy::AuditCounts& egress = session.egress;
  const credproxy::Approvals::Counts& approvals = session.approvals;
  service::WorkerTally tally;
  tally.egress.allowed = bounded(egress.allowed);
  tally.egress.denied = bounded(egress.denied - std::min(egress.denied, egress.asked));
  tally.egress.asked = bounded(egress.asked);
  tally.egress.error = bounded(egress.errors);
  tally.approvals.pending = std::min(approvals.pending, service::kMaxTallyPending);
  tally.approvals.approved = bounded(approvals.approved);
  tally.approvals.denied = bounded(approvals.denied);
  tally.approvals.expired = bounded(approvals.expired);
  return tally;
}

enum class Offered { kSent, kFull, kGone };

// One packet on `fd` if it goes at once: a service that does not read is
// not waited for (the next tally carries the same totals).
Offered Offer(int fd, const std::string& packet) {
  for (;;) {
    if (::send(fd, packet.data(), packet.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
      return Offered::kSent;
    }
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == ENOBUFS ? Offered::kFull : Offered::kGone;
  }
}

// One packet on `fd`, waiting for room until `deadline` at most: never
// blocking in send, so a service that stopped reading holds the worker's
// end (and mu_) no longer than that.
Offered SendBy(int fd, const std::string& packet, Deadline deadline) {
  for (;;) {
    const Offered offered = Offer(fd, packet);
    if (offered != Offered::kFull) return offered;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Offered::kFull;
    pollfd wait{fd, POLLOUT, 0};
    if (::poll(&wait, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      return Offered::kGone;
    }
  }
}

class Worker {
 public:
  Worker(int control, int listener) : control_(control), listener_(listener) {}
  int Run();

 private:
  absl::Status Begin();
  void Serve();
  void Pump(int fd, FrameType type);
  void Broadcast(FrameType type, std::string_view data) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Op(int connection);
  void FromClient(Client& client);
  void Write(Client& client);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // The session's terminal, ours when we hold it and the sandbox's.
  void Resize(unsigned short rows, unsigned short columns);
  void WriteInput();
  void DropClosed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(int code, const std::vector<std::string>& notices) ABSL_LOCKS_EXCLUDED(mu_);
  std::string InfoJson() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The session's tally, to the service, when it changed and kTallyEvery
  // passed; io thread only.
  void PushTally() ABSL_LOCKS_EXCLUDED(mu_);
  // `by`: as the exit is sent, waiting for room until then (the last one).
  void SendTally(const service::WorkerTally& tally, std::optional<Deadline> by = std::nullopt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  int control_;
  int listener_;
  int wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);  // wakes the io thread
  service::WorkerStart start_;
  std::optional<Node> node_;
  std::unique_ptr<RunningCommand> run_;
  bool terminal_ = false;
  // The session's side of its stdio, and ours.
  int session_in_ = -1, session_out_ = -1, session_err_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string input_;  // client input the session has not read yet
  bool input_ended_ = false;

  // What the io thread, the node's notices and the main thread share.
  absl::Mutex mu_;
  bool ever_attached_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::string> scrollback_ ABSL_GUARDED_BY(mu_);
  std::size_t scrollback_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Client> clients_ ABSL_GUARDED_BY(mu_);
  std::vector<int> watchers_ ABSL_GUARDED_BY(mu_);
  std::optional<std::chrono::steady_clock::time_point> kill_at_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> notices_ ABSL_GUARDED_BY(mu_);
  std::string state_ ABSL_GUARDED_BY(mu_) = "starting";
  int exit_code_ ABSL_GUARDED_BY(mu_) = 0;
  // The tally every listener has (nullopt: send it again), and whether
  // the final one went (Finish's).
  std::optional<service::WorkerTally> tally_sent_ ABSL_GUARDED_BY(mu_);
  bool control_gone_ ABSL_GUARDED_BY(mu_) = false;
  bool tally_final_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point next_tally_{};  // io thread
};

absl::Status Worker::Begin() {
  auto packet = service::ReceivePacket(control_, std::chrono::seconds(10));
  if (!packet.ok()) return packet.status();
  auto parsed = service::ParseStartRequest(*packet);
  if (!parsed.ok()) return parsed.status();
  start_ = *std::move(parsed);
  NodeOptions options;
  // The credentials' values come from the client, as `run` takes them from
  // its own environment; they never go into this process's environment.
  options.getenv = [secrets = start_.secrets, system = sandbox::SystemGetenv()](
                       std::string_view name) -> std::optional<std::string> {
    if (auto found = secrets.find(std::string(name)); found != secrets.end()) return found->second;
    return system(name);
  };
  options.config_path = start_.config_path;
  options.config_named = start_.config_named;
  options.notice = [this](std::string_view sentence) {
    absl::MutexLock lock(&mu_);
    if (state_ == "starting") {
      notices_.emplace_back(sentence);
    } else {
      Broadcast(FrameType::kNotice, sentence);
    }
  };
  auto node = Node::Open(std::move(options));
  if (!node.ok()) return node.status();
  node_.emplace(*std::move(node));  // the run uses its runtime and sessions
  auto launch = node_->Start(start_.request);
  if (!launch.ok()) return launch.status();
  if (launch->run == nullptr) {
    return absl::FailedPreconditionError(launch->decision.reason);
  }
  if (launch->run->record().id.empty()) {
    return absl::AbortedError("unsandboxed");  // the client runs it itself
  }
  run_ = std::move(launch->run);
  terminal_ = run_->terminal();
  return absl::OkStatus();
}

// The session's exit code: the command's, but clean-up that left work
// undone (said in its notices) fails a command that succeeded, as `run` in
// the foreground does.
int ExitCode(const absl::StatusOr<int>& code, const sandbox::CloseReport& closed) {
  if (!code.ok()) return 1;
  const bool undone = !closed.errors.empty() || !closed.sign_in.errors.empty();
  return *code == 0 && undone ? 1 : *code;
}

int Worker::Run() {
  // The worker ends its session on SIGTERM, as `stop` does; a hangup of
  // the service's terminal is not the session's.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  absl::Status began = Begin();
  {
    service::WorkerAnswer answer;
    answer.status = began.ok()                       ? service::StartStatus::kStarted
                    : absl::IsAborted(began)         ? service::StartStatus::kUnsandboxed
                    : absl::IsInvalidArgument(began) ? service::StartStatus::kInvalid
                                                     : service::StartStatus::kRefused;
    answer.message = std::string(began.message());
    answer.terminal = terminal_;
    {
      absl::MutexLock lock(&mu_);
      answer.notices = notices_;
    }
    service::SendPacket(control_, service::WorkerAnswerJson(answer)).IgnoreError();
  }
  if (!began.ok()) return absl::IsInvalidArgument(began) ? 2 : 1;

  sandbox::Stdio stdio;
  if (terminal_) {
    winsize size{start_.options.rows, start_.options.columns, 0, 0};
    if (::openpty(&in_, &session_in_, nullptr, nullptr, size.ws_row > 0 ? &size : nullptr) != 0) {
      Finish(1, {fmt::format("cannot open a terminal: {}", std::strerror(errno))});
      return 1;
    }
    ::fcntl(in_, F_SETFD, FD_CLOEXEC);
    ::fcntl(session_in_, F_SETFD, FD_CLOEXEC);
    out_ = in_;
    session_out_ = session_err_ = session_in_;
    stdio.rows = start_.options.rows;
    stdio.columns = start_.options.columns;
  } else {
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
        ::pipe2(err, O_CLOEXEC) != 0) {
      Finish(1, {fmt::format("cannot make pipes: {}", std::strerror(errno))});
      return 1;
    }
    session_in_ = in[0], in_ = in[1];
    out_ = out[0], session_out_ = out[1];
    err_ = err[0], session_err_ = err[1];
  }
  for (int fd : {in_, out_, err_}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  stdio.in = session_in_;
  stdio.out = session_out_;
  stdio.err = session_err_;
  std::thread io([this] { Serve(); });
  bool attached = true;
  {
    absl::MutexLock lock(&mu_);
    state_ = "running";
    if (!start_.options.detach) {
      attached =
          mu_.AwaitWithTimeout(absl::Condition(&ever_attached_), absl::FromChrono(kFirstAttach));
    }
    if (!attached) state_ = "stopping";
  }
  if (!attached) {
    run_->Close();
    Finish(1, {});
    io.join();
    return 1;
  }
  absl::StatusOr<int> code = run_->Wait(stdio);
  // Our copies of the session's side: once the runtime let go of its own,
  // the output ends.
  ::close(session_in_);
  if (!terminal_) {
    ::close(session_out_);
    ::close(session_err_);
  }
  {
    absl::MutexLock lock(&mu_);
    state_ = "stopping";
  }
  // Close tells of what it did and could not do through the node's notices,
  // which reach the clients as notice frames.
  const int exit_code = ExitCode(code, run_->Close());
  std::vector<std::string> notices;
  if (!code.ok()) notices.emplace_back(code.status().message());
  Finish(exit_code, notices);
  io.join();
  return exit_code;
}

void Worker::Broadcast(FrameType type, std::string_view data) {
  std::string frame = EncodeFrame(type, data);
  if (type != FrameType::kExit) {
    scrollback_.push_back(frame);
    scrollback_bytes_ += frame.size();
    while (scrollback_bytes_ > kScrollback && scrollback_.size() > 1) {
      scrollback_bytes_ -= scrollback_.front().size();
      scrollback_.pop_front();
    }
  }
  for (Client& client : clients_) {
    if (client.fd >= 0) client.pending += frame;
  }
  // The io thread writes it at once, not at its next look.
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t wrote = ::write(wake_, &one, sizeof one);
}

void Worker::Finish(int code, const std::vector<std::string>& notices) {
  // Counted outside mu_: expiring an approval notifies, which takes it.
  const service::WorkerTally tally = TallyOf(run_->Tally());
  const Deadline by = std::chrono::steady_clock::now() + kLastSend;
  absl::MutexLock lock(&mu_);
  SendTally(tally, by);  // before the exit, so the service has the last one
  tally_final_ = true;
  for (const std::string& notice : notices) Broadcast(FrameType::kNotice, notice);
  Broadcast(FrameType::kExit, std::to_string(code));
  state_ = "ended";
  exit_code_ = code;
  const std::string exit = service::WorkerExitJson(code);
  SendBy(control_, exit, by);
  for (int watcher : watchers_) SendBy(watcher, exit, by);
}

void Worker::PushTally() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_tally_) return;
  next_tally_ = now + kTallyEvery;
  const service::WorkerTally tally = TallyOf(run_->Tally());
  absl::MutexLock lock(&mu_);
  if (!tally_final_) SendTally(tally);
}

void Worker::SendTally(const service::WorkerTally& tally, std::optional<Deadline> by) {
  if (tally_sent_ == tally) return;
  const std::string packet = service::WorkerTallyJson(tally);
  auto send = [&](int fd) { return by ? SendBy(fd, packet, *by) : Offer(fd, packet); };
  bool all = true;
  if (!control_gone_) {
    const Offered offered = send(control_);
    control_gone_ = offered == Offered::kGone;  // a service that restarted
    all = offered != Offered::kFull;
  }
  for (int& watcher : watchers_) {
    const Offered offered = send(watcher);
    if (offered == Offered::kGone) {
      ::close(watcher);
      watcher = -1;
    }
    all = all && offered != Offered::kFull;
  }
  std::erase(watchers_, -1);
  tally_sent_ = all ? std::optional(tally) : std::nullopt;
}

void Worker::Pump(int fd, FrameType type) {
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      absl::MutexLock lock(&mu_);
      Broadcast(type, std::string_view(buffer, static_cast<std::size_t>(got)));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return;
    // The end (EOF, or EIO when a terminal's last writer went).
    if (fd == out_) out_ = -1;
    if (fd == err_) err_ = -1;
    if (terminal_) in_ = -1;
    ::close(fd);
    return;
  }
}

void Worker::Write(Client& client) {
  while (!client.pending.empty()) {
    const ssize_t wrote =
        ::send(client.fd, client.pending.data(), client.pending.size(), MSG_NOSIGNAL);
    if (wrote > 0) {
      client.pending.erase(0, static_cast<std::size_t>(wrote));
      continue;
    }
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0 && errno == EAGAIN && client.pending.size() <= kClientBacklog) return;
    ::close(client.fd);  // gone, or too far behind
    client.fd = -1;
    return;
  }
}

void Worker::Resize(unsigned short rows, unsigned short columns) {
  winsize size{rows, columns, 0, 0};
  if (terminal_ && in_ >= 0) ::ioctl(in_, TIOCSWINSZ, &size);
  run_->Resize(rows, columns).IgnoreError();
}

void Worker::Stop() {
  absl::MutexLock lock(&mu_);
  if (kill_at_ || state_ == "ended") return;
  state_ = "stopping";
  kill_at_ = std::chrono::steady_clock::now() + kStopGrace;
  run_->Signal(SIGTERM).IgnoreError();
}

void Worker::FromClient(Client& client) {
  char buffer[65536];
  const ssize_t got = ::recv(client.fd, buffer, sizeof buffer, MSG_DONTWAIT);
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (got <= 0) {
    absl::MutexLock lock(&mu_);
    ::close(client.fd);
    client.fd = -1;
    return;
  }
  client.reader.Add(std::string_view(buffer, static_cast<std::size_t>(got)));
  for (;;) {
    auto frame = client.reader.Next();
    if (!frame.ok()) {
      absl::MutexLock lock(&mu_);
      ::close(client.fd);
      client.fd = -1;
      return;
    }
    if (!frame->has_value()) return;
    auto& [type, data] = **frame;
    switch (type) {
      case FrameType::kStdin:
        if (!input_ended_) input_ += data;
        break;
      case FrameType::kStdinEnd:
        if (!terminal_) input_ended_ = true;
        break;
      case FrameType::kSignal:
        run_->Signal(std::atoi(data.c_str())).IgnoreError();
        break;
      case FrameType::kResize: {
        unsigned rows = 0, columns = 0;
        if (std::sscanf(data.c_str(), "%u %u", &rows, &columns) == 2 && rows < 65536 &&
            columns < 65536) {
          Resize(static_cast<unsigned short>(rows), static_cast<unsigned short>(columns));
        }
        break;
      }
      case FrameType::kDetach:
        client.detached = true;
        break;
      default:
        break;
    }
  }
}

std::string Worker::InfoJson() const {
  return service::WorkerInfoJson({state_, terminal_, run_ ? run_->record().runtime : ""});
}

void Worker::Op(int connection) {
  int passed = -1;
  auto packet = service::ReceivePacket(connection, std::chrono::seconds(2), &passed);
  absl::StatusOr<service::WorkerOp> op = packet.ok()
                                             ? service::ParseWorkerOp(*packet)
                                             : absl::StatusOr<service::WorkerOp>(packet.status());
  const std::string name = op.ok() ? op->op : "";
  const int signal = op.ok() ? op->signal.value_or(-1) : -1;
  const int rows = op.ok() ? op->rows.value_or(-1) : -1;
  const int columns = op.ok() ? op->columns.value_or(-1) : -1;
  bool keep = false;
  std::string reply = Reply(true);
  if (name == "attach" && passed >= 0) {
    absl::MutexLock lock(&mu_);
    Client client;
    client.fd = passed;
    passed = -1;
    ::fcntl(client.fd, F_SETFL, ::fcntl(client.fd, F_GETFL) | O_NONBLOCK);
    for (const std::string& frame : scrollback_) client.pending += frame;
    if (state_ == "ended")
      client.pending += EncodeFrame(FrameType::kExit, std::to_string(exit_code_));
    clients_.push_back(std::move(client));
    ever_attached_ = true;  // wakes Run's wait for the first attach
  } else if (name == "signal" && signal > 0 && signal < NSIG) {
    run_->Signal(signal).IgnoreError();
  } else if (name == "resize" && rows >= 0 && columns >= 0) {
    Resize(static_cast<unsigned short>(rows), static_cast<unsigned short>(columns));
  } else if (name == "stop") {
    Stop();
  } else if (name == "info") {
    absl::MutexLock lock(&mu_);
    reply = InfoJson();
  } else if (name == "watch") {
    absl::MutexLock lock(&mu_);
    if (state_ != "ended") {
      watchers_.push_back(connection);
      keep = true;
      tally_sent_.reset();  // the new watcher has none yet
      next_tally_ = {};
    }
  } else {
    reply = Reply(false, "unknown request");
  }
  if (passed >= 0) ::close(passed);
  service::SendPacket(connection, reply).IgnoreError();
  if (!keep) ::close(connection);
}

void Worker::Serve() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  const int signal_fd = ::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
  std::optional<std::chrono::steady_clock::time_point> ended_at;
  for (;;) {
    std::vector<pollfd> fds;
    std::size_t first_client = 0;
    bool done = false;
    {
      absl::MutexLock lock(&mu_);
      const auto now = std::chrono::steady_clock::now();
      if (kill_at_ && now >= *kill_at_ && state_ != "ended") {
        kill_at_ = now + kStopGrace;
        run_->Signal(SIGKILL).IgnoreError();
      }
      if (state_ == "ended" && !ended_at) ended_at = now;
      bool flushed = true;
      for (const Client& client : clients_) flushed = flushed && client.pending.empty();
      // Ended: the output drained and sent, or 5 s of trying.
      done = ended_at &&
             ((out_ < 0 && err_ < 0 && flushed) || now - *ended_at > std::chrono::seconds(5));
      if (!done) {
        fds.push_back({listener_, POLLIN, 0});
        fds.push_back({signal_fd, POLLIN, 0});
        fds.push_back({out_, POLLIN, 0});
        fds.push_back({err_, POLLIN, 0});
        const bool writing = !input_.empty() || (input_ended_ && !terminal_);
        // Only while there is input to write: a pipe whose reader went
        // reports POLLERR on every poll.
        fds.push_back({terminal_ || !writing ? -1 : in_, POLLOUT, 0});
        fds.push_back({wake_, POLLIN, 0});
        if (terminal_ && writing && out_ >= 0) fds[2].events |= POLLOUT;
        first_client = fds.size();
        for (const Client& client : clients_) {
          fds.push_back(
              {client.fd, static_cast<short>(POLLIN | (client.pending.empty() ? 0 : POLLOUT)), 0});
        }
      }
    }
    if (done) break;
    if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) break;
    if ((fds[0].revents & POLLIN) != 0) {
      const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection >= 0) Op(connection);
    }
    if ((fds[5].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] ssize_t got = ::read(wake_, &count, sizeof count);
    }
    if ((fds[1].revents & POLLIN) != 0) {
      signalfd_siginfo info{};
      while (::read(signal_fd, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) Stop();
      }
    }
    for (int i : {2, 3}) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        Pump(fds[i].fd, i == 2 ? FrameType::kStdout : FrameType::kStderr);
      }
    }
    WriteInput();
    PushTally();
    absl::MutexLock lock(&mu_);
    for (std::size_t i = first_client; i < fds.size(); ++i) {
      Client& client = clients_[i - first_client];
      if (client.fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        mu_.Unlock();
        FromClient(client);
        mu_.Lock();
      }
      if (client.fd >= 0 && !client.pending.empty()) Write(client);
    }
    DropClosed();
  }
  ::close(signal_fd);
  absl::MutexLock lock(&mu_);
  for (Client& client : clients_) {
    if (client.fd >= 0) ::close(client.fd);
  }
  clients_.clear();
  for (int watcher : watchers_) ::close(watcher);
  watchers_.clear();
}

void Worker::WriteInput() {
  const int fd = terminal_ ? out_ : in_;
  if (fd < 0) return;
  while (!input_.empty()) {
    const ssize_t wrote = ::write(fd, input_.data(), input_.size());
    if (wrote > 0) {
      input_.erase(0, static_cast<std::size_t>(wrote));
      continue;
    }
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0 && errno == EAGAIN) return;
    input_.clear();  // the session stopped reading
    input_ended_ = true;
  }
  if (input_ended_ && !terminal_) {
    ::close(in_);
    in_ = -1;
  }
}

void Worker::DropClosed() {
  // A session someone runs in the foreground ends, as on a
  // terminal's hangup, when its last client goes without detaching.
  bool hangup = false;
  for (const Client& client : clients_) {
    if (client.fd < 0 && !client.detached) hangup = true;
  }
  std::erase_if(clients_, [](const Client& client) { return client.fd < 0; });
  if (hangup && clients_.empty() && !start_.options.detach && state_ == "running") {
    run_->Signal(SIGHUP).IgnoreError();
  }
}

}  // namespace

int RunSessionWorker(int control, int listener) {
  Worker worker(control, listener);
  return worker.Run();
}

}  // namespace mojoup
