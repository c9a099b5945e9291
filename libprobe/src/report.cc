#include "mojoup/probe/report.h"

#include <fmt/format.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

namespace mojoup::probe {

std::string_view StatusName(Status status) {
  switch (status) {
    case Status::kPass:
      return "pass";
    case Status::kWarn:
      return "warn";
    case Status::kFail:
      return "fail";
    case Status::kSkip:
      return "skip";
  }
  return "skip";
}

std::string Verdict::Line() const {
  if (can_sandbox) return "Agents run in a sandbox.";
  return "This machine cannot sandbox agents: " + reason.value_or("the probe found no reason.");
}

const Check* Report::Find(std::string_view id) const {
  for (const Check& check : checks) {
    if (check.id == id) return &check;
  }
  return nullptr;
}

Verdict VerdictFor(const std::vector<Check>& checks) {
  for (const Check& check : checks) {
    if (check.required && check.status == Status::kFail) {
      return Verdict{false, check.reason.empty() ? check.summary : check.reason};
    }
  }
  return Verdict{true, std::nullopt};
}

namespace {

void WriteOptional(rapidjson::PrettyWriter<rapidjson::StringBuffer>& w,
                   const std::optional<std::string>& value) {
  if (value) {
    w.String(*value);
  } else {
    w.Null();
  }
}

}  // namespace

std::string ReportToJson(const Report& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.doctor/v1");
  w.Key("can_sandbox");
  w.Bool(report.verdict.can_sandbox);
  w.Key("verdict");
  w.String(report.verdict.Line());
  w.Key("reason");
  WriteOptional(w, report.verdict.reason);
  w.Key("checks");
  w.StartArray();
  for (const Check& check : report.checks) {
    w.StartObject();
    w.Key("id");
    w.String(check.id);
    w.Key("status");
    w.String(StatusName(check.status).data());
    w.Key("required");
    w.Bool(check.required);
    w.Key("summary");
    w.String(check.summary);
    w.Key("detail");
    w.String(check.detail);
    w.Key("remedy");
    WriteOptional(w, check.remedy);
    w.Key("duration_ms");
    w.Double(static_cast<double>(static_cast<long long>(check.duration_ms * 1000.0)) / 1000.0);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::string ReportToText(const Report& report, bool color) {
  auto paint = [color](Status status) -> std::string {
    std::string_view name = StatusName(status);
    if (!color) return fmt::format("{:<4}", name);
    const char* code = status == Status::kPass   ? "32"
                       : status == Status::kWarn ? "33"
                       : status == Status::kFail ? "31"
                                                 : "2";
    return fmt::format("\033[{}m{:<4}\033[0m", code, name);
  };
  std::string out = report.verdict.Line() + "\n";
  for (const Check& check : report.checks) {
    out += fmt::format("  {}  {:<24} {}\n", paint(check.status), check.id, check.summary);
    if ((check.status == Status::kFail || check.status == Status::kWarn) && check.remedy) {
      out += fmt::format("        {:<24} fix: {}\n", "", *check.remedy);
    }
  }
  return out;
}

}  // namespace mojoup::probe
