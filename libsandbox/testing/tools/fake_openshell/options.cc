// The install directory, the call log, the double's options and the release
// it plays.

#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

// "0.0.112-dev.6+gabc1234" reads as 0.0.112.
Version ParseVersion(std::string_view text) {
  Version version;
  int* parts[] = {&version.major, &version.minor, &version.patch};
  std::size_t at = 0;
  if (at < text.size() && text[at] == 'v') ++at;
  for (int* part : parts) {
    int value = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      value = value * 10 + (text[at] - '0');
      ++at;
    }
    *part = value;
    if (at >= text.size() || text[at] != '.') break;
    ++at;
  }
  return version;
}

std::string DirOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream entries(path != nullptr ? path : "");
  for (std::string entry; std::getline(entries, entry, ':');) {
    if (entry.empty()) entry = ".";
    if (::access((entry + "/" + name).c_str(), X_OK) == 0) return entry;
  }
  return {};
}

// The directory of the `openshell` that was run: argv[0]'s, or where PATH
// found it. Not /proc/self/exe: that is the link's target, the build tree.
std::string ProgramDir(const std::string& argv0) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (argv0.find('/') != std::string::npos) {
    return fs::absolute(fs::path(argv0), ec).parent_path().string();
  }
  if (std::string dir = DirOnPath(argv0); !dir.empty()) {
    return fs::absolute(fs::path(dir), ec).string();
  }
  // What execve was given, when the caller's PATH search differed from ours.
  if (auto execfn = reinterpret_cast<const char*>(::getauxval(AT_EXECFN)); execfn != nullptr) {
    std::string name = execfn;
    if (name.find('/') != std::string::npos) {
      return fs::absolute(fs::path(name), ec).parent_path().string();
    }
  }
  return {};
}

void LogCall(const std::string& dir, const std::vector<std::string>& argv) {
  if (dir.empty()) return;
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartArray();
  for (const std::string& arg : argv) w.String(arg);
  w.EndArray();
  std::string line(buffer.GetString(), buffer.GetSize());
  line += '\n';
  const std::string path = dir + "/openshell-calls.jsonl";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // One write per line, so concurrent invocations do not interleave.
  [[maybe_unused]] ssize_t put = ::write(fd, line.data(), line.size());
  ::close(fd);
}

bool LoadOptions(const std::string& dir, Options& options, std::string& error) {
  const std::string path = dir + "/fake-openshell.json";
  std::ifstream in(path);
  if (!in) return true;  // no file: the defaults
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  if (doc.HasParseError() || !doc.IsObject()) {
    error = path + " is not a JSON object";
    return false;
  }
  auto string = [&](const char* key, std::string& out) {
    if (doc.HasMember(key) && doc[key].IsString()) out = doc[key].GetString();
  };
  auto boolean = [&](const char* key, bool& out) {
    if (doc.HasMember(key) && doc[key].IsBool()) out = doc[key].GetBool();
  };
  string("version", options.version);
  string("gateway_version", options.gateway_version);
  string("gateway", options.gateway);
  string("gateway_name", options.gateway_name);
  boolean("remote", options.remote);
  boolean("enable_bind_mounts", options.enable_bind_mounts);
  if (doc.HasMember("allow_driver_config") && doc["allow_driver_config"].IsBool()) {
    options.allow_driver_config = doc["allow_driver_config"].GetBool();
  }
  string("bind_mount_admission", options.bind_mount_admission);
  string("driver", options.driver);
  if (options.driver != "docker" && options.driver != "kubernetes") {
    error = path + ": driver must be \"docker\" or \"kubernetes\", not \"" + options.driver + "\"";
    return false;
  }
  string("fail_create", options.fail_create);
  boolean("phase_error", options.phase_error);
  string("network", options.network);
  string("host_gateway_ip", options.host_gateway_ip);
  if (doc.HasMember("imported_profiles") && doc["imported_profiles"].IsArray()) {
    for (const auto& id : doc["imported_profiles"].GetArray()) {
      if (id.IsString()) options.imported_profiles.push_back(id.GetString());
    }
  }
  if (doc.HasMember("extra_hosts") && doc["extra_hosts"].IsArray()) {
    for (const auto& entry : doc["extra_hosts"].GetArray()) {
      if (entry.IsString()) options.extra_hosts.push_back(entry.GetString());
    }
  }
  string("upstream_ca", options.upstream_ca);
  return true;
}

// A short stable name for the install directory (FNV-1a).
std::string NamespaceFor(const std::string& dir) {
  std::error_code ec;
  std::string canonical = dir.empty() ? "" : std::filesystem::weakly_canonical(dir, ec).string();
  if (canonical.empty()) return "default";
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : canonical) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("fake-{:08x}", static_cast<std::uint32_t>(hash ^ (hash >> 32)));
}

std::string RandomHex(std::size_t digits) {
  std::random_device device;
  std::string out;
  while (out.size() < digits) out += fmt::format("{:08x}", device());
  out.resize(digits);
  return out;
}

std::string NewSandboxId() {
  std::string hex = RandomHex(32);
  return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4),
                     hex.substr(16, 4), hex.substr(20));
}

}  // namespace mojoup::fake_openshell
