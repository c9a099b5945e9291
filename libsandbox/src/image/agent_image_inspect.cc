// InspectSandboxImage: what the node's Docker holds under an image reference,
// read from the labels BuildAgentImage puts on the default agent image.
#include <rapidjson/document.h>

#include <cctype>

#include "fmt/format.h"
#include "image/missing_image.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/docker_api_version.h"
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

std::string StringMember(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject() || !object.HasMember(name) || !object[name].IsString()) return {};
  return object[name].GetString();
}

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
  rapidjson::Document body;
  if (!internal::ParseBoundedJson(reply.body, body, "Docker's answer").ok() || !body.IsObject()) {
    return absl::InternalError(
        fmt::format("Docker's answer about the image {} is not a JSON object", reference));
  }
  AgentImage image;
  image.reference = reference;
  image.id = StringMember(body, "Id");
  if (body.HasMember("Size") && body["Size"].IsInt64()) image.size_bytes = body["Size"].GetInt64();
  // Config.Labels is null for an image without labels.
  if (body.HasMember("Config") && body["Config"].IsObject() && body["Config"].HasMember("Labels") &&
      body["Config"]["Labels"].IsObject()) {
    const rapidjson::Value& labels = body["Config"]["Labels"];
    image.base = StringMember(labels, std::string(kImageBaseLabel).c_str());
    for (const auto& label : labels.GetObject()) {
      const std::string_view name(label.name.GetString(), label.name.GetStringLength());
      if (!label.value.IsString() || !name.starts_with(kAgentLabelPrefix) ||
          name.size() == kAgentLabelPrefix.size()) {
        continue;
      }
      image.agents[std::string(name.substr(kAgentLabelPrefix.size()))] = label.value.GetString();
    }
  }
  return image;
}

}  // namespace mojoup::sandbox
