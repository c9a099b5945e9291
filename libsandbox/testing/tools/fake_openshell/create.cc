// `sandbox create`: the container as the Docker driver makes it (labels,
// mounts, the openshell network, the workspace), then an optional first command.

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"
#include "runtime/native/stream_pump.h"

namespace mojoup::fake_openshell {

// ensure_bridge_network (v0.0.37..v0.0.111 crates/openshell-driver-docker/
// src/lib.rs): the bridge network's IPv4 gateway, creating the network with
// the managed-by label when it is missing. The driver does this when the
// gateway starts; this double does it at create.
std::optional<std::string> NetworkGateway(Docker& docker, const std::string& network,
                                          std::string& error) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    DockerReply reply = docker.Call("GET", "/networks/" + PercentEncode(network));
    if (Answered(reply, {200})) {
      rapidjson::Document info;
      info.Parse(reply.body.c_str());
      if (info.HasParseError() || !info.IsObject()) break;
      const std::string driver = info.HasMember("Driver") && info["Driver"].IsString()
                                     ? info["Driver"].GetString()
                                     : "unknown";
      if (driver != "bridge") {
        error = fmt::format("Docker network '{}' must use the 'bridge' driver, found '{}'", network,
                            driver);
        return std::nullopt;
      }
      if (!info.HasMember("IPAM") || !info["IPAM"].IsObject() ||
          !info["IPAM"].HasMember("Config") || !info["IPAM"]["Config"].IsArray()) {
        error = fmt::format("Docker bridge network '{}' does not expose IPAM gateway configuration",
                            network);
        return std::nullopt;
      }
      for (const auto& config : info["IPAM"]["Config"].GetArray()) {
        if (config.IsObject() && config.HasMember("Gateway") && config["Gateway"].IsString() &&
            std::string_view(config["Gateway"].GetString()).find(':') == std::string::npos &&
            config["Gateway"].GetStringLength() > 0) {
          return std::string(config["Gateway"].GetString());
        }
      }
      error = fmt::format("Docker bridge network '{}' does not have an IPv4 IPAM gateway", network);
      return std::nullopt;
    }
    if (!Answered(reply, {404}) || attempt > 0) {
      error = fmt::format("failed to inspect Docker network '{}': {}", network,
                          DockerReplyProblem(reply));
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
      error = fmt::format("failed to create Docker network '{}': {}", network,
                          DockerReplyProblem(created));
      return std::nullopt;
    }
  }
  error = fmt::format("Docker's description of network '{}' is not JSON", network);
  return std::nullopt;
}

// docker_gateway_route (v0.0.111 crates/openshell-driver-docker/src/lib.rs):
// a configured host_gateway_ip wins; else Docker Desktop and the runtimes
// that route like it (Colima, Lima, Rancher Desktop, OrbStack: detected by
// operating system, daemon name and labels since v0.0.39; v0.0.37 knew Docker
// Desktop only) use Docker's host-gateway alias; else the bridge's gateway.
std::string HostAlias(Docker& docker, const Context& ctx, const std::string& bridge_gateway) {
  if (!ctx.options.host_gateway_ip.empty()) return ctx.options.host_gateway_ip;
  DockerReply reply = docker.Call("GET", "/info");
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  if (!Answered(reply, {200}) || info.HasParseError() || !info.IsObject()) return bridge_gateway;
  auto lower = [&](const char* key) {
    std::string text = info.HasMember(key) && info[key].IsString() ? info[key].GetString() : "";
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  const bool later = ctx.version >= Release(39);
  bool desktop = lower("OperatingSystem").find("docker desktop") != std::string::npos;
  const std::string name = lower("Name");
  if (later && (name.starts_with("colima") || name.starts_with("lima-") ||
                name.starts_with("rancher-desktop") || name.starts_with("orbstack"))) {
    desktop = true;
  }
  if (info.HasMember("Labels") && info["Labels"].IsArray()) {
    for (const auto& label : info["Labels"].GetArray()) {
      if (!label.IsString()) continue;
      std::string_view text = label.GetString();
      if (text.starts_with("com.docker.desktop.") ||
          (later &&
           (text.starts_with("dev.rancherdesktop.") || text.starts_with("dev.orbstack.")))) {
        desktop = true;
      }
    }
  }
  return desktop ? "host-gateway" : bridge_gateway;
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
  std::vector<std::string> extra_hosts;
  std::string workdir;  // empty: the image's
};

// The environment the supervisor gives each exec's command, but TERM (set
// per exec): a cleared one with OPENSHELL_SANDBOX, HOME, USER, SHELL and the
// supervisor's PATH, then the sandbox's own variables (create --env and the
// providers' placeholders) but OPENSHELL_*; the image's ENV never reaches it
// (v0.0.92, v0.0.111 crates/openshell-supervisor-process/src/ssh.rs
// apply_child_env; process.rs session_user_and_home, where a workspace's
// own home, not modelled, would take HOME's place; v0.0.111
// crates/openshell-driver-docker/src/lib.rs SUPERVISOR_PATH). Lines of "set
// K=V" and "pass NAME" (the value is the exec's own) for the supervisor.
std::string ChildEnvironment(const std::string& run_as_user,
                             const std::vector<std::string>& sandbox_env) {
  const bool numeric = NumericId(run_as_user).has_value();
  const std::string user = run_as_user.empty() ? "sandbox" : run_as_user;
  const std::string home = numeric || user == "sandbox" ? "/sandbox" : "/home/" + user;
  std::string text = "set OPENSHELL_SANDBOX=1\nset HOME=" + home + "\nset USER=" + user +
                     "\nset SHELL=/bin/bash\nset PATH=" + kSupervisorSearchPath + "\n";
  for (const std::string& entry : sandbox_env) {
    const std::string name = entry.substr(0, entry.find('='));
    if (!name.starts_with("OPENSHELL_")) text += "pass " + name + "\n";
  }
  // Then the proxy's variables and the CA's, which the supervisor fills in.
  return text + "proxy\ntls\n";
}

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
  // As the driver builds it (v0.0.111 crates/openshell-driver-docker/src/
  // lib.rs build_container_create_body_for_image): root, with the
  // supervisor as the entrypoint, which drops to the policy's user for each
  // command it runs; the supervisor's own arguments are this double's.
  w.Key("User");
  w.String("0");
  w.Key("Entrypoint");
  strings({kSupervisorPath});
  w.Key("Cmd");
  strings(spec.cmd);
  w.Key("Env");
  strings(spec.env);
  if (!spec.workdir.empty()) {
    w.Key("WorkingDir");
    w.String(spec.workdir);
  }
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
  strings(spec.extra_hosts);
  w.Key("CapAdd");
  strings({"SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE", "SYSLOG"});
  w.Key("SecurityOpt");
  strings({"apparmor=unconfined"});
  w.Key("Mounts");
  const std::string mounts = MountsJson(spec.mounts);
  w.RawValue(mounts.c_str(), mounts.size(), rapidjson::kArrayType);
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

// The image's WORKDIR as the driver resolves the workspace (and its USER in
// `user`); nothing when the image is not on this Docker.
std::optional<std::string> ImageWorkspace(Docker& docker, const std::string& image,
                                          DockerReply& reply, std::string& user) {
  reply = docker.Call("GET", "/images/" + image + "/json");
  if (!Answered(reply, {200})) return std::nullopt;
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  if (!info.HasParseError() && info.IsObject() && info.HasMember("Config") &&
      info["Config"].IsObject() && info["Config"].HasMember("User") &&
      info["Config"]["User"].IsString()) {
    user = info["Config"]["User"].GetString();
  }
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

// The community registry bare --from names resolve to (v0.0.37..v0.0.111
// crates/openshell-core/src/image.rs DEFAULT_COMMUNITY_REGISTRY,
// resolve_community_image; OPENSHELL_COMMUNITY_REGISTRY overrides it).
std::string CommunityRegistry() {
  const char* env = std::getenv("OPENSHELL_COMMUNITY_REGISTRY");
  std::string prefix = env != nullptr ? env : "ghcr.io/nvidia/openshell-community/sandboxes";
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix;
}

bool LooksLikeDockerfile(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "dockerfile" || lower.starts_with("dockerfile.") ||
         lower.ends_with(".dockerfile");
}

// The CLI's resolve_from (v0.0.111 crates/openshell-cli/src/run.rs): local
// Dockerfiles and directories are built (not modelled; 0.1.0 dropped the
// build, release note v0.1.0), missing explicit local paths fail locally, a
// value with '/', ':' or '.' is an image reference, anything else a
// community sandbox name. Returns the exit code when it ends the command.
std::optional<int> ResolveFrom(const std::string& value, std::string& image) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path(value);
  const std::string base = path.filename().string();
  const bool explicit_path = path.is_absolute() || value == "." || value == ".." ||
                             value.starts_with("./") || value.starts_with("../") ||
                             value.starts_with("~/");
  const bool bare_dockerfile = value.find('/') == std::string::npos &&
                               value.find(':') == std::string::npos && LooksLikeDockerfile(base);
  if (fs::is_regular_file(path, ec)) {
    if (LooksLikeDockerfile(base)) return NotModelled("`--from` with a Dockerfile (a local build)");
    if (explicit_path || bare_dockerfile) {
      return PrintError(fmt::format("local --from file is not a Dockerfile: {}", value));
    }
  }
  if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(path / "Dockerfile", ec)) {
      return NotModelled("`--from` with a directory (a local build)");
    }
    return PrintError(fmt::format("No Dockerfile found in directory: {}", value));
  }
  if (fs::exists(path, ec)) {
    return PrintError(
        fmt::format("local --from path is not a regular file or directory: {}", value));
  }
  if (explicit_path || bare_dockerfile) {
    return PrintError(fmt::format(
        "local --from path does not exist: {}\nUse an existing Dockerfile, a directory containing "
        "Dockerfile, or a container image reference.",
        value));
  }
  if (value.find_first_of("/:.") != std::string::npos) {
    image = value;
  } else {
    image = fmt::format("{}/{}:latest", CommunityRegistry(), value);
  }
  return std::nullopt;
}

// A provisioning failure: the create RPC succeeded, the sandbox went to
// Error, and the CLI's watch reports the Ready condition's reason and
// message (v0.0.111 crates/openshell-cli/src/run.rs sandbox_create).
int ProvisioningFailed(std::string_view reason, std::string_view message) {
  return PrintError(
      fmt::format("sandbox entered error phase while provisioning: {}: {}", reason, message));
}

// Waits for the main process and shows its output. 0.1.0+: the create exits
// with the main process's status (refs/pull/2884/head crates/openshell-cli/
// src/main.rs `std::process::exit(exit_code)`). 0.0.111: the attached ssh
// session ends when the main process does and create fails whatever the
// status (e2e/rust/tests/sandbox_lifecycle.rs
// canonical_main_exit_transitions_persistent_sandbox_to_error asserts only
// the failure); 255, ssh's status for a closed connection, stands in.
int AttachToMain(Docker& docker, const Context& ctx, const std::string& container) {
  DockerReply waited =
      docker.Call("POST", "/containers/" + container + "/wait", {}, std::chrono::hours(24));
  rapidjson::Document result;
  result.Parse(waited.body.c_str());
  int status = 1;
  if (Answered(waited, {200}) && !result.HasParseError() && result.IsObject() &&
      result.HasMember("StatusCode") && result["StatusCode"].IsInt()) {
    status = result["StatusCode"].GetInt();
  }
  DockerReply logs = docker.Call("GET", "/containers/" + container + "/logs?stdout=1&stderr=1");
  if (Answered(logs, {200})) {
    mojoup::sandbox::FrameSplitter frames;
    frames.Feed(logs.body.data(), logs.body.size(),
                [](unsigned char which, const char* data, std::size_t size) {
                  WriteAllWaiting(which == 2 ? STDERR_FILENO : STDOUT_FILENO, data, size);
                });
  }
  if (IsZeroOne(ctx.version)) return status;
  return 255;
}

namespace {

const Grammar& CreateGrammar() {
  static const Grammar grammar{
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
          {.name = "provider", .takes_value = true},
          // Real flags this double does not model.
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
  return grammar;
}

// What a `sandbox create` asks for, as the CLI reads it.
struct CreateRequest {
  Args args;
  std::string format;
  StringMap labels;
  StringMap env;
  std::string image;
  std::vector<Provider> providers;
  ProcessIdentity identity;
  std::string policy_text;
  rapidjson::Document driver_config;
  KubernetesConfig kubernetes;  // its `kubernetes` block, on that driver
};

// What the CLI checks before it dials the gateway (v0.0.111
// crates/openshell-cli/src/main.rs SandboxCommands::Create): the flags, the
// labels and the environment. The exit code when it ends the command.
std::optional<int> ReadCreateFlags(const Context& ctx, const std::vector<std::string>& argv,
                                   CreateRequest& r) {
  const Grammar& grammar = CreateGrammar();
  if (auto code = Parse(argv, 3, grammar, ctx.version, r.args)) return *code;
  if (auto code = OutputFormat(r.args, grammar.usage, r.format)) return *code;
  if (r.args.Has("output") && !r.args.command.empty()) {
    return ClapError("the argument '--output <OUTPUT>' cannot be used with '[COMMAND]...'",
                     grammar.usage);
  }
  for (const std::string& item : r.args.All("label")) {
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      return PrintError(fmt::format("invalid label format '{}', expected key=value", item));
    }
    r.labels[item.substr(0, eq)] = item.substr(eq + 1);
  }
  std::string error;
  r.env = ParseEnv(r.args.All("env"), error);
  if (!error.empty()) return PrintError(error);
  if (auto code = GatewayRefuses(ctx, true)) return *code;
  return std::nullopt;
}

// run.rs sandbox_create, after the client connects: --from, providers,
// policy, driver config. The exit code when it ends the command.
std::optional<int> ReadCreateInputs(const Context& ctx, CreateRequest& r) {
  if (r.args.Has("from")) {
    if (auto code = ResolveFrom(r.args.Last("from"), r.image)) return *code;
  } else {
    // The gateway's default image (v0.0.111 crates/openshell-core/src/
    // image.rs default_sandbox_image; 0.1.0 changed it to
    // nvcr.io/nvidia/base/ubuntu:24.04, release note v0.1.0).
    r.image = IsZeroOne(ctx.version) ? "nvcr.io/nvidia/base/ubuntu:24.04"
                                     : CommunityRegistry() + "/base:latest";
  }
  for (const std::string& provider_name : r.args.All("provider")) {
    if (auto found = FindProvider(ctx, provider_name)) {
      if (std::none_of(r.providers.begin(), r.providers.end(),
                       [&](const Provider& p) { return p.name == provider_name; })) {
        r.providers.push_back(*found);
      }
      continue;
    }
    // ensure_required_providers: an unknown name that is a provider type
    // auto-creates a provider from local credentials.
    if (IsProviderType(provider_name)) {
      return NotModelled("`--provider <type>` auto-creating a provider");
    }
    return PrintError(fmt::format(
        "provider '{0}' not found and '{0}' is not a recognized provider type. Create it first "
        "with `openshell provider create --type <type> --name {0}`",
        provider_name));
  }
  if (r.args.Has("policy")) {
    const std::string path = r.args.Last("policy");
    std::ifstream in(path);
    if (!in) {
      return PrintError(
          fmt::format("failed to read sandbox policy file '{}': {}", path, std::strerror(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    r.policy_text = text.str();
    r.identity = ReadProcessIdentity(r.policy_text);
  }
  if (r.args.Has("driver-config-json")) {
    r.driver_config.Parse(r.args.Last("driver-config-json").c_str());
    // v0.0.111 run.rs parse_driver_config_json. The real report adds
    // serde_json's error as its cause; its wording is not reproduced.
    if (r.driver_config.HasParseError()) {
      return PrintError("--driver-config-json must be valid JSON");
    }
    if (!r.driver_config.IsObject()) {
      return PrintError("--driver-config-json must be a JSON object keyed by driver name");
    }
  }
  return std::nullopt;
}

// What the gateway checks (v0.0.111 crates/openshell-server/src/grpc/
// sandbox.rs handle_create_sandbox_inner): the name, the labels, then the
// providers; then its Docker driver, which reads the mounts. The exit code
// when it ends the command.
std::optional<int> GatewayChecks(const Context& ctx, CreateRequest& r, std::vector<Mount>& mounts) {
  if (!ctx.options.fail_create.empty()) return PrintError(ctx.options.fail_create);
  if (std::string problem = SandboxNameProblem(r.args.Last("name"), ctx.version);
      !problem.empty()) {
    return PrintError(GrpcError("InvalidArgument", problem));
  }
  for (const auto& [key, value] : r.labels) {
    if (std::string problem = LabelProblem(key, value); !problem.empty()) {
      return PrintError(GrpcError("InvalidArgument", problem));
    }
  }
  std::string problem = IdentityProblem("run_as_user", r.identity.user, ctx.version);
  if (problem.empty()) problem = IdentityProblem("run_as_group", r.identity.group, ctx.version);
  if (!problem.empty()) return PrintError(GrpcError("InvalidArgument", problem));
  if (std::string tcp = TcpEndpointProblem(r.policy_text); !tcp.empty()) {
    return PrintError(GrpcError("InvalidArgument", tcp));
  }
  if (std::string tld = TldWildcardProblem(r.policy_text); !tld.empty()) {
    return PrintError(GrpcError("InvalidArgument", tld));
  }
  // 0.1.x admission (release note v0.1.0; wording from the 0.1
  // openshell-core admission module, see FAKE_OPENSHELL.md):
  // caller driver config must be allowed, then host binds need admission.
  std::string admission_refusal;
  if (IsZeroOne(ctx.version)) {
    const bool allowed = ctx.options.allow_driver_config.value_or(false);
    if (r.driver_config.IsObject() && !allowed) {
      return PrintError(GrpcError("FailedPrecondition",
                                  "caller driver config is disabled; a gateway administrator must "
                                  "enable allow_driver_config"));
    }
    if (ctx.options.bind_mount_admission == "enforced") {
      admission_refusal =
          "host bind or image mount cannot be attached while resource admission is enabled: no "
          "trusted label resolver";
    }
  }
  // The Kubernetes driver gets its own block only; a `docker` one is
  // dropped without a word (v0.0.111 compute/mod.rs select_driver_config).
  if (IsKubernetes(ctx)) {
    problem = ReadKubernetesConfig(r.driver_config, r.kubernetes);
    if (!problem.empty()) return PrintError(problem);
    return std::nullopt;
  }
  // Releases before 0.0.61 pass the driver config on, but their Docker driver
  // ignores it: no mounts, no error.
  if (ctx.version >= Release(61) && r.driver_config.IsObject()) {
    problem = ReadDockerMounts(r.driver_config, ctx.options.enable_bind_mounts, admission_refusal,
                               mounts);
    if (problem.starts_with("fake-openshell:")) {
      std::fputs((problem + "\n").c_str(), stderr);
      return 2;
    }
    if (!problem.empty()) return PrintError(problem);
  }
  return std::nullopt;
}

// The image's workspace and USER (`image_user`), and each mount checked
// against them and the host: the exit code when the driver refuses.
std::optional<int> CheckImageAndMounts(Docker& docker, const std::string& image,
                                       const std::vector<Mount>& mounts, std::string& image_user) {
  DockerReply reply;
  auto workspace = ImageWorkspace(docker, image, reply, image_user);
  if (!workspace) {
    // The driver pulls what is not present (image_pull_policy IfNotPresent,
    // v0.0.111 crates/openshell-driver-docker/src/lib.rs
    // ensure_image_available, pull_image); this double never pulls, so a
    // missing image is a failed pull. The real gateway keeps the sandbox
    // record in Error; this double creates nothing.
    if (Answered(reply, {404})) {
      return ProvisioningFailed(
          "ImagePullFailed",
          fmt::format("pull Docker image '{}' failed: fake-openshell does not pull images and "
                      "'{}' is not present on this Docker",
                      image, image));
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
  return std::nullopt;
}

// The container's name, image, network, hosts and mounts, the supervisor's
// among them: the exit code when the supervisor is missing.
std::optional<int> PlaceContainer(const Context& ctx, const CreateRequest& r,
                                  const std::string& name, const std::string& host_alias,
                                  const std::vector<Mount>& mounts, ContainerSpec& spec) {
  spec.name = fmt::format("openshell-{}-{}", ctx.namespace_name, name);
  spec.image = r.image;
  spec.network = ctx.options.network;
  // docker_extra_hosts: both names from v0.0.39; v0.0.37's host-gateway
  // route named host.openshell.internal only.
  if (host_alias == "host-gateway" && ctx.version < Release(39)) {
    spec.extra_hosts = {"host.openshell.internal:host-gateway"};
  } else {
    spec.extra_hosts = {"host.docker.internal:" + host_alias,
                        "host.openshell.internal:" + host_alias};
  }
  // A test hook: the names the sandbox's proxy resolves (it reads the
  // sandbox's /etc/hosts first, as proxy.rs resolve_from_sandbox_hosts).
  for (const std::string& entry : ctx.options.extra_hosts) spec.extra_hosts.push_back(entry);
  spec.mounts = mounts;
  // The supervisor, read-only at its path, as the driver binds it (v0.0.111
  // crates/openshell-driver-docker/src/lib.rs build_binds): every exec
  // spawns its command through it (ShellArgv).
  std::error_code ec;
  const std::filesystem::path supervisor =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / kSupervisorProgram;
  if (ec || ::access(supervisor.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "fake-openshell: no %s next to this program (%s)\n", kSupervisorProgram,
                 supervisor.c_str());
    return 2;
  }
  spec.mounts.push_back({supervisor.string(), kSupervisorPath, true});
  return std::nullopt;
}

// Who the container runs as, its environment (the providers' credentials as
// placeholders only) and the supervisor's command line, the main process
// last when `command_is_main`: the exit code when the upstream CA cannot be read.
std::optional<int> ProcessOfContainer(const Context& ctx, const CreateRequest& r,
                                      const std::string& image_user, bool command_is_main,
                                      ContainerSpec& spec) {
  // The Kubernetes driver hands the supervisor a numeric identity
  // (OPENSHELL_SANDBOX_UID/GID, 1000:1000 by default), which replaces the
  // policy's run_as_user/run_as_group (v0.0.111 driver.rs
  // apply_resolved_identity_env; crates/openshell-supervisor-process/src/
  // identity.rs resolve_process_identity, DriverIdentity::Resolved); a
  // numeric user gets HOME=/sandbox (process.rs session_user_and_home).
  const std::string identity_user = IsKubernetes(ctx) ? "1000" : r.identity.user;
  if (IsKubernetes(ctx)) {
    spec.user = "1000:1000";
  } else if (auto uid = NumericId(r.identity.user)) {
    auto gid = NumericId(r.identity.group);
    spec.user = gid ? fmt::format("{}:{}", *uid, *gid) : std::to_string(*uid);
  } else if (IsZeroOne(ctx.version) && image_user.empty()) {
    // 0.1.0: images without an OCI USER run as UID/GID 1000 (release note
    // v0.1.0, 2026-09-25, #3386).
    spec.user = "1000:1000";
  }
  // Else the image's USER, whom the container would have run as.
  if (spec.user.empty()) spec.user = image_user;
  for (const auto& [key, value] : r.env) spec.env.push_back(key + "=" + value);
  for (const auto& [key, placeholder] : ProviderPlaceholders(r.providers)) {
    spec.env.push_back(key + "=" + placeholder);
  }
  spec.labels = r.labels;
  spec.labels[kChildEnvironment] = ChildEnvironment(identity_user, spec.env);
  spec.labels[kRunAs] = spec.user;
  // The supervisor: the proxy's rules, then the main process (none: it idles).
  spec.cmd = {"run",
              "--user",
              spec.user,
              "--env",
              WithTerm(spec.labels[kChildEnvironment], ExecMode::kPiped),
              "--network",
              NetworkRules(r.policy_text)};
  if (!ctx.options.upstream_ca.empty()) {
    std::ifstream pem(ctx.options.upstream_ca);
    std::stringstream text;
    text << pem.rdbuf();
    if (!pem) {
      std::fprintf(stderr, "fake-openshell: cannot read upstream_ca %s\n",
                   ctx.options.upstream_ca.c_str());
      return 2;
    }
    spec.cmd.insert(spec.cmd.end(), {"--upstream-ca", text.str()});
  }
  spec.cmd.push_back("--");
  if (command_is_main) {
    spec.cmd.insert(spec.cmd.end(), r.args.command.begin(), r.args.command.end());
  }
  return std::nullopt;
}

// The labels by which the double finds the sandbox again.
void LabelContainer(const Context& ctx, const CreateRequest& r, const std::string& name,
                    bool command_is_main, ContainerSpec& spec) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  for (const auto& [key, value] : r.labels) {
    w.Key(key.c_str());
    w.String(value);
  }
  w.EndObject();
  spec.labels[kUserLabels] = buffer.GetString();
  spec.labels[kManagedBy] = "openshell";
  spec.labels[kSandboxName] = name;
  spec.labels[kSandboxId] = NewSandboxId();
  spec.labels[kNamespace] = ctx.namespace_name;
  spec.labels[kWorkspace] = "default";
  if (ctx.options.phase_error) spec.labels[kPinnedPhase] = "Error";
  if (command_is_main) spec.labels[kMainProcess] = "1";
  if (!r.policy_text.empty()) {
    spec.labels[kLandlockRules] = LandlockRules(r.policy_text, ctx.version);
  }
  if (!r.providers.empty()) {
    std::string list;
    for (const Provider& p : r.providers) list += (list.empty() ? "" : ",") + p.name;
    spec.labels[kProviders] = list;
  }
}

// Creates the container (its id in `container`) and starts it unless
// `start` is false: the exit code when Docker refuses.
std::optional<int> CreateContainer(Docker& docker, const ContainerSpec& spec,
                                   const std::string& name, std::string& container, bool start) {
  DockerReply reply = docker.Call("POST", "/containers/create?name=" + PercentEncode(spec.name),
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
  container = created["Id"].GetString();
  if (!start) return std::nullopt;
  reply = docker.Call("POST", "/containers/" + container + "/start");
  if (!Answered(reply, {204, 304})) {
    docker.Call("DELETE", "/containers/" + container + "?force=1&v=1");
    return DockerFailed("start Docker container", reply);
  }
  return std::nullopt;
}

// The Kubernetes driver's pod: no host binds (the supervisor's aside, which
// stands for its side-loaded binary), the claims' volumes and the
// workspace's, commands in /sandbox (the supervisor's --workdir, v0.0.111
// driver.rs apply_supervisor_sideload_with_params). `pending`: a claim no
// volume plays yet (the claims stay off the container until each has one).
std::optional<int> PlacePod(Docker& docker, const CreateRequest& r, ContainerSpec& spec,
                            bool& pending) {
  StringMap volume_labels;
  for (const char* key : {kManagedBy, kSandboxName, kSandboxId, kNamespace}) {
    volume_labels[key] = spec.labels[key];
  }
  std::erase_if(spec.mounts, [](const Mount& mount) { return mount.target != kSupervisorPath; });
  spec.workdir = std::string(kDefaultWorkspace);
  std::vector<Mount> claims;
  if (auto code = KubernetesMounts(docker, r.kubernetes, volume_labels, spec.name, spec.mounts,
                                   claims, pending)) {
    return *code;
  }
  spec.labels[kClaims] = MountsJson(claims);
  if (!pending) spec.mounts.insert(spec.mounts.end(), claims.begin(), claims.end());
  return std::nullopt;
}

// Runs the pod: unschedulable while a claim is missing (the CLI waits and
// times out, the sandbox stays Provisioning); else the volumes prepared as
// kubelet and workspace-init prepare them, then the container.
std::optional<int> StartPod(Docker& docker, const ContainerSpec& spec, const std::string& container,
                            bool pending) {
  if (pending) return WaitUnschedulable();
  if (std::string problem = PreparePodVolumes(docker, spec.image, spec.mounts); !problem.empty()) {
    return PrintError(GrpcError("Internal", "workspace-init: " + problem));
  }
  DockerReply reply = docker.Call("POST", "/containers/" + container + "/start");
  if (!Answered(reply, {204, 304})) return DockerFailed("start Docker container", reply);
  return std::nullopt;
}

// After the create: the sandbox as JSON, or the main process attached, or a
// command of the releases before 0.0.111 run once; the create's exit code.
int AfterCreate(Docker& docker, const Context& ctx, const CreateRequest& r, ContainerSpec& spec,
                const std::string& name, const std::string& container, bool command_is_main) {
  std::string error;
  if (r.format == "json") {
    std::fputs("Provisioning sandbox (structured output on stdout)...\n", stderr);
    auto sandbox = FindSandbox(docker, ctx, name, error);
    if (!sandbox)
      return PrintError(GrpcError("Internal", error.empty() ? "sandbox vanished" : error));
    Print(SandboxJson(*sandbox, ctx.version, false));
    return 0;
  }
  Print(fmt::format("\nCreated sandbox: {}\n\n", name));
  // With a terminal on stdin and stdout and no --detach, the CLI stays
  // attached to the main process (v0.0.111 run.rs sandbox_create: persistent
  // creates detach only without a terminal; ssh.rs exec_or_wait).
  if (command_is_main && !r.args.Has("detach") && ::isatty(STDIN_FILENO) &&
      ::isatty(STDOUT_FILENO)) {
    return AttachToMain(docker, ctx, container);
  }
  if (!command_is_main && !r.args.command.empty()) {
    // The CLI runs the command with the host's `ssh` (ProxyCommand
    // `openshell ssh-proxy`) and fails the create when ssh cannot be run or
    // exits non-zero; the sandbox stays, as the create is persistent (v0.0.92
    // crates/openshell-cli/src/run.rs sandbox_create, finalize_sandbox_
    // create_session; ssh.rs sandbox_exec_with_mode, exec_or_wait). The SSH
    // server runs it through bash as it runs every exec.
    if (DirOnPath("ssh").empty()) return PrintError("No such file or directory (os error 2)");
    if (!HasBash(docker, container)) {
      return PrintError(
          GrpcError("Unavailable", "exec relay closed before the command reported an exit status"));
    }
    auto code = RunInSandbox(docker, container,
                             ShellArgv(RemoteCommandLine(r.args.command, {}, ""), true, spec.user,
                                       spec.labels[kLandlockRules],
                                       WithTerm(spec.labels[kChildEnvironment], ExecMode::kPiped)),
                             "", 0, error);
    if (!code) return PrintError(GrpcError("Internal", error));
    // Rust's ExitStatus as Display shows it.
    if (*code != 0) return PrintError(fmt::format("ssh exited with status exit status: {}", *code));
  }
  return 0;
}

}  // namespace

int SandboxCreate(const Context& ctx, const std::vector<std::string>& argv) {
  CreateRequest r;
  if (auto code = ReadCreateFlags(ctx, argv, r)) return *code;
  if (auto code = ReadCreateInputs(ctx, r)) return *code;
  std::vector<Mount> mounts;
  if (auto code = GatewayChecks(ctx, r, mounts)) return *code;

  std::string error;
  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  std::string image_user;
  if (auto code = CheckImageAndMounts(*docker, r.image, mounts, image_user)) return *code;
  auto bridge_gateway = NetworkGateway(*docker, ctx.options.network, error);
  if (!bridge_gateway) return PrintError(GrpcError("Internal", error));
  const std::string host_alias = HostAlias(*docker, ctx, *bridge_gateway);

  // An empty name gets a generated one: petname, cut to 19 from 0.0.88
  // (v0.0.111 grpc/sandbox.rs generate_routable_name).
  const std::string requested_name = r.args.Last("name");
  const std::string name = requested_name.empty() ? "sandbox-" + RandomHex(8) : requested_name;
  // From 0.0.111 a trailing command is the sandbox's main process: when it
  // ends, the container stops (phase Error; from 0.1.0 Completed on exit 0).
  // Before, the sandbox idles and the command runs once over SSH after Ready.
  const bool command_is_main = ctx.version >= Release(111) && !r.args.command.empty();
  ContainerSpec spec;
  if (auto code = PlaceContainer(ctx, r, name, host_alias, mounts, spec)) return *code;
  if (auto code = ProcessOfContainer(ctx, r, image_user, command_is_main, spec)) return *code;
  LabelContainer(ctx, r, name, command_is_main, spec);
  bool pending = false;
  if (IsKubernetes(ctx)) {
    if (auto code = PlacePod(*docker, r, spec, pending)) return *code;
  }
  std::string container;
  if (auto code = CreateContainer(*docker, spec, name, container, !IsKubernetes(ctx))) {
    return *code;
  }
  if (IsKubernetes(ctx)) {
    if (auto code = StartPod(*docker, spec, container, pending)) return *code;
  }
  return AfterCreate(*docker, ctx, r, spec, name, container, command_is_main);
}

}  // namespace mojoup::fake_openshell
