// The policy's network_policies, as the rules the sandbox's proxy
// (fake-openshell-sandbox) enforces.

#include <arpa/inet.h>

#include <cctype>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {
namespace {

struct Entry {
  std::string name;  // its `name:`, else none
  std::vector<StringMap> endpoints;
  std::vector<StringMap> binaries;
};

std::size_t Indent(const std::string& line) {
  const std::size_t first = line.find_first_not_of(' ');
  return first == std::string::npos ? line.size() : first;
}

// "k: v" pairs of a flow map's inside ("host: h, port: 1") or of one line.
void AddPairs(std::string_view text, StringMap& item) {
  std::string pending;
  int depth = 0;
  auto flush = [&] {
    const std::size_t colon = pending.find(':');
    if (colon != std::string::npos) {
      item[Trim(std::string_view(pending).substr(0, colon))] =
          Trim(std::string_view(pending).substr(colon + 1));
    }
    pending.clear();
  };
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      flush();
      continue;
    }
    pending += c;
  }
  flush();
}

// "[a, b]" or a single value, unquoted.
std::vector<std::string> Values(std::string text) {
  std::vector<std::string> values;
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    std::istringstream items(text.substr(1, text.size() - 2));
    for (std::string item; std::getline(items, item, ',');) {
      if (!Trim(item).empty()) values.push_back(Unquote(Trim(item)));
    }
  } else if (!text.empty()) {
    values.push_back(Unquote(text));
  }
  return values;
}

// The entries of network_policies, at whatever indentation the file uses:
// entry keys one level in, their sections (endpoints, binaries) the next,
// list items below; an item's "key:" with nothing after it takes the
// "- value" lines under it as its list ("ports:\n  - 443").
std::map<std::string, Entry> ReadEntries(const std::string& yaml) {
  std::map<std::string, Entry> entries;
  std::string block, entry, list_key;
  std::vector<StringMap>* list = nullptr;
  std::size_t entry_indent = 0, section_indent = 0, item_indent = 0;
  std::istringstream lines(yaml);
  for (std::string line; std::getline(lines, line);) {
    if (auto hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    const std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    const std::size_t indent = Indent(line);
    if (indent == 0) {
      block = trimmed.substr(0, trimmed.find(':'));
      entry_indent = section_indent = 0;
      continue;
    }
    if (block != "network_policies") continue;
    if (entry_indent == 0) entry_indent = indent;
    if (indent == entry_indent) {
      entry = Unquote(Trim(std::string_view(trimmed).substr(0, trimmed.rfind(':'))));
      entries[entry];
      list = nullptr;
      section_indent = 0;
      continue;
    }
    if (entry.empty() || indent < entry_indent) continue;
    if (section_indent == 0 && !trimmed.starts_with("- ")) section_indent = indent;
    if (indent == section_indent && !trimmed.starts_with("- ")) {
      const std::string section = trimmed.substr(0, trimmed.find(':'));
      if (section == "name") {
        entries[entry].name = Unquote(Trim(std::string_view(trimmed).substr(section.size() + 1)));
      }
      list = section == "endpoints"  ? &entries[entry].endpoints
             : section == "binaries" ? &entries[entry].binaries
                                     : nullptr;
      continue;
    }
    if (list == nullptr) continue;
    if (trimmed.starts_with("- ") && (list->empty() || indent <= item_indent)) {
      list->emplace_back();
      item_indent = indent;
      list_key.clear();
      std::string rest = Trim(std::string_view(trimmed).substr(2));
      if (rest.size() >= 2 && rest.front() == '{' && rest.back() == '}') {
        rest = rest.substr(1, rest.size() - 2);
      }
      AddPairs(rest, list->back());
    } else if (trimmed.starts_with("- ") && !list_key.empty()) {
      std::string& values = list->back()[list_key];
      const std::string value = Trim(std::string_view(trimmed).substr(2));
      values = values.empty() ? "[" + value + "]"
                              : values.substr(0, values.size() - 1) + ", " + value + "]";
    } else if (indent > item_indent && !list->empty()) {
      AddPairs(trimmed, list->back());
      const std::string key = Trim(std::string_view(trimmed).substr(0, trimmed.find(':')));
      list_key = list->back()[key].empty() ? key : "";
    }
  }
  return entries;
}

}  // namespace

// validate_sandbox_policy's checks of an explicit `protocol: tcp` endpoint
// (v0.0.111 crates/openshell-policy/src/lib.rs; l7_validate.rs
// is_explicit_tcp_protocol): it needs a DNS hostname, neither none nor an
// IP literal. A hostname is otherwise accepted: `tcp` is the explicit
// spelling of plain L4 handling, which the proxy gives every endpoint here.
// The hostname's selector syntax (validate_tcp_dns_host_selector) is not
// checked. "" when none applies, else the gateway's InvalidArgument text.
std::string TcpEndpointProblem(const std::string& yaml) {
  for (const auto& [key, entry] : ReadEntries(yaml)) {
    const std::string name = entry.name.empty() ? key : entry.name;
    for (const StringMap& endpoint : entry.endpoints) {
      auto protocol = endpoint.find("protocol");
      std::string spelled = protocol == endpoint.end() ? "" : Unquote(protocol->second);
      for (char& c : spelled) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (spelled != "tcp") continue;
      auto host = endpoint.find("host");
      const std::string written = host == endpoint.end() ? "" : Unquote(host->second);
      std::string problem;
      in6_addr address{};
      if (Trim(written).empty()) {
        problem = fmt::format(
            "network policy '{}': protocol tcp requires a DNS hostname; hostless allowed_ips "
            "endpoints are supported only by the forward proxy",
            name);
      } else if (::inet_pton(AF_INET, written.c_str(), &address) == 1 ||
                 ::inet_pton(AF_INET6, written.c_str(), &address) == 1) {
        problem = fmt::format(
            "network policy '{}': protocol tcp endpoint '{}' must use a DNS hostname, not an IP "
            "literal; direct IP connections bypass policy DNS and are blocked",
            name, written);
      }
      if (!problem.empty()) return "policy contains unsafe content: " + problem;
    }
  }
  return {};
}

// One "allow KEY HOST PORT [CIDR,...]" line per endpoint and port of each
// entry whose binaries admit every program ("/**"). Binary identity (the
// connecting process's /proc/PID/exe against each entry's globs) is not
// modelled: an entry that names binaries is left out, so it admits nothing.
std::string NetworkRules(const std::string& yaml) {
  const std::map<std::string, Entry> entries = ReadEntries(yaml);
  std::string text = "policies " + std::to_string(entries.size()) + "\n";
  for (const auto& [key, entry] : entries) {
    bool any_binary = false;
    for (const StringMap& binary : entry.binaries) {
      auto path = binary.find("path");
      any_binary = any_binary || (path != binary.end() && Unquote(path->second) == "/**");
    }
    if (!any_binary) continue;
    std::string name = key;
    for (char& c : name) c = std::isspace(static_cast<unsigned char>(c)) ? '_' : c;
    for (const StringMap& endpoint : entry.endpoints) {
      auto host = endpoint.find("host");
      const std::string written = host == endpoint.end() ? "" : Unquote(host->second);
      std::vector<std::string> ports;
      if (auto port = endpoint.find("port"); port != endpoint.end()) ports = Values(port->second);
      if (auto more = endpoint.find("ports"); more != endpoint.end()) {
        for (const std::string& port : Values(more->second)) ports.push_back(port);
      }
      std::string ips;
      if (auto allowed = endpoint.find("allowed_ips"); allowed != endpoint.end()) {
        for (const std::string& ip : Values(allowed->second)) ips += (ips.empty() ? "" : ",") + ip;
      }
      // A hostless endpoint matches any host, by its allowed_ips (the rego's
      // third endpoint_allowed); without either it matches nothing.
      if (written.empty() && ips.empty()) continue;
      for (const std::string& port : ports) {
        text += "allow " + name + " " + (written.empty() ? "-" : written) + " " + port +
                (ips.empty() ? "" : " " + ips) + "\n";
      }
    }
  }
  return text;
}

}  // namespace mojoup::fake_openshell
