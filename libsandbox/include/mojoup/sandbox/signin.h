// Sign-in staging: the agent tool's sign-in files, copied from the user's home
// into a per-session staging home that becomes the sandbox's HOME, with a
// stand-in in place of every secret; the real tokens go to the session's
// proxy, which swaps them in where the tool sends them: an access token in
// the credential headers to the tool's API hosts, a refresh token only in
// its field of a token request to the tool's token endpoint. The provider's
// answer to a refresh is read by the proxy: the sandbox gets fresh
// stand-ins, and the node writes the provider's new tokens into the host's
// file (compare-and-swap against the copy it staged). What the sandbox
// writes into its copy is never a source of tokens.
//
//   credproxy::Vault vault;
//   auto staging = StageSignIn("codex", "/home/ada", SystemGetenv(), "/run/mojoup/s42/home", vault);
//   if (!staging.ok()) return staging.status();
//   record["signin"] = SignInStagingToJson(*staging);
//   ... start the proxy with `vault`, run the agent with HOME=staging->home ...
//
// The tool's relocation variable (CODEX_HOME, CLAUDE_CONFIG_DIR, ...) is
// honoured on the host side only: inside the sandbox the files sit at the
// default home-relative paths, so the sandbox must not inherit the variable.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/credproxy/vault.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::sandbox {

// A sign-in file larger than this is refused rather than copied.
inline constexpr std::size_t kMaxSignInFileBytes = 16u * 1024 * 1024;

// A credential file the agent left larger than this is neither written back
// nor kept aside: real ones are a few KiB.
inline constexpr std::size_t kMaxWriteBackBytes = 1024u * 1024;

struct SignInFile {
  std::string home_relative;  // where it goes in the sandbox's home, ".claude/.credentials.json"
  std::string host_path;      // where it was found on the host (relocation variables applied)
  std::string staged_path;    // the copy under the staging home
  std::string host_sha256;    // hex SHA-256 of the host file when it was staged
  unsigned mode = 0600;       // the host file's permission bits
  // Staged with stand-ins in place of its secrets (a JSON file): the
  // sandbox's copy is then never looked at again. False for a file without
  // secrets copied as it is, and in records of nodes before stand-ins.
  bool stand_ins = false;

  bool operator==(const SignInFile&) const = default;
};

// A secret of a staged sign-in file that the sandbox has a stand-in for. Its
// value is in the vault only, under `credential`.
struct StagedSecret {
  std::string home_relative;      // the file
  std::vector<std::string> path;  // member names from the top of the JSON
  policy::TokenRole role = policy::TokenRole::kAccess;
  std::string credential;  // the vault's name: "<tool> <file> <path joined by '.'>"
  // The sign-in it is part of, "<tool> <file> <the object's path>": the
  // secrets of one object, renewed together by a refresh.
  std::string sign_in;

  bool operator==(const StagedSecret&) const = default;
};

struct SignInStaging {
  std::string tool;
  std::string home;                    // the staging home (the sandbox's HOME)
  std::vector<SignInFile> files;       // what was copied
  std::vector<std::string> missing;    // host paths looked for and not there
  std::vector<StagedSecret> secrets;   // what the sandbox has stand-ins for
  // Sentences for the user: a file not staged because its secrets could not
  // be replaced. Not kept in the record.
  std::vector<std::string> notices;

  bool operator==(const SignInStaging&) const = default;
};

// Looks up an environment variable. HOME is never asked for (the host home is
// passed in); the tools' relocation variables are.
using Getenv = std::function<std::optional<std::string>(std::string_view)>;

// This process's environment.
Getenv SystemGetenv();

// A sign-in file of a tool: its default place in a home, and where the tool
// reads it on this host.
struct SignInLocation {
  std::string home_relative;
  std::string host_path;
};

// Where `tool` keeps its sign-in files on the host, in the order of its
// policy::ToolProfile. A relocation variable that is unset or empty leaves the
// default; a relative XDG_DATA_HOME is ignored (the XDG spec says so); any
// other relative relocation is an error, since it depends on the directory
// the tool was started in. Errors: unknown tool, a host home that is not
// absolute, a relative relocation, a sign-in file this build cannot place.
absl::StatusOr<std::vector<SignInLocation>> LocateSignIn(std::string_view tool,
                                                         const std::string& host_home,
                                                         const Getenv& getenv);

// Copies `tool`'s sign-in files from the host into `staging_home` at their
// default home-relative paths, following symlinks, with a stand-in in place
// of every secret of a JSON file (the tool profile's sign_in_secrets, and
// any other string named or shaped like one: policy::kSecretNameEndings,
// kSecretPrefixes). The real values go into `vault`, bound to where the
// profile says the tool sends them (nowhere, for those it does not name),
// and `secrets` lists them. A JSON sign-in file that does not parse is not
// staged (its secrets cannot be found); `notices` says so. `staging_home` (absolute)
// is created 0700, with any missing parents 0700; an existing one must be a
// directory of ours and is set to 0700. Directories inside it are 0700; the
// copies keep the host files' permission bits. A file not on the host is
// listed in `missing`, not an error. An empty tool stages nothing (the home is
// still made). Errors: unknown tool, a sign-in file that is not a regular
// file, cannot be read or is over kMaxSignInFileBytes; on error the copies
// made so far are removed.
absl::StatusOr<SignInStaging> StageSignIn(std::string_view tool, const std::string& host_home,
                                          const Getenv& getenv, const std::string& staging_home,
                                          credproxy::Vault& vault);

// A refreshed sign-in file that was not written back; the sandbox's copy was
// kept beside the host file instead.
struct KeptAside {
  enum class Reason {
    kHostChanged,     // the host file changed or vanished during the session
    kNotSameAccount,  // another account, or a change no refresh makes
    kNotSignInShape,  // not JSON, or not shaped like the file staged
    kNotWritten,      // replacing the host file failed (see errors)
    kUnverifiable,    // shaped like a refresh, but its tokens cannot be verified as yours
  };

  std::string host_path;
  std::string aside_path;  // <host_path>.sandbox-<session_id>
  Reason reason = Reason::kHostChanged;
  // Why, for people: "it is not signed in to the same account: tokens.id_token
  // names another account (its sub differs)". Names from the file are
  // shortened and free of control characters.
  std::string why;

  bool operator==(const KeptAside&) const = default;
};

struct WriteBackReport {
  std::vector<std::string> written;   // host files that got the provider's new tokens
  std::vector<KeptAside> kept_aside;  // not written back; the sandbox's copy is beside them
  std::vector<std::string> errors;    // one sentence each, naming the file
  std::vector<std::string> notices;   // one sentence each: a host copy that won, a sign-in gone stale
};

// For sessions whose files were staged as they were (SignInFile::stand_ins
// false: records of nodes before stand-ins); a file staged with stand-ins is
// skipped, as what the sandbox writes is never a source of tokens (the
// session's own refreshes are written back by the node as the proxy sees
// them). Only credential files are looked at: `.claude/.credentials.json`,
// `.codex/auth.json` and the opencode and kilo `auth.json`. Settings files
// (`.claude.json` holds commands the host would run), `.copilot/config.json`
// and `opencode.db` stay in the sandbox and go with it.
//
// For each such staged file whose content the agent changed (edited in place
// or replaced by rename), the sandbox's copy goes to
// `<host_path>.sandbox-<session_id>` (0600) and kept_aside says why: the host
// file changed or vanished meanwhile; the copy is not a refresh of that
// sign-in (valid JSON shaped like the staged file, the fields that name the
// account unchanged, a JWT still naming the same account, a new refresh token
// only beside a new access token, expiries only later: the rules per tool are
// data in signin_account.cc); or, when it looks like one, that its tokens
// cannot be verified as the user's (kUnverifiable). The host file is never
// replaced. Staged files the agent left alone or deleted are skipped; so is
// one whose new content the host file already has. A staged file that became
// a symlink, a directory or anything but a regular file is not followed, and
// one over kMaxWriteBackBytes is not read: both are reported as errors.
// `session_id` is letters, digits, '.', '_' and '-'.
WriteBackReport WriteBackSignIn(const SignInStaging& staging, std::string_view session_id);

// A compact JSON object, so a session record can carry the staging and a
// reaper in another process can write back after a crash.
std::string SignInStagingToJson(const SignInStaging& staging);

// The inverse. Errors: not JSON, a missing or mistyped member, a digest that
// is not 64 hex digits, a mode above 0777, a home or path that is not
// absolute, a home-relative path that leaves the home. Unknown members are
// ignored, so a newer record still reads.
absl::StatusOr<SignInStaging> SignInStagingFromJson(std::string_view json);

}  // namespace mojoup::sandbox
