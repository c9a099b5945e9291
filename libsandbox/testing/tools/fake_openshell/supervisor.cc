// fake-openshell-sandbox: what fake-openshell mounts at OpenShell's
// supervisor path in each sandbox (/opt/openshell/bin/openshell-sandbox,
// v0.0.92 and v0.0.111 crates/openshell-core, SUPERVISOR_CONTAINER_BINARY),
// playing the parts of the supervisor a sandbox's commands meet: the
// container's entrypoint with its network, and how each exec's command is
// spawned and its end reported.
//
//   openshell-sandbox run [--user U[:G]] [--env ENV] [--network RULES]
//                         [--upstream-ca PEM] -- [MAIN...]
//   openshell-sandbox exec [--user U[:G]] [--env ENV] [--landlock RULES] -- PROGRAM ARGS...
//
// ENV is fake-openshell's ChildEnvironment() with the exec's TERM; RULES
// its NetworkRules() and LandlockRules() of the sandbox's policy; U[:G] whom
// the policy (or the image) runs commands as.
//
// `run` is the container's entrypoint, as root (v0.0.111
// crates/openshell-sandbox/src/lib.rs run_sandbox; crates/openshell-
// supervisor-network/src/run.rs): it makes the sandbox's ephemeral CA and
// writes it for the child, makes the child's network namespace with the
// proxy its only way out (sandbox_proxy.h), starts the main process in it
// (none: it idles), and reaps every child, as pid 1 must.
//
// `exec` is what the supervisor's SSH server does for each exec (v0.0.111
// crates/openshell-supervisor-process/src/ssh.rs; v0.0.92 the same file):
// - the command is a child of the supervisor, which stays;
// - under a terminal (spawn_pty_shell, install_pre_exec) the child gets a
//   session of its own with the terminal as its controlling terminal, so a
//   ^C reaches the command and never the supervisor. Here the terminal is
//   Docker's exec's, whose session this program leads, so the child takes
//   a process group of its own and makes it the terminal's foreground: the
//   same reach. Without a terminal (spawn_pipe_exec,
//   install_pre_exec_no_pty) it is spawned as it is;
// - the child enters the sandbox's network namespace, then drops to the
//   policy's user, then is confined (enter_netns_and_sandbox);
// - no signal is passed on to it, and none is sent when the channel closes;
// - it gets a cleared environment, the supervisor's (ENV: "set K=V" lines,
//   "pass NAME" for a sandbox variable whose value is this process's, then
//   "proxy" and "tls" for the proxy's and the CA's variables), so the
//   image's ENV never reaches it (ssh.rs apply_child_env);
// - its end is reported as `status.code().unwrap_or(1)`: the code it exited
//   with, or 1 when a signal killed it;
// - with a policy, the child is confined by Landlock before it runs
//   (ssh.rs pre_exec: sandbox::linux::prepare as root, then enforce after
//   the drop; v0.0.111 crates/openshell-supervisor-process/src/sandbox/
//   linux/landlock.rs): a ruleset that handles every ABI v2 access right;
//   read_only paths get the read rights (execute, read file, read
//   directory), read_write paths all of them, each masked to the file
//   rights for a path that is not a directory; the release's baseline paths
//   are added where they exist and the policy does not list them
//   (crates/openshell-sandbox/src/lib.rs enrich_proto_baseline_paths). A
//   policy path that cannot be opened is skipped under best_effort and
//   fails the exec under hard_requirement, with the real message; how the
//   CLI reports a spawn that failed is not modelled (the message, then
//   exit 1).
// Statically linked, with OpenSSL's archives, so that it runs in any image.

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sandbox_proxy.h"

namespace {

constexpr std::uint64_t kAllV2 = (LANDLOCK_ACCESS_FS_REFER << 1) - 1;
constexpr std::uint64_t kRead =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr std::uint64_t kFile =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;

struct Rules {
  bool hard = false;
  std::vector<std::string> read_only, read_write;
};

bool Has(const std::vector<std::string>& paths, const std::string& path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

Rules Parse(const std::string& text) {
  Rules rules;
  std::vector<std::string> baseline_ro, baseline_rw;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string kind = line.substr(0, space);
    const std::string value = line.substr(space + 1);
    if (kind == "compatibility") rules.hard = value == "hard_requirement";
    if (kind == "ro") rules.read_only.push_back(value);
    if (kind == "rw") rules.read_write.push_back(value);
    if (kind == "baseline-ro") baseline_ro.push_back(value);
    if (kind == "baseline-rw") baseline_rw.push_back(value);
  }
  struct stat info {};
  for (const std::string& path : baseline_ro) {
    if (!Has(rules.read_only, path) && !Has(rules.read_write, path) &&
        ::stat(path.c_str(), &info) == 0) {
      rules.read_only.push_back(path);
    }
  }
  for (const std::string& path : baseline_rw) {
    if (!Has(rules.read_write, path) && !Has(rules.read_only, path) &&
        ::stat(path.c_str(), &info) == 0) {
      rules.read_write.push_back(path);
    }
  }
  return rules;
}

// landlock.rs classify_io_error.
const char* Reason(int error) {
  switch (error) {
    case ENOENT:
      return "path does not exist";
    case EACCES:
      return "permission denied";
    case ELOOP:
      return "too many symlink levels";
    case ENAMETOOLONG:
      return "path name too long";
    case ENOTDIR:
      return "path component is not a directory";
    default:
      return "unexpected error";
  }
}

// Prepares the ruleset as the supervisor, before the child drops its
// privileges (landlock.rs prepare: the paths are opened as root); -1 when
// there is nothing to enforce. False (with the reason printed) when the
// exec must fail.
bool PrepareLandlock(const Rules& rules, int& ruleset) {
  ruleset = -1;
  if (rules.read_only.empty() && rules.read_write.empty()) return true;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = kAllV2;
  const int made = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (made < 0) {
    if (!rules.hard) return true;
    std::fprintf(stderr, "Landlock unavailable in hard_requirement mode: errno %d\n", errno);
    return false;
  }
  std::size_t applied = 0;
  auto add = [&](const std::string& path, std::uint64_t access) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (!rules.hard) return true;
      const int error = errno;
      std::fprintf(stderr,
                   "Landlock path unavailable in hard_requirement mode: %s (%s): %s (os error "
                   "%d)\n",
                   path.c_str(), Reason(error), std::strerror(error), error);
      return false;
    }
    struct stat info {};
    if (::fstat(fd, &info) == 0 && !S_ISDIR(info.st_mode)) access &= kFile;
    landlock_path_beneath_attr beneath{};
    beneath.allowed_access = access;
    beneath.parent_fd = fd;
    const long added =
        ::syscall(SYS_landlock_add_rule, made, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    ::close(fd);
    if (added == 0) ++applied;
    return true;
  };
  for (const std::string& path : rules.read_only) {
    if (!add(path, kRead)) return ::close(made), false;
  }
  for (const std::string& path : rules.read_write) {
    if (!add(path, kAllV2)) return ::close(made), false;
  }
  if (applied == 0) {
    ::close(made);
    if (!rules.hard) return true;
    std::fprintf(stderr,
                 "Landlock ruleset has zero valid paths — all %zu path(s) failed to open. "
                 "Refusing to apply an empty ruleset that would block all filesystem access.\n",
                 rules.read_only.size() + rules.read_write.size());
    return false;
  }
  ruleset = made;
  return true;
}

// In the child, after the privileges are dropped (ssh.rs
// enter_netns_and_sandbox: sandbox::linux::enforce).
bool EnforceLandlock(int ruleset, bool hard) {
  if (ruleset < 0) return true;
  const long restricted = ::syscall(SYS_landlock_restrict_self, ruleset, 0);
  ::close(ruleset);
  if (restricted != 0 && hard) {
    std::fprintf(stderr, "Landlock restrict_self failed: %s\n", std::strerror(errno));
    return false;
  }
  return true;
}

// The child's environment from ENV's lines, with the proxy's variables
// ("proxy": child_env.rs proxy_env_vars) and the CA's ("tls":
// tls_env_vars, when the supervisor wrote its CA) where ENV places them, as
// apply_child_env applies them after the sandbox's own.
std::vector<std::string> ChildEnvironment(const std::string& text) {
  std::vector<std::string> entries;
  std::istringstream lines(text);
  const std::string proxy = std::string("http://") + openshell_sandbox::kProxyAddress + ":" +
                            std::to_string(openshell_sandbox::kProxyPort);
  auto set = [&](const std::string& name, const std::string& value) {
    const std::string prefix = name + "=";
    std::erase_if(entries, [&](const std::string& e) { return e.starts_with(prefix); });
    entries.push_back(prefix + value);
  };
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("set ")) {
      const std::string entry = line.substr(4);
      set(entry.substr(0, entry.find('=')), entry.substr(entry.find('=') + 1));
    } else if (line.starts_with("pass ")) {
      const std::string name = line.substr(5);
      if (const char* value = std::getenv(name.c_str()); value != nullptr) set(name, value);
    } else if (line == "proxy") {
      for (const char* name :
           {"ALL_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "grpc_proxy"}) {
        set(name, proxy);
      }
      set("NO_PROXY", "127.0.0.1,localhost,::1");
      set("no_proxy", "127.0.0.1,localhost,::1");
      set("NODE_USE_ENV_PROXY", "1");
    } else if (line == "tls" && ::access(openshell_sandbox::kCaBundlePath, R_OK) == 0) {
      for (const char* name : {"NODE_EXTRA_CA_CERTS", "DENO_CERT"}) {
        set(name, openshell_sandbox::kCaCertPath);
      }
      for (const char* name :
           {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}) {
        set(name, openshell_sandbox::kCaBundlePath);
      }
    }
  }
  return entries;
}

// --- Who the child runs as ---

struct Identity {
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

std::optional<unsigned long> Number(const std::string& text) {
  if (text.empty() || text.size() > 10 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoul(text);
}

// The NAME line of FILE (/etc/passwd, /etc/group), split at ':'.
std::vector<std::string> DatabaseEntry(const char* file, const std::string& key, int column) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string field; std::getline(parts, field, ':');) fields.push_back(field);
    if (static_cast<int>(fields.size()) > column + 2 && fields[column] == key) return fields;
  }
  return {};
}

// SPEC: USER[:GROUP], each a number or a name in the image's /etc/passwd
// and /etc/group; "" is sandbox:sandbox, never root (process.rs
// drop_privileges_with_identity: "fall back to sandbox:sandbox instead of
// silently keeping root").
std::optional<Identity> ResolveIdentity(const std::string& given) {
  Identity identity;
  const std::string spec = given.empty() ? "sandbox:sandbox" : given;
  identity.drop = true;
  const std::string user = spec.substr(0, spec.find(':'));
  const std::string group =
      spec.find(':') == std::string::npos ? "" : spec.substr(spec.find(':') + 1);
  std::vector<std::string> passwd;
  if (auto uid = Number(user)) {
    identity.uid = static_cast<uid_t>(*uid);
    passwd = DatabaseEntry("/etc/passwd", user, 2);
  } else {
    passwd = DatabaseEntry("/etc/passwd", user, 0);
    if (passwd.empty()) return std::nullopt;
    identity.uid = static_cast<uid_t>(std::stoul(passwd[2]));
  }
  if (auto gid = Number(group)) {
    identity.gid = static_cast<gid_t>(*gid);
  } else if (!group.empty()) {
    const std::vector<std::string> entry = DatabaseEntry("/etc/group", group, 0);
    if (entry.empty()) return std::nullopt;
    identity.gid = static_cast<gid_t>(std::stoul(entry[2]));
  } else {
    identity.gid = passwd.empty() ? identity.uid : static_cast<gid_t>(std::stoul(passwd[3]));
  }
  return identity;
}

// drop_privileges_with_identity (ssh.rs, process.rs): the groups, the gid,
// then the uid. The image's supplementary groups for the user are not
// looked up: the child has its primary group only.
bool DropPrivileges(const Identity& identity) {
  if (!identity.drop) return true;
  if (::setgroups(1, &identity.gid) != 0 || ::setgid(identity.gid) != 0 ||
      ::setuid(identity.uid) != 0) {
    std::fprintf(stderr, "openshell-sandbox: cannot drop privileges to %u:%u: %s\n", identity.uid,
                 identity.gid, std::strerror(errno));
    return false;
  }
  return true;
}

// --- The child's network namespace ---

// Where the namespace's holder leaves its pid, for each exec to enter it.
constexpr const char* kRunDir = "/run/openshell";
constexpr const char* kNetnsPidFile = "/run/openshell/netns.pid";

// The real supervisor gives the child a namespace of its own joined to the
// container's by a veth pair, 10.200.0.2 on the child's side and the proxy
// on 10.200.0.1, and nftables rejects everything but the proxy (netns/
// mod.rs create, install_bypass_rules; nft_ruleset.rs). Here the namespace
// has only its loopback, carrying 10.200.0.1 where the proxy listens: the
// proxy alone is reachable and every other address is unreachable, as the
// rules make it. The listening socket is made inside and handed out; the
// holder stays to keep the namespace.
bool MakeNetns(int& listener, std::string& error) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0) {
    error = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  const pid_t holder = ::fork();
  if (holder < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (holder == 0) {
    ::close(pair[0]);
    int fd = -1;
    if (::unshare(CLONE_NEWNET) == 0) {
      const int control = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      ifreq lo{};
      std::strcpy(lo.ifr_name, "lo");
      ::ioctl(control, SIOCGIFFLAGS, &lo);
      lo.ifr_flags |= IFF_UP | IFF_RUNNING;
      ::ioctl(control, SIOCSIFFLAGS, &lo);
      ifreq alias{};
      std::strcpy(alias.ifr_name, "lo:0");
      auto* address = reinterpret_cast<sockaddr_in*>(&alias.ifr_addr);
      address->sin_family = AF_INET;
      ::inet_pton(AF_INET, openshell_sandbox::kProxyAddress, &address->sin_addr);
      ::ioctl(control, SIOCSIFADDR, &alias);
      ::inet_pton(AF_INET, "255.255.255.255", &address->sin_addr);
      ::ioctl(control, SIOCSIFNETMASK, &alias);
      ::close(control);
      sockaddr_in bound{};
      bound.sin_family = AF_INET;
      bound.sin_port = htons(openshell_sandbox::kProxyPort);
      ::inet_pton(AF_INET, openshell_sandbox::kProxyAddress, &bound.sin_addr);
      fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) != 0 ||
          ::listen(fd, 512) != 0) {
        ::close(fd);
        fd = -1;
      }
    }
    const int failure = fd < 0 ? errno : 0;
    char data[sizeof(int)];
    std::memcpy(data, &failure, sizeof failure);
    iovec io{data, sizeof data};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    if (fd >= 0) {
      message.msg_control = control;
      message.msg_controllen = sizeof control;
      cmsghdr* header = CMSG_FIRSTHDR(&message);
      header->cmsg_level = SOL_SOCKET;
      header->cmsg_type = SCM_RIGHTS;
      header->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    }
    ::sendmsg(pair[1], &message, 0);
    if (fd < 0) ::_exit(1);
    ::close(fd);
    for (;;) ::pause();
  }
  ::close(pair[1]);
  int failure = 0;
  iovec io{&failure, sizeof failure};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const long got = ::recvmsg(pair[0], &message, MSG_CMSG_CLOEXEC);
  ::close(pair[0]);
  cmsghdr* header = got > 0 ? CMSG_FIRSTHDR(&message) : nullptr;
  if (header == nullptr || header->cmsg_type != SCM_RIGHTS) {
    error = std::string("cannot make the sandbox's network namespace: ") +
            std::strerror(failure != 0 ? failure : EIO);
    return false;
  }
  std::memcpy(&listener, CMSG_DATA(header), sizeof listener);
  ::mkdir("/run", 0755);
  ::mkdir(kRunDir, 0700);
  // Whole or not at all: written aside, then renamed into place.
  const std::string partial = std::string(kNetnsPidFile) + ".new";
  std::ofstream pid_file(partial, std::ios::trunc);
  pid_file << holder << "\n";
  if (!pid_file.flush() || ::rename(partial.c_str(), kNetnsPidFile) != 0) {
    error = std::string("cannot write ") + kNetnsPidFile + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

// The namespace's file, opened for setns. Proxy mode requires it: an exec
// that comes while the entrypoint is still making it waits up to 10 s,
// then fails closed, as the real supervisor refuses to run without one
// ("Network namespace creation failed and proxy mode requires isolation",
// netns/mod.rs create_netns_for_proxy).
int OpenNetns() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::ifstream file(kNetnsPidFile);
    pid_t holder = 0;
    if (file >> holder && holder > 0) {
      return ::open(("/proc/" + std::to_string(holder) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC);
    }
    ::usleep(100 * 1000);
  }
  return -1;
}

struct Options {
  std::string mode;
  std::string user, landlock, network, upstream_ca;
  std::optional<std::vector<std::string>> environment;
  char** command = nullptr;  // after "--"; may be empty
};

std::optional<Options> ParseOptions(int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  Options options;
  options.mode = argv[1];
  if (options.mode != "exec" && options.mode != "run" && options.mode != "policy") {
    return std::nullopt;
  }
  int at = 2;
  while (at + 1 < argc && std::string_view(argv[at]) != "--") {
    const std::string_view option = argv[at];
    const std::string value = argv[at + 1];
    if (option == "--landlock") {
      options.landlock = value;
    } else if (option == "--env") {
      options.environment = ChildEnvironment(value);
    } else if (option == "--user") {
      options.user = value;
    } else if (option == "--network" && options.mode != "exec") {
      options.network = value;
    } else if (option == "--upstream-ca" && options.mode == "run") {
      options.upstream_ca = value;
    } else {
      return std::nullopt;
    }
    at += 2;
  }
  if (at >= argc || std::string_view(argv[at]) != "--") return std::nullopt;
  options.command = argv + at + 1;
  if (options.mode == "exec" && options.command[0] == nullptr) return std::nullopt;
  if (options.mode == "policy" && options.command[0] != nullptr) return std::nullopt;
  return options;
}

// The live rules, replaced whole (a reader sees the old or the new): at the
// start, and for each revision the gateway hands the supervisor (v0.0.111
// crates/openshell-supervisor-process/src/lib.rs run_policy_poll_loop, which
// reloads the OPA engine; fake-openshell's `policy update` delivers it).
bool WritePolicy(const std::string& rules, std::string& error) {
  ::mkdir("/run", 0755);
  ::mkdir("/run/openshell", 0755);
  const std::string path = openshell_sandbox::kPolicyFile;
  const std::string temporary = path + ".new";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << rules;
    if (!out) {
      error = "cannot write " + temporary;
      return false;
    }
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot replace " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

// Forks the command: into the namespace, then as the identity, then
// confined; its pid, or -1.
pid_t Spawn(const Options& options, const Identity& identity, int ruleset, bool hard,
            bool terminal) {
  std::vector<char*> envp;
  std::vector<std::string> environment = options.environment.value_or(std::vector<std::string>{});
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  const int netns = OpenNetns();
  if (netns < 0) {
    std::fputs(
        "openshell-sandbox: Network namespace creation failed and proxy mode requires "
        "isolation\n",
        stderr);
    return -1;
  }
  const pid_t child = ::fork();
  if (child != 0) {
    if (child < 0) std::fprintf(stderr, "openshell-sandbox: fork: %s\n", std::strerror(errno));
    ::close(netns);
    return child;
  }
  if (terminal && ::setpgid(0, 0) == 0) {
    // From a background group tcsetpgrp stops the caller, unless it
    // blocks SIGTTOU.
    sigset_t ttou;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    ::sigprocmask(SIG_BLOCK, &ttou, nullptr);
    ::tcsetpgrp(STDIN_FILENO, ::getpid());
    ::sigprocmask(SIG_UNBLOCK, &ttou, nullptr);
  }
  if (::setns(netns, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "openshell-sandbox: setns: %s\n", std::strerror(errno));
    ::_exit(1);
  }
  // No privileges regained through a setuid or file-capability program,
  // whatever the container's bounding set (the real child's seccomp filter
  // sets it too: sandbox/linux/seccomp.rs; the filter is not modelled).
  if (!DropPrivileges(identity) || ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      !EnforceLandlock(ruleset, hard)) {
    ::_exit(1);
  }
  char** command = options.command;
  if (options.environment) {
    ::execvpe(command[0], command, envp.data());
  } else {
    ::execvp(command[0], command);
  }
  std::fprintf(stderr, "openshell-sandbox: %s: %s\n", command[0], std::strerror(errno));
  ::_exit(127);
}

// The entrypoint: the CA, the namespace and its proxy, then the main
// process; reaps every child, as pid 1 must, and ends with the main one.
int RunSandbox(const Options& options, const Identity& identity) {
  static openshell_sandbox::SandboxCa ca;
  static openshell_sandbox::ProxyConfig config;
  openshell_sandbox::ParseNetworkRules(options.network, config);
  std::string error = ca.error();
  // Without the file the proxy keeps its first rules, and a policy update
  // fails to load.
  std::string unwritten;
  if (error.empty() && WritePolicy(options.network, unwritten)) {
    config.policy_file = openshell_sandbox::kPolicyFile;
  } else if (!unwritten.empty()) {
    std::fprintf(stderr, "openshell-sandbox: %s\n", unwritten.c_str());
  }
  ::mkdir(openshell_sandbox::kTlsDir, 0755);
  // The test hook's CAs stand in for public ones the image's bundle has.
  std::string system = openshell_sandbox::ReadSystemCaBundle();
  if (!system.empty() && system.back() != '\n') system += '\n';
  system += options.upstream_ca;
  config.trusted_pem = system;
  if (error.empty()) ca.WriteFiles(system, error);
  int listener = -1;
  if (error.empty() && MakeNetns(listener, error)) {
    std::thread([listener] { openshell_sandbox::ServeProxy(listener, config, ca); }).detach();
  }
  if (!error.empty()) {
    std::fprintf(stderr, "openshell-sandbox: %s\n", error.c_str());
    return 1;
  }
  const pid_t main_process =
      options.command[0] == nullptr ? 0 : Spawn(options, identity, -1, false, false);
  for (;;) {
    int status = 0;
    const pid_t ended = ::waitpid(-1, &status, 0);
    if (ended < 0 && errno == EINTR) continue;
    if (ended < 0) {
      ::sleep(1);  // no child now: one may be reparented to pid 1 later
      continue;
    }
    if (main_process > 0 && ended == main_process) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = ParseOptions(argc, argv);
  if (!options) {
    std::fputs(
        "usage: openshell-sandbox run [--user U[:G]] [--env ENV] [--network RULES] "
        "[--upstream-ca PEM] -- [MAIN...]\n"
        "       openshell-sandbox exec [--user U[:G]] [--env ENV] [--landlock RULES] -- "
        "PROGRAM [ARGS...]\n"
        "       openshell-sandbox policy --network RULES --\n",
        stderr);
    return 2;
  }
  if (options->mode == "policy") {
    std::string error;
    if (WritePolicy(options->network, error)) return 0;
    std::fprintf(stderr, "openshell-sandbox: %s\n", error.c_str());
    return 1;
  }
  const std::optional<Identity> identity = ResolveIdentity(options->user);
  // Without the identity no command runs: an exec fails, and so does a
  // sandbox with a main process; one without idles, for execs to fail.
  const bool idle = options->mode == "run" && options->command[0] == nullptr;
  if (!identity) {
    std::fprintf(stderr, "openshell-sandbox: no user or group '%s' in this image\n",
                 options->user.empty() ? "sandbox:sandbox" : options->user.c_str());
    if (!idle) return 1;
  }
  if (options->mode == "run") return RunSandbox(*options, identity.value_or(Identity{}));
  const Rules rules = Parse(options->landlock);
  int ruleset = -1;
  if (!PrepareLandlock(rules, ruleset)) return 1;
  const bool terminal = ::isatty(STDIN_FILENO) != 0;
  const pid_t child = Spawn(*options, *identity, ruleset, rules.hard, terminal);
  if (ruleset >= 0) ::close(ruleset);
  if (child < 0) return 1;
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
