#include <rapidjson/document.h>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/sha256.h"
#include "mojoup/probe/docker_api.h"

namespace mojoup::probe {
namespace {

namespace json = mojoup::internal::json;

constexpr std::string_view kDefaultHost = "unix:///var/run/docker.sock";

// What is read of config.json and of a context's meta.json.
struct DockerConfig {
  std::string current_context;
};
constexpr auto kDockerConfig =
    json::Message<DockerConfig>(json::Optional("currentContext", &DockerConfig::current_context));
struct DockerHost {
  std::string host;
};
struct ContextEndpoints {
  DockerHost docker;
};
struct ContextMeta {
  ContextEndpoints endpoints;
};
constexpr auto kContextMeta = json::Message<ContextMeta>(
    json::Field("Endpoints", &ContextMeta::endpoints,
                json::Message<ContextEndpoints>(json::Field(
                    "docker", &ContextEndpoints::docker,
                    json::Message<DockerHost>(json::Field("Host", &DockerHost::host))))));

// Docker's own files (config.json, a context's meta.json), which the user
// or a program of theirs wrote: bounded, so that a broken one is a sentence.
absl::Status ParseDockerFile(const std::string& path, const std::string& text,
                             rapidjson::Document& doc) {
  return mojoup::internal::ParseBoundedJson(text, doc, path, {.max_bytes = 4 << 20, .utf8 = false});
}

std::optional<std::string> NonEmptyEnv(Kernel& host, const std::string& name) {
  auto value = host.GetEnv(name);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

}  // namespace

std::string DockerEndpoint::UnixPath() const {
  constexpr std::string_view kScheme = "unix://";
  if (host.rfind(kScheme, 0) != 0) return {};
  return host.substr(kScheme.size());
}

absl::StatusOr<DockerEndpoint> ResolveDockerEndpoint(Kernel& host) {
  if (auto docker_host = NonEmptyEnv(host, "DOCKER_HOST")) {
    return DockerEndpoint{*docker_host, "DOCKER_HOST"};
  }
  std::string config_dir;
  if (auto dir = NonEmptyEnv(host, "DOCKER_CONFIG")) {
    config_dir = *dir;
  } else if (auto home = NonEmptyEnv(host, "HOME")) {
    config_dir = *home + "/.docker";
  }

  std::string context;
  std::string source;
  if (auto name = NonEmptyEnv(host, "DOCKER_CONTEXT")) {
    context = *name;
    source = "DOCKER_CONTEXT";
  } else if (!config_dir.empty()) {
    const std::string config_path = config_dir + "/config.json";
    if (auto text = host.ReadFile(config_path)) {
      rapidjson::Document doc;
      if (absl::Status parsed = ParseDockerFile(config_path, *text, doc); !parsed.ok()) {
        return parsed;
      }
      // A file that is not an object names no context.
      DockerConfig config;
      json::Error error;
      if (!json::Read(doc, config, kDockerConfig, &error).ok() && !error.path.empty()) {
        return absl::InvalidArgumentError(
            fmt::format("{}: \"currentContext\" should be a string", config_path));
      }
      context = config.current_context;
      source = config_path;
    }
  }
  if (context.empty() || context == "default") {
    return DockerEndpoint{std::string(kDefaultHost), "default"};
  }
  if (config_dir.empty()) {
    return absl::NotFoundError(fmt::format(
        "Docker context \"{}\" (from {}) cannot be found: neither DOCKER_CONFIG nor HOME is set",
        context, source));
  }
  const std::string meta_path = fmt::format("{}/contexts/meta/{}/meta.json", config_dir,
                                            mojoup::internal::Sha256Hex(context));
  auto meta = host.ReadFile(meta_path);
  if (!meta) {
    return absl::NotFoundError(
        fmt::format("Docker context \"{}\" (from {}) does not exist: there is no {}", context,
                    source, meta_path));
  }
  rapidjson::Document doc;
  if (absl::Status parsed = ParseDockerFile(meta_path, *meta, doc); !parsed.ok()) return parsed;
  ContextMeta read;
  if (!json::Read(doc, read, kContextMeta).ok() || read.endpoints.docker.host.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: expected a string at Endpoints.docker.Host for Docker context \"{}\"",
                    meta_path, context));
  }
  return DockerEndpoint{read.endpoints.docker.host, fmt::format("context \"{}\"", context)};
}

}  // namespace mojoup::probe
