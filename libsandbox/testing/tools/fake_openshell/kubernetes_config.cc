// The Kubernetes driver's block of --driver-config-json: selected by the
// gateway, decoded as serde decodes KubernetesSandboxDriverConfig, and
// validated as the driver validates it (v0.0.111
// crates/openshell-server/src/compute/mod.rs select_driver_config;
// crates/openshell-driver-kubernetes/src/driver.rs
// KubernetesSandboxDriverConfig::from_template, validate,
// kubernetes_driver_config_for_spec; crates/openshell-core/src/
// driver_mounts.rs). The block reaches the driver as a protobuf Struct, so
// its keys come sorted and its numbers as doubles (crates/openshell-core/src/
// proto_struct.rs value_to_json); the error texts are serde 1.0.228's and
// serde_json 1.0.149's (Cargo.lock at the tag).

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {
namespace {

// What a field holds, as its Rust type has it.
enum class Kind { kString, kOptionalString, kBool, kStringMap, kValueList, kStruct, kStructList };

struct Schema;
struct Field {
  std::string_view name;
  Kind kind;
  const Schema* nested = nullptr;  // kStruct, kStructList
};
struct Schema {
  std::string_view type;  // the Rust struct's name
  std::vector<Field> fields;
};

const Schema kResources{"KubernetesContainerResourceConfig",
                        {{"requests", Kind::kStringMap}, {"limits", Kind::kStringMap}}};
const Schema kVolumeMount{"KubernetesDriverVolumeMountConfig",
                          {{"name", Kind::kString},
                           {"mount_path", Kind::kString},
                           {"sub_path", Kind::kOptionalString},
                           {"read_only", Kind::kBool}}};
const Schema kContainer{"KubernetesContainerDriverConfig",
                        {{"resources", Kind::kStruct, &kResources},
                         {"volume_mounts", Kind::kStructList, &kVolumeMount}}};
const Schema kContainers{"KubernetesDriverContainersConfig",
                         {{"agent", Kind::kStruct, &kContainer}}};
const Schema kPod{"KubernetesPodDriverConfig",
                  {{"node_selector", Kind::kStringMap},
                   {"runtime_class_name", Kind::kString},
                   {"tolerations", Kind::kValueList},
                   {"priority_class_name", Kind::kString}}};
const Schema kClaim{"KubernetesPersistentVolumeClaimConfig",
                    {{"claim_name", Kind::kString}, {"read_only", Kind::kBool}}};
const Schema kVolume{
    "KubernetesDriverVolumeConfig",
    {{"name", Kind::kString}, {"persistent_volume_claim", Kind::kStruct, &kClaim}}};
const Schema kConfig{"KubernetesSandboxDriverConfig",
                     {{"pod", Kind::kStruct, &kPod},
                      {"containers", Kind::kStruct, &kContainers},
                      {"volumes", Kind::kStructList, &kVolume}}};

// serde_json's JsonUnexpected: how an offending value is named.
std::string Unexpected(const rapidjson::Value& value) {
  if (value.IsNull()) return "null";
  if (value.IsBool()) return fmt::format("boolean `{}`", value.GetBool());
  if (value.IsNumber()) {
    // A double, printed as ryu prints it (an integral value keeps ".0").
    const double number = value.GetDouble();
    if (number == std::floor(number) && std::fabs(number) < 1e16) {
      return fmt::format("floating point `{:.1f}`", number);
    }
    return fmt::format("floating point `{}`", number);
  }
  if (value.IsString()) {
    // serde's Unexpected::Str: `string {:?}`, Rust's Debug quoting.
    std::string quoted = "\"";
    for (char c : std::string_view(value.GetString(), value.GetStringLength())) {
      if (c == '"' || c == '\\') {
        quoted += '\\';
        quoted += c;
      } else if (c == '\n') {
        quoted += "\\n";
      } else if (c == '\t') {
        quoted += "\\t";
      } else if (c == '\r') {
        quoted += "\\r";
      } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        quoted += fmt::format("\\u{{{:x}}}", static_cast<unsigned char>(c));
      } else {
        quoted += c;
      }
    }
    return "string " + quoted + "\"";
  }
  if (value.IsArray()) return "sequence";
  return "map";
}

std::string InvalidType(const rapidjson::Value& value, std::string_view expected) {
  return fmt::format("invalid type: {}, expected {}", Unexpected(value), expected);
}

// serde::de::Error::unknown_field with its OneOf list.
std::string UnknownField(std::string_view key, const Schema& schema) {
  std::vector<std::string> names;
  for (const Field& field : schema.fields) names.push_back(fmt::format("`{}`", field.name));
  std::string expected;
  if (names.empty()) {
    expected = "there are no fields";
  } else if (names.size() == 1) {
    expected = "expected " + names[0];
  } else if (names.size() == 2) {
    expected = "expected " + names[0] + " or " + names[1];
  } else {
    expected = "expected one of " + fmt::format("{}", fmt::join(names, ", "));
  }
  return fmt::format("unknown field `{}`, {}", key, expected);
}

std::string DecodeStruct(const rapidjson::Value& value, const Schema& schema);

// One field's value as its type takes it: "" or serde's message.
std::string DecodeField(const rapidjson::Value& value, const Field& field) {
  switch (field.kind) {
    case Kind::kOptionalString:
      if (value.IsNull()) return {};
      [[fallthrough]];
    case Kind::kString:
      return value.IsString() ? std::string() : InvalidType(value, "a string");
    case Kind::kBool:
      return value.IsBool() ? std::string() : InvalidType(value, "a boolean");
    case Kind::kStringMap:
      if (!value.IsObject()) return InvalidType(value, "a map");
      for (const auto& entry : value.GetObject()) {
        if (!entry.value.IsString()) return InvalidType(entry.value, "a string");
      }
      return {};
    case Kind::kValueList:
      return value.IsArray() ? std::string() : InvalidType(value, "a sequence");
    case Kind::kStruct:
      return DecodeStruct(value, *field.nested);
    case Kind::kStructList:
      if (!value.IsArray()) return InvalidType(value, "a sequence");
      for (const auto& item : value.GetArray()) {
        if (std::string problem = DecodeStruct(item, *field.nested); !problem.empty()) {
          return problem;
        }
      }
      return {};
  }
  return {};
}

// A derived Deserialize with `default, deny_unknown_fields`: a map (keys
// in the Struct's sorted order, the first bad one reported) or a sequence
// (fields in declaration order, missing ones defaulted).
std::string DecodeStruct(const rapidjson::Value& value, const Schema& schema) {
  if (value.IsArray()) {
    const auto& items = value.GetArray();
    if (items.Size() > schema.fields.size()) {
      return fmt::format("invalid length {}, expected fewer elements in array", items.Size());
    }
    for (rapidjson::SizeType i = 0; i < items.Size(); ++i) {
      if (std::string problem = DecodeField(items[i], schema.fields[i]); !problem.empty()) {
        return problem;
      }
    }
    return {};
  }
  if (!value.IsObject()) return InvalidType(value, fmt::format("struct {}", schema.type));
  std::vector<std::string> keys;
  for (const auto& member : value.GetObject()) {
    keys.emplace_back(member.name.GetString(), member.name.GetStringLength());
  }
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys) {
    auto field = std::find_if(schema.fields.begin(), schema.fields.end(),
                              [&](const Field& f) { return f.name == key; });
    if (field == schema.fields.end()) return UnknownField(key, schema);
    const rapidjson::Value& item =
        value[rapidjson::Value(rapidjson::StringRef(key.data(), key.size()))];
    if (std::string problem = DecodeField(item, *field); !problem.empty()) return problem;
  }
  return {};
}

// crates/openshell-driver-kubernetes/src/config.rs is_dns_1123_label.
bool IsDns1123Label(std::string_view text) {
  if (text.empty() || text.size() > 63) return false;
  auto edge = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!edge(text.front()) || !edge(text.back())) return false;
  return std::all_of(text.begin(), text.end(), [&](char c) { return edge(c) || c == '-'; });
}

std::string LabelProblem(std::string_view value, std::string_view field) {
  if (IsDns1123Label(value)) return {};
  return fmt::format(
      "{} must be a DNS-1123 label: use lowercase alphanumeric characters or '-', start and end "
      "with an alphanumeric character, and use at most 63 characters",
      field);
}

std::string SubdomainProblem(std::string_view value, std::string_view field) {
  bool valid = value.size() <= 253;
  for (std::size_t start = 0; valid;) {
    const std::size_t dot = value.find('.', start);
    valid = IsDns1123Label(value.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (valid) return {};
  return fmt::format(
      "{} must be a DNS-1123 subdomain: use lowercase alphanumeric characters, '-' or '.', start "
      "and end with an alphanumeric character, and use at most 253 characters",
      field);
}

const rapidjson::Value* Member(const rapidjson::Value& object, const char* key) {
  if (!object.IsObject() || !object.HasMember(key)) return nullptr;
  return &object[key];
}

// The decoded volumes and mounts (the block passed DecodeStruct). Arrays
// standing for structs are read by field order.
const rapidjson::Value* Nth(const rapidjson::Value& value, const char* key, std::size_t index) {
  if (value.IsArray())
    return index < value.Size() ? &value[static_cast<rapidjson::SizeType>(index)] : nullptr;
  return Member(value, key);
}

std::string NthString(const rapidjson::Value& value, const char* key, std::size_t index) {
  const rapidjson::Value* item = Nth(value, key, index);
  return item != nullptr && item->IsString() ? item->GetString() : std::string();
}

bool NthBool(const rapidjson::Value& value, const char* key, std::size_t index, bool fallback) {
  const rapidjson::Value* item = Nth(value, key, index);
  return item != nullptr && item->IsBool() ? item->GetBool() : fallback;
}

void ReadDecoded(const rapidjson::Value& block, KubernetesConfig& config) {
  if (const rapidjson::Value* volumes = Nth(block, "volumes", 2);
      volumes != nullptr && volumes->IsArray()) {
    for (const auto& item : volumes->GetArray()) {
      KubernetesVolume volume;
      volume.name = NthString(item, "name", 0);
      if (const rapidjson::Value* claim = Nth(item, "persistent_volume_claim", 1)) {
        volume.claim = NthString(*claim, "claim_name", 0);
        volume.read_only = NthBool(*claim, "read_only", 1, true);
      }
      config.volumes.push_back(std::move(volume));
    }
  }
  const rapidjson::Value* containers = Nth(block, "containers", 1);
  const rapidjson::Value* agent = containers != nullptr ? Nth(*containers, "agent", 0) : nullptr;
  const rapidjson::Value* mounts = agent != nullptr ? Nth(*agent, "volume_mounts", 1) : nullptr;
  if (mounts == nullptr || !mounts->IsArray()) return;
  for (const auto& item : mounts->GetArray()) {
    KubernetesMount mount;
    mount.name = NthString(item, "name", 0);
    mount.mount_path = NthString(item, "mount_path", 1);
    if (const rapidjson::Value* sub = Nth(item, "sub_path", 2); sub != nullptr && sub->IsString()) {
      mount.sub_path = sub->GetString();
    }
    mount.read_only = NthBool(item, "read_only", 3, true);
    config.mounts.push_back(std::move(mount));
  }
}

// driver_mounts::validate_mount_subpath.
std::string SubpathProblem(const std::string& sub_path) {
  if (sub_path.empty()) return "mount subpath must not be empty";
  if (Trim(sub_path) != sub_path) return "mount subpath must not contain surrounding whitespace";
  if (sub_path.find('\0') != std::string::npos) return "mount subpath must not contain NUL bytes";
  bool escapes = sub_path.front() == '/';
  std::size_t start = 0;
  while (!escapes) {
    const std::size_t slash = sub_path.find('/', start);
    escapes = sub_path.substr(start, slash - start) == "..";
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return escapes ? "mount subpath must be relative and must not contain '..'" : std::string();
}

// validate_kubernetes_driver_volumes.
std::string VolumesProblem(const KubernetesConfig& config) {
  constexpr std::string_view kReserved[] = {
      "openshell-client-tls", "openshell-upstream-proxy-auth", "openshell-sa-token",
      "spiffe-workload-api",  "openshell-supervisor-bin",      "workspace"};
  std::set<std::string> names;
  for (const KubernetesVolume& volume : config.volumes) {
    if (std::string problem = LabelProblem(volume.name, "volumes[].name"); !problem.empty()) {
      return problem;
    }
    if (std::find(std::begin(kReserved), std::end(kReserved), volume.name) != std::end(kReserved)) {
      return fmt::format("volume name '{}' is reserved for OpenShell-managed volumes", volume.name);
    }
    if (!names.insert(volume.name).second) {
      return fmt::format("duplicate kubernetes driver_config volume '{}'", volume.name);
    }
    if (std::string problem =
            SubdomainProblem(volume.claim, "volumes[].persistent_volume_claim.claim_name");
        !problem.empty()) {
      return problem;
    }
  }
  return {};
}

// validate_kubernetes_driver_volume_mounts.
std::string MountsProblem(const KubernetesConfig& config) {
  std::set<std::string> targets;
  for (const KubernetesMount& mount : config.mounts) {
    if (std::string problem = LabelProblem(mount.name, "containers.agent.volume_mounts[].name");
        !problem.empty()) {
      return problem;
    }
    auto volume = std::find_if(config.volumes.begin(), config.volumes.end(),
                               [&](const KubernetesVolume& v) { return v.name == mount.name; });
    if (volume == config.volumes.end()) {
      return fmt::format("volume mount references unknown kubernetes driver_config volume '{}'",
                         mount.name);
    }
    if (volume->read_only && !mount.read_only) {
      return fmt::format(
          "volume mount '{}' cannot set read_only=false because the PVC volume is read_only=true",
          mount.name);
    }
    std::string normalized;
    if (std::string problem = TargetProblem(mount.mount_path, normalized); !problem.empty()) {
      return problem;
    }
    // validate_workspace_mount_target against DEFAULT_WORKSPACE_ROOT.
    if (PathIsOrUnder(kDefaultWorkspace, normalized)) {
      return fmt::format("mount target '{}' is reserved for the OpenShell workspace",
                         mount.mount_path);
    }
    if (!targets.insert(normalized).second) {
      return fmt::format("duplicate kubernetes driver_config mount target '{}'", normalized);
    }
    if (mount.sub_path) {
      if (std::string problem = SubpathProblem(*mount.sub_path); !problem.empty()) return problem;
    }
  }
  return {};
}

}  // namespace

std::string ReadKubernetesConfig(const rapidjson::Value& driver_config, KubernetesConfig& config) {
  config = KubernetesConfig{};
  if (!driver_config.IsObject() || !driver_config.HasMember("kubernetes")) return {};
  const rapidjson::Value& block = driver_config["kubernetes"];
  if (!block.IsObject()) {
    return GrpcError("InvalidArgument", "template.driver_config.kubernetes must be an object");
  }
  std::string problem = DecodeStruct(block, kConfig);
  if (problem.empty()) {
    ReadDecoded(block, config);
    problem = VolumesProblem(config);
    if (problem.empty()) problem = MountsProblem(config);
  }
  if (!problem.empty()) {
    return GrpcError("InvalidArgument", "invalid kubernetes driver_config: " + problem);
  }
  // kubernetes_driver_config_for_spec: the service-account token's path is
  // protected (the SPIFFE socket's too, when enabled: not modelled).
  constexpr std::string_view kProtected = "/var/run/secrets/openshell";
  for (const KubernetesMount& mount : config.mounts) {
    std::string normalized = mount.mount_path;
    while (normalized.size() > 1 && normalized.back() == '/') normalized.pop_back();
    if (PathIsOrUnder(normalized, kProtected) || PathIsOrUnder(kProtected, normalized)) {
      return GrpcError("InvalidArgument",
                       fmt::format("mount path '{}' conflicts with reserved OpenShell path '{}'",
                                   mount.mount_path, kProtected));
    }
    // has_explicit_sandbox_data_mount: a mount under /sandbox takes over
    // the workspace's persistence, and no workspace volume is made.
    if (PathIsOrUnder(normalized, kDefaultWorkspace)) config.explicit_workspace_mount = true;
  }
  return {};
}

}  // namespace mojoup::fake_openshell
