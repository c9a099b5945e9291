// One agent-shaped workload on every runtime: the native one, and openshell
// on the fake at each modelled release. As a normal user in the docker
// group with the repository under $HOME, through `mojoup-node run`, each row
// expects the same outcome on each runtime.
//
// Rows not here yet, as the fake has no network proxy of OpenShell's (TLS
// terminated with the gateway's CA, host globs enforced): git, curl, node
// and npm over HTTPS to allowed and denied hosts, and `*.example.com`
// reaching `a.b.example.com`.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../support/background_process.h"
#include "../support/real_user.h"
#include "../support/test_support.h"
#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::test::BackgroundProcess;
using mojoup::test::BinDir;
using mojoup::test::Described;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::UserNode;

struct Runtime {
  std::string name;
  std::string openshell;  // the fake's release; "" for the native runtime
};

std::vector<Runtime> Runtimes() {
  return {{"native", ""},
          {"openshell v0.0.92", "0.0.92"},
          {"openshell v0.0.111", "0.0.111"},
          {"openshell v0.1.10", "0.1.10"}};
}

// A node of the user's on `runtime`. For openshell, the fake and its
// supervisor are copied where the user can run them (the build tree may be
// out of its reach) and named by node.sandbox.openshell_path.
class Workload {
 public:
  Workload(const RealUser& user, const Runtime& runtime) : node(user) {
    if (runtime.openshell.empty()) return;
    const std::string dir = node.root + "/openshell";
    fs::create_directories(dir);
    for (const char* program : {"fake-openshell", "fake-openshell-sandbox"}) {
      fs::copy_file(BinDir() + "/" + program, dir + "/" + program,
                    fs::copy_options::overwrite_existing);
    }
    mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
    options.version = runtime.openshell;
    // A 0.1.x gateway set up as the README says: caller driver config on,
    // resource admission off (host binds need both).
    if (runtime.openshell.starts_with("0.1.")) {
      options.allow_driver_config = true;
      options.bind_mount_admission = "disabled";
    }
    mojoup::sandbox::testing::InstallFakeOpenShellSandbox(dir, dir + "/fake-openshell", options);
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      REQUIRE(::lchown(entry.path().c_str(), user.uid, user.gid) == 0);
    }
    REQUIRE(::chown(dir.c_str(), user.uid, user.gid) == 0);
    user.Write(node.config,
               "{\"node.sandbox.engine\": \"docker\", \"node.sandbox.role\": true, "
               "\"node.sandbox.runtime\": \"openshell\", \"node.sandbox.openshell_path\": \"" +
                   dir + "/openshell\", \"node.sandbox.image\": \"" +
                   std::string(mojoup::test::kSandboxImage) +
                   "\", \"node.sandbox.allowed_users\": \"" + user.name + "\"}\n");
    openshell_ = dir + "/openshell";
  }
  ~Workload() {
    // A failed row may leave a session whose `run` is gone: `status` reaps it.
    node.Cli({"status"});
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // `mojoup-node run -- ARGV` as the user, in the background.
  std::unique_ptr<BackgroundProcess> Start(const std::vector<std::string>& argv) const {
    std::vector<std::string> full = node.user.Prefix(node.env, node.repo);
    full.insert(full.end(), {node.user.bin + "/mojoup-node", "run", "--repo", node.repo, "--"});
    full.insert(full.end(), argv.begin(), argv.end());
    return std::make_unique<BackgroundProcess>(std::vector<std::string>{}, full);
  }

  // What the node left: its own count, and on openshell the sandboxes the
  // gateway still has.
  std::size_t Leftovers() const {
    std::size_t left = node.Leftovers();
    if (openshell_.empty()) return left;
    Run listed = node.user.As({openshell_, "sandbox", "list", "-o", "json"});
    if (listed.result.exit_code != 0 || listed.result.out.find('[') == std::string::npos) {
      return left + 1;
    }
    return left + (listed.result.out.find("\"name\"") != std::string::npos ? 1 : 0);
  }

  UserNode node;

 private:
  std::string openshell_;
};

// `run`'s stdout to its end, and its wait status.
std::pair<std::string, int> Finish(BackgroundProcess& run) {
  std::string out;
  while (auto line = run.ReadLine(std::chrono::seconds(60))) out += *line + "\n";
  return {out, run.Stop(std::chrono::seconds(20))};
}

TEST_CASE("runtimes: one workload, the same outcome on each runtime", "[runtimes]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  const Runtime runtime = GENERATE(from_range(Runtimes()));
  INFO("runtime " << runtime.name);
  Workload work(*user, runtime);
  const UserNode& node = work.node;

  SECTION("exit 7 is run's exit code") {
    Run run = node.Sh("exit 7");
    INFO(Described(run));
    CHECK(run.result.exit_code == 7);
  }
  SECTION("2>/dev/null and the devices a shell writes") {
    Run run = node.Sh(
        "ls /nowhere 2>/dev/null; echo quiet > /dev/null && head -c 4 /dev/zero > /dev/null && "
        "head -c 4 /dev/urandom | wc -c && echo x > /dev/shm/mine && echo written");
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out == "4\nwritten\n");
  }
  SECTION("a 40 KiB argument arrives whole") {
    const std::string big(40 * 1024, 'a');
    Run run = node.Cli({"run", "--repo", node.repo, "--", "/bin/sh", "-c",
                        "printf '%s' \"$1\" | wc -c", "sh", big});
    INFO(run.result.err);
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out.find("40960") != std::string::npos);
  }
  SECTION("stdin is piped through") {
    Run run = node.user.As({"sh", "-c",
                            "printf 'line one\\nline two\\n' | \"$0\" run --repo \"$1\" -- "
                            "/bin/sh -c 'wc -l; echo end'",
                            node.user.bin + "/mojoup-node", node.repo},
                           node.env, std::chrono::seconds(90), node.repo);
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out.find("2\nend\n") != std::string::npos);
  }
  SECTION("files written in the repository are the user's") {
    Run run = node.Sh("echo made > made.txt && mkdir -p dir && echo in > dir/file");
    INFO(Described(run));
    REQUIRE(run.result.exit_code == 0);
    for (const std::string& path : {node.repo + "/made.txt", node.repo + "/dir/file"}) {
      struct stat info {};
      REQUIRE(::stat(path.c_str(), &info) == 0);
      CHECK(info.st_uid == user->uid);
      CHECK(info.st_gid == user->gid);
    }
  }
  SECTION("a background process does not hold run, and nothing is left after") {
    Run run = node.Sh("sleep 300 > /dev/null 2>&1 & echo started");
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out == "started\n");
  }
  SECTION("SIGINT and SIGTERM to run reach the command; its exit codes come back") {
    for (const auto& [signal, name] : {std::pair{SIGINT, "INT"}, std::pair{SIGTERM, "TERM"}}) {
      INFO("SIG" << name);
      auto caught = work.Start({"/bin/sh", "-c",
                                std::string("trap 'echo caught; exit 9' ") + name +
                                    "; echo ready; while :; do sleep 0.2; done"});
      REQUIRE(caught->ReadLine(std::chrono::seconds(90)) == std::optional<std::string>("ready"));
      ::kill(caught->pid(), signal);
      auto [out, status] = Finish(*caught);
      INFO(caught->Stderr());
      CHECK(out == "caught\n");
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 9);

      auto killed = work.Start({"/bin/sh", "-c", "echo ready; exec sleep 600"});
      REQUIRE(killed->ReadLine(std::chrono::seconds(90)) == std::optional<std::string>("ready"));
      ::kill(killed->pid(), signal);
      auto [ignored, died] = Finish(*killed);
      INFO(killed->Stderr());
      CHECK(WIFEXITED(died));
      CHECK(WEXITSTATUS(died) == 128 + signal);
    }
  }
  CHECK(work.Leftovers() == 0);
}

}  // namespace
