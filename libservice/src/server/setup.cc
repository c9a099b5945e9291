#include "mojoup/service/setup.h"

#include <istream>
#include <ostream>
#include <string>

#include "mojoup/policy/node_config.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/service/server.h"

namespace mojoup {
namespace {

// The next line of `in`, or `fallback` when it has ended.
std::string Answer(std::istream& in, const std::string& fallback) {
  std::string line;
  if (!std::getline(in, line)) return fallback;
  return line;
}

}  // namespace

std::optional<SetupChanges> AskSetupQuestions(const Node& node, std::istream& in,
                                              std::ostream& out) {
  probe::Report report = node.Doctor();
  out << report.verdict.Line() << "\n";
  if (!report.verdict.can_sandbox) {
    out << "(You can still set the node up; `mojoup-node doctor` shows every check.)\n";
  }
  out << "\n";
  SetupChanges changes;
  for (const policy::SetupQuestion& question : policy::SetupQuestions(node.config())) {
    absl::StatusOr<std::string> answer;
    for (;;) {
      out << question.text << " [" << question.fallback << "]: " << std::flush;
      std::string line;
      if (!std::getline(in, line)) return std::nullopt;
      answer = policy::SetupAnswer(question.key, line.empty() ? question.fallback : line);
      if (answer.ok()) break;
      out << "  " << answer.status().message() << "\n";
    }
    changes[question.key] = *answer;
    if (question.key == "node.sandbox.role" && *answer == "false") break;
  }
  return changes;
}

absl::Status BuildAgentImageShown(const Node& node, std::ostream& out) {
  auto built = node.BuildImage([&out](const sandbox::ImageStep& step) {
    out << ImageStepLine(step) << "\n" << std::flush;
  });
  if (!built.ok()) return built.status();
  out << "Built the agent image " << built->reference << ".\n";
  return absl::OkStatus();
}

absl::Status BuildImageIfMissing(const Node& node, std::ostream& out) {
  const std::string image = SandboxImage(node.config());
  if (image != sandbox::DefaultAgentImage()) {
    out << "node.sandbox.image is " << image
        << ", not the agent image mojoup-node builds; nothing to build.\n";
    return absl::OkStatus();
  }
  if (node.Image().ok()) {
    out << "The agent image " << image << " is already on this node's Docker.\n";
    return absl::OkStatus();
  }
  return BuildAgentImageShown(node, out);
}

absl::Status OfferImage(const Node& node, std::istream& in, std::ostream& out) {
  if (node.config().Get("node.sandbox.role") != "true") return absl::OkStatus();
  std::optional<std::string> image = node.ImageToBuild();
  if (!image) return absl::OkStatus();
  for (;;) {
    out << "Build the agent image " << *image << " now? [Y/n] " << std::flush;
    const std::string line = Answer(in, "n");
    if (line.empty() || line == "y" || line == "Y" || line == "yes") {
      return BuildAgentImageShown(node, out);
    }
    if (line == "n" || line == "N" || line == "no") {
      out << "Not built; sessions need it: build it with `mojoup-node image build`.\n";
      return absl::OkStatus();
    }
    out << "  answer y or n\n";
  }
}

absl::Status EnableServiceShown(const std::string& kind, std::ostream& out) {
  if (kind == "no") return absl::OkStatus();
  if (absl::Status enabled = EnableServiceUnit(kind); !enabled.ok()) return enabled;
  out << "Enabled and started the " << kind << " sandbox service (mojoup-node.service).\n";
  return absl::OkStatus();
}

absl::Status OfferService(const Node& node, std::istream& in, std::ostream& out) {
  if (node.config().Get("node.sandbox.role") != "true") return absl::OkStatus();
  for (;;) {
    out << "Run the sandbox service under systemd: user (for you alone), system (for every "
           "allowed user), or no? [no] "
        << std::flush;
    std::string line = Answer(in, "no");
    if (line.empty() || line == "n" || line == "N") line = "no";
    if (line == "no" || line == "user" || line == "system") return EnableServiceShown(line, out);
    out << "  answer user, system or no\n";
  }
}

}  // namespace mojoup
