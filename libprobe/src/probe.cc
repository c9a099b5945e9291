#include "mojoup/probe/probe.h"

#include <future>

namespace mojoup::probe {
namespace {

template <class Fn>
Check Timed(Fn&& fn) {
  const auto started = std::chrono::steady_clock::now();
  Check check = fn();
  check.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return check;
}

}  // namespace

Report Probe(const ProbeOptions& options, Host host) {
  // The checks that wait on the outside world run beside the kernel checks.
  auto docker = std::async(std::launch::async, [&] {
    return Timed([&] { return CheckDocker(host.kernel, host.docker, options.timeout); });
  });
  auto openshell = std::async(std::launch::async,
                              [&] { return CheckOpenShell(host.kernel, host.commands, options); });

  Report report;
  report.checks.push_back(Timed([&] { return CheckOsLinux(host.kernel); }));
  report.checks.push_back(Timed([&] { return CheckLandlock(host.kernel); }));
  Check seccomp = Timed([&] { return CheckSeccomp(host.kernel); });
  report.checks.push_back(seccomp);
  const auto wsl_started = std::chrono::steady_clock::now();
  WslInfo wsl = DetectWsl(host.kernel, host.commands, options.timeout);
  const double wsl_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wsl_started)
          .count();
  report.checks.push_back(
      Timed([&] { return CheckSeccompListener(host.kernel, seccomp, wsl, options.timeout); }));
  Check wsl_check = CheckWsl(wsl);
  wsl_check.duration_ms = wsl_ms;
  report.checks.push_back(wsl_check);
  report.checks.push_back(docker.get());
  auto [cli, gateway] = openshell.get();
  report.checks.push_back(std::move(cli));
  report.checks.push_back(std::move(gateway));
  report.verdict = VerdictFor(report.checks);
  return report;
}

Report ProbeSystem(const ProbeOptions& options) {
  auto kernel = MakeSystemKernel();
  auto docker = MakeDockerApi();
  auto commands = MakeSystemCommandRunner();
  return Probe(options, Host{*kernel, *docker, *commands});
}

}  // namespace mojoup::probe
