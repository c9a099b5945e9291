// doctor --json, byte for byte: the report is schema mojoup.doctor/v1
// (CONTRACT.md), and scripts read it; compared with the files under
// tests/golden/probe/.
#include <catch2/catch.hpp>
#include <string>

#include "../support/golden.h"
#include "mojoup/probe/report.h"

using namespace mojoup::probe;

namespace {

Check Passed() {
  Check check;
  check.id = "kernel.landlock";
  check.status = Status::kPass;
  check.required = true;
  check.summary = "Landlock ABI 4 is available.";
  check.detail = "";
  check.duration_ms = 0.1234567;
  return check;
}

Check Failed() {
  Check check;
  check.id = "docker.daemon";
  check.status = Status::kFail;
  check.required = true;
  check.summary = "Docker is not running \"here\".";
  check.detail = "connect /var/run/docker.sock:\tENOENT \xc3\xa9t\xc3\xa9 \x01";
  check.remedy = "Start Docker: systemctl start docker";
  check.reason = "Docker is not running.";
  check.duration_ms = 1234.56789;
  return check;
}

Check Warned() {
  Check check;
  check.id = "openshell.version";
  check.status = Status::kWarn;
  check.required = false;
  check.summary = "OpenShell is older than 0.9.";
  check.detail = "openshell 0.8.1\nbuilt 2026-01-01";
  check.remedy = "Upgrade OpenShell.";
  check.duration_ms = 7;
  return check;
}

Check Skipped() {
  Check check;
  check.id = "gpu.devices";
  check.status = Status::kSkip;
  check.required = false;
  check.summary = "";
  check.duration_ms = 2.5;
  return check;
}

}  // namespace

TEST_CASE("doctor's JSON keeps the bytes of schema mojoup.doctor/v1", "[probe][json]") {
  Report failed;
  failed.checks = {Passed(), Failed(), Warned(), Skipped()};
  failed.verdict = VerdictFor(failed.checks);
  CHECK_GOLDEN("probe/mojoup.doctor.v1.fail.json", ReportToJson(failed));

  Report passed;
  passed.checks = {Passed(), Skipped()};
  passed.verdict = VerdictFor(passed.checks);
  CHECK_GOLDEN("probe/mojoup.doctor.v1.pass.json", ReportToJson(passed));

  CHECK_GOLDEN("probe/mojoup.doctor.v1.empty.json", ReportToJson(Report{}));
}
