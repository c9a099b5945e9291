// Escape suite: what the node reads back that someone else could have
// written. Attackers: a second local user outside the docker group, and
// agents inside sessions (sometimes two at once on one repository). The
// victim is a normal user in the docker group with repositories under $HOME,
// started as cron and ssh start it (no XDG_RUNTIME_DIR).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../support/background_process.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::test::Described;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::Slurp;
using mojoup::test::UserNode;

// Declares `outsider`: the second local user, outside the docker group.
#define MOJOUP_REQUIRE_OUTSIDER(outsider)                        \
  std::string why_##outsider;                                    \
  const RealUser* outsider = RealUser::Outsider(why_##outsider); \
  if (outsider == nullptr) MOJOUP_SKIP("needs a second local user: " << why_##outsider)

// `mojoup-node ARGS` as the victim, in the environment cron or ssh without
// logind give it: no XDG_RUNTIME_DIR, no MOJOUP_STATE_DIR (so the default
// state directory), only the node config named; `extra` added.
Run AsCron(const UserNode& node, const std::vector<std::string>& args,
           const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv{node.user.bin + "/mojoup-node"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env{"MOJOUP_NODE_CONFIG=" + node.config, "NO_COLOR=1"};
  env.insert(env.end(), extra.begin(), extra.end());
  return node.user.As(argv, env, std::chrono::seconds(90), node.repo);
}

std::string SessionRecord(const std::string& id, const std::string& dir, const std::string& repo,
                          const std::string& sandbox) {
  return "{\"schema\":\"mojoup.session/v1\",\"id\":\"" + id + "\",\"user\":\"x\",\"repo\":\"" +
         repo + "\",\"tool\":\"\",\"runtime\":\"native\",\"sandbox\":\"" + sandbox +
         "\",\"state\":\"running\",\"started_at\":\"2026-01-01T00:00:00Z\",\"dir\":\"" + dir +
         "\",\"pid\":999999,\"pid_start\":1,\"started_ns\":1,\"repo_had_git\":false}";
}

// A request a container id could smuggle into the Docker API: a container
// named `name` from the test image, with the host's / mounted.
std::string SmuggledCreate(const std::string& name) {
  const std::string body = "{\\\"Image\\\":\\\"" + std::string(mojoup::test::kSandboxImage) +
                           "\\\",\\\"HostConfig\\\":{\\\"Binds\\\":[\\\"/:/host\\\"]}}";
  const std::string length = std::to_string(body.size() - 16);  // the JSON escapes
  return "x?force=1 HTTP/1.1\\r\\nHost: api.moby.localhost\\r\\nContent-Length: 0\\r\\n\\r\\nPOST "
         "/containers/create?name=" +
         name +
         " HTTP/1.1\\r\\nHost: api.moby.localhost\\r\\nContent-Type: "
         "application/json\\r\\nContent-Length: " +
         length + "\\r\\n\\r\\n" + body + "\\r\\n\\r\\nDELETE /containers/y";
}

// What a test made, or an attack would have made, removed at scope exit.
struct RemovedWithContainer {
  std::vector<std::string> paths;
  std::string container;  // a name
  ~RemovedWithContainer() {
    std::error_code ec;
    for (const std::string& path : paths) fs::remove_all(path, ec);
    if (auto ids = mojoup::test::ContainersNamed(container)) {
      for (const std::string& id : *ids) mojoup::test::RemoveContainer(id);
    }
  }
};

bool ContainerNamed(const std::string& name) {
  auto ids = mojoup::test::ContainersNamed(name);
  return ids && !ids->empty();
}

TEST_CASE("escape: another user's squat of /tmp/mojoup-<uid> is never the victim's state",
          "[escape][state]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  MOJOUP_REQUIRE_OUTSIDER(outsider);
  UserNode node(*user);
  const std::string squat = "/tmp/mojoup-" + std::to_string(user->uid);
  fs::remove_all(squat);
  const std::string important = user->home + "/important-" + std::to_string(getpid());
  user->Write(important + "/keep", "mine\n");
  const std::string pwned = "mojoup-pwned-" + std::to_string(getpid());
  // The outsider, as itself, lays a state directory with a record that
  // points at the victim's files and smuggles a Docker request.
  const std::string record =
      SessionRecord("0123456789abcdef", important, node.repo, SmuggledCreate(pwned));
  Run laid = outsider->As({"sh", "-c",
                           "mkdir -p " + squat + "/sessions && printf '%s' '" + record + "' > " +
                               squat + "/sessions/0123456789abcdef.json && chmod -R 0777 " + squat},
                          {}, std::chrono::seconds(30), "/tmp");
  INFO(Described(laid));
  REQUIRE(laid.result.exit_code == 0);
  RemovedWithContainer cleanup{{squat, important}, pwned};

  // The victim's own commands, started as cron starts them.
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"status"}, {"stop", "--all"}}) {
    Run run = AsCron(node, command);
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
  }
  CHECK(fs::exists(important + "/keep"));
  CHECK(fs::is_directory(node.repo + "/.git"));
  CHECK_FALSE(ContainerNamed(pwned));

  // Named outright, the squatted directory is refused in one sentence.
  Run named = node.Cli({"status"}, {"MOJOUP_STATE_DIR=" + squat});
  INFO(Described(named));
  CHECK(named.result.exit_code != 0);
  CHECK_THAT(named.result.err, Contains(squat));
  CHECK_THAT(named.result.err, Contains("owned by another user"));
  CHECK(fs::exists(important + "/keep"));
  CHECK_FALSE(ContainerNamed(pwned));
}

TEST_CASE("escape: a record is data: a forged one reaches no Docker call, delete or move",
          "[escape][state]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const std::string important = user->home + "/important-" + std::to_string(getpid());
  user->Write(important + "/keep", "mine\n");
  const std::string pwned = "mojoup-pwned-own-" + std::to_string(getpid());
  const std::string site = user->home + "/.local/lib/python3/site-packages";
  RemovedWithContainer cleanup{{important, site}, pwned};
  // Records as a session (or anyone who could write them) might leave them.
  Run made = node.Cli({"status"});
  REQUIRE(made.result.exit_code == 0);
  user->Write(node.state + "/sessions/0123456789abcdef.json",
              SessionRecord("0123456789abcdef", important, node.repo, SmuggledCreate(pwned)), 0600);
  std::string with_sign_in =
      SessionRecord("fedcba9876543210", node.state + "/sessions/fedcba9876543210", node.repo, "");
  with_sign_in.pop_back();
  with_sign_in += ",\"sign_in\":{\"tool\":\"\",\"home\":\"" + important +
                  "\",\"files\":[{\"home_relative\":"
                  "\"evil.pth\",\"host_path\":\"" +
                  site + "/evil.pth\",\"staged_path\":\"" + important +
                  "/evil.pth\",\"host_sha256\":\"" + std::string(64, '0') +
                  "\",\"mode\":384}],\"missing\":[]}}";
  user->Write(node.state + "/sessions/fedcba9876543210.json", with_sign_in, 0600);
  user->Write(important + "/evil.pth", "import os; os.system('touch ~/pwned-pth')\n");

  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"status"}, {"stop", "--all"}}) {
    Run run = node.Cli(command);
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
  }
  Run ran = node.Sh("echo ran");
  INFO(Described(ran));
  CHECK(ran.result.out == "ran\n");
  CHECK(fs::exists(important + "/keep"));
  CHECK(fs::is_directory(node.repo + "/.git"));
  CHECK_FALSE(ContainerNamed(pwned));
  CHECK_FALSE(fs::exists(site));
}

TEST_CASE("escape: a repository, a state directory or a root that holds the home is refused",
          "[escape][state]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // The state directory inside the repository: the session could write its
  // own record and its staging.
  Run inside = node.Sh("echo ran", {}, {"MOJOUP_STATE_DIR=" + node.repo + "/state"});
  INFO(Described(inside));
  CHECK(inside.result.exit_code != 0);
  CHECK_THAT(inside.result.err, Contains("lies in the repository"));
  CHECK_FALSE(fs::exists(node.repo + "/state/sessions"));
  // A state directory others may write.
  const std::string open = node.root + "/open";
  fs::create_directories(open);
  REQUIRE(::chown(open.c_str(), user->uid, user->gid) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);
  Run shared = node.Sh("echo ran", {}, {"MOJOUP_STATE_DIR=" + open});
  INFO(Described(shared));
  CHECK(shared.result.exit_code != 0);
  CHECK_THAT(shared.result.err, Contains("writable by others"));
  // A symbolic link in the state directory's place.
  const std::string link = node.root + "/link";
  REQUIRE(user->As({"ln", "-s", node.state, link}).result.exit_code == 0);
  Run linked = node.Cli({"status"}, {"MOJOUP_STATE_DIR=" + link});
  INFO(Described(linked));
  CHECK(linked.result.exit_code != 0);
  CHECK_THAT(linked.result.err, Contains("is a symbolic link"));
}

TEST_CASE("escape: git's redirections cannot be planted from inside a session", "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  // Each attack prints ESCAPED:<what> when the write itself went through;
  // what cannot be refused in the session is quarantined after it.
  Run run = node.Sh(R"(
try() { if sh -c "$2" 2>/dev/null; then echo "ESCAPED:$1"; fi; }
try config.worktree "printf '[core]\n\tfsmonitor = \"touch \$HOME/pwned-worktree\"\n' > .git/config.worktree"
try remotes "mkdir -p .git/remotes && echo 'URL: ext::sh -c touch% \$HOME/pwned-remote' > .git/remotes/origin"
try remotes-link "rm -rf .git/remotes; ln -s \$HOME/.ssh .git/remotes"
try branches "echo x > .git/branches/evil"
try alternates "echo /tmp/objects > .git/objects/info/alternates"
try http-alternates "echo http://evil/ > .git/objects/info/http-alternates"
try info "echo '* filter=evil' > .git/info/attributes"
mkdir -p evilgit && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch $HOME/pwned-commondir"\n' > evilgit/config
ln -s ../.git/objects evilgit/objects; ln -s ../.git/refs evilgit/refs
echo ../evilgit > .git/commondir 2>/dev/null
mkdir -p .git/rebase-merge 2>/dev/null && printf 'exec touch $HOME/pwned-rebase\n' > .git/rebase-merge/git-rebase-todo
mkfifo .git/FETCH_HEAD 2>/dev/null; ln -s /etc/passwd .git/ORIG_HEAD 2>/dev/null
echo attacks-done
)");
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("attacks-done"));
  CHECK_THAT(run.result.out, !Contains("ESCAPED"));
  // What was made in the session is not in force on the host.
  CHECK(Slurp(node.repo + "/.git/commondir") == ".\n");  // made in advance, read-only
  CHECK_FALSE(fs::exists(node.repo + "/.git/rebase-merge"));
  CHECK_FALSE(fs::exists(fs::symlink_status(node.repo + "/.git/FETCH_HEAD")));
  CHECK_FALSE(fs::exists(fs::symlink_status(node.repo + "/.git/ORIG_HEAD")));
  CHECK_THAT(run.result.err, Contains("rebase-merge"));
  CHECK_THAT(run.result.err, Contains("moved aside"));
  for (const std::vector<std::string>& git :
       {std::vector<std::string>{"status"}, {"log", "--oneline"}, {"fetch", "--all"}}) {
    node.Git(git);
  }
  CHECK(node.Git({"status"}).result.exit_code == 0);
  CHECK(user->Pwned().empty());
  CHECK(fs::is_empty(node.repo + "/.git/remotes"));
  CHECK(fs::file_size(node.repo + "/.git/objects/info/alternates") == 0);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a HEAD the session turned into a link is quarantined", "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  Run run = node.Sh("rm -f .git/HEAD && ln -s ../../.ssh/id_ed25519 .git/HEAD && echo planted");
  INFO(Described(run));
  REQUIRE_THAT(run.result.out, Contains("planted"));
  CHECK_THAT(run.result.err, Contains("HEAD"));
  CHECK_FALSE(fs::is_symlink(node.repo + "/.git/HEAD"));
  // A branch switch in the session is still a plain HEAD, and stays.
  user->Write(node.repo + "/.git/HEAD", "ref: refs/heads/main\n");
  Run branch = node.Sh("git checkout -q -b feature && echo switched");
  INFO(Described(branch));
  CHECK_THAT(branch.result.out, Contains("switched"));
  CHECK(Slurp(node.repo + "/.git/HEAD") == "ref: refs/heads/feature\n");
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a link where git trusts an entry mounts nothing of the host", "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const std::string ssh = user->home + "/.ssh";
  user->Write(ssh + "/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY----- secret\n", 0600);
  // As a session of an older node could leave it: remotes was absent.
  fs::remove_all(node.repo + "/.git/remotes");
  REQUIRE(user->As({"ln", "-s", ssh, node.repo + "/.git/remotes"}).result.exit_code == 0);
  Run run = node.Sh("cat .git/remotes/id_ed25519; echo ran");
  INFO(Described(run));
  CHECK_THAT(run.result.out, !Contains("secret"));
  CHECK(run.result.exit_code != 0);
  CHECK_THAT(run.result.err, Contains(".git/remotes is a symbolic link"));
  fs::remove(node.repo + "/.git/remotes");
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a gitlink behind a symbolic link mounts no other repository", "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  UserNode other(*user);
  // The session wrote the index; the link is in the work tree.
  REQUIRE(user->As({"ln", "-s", other.repo, node.repo + "/other"}).result.exit_code == 0);
  Run head = node.Git({"rev-parse", "HEAD"});
  const std::string object = head.result.out.substr(0, head.result.out.find('\n'));
  REQUIRE(node.Git({"update-index", "--add", "--cacheinfo", "160000," + object + ",other"})
              .result.exit_code == 0);
  const std::string config_before = Slurp(other.repo + "/.git/config");
  Run run = node.Sh(
      "if touch other/.git/marker 2>/dev/null; then echo ESCAPED:marker; fi; "
      "if echo '[core] fsmonitor = touch pwned' >> other/.git/config 2>/dev/null; then echo "
      "ESCAPED:config; fi; echo done");
  INFO(Described(run));
  REQUIRE_THAT(run.result.out, Contains("done"));
  CHECK_THAT(run.result.out, !Contains("ESCAPED"));
  CHECK_THAT(run.result.err, Contains("lies behind a symbolic link"));
  CHECK_FALSE(fs::exists(other.repo + "/.git/marker"));
  CHECK(Slurp(other.repo + "/.git/config") == config_before);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a blocked quarantine never leaves a planted repository in force",
          "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  Run head = node.Git({"rev-parse", "HEAD"});
  const std::string object = head.result.out.substr(0, head.result.out.find('\n'));
  REQUIRE(node.Git({"update-index", "--add", "--cacheinfo", "160000," + object + ",sub"})
              .result.exit_code == 0);
  // The session knows its own id: it takes the names a quarantine would
  // use, and the parent's write bit.
  Run run = node.Sh(R"(
mkdir -p sub && cd sub && git init -q -b main 2>/dev/null && git config user.email a@b &&
git config user.name a && echo y > g && git add g && git commit -qm s &&
git config core.fsmonitor 'touch $HOME/pwned-blocked; false' && cd .. &&
mkdir -p "sub/.git.sandbox-$MOJOUP_SESSION" "sub/.git.sandbox-$MOJOUP_SESSION-0000000000000000" &&
chmod 555 sub && echo planted
)");
  INFO(Described(run));
  REQUIRE_THAT(run.result.out, Contains("planted"));
  CHECK_FALSE(fs::exists(node.repo + "/sub/.git"));
  node.Git({"status"});
  CHECK(user->Pwned().empty());
  ::chmod((node.repo + "/sub").c_str(), 0755);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: the host reads no repository file that hangs or exhausts it", "[escape][dos]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const auto limit = std::chrono::seconds(40);
  SECTION("a FIFO at .git/index") {
    fs::remove(node.repo + "/.git/index");
    REQUIRE(user->As({"mkfifo", node.repo + "/.git/index"}).result.exit_code == 0);
    Run run = node.Cli({"run", "--repo", node.repo, "--", "true"}, {}, limit);
    INFO(Described(run));
    CHECK(run.result.exit_code == 1);
    CHECK_THAT(run.result.err, Contains("FIFO"));
    Run status = node.Cli({"status"}, {}, limit);
    CHECK(status.result.exit_code == 0);
    fs::remove(node.repo + "/.git/index");
  }
  SECTION("a sparse 32 GiB .git/index") {
    REQUIRE(user->As({"truncate", "-s", "32G", node.repo + "/.git/index"}).result.exit_code == 0);
    Run run = node.Cli({"run", "--repo", node.repo, "--", "true"}, {}, limit);
    INFO(Described(run));
    CHECK(run.result.exit_code == 1);
    CHECK_THAT(run.result.err, Contains("34359738368 bytes"));
    Run status = node.Cli({"status"}, {}, limit);
    CHECK(status.result.exit_code == 0);
    fs::remove(node.repo + "/.git/index");
  }
  SECTION("a FIFO .mojoup/policy.json") {
    fs::create_directories(node.repo + "/.mojoup");
    REQUIRE(::chown((node.repo + "/.mojoup").c_str(), user->uid, user->gid) == 0);
    REQUIRE(user->As({"mkfifo", node.repo + "/.mojoup/policy.json"}).result.exit_code == 0);
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"policy", "explain", "--repo", node.repo},
          {"run", "--accept-policy", "--repo", node.repo, "--", "true"}}) {
      Run run = node.Cli(command, {}, limit);
      INFO(Described(run));
      CHECK(run.result.exit_code == 2);
      CHECK_THAT(run.result.err, Contains("FIFO"));
    }
  }
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: cleanup finishes whatever the session left in its home", "[escape][cleanup]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  Run run = node.Sh(R"(
mkdir -p ~/locked/inner && echo x > ~/locked/inner/file && chmod 500 ~/locked/inner ~/locked &&
mkdir ~/unreadable && chmod 0 ~/unreadable &&
cd ~ && i=0 && while [ $i -lt 2000 ]; do mkdir d && cd d || exit 1; i=$((i+1)); done && echo deep
)");
  INFO(Described(run));
  REQUIRE_THAT(run.result.out, Contains("deep"));
  CHECK_THAT(run.result.err, !Contains("not all removed"));
  CHECK_THAT(run.result.err, !Contains("sudo rm"));
  CHECK(node.Leftovers() == 0);
  CHECK(fs::is_empty(node.state + "/sessions"));
}

TEST_CASE("escape: the policy history is one whatever XDG_RUNTIME_DIR says", "[escape][policy]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // With a runtime directory, as a login session has one: the session plants
  // a policy where the repository had none.
  const std::string runtime = node.root + "/runtime";
  REQUIRE(user->As({"mkdir", "-m", "0700", runtime}).result.exit_code == 0);
  Run planted = AsCron(node,
                       {"run", "--repo", node.repo, "--", "/bin/sh", "-c",
                        "mkdir -p .mojoup && echo "
                        "'{\"agents\":{\"network\":{\"allow\":[{\"host\":\"evil.test\"}]}}}' "
                        "> .mojoup/policy.json && echo planted"},
                       {"XDG_RUNTIME_DIR=" + runtime});
  INFO(Described(planted));
  REQUIRE_THAT(planted.result.out, Contains("planted"));
  // Started as cron starts it, the next run still knows.
  Run next = AsCron(node, {"run", "--repo", node.repo, "--", "true"});
  INFO(Described(next));
  CHECK(next.result.exit_code == 1);
  CHECK_THAT(next.result.err, Contains("changed while sandboxed session"));
}

TEST_CASE("escape: a session racing a start on the same repository cannot choose its policy",
          "[escape][policy]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // Session A, on a repository without .mojoup, toggles a policy that would
  // let B reach evil.test; B starts again and again meanwhile.
  std::vector<std::string> argv = user->Prefix(node.env, node.repo);
  argv.insert(argv.end(),
              {user->bin + "/mojoup-node", "run", "--repo", node.repo, "--", "/bin/sh", "-c",
               "end=$(($(date +%s) + 120)); echo racing; while [ ! -e stop-race ] && [ "
               "$(date +%s) -lt $end ]; do mkdir -p .mojoup; echo "
               "'{\"agents\":{\"network\":{\"allow\":[{\"host\":\"evil.test\"}]}}}' > "
               ".mojoup/p.tmp && mv .mojoup/p.tmp .mojoup/policy.json; rm -rf .mojoup; done"});
  mojoup::test::BackgroundProcess a({}, argv);
  REQUIRE(a.ReadLine(std::chrono::seconds(60)) == std::optional<std::string>("racing"));
  int refused = 0, clean = 0, failed = 0;
  constexpr int kStarts = 20;
  for (int i = 0; i < kStarts; ++i) {
    // What the proxy says of evil.test tells which policy the session got:
    // 403 blocked-by-policy under the repository's own (none), anything
    // else under the racing session's.
    Run start = node.Sh("curl -s -o /dev/null -w 'code=%{http_code}\\n' http://evil.test/");
    const std::string& err = start.result.err;
    INFO(Described(start));
    if (err.find("changed while sandboxed session") != std::string::npos) {
      ++refused;
    } else if (start.result.out.find("code=") != std::string::npos) {
      CHECK(start.result.out == "code=403\n");
      ++clean;
    } else {
      ++failed;
      CHECK(std::count(err.begin(), err.end(), '\n') <= 2);
    }
  }
  user->Write(node.repo + "/stop-race", "");
  while (a.ReadLine(std::chrono::seconds(150))) {
  }
  a.Stop();
  INFO("refused " << refused << ", clean " << clean << ", failed " << failed);
  CHECK(refused + clean + failed == kStarts);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: run says so when its directory is a link into another repository",
          "[escape][repo]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  UserNode other(*user);
  REQUIRE(user->As({"mkdir", "-p", node.repo + "/packages"}).result.exit_code == 0);
  REQUIRE(user->As({"ln", "-s", other.repo, node.repo + "/packages/app"}).result.exit_code == 0);
  Run run = node.Cli({"run", "--repo", node.repo + "/packages/app", "--", "pwd"});
  INFO(Described(run));
  CHECK(run.result.exit_code == 0);
  CHECK_THAT(run.result.err, Contains("is a symbolic link into " + other.repo));
  CHECK(node.Leftovers() == 0);
}

}  // namespace

namespace {

TEST_CASE("escape: run whose reader goes away ends its session and leaves nothing",
          "[escape][pipe]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // `run ... | head -1`: the command gets SIGPIPE as in any pipeline, and
  // run cleans up instead of dying with its container still running.
  std::string env;
  for (const std::string& entry : node.env) env += entry + " ";
  Run run = user->As({"sh", "-c",
                      "(env " + env + "mojoup-node run --repo " + node.repo +
                          " -- yes; echo \"run=$?\" >&2) | head -1"},
                     {}, std::chrono::seconds(60), node.repo);
  INFO(Described(run));
  CHECK(run.result.out == "y\n");
  CHECK_THAT(run.result.err, Contains("run=141"));
  CHECK(node.Leftovers() == 0);
}

}  // namespace
