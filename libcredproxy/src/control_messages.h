// The messages of a session's control socket (control.cc serves it,
// approvals_client.cc calls it), each described once.
#pragma once

#include <sys/types.h>

#include <optional>
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

// Who is at the other end of a connected unix socket, as the kernel says
// (SO_PEERCRED); nullopt when it cannot.
std::optional<uid_t> PeerUid(int fd);
// The user's name, else "uid N".
std::string UserName(uid_t uid);

}  // namespace mojoup::credproxy::control
