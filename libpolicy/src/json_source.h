// Positions in a JSON text parsed in situ: RapidJSON leaves every string
// (keys included) in the caller's buffer, so a string's address tells where
// it stood. Messages then say file:line:column and the JSON path.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace mojoup::policy::internal {

class JsonSource {
 public:
  // `path` names the file in messages; `text` is copied (RapidJSON writes into it).
  JsonSource(std::string path, std::string_view text);

  // Parses iteratively (deep nesting cannot overflow the stack), refusing
  // invalid UTF-8, duplicate keys, trailing text and nesting deeper than 64.
  absl::Status Parse();
  const rapidjson::Document& root() const { return doc_; }
  const std::string& path() const { return path_; }

  // Byte offset of a string value or key inside the text.
  std::size_t OffsetOf(const rapidjson::Value& string_value) const;
  // "path:line:column: " for a byte offset (column counts characters).
  std::string Where(std::size_t offset) const;

 private:
  std::string path_;
  std::string text_;    // the original, for line and column
  std::string buffer_;  // parsed in place
  rapidjson::Document doc_;
};

// Validates that `text` is UTF-8; on failure returns the offset of the first bad byte.
std::optional<std::size_t> FirstInvalidUtf8(std::string_view text);

// The known word closest to `word` (edit distance at most 2), or "".
std::string_view Closest(std::string_view word, const std::vector<std::string_view>& known);

}  // namespace mojoup::policy::internal
