// CONNECT: the target checked against the rules, then either an interception
// (a host with bound credentials) or a plain tunnel whose bytes move with
// splice(2) and never pass through user space.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/write.hpp>

#include "request_head.h"
#include "server.h"
#include "upstream.h"

namespace mojoup::credproxy {
namespace {

constexpr int kPipeSize = 1 << 20;

}  // namespace

awaitable<void> Proxy::Impl::Connect(ClientStream& client, beast::flat_buffer& buffer,
                                     const std::string& target, unsigned version) {
  AuditRecord record = BeginAudit("CONNECT");
  auto parsed = SplitHostPort(target, 0);
  if (!parsed || parsed->second == 0) {
    record.Finish("error", "", "malformed CONNECT target");
    co_await RespondError(client, http::status::bad_request,
                          "CONNECT needs host:port, such as api.github.com:443", version);
    co_return;
  }
  const auto& [host, port] = *parsed;
  if (!co_await Admit(client, record, host, port, version)) co_return;
  if (IsBound(host)) {
    co_await Intercept(client, buffer, host, port, std::move(record));
    co_return;
  }
  auto up = co_await Dial(client, record, host, port, version);
  if (!up) co_return;
  co_await Tunnel(client, buffer, std::move(*up), std::move(record));
}

namespace {

// Moves bytes from `from` to `to` through a pipe with splice(2) until `from`
// ends, then half-closes `to`. Returns the bytes moved.
template <class From, class To>
awaitable<std::uint64_t> Splice(From& from, To& to) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) co_return 0;
  fcntl(pipe_fds[1], F_SETPIPE_SZ, kPipeSize);
  const int in = from.native_handle();
  const int out = to.native_handle();
  std::uint64_t total = 0;
  std::size_t queued = 0;  // bytes in the pipe
  bool ended = false;
  beast::error_code ec;
  // Keep both ends busy: read into the pipe while it has room, write out
  // what it holds, and wait only when neither side can move.
  for (;;) {
    bool moved = false;
    if (!ended && queued < static_cast<std::size_t>(kPipeSize)) {
      ssize_t got = splice(in, nullptr, pipe_fds[1], nullptr, kPipeSize - queued,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (got > 0) {
        queued += static_cast<std::size_t>(got);
        moved = true;
      } else if (got == 0 || errno != EAGAIN) {
        ended = true;
      }
    }
    if (queued > 0) {
      // splice(2) has no MSG_NOSIGNAL: into a socket whose peer has gone it
      // raises SIGPIPE, which the serving thread blocks (Proxy::Start), so
      // the call fails with EPIPE here. No SPLICE_F_MORE: it corks the
      // socket like MSG_MORE, and the last segment of each small message
      // (a TLS handshake flight, a request) then waited out the cork's
      // 200 ms and a delayed ACK.
      ssize_t put =
          splice(pipe_fds[0], nullptr, out, nullptr, queued, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (put > 0) {
        queued -= static_cast<std::size_t>(put);
        total += static_cast<std::uint64_t>(put);
        moved = true;
      } else if (put == 0 || errno != EAGAIN) {
        break;  // the other side is gone
      }
    }
    if (ended && queued == 0) break;
    if (moved) continue;
    if (queued > 0) {
      co_await to.async_wait(To::wait_write, asio::redirect_error(use_awaitable, ec));
    } else {
      co_await from.async_wait(From::wait_read, asio::redirect_error(use_awaitable, ec));
    }
    if (ec) break;
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  ::shutdown(out, SHUT_WR);
  co_return total;
}

}  // namespace

awaitable<void> Proxy::Impl::Tunnel(ClientStream& client, beast::flat_buffer& buffer,
                                    beast::tcp_stream up, AuditRecord record) {
  beast::error_code ec;
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  co_await asio::async_write(client, asio::buffer(kEstablished.data(), kEstablished.size()),
                             asio::redirect_error(use_awaitable, ec));
  if (ec) co_return;
  // Bytes the client sent right behind its CONNECT (a pipelined ClientHello).
  if (buffer.size() > 0) {
    record.bytes_up += buffer.size();
    co_await asio::async_write(up, buffer.data(), asio::redirect_error(use_awaitable, ec));
    buffer.consume(buffer.size());
    if (ec) co_return;
  }
  auto& client_socket = client.socket();
  auto& up_socket = up.socket();
  client_socket.non_blocking(true);
  up_socket.non_blocking(true);

  // Upstream-to-client runs beside; this coroutine waits for both directions.
  auto down = std::make_shared<OtherDirection>(io);
  asio::co_spawn(io, Splice(up_socket, client_socket),
                 [down](std::exception_ptr, std::uint64_t moved) { down->Finished(moved); });
  record.bytes_up += co_await Splice(client_socket, up_socket);
  co_await down->Wait();
  record.bytes_down += down->moved;
  record.Finish("allow", "", "");
}
}  // namespace mojoup::credproxy
