// The OCSF view checked against OCSF 1.8.0's own schema files (kept under
// tests/ocsf/, see its README): a validator that reads them, and the view's
// events for every kind of audit line put through it.
#include "mojoup/sandbox/audit_ocsf.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../support/golden.h"
#include "fmt/format.h"

namespace mojoup::sandbox {
namespace audit_ocsf_test {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::VectorContains;

// One attribute of a class or object, its layers merged: the requirement
// the nearest layer gives, and every enum value any layer lists.
struct Attribute {
  std::string requirement;
  std::map<std::string, std::string> captions;  // enum value -> caption
};

struct Shape {
  std::map<std::string, Attribute> attributes;
  std::vector<std::string> at_least_one;  // the nearest layer's constraint
  std::string category;
  std::string caption;  // the class's or object's own
  int uid = 0;
};

// OCSF's schema as its files say it, for the classes and objects whose
// files are there.
class OcsfSchema {
 public:
  explicit OcsfSchema(std::string root) : root_(std::move(root)) {
    dictionary_ = Load("dictionary.json");
    categories_ = Load("categories.json");
    version_ = Load("version.json")["version"].GetString();
  }

  const std::string& version() const { return version_; }

  // What is wrong with `event` as an event of the class its class_uid names;
  // empty when nothing is.
  std::vector<std::string> Check(const rapidjson::Value& event) {
    std::vector<std::string> problems;
    if (!event.IsObject() || !event.HasMember("class_uid") || !event["class_uid"].IsInt()) {
      return {"the event has no integer class_uid"};
    }
    const int class_uid = event["class_uid"].GetInt();
    auto file = kClassFiles.find(class_uid);
    if (file == kClassFiles.end()) return {fmt::format("no schema file for class {}", class_uid)};
    Shape shape = ShapeOf(file->second, kEventFiles);
    const int category_uid =
        shape.category == "other"
            ? 0
            : categories_["attributes"][shape.category.c_str()]["uid"].GetInt();
    if (category_uid != 0) {
      // As the schema's compiler does: a class's class_uid and category_uid
      // each have one value, its own, in place of the base event's.
      shape.attributes["class_uid"].captions = {{std::to_string(class_uid), shape.caption}};
      shape.attributes["category_uid"].captions = {
          {std::to_string(category_uid),
           categories_["attributes"][shape.category.c_str()]["caption"].GetString()}};
    }
    if (category_uid * 1000 + shape.uid != class_uid) {
      problems.push_back(fmt::format("class_uid {} is not {}'s", class_uid, file->second));
    }
    Expect(event, "category_uid", category_uid, problems);
    if (event.HasMember("activity_id") && event["activity_id"].IsInt()) {
      Expect(event, "type_uid", std::int64_t{class_uid} * 100 + event["activity_id"].GetInt(),
             problems);
    }
    CheckObject("", event, shape, problems);
    return problems;
  }

 private:
  static inline const std::map<int, std::string> kClassFiles = {
      {0, "events/base_event.json"},
      {1007, "events/system/process_activity.json"},
      {2004, "events/findings/detection_finding.json"},
      {4001, "events/network/network_activity.json"},
      {4002, "events/network/http_activity.json"},
      {5019, "events/discovery/device_config_state_change.json"}};
  // Where a class another extends is.
  static inline const std::map<std::string, std::string> kEventFiles = {
      {"base_event", "events/base_event.json"},
      {"network", "events/network/network.json"},
      {"system", "events/system/system.json"},
      {"finding", "events/findings/finding.json"},
      {"discovery", "events/discovery/discovery.json"}};

  rapidjson::Document Load(const std::string& relative) const {
    std::ifstream in(root_ + "/" + relative, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    rapidjson::Document doc;
    doc.Parse(text.str().c_str());
    REQUIRE_FALSE(doc.HasParseError());
    REQUIRE(doc.IsObject());
    return doc;
  }

  // A class or object with every layer it extends, the dictionary first.
  Shape ShapeOf(const std::string& relative, const std::map<std::string, std::string>& parents) {
    std::vector<std::string> chain = {relative};
    for (;;) {
      rapidjson::Document doc = Load(chain.back());
      if (!doc.HasMember("extends")) break;
      const std::string parent = doc["extends"].GetString();
      auto known = parents.find(parent);
      chain.push_back(known != parents.end() ? known->second : "objects/" + parent + ".json");
    }
    Shape shape;
    for (auto layer = chain.rbegin(); layer != chain.rend(); ++layer) {
      rapidjson::Document doc = Load(*layer);
      if (doc.HasMember("category")) shape.category = doc["category"].GetString();
      if (doc.HasMember("uid")) shape.uid = doc["uid"].GetInt();
      shape.caption = doc["caption"].GetString();
      if (doc.HasMember("constraints") && doc["constraints"].HasMember("at_least_one")) {
        shape.at_least_one.clear();
        for (const auto& name : doc["constraints"]["at_least_one"].GetArray()) {
          shape.at_least_one.emplace_back(name.GetString());
        }
      }
      // "$include" brings a profile's attributes; no profile is applied.
      for (const auto& member : doc["attributes"].GetObject()) {
        const std::string name = member.name.GetString();
        if (name == "$include") continue;
        Attribute& attribute = shape.attributes[name];
        if (attribute.captions.empty()) AddEnum(dictionary_["attributes"][name.c_str()], attribute);
        if (member.value.HasMember("requirement")) {
          attribute.requirement = member.value["requirement"].GetString();
        }
        AddEnum(member.value, attribute);
      }
    }
    return shape;
  }

  static void AddEnum(const rapidjson::Value& definition, Attribute& attribute) {
    if (!definition.IsObject() || !definition.HasMember("enum")) return;
    for (const auto& value : definition["enum"].GetObject()) {
      attribute.captions[value.name.GetString()] = value.value["caption"].GetString();
    }
  }

  static void Expect(const rapidjson::Value& event, const char* name, std::int64_t want,
                     std::vector<std::string>& problems) {
    if (event.HasMember(name) && event[name].IsInt64() && event[name].GetInt64() != want) {
      problems.push_back(fmt::format("{} is {}, not {}", name, event[name].GetInt64(), want));
    }
  }

  void CheckObject(const std::string& at, const rapidjson::Value& value, const Shape& shape,
                   std::vector<std::string>& problems) {
    for (const auto& [name, attribute] : shape.attributes) {
      if (attribute.requirement == "required" && !value.HasMember(name.c_str())) {
        problems.push_back(fmt::format("{}{} is required", at, name));
      }
    }
    if (!shape.at_least_one.empty() &&
        std::none_of(shape.at_least_one.begin(), shape.at_least_one.end(),
                     [&](const std::string& name) { return value.HasMember(name.c_str()); })) {
      problems.push_back(fmt::format("{} needs one of its at_least_one attributes",
                                     at.empty() ? "the event" : at.substr(0, at.size() - 1)));
    }
    for (const auto& member : value.GetObject()) {
      const std::string name = member.name.GetString();
      auto attribute = shape.attributes.find(name);
      if (attribute == shape.attributes.end()) {
        problems.push_back(fmt::format("{}{} is not an attribute of it", at, name));
        continue;
      }
      CheckAttribute(at + name, member.value, attribute->second, problems);
      CheckSibling(at, value, name, attribute->second, problems);
    }
  }

  void CheckAttribute(const std::string& at, const rapidjson::Value& value,
                      const Attribute& attribute, std::vector<std::string>& problems) {
    const std::string name = at.substr(at.rfind('.') + 1);
    const rapidjson::Value& definition = dictionary_["attributes"][name.c_str()];
    const std::string type = definition["type"].GetString();
    const bool array = definition.HasMember("is_array") && definition["is_array"].GetBool();
    if (array != value.IsArray()) {
      problems.push_back(fmt::format("{} must {}be an array", at, array ? "" : "not "));
      return;
    }
    if (array) {
      for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
        CheckValue(fmt::format("{}[{}]", at, i), value[i], type, attribute, problems);
      }
    } else {
      CheckValue(at, value, type, attribute, problems);
    }
  }

  void CheckValue(const std::string& at, const rapidjson::Value& value, const std::string& type,
                  const Attribute& attribute, std::vector<std::string>& problems) {
    if (type.size() < 2 || type.substr(type.size() - 2) != "_t") {
      if (!value.IsObject()) {
        problems.push_back(fmt::format("{} must be a {} object", at, type));
        return;
      }
      CheckObject(at + ".", value, ShapeOf("objects/" + type + ".json", {}), problems);
      return;
    }
    if (!Scalar(value, type)) {
      problems.push_back(fmt::format("{} must be of type {}", at, type));
      return;
    }
    if (!attribute.captions.empty()) {
      const std::string key =
          value.IsString() ? value.GetString() : std::to_string(value.GetInt64());
      if (attribute.captions.count(key) == 0) {
        problems.push_back(fmt::format("{} is {}, which its enum does not list", at, key));
      }
    }
  }

  // Whether `value` is of the scalar `type`, its base types and range.
  bool Scalar(const rapidjson::Value& value, const std::string& type) {
    const rapidjson::Value& types = dictionary_["types"]["attributes"];
    if (!types.HasMember(type.c_str())) return false;
    const rapidjson::Value& definition = types[type.c_str()];
    if (definition.HasMember("range")) {
      const auto& range = definition["range"];
      if (!value.IsInt64() || value.GetInt64() < range[0].GetInt64() ||
          value.GetInt64() > range[1].GetInt64()) {
        return false;
      }
    }
    if (definition.HasMember("max_len") && value.IsString() &&
        value.GetStringLength() > definition["max_len"].GetUint()) {
      return false;
    }
    if (definition.HasMember("type")) return Scalar(value, definition["type"].GetString());
    if (type == "string_t") return value.IsString();
    if (type == "integer_t") return value.IsInt();
    if (type == "long_t") return value.IsInt64();
    if (type == "float_t") return value.IsNumber();
    if (type == "boolean_t") return value.IsBool();
    return type == "json_t";
  }

  // An enum's id and its name ("severity_id" and "severity") must agree,
  // unless the id is Other (the name is then the source's own).
  void CheckSibling(const std::string& at, const rapidjson::Value& object, const std::string& name,
                    const Attribute& attribute, std::vector<std::string>& problems) {
    const rapidjson::Value& definition = dictionary_["attributes"][name.c_str()];
    if (!definition.HasMember("sibling") || !object[name.c_str()].IsInt64()) return;
    const std::string sibling = definition["sibling"].GetString();
    const std::string id = std::to_string(object[name.c_str()].GetInt64());
    if (id == "99" || !object.HasMember(sibling.c_str()) || attribute.captions.count(id) == 0)
      return;
    const std::string caption = attribute.captions.at(id);
    if (!object[sibling.c_str()].IsString() || object[sibling.c_str()].GetString() != caption) {
      problems.push_back(fmt::format("{}{} must be \"{}\" as {} says", at, sibling, caption, name));
    }
  }

  std::string root_;
  rapidjson::Document dictionary_;
  rapidjson::Document categories_;
  std::string version_;
};

OcsfSchema& Schema() {
  static OcsfSchema schema(std::string(MOJOUP_SOURCE_DIR) + "/tests/ocsf");
  return schema;
}

AuditLine Base(std::uint64_t seq, std::string event) {
  AuditLine line;
  line.seq = seq;
  line.time = "2026-12-04T18:20:01.123Z";
  line.session = "0123456789abcdef";
  line.event = std::move(event);
  return line;
}

AuditLine EgressLine(std::string method, std::string decision) {
  AuditLine line = Base(2, "egress");
  line.method = std::move(method);
  line.host = "api.example.com";
  line.port = 443;
  line.decision = std::move(decision);
  line.rule = "allow api.example.com:443";
  line.source = "repo: /r/.mojoup/policy.json";
  if (line.method != "CONNECT") line.path = "/v1/items";
  line.status = line.decision == "allow" && line.method != "CONNECT" ? 200 : 0;
  line.bytes_up = 120;
  line.bytes_down = 4096;
  line.duration_ms = 12.5;
  if (line.decision == "deny") line.reason = "blocked-by-policy";
  return line;
}

AuditLine Said(std::uint64_t seq, std::string event, std::string kind, std::string message) {
  AuditLine line = Base(seq, std::move(event));
  line.kind = std::move(kind);
  line.message = std::move(message);
  return line;
}

AuditLine ApprovalLine(std::uint64_t seq, std::string event) {
  AuditLine line = Base(seq, std::move(event));
  line.approval = "3";
  line.host = "pypi.org";
  line.port = 443;
  return line;
}

// Every kind of line the view maps, and the class it must map it to.
std::vector<std::pair<AuditLine, int>> EveryKind() {
  std::vector<std::pair<AuditLine, int>> lines;
  lines.push_back({EgressLine("GET", "allow"), 4002});
  lines.push_back({EgressLine("POST", "error"), 4002});
  lines.push_back({EgressLine("PROPFIND", "allow"), 4002});
  lines.push_back({EgressLine("CONNECT", "allow"), 4001});
  lines.push_back({EgressLine("CONNECT", "error"), 4001});
  lines.push_back({EgressLine("GET", "deny"), 2004});
  lines.push_back({EgressLine("CONNECT", "deny"), 2004});
  AuditLine start = Base(1, "session.start");
  start.user = "me";
  start.uid = 1000;
  start.repo = "/home/me/app";
  start.tool = "claude";
  start.runtime = "native";
  start.ask = true;
  lines.push_back({start, 1007});
  AuditLine end = Base(9, "session.end");
  end.exit_code = 3;
  end.allowed = 4;
  lines.push_back({end, 1007});
  lines.push_back({Base(9, "session.end"), 1007});
  AuditLine accept = Said(3, "policy.accept", "", "The policy was accepted as it is now.");
  accept.file = "/home/me/app/.mojoup/policy.json";
  lines.push_back({accept, 5019});
  AuditLine request = ApprovalLine(4, "approval.request");
  request.expires = "2026-12-04T18:25:01.123Z";
  lines.push_back({request, 2004});
  for (const char* state : {"approved", "denied", "expired"}) {
    AuditLine decision = ApprovalLine(5, "approval.decision");
    decision.state = state;
    decision.by = "me";
    lines.push_back({decision, 2004});
  }
  lines.push_back({Said(6, "notice", "quarantine", "The sign-in was kept aside."), 2004});
  lines.push_back({Said(7, "notice", "sign-in", "The sign-in was written back."), 0});
  AuditLine coalesced = Base(8, "audit.coalesced");
  coalesced.count = 12;
  coalesced.of = 7;
  lines.push_back({coalesced, 0});
  AuditLine limit = Base(8, "audit.limit");
  limit.max_bytes = 16777216;
  lines.push_back({limit, 2004});
  return lines;
}

rapidjson::Document Ocsf(const AuditLine& line) {
  auto text = AuditLineToOcsf(line, {.hostname = "node-1"});
  REQUIRE(text.ok());
  rapidjson::Document doc;
  doc.Parse(text->c_str());
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

TEST_CASE("every audit line's OCSF event validates against OCSF 1.8.0's schema", "[ocsf]") {
  REQUIRE(Schema().version() == kOcsfVersion);
  for (const auto& [line, class_uid] : EveryKind()) {
    INFO(line.event << " " << line.method << " " << line.decision << " " << line.state);
    rapidjson::Document event = Ocsf(line);
    CHECK(event["class_uid"].GetInt() == class_uid);
    CHECK(std::string(event["metadata"]["version"].GetString()) == "1.8.0");
    CHECK(event["metadata"]["sequence"].GetInt() == static_cast<int>(line.seq));
    CHECK(event["time"].GetInt64() == 1796408401123);
    const std::vector<std::string> problems = Schema().Check(event);
    CHECK(problems == std::vector<std::string>{});
  }
}

// The validator finds what is wrong, so that its silence above means
// something.
std::vector<std::string> ProblemsAfter(const std::function<void(rapidjson::Document&)>& change) {
  rapidjson::Document event = Ocsf(EgressLine("GET", "allow"));
  change(event);
  return Schema().Check(event);
}

TEST_CASE("the OCSF validator refuses what the schema does not allow", "[ocsf]") {
  CHECK(ProblemsAfter([](auto&) {}).empty());
  CHECK_THAT(ProblemsAfter([](auto& e) { e.RemoveMember("time"); }),
             VectorContains(std::string("time is required")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e.RemoveMember("metadata"); }),
             VectorContains(std::string("metadata is required")));
  CHECK_THAT(
      ProblemsAfter([](auto& e) { e["metadata"]["product"].RemoveMember("name"); }),
      VectorContains(std::string("metadata.product needs one of its at_least_one attributes")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e.AddMember("bogus", 1, e.GetAllocator()); }),
             VectorContains(std::string("bogus is not an attribute of it")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["severity_id"].SetInt(7); }),
             VectorContains(std::string("severity_id is 7, which its enum does not list")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["severity"].SetString("High"); }),
             VectorContains(std::string("severity must be \"Informational\" as severity_id says")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["dst_endpoint"]["port"].SetString("443"); }),
             VectorContains(std::string("dst_endpoint.port must be of type port_t")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["dst_endpoint"]["port"].SetInt(70000); }),
             VectorContains(std::string("dst_endpoint.port must be of type port_t")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["http_request"]["http_method"].SetString("BREW"); }),
             VectorContains(
                 std::string("http_request.http_method is BREW, which its enum does not list")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["type_uid"].SetInt64(400201); }),
             VectorContains(std::string("type_uid is 400201, not 400203")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["category_uid"].SetInt(1); }),
             VectorContains(std::string("category_uid is 1, not 4")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["class_uid"].SetInt(1007); }),
             VectorContains(std::string("process is required")));
  CHECK_THAT(ProblemsAfter([](auto& e) { e["http_response"].RemoveMember("code"); }),
             VectorContains(std::string("http_response.code is required")));
}

TEST_CASE("the OCSF view of an HTTP request and of a session's start", "[ocsf]") {
  auto http = AuditLineToOcsf(EgressLine("GET", "allow"), {.hostname = "node-1"});
  REQUIRE(http.ok());
  CHECK_GOLDEN("sandbox/ocsf.http_activity.json", *http);
  auto finding = AuditLineToOcsf(EgressLine("CONNECT", "deny"), {.hostname = "node-1"});
  REQUIRE(finding.ok());
  CHECK_GOLDEN("sandbox/ocsf.detection_finding.json", *finding);
  auto start = AuditLineToOcsf(EveryKind()[7].first, {.hostname = "node-1"});
  REQUIRE(start.ok());
  CHECK_GOLDEN("sandbox/ocsf.process_activity.json", *start);
}

TEST_CASE("the OCSF view refuses a line whose time it cannot read", "[ocsf]") {
  AuditLine line = Base(1, "notice");
  line.time = "yesterday";
  auto event = AuditLineToOcsf(line);
  REQUIRE_FALSE(event.ok());
  CHECK_THAT(std::string(event.status().message()), Contains("is not an RFC 3339 time"));
}

}  // namespace
}  // namespace audit_ocsf_test
}  // namespace mojoup::sandbox
