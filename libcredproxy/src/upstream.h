// Reaching an upstream on a client's behalf: the rules' admission, dialling
// (upstream.cc), and verified TLS over the dialled stream. Templates over the
// client's stream (plain, or TLS inside an interception).
#pragma once

#include <openssl/ssl.h>

#include "fmt/format.h"
#include "request_head.h"
#include "server.h"

namespace mojoup::credproxy {

template <class Stream>
awaitable<bool> Proxy::Impl::Admit(Stream& client, AuditRecord& record, const std::string& host,
                                   std::uint16_t port, unsigned version) {
  record.host = host;
  record.port = port;
  policy::NetworkRules::Ruling ruling = options.rules.RuleOn(host, port);
  record.source = ruling.rule != nullptr ? ruling.rule->DescribeSource() : "default";
  if (!ruling.allowed) {
    // No rule decided: the operator may, where the session asks, unless a
    // rule denies the host on another port.
    const policy::NetworkRules::Rule* denying =
        ruling.rule == nullptr && options.approvals ? options.rules.DenyingHost(host) : nullptr;
    if (ruling.rule == nullptr && options.approvals && denying == nullptr) {
      co_return co_await AdmitAsked(client, record, host, port, version);
    }
    Refusal refusal = Refusal::BlockedByPolicy(
        host, port, denying != nullptr ? denying->Describe() : ruling.Describe());
    if (denying != nullptr) record.source = denying->DescribeSource();
    refusal.source = record.source;
    co_await Deny(client, record, refusal, version);
    co_return false;
  }
  record.rule = ruling.Describe();
  co_return true;
}

template <class Stream>
awaitable<bool> Proxy::Impl::AdmitAsked(Stream& client, AuditRecord& record,
                                        const std::string& host, std::uint16_t port,
                                        unsigned version) {
  AskAnswer answer = co_await AskOperator(record.method, host, port);
  // The audit names the approval that decided, when one did.
  record.approval = answer.granted ? answer.granted->id : answer.approval;
  if (!record.approval.empty()) record.source = "approval " + record.approval;
  if (answer.refusal) {
    answer.refusal->source = record.source;
    co_await Deny(client, record, *answer.refusal, version);
    co_return false;
  }
  if (!answer.granted) {
    co_await FailUpstream(client, record, answer.error, version);
    co_return false;
  }
  record.rule = GrantRule(*answer.granted);
  co_return true;
}

template <class Stream>
awaitable<std::optional<beast::tcp_stream>> Proxy::Impl::Dial(Stream& client, AuditRecord& record,
                                                              const std::string& host,
                                                              std::uint16_t port,
                                                              unsigned version) {
  Upstream upstream = co_await ConnectUpstream(host, port);
  if (upstream.refusal) {
    co_await Deny(client, record, *upstream.refusal, version);
  } else if (!upstream.stream) {
    co_await FailUpstream(client, record, upstream.error, version);
  }
  co_return std::move(upstream.stream);
}

template <class Stream>
awaitable<std::optional<Proxy::Impl::UpstreamTls>> Proxy::Impl::Secure(
    Stream& client, AuditRecord& record, beast::tcp_stream tcp, const std::string& host,
    std::uint16_t port, unsigned version) {
  UpstreamTls up(std::move(tcp), upstream_tls);
  SSL* ssl = up.native_handle();
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_set_alpn_protos(ssl, kAlpn, sizeof kAlpn);
  const std::string name = WithoutBrackets(host);
  if (!IsIpLiteral(host)) SSL_set_tlsext_host_name(ssl, name.c_str());
  up.set_verify_mode(asio::ssl::verify_peer);
  up.set_verify_callback(asio::ssl::host_name_verification(name));
  beast::get_lowest_layer(up).expires_after(options.connect_timeout);
  beast::error_code ec;
  co_await up.async_handshake(asio::ssl::stream_base::client,
                              asio::redirect_error(use_awaitable, ec));
  if (ec) {
    std::string why = fmt::format("TLS to {}:{} failed: {}", host, port, ec.message());
    record.Finish("error", "", why);
    co_await RespondError(client, http::status::bad_gateway, why, version);
    co_return std::nullopt;
  }
  co_return std::move(up);
}
}  // namespace mojoup::credproxy
