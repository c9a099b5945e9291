#include "mojoup/internal/session_id.h"

#include <algorithm>
#include <random>

#include "fmt/format.h"

namespace mojoup::internal {

std::string RandomHex() {
  std::random_device random;
  return fmt::format("{:08x}{:08x}", random(), random());
}

bool IsRandomHex(std::string_view text) {
  return text.size() == 16 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace mojoup::internal
