#include "mojoup/internal/openshell_names.h"

namespace mojoup::internal {

bool IsOpenShellGatewayName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  if (name.front() == '-' || name.front() == ' ' || name.back() == ' ') return false;
  for (char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/' || byte < 0x20 || byte == 0x7f) return false;
  }
  return true;
}

}  // namespace mojoup::internal
