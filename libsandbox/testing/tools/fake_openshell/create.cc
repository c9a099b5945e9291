// `sandbox create`: the container as the Docker driver makes it (labels,
// mounts, the openshell network, the workspace), then an optional first command.

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

// The bridge network's gateway address (host.openshell.internal), creating
// the network first when it is missing.
std::optional<std::string> NetworkGateway(Docker& docker, const std::string& network,
                                          std::string& error) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    DockerReply reply = docker.Call("GET", "/networks/" + PercentEncode(network));
    if (Answered(reply, {200})) {
      rapidjson::Document info;
      info.Parse(reply.body.c_str());
      if (info.HasParseError() || !info.IsObject()) break;
      if (!info.HasMember("Driver") || !info["Driver"].IsString() ||
          std::string_view(info["Driver"].GetString()) != "bridge") {
        error = fmt::format("Docker network '{}' must use the 'bridge' driver", network);
        return std::nullopt;
      }
      if (info.HasMember("IPAM") && info["IPAM"].IsObject() && info["IPAM"].HasMember("Config") &&
          info["IPAM"]["Config"].IsArray()) {
        for (const auto& config : info["IPAM"]["Config"].GetArray()) {
          if (config.IsObject() && config.HasMember("Gateway") && config["Gateway"].IsString() &&
              std::string_view(config["Gateway"].GetString()).find(':') == std::string::npos &&
              config["Gateway"].GetStringLength() > 0) {
            return std::string(config["Gateway"].GetString());
          }
        }
      }
      error = fmt::format("Docker bridge network '{}' has no IPv4 gateway", network);
      return std::nullopt;
    }
    if (!Answered(reply, {404}) || attempt > 0) {
      error = fmt::format("inspect Docker network '{}': {}", network, DockerReplyProblem(reply));
      return std::nullopt;
    }
    rapidjson::StringBuffer body;
    {
      rapidjson::Writer<rapidjson::StringBuffer> w(body);
      w.StartObject();
      w.Key("Name");
      w.String(network);
      w.Key("Driver");
      w.String("bridge");
      w.Key("Attachable");
      w.Bool(true);
      w.Key("CheckDuplicate");
      w.Bool(true);
      w.Key("Labels");
      w.StartObject();
      w.Key(kManagedBy);
      w.String("openshell");
      w.EndObject();
      w.EndObject();
    }
    DockerReply created = docker.Call("POST", "/networks/create", body.GetString());
    // 409: someone else created it meanwhile, which is as good.
    if (!Answered(created, {201, 409})) {
      error = fmt::format("create Docker network '{}': {}", network, DockerReplyProblem(created));
      return std::nullopt;
    }
  }
  error = fmt::format("Docker's description of network '{}' is not JSON", network);
  return std::nullopt;
}

struct ContainerSpec {
  std::string name;  // Docker's container name
  std::string image;
  std::vector<std::string> cmd;
  std::string user;
  std::vector<std::string> env;
  StringMap labels;
  std::vector<Mount> mounts;
  std::string network;
  std::string host_ip;  // host.openshell.internal
};

std::string ContainerBody(const ContainerSpec& spec) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto strings = [&](const std::vector<std::string>& items) {
    w.StartArray();
    for (const std::string& item : items) w.String(item);
    w.EndArray();
  };
  w.StartObject();
  w.Key("Image");
  w.String(spec.image);
  w.Key("Cmd");
  strings(spec.cmd);
  if (!spec.user.empty()) {
    w.Key("User");
    w.String(spec.user);
  }
  w.Key("Env");
  strings(spec.env);
  w.Key("Labels");
  w.StartObject();
  for (const auto& [key, value] : spec.labels) {
    w.Key(key.c_str());
    w.String(value);
  }
  w.EndObject();
  w.Key("HostConfig");
  w.StartObject();
  w.Key("NetworkMode");
  w.String(spec.network);
  w.Key("ExtraHosts");
  strings({"host.docker.internal:" + spec.host_ip, "host.openshell.internal:" + spec.host_ip});
  w.Key("CapDrop");
  strings({"ALL"});
  w.Key("SecurityOpt");
  strings({"no-new-privileges"});
  // Reaps what `sandbox exec` leaves behind, and keeps the main process off pid 1.
  w.Key("Init");
  w.Bool(true);
  w.Key("Mounts");
  w.StartArray();
  for (const Mount& mount : spec.mounts) {
    w.StartObject();
    w.Key("Type");
    w.String("bind");
    w.Key("Source");
    w.String(mount.source);
    w.Key("Target");
    w.String(mount.target);
    w.Key("ReadOnly");
    w.Bool(mount.read_only);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();  // HostConfig
  w.Key("NetworkingConfig");
  w.StartObject();
  w.Key("EndpointsConfig");
  w.StartObject();
  w.Key(spec.network.c_str());
  w.StartObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// The image's WORKDIR as the driver resolves the workspace; nothing when the
// image is not on this Docker.
std::optional<std::string> ImageWorkspace(Docker& docker, const std::string& image,
                                          DockerReply& reply) {
  reply = docker.Call("GET", "/images/" + image + "/json");
  if (!Answered(reply, {200})) return std::nullopt;
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  std::string workdir;
  if (!info.HasParseError() && info.IsObject() && info.HasMember("Config") &&
      info["Config"].IsObject() && info["Config"].HasMember("WorkingDir") &&
      info["Config"]["WorkingDir"].IsString()) {
    workdir = info["Config"]["WorkingDir"].GetString();
  }
  while (workdir.size() > 1 && workdir.back() == '/') workdir.pop_back();
  if (workdir.empty() || workdir == "/") return std::string(kDefaultWorkspace);
  return workdir;
}

int SandboxCreate(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{
      .usage = "openshell sandbox create [OPTIONS] [-- <COMMAND>...]",
      .flags = {
          {.name = "name", .takes_value = true},
          {.name = "from", .takes_value = true},
          {.name = "policy", .takes_value = true},
          {.name = "label", .takes_value = true, .since = Release(37)},
          {.name = "driver-config-json", .takes_value = true, .since = Release(58)},
          {.name = "env", .takes_value = true, .since = Release(59)},
          {.name = "output", .short_name = 'o', .takes_value = true, .since = Release(92)},
          {.name = "detach", .since = Release(111)},
          {.name = "tty"},
          {.name = "no-tty"},
          {.name = "auto-providers"},
          {.name = "no-auto-providers"},
          {.name = "no-credential-warnings", .since = Release(104)},
          // Real flags this double does not model.
          {.name = "provider", .takes_value = true, .modelled = false},
          {.name = "upload", .takes_value = true, .modelled = false},
          {.name = "no-git-ignore", .modelled = false},
          {.name = "keep", .modelled = false},
          {.name = "no-keep", .modelled = false},
          {.name = "editor", .takes_value = true, .modelled = false},
          {.name = "gpu", .modelled = false},
          {.name = "cpu", .takes_value = true, .since = Release(41), .modelled = false},
          {.name = "memory", .takes_value = true, .since = Release(41), .modelled = false},
          {.name = "forward", .takes_value = true, .modelled = false},
          {.name = "approval-mode", .takes_value = true, .since = Release(53), .modelled = false},
      }};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (args.Has("output") && !args.command.empty()) {
    return ClapError("the argument '--output <OUTPUT>' cannot be used with '[COMMAND]...'",
                     grammar.usage);
  }
  if (auto code = GatewayRefuses(ctx)) return *code;

  // What the CLI checks before it asks the gateway.
  StringMap labels;
  for (const std::string& item : args.All("label")) {
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      return PrintError(fmt::format("invalid label format '{}', expected key=value", item));
    }
    labels[item.substr(0, eq)] = item.substr(eq + 1);
  }
  std::string error;
  StringMap env = ParseEnv(args.All("env"), error);
  if (!error.empty()) return PrintError(error);
  ProcessIdentity identity;
  if (args.Has("policy")) {
    const std::string path = args.Last("policy");
    std::ifstream in(path);
    if (!in) {
      return PrintError(
          fmt::format("failed to read sandbox policy file '{}': {}", path, std::strerror(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    identity = ReadProcessIdentity(text.str());
  }
  rapidjson::Document driver_config;
  if (args.Has("driver-config-json")) {
    driver_config.Parse(args.Last("driver-config-json").c_str());
    if (driver_config.HasParseError()) {
      return PrintError("invalid --driver-config-json: not valid JSON");
    }
    if (!driver_config.IsObject()) return PrintError("--driver-config-json must be a JSON object");
  }

  // What the gateway and its Docker driver check.
  if (!ctx.options.fail_create.empty()) return PrintError(ctx.options.fail_create);
  for (const auto& [key, value] : labels) {
    if (std::string problem = LabelProblem(key, value); !problem.empty()) {
      return PrintError(GrpcError("InvalidArgument", problem));
    }
  }
  std::string problem = IdentityProblem("run_as_user", identity.user, ctx.version);
  if (problem.empty()) problem = IdentityProblem("run_as_group", identity.group, ctx.version);
  if (!problem.empty()) return PrintError(GrpcError("InvalidArgument", problem));
  // Releases before 0.0.61 pass the driver config on, but their Docker driver
  // ignores it: no mounts, no error.
  std::vector<Mount> mounts;
  if (ctx.version >= Release(61) && driver_config.IsObject()) {
    problem = ReadDockerMounts(driver_config, ctx.options.enable_bind_mounts, mounts);
    if (problem.starts_with("fake-openshell:")) {
      std::fputs((problem + "\n").c_str(), stderr);
      return 2;
    }
    if (!problem.empty()) return PrintError(problem);
  }
  if (!args.Has("from")) return NotModelled("`sandbox create` without --from (a default image)");
  const std::string image = args.Last("from");

  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  DockerReply reply;
  auto workspace = ImageWorkspace(*docker, image, reply);
  if (!workspace) {
    if (Answered(reply, {404})) {
      return PrintError(GrpcError("FailedPrecondition",
                                  fmt::format("docker image '{}' is not present locally (this test "
                                              "double does not pull)",
                                              image)));
    }
    return DockerFailed("inspect Docker image", reply);
  }
  for (const Mount& mount : mounts) {
    if (PathIsOrUnder(*workspace, mount.target)) {
      return PrintError(GrpcError(
          "FailedPrecondition",
          fmt::format("mount target '{}' is reserved for the OpenShell workspace", mount.target)));
    }
    struct stat info {};
    if (::stat(mount.source.c_str(), &info) != 0) {
      return PrintError(GrpcError(
          "FailedPrecondition", fmt::format("bind source path does not exist: {}", mount.source)));
    }
  }
  auto host_ip = NetworkGateway(*docker, ctx.options.network, error);
  if (!host_ip) return PrintError(GrpcError("Internal", error));

  const std::string name = args.Has("name") ? args.Last("name") : "sandbox-" + RandomHex(8);
  ContainerSpec spec;
  spec.name = fmt::format("openshell-{}-{}", ctx.namespace_name, name);
  spec.image = image;
  spec.network = ctx.options.network;
  spec.host_ip = *host_ip;
  spec.mounts = mounts;
  // From 0.0.111 a trailing command is the sandbox's main process: when it
  // ends, the container stops and the phase turns Error. Before, the sandbox
  // idles and the command runs once over SSH after Ready.
  const bool command_is_main = ctx.version >= Release(111) && !args.command.empty();
  spec.cmd = command_is_main ? args.command : std::vector<std::string>{"sleep", "infinity"};
  if (auto uid = NumericId(identity.user)) {
    auto gid = NumericId(identity.group);
    spec.user = gid ? fmt::format("{}:{}", *uid, *gid) : std::to_string(*uid);
  }
  for (const auto& [key, value] : env) spec.env.push_back(key + "=" + value);
  spec.labels = labels;
  {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();
    for (const auto& [key, value] : labels) {
      w.Key(key.c_str());
      w.String(value);
    }
    w.EndObject();
    spec.labels[kUserLabels] = buffer.GetString();
  }
  spec.labels[kManagedBy] = "openshell";
  spec.labels[kSandboxName] = name;
  spec.labels[kSandboxId] = NewSandboxId();
  spec.labels[kNamespace] = ctx.namespace_name;
  spec.labels[kWorkspace] = "default";
  if (ctx.options.phase_error) spec.labels[kPinnedPhase] = "Error";

  reply = docker->Call("POST", "/containers/create?name=" + PercentEncode(spec.name),
                       ContainerBody(spec));
  if (Answered(reply, {409})) {
    return PrintError(
        fmt::format("sandbox '{}' already exists\n\nhint: delete it first with: openshell "
                    "sandbox delete <name>\n      or use a different name",
                    name));
  }
  if (Answered(reply, {400}))
    return PrintError(GrpcError("InvalidArgument", DockerReplyProblem(reply)));
  if (!Answered(reply, {201})) return DockerFailed("create Docker container", reply);
  rapidjson::Document created;
  created.Parse(reply.body.c_str());
  if (created.HasParseError() || !created.IsObject() || !created.HasMember("Id") ||
      !created["Id"].IsString()) {
    return PrintError(GrpcError("Internal", "Docker's answer to create has no container id"));
  }
  const std::string container = created["Id"].GetString();
  reply = docker->Call("POST", "/containers/" + container + "/start");
  if (!Answered(reply, {204, 304})) {
    docker->Call("DELETE", "/containers/" + container + "?force=1&v=1");
    return DockerFailed("start Docker container", reply);
  }

  if (format == "json") {
    std::fputs("Provisioning sandbox (structured output on stdout)...\n", stderr);
    auto sandbox = FindSandbox(*docker, ctx, name, error);
    if (!sandbox)
      return PrintError(GrpcError("Internal", error.empty() ? "sandbox vanished" : error));
    Print(SandboxJson(*sandbox, ctx.version, false));
    return 0;
  }
  Print(fmt::format("\nCreated sandbox: {}\n\n", name));
  if (!command_is_main && !args.command.empty()) {
    // Over SSH without a terminal the command's exit status is lost.
    auto code =
        RunInSandbox(*docker, container, {"/bin/sh", "-c", RemoteCommandLine(args.command, {}, "")},
                     "", 0, error);
    if (!code) return PrintError(GrpcError("Internal", error));
  }
  return 0;
}

}  // namespace mojoup::fake_openshell
