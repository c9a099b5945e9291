#include "mojoup/sandbox/signin.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "fileinfo/file_info.h"
#include "fmt/format.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/sha256.h"
#include "mojoup/policy/tool_profiles.h"
#include "staging/signin_account.h"
#include "staging/signin_json.h"
#include "staging/signin_standins.h"

namespace mojoup::sandbox {
namespace {

// The profile's entry for a staged file; null when it has none.
const policy::ToolSignInFile* FindSignInFile(std::string_view tool,
                                             std::string_view home_relative) {
  const policy::ToolProfile* profile = policy::FindToolProfile(tool);
  if (profile == nullptr) return nullptr;
  for (const policy::ToolSignInFile& file : profile->sign_in_files) {
    if (file.home_relative == home_relative) return &file;
  }
  return nullptr;
}

std::string Errno(int error) { return std::strerror(error); }

// "/a/b/" -> "/a/b"; "/" stays.
std::string WithoutTrailingSlash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string JoinPath(const std::string& dir, std::string_view name) {
  std::string joined = WithoutTrailingSlash(dir);
  if (joined != "/") joined += '/';
  joined += name;
  return joined;
}

struct Content {
  std::string bytes;
  unsigned mode = 0;  // permission bits
};

absl::Status TooLarge(const std::string& name, unsigned long long size, std::size_t limit) {
  return absl::FailedPreconditionError(fmt::format(
      "{} is {} bytes; a sign-in file over {} MiB is refused", name, size, limit / (1024 * 1024)));
}

// The whole of the regular file open on `fd`, at most `limit` bytes.
absl::StatusOr<Content> ReadRegular(const internal::Fd& fd, const std::string& name,
                                    std::size_t limit = kMaxSignInFileBytes) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return absl::InternalError(fmt::format("{}: cannot stat: {}", name, Errno(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        fmt::format("{} is not a regular file, so it is not a sign-in file to copy", name));
  }
  if (static_cast<unsigned long long>(st.st_size) > limit) {
    return TooLarge(name, static_cast<unsigned long long>(st.st_size), limit);
  }
  Content content;
  content.mode = static_cast<unsigned>(st.st_mode) & 0777u;
  content.bytes.reserve(static_cast<std::size_t>(st.st_size));
  // Reading on past the limit tells a file that grew since fstat.
  char chunk[64 * 1024];
  while (content.bytes.size() <= limit) {
    ssize_t got = ::read(fd.get(), chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return absl::PermissionDeniedError(fmt::format("{}: cannot read: {}", name, Errno(errno)));
    }
    if (got == 0) return content;
    content.bytes.append(chunk, static_cast<std::size_t>(got));
  }
  return TooLarge(name, content.bytes.size(), limit);
}

// A host file, following symlinks. NotFound when it is not there.
absl::StatusOr<Content> ReadHostFile(const std::string& path) {
  // O_NONBLOCK: a FIFO in its place must not hang us; ReadRegular refuses it.
  internal::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.ok()) {
    int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return absl::NotFoundError(fmt::format("{} is not there", path));
    }
    return absl::PermissionDeniedError(fmt::format("{}: cannot open: {}", path, Errno(error)));
  }
  return sandbox::ReadRegular(fd, path);
}

// Splits a relative path into its names; false if one is empty, "." or "..".
bool SplitRelative(std::string_view relative, std::vector<std::string>& names) {
  names.clear();
  if (relative.empty() || relative.front() == '/') return false;
  std::size_t start = 0;
  while (true) {
    std::size_t end = relative.find('/', start);
    std::string_view name = relative.substr(start, end - start);
    if (name.empty() || name == "." || name == "..") return false;
    names.emplace_back(name);
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

// A staged file the agent may have changed, reached from the staging home
// without following any symlink (the agent could have put one anywhere below
// the home), at most kMaxWriteBackBytes. NotFound when the agent deleted it,
// or the staging is gone.
absl::StatusOr<Content> ReadStagedFile(const std::string& home, const std::string& staged_path) {
  const std::string prefix = JoinPath(home, "");
  std::vector<std::string> names;
  if (staged_path.compare(0, prefix.size(), prefix) != 0 ||
      !SplitRelative(std::string_view(staged_path).substr(prefix.size()), names)) {
    return absl::InvalidArgumentError(
        fmt::format("{} is not inside the staging home {}", staged_path, home));
  }
  constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
  internal::Fd dir(::open(home.c_str(), kDirFlags));
  int error = dir.ok() ? 0 : errno;
  for (std::size_t i = 0; error == 0 && i + 1 < names.size(); ++i) {
    dir = internal::Fd(::openat(dir.get(), names[i].c_str(), kDirFlags));
    if (!dir.ok()) error = errno;
  }
  internal::Fd file;
  if (error == 0) {
    file = internal::Fd(
        ::openat(dir.get(), names.back().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!file.ok()) error = errno;
  }
  if (error != 0) {
    if (error == ENOENT) return absl::NotFoundError(fmt::format("{} is gone", staged_path));
    if (error == ELOOP || error == ENOTDIR) {
      return absl::FailedPreconditionError(fmt::format(
          "{} was replaced by a symbolic link or its directory by something else; not followed",
          staged_path));
    }
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot open: {}", staged_path, Errno(error)));
  }
  return sandbox::ReadRegular(file, staged_path, kMaxWriteBackBytes);
}

absl::Status MustBeAbsolute(const std::string& path, std::string_view what) {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(
        fmt::format("the {} \"{}\" is not an absolute path", what, path));
  }
  return absl::OkStatus();
}

// Creates the staging home and its missing parents 0700. An existing home
// must be a real directory owned by us; it is set to 0700. True if made here.
absl::StatusOr<bool> MakeStagingHome(const std::string& home) {
  if (absl::Status absolute = MustBeAbsolute(home, "staging home"); !absolute.ok()) {
    return absolute;
  }
  std::vector<std::string> names;
  const std::string trimmed = WithoutTrailingSlash(home);
  if (trimmed == "/" || !SplitRelative(std::string_view(trimmed).substr(1), names)) {
    return absl::InvalidArgumentError(
        fmt::format("the staging home \"{}\" must be a plain path below /", home));
  }
  std::string path;
  bool made = false;
  for (const std::string& name : names) {
    path += '/';
    path += name;
    absl::StatusOr<bool> step = internal::MakeDirectory(path, 0700);
    if (!step.ok()) return step.status();
    made = *step;
  }
  if (!made) {
    struct stat st {};
    if (::lstat(trimmed.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      return absl::FailedPreconditionError(
          fmt::format("the staging home {} exists but is not a directory of this user", trimmed));
    }
    if (::chmod(trimmed.c_str(), 0700) != 0) {
      return absl::InternalError(
          fmt::format("{}: cannot set mode 0700: {}", trimmed, Errno(errno)));
    }
  }
  return made;
}

// Writes one staged copy at home/home_relative, making its directories 0700.
absl::Status WriteStagedFile(const std::string& home, const std::string& home_relative,
                             const Content& content) {
  std::vector<std::string> names;
  if (!SplitRelative(home_relative, names)) {
    return absl::InternalError(fmt::format("bad home-relative path \"{}\"", home_relative));
  }
  std::string path = WithoutTrailingSlash(home);
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    path = JoinPath(path, names[i]);
    absl::StatusOr<bool> made = internal::MakeDirectory(path, 0700);
    if (!made.ok()) return made.status();
    struct stat st {};
    if (!*made && (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
      return absl::FailedPreconditionError(
          fmt::format("{} is in the way of the staged sign-in files", path));
    }
  }
  path = JoinPath(path, names.back());
  internal::Fd fd(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.ok()) {
    return absl::PermissionDeniedError(fmt::format("{}: cannot create: {}", path, Errno(errno)));
  }
  absl::Status written = internal::WriteAll(fd, content.bytes, path);
  if (written.ok() && (::fchmod(fd.get(), content.mode) != 0 || fd.Close() != 0)) {
    written = absl::InternalError(fmt::format("{}: cannot finish: {}", path, Errno(errno)));
  }
  if (!written.ok()) ::unlink(path.c_str());  // no half a secret left behind
  return written;
}

bool IsSessionId(std::string_view id) {
  if (id.empty() || id == "." || id == "..") return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string_view Because(SignInVerdict verdict) {
  return verdict == SignInVerdict::kNotSameAccount ? "it is not signed in to the same account"
                                                   : "it is not a sign-in file of that shape";
}

void WriteBackOne(const SignInStaging& staging, const SignInFile& file, SignInFormat format,
                  const std::string& session_id, WriteBackReport& report) {
  absl::StatusOr<Content> staged = ReadStagedFile(staging.home, file.staged_path);
  if (absl::IsNotFound(staged.status())) return;  // the agent deleted it: nothing to carry back
  if (!staged.ok()) {
    report.errors.push_back(fmt::format("{}: {}; {} was left as it is", file.host_path,
                                        Message(staged.status()), file.host_path));
    return;
  }
  const std::string staged_sha = internal::Sha256Hex(staged->bytes);
  if (staged_sha == file.host_sha256) return;

  KeptAside kept{file.host_path, file.host_path + ".sandbox-" + session_id,
                 KeptAside::Reason::kHostChanged, "it changed on the host during the session"};
  absl::StatusOr<Content> host = ReadHostFile(file.host_path);
  if (host.ok()) {
    const std::string host_sha = internal::Sha256Hex(host->bytes);
    if (host_sha == staged_sha) return;
    if (host_sha == file.host_sha256) {
      // The host file is still the one staged, so it is what the agent's copy
      // must be a refresh of.
      SignInComparison same = CompareSignIn(format, host->bytes, staged->bytes);
      if (same.verdict == SignInVerdict::kSame) {
        // Shaped like a refresh of the same account, but nothing here can
        // prove it: JWT claims are decoded, not verified, and refresh tokens
        // are opaque, so a session can mint a copy that names your account
        // and holds its own tokens. What cannot be verified is not taken.
        kept.reason = KeptAside::Reason::kUnverifiable;
        kept.why =
            "its tokens cannot be verified as a refresh of your sign-in (token claims are not "
            "signed by anything this node can check, and refresh tokens name no account)";
      } else {
        kept.reason = same.verdict == SignInVerdict::kNotSameAccount
                          ? KeptAside::Reason::kNotSameAccount
                          : KeptAside::Reason::kNotSignInShape;
        kept.why = fmt::format("{}: {}", Because(same.verdict), same.why);
      }
    }
  }
  // Not written back: keep both, the sandbox's copy beside the host file.
  if (absl::Status put = internal::ReplaceAtomically(kept.aside_path, staged->bytes, 0600);
      put.ok()) {
    report.kept_aside.push_back(std::move(kept));
  } else {
    report.errors.push_back(
        fmt::format("{}: the sandbox's refreshed copy could not be kept at {}: {}", file.host_path,
                    kept.aside_path, Message(put)));
  }
}

// The staging record's codec. Its readers refuse a value by its JSON
// Pointer and what it must be; a missing member is refused as one of the
// wrong type, as the record's first readers did.
namespace json = internal::json;
using Kind = json::Error::Kind;

// A string the reader also checks the shape of.
struct CheckedString {
  using value_type = std::string;
  bool (*valid)(std::string_view);
  const char* expected;  // what an invalid one must be

  template <typename W>
  void Write(W& w, const std::string& text) const {
    w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  }
  bool Read(const rapidjson::Value& v, std::string& out, const json::Path& path,
            json::Error& error) const {
    if (!v.IsString()) return error.Set(Kind::kWrongType, path, "a string");
    std::string text(v.GetString(), v.GetStringLength());
    if (!valid(text)) return error.Set(Kind::kWrongType, path, expected);
    out = std::move(text);
    return true;
  }
};

// A number from 0 to `max`, kept as a T.
template <typename T>
struct SmallNumber {
  using value_type = T;
  unsigned max;
  const char* expected;

  template <typename W>
  void Write(W& w, T value) const {
    w.Uint(static_cast<unsigned>(value));
  }
  bool Read(const rapidjson::Value& v, T& out, const json::Path& path, json::Error& error) const {
    if (!v.IsUint() || v.GetUint() > max) return error.Set(Kind::kWrongType, path, expected);
    out = static_cast<T>(v.GetUint());
    return true;
  }
};

// A secret's place in its file: one member name or more.
struct MemberNames {
  using value_type = std::vector<std::string>;

  template <typename W>
  void Write(W& w, const std::vector<std::string>& names) const {
    json::Write(w, names, json::detail::ByType{});
  }
  bool Read(const rapidjson::Value& v, std::vector<std::string>& out, const json::Path& path,
            json::Error& error) const {
    const auto refuse = [&] {
      return error.Set(Kind::kWrongType, path, "an array of member names");
    };
    if (!v.IsArray() || v.Empty()) return refuse();
    std::vector<std::string> names;
    for (const rapidjson::Value& name : v.GetArray()) {
      if (!name.IsString()) return refuse();
      names.emplace_back(name.GetString(), name.GetStringLength());
    }
    out = std::move(names);
    return true;
  }
};

bool IsAbsolutePath(std::string_view path) {
  return !path.empty() && path.front() == '/' && path.find('\0') == std::string_view::npos;
}

bool IsInsideHome(std::string_view path) {
  std::vector<std::string> names;
  return path.find('\0') == std::string_view::npos && SplitRelative(path, names);
}

bool IsSha256Hex(std::string_view digest) {
  return digest.size() == 64 && digest.find_first_not_of("0123456789abcdef") == std::string::npos;
}

constexpr CheckedString kAbsolutePath{IsAbsolutePath, "an absolute path"};
constexpr CheckedString kInsideHome{IsInsideHome, "a path inside the home"};
constexpr CheckedString kSha256{IsSha256Hex, "64 lowercase hex digits"};
constexpr SmallNumber<unsigned> kMode{0777, "permission bits, 0 to 511 (0777)"};
constexpr SmallNumber<policy::TokenRole> kRole{static_cast<unsigned>(policy::TokenRole::kApiKey),
                                               "a token role, 0 to 3"};

constexpr auto kFile = json::Message<SignInFile>(
    json::Field("home_relative", &SignInFile::home_relative, kInsideHome).MissingAsWrongType(),
    json::Field("host_path", &SignInFile::host_path, kAbsolutePath).MissingAsWrongType(),
    json::Field("staged_path", &SignInFile::staged_path, kAbsolutePath).MissingAsWrongType(),
    json::Field("host_sha256", &SignInFile::host_sha256, kSha256).MissingAsWrongType(),
    json::Field("mode", &SignInFile::mode, kMode).MissingAsWrongType(),
    // Absent in records written before stand-ins.
    json::Optional("stand_ins", &SignInFile::stand_ins));

constexpr auto kSecret = json::Message<StagedSecret>(
    json::Field("file", &StagedSecret::home_relative).MissingAsWrongType(),
    json::Field("path", &StagedSecret::path, MemberNames{}).MissingAsWrongType(),
    json::Field("role", &StagedSecret::role, kRole).MissingAsWrongType(),
    json::Field("credential", &StagedSecret::credential).MissingAsWrongType(),
    json::Field("sign_in", &StagedSecret::sign_in).MissingAsWrongType());

constexpr auto kTool = json::Field("tool", &SignInStaging::tool).MissingAsWrongType();
constexpr auto kHome =
    json::Field("home", &SignInStaging::home, kAbsolutePath).MissingAsWrongType();
constexpr auto kFiles = json::Field("files", &SignInStaging::files, kFile).MissingAsWrongType();
// Absent in records written before stand-ins.
constexpr auto kSecrets = json::Optional("secrets", &SignInStaging::secrets, kSecret);
constexpr auto kMissing = json::Field("missing", &SignInStaging::missing).MissingAsWrongType();

constexpr auto kStaging = json::Message<SignInStaging>(kTool, kHome, kFiles, kSecrets, kMissing);
// The same members, read with "missing" before "secrets" as the first
// reader did, so that a record wrong in both is refused for the same one.
constexpr auto kStagingRead =
    json::Message<SignInStaging>(kTool, kHome, kFiles, kMissing, kSecrets);

std::string StagingRefusal(const json::Error& error) {
  return fmt::format("sign-in staging record: {}: expected {}",
                     error.pointer.empty() ? "/" : error.pointer, error.expected);
}

}  // namespace

Getenv SystemGetenv() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

absl::StatusOr<std::vector<SignInLocation>> LocateSignIn(std::string_view tool,
                                                         const std::string& host_home,
                                                         const Getenv& getenv) {
  const policy::ToolProfile* profile = policy::FindToolProfile(tool);
  if (profile == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("unknown agent tool \"{}\"; the tools are {}", tool, policy::ToolNames()));
  }
  if (absl::Status absolute = MustBeAbsolute(host_home, "host home"); !absolute.ok()) {
    return absolute;
  }
  std::vector<SignInLocation> locations;
  for (const policy::ToolSignInFile& file : profile->sign_in_files) {
    const std::string_view variable =
        file.under_variable.empty() ? std::string_view() : profile->relocation_variable;
    SignInLocation location{std::string(file.home_relative),
                            JoinPath(host_home, file.home_relative)};
    std::optional<std::string> moved = variable.empty() ? std::nullopt : getenv(variable);
    if (moved && !moved->empty()) {
      if (moved->front() == '/') {
        location.host_path = JoinPath(*moved, file.under_variable);
      } else if (variable.substr(0, 4) != "XDG_") {
        return absl::InvalidArgumentError(fmt::format(
            "{}={} is a relative path; set it to an absolute one so {}'s sign-in files can be "
            "found",
            variable, *moved, tool));
      }
    }
    locations.push_back(std::move(location));
  }
  return locations;
}

absl::StatusOr<SignInStaging> StageSignIn(std::string_view tool, const std::string& host_home,
                                          const Getenv& getenv, const std::string& staging_home,
                                          credproxy::Vault& vault) {
  std::vector<SignInLocation> locations;
  if (!tool.empty()) {
    absl::StatusOr<std::vector<SignInLocation>> located = LocateSignIn(tool, host_home, getenv);
    if (!located.ok()) return located.status();
    locations = std::move(*located);
  }
  absl::StatusOr<bool> made_home = MakeStagingHome(staging_home);
  if (!made_home.ok()) return made_home.status();

  SignInStaging staging;
  staging.tool = std::string(tool);
  staging.home = WithoutTrailingSlash(staging_home);
  absl::Status failed;
  for (const SignInLocation& location : locations) {
    absl::StatusOr<Content> content = ReadHostFile(location.host_path);
    if (absl::IsNotFound(content.status())) {
      staging.missing.push_back(location.host_path);
      continue;
    }
    if (!content.ok()) {
      failed = content.status();
      break;
    }
    const std::string host_sha = internal::Sha256Hex(content->bytes);
    const bool json = location.home_relative.ends_with(".json");
    if (json) {
      absl::StatusOr<StandInCopy> copy =
          ReplaceSecrets(tool, location.home_relative, content->bytes, vault);
      if (absl::IsInvalidArgument(copy.status())) {
        // Its secrets cannot be found, so it cannot go in with stand-ins.
        staging.notices.push_back(fmt::format(
            "{} was not staged: {}; its secrets cannot be replaced by stand-ins, so the agent is "
            "not signed in with it",
            location.host_path, Message(copy.status())));
        continue;
      }
      if (!copy.ok()) {
        failed = copy.status();
        break;
      }
      if (!copy->secrets.empty()) content->bytes = std::move(copy->bytes);
      staging.secrets.insert(staging.secrets.end(), copy->secrets.begin(), copy->secrets.end());
    }
    if (failed = WriteStagedFile(staging.home, location.home_relative, *content); !failed.ok()) {
      break;
    }
    staging.files.push_back({location.home_relative, location.host_path,
                             JoinPath(staging.home, location.home_relative), host_sha,
                             content->mode, json});
  }
  if (failed.ok()) return staging;

  // No secrets left behind by a staging that did not happen.
  if (*made_home) {
    std::error_code ignored;
    std::filesystem::remove_all(staging.home, ignored);
  } else {
    for (const SignInFile& file : staging.files) ::unlink(file.staged_path.c_str());
  }
  return failed;
}

WriteBackReport WriteBackSignIn(const SignInStaging& staging, std::string_view session_id) {
  WriteBackReport report;
  if (!IsSessionId(session_id)) {
    report.errors.push_back(fmt::format(
        "session id \"{}\" cannot name a kept-aside copy (letters, digits, '.', '_', '-'); no "
        "sign-in file of {} was written back",
        session_id, staging.home));
    return report;
  }
  const std::string id(session_id);
  for (const SignInFile& file : staging.files) {
    // A copy with stand-ins holds nothing the host could take.
    if (file.stand_ins) continue;
    const policy::ToolSignInFile* known = FindSignInFile(staging.tool, file.home_relative);
    if (known == nullptr || !known->write_back) continue;
    WriteBackOne(staging, file, *known->write_back, id, report);
  }
  return report;
}

std::string SignInStagingToJson(const SignInStaging& staging) {
  return json::ToJson(staging, kStaging);
}

absl::StatusOr<SignInStaging> SignInStagingFromJson(std::string_view json) {
  rapidjson::Document doc;
  if (absl::Status parsed =
          internal::ParseBoundedJson(json, doc, "the sign-in staging record", {.utf8 = false});
      !parsed.ok()) {
    return absl::InvalidArgumentError(parsed.message());
  }
  SignInStaging staging;
  json::Error error;
  if (!json::Read(doc, staging, kStagingRead, &error).ok()) {
    return absl::InvalidArgumentError(StagingRefusal(error));
  }
  return staging;
}

void SignInStagingCodec::Write(rapidjson::Writer<rapidjson::StringBuffer>& w,
                               const value_type& staging) const {
  json::Write(w, *staging, kStaging);
}

bool SignInStagingCodec::Read(const rapidjson::Value& v, value_type& out, const json::Path& path,
                              json::Error& error) const {
  SignInStaging staging;
  json::Error inner;
  if (!json::Read(v, staging, kStagingRead, &inner).ok()) {
    error.Set(inner.kind, path, inner.expected);
    error.message = StagingRefusal(inner);
    return false;
  }
  out = std::move(staging);
  return true;
}

}  // namespace mojoup::sandbox
