// service_sessions REPO: starts two sessions for the repository holding REPO
// through the node's sandbox service (`mojoup-node serve`), then attaches to
// both at once and prints what each wrote and how it ended. A session that is
// not detached waits for its first attach, so none of its output is missed. The service may be the user's own or the system one
// ($MOJOUP_SERVICE_SOCKET names another); with none running it says so.
//
//   $ mojoup-node serve &
//   $ service_sessions ~/src/app
#include <unistd.h>

#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mojoup/service/client.h"

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
    absl::StatusOr<mojoup::StartResult> started = client->Start(request, {});
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
  std::mutex mu;
  int worst = 0;
  std::vector<std::thread> attached;
  for (const std::string& id : ids) {
    // A client is one per thread, like a Node; each call is a connection of its own.
    attached.emplace_back([socket = client->socket(), &mu, &worst, id] {
      auto mine = mojoup::ServiceClient::Connect(socket);
      auto attachment = mine.ok() ? mine->Attach(id)
                                  : absl::StatusOr<std::unique_ptr<mojoup::Attachment>>(mine.status());
      if (!attachment.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        std::cerr << "service_sessions: " << attachment.status().message() << "\n";
        worst = std::max(worst, 1);
        return;
      }
      mojoup::sandbox::Stdio stdio;
      stdio.in = -1;  // the sessions get no input from here
      absl::StatusOr<int> code = (*attachment)->Pump(stdio, {});
      std::lock_guard<std::mutex> lock(mu);
      if (!code.ok()) {
        std::cerr << "service_sessions: " << code.status().message() << "\n";
        worst = std::max(worst, 1);
        return;
      }
      std::cout << "session " << id << " exited " << *code << "\n";
      worst = std::max(worst, *code);
    });
  }
  for (std::thread& thread : attached) thread.join();
  return worst;
}
