// The agent image builder through its command seam: what it downloads,
// checks and runs, and that a build that fails anywhere leaves no tag. The
// real build (mmdebstrap, the npm registry, dockerd) runs in the agents
// tests.
#include "mojoup/sandbox/agent_image.h"

#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "../support/test_support.h"
#include "mojoup/version.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using mojoup::probe::CommandResult;
using mojoup::probe::CommandRunner;
using mojoup::sandbox::AgentImageOptions;
using mojoup::sandbox::AgentPin;
using mojoup::sandbox::AgentPins;
using mojoup::sandbox::BuildAgentImage;
using mojoup::sandbox::ImageBase;
using mojoup::sandbox::ImageStep;
using mojoup::test::TempDir;

std::string Integrity(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unsigned char digest[64];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha512(), nullptr);
  std::string encoded(4 * ((length + 2) / 3) + 1, '\0');
  encoded.resize(static_cast<std::size_t>(EVP_EncodeBlock(
      reinterpret_cast<unsigned char*>(encoded.data()), digest, static_cast<int>(length))));
  return "sha512-" + encoded;
}

CommandResult Exit(int code, std::string out = "", std::string err = "") {
  CommandResult result;
  result.outcome = CommandResult::Outcome::kExited;
  result.exit_code = code;
  result.out = std::move(out);
  result.err = std::move(err);
  return result;
}

std::string Line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) line += (line.empty() ? "" : " ") + arg;
  return line;
}

// curl "downloads" from a folder of tarballs; tar is the real one; docker
// and mmdebstrap answer as a daemon with no registry would, or as told.
class FakeBuildHost : public CommandRunner {
 public:
  explicit FakeBuildHost(std::string registry_dir) : registry_dir_(std::move(registry_dir)) {}

  bool registry = false;                               // debian:12-slim is on the daemon
  std::map<std::string, std::string> version_printed;  // program -> its --version output
  std::string build_error;                             // docker build fails, printing this

  CommandResult Run(const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout) override {
    {
      std::lock_guard lock(mu_);
      calls_.push_back(Line(argv));
    }
    const std::string& program = argv.front();
    if (program == "curl") {
      const std::string& url = argv.back();
      const std::string output = argv[argv.size() - 2];
      const std::string file = registry_dir_ + "/" + url.substr(url.rfind('/') + 1);
      std::error_code ec;
      fs::copy_file(file, output, fs::copy_options::overwrite_existing, ec);
      return ec ? Exit(22, "", "curl: (22) The requested URL returned error: 404") : Exit(0);
    }
    if (program == "tar") return real_->Run(argv, timeout);
    if (program == "mmdebstrap") {
      for (const std::string& arg : argv) {
        if (arg.size() > 11 && arg.substr(arg.size() - 11) == "/rootfs.tar")
          std::ofstream(arg) << "rootfs";
      }
      return Exit(0);
    }
    if (program == "env" && argv[2] == "docker" && argv[3] == "build")
      return build_error.empty() ? Exit(0, "sha256:b1\n") : Exit(100, "", build_error);
    if (program != "docker") return Exit(127, "", program + ": not found");
    const std::string verb = argv[1];
    if (verb == "image" && argv[2] == "inspect" && argv[3] == "debian:12-slim") {
      return Exit(registry ? 0 : 1);
    }
    if (verb == "pull") return Exit(1, "", "Error response from daemon: no route to registry");
    if (verb == "import") return Exit(0, "sha256:feed\n");
    if (verb == "run") {
      const std::string entry = argv[argv.size() - 3];
      const std::string name = entry.substr(entry.rfind('/') + 1);
      return Exit(0, version_printed[name] + "\n");
    }
    if (verb == "image" && argv[2] == "inspect") return Exit(0, "1234567\n");
    return Exit(0);
  }

  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  bool Called(const std::string& prefix) {
    for (const std::string& call : calls()) {
      if (call.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }

 private:
  std::string registry_dir_;
  std::unique_ptr<CommandRunner> real_ = mojoup::probe::MakeSystemCommandRunner();
  std::mutex mu_;
  std::vector<std::string> calls_;
};

// A registry folder with one agent package, "@acme/agent-linux-x64@1.2.3",
// holding bin/agent.
struct OneAgent {
  TempDir dir;
  AgentPin pin;
  OneAgent() {
    dir.Write("package/bin/agent", "#!/bin/sh\necho 1.2.3\n");
    fs::permissions(dir / "package/bin/agent", fs::perms::owner_all, fs::perm_options::add);
    fs::create_directories(dir / "registry");
    REQUIRE(std::system(("tar -czf " + dir / "registry/agent-linux-x64-1.2.3.tgz" + " -C " +
                         dir.path() + " package")
                            .c_str()) == 0);
    pin = {"agent",
           "@acme/agent",
           "1.2.3",
           "@acme/agent-linux-x64@1.2.3",
           "@acme/agent-linux-x64/-/agent-linux-x64-1.2.3.tgz",
           Integrity(dir / "registry/agent-linux-x64-1.2.3.tgz"),
           {{"agent", "bin/agent"}}};
  }
  AgentImageOptions Options(FakeBuildHost& host, std::vector<ImageStep>* steps = nullptr) {
    AgentImageOptions options;
    options.pins = {pin};
    options.cache_dir = dir / "cache";
    options.npm_registry = "https://registry.test";
    options.commands = &host;
    options.reference = "agents:test";
    if (steps != nullptr)
      options.progress = [steps](const ImageStep& step) { steps->push_back(step); };
    return options;
  }
};

TEST_CASE("the pinned agents are the five tools, each checked by integrity", "[agent_image]") {
  const std::vector<AgentPin>& pins = AgentPins();
  std::vector<std::string> tools;
  for (const AgentPin& pin : pins) {
    tools.push_back(pin.tool);
    CHECK(pin.integrity.rfind("sha512-", 0) == 0);
    CHECK(pin.integrity.size() == 7 + 88);  // base64 of 64 bytes
    CHECK(!pin.programs.empty());
    CHECK(pin.tarball.find("/-/") != std::string::npos);
    CHECK(pin.tarball.size() > 4);
    CHECK(pin.tarball.substr(pin.tarball.size() - 4) == ".tgz");
  }
  CHECK(tools ==
        std::vector<std::string>{"claude-code", "codex", "copilot", "opencode", "kilocode"});
  CHECK(pins[0].programs.front() == std::pair<std::string, std::string>{"claude", "claude"});
  // A scoped package keeps its scope in the path, not in the file's name.
  CHECK(pins[1].tarball == "@openai/codex/-/codex-" + pins[1].version + "-linux-x64.tgz");
  CHECK(mojoup::sandbox::DefaultAgentImage() == "mojoup/agents:" + std::string(mojoup::kVersion));
}

TEST_CASE("an unknown tool is refused before anything runs", "[agent_image]") {
  OneAgent agent;
  FakeBuildHost host(agent.dir / "registry");
  AgentImageOptions options = agent.Options(host);
  options.tools = {"agent", "claude"};
  auto built = BuildAgentImage(options);
  REQUIRE(absl::IsInvalidArgument(built.status()));
  CHECK_THAT(std::string(built.status().message()),
             Contains("\"claude\" is not an agent of the image; expected some of agent"));
  CHECK(host.calls().empty());
}

TEST_CASE("without a registry the base comes from Debian, and the image is tagged once whole",
          "[agent_image]") {
  OneAgent agent;
  FakeBuildHost host(agent.dir / "registry");
  host.version_printed["agent"] = "agent 1.2.3";
  std::vector<ImageStep> steps;
  auto built = BuildAgentImage(agent.Options(host, &steps));
  REQUIRE(built.ok());
  CHECK(built->reference == "agents:test");
  CHECK(built->id == "sha256:feed");
  CHECK(built->base == "debian:12 (mmdebstrap)");
  CHECK(built->agents == std::map<std::string, std::string>{{"agent", "1.2.3"}});
  CHECK(built->size_bytes == 1234567);

  CHECK(
      host.Called("curl --fail --silent --show-error --location --retry 2 --connect-timeout 30 "
                  "--output " +
                  agent.dir.path() + "/cache/npm/@acme_agent-linux-x64@1.2.3.tgz.part-"));
  CHECK_THAT(host.calls().front(),
             EndsWith(" https://registry.test/@acme/agent-linux-x64/-/agent-linux-x64-1.2.3.tgz"));
  CHECK(host.Called("mmdebstrap --variant=minbase --include=ca-certificates,curl,git"));
  CHECK(
      host.Called("docker import --change LABEL mojoup.image=\"agents\" --change "
                  "LABEL mojoup.image.version=\"" +
                  std::string(mojoup::kVersion) + "\""));
  bool labelled = false;
  for (const std::string& call : host.calls()) {
    if (call.rfind("docker import", 0) == 0) {
      labelled =
          call.find("LABEL mojoup.agent.agent=\"1.2.3\"") != std::string::npos &&
          call.find("LABEL mojoup.image.base=\"debian:12 (mmdebstrap)\"") != std::string::npos;
    }
  }
  CHECK(labelled);
  CHECK(
      host.Called("docker run --rm --network none --user 65534:65534 --env HOME=/tmp "
                  "--entrypoint /usr/local/bin/agent sha256:feed --version"));
  CHECK(host.calls().back().rfind("docker image inspect --format", 0) == 0);
  CHECK(host.Called("docker tag sha256:feed agents:test"));
  CHECK_FALSE(host.Called("docker image rm"));

  // Each step reported as it starts and as it ends, numbered of the whole.
  REQUIRE(steps.size() == 10);
  CHECK(steps[0].what == "download agent 1.2.3");
  CHECK(steps[0].index == 1);
  CHECK(steps[0].count == 5);
  CHECK_FALSE(steps[0].done);
  CHECK(steps[1].done);
  CHECK(steps[9].what == "tag agents:test");
  CHECK(steps[9].index == 5);
  // The staging is gone; the download stays for the next build.
  CHECK(fs::exists(agent.dir / "cache/npm/@acme_agent-linux-x64@1.2.3.tgz"));
  for (const auto& entry : fs::directory_iterator(agent.dir / "cache")) {
    CHECK(entry.path().filename() == "npm");
  }

  // A second build takes the download from the cache.
  FakeBuildHost again(agent.dir / "registry");
  again.version_printed["agent"] = "agent 1.2.3";
  REQUIRE(BuildAgentImage(agent.Options(again)).ok());
  CHECK_FALSE(again.Called("curl"));
}

TEST_CASE("a build beside another of the same user's leaves the other's download alone",
          "[agent_image]") {
  OneAgent agent;
  // The other build is half-way through its download of the same agent.
  const std::string others = "cache/npm/@acme_agent-linux-x64@1.2.3.tgz.part";
  agent.dir.Write(others, "the other build's first bytes");
  FakeBuildHost host(agent.dir / "registry");
  host.version_printed["agent"] = "agent 1.2.3";
  REQUIRE(BuildAgentImage(agent.Options(host)).ok());
  CHECK(mojoup::test::Slurp(agent.dir / others) == "the other build's first bytes");
  CHECK(fs::exists(agent.dir / "cache/npm/@acme_agent-linux-x64@1.2.3.tgz"));
}

TEST_CASE("a download that is not what the pin says is refused", "[agent_image]") {
  OneAgent agent;
  agent.pin.integrity = "sha512-" + std::string(86, 'A') + "==";
  FakeBuildHost host(agent.dir / "registry");
  auto built = BuildAgentImage(agent.Options(host));
  REQUIRE(absl::IsDataLoss(built.status()));
  CHECK_THAT(std::string(built.status().message()),
             Contains("@acme/agent-linux-x64@1.2.3 from https://registry.test/") &&
                 Contains("is not what image/agents.txt pins"));
  CHECK_FALSE(host.Called("docker"));
  CHECK_FALSE(host.Called("mmdebstrap"));
  CHECK_FALSE(fs::exists(agent.dir / "cache/npm/@acme_agent-linux-x64@1.2.3.tgz"));
}

TEST_CASE("an agent that does not run in the new image leaves no tag and no image",
          "[agent_image]") {
  OneAgent agent;
  FakeBuildHost host(agent.dir / "registry");
  host.version_printed["agent"] = "agent 0.9.0";
  auto built = BuildAgentImage(agent.Options(host));
  REQUIRE_FALSE(built.ok());
  CHECK_THAT(std::string(built.status().message()),
             Contains("agent 1.2.3 does not run in the new image: `agent --version` printed "
                      "\"agent 0.9.0\""));
  CHECK_FALSE(host.Called("docker tag"));
  CHECK(host.Called("docker image rm --force sha256:feed"));
}

TEST_CASE("a program the pin names must be in the package", "[agent_image]") {
  OneAgent agent;
  agent.pin.programs = {{"agent", "bin/agnet"}};
  FakeBuildHost host(agent.dir / "registry");
  auto built = BuildAgentImage(agent.Options(host));
  REQUIRE_FALSE(built.ok());
  CHECK_THAT(std::string(built.status().message()),
             Contains("has no program bin/agnet (image/agents.txt names it for agent)"));
  CHECK_FALSE(host.Called("docker"));
}

TEST_CASE("with debian:12-slim on the daemon the image is built from the Dockerfile",
          "[agent_image]") {
  OneAgent agent;
  FakeBuildHost host(agent.dir / "registry");
  host.registry = true;
  host.version_printed["agent"] = "1.2.3";
  auto built = BuildAgentImage(agent.Options(host));
  REQUIRE(built.ok());
  CHECK(built->base == "debian:12-slim");
  CHECK(built->id == "sha256:b1");
  CHECK_FALSE(host.Called("mmdebstrap"));
  bool labelled = false;
  for (const std::string& call : host.calls()) {
    if (call.rfind("env DOCKER_BUILDKIT=0 docker build", 0) == 0) {
      labelled = call.find("--label mojoup.agent.agent=1.2.3") != std::string::npos &&
                 call.find("--label mojoup.image.base=debian:12-slim") != std::string::npos;
    }
  }
  CHECK(labelled);
  CHECK(host.Called("docker tag sha256:b1 agents:test"));
}

TEST_CASE("a registry build that fails names apt's first error, without docker's colours",
          "[agent_image]") {
  OneAgent agent;
  FakeBuildHost host(agent.dir / "registry");
  host.registry = true;
  // What Debian's docker.io 20.10 printed for a mirror that refused.
  host.build_error =
      "Step 2/4 : RUN apt-get -o Acquire::Retries=3 update --error-on=any\n"
      "Err:2 http://deb.debian.org/debian bookworm InRelease\n"
      "\x1b[0m\x1b[91mE: \x1b[0m\x1b[91mFailed to fetch "
      "http://deb.debian.org/debian/dists/bookworm/InRelease  Could not connect to "
      "deb.debian.org:80\x1b[0m\x1b[91m\n"
      "\x1b[0m\x1b[91mE: Some index files failed to download.\n"
      "\x1b[0mThe command '/bin/sh -c apt-get update' returned a non-zero code: 100\n";
  auto built = BuildAgentImage(agent.Options(host));
  REQUIRE_FALSE(built.ok());
  CHECK(std::string(built.status().message()) ==
        "docker build failed: exit 100: Failed to fetch "
        "http://deb.debian.org/debian/dists/bookworm/InRelease  Could not connect to "
        "deb.debian.org:80");
  CHECK_FALSE(host.Called("docker tag"));
}

TEST_CASE("a registry that cannot be reached means the Debian base", "[agent_image]") {
  OneAgent agent;
  FakeBuildHost host(agent.dir / "registry");
  host.version_printed["agent"] = "1.2.3";
  AgentImageOptions options = agent.Options(host);
  auto built = BuildAgentImage(options);
  REQUIRE(built.ok());
  CHECK(host.Called("docker pull --quiet debian:12-slim"));
  CHECK(host.Called("mmdebstrap"));

  // Asked for the registry, it is the registry or nothing.
  FakeBuildHost asked(agent.dir / "registry");
  options.commands = &asked;
  options.base = ImageBase::kRegistry;
  asked.version_printed["agent"] = "1.2.3";
  REQUIRE(BuildAgentImage(options).ok());
  CHECK_FALSE(asked.Called("mmdebstrap"));
}

}  // namespace
