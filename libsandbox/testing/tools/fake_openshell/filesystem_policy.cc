// The policy's filesystem_policy and landlock blocks, as the rules the
// sandbox's supervisor (fake-openshell-sandbox) builds its Landlock ruleset
// from for every exec, with the baseline paths each release adds.

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"

namespace mojoup::fake_openshell {
namespace {

// The paths a sandbox in proxy mode (a policy with network_policies) gets
// besides its policy's, if they exist in the sandbox (v0.0.92 and v0.0.111
// crates/openshell-sandbox/src/lib.rs PROXY_BASELINE_READ_ONLY,
// PROXY_BASELINE_READ_WRITE, enrich_proto_baseline_paths). 0.1.x: taken as
// at v0.0.111. GPU sandboxes' baseline is not modelled.
constexpr const char* kBaselineReadOnly[] = {"/usr",     "/lib",  "/etc",        "/app",
                                             "/var/log", "/proc", "/dev/urandom"};

std::vector<std::string> BaselineReadWrite(const Version& version) {
  if (version < Release(111)) return {"/sandbox", "/tmp"};
  return {"/tmp"};
}

}  // namespace

// By lines, as ReadProcessIdentity: filesystem_policy's read_only and
// read_write lists, and landlock.compatibility (the default best_effort,
// v0.0.111 crates/openshell-core/src/policy.rs LandlockCompatibility).
std::string LandlockRules(const std::string& yaml, const Version& version) {
  std::string block;
  std::string list;
  std::string compatibility = "best_effort";
  std::vector<std::string> rules;
  bool network_policies = false;
  std::istringstream lines(yaml);
  for (std::string line; std::getline(lines, line);) {
    if (auto hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    const std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    if (line.front() != ' ' && line.front() != '\t') {
      block = trimmed.substr(0, trimmed.find(':'));
      list.clear();
      continue;
    }
    if (block == "network_policies") network_policies = true;
    if (trimmed.starts_with("- ")) {
      if (block == "filesystem_policy" && (list == "read_only" || list == "read_write")) {
        rules.push_back((list == "read_only" ? "ro " : "rw ") +
                        Unquote(Trim(std::string_view(trimmed).substr(2))));
      }
      continue;
    }
    const auto colon = trimmed.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = Trim(std::string_view(trimmed).substr(0, colon));
    const std::string value = Unquote(Trim(std::string_view(trimmed).substr(colon + 1)));
    list = key;
    if (block == "landlock" && key == "compatibility") compatibility = value;
  }
  std::string text = "compatibility " + compatibility + "\n";
  for (const std::string& rule : rules) text += rule + "\n";
  if (!network_policies) return text;
  for (const char* path : kBaselineReadOnly) text += std::string("baseline-ro ") + path + "\n";
  for (const std::string& path : BaselineReadWrite(version)) text += "baseline-rw " + path + "\n";
  return text;
}

}  // namespace mojoup::fake_openshell
