// Stand-ins in a sign-in file: every secret of a JSON sign-in file replaced
// by its stand-in, the real values into the session's vault, bound where the
// tool profile says the tool sends them. And the reverse way for the host's
// file: the provider's new tokens, and the bookkeeping beside them, put at
// their places in a file whose other members stay as they are.
//
//   auto staged = ReplaceSecrets("codex", ".codex/auth.json", host_bytes, vault);
//   if (!staged.ok()) ...                      // not JSON: not staged
//   write(staged->bytes); secrets += staged->secrets;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/credproxy/vault.h"
#include "mojoup/sandbox/signin.h"

namespace mojoup::sandbox {

struct StandInCopy {
  std::string bytes;  // the file with stand-ins
  std::vector<StagedSecret> secrets;
};

// `bytes` of `tool`'s sign-in file `home_relative` with its secrets replaced.
// Errors: not a JSON object (InvalidArgument, naming the file and the
// place), nested deeper than 64, or a secret the vault refuses.
absl::StatusOr<StandInCopy> ReplaceSecrets(std::string_view tool, std::string_view home_relative,
                                           std::string_view bytes, credproxy::Vault& vault);

// A value for a member of a JSON file: a string or an integer.
using JsonScalar = std::variant<std::string, std::int64_t>;
struct JsonUpdate {
  std::vector<std::string> path;
  JsonScalar value;
};

// `bytes` (a JSON object) with each update's member set; every update's
// parent must be an object in it, and a member already there must be of the
// update's kind. Keeps every other member, their order, and the layout's
// kind (indented when the file was). Errors name the file and the place.
absl::StatusOr<std::string> UpdateJson(std::string_view file, std::string_view bytes,
                                       const std::vector<JsonUpdate>& updates);

// The string at each of `paths` in `bytes` (one parse), nullopt where there
// is none; all nullopt when `bytes` is not a JSON object.
std::vector<std::optional<std::string>> JsonStringsAt(
    std::string_view bytes, const std::vector<std::vector<std::string>>& paths);

// Whether `pattern` (member names joined by '/', "*" for any one name)
// names exactly `path`.
bool PathMatches(std::string_view pattern, const std::vector<std::string>& path);

// "claudeAiOauth.accessToken", for people and for names.
std::string DottedPath(const std::vector<std::string>& path);

}  // namespace mojoup::sandbox
