#include "mojoup/policy/policy.h"

#include <arpa/inet.h>
#include <idn2.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "fmt/format.h"
#include "host_syntax.h"
#include "json_source.h"
#include "mojoup/internal/safe_file.h"

namespace mojoup::policy {
namespace {

using internal::JsonSource;

constexpr std::string_view kExampleHosts = "such as api.github.com or *.npmjs.org";

// Walks the parsed document against the schema. Every error says where
// (file:line:column of the nearest key or string), the JSON path, and what
// was expected.
class Walker {
 public:
  Walker(const JsonSource& source, PolicyFile& out) : source_(source), out_(out) {}

  absl::Status Root(const rapidjson::Value& root) {
    if (!root.IsObject()) {
      return ErrorAt(0, "",
                     "expected a JSON object such as {\"agents\": {\"sandbox\": \"required\"}}");
    }
    return Object(root, 0, "", {"agents"},
                  [&](std::string_view key, const rapidjson::Value& value, std::size_t at,
                      const std::string& path) {
                    (void)key;
                    return Agents(value, at, path);
                  });
  }

 private:
  using MemberFn = std::function<absl::Status(std::string_view, const rapidjson::Value&,
                                              std::size_t, const std::string&)>;

  // An invalid-argument error positioned at byte `at` of the source and at `path`.
  absl::Status ErrorAt(std::size_t at, const std::string& path, std::string_view message) const {
    return absl::InvalidArgumentError(
        fmt::format("{}{}: {}", source_.Where(at), path.empty() ? "/" : path, message));
  }

  static std::string_view TypeName(const rapidjson::Value& value) {
    if (value.IsNull()) return "null";
    if (value.IsBool()) return "a boolean";
    if (value.IsNumber()) return "a number";
    if (value.IsString()) return "a string";
    if (value.IsArray()) return "an array";
    return "an object";
  }

  // Checks that `value` is an object whose keys are all in `known`, and calls
  // `each` for every member.
  absl::Status Object(const rapidjson::Value& value, std::size_t at, const std::string& path,
                      const std::vector<std::string_view>& known, const MemberFn& each) const {
    if (!value.IsObject()) {
      return ErrorAt(at, path, fmt::format("expected an object, got {}", TypeName(value)));
    }
    for (const auto& member : value.GetObject()) {
      std::string_view key(member.name.GetString(), member.name.GetStringLength());
      std::size_t key_at = source_.OffsetOf(member.name);
      std::string member_path = path + "/" + std::string(key);
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string expected;
        for (std::string_view name : known)
          expected += (expected.empty() ? "" : ", ") + std::string(name);
        std::string_view near = internal::Closest(key, known);
        return ErrorAt(key_at, member_path,
                       fmt::format("unknown key \"{}\"{}; expected one of: {}", key,
                                   near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
                                   expected));
      }
      if (auto status = each(key, member.value, key_at, member_path); !status.ok()) return status;
    }
    return absl::OkStatus();
  }

  absl::Status Agents(const rapidjson::Value& value, std::size_t at, const std::string& path) {
    return Object(value, at, path, {"sandbox", "network"},
                  [&](std::string_view key, const rapidjson::Value& member, std::size_t key_at,
                      const std::string& member_path) {
                    if (key == "sandbox") return Sandbox(member, key_at, member_path);
                    return Network(member, key_at, member_path);
                  });
  }

  absl::Status Sandbox(const rapidjson::Value& value, std::size_t at, const std::string& path) {
    constexpr std::string_view kExpected = "expected \"preferred\" or \"required\"";
    if (!value.IsString()) {
      return ErrorAt(at, path, fmt::format("{}, got {}", kExpected, TypeName(value)));
    }
    std::string_view word(value.GetString(), value.GetStringLength());
    if (word == "preferred") {
      out_.sandbox = SandboxAsk::kPreferred;
    } else if (word == "required") {
      out_.sandbox = SandboxAsk::kRequired;
    } else {
      std::string_view near = internal::Closest(word, {"preferred", "required"});
      return ErrorAt(source_.OffsetOf(value), path,
                     fmt::format("{}, got \"{}\"{}", kExpected, word,
                                 near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
    return absl::OkStatus();
  }

  absl::Status Network(const rapidjson::Value& value, std::size_t at, const std::string& path) {
    return Object(
        value, at, path, {"allow", "deny", "tool_services", "ask", "extend"},
        [&](std::string_view key, const rapidjson::Value& member, std::size_t key_at,
            const std::string& member_path) -> absl::Status {
          if (key == "allow") return Rules(member, key_at, member_path, out_.allow);
          if (key == "deny") return Rules(member, key_at, member_path, out_.deny);
          if (!member.IsBool()) {
            return ErrorAt(key_at, member_path,
                           fmt::format("expected true or false, got {}", TypeName(member)));
          }
          if (key == "tool_services" || key == "ask") {
            (key == "ask" ? out_.ask : out_.tool_services) = member.GetBool();
            return absl::OkStatus();
          }
          if (out_.level == Level::kRepo) {
            return ErrorAt(key_at, member_path,
                           "\"extend\" belongs in a team or organisation hub policy, not in a "
                           "repository's; remove it");
          }
          out_.extend = member.GetBool();
          return absl::OkStatus();
        });
  }

  absl::Status Rules(const rapidjson::Value& value, std::size_t at, const std::string& path,
                     std::vector<HostRule>& rules) {
    if (!value.IsArray()) {
      return ErrorAt(at, path,
                     fmt::format("expected an array of {{\"host\": ..., \"ports\": [...]}}, got {}",
                                 TypeName(value)));
    }
    std::size_t index = 0;
    for (const auto& element : value.GetArray()) {
      std::string element_path = fmt::format("{}/{}", path, index++);
      HostRule rule;
      bool has_host = false;
      auto status = Object(element, at, element_path, {"host", "ports"},
                           [&](std::string_view key, const rapidjson::Value& member,
                               std::size_t key_at, const std::string& member_path) -> absl::Status {
                             if (key == "host") {
                               if (!member.IsString()) {
                                 return ErrorAt(key_at, member_path,
                                                fmt::format("expected a host {}, got {}",
                                                            kExampleHosts, TypeName(member)));
                               }
                               auto host = NormalizeHostPattern(
                                   std::string_view(member.GetString(), member.GetStringLength()));
                               if (!host.ok()) {
                                 return ErrorAt(source_.OffsetOf(member), member_path,
                                                std::string(host.status().message()));
                               }
                               rule.host = *host;
                               has_host = true;
                               return absl::OkStatus();
                             }
                             return Ports(member, key_at, member_path, rule.ports);
                           });
      if (!status.ok()) return status;
      if (!has_host) {
        return ErrorAt(at, element_path, fmt::format("expected a \"host\" key, {}", kExampleHosts));
      }
      rules.push_back(std::move(rule));
    }
    return absl::OkStatus();
  }

  absl::Status Ports(const rapidjson::Value& value, std::size_t at, const std::string& path,
                     std::vector<std::uint16_t>& ports) const {
    if (!value.IsArray() || value.Empty()) {
      return ErrorAt(
          at, path,
          "expected a non-empty array of port numbers such as [443]; leave \"ports\" out "
          "for 443 and 80");
    }
    ports.clear();
    std::size_t index = 0;
    for (const auto& port : value.GetArray()) {
      std::string port_path = fmt::format("{}/{}", path, index++);
      if (!port.IsInt64() || port.GetInt64() < 1 || port.GetInt64() > 65535) {
        std::string got = port.IsNumber()
                              ? fmt::format("{}", port.IsInt64() ? std::to_string(port.GetInt64())
                                                                 : std::to_string(port.GetDouble()))
                              : std::string(TypeName(port));
        return ErrorAt(at, port_path,
                       fmt::format("expected a port number from 1 to 65535, got {}", got));
      }
      ports.push_back(static_cast<std::uint16_t>(port.GetInt64()));
    }
    return absl::OkStatus();
  }

  const JsonSource& source_;
  PolicyFile& out_;
};

bool IsLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

}  // namespace

std::string HostRule::PortList() const {
  std::string list;
  for (std::uint16_t port : ports) list += (list.empty() ? "" : ",") + std::to_string(port);
  return list;
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDefault:
      return "default";
    case Level::kNode:
      return "node";
    case Level::kRepo:
      return "repo";
    case Level::kTeam:
      return "team";
    case Level::kOrg:
      return "org";
  }
  return "default";
}

std::string_view SandboxAskName(SandboxAsk ask) {
  switch (ask) {
    case SandboxAsk::kPreferred:
      return "preferred";
    case SandboxAsk::kRequired:
      return "required";
    case SandboxAsk::kNone:
      break;
  }
  return "";
}

absl::StatusOr<std::string> NormalizeHostPattern(std::string_view pattern) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format("\"{}\" {}", pattern, why));
  };
  if (pattern.empty()) return invalid(fmt::format("is empty; expected a host {}", kExampleHosts));
  if (std::any_of(pattern.begin(), pattern.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ';
      })) {
    return invalid("contains a space or a control character; expected a host " +
                   std::string(kExampleHosts));
  }
  if (pattern.find("://") != std::string_view::npos) {
    return invalid(fmt::format("has a scheme; give the host alone, {}", kExampleHosts));
  }
  if (pattern.find('/') != std::string_view::npos) {
    return invalid(fmt::format("has a path; give the host alone, {}", kExampleHosts));
  }
  if (pattern == "*" || pattern == "*.") {
    return invalid("would allow every host; name the hosts, or *.domain for a domain's subdomains");
  }
  if (pattern.front() == '[') {
    std::string inner(pattern.substr(1, pattern.size() >= 2 ? pattern.size() - 2 : 0));
    in6_addr address{};
    if (pattern.back() != ']' || inet_pton(AF_INET6, inner.c_str(), &address) != 1) {
      return invalid("is not an IPv6 address in brackets such as [fd00::7]");
    }
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &address, text, sizeof text);
    return fmt::format("[{}]", text);
  }
  if (pattern.find(':') != std::string_view::npos) {
    return invalid("has a port; put ports in \"ports\", such as \"ports\": [8443]");
  }
  const bool wildcard = pattern.size() > 2 && pattern[0] == '*' && pattern[1] == '.';
  std::string name(wildcard ? pattern.substr(2) : pattern);
  if (name.find('*') != std::string::npos) {
    return invalid("has a * that is not at the start; * may only stand first, as *.domain");
  }
  if (!name.empty() && name.back() == '.') name.pop_back();
  const bool ascii = std::all_of(name.begin(), name.end(),
                                 [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (!ascii) {
    char* converted = nullptr;
    int rc = idn2_to_ascii_8z(name.c_str(), &converted, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
    if (rc != IDN2_OK) {
      return invalid(
          fmt::format("is not a valid internationalised domain name ({})", idn2_strerror(rc)));
    }
    name = converted;
    idn2_free(converted);
  }
  std::transform(name.begin(), name.end(), name.begin(),
                 [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
  if (name.empty() || name.size() > 253) {
    return invalid(fmt::format("is not a host name; expected a host {}", kExampleHosts));
  }
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) {
    if (wildcard) return invalid("puts *. before an IP address; name the address alone");
    return name;
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    std::string_view label(name.data() + start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-' ||
        !std::all_of(label.begin(), label.end(), IsLabelChar)) {
      return invalid(fmt::format(
          "is not a host name: each dot-separated part must be 1 to 63 letters, digits or "
          "hyphens; expected a host {}",
          kExampleHosts));
    }
    start = end + 1;
  }
  // "*.0.0.1" or "*.254" would stand for addresses (127.0.0.1, 10.0.169.254),
  // not for names under a domain: no top-level domain is numeric.
  if (wildcard && internal::AllLabelsNumeric(name)) {
    return invalid(
        "is a wildcard over numbers only, which would stand for IP addresses, not names; "
        "expected *. followed by a domain name, such as *.example.com, or one IP address alone, "
        "such as 10.0.0.7");
  }
  return wildcard ? "*." + name : name;
}

absl::StatusOr<PolicyFile> ParsePolicy(std::string_view text, const std::string& path,
                                       Level level) {
  if (text.size() > kMaxPolicyBytes) {
    return absl::InvalidArgumentError(fmt::format(
        "{}:1:1: the file is {} bytes; policy files may be at most 1 MiB", path, text.size()));
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return absl::InvalidArgumentError(fmt::format(
        "{}:1:1: the file is empty; expected a JSON object such as {{\"agents\": {{\"sandbox\": "
        "\"required\"}}}}",
        path));
  }
  JsonSource source(path, text);
  if (auto status = source.Parse(); !status.ok()) return status;
  PolicyFile file;
  file.path = path;
  file.level = level;
  Walker walker(source, file);
  if (auto status = walker.Root(source.root()); !status.ok()) return status;
  return file;
}

absl::StatusOr<PolicyFile> LoadPolicyFile(const std::string& path, Level level) {
  // Never through a link at its end, never blocking on a FIFO: a session
  // may have put either where a repository's policy goes.
  auto read = mojoup::internal::ReadRegularFile(path, kMaxPolicyBytes);
  if (absl::IsNotFound(read.status())) {
    return absl::NotFoundError(fmt::format("{}: no such file", path));
  }
  if (!read.ok()) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        static_cast<std::uint64_t>(info.st_size) > kMaxPolicyBytes) {
      return absl::InvalidArgumentError(fmt::format(
          "{}:1:1: the file is larger than 1 MiB; policy files may be at most 1 MiB", path));
    }
    return absl::InvalidArgumentError(
        fmt::format("{}: cannot read the policy: {}; expected a regular JSON file", path,
                    std::string(read.status().message())));
  }
  return ParsePolicy(read->bytes, path, level);
}

}  // namespace mojoup::policy
