// The node's sandbox image: whether its Docker holds it (doctor's
// sandbox.image check, status), and building the default one (setup).
#include "fmt/format.h"
#include "node/node_state.h"

namespace mojoup {
namespace {

// Docker answers an image inspect in milliseconds; the probe's own deadline.
constexpr std::chrono::milliseconds kImageTimeout{2000};

std::string Capitalized(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 32);
  return text;
}

// "sha256:7a121f86eae0, 1694 MB, base debian:12-slim"
std::string ImageFacts(const sandbox::AgentImage& image) {
  std::string facts = image.id.substr(0, image.id.find(':') + 13);
  facts += fmt::format(", {} MB", (image.size_bytes + 500'000) / 1'000'000);
  if (!image.base.empty()) facts += ", base " + image.base;
  return facts;
}

probe::Check ImageCheck(const std::string& reference,
                        const absl::StatusOr<sandbox::AgentImage>& image,
                        const probe::Check* docker) {
  probe::Check check;
  check.id = std::string(probe::check_id::kSandboxImage);
  // Sessions cannot start without the image, but the machine can sandbox
  // agents all the same: the verdict is the host's.
  check.required = false;
  const bool is_default = reference == sandbox::DefaultAgentImage();
  const std::string which =
      is_default ? reference : fmt::format("{} (node.sandbox.image)", reference);
  if (image.ok()) {
    check.status = probe::Status::kPass;
    check.summary =
        image->agents.empty()
            ? fmt::format(
                  "The sandbox image {} is on this node's Docker; its labels name no "
                  "agent CLIs.",
                  which)
            : fmt::format("The sandbox image {} holds {}.", which, AgentList(image->agents));
    check.detail = ImageFacts(*image);
  } else if (absl::IsNotFound(image.status())) {
    check.status = probe::Status::kWarn;
    check.summary = fmt::format("The sandbox image {} is not on this node's Docker.", which);
    check.remedy = is_default ? "Build it with `mojoup-node image build`."
                              : "Build or load it, or set node.sandbox.image.";
    check.detail = std::string(image.status().message());
  } else if (docker != nullptr && docker->status != probe::Status::kPass) {
    // docker.daemon has said why already.
    check.status = probe::Status::kSkip;
    check.summary = fmt::format(
        "The sandbox image {} was not looked for: Docker does not answer (docker.daemon).", which);
  } else {
    check.status = probe::Status::kWarn;
    check.summary = Capitalized(std::string(image.status().message())) + ".";
    check.remedy = "Read the daemon's log (`journalctl -u docker`), then run doctor again.";
  }
  return check;
}

}  // namespace

std::string AgentList(const std::map<std::string, std::string>& agents) {
  std::string list;
  for (const auto& [tool, version] : agents) {
    list += fmt::format("{}{} {}", list.empty() ? "" : ", ", tool, version);
  }
  return list;
}

std::string SandboxImage(const policy::NodeConfig& config) {
  return config.Get("node.sandbox.image").value_or(sandbox::DefaultAgentImage());
}

std::string ImageStepLine(const sandbox::ImageStep& step) {
  std::string line = fmt::format("[{}/{}] {} ...", step.index, step.count, step.what);
  if (step.done) {
    line += fmt::format(" done in {:.1f} s", static_cast<double>(step.took.count()) / 1000.0);
  }
  return line;
}

probe::Report Node::Doctor() const {
  probe::Report report = state_->Probe();
  const auto started = std::chrono::steady_clock::now();
  probe::Check image = ImageCheck(SandboxImage(state_->config), Image(&report),
                                  report.Find(probe::check_id::kDocker));
  image.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  // Not required: the verdict stays the probe's.
  report.checks.push_back(std::move(image));
  std::unique_ptr<probe::CommandRunner> own_commands;
  if (state_->options.commands == nullptr) own_commands = probe::MakeSystemCommandRunner();
  report.checks.push_back(
      GitCheck(state_->options.commands ? *state_->options.commands : *own_commands));
  return report;
}

absl::StatusOr<sandbox::AgentImage> Node::Image(const probe::Report* report) const {
  const std::string reference = SandboxImage(state_->config);
  if (report != nullptr) {
    const probe::Check* docker = report->Find(probe::check_id::kDocker);
    if (docker != nullptr && docker->status != probe::Status::kPass) {
      return absl::UnavailableError(fmt::format(
          "Docker does not answer, so whether it holds the sandbox image {} is not known",
          reference));
    }
  }
  std::unique_ptr<probe::Kernel> own_kernel;
  std::unique_ptr<probe::DockerApi> own_docker;
  if (state_->options.kernel == nullptr) own_kernel = probe::MakeSystemKernel();
  if (state_->options.docker == nullptr) own_docker = probe::MakeDockerApi();
  probe::Kernel& kernel = state_->options.kernel ? *state_->options.kernel : *own_kernel;
  probe::DockerApi& docker = state_->options.docker ? *state_->options.docker : *own_docker;
  auto endpoint = probe::ResolveDockerEndpoint(kernel);
  if (!endpoint.ok()) return absl::UnavailableError(endpoint.status().message());
  return sandbox::InspectSandboxImage(*endpoint, docker, reference, kImageTimeout);
}

std::optional<std::string> Node::ImageToBuild() const {
  const std::string reference = SandboxImage(state_->config);
  if (reference != sandbox::DefaultAgentImage()) return std::nullopt;
  if (!absl::IsNotFound(Image().status())) return std::nullopt;
  return reference;
}

absl::StatusOr<sandbox::AgentImage> Node::BuildImage(
    std::function<void(const sandbox::ImageStep&)> progress) const {
  sandbox::AgentImageOptions options;
  options.reference = sandbox::DefaultAgentImage();
  options.progress = std::move(progress);
  options.commands = state_->options.commands;
  if (state_->options.build_image) return state_->options.build_image(options);
  return sandbox::BuildAgentImage(options);
}

}  // namespace mojoup
