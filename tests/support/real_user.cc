#include "real_user.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "sandbox_image.h"

namespace mojoup::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUserName = "mojoup-tester";
// A second user in the docker group: two people sharing one node.
constexpr const char* kSecondName = "mojoup-tester2";
// A second local user, outside the docker group: the attacker next door.
constexpr const char* kOutsiderName = "mojoup-outsider";
constexpr const char* kDockerGroup = "docker";

std::string RandomSuffix() {
  std::random_device random;
  char text[16];
  std::snprintf(text, sizeof text, "%08x", random());
  return text;
}

Run RunPlain(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  auto runner = probe::MakeSystemCommandRunner();
  auto start = std::chrono::steady_clock::now();
  Run run;
  run.result = runner->Run(argv, timeout);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

bool InGroup(const passwd& entry, gid_t group) {
  int count = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  if (getgrouplist(entry.pw_name, entry.pw_gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<std::size_t>(count));
    if (getgrouplist(entry.pw_name, entry.pw_gid, groups.data(), &count) < 0) return false;
  }
  groups.resize(static_cast<std::size_t>(count));
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

// Creates the user `name` (as root) if needed; "" when it is there and in
// the docker group (`docker`) or outside it (!`docker`).
std::string EnsureUser(const char* name, bool docker) {
  const group* docker_group = getgrnam(kDockerGroup);
  if (docker_group == nullptr) {
    return "there is no docker group (Debian's docker.io creates it), so no user can be given "
           "access to Docker as node operators have it";
  }
  const gid_t docker_gid = docker_group->gr_gid;
  // Test processes may start side by side: one creates, the others wait.
  int lock = open("/tmp/mojoup-tester.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0666);
  if (lock >= 0) flock(lock, LOCK_EX);
  std::string why;
  const passwd* entry = getpwnam(name);
  if (entry == nullptr) {
    if (geteuid() != 0) {
      why = std::string("needs the user ") + name +
            (docker ? " (in the docker group, with a home)"
                    : " (with a home, outside the docker group)") +
            "; run the tests once as root, which creates it";
    } else {
      std::vector<std::string> argv{"useradd",    "--create-home",
                                    "--home-dir", std::string("/home/") + name,
                                    "--shell",    "/bin/sh"};
      if (docker) argv.insert(argv.end(), {"--groups", kDockerGroup});
      argv.push_back(name);
      Run made = RunPlain(argv, std::chrono::seconds(30));
      if (made.result.exit_code != 0) why = "useradd failed: " + made.result.err;
    }
  } else if (InGroup(*entry, docker_gid) != docker) {
    if (geteuid() != 0) {
      why =
          std::string(name) + (docker ? " is not in the docker group" : " is in the docker group");
    } else {
      Run changed =
          docker ? RunPlain({"usermod", "--append", "--groups", kDockerGroup, name},
                            std::chrono::seconds(30))
                 : RunPlain({"gpasswd", "--delete", name, kDockerGroup}, std::chrono::seconds(30));
      if (changed.result.exit_code != 0) why = "changing its groups failed: " + changed.result.err;
    }
  }
  if (lock >= 0) close(lock);
  return why;
}

// Copies this build's programs into the user's own directory, as an
// installation would put them; the copy is replaced atomically.
std::string InstallPrograms(const RealUser& user) {
  std::error_code ec;
  fs::create_directories(user.bin, ec);
  if (ec) return "cannot create " + user.bin + ": " + ec.message();
  if (chown(user.bin.c_str(), user.uid, user.gid) != 0 && geteuid() == 0) {
    return "cannot give " + user.bin + " to " + user.name;
  }
  for (const char* program : {"mojoup-node", "mojoup-sandbox-init"}) {
    const std::string from = BinDir() + "/" + program;
    const std::string to = user.bin + "/" + program;
    const std::string temporary = to + ".new-" + std::to_string(getpid());
    fs::copy_file(from, temporary, fs::copy_options::overwrite_existing, ec);
    if (ec) return "cannot copy " + from + ": " + ec.message();
    if (geteuid() == 0 && chown(temporary.c_str(), user.uid, user.gid) != 0) {
      return "cannot give " + temporary + " to " + user.name;
    }
    chmod(temporary.c_str(), 0755);
    fs::rename(temporary, to, ec);
    if (ec) return "cannot install " + to + ": " + ec.message();
  }
  return "";
}

}  // namespace

namespace {

// The user `name`, made once per process; nullptr with `reason` set.
RealUser* MakeUser(const char* name, bool docker, bool programs, std::string& reason) {
  reason = EnsureUser(name, docker);
  if (!reason.empty()) return nullptr;
  const passwd* entry = getpwnam(name);
  if (entry == nullptr) {
    reason = std::string("the user ") + name + " vanished";
    return nullptr;
  }
  if (geteuid() != 0 && geteuid() != entry->pw_uid) {
    reason = std::string("running as another user needs root (or run the tests as ") + name + ")";
    return nullptr;
  }
  auto* made = new RealUser;
  made->name = entry->pw_name;
  made->uid = entry->pw_uid;
  made->gid = entry->pw_gid;
  made->home = entry->pw_dir;
  made->bin = made->home + "/.mojoup-test-bin";
  if (programs) reason = InstallPrograms(*made);
  if (!reason.empty()) return nullptr;
  return made;
}

}  // namespace

const RealUser* RealUser::Get(std::string& why) {
  static std::string reason;
  static const RealUser* user = MakeUser(kUserName, true, true, reason);
  if (user == nullptr) why = reason;
  return user;
}

const RealUser* RealUser::Second(std::string& why) {
  static std::string reason;
  static const RealUser* user = MakeUser(kSecondName, true, true, reason);
  if (user == nullptr) why = reason;
  return user;
}

const RealUser* RealUser::Outsider(std::string& why) {
  static std::string reason;
  static const RealUser* user = MakeUser(kOutsiderName, false, false, reason);
  if (user == nullptr) why = reason;
  return user;
}

std::vector<std::string> RealUser::Environment() const {
  return {"HOME=" + home, "USER=" + name, "LOGNAME=" + name,
          "PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"};
}

std::vector<std::string> RealUser::Prefix(const std::vector<std::string>& env,
                                          const std::string& cwd) const {
  std::vector<std::string> argv;
  if (geteuid() != uid) {
    argv = {"setpriv",       "--reuid", std::to_string(uid), "--regid", std::to_string(gid),
            "--init-groups", "--"};
  }
  argv.insert(argv.end(), {"env", "-i", "-C", cwd.empty() ? home : cwd});
  for (const std::string& entry : Environment()) argv.push_back(entry);
  argv.insert(argv.end(), env.begin(), env.end());
  return argv;
}

Run RealUser::As(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                 std::chrono::milliseconds timeout, const std::string& cwd) const {
  std::vector<std::string> full = Prefix(env, cwd);
  full.insert(full.end(), argv.begin(), argv.end());
  return RunPlain(full, timeout);
}

void RealUser::Write(const std::string& path, const std::string& text, mode_t mode) const {
  const std::string parent = fs::path(path).parent_path().string();
  Run made = As({"mkdir", "-p", parent});
  if (made.result.exit_code != 0)
    throw std::runtime_error("mkdir " + parent + ": " + made.result.err);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
  }
  if (geteuid() == 0 && chown(path.c_str(), uid, gid) != 0) {
    throw std::runtime_error("cannot give " + path + " to " + name);
  }
  chmod(path.c_str(), mode);
}

std::vector<std::string> RealUser::Pwned() const {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(home)) {
    if (entry.path().filename().string().rfind("pwned", 0) == 0) {
      found.push_back(entry.path().string());
    }
  }
  return found;
}

void RealUser::ClearPwned() const {
  for (const std::string& path : Pwned()) fs::remove(path);
}

std::string Described(const Run& run) {
  return "exit " + std::to_string(run.result.exit_code) + "\nstdout:\n" + run.result.out +
         "\nstderr:\n" + run.result.err;
}

UserNode::UserNode(const RealUser& owner, const std::string& image) : user(owner) {
  const std::string suffix = RandomSuffix();
  root = user.home + "/.mojoup-test-" + suffix;
  repo = user.home + "/src/project-" + suffix;
  config = root + "/node.json";
  state = root + "/state";
  user.Write(config,
             "{\"node.sandbox.engine\": \"docker\", \"node.sandbox.role\": true, "
             "\"node.sandbox.runtime\": \"native\", \"node.sandbox.image\": \"" +
                 (image.empty() ? std::string(kSandboxImage) : image) +
                 "\", \"node.sandbox.allowed_users\": \"" + user.name + "\"}\n");
  user.Write(repo + "/README", "a project\n");
  for (const std::vector<std::string>& git : {std::vector<std::string>{"init", "-q", "-b", "main"},
                                              {"config", "user.email", "tester@example.com"},
                                              {"config", "user.name", "Tester"},
                                              {"add", "README"},
                                              {"commit", "-q", "-m", "first"}}) {
    Run ran = Git(git);
    if (ran.result.exit_code != 0)
      throw std::runtime_error("git " + git[0] + ": " + ran.result.err);
  }
  env = {"MOJOUP_NODE_CONFIG=" + config, "MOJOUP_STATE_DIR=" + state, "NO_COLOR=1"};
}

UserNode::~UserNode() {
  std::error_code ec;
  fs::remove_all(repo, ec);
  fs::remove_all(root, ec);
}

void UserNode::Policy(const std::string& json) const {
  user.Write(repo + "/.mojoup/policy.json", json);
}

Run UserNode::Cli(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
                  std::chrono::milliseconds timeout, const std::string& cwd) const {
  std::vector<std::string> argv{user.bin + "/mojoup-node"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> all = env;
  all.insert(all.end(), extra_env.begin(), extra_env.end());
  return user.As(argv, all, timeout, cwd.empty() ? repo : cwd);
}

Run UserNode::Sh(const std::string& script, const std::vector<std::string>& flags,
                 const std::vector<std::string>& extra_env) const {
  std::vector<std::string> args{"run", "--repo", repo};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "/bin/sh", "-c", script});
  return Cli(args, extra_env);
}

Run UserNode::Git(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{"git"};
  argv.insert(argv.end(), args.begin(), args.end());
  return user.As(argv, {}, std::chrono::seconds(30), repo);
}

std::size_t UserNode::Leftovers() const {
  std::size_t left = 0;
  if (auto ids = ContainersLabelled("mojoup.state=" + state)) left += ids->size();
  std::error_code ec;
  if (fs::exists(state + "/sessions", ec)) {
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(state + "/sessions", ec)) {
      ++left;
    }
  }
  return left;
}

}  // namespace mojoup::test
