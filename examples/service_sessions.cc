// service_sessions REPO: starts two sessions for the repository holding REPO
// through the node's sandbox service (`mojoup-node serve`), both detached so
// they run at once, then attaches to each in turn and prints what it wrote
// and how it ended. The service may be the user's own or the system one
// ($MOJOUP_SERVICE_SOCKET names another); with none running it says so.
//
//   $ mojoup-node serve &
//   $ service_sessions ~/src/app
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "mojoup/sandbox/service.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: service_sessions REPO\n";
    return 2;
  }
  absl::StatusOr<mojoup::ServiceClient> client = mojoup::ServiceClient::Connect();
  if (!client.ok()) {
    std::cerr << "service_sessions: " << client.status().message() << "\n";
    return 1;
  }
  std::vector<std::string> ids;
  for (const char* word : {"first", "second"}) {
    mojoup::RunRequest request;
    request.workdir = argv[1];
    request.command = {"/bin/sh", "-c", std::string("echo ") + word + " from $MOJOUP_SESSION"};
    absl::StatusOr<mojoup::StartResult> started = client->Start(request, {.detach = true});
    if (!started.ok()) {
      // One sentence: a limit, a drain, a host that cannot sandbox, bad input.
      std::cerr << "service_sessions: " << started.status().message() << "\n";
      return 1;
    }
    if (started->unsandboxed) {
      std::cerr << "service_sessions: nothing asks for a sandbox for " << argv[1] << "\n";
      return 1;
    }
    ids.push_back(started->id);
  }
  int worst = 0;
  for (const std::string& id : ids) {
    auto attachment = client->Attach(id);
    if (!attachment.ok()) {
      std::cerr << "service_sessions: " << attachment.status().message() << "\n";
      return 1;
    }
    mojoup::sandbox::Stdio stdio;
    stdio.in = -1;  // the sessions get no input from here
    absl::StatusOr<int> code = (*attachment)->Pump(stdio, {});
    if (!code.ok()) {
      std::cerr << "service_sessions: " << code.status().message() << "\n";
      return 1;
    }
    std::cout << "session " << id << " exited " << *code << "\n";
    worst = std::max(worst, *code);
  }
  return worst;
}
