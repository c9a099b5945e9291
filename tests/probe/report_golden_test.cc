// doctor --json, byte for byte: the report is schema mojoup.doctor/v1
// (CONTRACT.md), and scripts read it; compared with the files under
// tests/golden/probe/.
#include <catch2/catch.hpp>
#include <string>

#include "../support/golden.h"
#include "mojoup/probe/report.h"

using namespace mojoup::probe;

namespace {

// Every member of a check, present and absent, with characters to escape:
// id, status, required, summary, detail, remedy, reason, duration_ms.
const Check kPassed{
    "kernel.landlock", Status::kPass, true, "Landlock ABI 4 is available.", "", std::nullopt, "",
    0.1234567};
const Check kFailed{"docker.daemon",
                    Status::kFail,
                    true,
                    "Docker is not running \"here\".",
                    "connect /var/run/docker.sock:\tENOENT \xc3\xa9t\xc3\xa9 \x01",
                    "Start Docker: systemctl start docker",
                    "Docker is not running.",
                    1234.56789};
const Check kWarned{"openshell.version",
                    Status::kWarn,
                    false,
                    "OpenShell is older than 0.9.",
                    "openshell 0.8.1\nbuilt 2026-01-01",
                    "Upgrade OpenShell.",
                    "",
                    7};
const Check kSkipped{"gpu.devices", Status::kSkip, false, "", "", std::nullopt, "", 2.5};

}  // namespace

TEST_CASE("doctor's JSON keeps the bytes of schema mojoup.doctor/v1", "[probe][json]") {
  Report failed;
  failed.checks = {kPassed, kFailed, kWarned, kSkipped};
  failed.verdict = VerdictFor(failed.checks);
  CHECK_GOLDEN("probe/mojoup.doctor.v1.fail.json", ReportToJson(failed));

  Report passed;
  passed.checks = {kPassed, kSkipped};
  passed.verdict = VerdictFor(passed.checks);
  CHECK_GOLDEN("probe/mojoup.doctor.v1.pass.json", ReportToJson(passed));

  CHECK_GOLDEN("probe/mojoup.doctor.v1.empty.json", ReportToJson(Report{}));
}
