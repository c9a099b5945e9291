// How the CLI reports errors: miette's "Error:   x" lines, a gateway's
// tonic::Status, clap's usage errors, and what this double does not model.

#include <cstdio>
#include <string>
#include <string_view>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

void Print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// The CLI reports errors through miette; without a terminal it draws "x".
int PrintError(std::string_view message) {
  std::fflush(stdout);
  fmt::print(stderr, "Error:   x {}\n", message);
  return 1;
}

// A Rust `{:?}` of a string.
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

// How a gateway error (a tonic::Status) reaches the user.
std::string GrpcError(std::string_view code, std::string_view message) {
  return fmt::format(
      "status: {}, message: {}, details: [], metadata: MetadataMap {{ headers: {{}} }}", code,
      Quoted(message));
}

int ClapError(std::string_view message, std::string_view usage, std::string_view tip) {
  std::string text = fmt::format("error: {}\n\n", message);
  if (!tip.empty()) text += fmt::format("  tip: {}\n\n", tip);
  text += fmt::format("Usage: {}\n\nFor more information, try '--help'.\n", usage);
  std::fputs(text.c_str(), stderr);
  return 2;
}

int NotModelled(std::string_view what) {
  fmt::print(stderr, "fake-openshell: {} is not implemented by this test double\n", what);
  return 2;
}

}  // namespace mojoup::fake_openshell
