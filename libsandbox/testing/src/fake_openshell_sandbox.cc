#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"

#include <fcntl.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "mojoup/internal/atomic_file.h"

namespace mojoup::sandbox::testing {
namespace {

std::string OptionsJson(const FakeOpenShellSandboxOptions& options) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("version");
  w.String(options.version);
  w.Key("gateway_version");
  w.String(options.gateway_version);
  w.Key("gateway");
  w.String(options.gateway);
  w.Key("enable_bind_mounts");
  w.Bool(options.enable_bind_mounts);
  w.Key("allow_driver_config");
  if (options.allow_driver_config) {
    w.Bool(*options.allow_driver_config);
  } else {
    w.Null();
  }
  w.Key("bind_mount_admission");
  w.String(options.bind_mount_admission);
  w.Key("driver");
  w.String(options.driver);
  w.Key("fail_create");
  w.String(options.fail_create);
  w.Key("phase_error");
  w.Bool(options.phase_error);
  w.Key("network");
  w.String(options.network);
  w.Key("host_gateway_ip");
  w.String(options.host_gateway_ip);
  w.Key("imported_profiles");
  w.StartArray();
  for (const std::string& id : options.imported_profiles) w.String(id);
  w.EndArray();
  w.Key("extra_hosts");
  w.StartArray();
  for (const std::string& entry : options.extra_hosts) w.String(entry);
  w.EndArray();
  w.Key("upstream_ca");
  w.String(options.upstream_ca);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace

std::string InstallFakeOpenShellSandbox(const std::string& dir, const std::string& fake_binary,
                                        const FakeOpenShellSandboxOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target = fs::absolute(fake_binary, ec);
  if (ec || !fs::exists(target)) {
    throw std::runtime_error("no fake-openshell program at " + fake_binary);
  }

  const std::string config = dir + "/fake-openshell.json";
  if (absl::Status put = mojoup::internal::ReplaceAtomically(config, OptionsJson(options), 0644);
      !put.ok()) {
    throw std::runtime_error("cannot install " + config + ": " + std::string(put.message()));
  }

  // A symlink, not a copy: the program finds its options next to the name it
  // was started by, so the link's directory is what counts.
  const std::string link = dir + "/openshell";
  fs::remove(link, ec);
  if (::symlink(target.c_str(), link.c_str()) != 0) {
    throw std::runtime_error("cannot link " + link + " to " + target.string() + ": " +
                             std::strerror(errno));
  }

  // Writable by whoever the code under test runs as (tests drop to `nobody`):
  // the call log, and the gateway's provider and policy stores and their locks.
  const std::string log = dir + "/openshell-calls.jsonl";
  for (const std::string& file :
       {log, dir + "/fake-openshell-providers.json", dir + "/fake-openshell-providers.json.lock",
        dir + "/fake-openshell-policies.txt", dir + "/fake-openshell-policies.txt.lock"}) {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0 || ::fchmod(fd, 0666) != 0) {
      if (fd >= 0) ::close(fd);
      throw std::runtime_error("cannot create " + file + ": " + std::strerror(errno));
    }
    ::close(fd);
  }
  return log;
}

}  // namespace mojoup::sandbox::testing
