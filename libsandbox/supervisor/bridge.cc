#include "bridge.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <unistd.h>

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
// clang-format off
#include <utility>
// clang-format on
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <vector>

namespace mojoup::supervisor {
namespace {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using Unix = asio::local::stream_protocol;
using boost::system::error_code;

constexpr std::size_t kBufferSize = std::size_t{64} * 1024;

// "ADDRESS:PORT" or "[IPV6]:PORT". make_address, not a resolver: getaddrinfo
// in a static glibc program would need the image's NSS libraries.
std::string ParseListen(const std::string& listen, tcp::endpoint* endpoint) {
  std::string bad = "cannot listen on \"" + listen + "\": ";
  std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return bad + "expected ADDRESS:PORT";
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::string port_text = listen.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port, 10);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return bad + "the port is not a number from 0 to 65535";
  }
  error_code parse_error;
  asio::ip::address address = asio::ip::make_address(host, parse_error);
  if (parse_error) return bad + "the address is not a numeric IP address";
  *endpoint = tcp::endpoint(address, static_cast<std::uint16_t>(port));
  return {};
}

struct Connection {
  explicit Connection(tcp::socket client)
      : tcp_side(std::move(client)), unix_side(tcp_side.get_executor()) {}

  void Close() {
    error_code ignored;
    tcp_side.close(ignored);
    unix_side.close(ignored);
  }

  tcp::socket tcp_side;
  Unix::socket unix_side;
};

// Copies one direction. At a clean end of input only this direction closes
// (the peer may still be answering, e.g. after an HTTP client's half-close);
// any error ends both.
template <typename From, typename To>
awaitable<void> Pump(std::shared_ptr<Connection> connection, From& from, To& to) {
  std::vector<char> buffer(kBufferSize);
  for (;;) {
    error_code ec;
    std::size_t n = co_await from.async_read_some(asio::buffer(buffer),
                                                  asio::redirect_error(use_awaitable, ec));
    if (ec == asio::error::eof) {
      to.shutdown(asio::socket_base::shutdown_send, ec);
      co_return;
    }
    if (!ec) {
      co_await asio::async_write(to, asio::buffer(buffer.data(), n),
                                 asio::redirect_error(use_awaitable, ec));
    }
    if (ec) {
      connection->Close();
      co_return;
    }
  }
}

awaitable<void> Serve(tcp::socket client, Unix::endpoint upstream) {
  auto connection = std::make_shared<Connection>(std::move(client));
  error_code ec;
  co_await connection->unix_side.async_connect(upstream, asio::redirect_error(use_awaitable, ec));
  // The proxy is not there: dropping the TCP connection is the client's answer.
  if (ec) co_return;
  auto executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor, Pump(connection, connection->tcp_side, connection->unix_side),
                 asio::detached);
  asio::co_spawn(executor, Pump(connection, connection->unix_side, connection->tcp_side),
                 asio::detached);
}

awaitable<void> Accept(tcp::acceptor& acceptor, Unix::endpoint upstream) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer pause(executor);
  for (;;) {
    error_code ec;
    tcp::socket client = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
    if (ec) {
      // Out of descriptors or memory: let connections finish rather than spin.
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;
    }
    client.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(executor, Serve(std::move(client), upstream), asio::detached);
  }
}

[[noreturn]] void RunBridge(asio::io_context& context, tcp::acceptor& acceptor,
                            const Unix::endpoint& upstream, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before the line above took effect.
  if (getppid() != parent) _exit(0);
  std::signal(SIGPIPE, SIG_IGN);
  // The command's stdin, stdout and stderr are its own: a reader waiting for
  // end of file must not wait for the bridge too.
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2; ++fd) {
    if (null >= 0) {
      dup2(null, fd);
    } else {
      close(fd);
    }
  }
  if (null > 2) close(null);

  asio::co_spawn(context, Accept(acceptor, upstream), asio::detached);
  context.run();
  _exit(0);
}

}  // namespace

std::string StartBridge(const std::string& listen, const std::string& socket_path, pid_t* child,
                        std::uint16_t* bound_port) {
  tcp::endpoint endpoint;
  if (std::string error = ParseListen(listen, &endpoint); !error.empty()) return error;
  if (socket_path.empty() || socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return "the proxy socket path \"" + socket_path + "\" must have 1 to " +
           std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
  }
  Unix::endpoint upstream(socket_path);

  asio::io_context context(1);
  tcp::acceptor acceptor(context);
  error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  tcp::endpoint bound;
  if (!ec) bound = acceptor.local_endpoint(ec);
  if (ec) return "cannot listen on " + listen + ": " + ec.message();

  pid_t parent = getpid();
  context.notify_fork(asio::execution_context::fork_prepare);
  pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    context.notify_fork(asio::execution_context::fork_parent);
    return "cannot start the proxy bridge: " + std::string(std::strerror(error));
  }
  if (pid == 0) {
    context.notify_fork(asio::execution_context::fork_child);
    RunBridge(context, acceptor, upstream, parent);
  }
  context.notify_fork(asio::execution_context::fork_parent);
  // Only the bridge accepts; the command must not inherit the listener.
  acceptor.close(ec);
  *child = pid;
  if (bound_port != nullptr) *bound_port = bound.port();
  return {};
}

}  // namespace mojoup::supervisor
