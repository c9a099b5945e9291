#include "json_source.h"

#include <rapidjson/error/en.h>

#include <algorithm>
#include <optional>
#include <set>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"

namespace mojoup::policy::internal {
namespace {

constexpr int kMaxPolicyDepth = 64;
constexpr unsigned kParseFlags = rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseValidateEncodingFlag;

// RapidJSON's DOM keeps duplicate keys; a policy with two "sandbox" keys is
// ambiguous, so refuse it. Returns the second occurrence. Iterative: a hostile
// file may nest deeper than the stack would allow.
const rapidjson::Value* FirstDuplicateKey(const rapidjson::Value& root) {
  std::vector<const rapidjson::Value*> pending{&root};
  while (!pending.empty()) {
    const rapidjson::Value* value = pending.back();
    pending.pop_back();
    if (value->IsObject()) {
      std::set<std::string_view> seen;
      for (const auto& member : value->GetObject()) {
        std::string_view key(member.name.GetString(), member.name.GetStringLength());
        if (!seen.insert(key).second) return &member.name;
        pending.push_back(&member.value);
      }
    } else if (value->IsArray()) {
      for (const auto& element : value->GetArray()) pending.push_back(&element);
    }
  }
  return nullptr;
}

}  // namespace

JsonSource::JsonSource(std::string path, std::string_view text)
    : path_(std::move(path)), text_(text), buffer_(text) {}

absl::Status JsonSource::Parse() {
  if (auto bad = FirstInvalidUtf8(text_)) {
    return absl::InvalidArgumentError(
        fmt::format("{}the file is not valid UTF-8 (byte offset {}); policy files must be UTF-8 "
                    "JSON",
                    Where(*bad), *bad));
  }
  // In situ (strings stay in buffer_, so OffsetOf works) through a handler
  // that refuses nesting past kMaxPolicyDepth: the walk over the document
  // recurses, and no policy needs more.
  rapidjson::Reader reader;
  rapidjson::InsituStringStream stream(buffer_.data());
  mojoup::internal::DepthCappedHandler<rapidjson::Document> capped(doc_, kMaxPolicyDepth);
  rapidjson::ParseResult result;
  auto generate = [&](rapidjson::Document& /*reached through `capped`*/) {
    result = reader.Parse<kParseFlags>(stream, capped);
    return !result.IsError();
  };
  doc_.Populate(generate);
  if (capped.too_deep()) {
    doc_.SetNull();
    return absl::InvalidArgumentError(fmt::format("{}the policy nests deeper than {} levels",
                                                  Where(result.Offset()), kMaxPolicyDepth));
  }
  if (result.IsError()) {
    doc_.SetNull();
    return absl::InvalidArgumentError(fmt::format("{}not valid JSON: {}", Where(result.Offset()),
                                                  rapidjson::GetParseError_En(result.Code())));
  }
  if (stream.Tell() != buffer_.size()) {
    doc_.SetNull();
    return absl::InvalidArgumentError(
        fmt::format("{}not valid JSON: a NUL byte follows the value", Where(stream.Tell())));
  }
  if (const rapidjson::Value* duplicate = FirstDuplicateKey(doc_)) {
    return absl::InvalidArgumentError(
        fmt::format("{}the key \"{}\" appears twice in one object; keep one",
                    Where(OffsetOf(*duplicate)), duplicate->GetString()));
  }
  return absl::OkStatus();
}

std::size_t JsonSource::OffsetOf(const rapidjson::Value& string_value) const {
  const char* at = string_value.GetString();
  if (at < buffer_.data() || at > buffer_.data() + buffer_.size()) return 0;
  // In situ strings start just after their opening quote.
  std::size_t offset = static_cast<std::size_t>(at - buffer_.data());
  return offset > 0 ? offset - 1 : 0;
}

std::string JsonSource::Where(std::size_t offset) const {
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < offset && i < text_.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text_[i]);
    if (byte == '\n') {
      ++line;
      column = 1;
    } else if ((byte & 0xC0) != 0x80) {
      ++column;
    }
  }
  return fmt::format("{}:{}:{}: ", path_, line, column);
}

std::optional<std::size_t> FirstInvalidUtf8(std::string_view text) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  while (i < n) {
    unsigned char c = byte(i);
    std::size_t length = 0;
    std::uint32_t min = 0;
    std::uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, min = 0x80, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, min = 0x800, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, min = 0x10000, code = c & 0x07;
    } else {
      return i;
    }
    if (i + length > n) return i;
    for (std::size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return i;
      code = (code << 6) | (byte(i + k) & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return i;
    i += length;
  }
  return std::nullopt;
}

std::string_view Closest(std::string_view word, const std::vector<std::string_view>& known) {
  std::string_view best;
  std::size_t best_distance = 3;
  for (std::string_view candidate : known) {
    // Levenshtein distance, two rows.
    std::vector<std::size_t> previous(candidate.size() + 1);
    std::vector<std::size_t> current(candidate.size() + 1);
    for (std::size_t j = 0; j <= candidate.size(); ++j) previous[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
      current[0] = i;
      for (std::size_t j = 1; j <= candidate.size(); ++j) {
        std::size_t substitution = previous[j - 1] + (word[i - 1] == candidate[j - 1] ? 0 : 1);
        current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
      }
      std::swap(previous, current);
    }
    if (previous[candidate.size()] < best_distance) {
      best_distance = previous[candidate.size()];
      best = candidate;
    }
  }
  return best;
}

}  // namespace mojoup::policy::internal
