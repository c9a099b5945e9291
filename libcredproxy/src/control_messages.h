// The messages of a session's control socket (control.cc serves it,
// approvals_client.cc calls it), each described once.
#pragma once

#include <string>

#include "mojoup/internal/json_codec.h"

namespace mojoup::credproxy::control {

namespace json = mojoup::internal::json;

// POST /v1/approvals/ID
struct DecisionBody {
  std::string decision;  // "approve" or "deny"
  std::string scope = "once";
  std::string reason;
  // Who decided, when a root process (the node's service) relays another
  // user's decision; ignored from anyone else.
  std::string on_behalf_of;
};

inline constexpr auto kDecisionBody =
    json::Message<DecisionBody>(
        json::Field("decision", &DecisionBody::decision),
        json::Optional("scope", &DecisionBody::scope),
        json::Optional("reason", &DecisionBody::reason).OmitDefault(),
        json::Optional("on_behalf_of", &DecisionBody::on_behalf_of).OmitDefault())
        .RefuseUnknown();

// Any answer but 200.
struct Error {
  std::string error;
};

inline constexpr auto kError = json::Message<Error>(json::Field("error", &Error::error));

// Bounds on what either side reads.
inline constexpr std::size_t kMaxRequestBody = 4096;
inline constexpr std::size_t kMaxAnswer = 1 << 20;

}  // namespace mojoup::credproxy::control
