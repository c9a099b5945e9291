// Names a session cannot guess: a session's id, and the names of the files
// and sockets made for it.
#pragma once

#include <string>
#include <string_view>

namespace mojoup::internal {

// 16 hex digits from the system's random source.
std::string RandomHex();
// What RandomHex makes: 16 lowercase hex digits (a session's id).
bool IsRandomHex(std::string_view text);

}  // namespace mojoup::internal
