#include "fake_provider.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>

#include "fmt/format.h"
#include "server_tls.h"
#include "test_server.h"

namespace mojoup::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;


// One event of a stream: its name and its JSON.
struct Event {
  std::string name;
  std::string data;
};

struct Body {
  bool stream = false;
  std::string model;
};

Body ReadBody(const std::string& text) {
  Body body;
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return body;
  if (auto it = doc.FindMember("stream"); it != doc.MemberEnd() && it->value.IsBool()) {
    body.stream = it->value.GetBool();
  }
  if (auto it = doc.FindMember("model"); it != doc.MemberEnd() && it->value.IsString()) {
    body.model = it->value.GetString();
  }
  return body;
}

// Anthropic Messages API, streamed. Source: docs.anthropic.com, "Streaming
// Messages" ("Event types" and "Basic streaming request"): message_start with
// an empty message, then per content block content_block_start,
// content_block_delta (text_delta) and content_block_stop, then message_delta
// with stop_reason and the output usage, and message_stop.
std::vector<Event> AnthropicEvents(const std::string& model, const std::string& text) {
  const std::string id = "msg_fake0123456789";
  return {
      Event{
          "message_start",
          fmt::format(R"({{"type":"message_start","message":{{"id":"{}","type":"message",)"
                      R"("role":"assistant","content":[],"model":"{}","stop_reason":null,)"
                      R"("stop_sequence":null,"usage":{{"input_tokens":12,"output_tokens":1}}}}}})",
                      id, model)},
      Event{
          "content_block_start",
          R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"},
      Event{"ping", R"({"type":"ping"})"},
      Event{"content_block_delta", fmt::format(R"({{"type":"content_block_delta","index":0,)"
                                               R"("delta":{{"type":"text_delta","text":"{}"}}}})",
                                               JsonEscaped(text))},
      Event{"content_block_stop", R"({"type":"content_block_stop","index":0})"},
      Event{"message_delta",
            R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},)"
            R"("usage":{"output_tokens":7}})"},
      Event{"message_stop", R"({"type":"message_stop"})"},
  };
}

// Anthropic Messages API, not streamed. Source: docs.anthropic.com, "Messages"
// API reference, the response body.
std::string AnthropicMessage(const std::string& model, const std::string& text) {
  return fmt::format(
      R"({{"id":"msg_fake0123456789","type":"message","role":"assistant","model":"{}",)"
      R"("content":[{{"type":"text","text":"{}"}}],"stop_reason":"end_turn",)"
      R"("stop_sequence":null,"usage":{{"input_tokens":12,"output_tokens":7}}}})",
      model, JsonEscaped(text));
}

// OpenAI Responses API, streamed. Source: platform.openai.com, "Streaming API
// responses" and the "Streaming events" reference: response.created,
// response.in_progress, then for the message item output_item.added,
// content_part.added, output_text.delta..., output_text.done,
// content_part.done, output_item.done, and response.completed carrying the
// whole response with its usage.
std::vector<Event> OpenAiEvents(const std::string& model, const std::string& text) {
  const std::string id = "resp_fake0123456789";
  const std::string item = "msg_fake0123456789";
  const std::string escaped = JsonEscaped(text);
  const std::string part =
      fmt::format(R"({{"type":"output_text","text":"{}","annotations":[]}})", escaped);
  const std::string done_item = fmt::format(
      R"({{"id":"{}","type":"message","status":"completed","role":"assistant","content":[{}]}})",
      item, part);
  auto response = [&](const std::string& status, const std::string& output,
                      const std::string& usage) {
    return fmt::format(R"({{"id":"{}","object":"response","created_at":1790000000,"status":"{}",)"
                       R"("model":"{}","output":[{}],"usage":{}}})",
                       id, status, model, output, usage);
  };
  int sequence = 0;
  auto data = [&](const std::string& type, const std::string& rest) {
    return Event{type,
                 fmt::format(R"({{"type":"{}","sequence_number":{},{}}})", type, sequence++, rest)};
  };
  std::vector<Event> events;
  events.push_back(
      data("response.created", R"("response":)" + response("in_progress", "", "null")));
  events.push_back(
      data("response.in_progress", R"("response":)" + response("in_progress", "", "null")));
  events.push_back(data(
      "response.output_item.added",
      fmt::format(R"("output_index":0,"item":{{"id":"{}","type":"message","status":"in_progress",)"
                  R"("role":"assistant","content":[]}})",
                  item)));
  events.push_back(data("response.content_part.added",
                        fmt::format(R"("item_id":"{}","output_index":0,"content_index":0,)"
                                    R"("part":{{"type":"output_text","text":"","annotations":[]}})",
                                    item)));
  events.push_back(data("response.output_text.delta",
                        fmt::format(R"("item_id":"{}","output_index":0,"content_index":0,)"
                                    R"("delta":"{}","logprobs":[])",
                                    item, escaped)));
  events.push_back(data("response.output_text.done",
                        fmt::format(R"("item_id":"{}","output_index":0,"content_index":0,)"
                                    R"("text":"{}","logprobs":[])",
                                    item, escaped)));
  events.push_back(data(
      "response.content_part.done",
      fmt::format(R"("item_id":"{}","output_index":0,"content_index":0,"part":{})", item, part)));
  events.push_back(
      data("response.output_item.done", fmt::format(R"("output_index":0,"item":{})", done_item)));
  events.push_back(
      data("response.completed",
           R"("response":)" +
               response("completed", done_item,
                        R"({"input_tokens":12,"input_tokens_details":{"cached_tokens":0},)"
                        R"("output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},)"
                        R"("total_tokens":19})")));
  return events;
}

// A model list in the shape both APIs share closely enough for a start-up
// probe. Sources: docs.anthropic.com "List Models", platform.openai.com
// "List models".
std::string Models(const std::string& host) {
  if (host.find("anthropic") != std::string::npos) {
    return R"({"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5",)"
           R"("created_at":"2025-09-29T00:00:00Z"}],"has_more":false,)"
           R"("first_id":"claude-sonnet-4-5","last_id":"claude-sonnet-4-5"})";
  }
  return R"({"object":"list","data":[{"id":"gpt-5","object":"model","created":1790000000,)"
         R"("owned_by":"openai"}]})";
}

template <class Stream>
void WriteEvents(Stream& stream, unsigned version, const std::vector<Event>& events,
                 beast::error_code& ec) {
  // Chunked, one event per chunk, as the real APIs stream them.
  http::response<http::empty_body> head{http::status::ok, version};
  head.set(http::field::content_type, "text/event-stream; charset=utf-8");
  head.set(http::field::cache_control, "no-cache");
  head.chunked(true);
  head.keep_alive(true);
  http::response_serializer<http::empty_body> serializer{head};
  http::write_header(stream, serializer, ec);
  for (const Event& event : events) {
    if (ec) return;
    // Server-sent events (WHATWG HTML, "Server-sent events"): "event:" and
    // "data:" lines, a blank line after each.
    const std::string text = "event: " + event.name + "\ndata: " + event.data + "\n\n";
    asio::write(stream, http::make_chunk(asio::buffer(text)), ec);
  }
  if (!ec) asio::write(stream, http::make_chunk_last(), ec);
}

// The Responses API over a WebSocket (platform.openai.com, Responses API
// "WebSocket mode"; what Codex tries first, with `openai-beta:
// responses_websockets`): each client message {"type": "response.create",
// ...the request body's fields} is answered with the events of a streamed
// response, one JSON text message each. Each message is recorded as a
// request "WS /v1/responses" with the upgrade's headers and the message as
// its body.
template <class Stream>
void ServeResponsesWebSocket(Stream& stream, http::request<http::string_body> upgrade,
                             const ProviderRequest& head, const std::string& answer, std::mutex& mu,
                             std::vector<ProviderRequest>& seen) {
  beast::websocket::stream<Stream&> socket(stream);
  beast::error_code ec;
  socket.accept(upgrade, ec);
  if (ec) return;
  for (;;) {
    beast::flat_buffer message;
    socket.read(message, ec);
    if (ec) return;
    ProviderRequest record = head;
    record.method = "WS";
    record.body = beast::buffers_to_string(message.data());
    {
      std::lock_guard lock(mu);
      seen.push_back(record);
    }
    if (record.body.find("\"response.create\"") == std::string::npos) continue;
    const std::string model = ReadBody(record.body).model;
    socket.text(true);
    for (const Event& event : OpenAiEvents(model.empty() ? "fake-model" : model, answer)) {
      socket.write(asio::buffer(event.data), ec);
      if (ec) return;
    }
  }
}

// The refresh_token of a token request's body, JSON or form-encoded.
std::string RefreshTokenOf(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (!doc.HasParseError() && doc.IsObject()) {
    auto it = doc.FindMember("refresh_token");
    return it != doc.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
  }
  for (std::size_t start = 0; start <= body.size();) {
    std::size_t end = body.find('&', start);
    if (end == std::string::npos) end = body.size();
    const std::string pair = body.substr(start, end - start);
    if (pair.rfind("refresh_token=", 0) == 0) {
      std::string value;
      for (std::size_t i = 14; i < pair.size(); ++i) {
        if (pair[i] == '%' && i + 2 < pair.size()) {
          value += static_cast<char>(std::stoi(pair.substr(i + 1, 2), nullptr, 16));
          i += 2;
        } else {
          value += pair[i] == '+' ? ' ' : pair[i];
        }
      }
      return value;
    }
    start = end + 1;
  }
  return "";
}

// A canned or token answer for "METHOD path", if the test set one.
using TokenGrant = std::function<std::optional<std::pair<int, std::string>>(
    const std::string& method_path, const std::string& body)>;

template <class Stream>
void Exchange(Stream& stream, const std::string& answer, std::mutex& mu,
              std::vector<ProviderRequest>& seen, const TokenGrant& grant) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    beast::error_code ec;
    http::read(stream, buffer, parser, ec);
    if (ec) return;
    http::request<http::string_body>& request = parser.get();
    ProviderRequest record{Recorded(request), request.body()};
    {
      std::lock_guard lock(mu);
      seen.push_back(record);
    }
    const std::string path = record.target.substr(0, record.target.find('?'));
    // ChatGPT's Codex API (Codex and opencode signed in with ChatGPT) takes
    // the Responses API at its own path.
    const bool responses = path == "/v1/responses" || path == "/backend-api/codex/responses";
    if (beast::websocket::is_upgrade(request) && responses) {
      ServeResponsesWebSocket(stream, parser.release(), record, answer, mu, seen);
      return;
    }
    const Body body = ReadBody(record.body);
    const std::string model = body.model.empty() ? "fake-model" : body.model;
    if (record.method == "POST" && path == "/v1/messages" && body.stream) {
      WriteEvents(stream, request.version(), AnthropicEvents(model, answer), ec);
    } else if (record.method == "POST" && responses) {
      WriteEvents(stream, request.version(), OpenAiEvents(model, answer), ec);
    } else {
      http::response<http::string_body> response{http::status::ok, request.version()};
      response.set(http::field::content_type, "application/json");
      std::optional<std::pair<int, std::string>> granted = grant(record.method + " " + path, record.body);
      if (granted) {
        response.result(static_cast<unsigned>(granted->first));
        response.body() = granted->second;
      } else if (record.method == "POST" && path == "/v1/messages") {
        response.body() = AnthropicMessage(model, answer);
      } else if (record.method == "GET" && path == "/v1/models") {
        response.body() = Models(record.Header("host"));
      } else {
        // Not a part of the API this fake speaks: the shape both APIs use for
        // an unknown path (docs.anthropic.com "Errors", not_found_error).
        response.result(http::status::not_found);
        response.body() =
            R"({"type":"error","error":{"type":"not_found_error","message":"not faked"}})";
      }
      response.keep_alive(request.keep_alive());
      response.prepare_payload();
      http::write(stream, response, ec);
    }
    if (ec || !request.keep_alive()) return;
  }
}

}  // namespace

std::string JsonEscaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out;
}

FakeProvider::FakeProvider(std::shared_ptr<credproxy::ServerTls> tls,
                           const std::string& address, std::string answer, unsigned short port)
    : tls_(std::move(tls)), answer_(std::move(answer)) {
  server_ = std::make_unique<ThreadServer>(address, port, [this](asio::ip::tcp::socket& socket) {
    beast::error_code ec;
    asio::ssl::stream<asio::ip::tcp::socket&> stream(socket, tls_->context());
    stream.handshake(asio::ssl::stream_base::server, ec);
    if (!ec) {
      Exchange(stream, answer_, mu_, seen_,
               [this](const std::string& path,
                      const std::string& body) -> std::optional<std::pair<int, std::string>> {
                 std::lock_guard lock(mu_);
                 if (auto canned = canned_.find(path); canned != canned_.end()) {
                   return std::make_pair(200, canned->second);
                 }
                 if (path.rfind("POST ", 0) != 0) return std::nullopt;
                 auto it = grants_.find(path.substr(5));
                 if (it == grants_.end()) return std::nullopt;
                 if (it->second.spent || RefreshTokenOf(body) != it->second.refresh_token) {
                   return std::make_pair(400, std::string(R"({"error":"invalid_grant"})"));
                 }
                 it->second.spent = true;
                 return std::make_pair(200, it->second.answer);
               });
    }
  });
}

void FakeProvider::Answer(const std::string& method, const std::string& path,
                          const std::string& json) {
  std::lock_guard lock(mu_);
  canned_[method + " " + path] = json;
}

void FakeProvider::IssueTokens(const std::string& path, const std::string& refresh_token,
                               const std::string& answer) {
  std::lock_guard lock(mu_);
  grants_[path] = {refresh_token, answer, false};
}

FakeProvider::~FakeProvider() = default;

const std::string& FakeProvider::error() const { return server_->error(); }

unsigned short FakeProvider::port() const { return server_->port(); }

std::vector<ProviderRequest> FakeProvider::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

std::vector<ProviderRequest> FakeProvider::seen(const std::string& method,
                                                const std::string& path) const {
  std::vector<ProviderRequest> matching;
  for (const ProviderRequest& request : seen()) {
    if (request.method == method && request.target.rfind(path, 0) == 0) {
      matching.push_back(request);
    }
  }
  return matching;
}

}  // namespace mojoup::test
