// The default agent image: a Debian 12 root filesystem with git, curl,
// ca-certificates and the agent CLIs' own native programs, built on the node
// (`mojoup-node image build`). Which agent versions go in is pinned in one
// file, image/agents.txt, compiled into the library.
//
//   mojoup::sandbox::AgentImageOptions options;
//   options.tools = {"claude-code", "codex"};              // empty: all five
//   options.progress = [](const mojoup::sandbox::ImageStep& step) { show(step); };
//   auto built = mojoup::sandbox::BuildAgentImage(options);
//   if (!built.ok()) return Fail(built.status());
//   use(built->reference, built->agents);                   // {"claude-code": "2.1.332", ...}
//
// The image is tagged only once it is whole: every agent in it has answered
// `--version` inside it. Its labels say what is inside:
//   mojoup.image          "agents"
//   mojoup.image.version  the project version that built it (kVersion)
//   mojoup.image.base     "debian:12-slim" (from a registry) or "debian:12 (mmdebstrap)"
//   mojoup.agent.<tool>   the version of each agent CLI in it
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/probe/command_runner.h"
#include "mojoup/probe/docker_api.h"

namespace mojoup::sandbox {

inline constexpr std::string_view kImageLabel = "mojoup.image";
inline constexpr std::string_view kImageVersionLabel = "mojoup.image.version";
inline constexpr std::string_view kImageBaseLabel = "mojoup.image.base";
inline constexpr std::string_view kAgentLabelPrefix = "mojoup.agent.";

// "mojoup/agents:<project version>": node.sandbox.image when none is set.
std::string DefaultAgentImage();

// One agent CLI as pinned in image/agents.txt.
struct AgentPin {
  std::string tool;       // the --tool name: "claude-code"
  std::string package;    // the npm package users know: "@anthropic-ai/claude-code"
  std::string version;    // "2.1.332"
  std::string native;     // the per-platform package holding the program (linux-x64)
  std::string tarball;    // its path under the registry
  std::string integrity;  // "sha512-<base64>", as the registry publishes it
  // Programs put on PATH: name and path inside the package.
  std::vector<std::pair<std::string, std::string>> programs;
};

// Every pinned agent, in the file's order.
const std::vector<AgentPin>& AgentPins();

// Where the base system comes from.
enum class ImageBase {
  kAuto,      // a registry when `debian:12-slim` can be pulled, else Debian's packages
  kRegistry,  // image/Dockerfile, from debian:12-slim
  kDebian,    // mmdebstrap from the node's Debian mirror, then docker import
};

// One step of a build, reported as it starts and as it ends.
struct ImageStep {
  int index = 0;  // 1-based
  int count = 0;
  std::string what;  // "download claude-code 2.1.332 (186 MB)"
  bool done = false;
  std::chrono::milliseconds took{0};  // when done
};

struct AgentImageOptions {
  std::string reference;           // empty: DefaultAgentImage()
  std::vector<std::string> tools;  // empty: every pinned agent
  // The agents to choose from; empty: AgentPins(). A harness pins its own.
  std::vector<AgentPin> pins;
  ImageBase base = ImageBase::kAuto;
  // Downloads are kept here between builds (checked again each time);
  // empty: $XDG_CACHE_HOME/mojoup or ~/.cache/mojoup.
  std::string cache_dir;
  std::string npm_registry = "https://registry.npmjs.org";
  // The Debian mirror mmdebstrap uses; empty: the node's own apt sources.
  std::string debian_mirror;
  std::function<void(const ImageStep&)> progress;
  probe::CommandRunner* commands = nullptr;  // null: the real one
};

struct AgentImage {
  std::string reference;
  std::string id;
  std::string base;                           // the mojoup.image.base label
  std::map<std::string, std::string> agents;  // tool -> version
  std::int64_t size_bytes = 0;
};

// {"reference": ..., "id": ..., "base": ..., "agents": {"claude-code": "2.1.332", ...},
//  "size_bytes": N}: one object, as `image build --json` and `status --json` print it.
std::string AgentImageToJson(const AgentImage& image);

// "Built mojoup/agents:0.1.0 (sha256:0123456789ab, 1690 MB) on debian:
// claude-code 2.1.332, codex 0.98.0.": the line `image build` prints.
std::string AgentImageSummary(const AgentImage& image);

// The base an `image build --base` word names: auto (also ""), registry or
// debian; InvalidArgument naming the word otherwise.
absl::StatusOr<ImageBase> ParseImageBase(std::string_view word);

// Builds and tags the image. InvalidArgument for an unknown tool; anything
// else says which step failed and why, and leaves no tag behind.
absl::StatusOr<AgentImage> BuildAgentImage(const AgentImageOptions& options);

// What the node's Docker holds under `reference`, read from its labels;
// NotFound when the daemon has no such image, Unavailable when it does not
// answer. An image of another origin comes back with empty `agents`.
absl::StatusOr<AgentImage> InspectSandboxImage(const probe::DockerEndpoint& endpoint,
                                               probe::DockerApi& docker,
                                               const std::string& reference,
                                               std::chrono::milliseconds timeout);

}  // namespace mojoup::sandbox
