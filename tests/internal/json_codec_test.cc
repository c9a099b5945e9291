#include "mojoup/internal/json_codec.h"

#include <sys/types.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace json = mojoup::internal::json;

namespace {

enum class Mode { kRun, kShell };

struct Options {
  unsigned short rows = 0;
  bool detach = false;
};

struct Item {
  std::string name;
  std::optional<double> weight;
};

struct Start {
  std::string workdir;
  std::optional<int> exit_code;
  std::vector<std::string> command;
  std::map<std::string, std::string> environment;
  Options options;
  std::vector<Item> items;
  Mode mode = Mode::kRun;
  std::int64_t started_ns = 0;
  std::uint64_t pid_start = 0;
  uid_t uid = 0;
  std::string problem;
};

constexpr auto kOptions = json::Message<Options>(json::Field("rows", &Options::rows),
                                                 json::Optional("detach", &Options::detach));
constexpr auto kItem =
    json::Message<Item>(json::Field("name", &Item::name), json::Optional("weight", &Item::weight));
constexpr auto kMode = json::Enum<Mode>({{Mode::kRun, "run"}, {Mode::kShell, "shell"}});
constexpr auto kStart = json::Message<Start>(
    json::Const("schema", "mojoup.test/v1"), json::Field("workdir", &Start::workdir),
    json::Optional("exit_code", &Start::exit_code), json::Field("command", &Start::command),
    json::Optional("environment", &Start::environment),
    json::Field("options", &Start::options, kOptions),
    json::Optional("items", &Start::items, kItem), json::Field("mode", &Start::mode, kMode),
    json::Field("started_ns", &Start::started_ns), json::Field("pid_start", &Start::pid_start),
    json::Field("uid", &Start::uid), json::Optional("problem", &Start::problem).OmitDefault());
constexpr auto kStrict = kStart.RefuseUnknown();

Start Example() {
  Start s;
  s.workdir = "/work/\"quoted\"\n\x01\xc3\xa9";
  s.exit_code = -3;
  s.command = {"sh", "-c", "echo hi"};
  s.environment = {{"B", "2"}, {"A", "1"}};
  s.options = {24, true};
  s.items = {{"x", 0.5}, {"y", std::nullopt}};
  s.mode = Mode::kShell;
  s.started_ns = -1700000000123456789;
  s.pid_start = 18446744073709551615u;
  s.uid = 4294967294u;
  return s;
}

// The bytes a hand-written writer makes of Example(), the way the
// business code wrote its messages.
template <typename W>
void HandWritten(W& w, const Start& s) {
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.test/v1");
  w.Key("workdir");
  w.String(s.workdir);
  w.Key("exit_code");
  w.Int(*s.exit_code);
  w.Key("command");
  w.StartArray();
  for (const std::string& c : s.command) w.String(c);
  w.EndArray();
  w.Key("environment");
  w.StartObject();
  for (const auto& [k, v] : s.environment) {
    w.Key(k.c_str());
    w.String(v);
  }
  w.EndObject();
  w.Key("options");
  w.StartObject();
  w.Key("rows");
  w.Uint(s.options.rows);
  w.Key("detach");
  w.Bool(s.options.detach);
  w.EndObject();
  w.Key("items");
  w.StartArray();
  for (const Item& item : s.items) {
    w.StartObject();
    w.Key("name");
    w.String(item.name);
    if (item.weight) {
      w.Key("weight");
      w.Double(*item.weight);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("mode");
  w.String("shell");
  w.Key("started_ns");
  w.Int64(s.started_ns);
  w.Key("pid_start");
  w.Uint64(s.pid_start);
  w.Key("uid");
  w.Uint(s.uid);
  w.EndObject();
}

template <typename W>
std::string HandWrittenJson(const Start& s) {
  rapidjson::StringBuffer buffer;
  W w(buffer);
  if constexpr (std::is_same_v<W, rapidjson::PrettyWriter<rapidjson::StringBuffer>>) {
    w.SetIndent(' ', 2);
  }
  HandWritten(w, s);
  return std::string(buffer.GetString(), buffer.GetSize());
}

absl::Status ReadText(const std::string& text, Start& out, json::Error* error = nullptr,
                      bool strict = false) {
  rapidjson::Document doc;
  if (absl::Status parsed = mojoup::internal::ParseBoundedJson(text, doc, "the test");
      !parsed.ok()) {
    return parsed;
  }
  return strict ? json::Read(doc, out, kStrict, error) : json::Read(doc, out, kStart, error);
}

std::string Valid(const std::string& replace_from = "", const std::string& replace_to = "") {
  std::string text = json::ToJson(Example(), kStart);
  if (!replace_from.empty()) {
    const std::size_t at = text.find(replace_from);
    REQUIRE(at != std::string::npos);
    text.replace(at, replace_from.size(), replace_to);
  }
  return text;
}

std::string ErrorOf(const std::string& text, bool strict = false) {
  Start out;
  const absl::Status status = ReadText(text, out, nullptr, strict);
  REQUIRE(status.code() == absl::StatusCode::kInvalidArgument);
  return std::string(status.message());
}

}  // namespace

TEST_CASE("A codec writes the bytes a hand-written Writer does", "[json_codec]") {
  const Start s = Example();
  REQUIRE(json::ToJson(s, kStart) ==
          HandWrittenJson<rapidjson::Writer<rapidjson::StringBuffer>>(s));
  REQUIRE(json::ToPrettyJson(s, kStart) ==
          HandWrittenJson<rapidjson::PrettyWriter<rapidjson::StringBuffer>>(s));
  REQUIRE(json::ToJson(s.options, kOptions) == R"({"rows":24,"detach":true})");
}

TEST_CASE("A codec leaves out an empty optional and, when asked, a default", "[json_codec]") {
  Start s = Example();
  s.exit_code.reset();
  s.problem = "it broke";
  const std::string text = json::ToJson(s, kStart);
  REQUIRE(text.find("exit_code") == std::string::npos);
  REQUIRE(text.find(R"("uid":4294967294,"problem":"it broke"})") != std::string::npos);
  constexpr auto kNull =
      json::Message<Start>(json::Optional("exit_code", &Start::exit_code).WriteNull());
  REQUIRE(json::ToJson(s, kNull) == R"({"exit_code":null})");
}

TEST_CASE("A codec reads back what it wrote", "[json_codec]") {
  Start s = Example();
  s.problem = "p";
  Start back;
  REQUIRE(ReadText(json::ToJson(s, kStart), back).ok());
  REQUIRE(back.workdir == s.workdir);
  REQUIRE(back.exit_code == s.exit_code);
  REQUIRE(back.command == s.command);
  REQUIRE(back.environment == s.environment);
  REQUIRE(back.options.rows == 24);
  REQUIRE(back.options.detach);
  REQUIRE(back.items.size() == 2);
  REQUIRE(back.items[0].weight == 0.5);
  REQUIRE(!back.items[1].weight);
  REQUIRE(back.mode == Mode::kShell);
  REQUIRE(back.started_ns == s.started_ns);
  REQUIRE(back.pid_start == s.pid_start);
  REQUIRE(back.uid == s.uid);
  REQUIRE(back.problem == "p");
  REQUIRE(json::ToJson(back, kStart) == json::ToJson(s, kStart));
}

TEST_CASE("An absent optional member keeps its value, and null reads as nullopt", "[json_codec]") {
  Start out;
  out.problem = "kept";
  out.exit_code = 7;
  REQUIRE(ReadText(Valid(R"("exit_code":-3)", R"("exit_code":null)"), out).ok());
  REQUIRE(!out.exit_code);
  REQUIRE(out.problem == "kept");
  out.exit_code = 7;
  REQUIRE(ReadText(Valid(R"("exit_code":-3,)", ""), out).ok());
  REQUIRE(out.exit_code == 7);
}

TEST_CASE("A codec names the field and what it expected", "[json_codec]") {
  REQUIRE(ErrorOf(Valid(R"("rows":24)", R"("rows":65536)")) ==
          R"(field "options.rows" must be an integer from 0 to 65535)");
  REQUIRE(ErrorOf(Valid(R"("rows":24)", R"("rows":-1)")) ==
          R"(field "options.rows" must be an integer from 0 to 65535)");
  REQUIRE(ErrorOf(Valid(R"("rows":24)", R"("rows":2.5)")) ==
          R"(field "options.rows" must be an integer from 0 to 65535)");
  REQUIRE(ErrorOf(Valid(R"("rows":24,)", "")) == R"(field "options.rows" is missing)");
  REQUIRE(ErrorOf(Valid(R"("echo hi")", "3")) == R"(field "command[2]" must be a string)");
  REQUIRE(ErrorOf(Valid(R"("A":"1")", R"("A":1)")) == R"(field "environment.A" must be a string)");
  REQUIRE(ErrorOf(Valid(R"("weight":0.5)", R"("weight":"heavy")")) ==
          R"(field "items[0].weight" must be a number)");
  REQUIRE(ErrorOf(Valid(R"("shell")", R"("walk")")) ==
          R"(field "mode" must be one of "run", "shell")");
  REQUIRE(ErrorOf(Valid(R"("mojoup.test/v1")", R"("mojoup.test/v2")")) ==
          R"(field "schema" must be "mojoup.test/v1")");
  REQUIRE(ErrorOf(Valid(R"("detach":true)", R"("detach":"yes")")) ==
          R"(field "options.detach" must be true or false)");
  REQUIRE(ErrorOf(Valid(R"(["sh","-c","echo hi"])", "{}")) ==
          R"(field "command" must be an array)");
  REQUIRE(ErrorOf("[1]") == "the JSON value must be an object");
}

TEST_CASE("A codec checks the range of every integer type", "[json_codec]") {
  REQUIRE(ErrorOf(Valid("4294967294", "4294967296")) ==
          R"(field "uid" must be an integer from 0 to 4294967295)");
  REQUIRE(ErrorOf(Valid("-3", "2147483648")) ==
          R"(field "exit_code" must be an integer from -2147483648 to 2147483647)");
  REQUIRE(
      ErrorOf(Valid("-1700000000123456789", "9223372036854775808")) ==
      R"(field "started_ns" must be an integer from -9223372036854775808 to 9223372036854775807)");
  REQUIRE(ErrorOf(Valid("18446744073709551615", "-1")) ==
          R"(field "pid_start" must be an integer from 0 to 18446744073709551615)");
  Start out;
  REQUIRE(ReadText(Valid("-1700000000123456789", "-9223372036854775808"), out).ok());
  REQUIRE(out.started_ns == INT64_MIN);
}

TEST_CASE("A codec ignores or refuses unknown members, as its message says", "[json_codec]") {
  const std::string extra = Valid(R"("rows":24)", R"("rows":24,"columns":80)");
  Start out;
  REQUIRE(ReadText(extra, out).ok());
  // Each message says for itself: the nested options take what they do not know.
  REQUIRE(ReadText(extra, out, nullptr, true).ok());
  json::Error error;
  REQUIRE(ReadText(Valid(R"("uid")", R"("gid")"), out, &error, true).message() ==
          R"(field "gid" is not one this message has)");
  REQUIRE(error.kind == json::Error::Kind::kUnknown);
  REQUIRE(error.path == "gid");
}

TEST_CASE("Null as absence, lenient members and members of members", "[json_codec]") {
  struct Record {
    Options options;
    std::string problem;
    bool had_git = true;
  };
  constexpr auto kRecord =
      json::Message<Record>(json::Field("rows", json::Member(&Record::options, &Options::rows)),
                            json::Optional("problem", &Record::problem).NullAsAbsent(),
                            json::Optional("had_git", &Record::had_git).Lenient());
  Record r;
  r.options.rows = 3;
  r.problem = "p";
  REQUIRE(json::ToJson(r, kRecord) == R"({"rows":3,"problem":"p","had_git":true})");
  rapidjson::Document doc;
  REQUIRE(mojoup::internal::ParseBoundedJson(R"({"rows":9,"problem":null,"had_git":"no"})", doc,
                                             "the record")
              .ok());
  Record back;
  REQUIRE(json::Read(doc, back, kRecord).ok());
  REQUIRE(back.options.rows == 9);
  REQUIRE(back.problem.empty());
  REQUIRE(back.had_git);
  REQUIRE(mojoup::internal::ParseBoundedJson(R"({"rows":9,"problem":1})", doc, "the record").ok());
  REQUIRE(json::Read(doc, back, kRecord).message() == R"(field "problem" must be a string)");
}

TEST_CASE("Parse bounds untrusted text and names it in a field's error", "[json_codec]") {
  auto parsed = json::Parse<Options>(R"({"rows":1})", kOptions, "the options");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->rows == 1);
  auto big = json::Parse<Options>(std::string(100, ' ') + "{}", kOptions, "the options",
                                  {.max_bytes = 64});
  REQUIRE(big.status().code() == absl::StatusCode::kResourceExhausted);
  auto deep = json::Parse<Options>(std::string(100000, '['), kOptions, "the options");
  REQUIRE(deep.status().message() == "the options nests deeper than 64 levels");
  json::Error error;
  auto wrong = json::Parse<Options>(R"({"rows":true})", kOptions, "the options", {}, &error);
  REQUIRE(wrong.status().message() ==
          R"(the options: field "rows" must be an integer from 0 to 65535)");
  REQUIRE(error.expected == "an integer from 0 to 65535");
}

TEST_CASE("A codec reads and writes arrays of booleans and maps of messages", "[json_codec]") {
  struct Flags {
    std::vector<bool> bits;
    std::map<std::string, Options> named;
  };
  constexpr auto kFlags = json::Message<Flags>(json::Field("bits", &Flags::bits),
                                               json::Field("named", &Flags::named, kOptions));
  Flags f{{true, false}, {{"a", {1, false}}}};
  const std::string text = json::ToJson(f, kFlags);
  REQUIRE(text == R"({"bits":[true,false],"named":{"a":{"rows":1,"detach":false}}})");
  auto back = json::Parse<Flags>(text, kFlags, "the flags");
  REQUIRE(back.ok());
  REQUIRE(back->bits == f.bits);
  REQUIRE(back->named.at("a").rows == 1);
  REQUIRE(json::Parse<Flags>(R"({"bits":[true],"named":{"a":{"rows":"1"}}})", kFlags, "the flags")
              .status()
              .message() ==
          R"(the flags: field "named.a.rows" must be an integer from 0 to 65535)");
}

namespace {

std::string_view ModeName(Mode mode) { return mode == Mode::kRun ? "run" : "shell"; }

}  // namespace

TEST_CASE("Named values and empty members written as null", "[json_codec]") {
  struct Check {
    Mode mode = Mode::kRun;
    std::string tool;
    Mode asked = Mode::kRun;
  };
  constexpr auto kCheck =
      json::Message<Check>(json::Field("mode", &Check::mode, json::Named<Mode>(&ModeName)),
                           json::Optional("tool", &Check::tool).EmptyAsNull(),
                           json::Field("asked", &Check::asked, kMode).EmptyAsNull());
  REQUIRE(json::ToJson(Check{Mode::kShell, "", Mode::kRun}, kCheck) ==
          R"({"mode":"shell","tool":null,"asked":null})");
  REQUIRE(json::ToJson(Check{Mode::kRun, "claude", Mode::kShell}, kCheck) ==
          R"({"mode":"run","tool":"claude","asked":"shell"})");
  constexpr auto kReadable =
      json::Message<Check>(json::Optional("tool", &Check::tool).EmptyAsNull(),
                           json::Field("asked", &Check::asked, kMode).EmptyAsNull());
  auto back = json::Parse<Check>(R"({"tool":null,"asked":"shell"})", kReadable, "the check");
  REQUIRE(back.ok());
  REQUIRE(back->tool.empty());
  REQUIRE(back->asked == Mode::kShell);
  REQUIRE(json::Parse<Check>(R"({"tool":"x","asked":null})", kReadable, "the check")
              .status()
              .message() == R"(the check: field "asked" is missing)");
}

TEST_CASE("A vector of pairs is an object that keeps its members' order", "[json_codec]") {
  struct Labels {
    std::vector<std::pair<std::string, std::string>> labels;
  };
  constexpr auto kLabels = json::Message<Labels>(json::Field("labels", &Labels::labels));
  const Labels l{{{"z", "1"}, {"a", "2"}}};
  REQUIRE(json::ToJson(l, kLabels) == R"({"labels":{"z":"1","a":"2"}})");
  auto back = json::Parse<Labels>(R"({"labels":{"z":"1","a":"2"}})", kLabels, "the labels");
  REQUIRE(back.ok());
  REQUIRE(back->labels == l.labels);
  REQUIRE(json::Parse<Labels>(R"({"labels":{"z":1}})", kLabels, "the labels").status().message() ==
          R"(the labels: field "labels.z" must be a string)");
}

TEST_CASE("OrNull reads an element it cannot read as nullopt and goes on", "[json_codec]") {
  struct Answer {
    std::vector<std::optional<Item>> items;
    std::vector<std::optional<std::string>> names;
  };
  constexpr auto kItem = json::Message<Item>(json::Field("name", &Item::name));
  constexpr auto kAnswer =
      json::Message<Answer>(json::Field("items", &Answer::items, json::OrNull<Item>(kItem)),
                            json::Field("names", &Answer::names, json::OrNull<std::string>()));
  auto back = json::Parse<Answer>(
      R"({"items":[{"name":"a"},{"name":1},3,{}],"names":["x",2,null]})", kAnswer, "the answer");
  REQUIRE(back.ok());
  REQUIRE(back->items.size() == 4);
  REQUIRE(back->items[0]->name == "a");
  REQUIRE_FALSE(back->items[1]);
  REQUIRE_FALSE(back->items[2]);
  REQUIRE_FALSE(back->items[3]);
  REQUIRE(back->names == std::vector<std::optional<std::string>>{"x", std::nullopt, std::nullopt});
  REQUIRE(json::ToJson(*back, kAnswer) ==
          R"({"items":[{"name":"a"},null,null,null],"names":["x",null,null]})");
  // The array itself is still checked.
  REQUIRE(
      json::Parse<Answer>(R"({"items":{},"names":[]})", kAnswer, "the answer").status().message() ==
      R"(the answer: field "items" must be an array)");
}

TEST_CASE("An unchecked constant is written and not looked at on read", "[json_codec]") {
  constexpr auto kChecked = json::Message<Options>(json::Const("schema", "mojoup.options/v1"),
                                                   json::Field("rows", &Options::rows));
  constexpr auto kUnchecked = json::Message<Options>(
      json::Const("schema", "mojoup.options/v1").Unchecked(), json::Field("rows", &Options::rows));
  const Options o{3, false};
  REQUIRE(json::ToJson(o, kUnchecked) == json::ToJson(o, kChecked));
  REQUIRE(json::ToJson(o, kUnchecked) == R"({"schema":"mojoup.options/v1","rows":3})");
  for (const char* text :
       {R"({"rows":4})", R"({"schema":"other","rows":4})", R"({"schema":1,"rows":4})"}) {
    INFO(text);
    REQUIRE_FALSE(json::Parse<Options>(text, kChecked, "the options").ok());
    auto back = json::Parse<Options>(text, kUnchecked, "the options");
    REQUIRE(back.ok());
    REQUIRE(back->rows == 4);
  }
}

namespace {

struct Named {
  std::string name;
  std::vector<std::string> tags;
  std::optional<int> size;
};

constexpr auto kNamed =
    json::Message<Named>(json::Field("name", &Named::name).MissingAsWrongType(),
                         json::Field("tags", &Named::tags).MissingAsWrongType(),
                         json::Field("size", &Named::size).MissingAsWrongType());

}  // namespace

TEST_CASE("A missing member may be refused as one of the wrong type", "[json_codec]") {
  const auto error = [](const std::string& text) {
    rapidjson::Document doc;
    doc.Parse(text.c_str());
    Named named;
    json::Error e;
    CHECK(!json::Read(doc, named, kNamed, &e).ok());
    return e;
  };
  json::Error e = error("{}");
  CHECK(e.kind == json::Error::Kind::kWrongType);
  CHECK(e.message == R"(field "name" must be a string)");
  CHECK(e.expected == "a string");
  e = error(R"({"name":"x"})");
  CHECK(e.message == R"(field "tags" must be an array)");
  // A member that reads null as nullopt is missing all the same.
  e = error(R"({"name":"x","tags":[]})");
  CHECK(e.kind == json::Error::Kind::kMissing);
  CHECK(e.message == R"(field "size" is missing)");
}

TEST_CASE("An error names its field as a JSON Pointer too", "[json_codec]") {
  json::Error e;
  const json::Path root;
  const json::Path items{&root, "items"};
  const json::Path first{&items, {}, 0, true};
  const json::Path odd{&first, "a/b~c"};
  e.Set(json::Error::Kind::kMissing, odd);
  CHECK(e.path == "items[0].a/b~c");
  CHECK(e.pointer == "/items/0/a~1b~0c");
  e.Set(json::Error::Kind::kWrongType, root, "an object");
  CHECK(e.pointer.empty());
  CHECK(json::FormatPointer(items) == "/items");
}
