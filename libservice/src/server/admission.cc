// Who gets a connection to the service, decided at accept: a caller the
// service does not serve is answered 403 there and holds nothing; the API's
// connections have a budget in all and a smaller one per uid, and a caller
// over either is answered 503 with Retry-After; the health and metrics
// listener has a budget of its own, and a new probe there always finds
// room: the oldest connection gives way. Refusals are counted in /metrics.
//
// An answer given at accept is sent before the request is read. So that
// the client reads it rather than a reset, its connection is kept a moment
// (kLinger), its write side shut, and what it sends is read and dropped
// (LingerThenClose, which a body refused as too large goes through too).
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <list>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "mojoup/policy/decision.h"
#include "server/service_state.h"

namespace mojoup::service {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxApiConnections = 256;
constexpr std::size_t kMaxApiConnectionsPerUser = 32;
constexpr std::size_t kMaxHealthConnections = 32;
// Connections given way on the health listener and not yet gone count
// too, up to this many in all.
constexpr std::size_t kMaxHealthConnectionsEvicting = 2 * kMaxHealthConnections;
constexpr int kAcceptsPerTurn = 256;
constexpr auto kLinger = std::chrono::seconds(1);
constexpr std::size_t kMaxLingering = 256;
constexpr std::size_t kMaxLingerBytes = 64 << 10;

struct Budget {
  absl::Mutex mu;
  std::size_t api ABSL_GUARDED_BY(mu) = 0;
  std::map<uid_t, std::size_t> by_uid ABSL_GUARDED_BY(mu);
  // the listener's open connections, oldest first
  std::list<int> health ABSL_GUARDED_BY(mu);
  std::size_t handling ABSL_GUARDED_BY(mu) = 0;
};
Budget g_budget;

// Connections answered at accept, kept until the client has sent its
// request or kLinger has passed.
class Lingerer {
 public:
  static Lingerer& Get() {
    static Lingerer* lingerer = new Lingerer();  // lives as long as the process
    return *lingerer;
  }

  void Keep(int fd, std::size_t max_bytes) ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (kept_.size() < kMaxLingering) {
        kept_.push_back({fd, Clock::now() + kLinger, 0, max_bytes});
        fd = -1;
      }
    }
    if (fd >= 0) {
      ::close(fd);
      return;
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t woke = ::write(wake_, &one, sizeof one);
  }

 private:
  struct Kept {
    int fd;
    Clock::time_point until;
    std::size_t dropped;
    std::size_t max_bytes;
  };

  Lingerer() : wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    std::thread([this] { Run(); }).detach();
  }

  // Drops what the kept connections send; closes each at its end, its
  // deadline or its byte cap.
  void Run() ABSL_LOCKS_EXCLUDED(mu_) {
    for (;;) {
      std::vector<pollfd> fds{{wake_, POLLIN, 0}};
      int timeout = -1;
      {
        absl::MutexLock lock(&mu_);
        const auto now = Clock::now();
        for (auto it = kept_.begin(); it != kept_.end();) {
          if (now >= it->until || it->dropped >= it->max_bytes) {
            ::close(it->fd);
            it = kept_.erase(it);
            continue;
          }
          fds.push_back({it->fd, POLLIN, 0});
          const auto left =
              std::chrono::duration_cast<std::chrono::milliseconds>(it->until - now).count() + 1;
          timeout =
              timeout < 0 ? static_cast<int>(left) : std::min(timeout, static_cast<int>(left));
          ++it;
        }
      }
      if (::poll(fds.data(), fds.size(), timeout) < 0) continue;
      std::uint64_t count = 0;
      [[maybe_unused]] ssize_t drained = ::read(wake_, &count, sizeof count);
      absl::MutexLock lock(&mu_);
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto kept = std::find_if(kept_.begin(), kept_.end(),
                                 [&](const Kept& k) { return k.fd == fds[i].fd; });
        if (kept == kept_.end()) continue;
        char sink[65536];
        const ssize_t got = ::recv(kept->fd, sink, sizeof sink, MSG_DONTWAIT);
        if (got > 0) {
          kept->dropped += static_cast<std::size_t>(got);
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
          kept->until = Clock::now();  // the client is done
        }
      }
    }
  }

  absl::Mutex mu_;
  std::vector<Kept> kept_ ABSL_GUARDED_BY(mu_);
  int wake_;
};

// Answers `fd` at once with `status` and one sentence, and lets it go.
void Turn(State& state, int fd, const char* listener, int status, std::string_view sentence,
          Reason reason) {
  state.ConnectionRefused(listener, reason);
  const std::string body = ErrorJson(sentence, reason);
  const char* text = status == 403 ? "Forbidden" : "Service Unavailable";
  const std::string answer = fmt::format(
      "HTTP/1.1 {} {}\r\nServer: mojoup-node\r\nContent-Type: application/json\r\n{}"
      "Connection: close\r\nContent-Length: {}\r\n\r\n{}",
      status, text, status == 503 ? "Retry-After: 1\r\n" : "", body.size(), body);
  // A fresh connection's send buffer holds an answer this small.
  [[maybe_unused]] ssize_t sent =
      ::send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  LingerThenClose(fd, kMaxLingerBytes);
}

void Handle(State& state, int fd, std::optional<Caller> caller, uid_t uid) {
  std::thread([&state, fd, caller, uid] {
    HandleConnection(state, fd, caller ? &*caller : nullptr);
    absl::MutexLock lock(&g_budget.mu);
    if (--g_budget.by_uid[uid] == 0) g_budget.by_uid.erase(uid);
    --g_budget.api;
    --g_budget.handling;
  }).detach();
}

void AcceptHealth(State& state, int fd) ABSL_LOCKS_EXCLUDED(g_budget.mu) {
  g_budget.mu.Lock();
  if (g_budget.health.size() >= kMaxHealthConnectionsEvicting) {
    // Every slot is giving way already: the flood is faster than they go.
    g_budget.mu.Unlock();
    Turn(state, fd, "health", 503, "the health listener is answering all it may; try again",
         Reason::kBusy);
    return;
  }
  if (g_budget.health.size() >= kMaxHealthConnections) {
    // The oldest gives way: a prober always finds room. Its handler sees
    // its connection end and goes.
    ::shutdown(g_budget.health.front(), SHUT_RDWR);
    g_budget.health.push_back(g_budget.health.front());
    g_budget.health.pop_front();
    g_budget.mu.Unlock();
    state.ConnectionRefused("health", Reason::kEvicted);
    g_budget.mu.Lock();
  }
  g_budget.health.push_back(fd);
  ++g_budget.handling;
  g_budget.mu.Unlock();
  // The handler closes its own descriptor; this one stays open, so that the
  // number is not reused while another accept may shut it down, until it
  // leaves the list.
  const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  std::thread([&state, fd, own] {
    if (own >= 0) HandleConnection(state, own, nullptr);
    absl::MutexLock guard(&g_budget.mu);
    g_budget.health.remove(fd);
    ::close(fd);
    --g_budget.handling;
  }).detach();
}

void AcceptOne(State& state, int fd, bool local);

}  // namespace

void LingerThenClose(int fd, std::size_t max_bytes) { Lingerer::Get().Keep(fd, max_bytes); }

Caller CallerOf(const PeerCredentials& credentials) {
  Caller caller;
  caller.uid = credentials.uid;
  caller.gid = credentials.gid;
  caller.pid = credentials.pid;
  caller.user = policy::UserName(credentials.uid);
  return caller;
}

void Accept(State& state, int listener, bool local) {
  // What is queued now, up to a bound, so that a flood of connections
  // does not fill the backlog between two turns of the loop.
  for (int i = 0; i < kAcceptsPerTurn; ++i) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    AcceptOne(state, fd, local);
  }
}

namespace {

void AcceptOne(State& state, int fd, bool local) {
  if (!local) {
    AcceptHealth(state, fd);
    return;
  }
  absl::StatusOr<PeerCredentials> credentials = state.PeerOf(fd);
  if (!credentials.ok()) {
    Turn(state, fd, "api", 403, "the caller's identity cannot be read", Reason::kForbidden);
    return;
  }
  Caller caller = CallerOf(*credentials);
  if (auto refused = state.Refuse(caller)) {
    {
      absl::MutexLock lock(&state.mu);
      state.Refused(Reason::kNotAllowed);
    }
    Turn(state, fd, "api", 403, *refused, Reason::kNotAllowed);
    return;
  }
  absl::ReleasableMutexLock lock(&g_budget.mu);
  if (g_budget.by_uid[caller.uid] >= kMaxApiConnectionsPerUser) {
    lock.Release();
    Turn(state, fd, "api", 503,
         fmt::format("{} has {} connections open to this service, the most one user may; close "
                     "one or try again",
                     caller.user.empty() ? fmt::format("uid {}", caller.uid) : caller.user,
                     kMaxApiConnectionsPerUser),
         Reason::kBusyUser);
    return;
  }
  if (g_budget.api >= kMaxApiConnections) {
    lock.Release();
    Turn(state, fd, "api", 503,
         fmt::format("the service is answering {} connections, its most; try again",
                     kMaxApiConnections),
         Reason::kBusy);
    return;
  }
  ++g_budget.by_uid[caller.uid];
  ++g_budget.api;
  ++g_budget.handling;
  lock.Release();
  Handle(state, fd, std::move(caller), credentials->uid);
}

}  // namespace

std::size_t ConnectionsBeingHandled() {
  absl::MutexLock lock(&g_budget.mu);
  return g_budget.handling;
}

}  // namespace mojoup::service
