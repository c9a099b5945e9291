// Escape suite: the node's resources. A session cannot take every CPU of
// the node, nor fill its disk through a container log.
#include <rapidjson/document.h>

#include <thread>

#include "../support/background_process.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"

namespace {

using mojoup::test::BackgroundProcess;
using mojoup::test::RealUser;
using mojoup::test::UserNode;

TEST_CASE("escape: a session runs under a CPU quota and with no container log",
          "[escape][limits]") {
  std::string why = mojoup::test::WhyNoSandboxDocker();
  if (!why.empty()) MOJOUP_SKIP("needs a real dockerd: " << why);
  const RealUser* user = RealUser::Get(why);
  if (user == nullptr) MOJOUP_SKIP(why);
  UserNode node(*user);
  user->Write(node.config,
              "{\"node.sandbox.engine\": \"docker\", \"node.sandbox.role\": true, "
              "\"node.sandbox.runtime\": \"native\", \"node.sandbox.image\": \"" +
                  std::string(mojoup::test::kSandboxImage) +
                  "\", \"node.sandbox.allowed_users\": \"" + user->name +
                  "\", \"node.sandbox.cpus\": \"1.5\"}\n");
  std::vector<std::string> argv = user->Prefix(node.env, node.repo);
  argv.insert(argv.end(), {user->bin + "/mojoup-node", "run", "--", "/bin/sh", "-c",
                           // The quota as the container's cgroup shows it (v2, else v1),
                           // then a flood of output while the test looks at the log.
                           "q=$(cut -d' ' -f1 /sys/fs/cgroup/cpu.max 2>/dev/null || "
                           "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us); echo quota:$q; "
                           "head -c 20000000 /dev/zero; echo; echo flooded; sleep 60"});
  BackgroundProcess session({}, argv);
  auto quota = session.ReadLine(std::chrono::seconds(60));
  INFO(session.Stderr());
  REQUIRE(quota.has_value());
  // 1.5 CPUs of 100 ms periods.
  REQUIRE(*quota == "quota:150000");
  std::optional<std::string> line;
  do {
    line = session.ReadLine(std::chrono::seconds(60));
  } while (line && *line != "flooded");
  REQUIRE(line.has_value());

  auto ids = mojoup::test::ContainersLabelled("mojoup.state=" + node.state);
  REQUIRE(ids.has_value());
  REQUIRE(ids->size() == 1);
  auto kernel = mojoup::probe::MakeSystemKernel();
  auto endpoint = mojoup::probe::ResolveDockerEndpoint(*kernel);
  REQUIRE(endpoint.ok());
  auto reply = mojoup::probe::MakeDockerApi()->Get(
      *endpoint, "/v1.40/containers/" + ids->front() + "/json", std::chrono::seconds(10));
  rapidjson::Document doc;
  doc.Parse(reply.body.c_str());
  REQUIRE(doc.IsObject());
  REQUIRE(doc["HostConfig"]["NanoCpus"].GetInt64() == 1500000000);
  REQUIRE(std::string(doc["HostConfig"]["LogConfig"]["Type"].GetString()) == "none");
  // Twenty megabytes went to the owner's stdout; the node kept none of it.
  REQUIRE(std::string(doc["LogPath"].GetString()).empty());

  session.Stop(std::chrono::seconds(20));
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace
