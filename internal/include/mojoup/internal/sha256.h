// SHA-256 as lowercase hex: how Docker names a context's directory, how the
// sandbox names state files after repositories and compares sign-in files.
#pragma once

#include <string>
#include <string_view>

namespace mojoup::internal {

// Lowercase hex SHA-256 of `bytes` (64 characters).
std::string Sha256Hex(std::string_view bytes);

}  // namespace mojoup::internal
