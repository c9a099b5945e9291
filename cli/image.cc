#include <unistd.h>

#include <iostream>

#include "commands.h"
#include "fmt/format.h"
#include "mojoup/sandbox/agent_image.h"

namespace mojoup::cli {
namespace {

// Each step as mojoup::ImageStepLine says it, as `setup` does: on a terminal
// one line, finished in place; otherwise (a log, CI) its start and its end
// on lines of their own, so a log shows which step is running.
void ShowStep(const sandbox::ImageStep& step, bool terminal) {
  if (terminal) {
    std::cerr << (step.done ? "\r\033[K" : "") << ImageStepLine(step) << (step.done ? "\n" : "")
              << std::flush;
  } else {
    std::cerr << ImageStepLine(step) << "\n" << std::flush;
  }
}

int Build(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node image build",
                           "Build the agent image sessions run in, on this node.");
  options.add_options()("tools", "only these agents, comma-separated (default: all)",
                        cxxopts::value<std::string>())(
      "tag", "the image reference to tag (default: " + sandbox::DefaultAgentImage() + ")",
      cxxopts::value<std::string>())(
      "base", "where Debian comes from: auto, registry (debian:12-slim) or debian (mmdebstrap)",
      cxxopts::value<std::string>())("mirror", "the Debian mirror mmdebstrap uses",
                                     cxxopts::value<std::string>())(
      "json", "print the image as one JSON object (schema mojoup.image/v1)");
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options,
                        "mojoup-node image build [--tools LIST] [--tag IMAGE] "
                        "[--base auto|registry|debian] [--mirror URL] [--json]",
                        std::move(args), parsed)) {
    return *stop;
  }
  sandbox::AgentImageOptions build;
  build.reference = FlagValue(parsed, "tag");
  if (parsed.count("tools")) {
    build.tools = policy::SplitConfigList(FlagValue(parsed, "tools"));
    if (build.tools.empty()) return PrintError("image build", "--tools: expected agent names");
  }
  auto base = sandbox::ParseImageBase(FlagValue(parsed, "base"));
  if (!base.ok()) return PrintError("image build", base.status());
  build.base = *base;
  build.debian_mirror = FlagValue(parsed, "mirror");
  const bool terminal = isatty(2) == 1;
  build.progress = [terminal](const sandbox::ImageStep& step) { ShowStep(step, terminal); };
  auto image = sandbox::BuildAgentImage(build);
  if (!image.ok()) {
    if (terminal) std::cerr << "\n";
    return PrintError("image build", image.status());
  }
  if (parsed.count("json")) {
    const std::string json = sandbox::AgentImageToJson(*image);
    std::cout << R"({"schema": "mojoup.image/v1", )" << json.substr(1) << "\n";
    return kExitOk;
  }
  std::cout << sandbox::AgentImageSummary(*image) << "\n";
  return kExitOk;
}

}  // namespace

int Image(std::vector<std::string> args) {
  if (args.empty() ||
      (args.front() != "build" && args.front() != "--help" && args.front() != "-h")) {
    return PrintError("image",
                      args.empty()
                          ? "expected a subcommand: build"
                          : fmt::format("unknown subcommand \"{}\"; expected build", args.front()));
  }
  if (args.front() != "build") {
    std::cout << "usage: mojoup-node image build [flags]\n"
              << "Build the agent image sessions run in (" << sandbox::DefaultAgentImage()
              << "); `mojoup-node image build --help` for its flags.\n";
    return kExitOk;
  }
  args.erase(args.begin());
  return Build(std::move(args));
}

}  // namespace mojoup::cli
