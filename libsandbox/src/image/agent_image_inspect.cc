// InspectSandboxImage: what the node's Docker holds under an image reference,
// read from the labels BuildAgentImage puts on the default agent image.
#include <cctype>

#include "fmt/format.h"
#include "image/missing_image.h"
#include "mojoup/internal/docker_api_version.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/sandbox/agent_image.h"

namespace mojoup::sandbox {
namespace {

using probe::DockerReply;

// The reference as a path segment: the characters a reference is made of
// stay as they are (dockerd routes /images/{name:.*}/json, slashes and all);
// anything else is percent-encoded, so it cannot end the path or start a query.
std::string PathOf(std::string_view reference) {
  std::string out;
  for (char c : reference) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0 || c == '.' || c == '_' || c == '-' || c == '/' || c == ':' ||
        c == '@') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", byte);
    }
  }
  return out;
}

namespace json = internal::json;

// What is read of `GET /images/{name}/json`: a member of another type is as
// if absent, and so is a label that is not a string. Config.Labels is null
// for an image without labels.
struct InspectedConfig {
  std::map<std::string, std::optional<std::string>> labels;
};
struct InspectedImage {
  std::string id;
  std::int64_t size = 0;
  InspectedConfig config;
};
constexpr auto kInspectedImage = json::Message<InspectedImage>(
    json::Optional("Id", &InspectedImage::id).Lenient(),
    json::Optional("Size", &InspectedImage::size).Lenient(),
    json::Optional("Config", &InspectedImage::config,
                   json::Message<InspectedConfig>(json::Optional("Labels", &InspectedConfig::labels,
                                                                 json::OrNull<std::string>())
                                                      .Lenient()))
        .Lenient());

}  // namespace

std::string MissingImageSentence(const std::string& reference, std::string_view problem) {
  if (reference == DefaultAgentImage()) {
    return fmt::format(
        "the sandbox image {} is not on this node's Docker; build it with `mojoup-node image "
        "build`",
        reference);
  }
  // dockerd's "No such image: REF" says only what the sentence says.
  std::string said(problem);
  for (char& c : said) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool says_more = said.find("no such image") == std::string::npos;
  return fmt::format(
      "the sandbox image {} is not on this node's Docker{}; build or load it, or set "
      "node.sandbox.image",
      reference, says_more ? fmt::format(" ({})", problem) : "");
}

absl::StatusOr<AgentImage> InspectSandboxImage(const probe::DockerEndpoint& endpoint,
                                               probe::DockerApi& docker,
                                               const std::string& reference,
                                               std::chrono::milliseconds timeout) {
  if (reference.empty()) return absl::InvalidArgumentError("no image reference was given");
  DockerReply reply = docker.Get(
      endpoint, fmt::format("{}/images/{}/json", internal::kDockerApiPrefix, PathOf(reference)),
      timeout);
  if (reply.failure != DockerReply::Failure::kNone) {
    return absl::UnavailableError(
        fmt::format("Docker did not say whether it holds the image {}: {}", reference,
                    probe::DockerReplyProblem(reply)));
  }
  if (reply.status == 404) {
    return absl::NotFoundError(MissingImageSentence(reference, probe::DockerReplyProblem(reply)));
  }
  if (reply.status != 200) {
    return absl::InternalError(fmt::format("Docker could not inspect the image {}: {}", reference,
                                           probe::DockerReplyProblem(reply)));
  }
  auto inspected = json::Parse<InspectedImage>(reply.body, kInspectedImage, "Docker's answer");
  if (!inspected.ok()) {
    return absl::InternalError(
        fmt::format("Docker's answer about the image {} is not a JSON object", reference));
  }
  AgentImage image;
  image.reference = reference;
  image.id = inspected->id;
  image.size_bytes = inspected->size;
  for (const auto& [name, value] : inspected->config.labels) {
    if (!value) continue;
    if (name == kImageBaseLabel) image.base = *value;
    if (name.starts_with(kAgentLabelPrefix) && name.size() > kAgentLabelPrefix.size()) {
      image.agents[name.substr(kAgentLabelPrefix.size())] = *value;
    }
  }
  return image;
}

}  // namespace mojoup::sandbox
