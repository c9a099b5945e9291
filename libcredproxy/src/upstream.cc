// Resolving and connecting to an upstream: pins first, then IP literals, then
// DNS with loopback, private and link-local answers
// dropped unless a rule names that very address.
#include <boost/asio/ip/tcp.hpp>

#include "fmt/format.h"
#include "request_head.h"
#include "server.h"

namespace mojoup::credproxy {

awaitable<Proxy::Impl::Resolved> Proxy::Impl::Resolve(const std::string& host, std::uint16_t port) {
  Resolved resolved;
  std::vector<std::string> blocked;
  // An address the session may reach: not a blocked one, unless a rule names it.
  std::function<void(asio::ip::address)> admit = [&](asio::ip::address address) {
    if (address.is_v6() && address.to_v6().is_v4_mapped()) {
      address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
    }
    const std::string text = address.to_string();
    const std::string literal = address.is_v6() ? "[" + text + "]" : text;
    if (IsBlockedAddress(text) && !options.rules.RuleOn(literal, port).NamesAddress()) {
      blocked.push_back(text);
    } else {
      resolved.candidates.emplace_back(address, port);
    }
  };
  beast::error_code ec;
  if (auto pin = options.pins.find(fmt::format("{}:{}", host, port)); pin != options.pins.end()) {
    // The operator's explicit choice, blocked or not.
    resolved.candidates.emplace_back(asio::ip::make_address(pin->second), port);
    co_return resolved;
  }
  if (IsIpLiteral(host)) {
    admit(asio::ip::make_address(WithoutBrackets(host)));
  } else {
    auto resolver = std::make_shared<asio::ip::tcp::resolver>(io);
    asio::steady_timer deadline(io, options.connect_timeout);
    deadline.async_wait([resolver](beast::error_code timer) {
      if (!timer) resolver->cancel();
    });
    auto results = co_await resolver->async_resolve(host, std::to_string(port),
                                                    asio::redirect_error(use_awaitable, ec));
    deadline.cancel();
    if (ec) {
      resolved.error = ec == asio::error::operation_aborted
                           ? fmt::format("resolving {} took longer than {} s", host,
                                         options.connect_timeout.count() / 1000)
                           : fmt::format("cannot resolve {}: {}", host, ec.message());
      co_return resolved;
    }
    for (const auto& entry : results) admit(entry.endpoint().address());
  }
  if (resolved.candidates.empty()) {
    resolved.refusal = Refusal::BlockedAddress(host, port, blocked.empty() ? "" : blocked[0]);
  }
  co_return resolved;
}

awaitable<Proxy::Impl::Upstream> Proxy::Impl::ConnectUpstream(const std::string& host,
                                                              std::uint16_t port) {
  Upstream upstream;
  Resolved resolved = co_await Resolve(host, port);
  if (resolved.refusal || !resolved.error.empty()) {
    upstream.refusal = std::move(resolved.refusal);
    upstream.error = std::move(resolved.error);
    co_return upstream;
  }
  const std::vector<asio::ip::tcp::endpoint>& candidates = resolved.candidates;
  beast::error_code ec;
  beast::tcp_stream stream(io);
  stream.expires_after(options.connect_timeout);
  co_await stream.async_connect(candidates, asio::redirect_error(use_awaitable, ec));
  if (ec) {
    upstream.error = ec == beast::error::timeout
                         ? fmt::format("{}:{} did not accept a connection within {} s", host, port,
                                       options.connect_timeout.count() / 1000)
                         : fmt::format("cannot connect to {}:{}: {}", host, port, ec.message());
    co_return upstream;
  }
  stream.expires_never();
  stream.socket().set_option(asio::ip::tcp::no_delay(true));
  upstream.stream.emplace(std::move(stream));
  co_return upstream;
}
}  // namespace mojoup::credproxy
