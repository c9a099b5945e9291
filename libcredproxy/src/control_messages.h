// The messages of a session's control socket (control.cc serves it,
// approvals_client.cc calls it), each described once.
#pragma once

#include <string>

#include "mojoup/internal/json_codec.h"

namespace mojoup::credproxy::control {

namespace json = mojoup::internal::json;

// Any answer but 200.
struct Error {
  std::string error;
};

inline constexpr auto kError = json::Message<Error>(json::Field("error", &Error::error));

// Bounds on what either side reads.
inline constexpr std::size_t kMaxRequestBody = 4096;
inline constexpr std::size_t kMaxAnswer = 1 << 20;

}  // namespace mojoup::credproxy::control
