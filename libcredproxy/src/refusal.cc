#include "refusal.h"

#include "fmt/format.h"
#include "mojoup/internal/json_codec.h"

namespace mojoup::credproxy {
namespace {

namespace json = mojoup::internal::json;

constexpr auto kRefusal = json::Message<Refusal>(
    json::Field("error", &Refusal::code), json::Field("host", &Refusal::host),
    json::Field("port", &Refusal::port), json::Field("rule", &Refusal::rule),
    json::Field("message", &Refusal::message));

// The body of an error that is not a refusal: its HTTP status and a sentence.
struct ErrorBody {
  unsigned error = 0;
  std::string message;
};

constexpr auto kErrorBody = json::Message<ErrorBody>(json::Field("error", &ErrorBody::error),
                                                     json::Field("message", &ErrorBody::message));

constexpr std::string_view kNotAFault =
    " This is the session's policy, not a network fault: do not retry, and do not try another "
    "route. Ask the person running the session if the access is needed.";

std::string Join(const std::vector<std::string>& hosts) {
  std::string out;
  for (const std::string& host : hosts) out += (out.empty() ? "" : ", ") + host;
  return out;
}

// Where a credential's real value may go, for people.
std::string Bound(const Credential& credential) {
  if (credential.retired) return "replaced by a refresh, so its stand-in goes nowhere";
  std::vector<std::string> places = credential.hosts;
  for (const TokenEndpoint& endpoint : credential.endpoints) {
    places.push_back(fmt::format("the {} field of a token request to https://{}{}", endpoint.field,
                                 endpoint.host, endpoint.path));
  }
  if (places.empty()) return "bound to nothing, so its stand-in goes nowhere";
  return fmt::format("bound to {} only", Join(places));
}

}  // namespace

std::string Refusal::Json() const { return json::ToJson(*this, kRefusal) + "\n"; }

Refusal Refusal::BlockedByPolicy(const std::string& host, std::uint16_t port,
                                 const std::string& rule) {
  return {"blocked-by-policy", host, port, rule,
          fmt::format("Blocked by policy: this session may not reach {}:{} ({}).{}", host, port,
                      rule, kNotAFault)};
}

Refusal Refusal::CredentialMismatch(const std::string& host, std::uint16_t port,
                                    const Credential& credential, bool over_tls,
                                    const std::string& where) {
  std::string binding = fmt::format("credential {} is {}", credential.name, Bound(credential));
  const std::string at = where.empty() ? "" : " " + where;
  std::string why =
      over_tls ? fmt::format("the request to {} carries the stand-in for {}{}, which is {}", host,
                             credential.name, at, Bound(credential))
               : fmt::format(
                     "the plain-http request to {} carries the stand-in for {}{}, and "
                     "credentials go only over https ({})",
                     host, credential.name, at, Bound(credential));
  return {"credential-host-mismatch", host, port, binding,
          fmt::format("Blocked by policy: {}. {}{}", why,
                      where.empty() ? "Nothing was sent."
                                    : "The request was cut short before the stand-in was sent.",
                      kNotAFault)};
}

Refusal Refusal::TokenMisplaced(const std::string& host, std::uint16_t port,
                                const Credential& credential, const std::string& where) {
  return {"credential-misplaced", host, port,
          fmt::format("credential {} is {}", credential.name, Bound(credential)),
          fmt::format("Blocked by policy: the request to {} carries the stand-in for {} {}; it "
                      "is {}. Nothing was sent.{}",
                      host, credential.name, where, Bound(credential), kNotAFault)};
}

Refusal Refusal::SignInStale(const std::string& host, std::uint16_t port,
                             const std::string& sign_in, const std::string& why) {
  return {"sign-in-stale", host, port, fmt::format("the sign-in {} went stale", sign_in),
          fmt::format("The session's sign-in went stale: {}. Nothing was sent; sign in again "
                      "on the host and start a new session.",
                      why)};
}

Refusal Refusal::StandInMisplaced(const std::string& host, std::uint16_t port,
                                  const Credential& credential, const std::string& where,
                                  const std::vector<std::string>& credential_headers) {
  return {"credential-misplaced", host, port,
          fmt::format("credential {} is swapped only in credential headers: {}", credential.name,
                      Join(credential_headers)),
          fmt::format("Blocked by policy: the request to {} carries the stand-in for {} in {}. "
                      "The proxy swaps a stand-in for its key only as the whole value of a "
                      "credential header ({}; in Authorization as \"Bearer KEY\", \"token KEY\" "
                      "or the user or password of Basic credentials), never in the target, the "
                      "query or other headers. Nothing was sent.",
                      host, credential.name, where, Join(credential_headers))};
}

Refusal Refusal::HostMismatch(const std::string& host, std::uint16_t port,
                              const std::string& named) {
  return {"host-mismatch", host, port,
          fmt::format("requests in a tunnel to {}:{} must name {}", host, port, host),
          fmt::format("Blocked by policy: this connection was opened to {}:{}, but the request "
                      "names {}. A request must name the host and port its tunnel was opened to, "
                      "in its Host header and in an absolute-form target. Nothing was sent.{}",
                      host, port, named, kNotAFault)};
}

Refusal Refusal::ReflectingMethod(const std::string& host, std::uint16_t port,
                                  const std::string& method) {
  return {"method-not-allowed", host, port, fmt::format("{} is never forwarded", method),
          fmt::format("Blocked by policy: {} asks the server to send the request back, "
                      "credentials included, so the proxy never forwards it. Nothing was sent.{}",
                      method, kNotAFault)};
}

Refusal Refusal::ApprovalPending(const std::string& host, std::uint16_t port,
                                 const std::string& approval, std::chrono::seconds held) {
  return {"approval-pending", host, port, fmt::format("approval {} is pending", approval),
          fmt::format("Waiting for approval: no rule allows {}:{}, so the person running this "
                      "session was asked (approval {}) and has not answered in {} s. Nothing was "
                      "sent. Retry this same request later: it passes once approved. Do not try "
                      "another route to the same place.",
                      host, port, approval, held.count())};
}

Refusal Refusal::ApprovalDenied(const std::string& host, std::uint16_t port,
                                const std::string& approval, const std::string& by,
                                const std::string& reason) {
  return {"approval-denied", host, port, fmt::format("approval {} denied by {}", approval, by),
          fmt::format("Blocked by the operator: {} denied this session access to {}:{} "
                      "(approval {}){}.{}",
                      by, host, port, approval, reason.empty() ? "" : ": " + reason, kNotAFault)};
}

Refusal Refusal::ApprovalLimit(const std::string& host, std::uint16_t port, std::size_t pending) {
  return {"approval-limit", host, port,
          fmt::format("the session's pending approvals are at their limit ({})", pending),
          fmt::format("Blocked by policy: no rule allows {}:{}, and this session's requests "
                      "waiting for approval are at their limit ({}), so this one was not asked. "
                      "Nothing was sent. Ask the person running the session to answer the "
                      "pending ones.",
                      host, port, pending)};
}

Refusal Refusal::BlockedAddress(const std::string& host, std::uint16_t port,
                                const std::string& address) {
  return {"blocked-address", host, port,
          fmt::format("{} is a loopback, private, link-local or metadata address", address),
          fmt::format("Blocked by policy: {} resolves to {}, a loopback, private, link-local or "
                      "metadata address that sessions may not reach unless a rule names it.{}",
                      host, address, kNotAFault)};
}

std::string ErrorJson(int status, const std::string& message) {
  return json::ToJson(ErrorBody{static_cast<unsigned>(status), message}, kErrorBody) + "\n";
}

}  // namespace mojoup::credproxy
