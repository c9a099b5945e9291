// bench_remote_copy [--runs N] [--files N] [--mib N]
//
// What a remote gateway adds to a session's start and stop: the repository
// goes in by `sandbox upload` (git directory and all) and is checked there,
// and its work comes back as a bundle and a patch (docs/openshell.md,
// "Remote gateways"). For a repository of 10,000 files and 200 MB (one
// commit), as the normal user the tests use (mojoup-tester, made when run
// as root), on fake-openshell:
//
//   remote  `mojoup-node run -- true` on the fake's Kubernetes driver (a copy)
//   local   the same on its Docker driver (same-path mounts, nothing copied)
//   tar     the same tree through the same path by hand: `tar c | docker exec
//           -i C tar x` into a container of the same image, and back out
//
// Alternating runs; medians. The figure is (remote - local) / tar: the
// copy's cost against a plain tar of the tree both ways (goal: about 1,
// well under 2).
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "../tests/support/public_bridge.h"
#include "../tests/support/real_user.h"
#include "fmt/format.h"
#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"
#include "timing.h"

namespace {

namespace fs = std::filesystem;
using mojoup::bench::Median;
using mojoup::bench::TimeOnce;
using mojoup::test::RealUser;
using mojoup::test::UserNode;

struct Args {
  int runs = 3;
  int files = 10000;
  int mib = 200;
};

bool ParseArgs(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; i += 2) {
    const int value = i + 1 < argc ? std::atoi(argv[i + 1]) : 0;
    int* into = std::strcmp(argv[i], "--runs") == 0    ? &args.runs
                : std::strcmp(argv[i], "--files") == 0 ? &args.files
                : std::strcmp(argv[i], "--mib") == 0   ? &args.mib
                                                       : nullptr;
    if (into == nullptr || value <= 0) {
      std::cerr << "usage: bench_remote_copy [--runs N] [--files N] [--mib N]\n";
      return false;
    }
    *into = value;
  }
  return true;
}

// `files` files of random bytes, `mib` MiB in all, in 100 directories of the
// repository, owned by the user and committed.
bool MakeTree(const UserNode& node, const Args& args) {
  std::mt19937_64 random(42);
  const std::size_t each = (static_cast<std::size_t>(args.mib) << 20) / args.files;
  std::string bytes(each, '\0');
  for (int i = 0; i < args.files; ++i) {
    for (std::size_t j = 0; j + 8 <= bytes.size(); j += 8) {
      const std::uint64_t word = random();
      std::memcpy(&bytes[j], &word, 8);
    }
    const fs::path path =
        fs::path(node.repo) / fmt::format("d{:02}", i % 100) / fmt::format("f{:05}.bin", i);
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }
  int exit_code = 0;
  TimeOnce({"chown", "-R", fmt::format("{}:{}", node.user.uid, node.user.gid), node.repo},
           &exit_code);
  return exit_code == 0 && node.Git({"add", "-A"}).result.exit_code == 0 &&
         node.Git({"commit", "-q", "-m", "tree"}).result.exit_code == 0;
}

// The fake at `dir`, with `driver`, for the user; its node config's path.
std::string InstallGateway(const UserNode& node, const std::string& dir,
                           const std::string& driver) {
  fs::create_directories(dir);
  for (const char* program : {"fake-openshell", "fake-openshell-sandbox"}) {
    fs::copy_file(mojoup::test::BinDir() + "/" + program, dir + "/" + program,
                  fs::copy_options::overwrite_existing);
  }
  mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
  options.network = mojoup::test::kPublicBridge;
  options.driver = driver;
  std::string remote;
  if (driver == "kubernetes") {
    options.gateway_name = "bench-remote";
    options.remote = true;
    remote =
        ", \"node.sandbox.openshell_gateway\": \"bench-remote\", "
        "\"node.sandbox.openshell_remote\": \"yes\"";
  }
  mojoup::sandbox::testing::InstallFakeOpenShellSandbox(dir, dir + "/fake-openshell", options);
  if (driver == "kubernetes") {
    // The user registered the gateway, as `openshell gateway add` leaves it.
    mojoup::sandbox::testing::OpenShellGatewayConfig registered;
    registered.name = "bench-remote";
    registered.endpoint = "https://bench-remote.example.org";
    registered.remote = true;
    registered.active = false;
    mojoup::sandbox::testing::WriteOpenShellGatewayConfig(node.user.home + "/.config", registered);
    int chowned = 0;
    TimeOnce({"chown", "-R", fmt::format("{}:{}", node.user.uid, node.user.gid),
              node.user.home + "/.config"},
             &chowned);
  }
  int exit_code = 0;
  TimeOnce({"chown", "-R", fmt::format("{}:{}", node.user.uid, node.user.gid), dir}, &exit_code);
  const std::string config = dir + "/node.json";
  node.user.Write(config,
                  fmt::format("{{\"node.sandbox.engine\": \"docker\", \"node.sandbox.role\": true, "
                              "\"node.sandbox.runtime\": \"openshell\", "
                              "\"node.sandbox.openshell_path\": \"{}/openshell\", "
                              "\"node.sandbox.image\": \"{}\", "
                              "\"node.sandbox.openshell_host_address\": \"{}\", "
                              "\"node.sandbox.allowed_users\": \"{}\"{}}}\n",
                              dir, mojoup::test::kSandboxImage, mojoup::test::kPublicBridgeGateway,
                              node.user.name, remote));
  return config;
}

// One `run -- true` as the user on the node config `config`; ms, or -1.
double TimeRun(const UserNode& node, const std::string& config) {
  std::vector<std::string> env = {"MOJOUP_NODE_CONFIG=" + config, "MOJOUP_STATE_DIR=" + node.state};
  std::vector<std::string> argv = node.user.Prefix(env, node.repo);
  argv.insert(argv.end(),
              {node.user.bin + "/mojoup-node", "run", "--repo", node.repo, "--", "/bin/true"});
  int exit_code = 0;
  const double ms = TimeOnce(argv, &exit_code);
  return exit_code == 0 ? ms : -1;
}

// The tree into a container of the image and back out, by plain tar over
// docker exec: the path the copy takes, without anything of ours.
double TimeTar(const UserNode& node, const std::string& container, const std::string& out) {
  const std::string parent = fs::path(node.repo).parent_path().string();
  const std::string name = fs::path(node.repo).filename().string();
  int exit_code = 0;
  double ms = TimeOnce({"sh", "-c",
                        fmt::format("tar -C '{}' -cf - '{}' | docker exec -i {} tar -xf - -C /tmp",
                                    parent, name, container)},
                       &exit_code);
  if (exit_code != 0) return -1;
  fs::remove_all(out);
  fs::create_directories(out);
  ms += TimeOnce({"sh", "-c",
                  fmt::format("docker exec {} tar -C /tmp -cf - '{}' | tar -xf - -C '{}'",
                              container, name, out)},
                 &exit_code);
  TimeOnce({"docker", "exec", container, "rm", "-rf", "/tmp/" + name}, &exit_code);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, args)) return 2;
  std::string why = mojoup::test::WhyNoSandboxDocker();
  if (why.empty()) why = mojoup::test::WhyNoPublicBridge();
  const RealUser* user = why.empty() ? RealUser::Get(why) : nullptr;
  if (user == nullptr) {
    std::cerr << "bench: " << why << "\n";
    return 1;
  }
  UserNode node(*user);
  // Sandboxed or refused, never run bare: a failed check fails the run.
  node.Policy(R"({"agents": {"sandbox": "required"}})");
  std::cerr << fmt::format("bench: a tree of {} files, {} MiB ...\n", args.files, args.mib);
  if (!MakeTree(node, args)) {
    std::cerr << "bench: cannot make the tree in " << node.repo << "\n";
    return 1;
  }
  const std::string remote = InstallGateway(node, node.root + "/remote", "kubernetes");
  const std::string local = InstallGateway(node, node.root + "/local", "docker");
  const std::string container = "mojoup-bench-tar-" + std::to_string(::getpid());
  int exit_code = 0;
  TimeOnce({"docker", "run", "-d", "--rm", "--network", "none", "--name", container,
            mojoup::test::kSandboxImage, "sleep", "3600"},
           &exit_code);
  std::vector<double> remotes, locals, tars;
  for (int i = 0; i < args.runs; ++i) {
    remotes.push_back(TimeRun(node, remote));
    locals.push_back(TimeRun(node, local));
    tars.push_back(TimeTar(node, container, node.root + "/tar-out"));
  }
  TimeOnce({"docker", "rm", "-f", container}, &exit_code);
  for (const auto* series : {&remotes, &locals, &tars}) {
    if (std::find(series->begin(), series->end(), -1.0) != series->end()) {
      std::cerr << "bench: a run failed; run the runtimes workload test to see why\n";
      return 1;
    }
  }
  const double added = Median(remotes) - Median(locals);
  std::cout << fmt::format(
      "{} files, {} MiB, {} runs each (medians)\n"
      "  run -- true, remote (copy in and back):  {:8.0f} ms\n"
      "  run -- true, local (same-path mounts):   {:8.0f} ms\n"
      "  added by the copy:                       {:8.0f} ms\n"
      "  plain tar in and out over docker exec:   {:8.0f} ms\n"
      "  ratio, added / tar:                      {:8.2f}\n",
      args.files, args.mib, args.runs, Median(remotes), Median(locals), added, Median(tars),
      added / Median(tars));
  return 0;
}
