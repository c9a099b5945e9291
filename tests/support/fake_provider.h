// FakeProvider: a model provider's HTTPS API on a loopback address of its own,
// port 443, for the real agent CLIs to talk to through a session's proxy
// (`--resolve api.anthropic.com:443:127.0.13.1 --upstream-ca CA`). It speaks
// just enough of two public APIs for one answer to come back:
//   Anthropic Messages    POST /v1/messages, streamed (server-sent events)
//                         when the body asks "stream": true, else JSON
//   OpenAI Responses      POST /v1/responses, streamed, and the same over a
//                         WebSocket (GET /v1/responses with an Upgrade),
//                         recorded as "WS /v1/responses" per message; the
//                         same at /backend-api/codex/responses (ChatGPT's
//                         Codex API)
// plus a model list at GET /v1/models. Everything else is a 404 with a JSON
// error body; every request, answered or not, is recorded with its headers'
// full values, so a test compares them with the keys it knows.
//
//   auto ca = SessionCa::Create("provider CA");
//   FakeProvider anthropic(*(*ca)->ServerContext("api.anthropic.com"), "127.0.13.1",
//                          "the answer");
//   if (!anthropic.error().empty()) MOJOUP_SKIP(anthropic.error());
//   ... run the agent ...
//   for (const ProviderRequest& r : anthropic.seen()) ...
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "echo_server.h"

namespace mojoup::credproxy {
class ServerTls;  // from SessionCa::ServerContext
}

namespace mojoup::test {

class ThreadServer;  // test_server.h

// A request as EchoServer records one (method, target, headers with full
// values, Header()), with its body.
struct ProviderRequest : SeenRequest {
  std::string body;
};

class FakeProvider {
 public:
  // Listens on `address`:`port` (TLS with `tls`); answers carry `answer` as
  // the model's whole reply. error() says why it could not listen.
  FakeProvider(std::shared_ptr<credproxy::ServerTls> tls, const std::string& address,
               std::string answer, unsigned short port = 443);
  ~FakeProvider();
  FakeProvider(const FakeProvider&) = delete;
  FakeProvider& operator=(const FakeProvider&) = delete;

  // Speaks OAuth's refresh grant at POST `path` (RFC 6749, section 6): a
  // body (JSON, or form-encoded) whose refresh_token is `refresh_token` gets
  // 200 and `answer` (JSON); any other, 400 invalid_grant. Once used, the
  // refresh token is spent: a second use is invalid_grant too, as the
  // providers' single-use refresh tokens are.
  void IssueTokens(const std::string& path, const std::string& refresh_token,
                   const std::string& answer);

  // Answers `method` `path` (the target without its query) with 200 and
  // `json`, for the calls a client makes around its model requests.
  void Answer(const std::string& method, const std::string& path, const std::string& json);

  const std::string& error() const;
  unsigned short port() const;  // the one asked for, or the free one taken for 0
  std::vector<ProviderRequest> seen() const;
  // The requests with this method whose target starts with `path`.
  std::vector<ProviderRequest> seen(const std::string& method, const std::string& path) const;

 private:
  std::shared_ptr<credproxy::ServerTls> tls_;
  std::string answer_;
  mutable std::mutex mu_;
  std::vector<ProviderRequest> seen_;
  struct Grant {
    std::string refresh_token;
    std::string answer;
    bool spent = false;
  };
  std::map<std::string, Grant> grants_;        // by path
  std::map<std::string, std::string> canned_;  // "METHOD path" -> JSON
  std::unique_ptr<ThreadServer> server_;  // last: it stops first
};

// The text of an agent's answer as the fakes send it: JSON-safe, no quotes.
std::string JsonEscaped(const std::string& text);

}  // namespace mojoup::test
