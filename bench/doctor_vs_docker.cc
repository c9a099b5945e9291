// bench_doctor_vs_docker [--runs N]
//
// Times `mojoup-node doctor --json` against `docker version` on the same
// daemon, both as whole processes, alternating runs, and prints the medians
// and their ratio. The goal is doctor <= 0.3x docker version.
//
// doctor runs every check: this machine has no real `openshell`, so the fake
// one from libprobe/testing answers on PATH (a shell script, as costly to start
// as a small program). Docker is whatever DOCKER_HOST / the context names.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "mojoup/probe/testing/fake_openshell.h"

#include "timing.h"

using mojoup::bench::Median;
using mojoup::bench::TimeOnce;

int main(int argc, char** argv) {
  int runs = 15;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(10, std::atoi(argv[++i]));
    } else {
      std::cerr << "usage: bench_doctor_vs_docker [--runs N (>= 10)]\n";
      return 2;
    }
  }
  const std::filesystem::path self = std::filesystem::canonical("/proc/self/exe");
  const std::string cli = (self.parent_path() / "mojoup-node").string();

  char dir_template[] = "/tmp/mojoup-bench-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return 1;
  const std::string dir = dir_template;
  mojoup::probe::testing::WriteFakeOpenShell(dir, {});
  const char* old_path = std::getenv("PATH");
  setenv("PATH", (dir + ":" + (old_path ? old_path : "/usr/bin:/bin")).c_str(), 1);
  setenv("MOJOUP_NODE_CONFIG", (dir + "/node.json").c_str(), 1);

  const std::vector<std::string> doctor = {cli, "doctor", "--json"};
  const std::vector<std::string> docker = {"docker", "version"};
  std::vector<double> doctor_ms;
  std::vector<double> docker_ms;
  int doctor_exit = 0;
  int docker_exit = 0;
  // One warm-up each, then alternate so both see the same machine.
  TimeOnce(doctor, &doctor_exit);
  if (TimeOnce(docker, &docker_exit) < 0 || docker_exit != 0) {
    std::cerr << "bench: `docker version` failed (exit " << docker_exit
              << "); start dockerd and install the docker CLI\n";
    std::filesystem::remove_all(dir);
    return 1;
  }
  for (int i = 0; i < runs; ++i) {
    doctor_ms.push_back(TimeOnce(doctor, &doctor_exit));
    docker_ms.push_back(TimeOnce(docker, &docker_exit));
  }
  std::filesystem::remove_all(dir);
  const double doctor_median = Median(doctor_ms);
  const double docker_median = Median(docker_ms);
  std::cout << "runs each:                  " << runs << "\n"
            << "mojoup-node doctor --json:  " << doctor_median << " ms median (exit " << doctor_exit
            << ")\n"
            << "docker version:             " << docker_median << " ms median\n"
            << "ratio doctor / docker:      " << doctor_median / docker_median
            << " (goal <= 0.3)\n";
  return 0;
}
