// fake-openshell's parts (see main.cc for what the program is): the options
// and the release it plays, the constants OpenShell uses, and the functions
// one part of the CLI calls in another, grouped by the file that defines them.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mojoup/internal/docker_api_version.h"
#include "mojoup/internal/percent_encode.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"

namespace mojoup::fake_openshell {

using mojoup::internal::PercentEncode;
using mojoup::probe::DockerReply;
using mojoup::probe::DockerReplyProblem;
using StringMap = std::map<std::string, std::string>;

constexpr std::size_t kMaxStdin = 4 * 1024 * 1024;  // the CLI's MAX_STDIN_PAYLOAD
constexpr int kTimedOutExit = 124;
// Where the driver mounts the supervisor (v0.0.92 and v0.0.111
// crates/openshell-core, SUPERVISOR_CONTAINER_BINARY), and this double's
// stand-in for it, found next to this program.
constexpr const char* kSupervisorPath = "/opt/openshell/bin/openshell-sandbox";
constexpr const char* kSupervisorProgram = "fake-openshell-sandbox";

constexpr const char* kManagedBy = "openshell.ai/managed-by";
constexpr const char* kSandboxName = "openshell.ai/sandbox-name";
constexpr const char* kSandboxId = "openshell.ai/sandbox-id";
constexpr const char* kNamespace = "openshell.ai/sandbox-namespace";
constexpr const char* kWorkspace = "openshell.ai/sandbox-workspace";
// The double's own bookkeeping: the --label pairs as given (Docker labels mix
// them with ours) and a pinned phase.
constexpr const char* kUserLabels = "fake-openshell.labels";
constexpr const char* kPinnedPhase = "fake-openshell.phase";
// The providers attached at create, comma-separated.
constexpr const char* kProviders = "fake-openshell.providers";
// Set when the create's trailing command is the container's main process.
constexpr const char* kMainProcess = "fake-openshell.main-process";
constexpr const char* kLandlockRules = "fake-openshell.landlock";      // LandlockRules()
constexpr const char* kChildEnvironment = "fake-openshell.child-env";  // ChildEnvironment()
constexpr const char* kRunAs = "fake-openshell.run-as";  // whom the supervisor runs commands as
// A Kubernetes sandbox's PVC claims as mounts (MountsJson): attached only
// while every claim's volume exists (Docker would make a missing one).
constexpr const char* kClaims = "fake-openshell.claims";
// The PATH the driver gives the supervisor, and so every exec (v0.0.92 and
// v0.0.111 crates/openshell-driver-docker/src/lib.rs SUPERVISOR_PATH).
constexpr const char* kSupervisorSearchPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Where OpenShell keeps its own state inside a sandbox; mounts may not touch.
constexpr std::string_view kReservedRoots[] = {
    "/opt/openshell",         "/etc/openshell", "/etc/openshell-tls", "/run/openshell",
    "/run/openshell-sidecar", "/run/netns",     "/var/run/netns"};
// The workspace when the image declares no WORKDIR.
constexpr std::string_view kDefaultWorkspace = "/sandbox";

constexpr std::string_view kGatewayServer = "https://127.0.0.1:17670";

// What InstallFakeOpenShellSandbox wrote to DIR/fake-openshell.json.
using Options = sandbox::testing::FakeOpenShellSandboxOptions;

struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  friend auto operator<=>(const Version&, const Version&) = default;
};

constexpr Version Release(int patch) { return Version{0, 0, patch}; }
// The 0.1 line (ai-openshell/openshell; release notes only, no source here).
constexpr Version Release01(int patch) { return Version{0, 1, patch}; }
constexpr bool IsZeroOne(const Version& version) { return version >= Release01(0); }

struct Context {
  Options options;
  Version version;             // the CLI's
  Version gateway_version;     // the gateway's (options.gateway_version, else the CLI's)
  std::string namespace_name;  // openshell.ai/sandbox-namespace of this install
  std::string dir;             // the install directory: this gateway's state
  // The gateway the call selected (gateway_select.cc): its metadata's name
  // and endpoint, and is_remote.
  std::string gateway_name;
  std::string gateway_endpoint;
  bool remote = false;
};

struct FlagSpec {
  std::string_view name;  // the long name, without dashes
  char short_name = 0;
  bool takes_value = false;
  Version since{};
  bool modelled = true;
};

struct Grammar {
  std::string_view usage;
  std::vector<FlagSpec> flags;
  std::size_t max_positionals = 0;
  // exec: the first word that is not an option starts the command.
  bool command_at_first_positional = false;
};

struct Args {
  std::map<std::string, std::vector<std::string>, std::less<>> values;
  std::vector<std::string> positionals;
  std::vector<std::string> command;

  bool Has(std::string_view flag) const { return values.find(flag) != values.end(); }
  std::string Last(std::string_view flag) const {
    auto it = values.find(flag);
    return it == values.end() ? std::string() : it->second.back();
  }
  std::vector<std::string> All(std::string_view flag) const {
    auto it = values.find(flag);
    return it == values.end() ? std::vector<std::string>() : it->second;
  }
};

class Docker {
 public:
  Docker(mojoup::probe::DockerEndpoint endpoint, std::unique_ptr<mojoup::probe::DockerApi> api)
      : endpoint_(std::move(endpoint)), api_(std::move(api)) {}

  DockerReply Call(std::string_view method, const std::string& path, std::string_view body = {},
                   std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    return api_->Send(endpoint_, method, std::string(mojoup::internal::kDockerApiPrefix) + path,
                      body, timeout);
  }

  DockerReply Upgrade(const std::string& path, std::string_view body,
                      mojoup::probe::DockerStream& stream) {
    return api_->Upgrade(endpoint_, "POST", std::string(mojoup::internal::kDockerApiPrefix) + path,
                         body, std::chrono::seconds(60), stream);
  }

 private:
  mojoup::probe::DockerEndpoint endpoint_;
  std::unique_ptr<mojoup::probe::DockerApi> api_;
};

struct Sandbox {
  std::string container;
  std::string id;
  std::string name;
  StringMap labels;  // the user's --label pairs
  std::int64_t created = 0;
  std::string phase;
  std::optional<int> exit_code;        // the main process's, once it exited (0.1.0+)
  std::vector<std::string> providers;  // attached with --provider
  std::string landlock;                // LandlockRules() of its policy, "" without one
  std::string child_environment;       // ChildEnvironment() of its create
  std::string run_as;                  // USER[:GROUP] for the supervisor, "" root
};

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

struct ProcessIdentity {
  std::string user;   // run_as_user as written, "" when absent
  std::string group;  // run_as_group
};

struct Mount {
  std::string source;  // a host path; for a volume, its name
  std::string target;
  bool read_only = true;  // the driver's default for binds
  bool volume = false;    // a Docker named volume (never copied into), not a bind
};

// The Kubernetes driver's block of --driver-config-json, decoded.
struct KubernetesVolume {
  std::string name;
  std::string claim;  // persistent_volume_claim.claim_name
  bool read_only = true;
};
struct KubernetesMount {
  std::string name;  // a volume's
  std::string mount_path;
  std::optional<std::string> sub_path;
  bool read_only = true;
};
struct KubernetesConfig {
  std::vector<KubernetesVolume> volumes;
  std::vector<KubernetesMount> mounts;    // containers.agent.volume_mounts
  bool explicit_workspace_mount = false;  // a mount at or under /sandbox
};

// errors.cc
void SetReleaseForErrors(const Version& version);
void Print(std::string_view text);
std::string Report(std::string_view message, const std::vector<std::string>& causes = {});
int PrintError(std::string_view message, const std::vector<std::string>& causes = {});
std::string GrpcError(std::string_view code, std::string_view message);
int ClapError(std::string_view message, std::string_view usage, std::string_view tip = {});
int NotModelled(std::string_view what);

// options.cc
Version ParseVersion(std::string_view text);
// The PATH entry (as written) holding an executable `name`, "" when none
// does: where Command::new(name) would find it.
std::string DirOnPath(const std::string& name);
std::string ProgramDir(const std::string& argv0);
void LogCall(const std::string& dir, const std::vector<std::string>& argv);
bool LoadOptions(const std::string& dir, Options& options, std::string& error);
std::string NamespaceFor(const std::string& dir);
std::string RandomHex(std::size_t digits);
std::string NewSandboxId();

// cli_args.cc
std::string Placeholder(std::string_view name);
std::optional<int> Parse(const std::vector<std::string>& argv, std::size_t first,
                         const Grammar& grammar, const Version& version, Args& args);
std::optional<int> OutputFormat(const Args& args, std::string_view usage, std::string& format);

// gateway_select.cc
// Removes the global -g/--gateway from `argv` and returns its value; `error`
// set when it has none.
std::optional<std::string> TakeGatewayFlag(std::vector<std::string>& argv, std::string& error);
// Fills ctx's gateway as resolve_gateway does; the CLI's error when it does
// not resolve.
std::optional<std::string> SelectGateway(Context& ctx, const std::optional<std::string>& flag);

// gateway.cc
std::optional<int> GatewayRefuses(const Context& ctx, bool creating = false);
int Status(const Context& ctx, const std::vector<std::string>& argv);
int GatewayInfo(const Context& ctx, const std::vector<std::string>& argv);

// docker.cc
std::optional<Docker> ConnectDocker(std::string& error);
bool Answered(const DockerReply& reply, std::initializer_list<int> statuses);
int DockerFailed(std::string_view what, const DockerReply& reply);
int NoDocker(std::string_view why);
void WriteAllWaiting(int fd, const char* data, std::size_t size);

// sandboxes.cc
std::string FormatCreated(std::int64_t seconds);
std::optional<std::vector<Sandbox>> ListSandboxes(Docker& docker, const Context& ctx,
                                                  const std::vector<std::string>& match,
                                                  std::string& error);
std::optional<Sandbox> FindSandbox(Docker& docker, const Context& ctx, const std::string& name,
                                   std::string& error);
// The sandbox a command names (its first positional) once the gateway
// answers, and the Docker it is on; else the exit code, with what was said.
std::optional<int> FindNamedSandbox(const Context& ctx, const Args& args,
                                    std::optional<Docker>& docker, Sandbox& sandbox);
void WriteSandbox(JsonWriter& w, const Sandbox& sandbox, const Version& version, bool detail);
std::string SandboxJson(const Sandbox& sandbox, const Version& version, bool detail);

// exec.cc
// POSIX single quotes unless the word is plain (crates/openshell-core/src/
// forward.rs shell_escape; the gateway's own is the same).
std::string ShellQuote(std::string_view word);
// A Docker exec of `argv` in the container (its id), attached to
// stdout and stderr, to stdin when `stdin_attached`.
std::optional<std::string> CreateExec(Docker& docker, const std::string& container,
                                      const std::vector<std::string>& argv, bool stdin_attached,
                                      bool tty, std::string& error);
std::optional<int> ExecExitCode(Docker& docker, const std::string& exec_id, std::string& error);
// CreateExec, then started and attached: `stream` reads blocking. False
// when Docker refused (`error`).
bool StartExec(Docker& docker, const std::string& container, const std::vector<std::string>& argv,
               bool stdin_attached, bool tty, std::string& exec_id,
               mojoup::probe::DockerStream& stream, std::string& error);
std::string RemoteCommandLine(const std::vector<std::string>& command, const StringMap& env,
                              const std::string& workdir);
enum class ExecMode { kPiped, kTty, kInteractive };
std::optional<int> RunInSandbox(Docker& docker, const std::string& container,
                                const std::vector<std::string>& argv, const std::string& input,
                                unsigned timeout_seconds, std::string& error,
                                ExecMode mode = ExecMode::kPiped);
bool HasBash(Docker& docker, const std::string& container);
std::vector<std::string> ShellArgv(const std::string& line, bool login, const std::string& run_as,
                                   const std::string& landlock, const std::string& environment);
std::string WithTerm(const std::string& child_environment, ExecMode mode);
int SandboxExec(const Context& ctx, const std::vector<std::string>& argv);

// env_labels.cc
StringMap ParseEnv(const std::vector<std::string>& items, std::string& error);
std::string LabelProblem(const std::string& key, const std::string& value);
std::string SandboxNameProblem(const std::string& name, const Version& version);

// process_identity.cc
std::string Trim(std::string_view text);
std::string Unquote(std::string text);
ProcessIdentity ReadProcessIdentity(const std::string& yaml);
std::optional<std::uint32_t> NumericId(const std::string& text);
std::string IdentityProblem(std::string_view field, const std::string& value,
                            const Version& version);

// filesystem_policy.cc
// The rules the supervisor builds an exec's Landlock ruleset from, one per
// line: "compatibility C", then "ro P" / "rw P" from the policy, then the
// release's "baseline-ro P" / "baseline-rw P".
std::string LandlockRules(const std::string& yaml, const Version& version);
std::string TldWildcardProblem(const std::string& yaml);

// network_policy.cc
// The rules the sandbox's proxy enforces, one per endpoint and port:
// "allow KEY HOST PORT [CIDR,...]".
std::string NetworkRules(const std::string& yaml);
std::string TcpEndpointProblem(const std::string& yaml);

// mounts.cc
bool PathIsOrUnder(std::string_view path, std::string_view parent);
// driver_mounts::validate_container_mount_target: "" (and `normalized`
// set) when the target is valid, else why not.
std::string TargetProblem(const std::string& target, std::string& normalized);
std::string ReadDockerMounts(const rapidjson::Value& config, bool enable_bind_mounts,
                             std::string_view admission_refusal, std::vector<Mount>& mounts);

// kubernetes_config.cc
// The `kubernetes` block of a create's --driver-config-json as the
// Kubernetes driver reads it: "" with `config` filled, or the gateway's error.
std::string ReadKubernetesConfig(const rapidjson::Value& driver_config, KubernetesConfig& config);

// kubernetes.cc
bool IsKubernetes(const Context& ctx);
// The Docker volume playing the sandbox's workspace PVC, labelled with it.
std::string WorkspaceVolumeName(const std::string& container_name);
// The block's claims as mounts of Docker volumes of the claims' names
// (`claims`; `pending` when one has no such volume) and the workspace's in
// `mounts`, unless a mount takes over /sandbox; the exit code when the fake
// cannot play them.
std::optional<int> KubernetesMounts(Docker& docker, const KubernetesConfig& config,
                                    const StringMap& volume_labels,
                                    const std::string& container_name, std::vector<Mount>& mounts,
                                    std::vector<Mount>& claims, bool& pending);
// Mounts as Docker's HostConfig.Mounts (binds, or named volumes Docker
// never fills), and named-volume mounts back.
std::string MountsJson(const std::vector<Mount>& mounts);
std::optional<Mount> VolumeMountOf(const rapidjson::Value& mount);
std::vector<Mount> VolumeMounts(const rapidjson::Value& mounts);
// Whether each mount's volume exists (a claim Docker would otherwise make).
bool VolumesExist(Docker& docker, const std::vector<Mount>& mounts);
// What kubelet and the workspace-init container do before the pod's
// container starts (fsGroup ownership of the writable volumes, the
// workspace seeded once from the image's /sandbox): "" or what failed.
std::string PreparePodVolumes(Docker& docker, const std::string& image,
                              const std::vector<Mount>& mounts);
// A sandbox whose claim is missing: never Ready; the CLI's wait ends at
// OPENSHELL_PROVISION_TIMEOUT (default 300 s). Returns the exit code.
int WaitUnschedulable();
// Waits the seconds environment `variable` says (else 300), as the CLI's
// watch does for a phase that never comes, then fails with
// `message(seconds)`.
int WaitOut(const char* variable, const std::function<std::string(unsigned)>& message);
// Removes the named volumes labelled with the sandbox: false (and `error`)
// when Docker fails.
bool RemoveSandboxVolumes(Docker& docker, const Context& ctx, const Sandbox& sandbox,
                          std::string& error);
int SandboxStop(const Context& ctx, const std::vector<std::string>& argv);
int SandboxStart(const Context& ctx, const std::vector<std::string>& argv);
// The fake's own test hook: a gateway restart, every pod recreated.
int RestartGateway(const Context& ctx, const std::vector<std::string>& argv);

// transfer.cc
// An upload's or download's NAME, SECOND and optional DEST (clap's
// positionals; after `--` too): the exit code of a grammar error.
std::optional<int> TransferPositionals(Args& args, std::string_view usage, std::string_view second);
int SandboxUpload(const Context& ctx, const std::vector<std::string>& argv);
int SandboxDownload(const Context& ctx, const std::vector<std::string>& argv);

// create.cc
int SandboxCreate(const Context& ctx, const std::vector<std::string>& argv);

// list_get.cc
std::optional<unsigned> ParseCount(const Args& args, std::string_view flag, std::string_view usage,
                                   unsigned fallback, int& exit_code);
int SandboxList(const Context& ctx, const std::vector<std::string>& argv);
int NotFound();
int SandboxGet(const Context& ctx, const std::vector<std::string>& argv);

// providers.cc
struct Provider {
  std::string id;
  std::string name;
  std::string type;
  StringMap credentials;  // key -> value; never shown, never put in a sandbox
  StringMap config;
  std::int64_t created_ms = 0;
};
std::optional<Provider> FindProvider(const Context& ctx, const std::string& name);
bool IsProviderType(const std::string& name);
// KEY -> the placeholder a sandbox sees instead of the value.
StringMap ProviderPlaceholders(const std::vector<Provider>& providers);
int ProviderCommand(const Context& ctx, const std::vector<std::string>& argv);

// delete.cc
int SandboxDelete(const Context& ctx, const std::vector<std::string>& argv);

// policy_logs.cc
int PolicyUpdate(const Context& ctx, const std::vector<std::string>& argv);
int Logs(const Context& ctx, const std::vector<std::string>& argv);

}  // namespace mojoup::fake_openshell
