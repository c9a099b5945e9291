// The agent image in words: what `image build` prints and reads.
#include "fmt/format.h"
#include "mojoup/sandbox/agent_image.h"

namespace mojoup::sandbox {

std::string AgentImageSummary(const AgentImage& image) {
  std::string agents;
  for (const auto& [tool, version] : image.agents) {
    agents += fmt::format("{}{} {}", agents.empty() ? "" : ", ", tool, version);
  }
  return fmt::format("Built {} ({}, {:.0f} MB) on {}: {}.", image.reference, image.id.substr(0, 19),
                     static_cast<double>(image.size_bytes) / 1e6, image.base, agents);
}

absl::StatusOr<ImageBase> ParseImageBase(std::string_view word) {
  if (word == "registry") return ImageBase::kRegistry;
  if (word == "debian") return ImageBase::kDebian;
  if (word.empty() || word == "auto") return ImageBase::kAuto;
  return absl::InvalidArgumentError(
      fmt::format("--base: expected auto, registry or debian, not \"{}\"", word));
}

}  // namespace mojoup::sandbox
