#include "test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "fmt/format.h"

namespace mojoup::test {

ThreadServer::ThreadServer(const std::string& address, unsigned short port, Serve serve)
    : serve_(std::move(serve)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &where.sin_addr) != 1) {
    error_ = "not an IPv4 address: " + address;
    return;
  }
  socklen_t length = sizeof where;
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0 ||
      listen(listen_fd_, 128) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&where), &length) != 0) {
    error_ = fmt::format(
        "cannot listen on {}:{}: {}{}", address, port, std::strerror(errno),
        errno == EACCES ? " (a port below 1024 needs root or CAP_NET_BIND_SERVICE)" : "");
    return;
  }
  port_ = ntohs(where.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

ThreadServer::~ThreadServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  close(listen_fd_);
  {
    std::lock_guard lock(mu_);
    for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& thread : threads_) thread.join();
}

bool ThreadServer::Pending() const {
  pollfd listening{listen_fd_, POLLIN, 0};
  return poll(&listening, 1, 0) > 0;
}

void ThreadServer::AcceptLoop() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    std::lock_guard lock(mu_);
    if (stopping_) {
      if (fd >= 0) close(fd);
      return;
    }
    if (fd < 0) continue;
    connections_.push_back(fd);
    ++accepted_;
    threads_.emplace_back([this, fd] { ServeOne(fd); });
  }
}

void ThreadServer::ServeOne(int fd) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io, boost::asio::ip::tcp::v4(), fd);
  serve_(socket);
  boost::system::error_code ec;
  socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  // The fd closes with the socket, after this: forgotten first, so the
  // destructor never shuts down a number the system has handed out again.
  std::lock_guard lock(mu_);
  connections_.erase(std::remove(connections_.begin(), connections_.end(), fd), connections_.end());
}

SeenRequest Recorded(const boost::beast::http::request<boost::beast::http::string_body>& request) {
  auto str = [](boost::beast::string_view text) { return std::string(text.data(), text.size()); };
  SeenRequest record;
  record.method = str(request.method_string());
  record.target = str(request.target());
  record.body_bytes = request.body().size();
  for (const auto& field : request) {
    std::string name = str(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    record.headers.emplace_back(std::move(name), str(field.value()));
  }
  return record;
}

}  // namespace mojoup::test
