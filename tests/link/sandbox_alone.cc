// Links against mojoup::sandbox and nothing else: MakeNativeBackend reaches
// probe::MakeDockerApi in the layer below, which mojoup::sandbox must bring.
#include <iostream>
#include <string_view>

#include "mojoup/sandbox/native_backend.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "run") {
    mojoup::probe::DockerEndpoint endpoint;
    endpoint.host = "unix:///var/run/docker.sock";
    auto backend = mojoup::sandbox::MakeNativeBackend(endpoint);
    std::cout << backend->name() << "\n";
  }
  return 0;
}
