#include "mojoup/probe/report.h"

#include <fmt/format.h>

#include "mojoup/internal/json_codec.h"

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

namespace json = mojoup::internal::json;

// Milliseconds, truncated to the microsecond.
struct MillisCodec {
  using value_type = double;
  template <typename W>
  void Write(W& w, double ms) const {
    w.Double(static_cast<double>(static_cast<long long>(ms * 1000.0)) / 1000.0);
  }
};

constexpr auto kCheck = json::Message<Check>(
    json::Field("id", &Check::id),
    json::Field("status", &Check::status, json::Named<Status>(&StatusName)),
    json::Field("required", &Check::required), json::Field("summary", &Check::summary),
    json::Field("detail", &Check::detail), json::Field("remedy", &Check::remedy).WriteNull(),
    json::Field("duration_ms", &Check::duration_ms, MillisCodec{}));

// The report as schema mojoup.doctor/v1 has it: the verdict's line beside
// its parts.
struct DoctorJson {
  bool can_sandbox = false;
  std::string verdict;
  std::optional<std::string> reason;
  std::vector<Check> checks;
};

constexpr auto kDoctorJson = json::Message<DoctorJson>(
    json::Const("schema", "mojoup.doctor/v1"), json::Field("can_sandbox", &DoctorJson::can_sandbox),
    json::Field("verdict", &DoctorJson::verdict),
    json::Field("reason", &DoctorJson::reason).WriteNull(),
    json::Field("checks", &DoctorJson::checks, kCheck));

}  // namespace

std::string ReportToJson(const Report& report) {
  const DoctorJson written{report.verdict.can_sandbox, report.verdict.Line(), report.verdict.reason,
                           report.checks};
  return json::ToPrettyJson(written, kDoctorJson) + "\n";
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
