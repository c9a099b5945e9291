// fake-dockerd --socket PATH [--mode answer|refuse|hang|error500|garbage]
//              [--engine VERSION] [--api VERSION]
// Serves the fake Docker daemon until SIGINT or SIGTERM. Prints "ready" on
// stdout once the socket accepts connections.
#include <signal.h>

#include <cxxopts.hpp>
#include <iostream>
#include <map>

#include "mojoup/probe/testing/fake_docker_daemon.h"

using mojoup::probe::testing::FakeDockerDaemon;

int main(int argc, char** argv) {
  cxxopts::Options options("fake-dockerd", "A fake Docker Engine API on a unix socket.");
  options.add_options()("socket", "socket path", cxxopts::value<std::string>())(
      "mode", "answer, refuse, hang, error500 or garbage",
      cxxopts::value<std::string>()->default_value("answer"))(
      "engine", "engine version", cxxopts::value<std::string>()->default_value("20.10.24"))(
      "api", "API version", cxxopts::value<std::string>()->default_value("1.41"));
  static const std::map<std::string, FakeDockerDaemon::Mode> kModes = {
      {"answer", FakeDockerDaemon::Mode::kAnswer},
      {"refuse", FakeDockerDaemon::Mode::kRefuse},
      {"hang", FakeDockerDaemon::Mode::kHang},
      {"error500", FakeDockerDaemon::Mode::kError500},
      {"garbage", FakeDockerDaemon::Mode::kGarbage}};
  try {
    auto args = options.parse(argc, argv);
    if (!args.count("socket")) throw std::invalid_argument("--socket is required");
    auto mode = kModes.find(args["mode"].as<std::string>());
    if (mode == kModes.end()) throw std::invalid_argument("unknown --mode");
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    FakeDockerDaemon daemon(args["socket"].as<std::string>(), mode->second);
    daemon.SetVersion(args["engine"].as<std::string>(), args["api"].as<std::string>());
    std::cout << "ready" << std::endl;
    int sig = 0;
    sigwait(&stop, &sig);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fake-dockerd: " << e.what() << "\n";
    return 2;
  }
}
