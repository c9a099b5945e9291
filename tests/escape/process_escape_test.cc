// Escape suite: the processes. A session cannot leave a set-user-ID or
// set-group-ID file on the host, where it would run as the user (or the
// user's group) for anyone who can reach it; the proxy's memory, where the
// real keys are, is not readable even by the user's other processes; and the
// proxy survives clients that hang up in the middle of a response.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "../support/background_process.h"
#include "../support/echo_server.h"
#include "../support/proxy_inputs.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/credproxy/session_ca.h"

using mojoup::test::kReal;

namespace {

using Catch::Matchers::Contains;
using mojoup::test::BackgroundProcess;
using mojoup::test::Described;
using mojoup::test::EchoServer;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::UserNode;

namespace fs = std::filesystem;

// Every file or directory under `root` with a set-user-ID or set-group-ID bit.
std::vector<std::string> SetIdFiles(const std::string& root) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) != 0) {
      found.push_back(fmt::format("{} ({:o})", it->path().string(), st.st_mode & 07777));
    }
  }
  return found;
}

// The script's "name: verdict" lines.
std::map<std::string, std::string> Verdicts(const std::string& out) {
  std::map<std::string, std::string> verdicts;
  std::size_t at = 0;
  while (at < out.size()) {
    std::size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(at, end - at);
    if (const std::size_t colon = line.find(": "); colon != std::string::npos) {
      verdicts[line.substr(0, colon)] = line.substr(colon + 2);
    }
    at = end + 1;
  }
  return verdicts;
}

// Each attempt prints "name: refused" or "name: allowed"; `install` is not
// in busybox, so it runs only where the image has it.
constexpr const char* kSetIdAttempts = R"sh(
t() { n="$1"; shift; if "$@" 2>/dev/null; then echo "$n: allowed"; else echo "$n: refused"; fi; }
cp /bin/busybox ./x
cp /bin/busybox "$HOME/h"
t chmod-4755 chmod 4755 ./x
t chmod-2755 chmod 2755 ./x
t chmod-6755 chmod 6755 ./x
t chmod-u+s chmod u+s ./x
t chmod-g+s chmod g+s ./x
t chmod-a+s chmod a+s ./x
t busybox-chmod-4755 busybox chmod 4755 ./x
t chmod-home chmod 4755 "$HOME/h"
t mknod-4755 mknod -m 4755 ./fifo p
t mknod-2755 busybox mknod -m 2755 ./fifo2 p
mkdir -p ./unpacked
t tar-p busybox tar -xpf ./setid.tar -C ./unpacked
mkdir ./shared
t dir-g+s chmod g+s ./shared
if command -v install >/dev/null 2>&1; then
  t install-4755 install -m 4755 /bin/busybox ./y
else
  echo "install-4755: absent"
fi
echo "found: $(find . "$HOME" /tmp -xdev -perm /6000 2>/dev/null | wc -l)"
chmod 755 ./x && echo "mode-755: $(stat -c %a ./x)"
chmod 700 ./shared && chmod 1777 ./shared && echo "mode-1777: $(stat -c %a ./shared)"
echo "end: yes"
)sh";

TEST_CASE("escape: process: a session makes no set-user-ID or set-group-ID file",
          "[escape][process][setid]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // An archive (made on the host) whose entry asks for 6755: busybox tar
  // creates the file with that mode, then sets it again.
  user->Write(node.root + "/tar-source/x", "#!/bin/sh\necho set-id\n", 0755);
  Run made = user->As({"tar", "--mode=6755", "-cf", node.repo + "/setid.tar", "-C",
                       node.root + "/tar-source", "x"});
  INFO(Described(made));
  REQUIRE(made.result.exit_code == 0);

  Run run = node.Sh(kSetIdAttempts);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  auto verdicts = Verdicts(run.result.out);
  REQUIRE(verdicts["end"] == "yes");
  for (const char* attempt :
       {"chmod-4755", "chmod-2755", "chmod-6755", "chmod-u+s", "chmod-g+s", "chmod-a+s",
        "busybox-chmod-4755", "chmod-home", "mknod-4755", "mknod-2755", "tar-p", "dir-g+s"}) {
    INFO(attempt);
    REQUIRE(verdicts[attempt] == "refused");
  }
  REQUIRE((verdicts["install-4755"] == "refused" || verdicts["install-4755"] == "absent"));
  REQUIRE(verdicts["found"] == "0");
  // Every other mode still works.
  REQUIRE(verdicts["mode-755"] == "755");
  REQUIRE(verdicts["mode-1777"] == "1777");

  // On the host: the copy is there, executable, and nothing has a set-ID bit.
  struct stat st {};
  REQUIRE(stat((node.repo + "/x").c_str(), &st) == 0);
  REQUIRE((st.st_mode & 07777) == 0755);
  const auto set_id = SetIdFiles(node.repo);
  INFO(fmt::format("{}", fmt::join(set_id, "\n")));
  REQUIRE(set_id.empty());
  REQUIRE(node.Leftovers() == 0);
}

// --- the proxy as its own program ------------------------------------------

bool HaveCurl() { return RunWithEnv({}, {"curl", "--version"}).result.Succeeded(); }

// Whether the child `pid` has ended, without reaping it (BackgroundProcess
// does that).
bool Ended(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

// `mojoup-node proxy` as the user, between clients and four upstreams:
//   api.test    TLS, ACME_KEY bound to it: intercepted
//   tunnel.test TLS, nothing bound: a plain CONNECT tunnel
//   bulk.test   plain HTTP behind CONNECT, so a raw client can use the tunnel
//   plain.test  plain HTTP, forwarded
struct UserProxy {
  explicit UserProxy(const RealUser& owner) : user(owner), node(owner) {
    const std::string upstream_ca_file = node.root + "/upstream-ca.pem";
    user.Write(upstream_ca_file, upstream_ca->certificate_pem());
    const std::string policy = node.root + "/policy.json";
    user.Write(policy, fmt::format(R"({{"agents": {{"network": {{"tool_services": false,
        "allow": [{{"host": "api.test", "ports": [{}]}}, {{"host": "tunnel.test", "ports": [{}]}},
                  {{"host": "bulk.test", "ports": [{}]}}, {{"host": "plain.test", "ports": [{}]}}]}}}}}})",
                                   api.port(), tunnel.port(), bulk.port(), plain.port()));
    std::vector<std::string> argv = user.Prefix(node.env);
    argv.insert(argv.end(),
                {"ACME_KEY=" + kReal, user.bin + "/mojoup-node", "proxy", "--policy", policy,
                 "--credential", "ACME_KEY=api.test", "--upstream-ca", upstream_ca_file});
    for (auto [host, port] : {std::pair{"api.test", api.port()},
                              {"tunnel.test", tunnel.port()},
                              {"bulk.test", bulk.port()},
                              {"plain.test", plain.port()}}) {
      argv.push_back("--resolve");
      argv.push_back(fmt::format("{}:{}:127.0.0.1", host, port));
    }
    upstream_ca_path = upstream_ca_file;
    proxy = std::make_unique<BackgroundProcess>(std::vector<std::string>{}, argv);
    auto line = proxy->ReadLine(std::chrono::seconds(20));
    INFO(proxy->Stderr());
    REQUIRE(line.has_value());
    rapidjson::Document ready;
    ready.Parse(line->c_str());
    REQUIRE(ready.IsObject());
    address = ready["listen"].GetString();
    ca = ready["ca_cert"].GetString();
    stand_in = ready["env"]["ACME_KEY"].GetString();
  }

  // `curl ARGS | head -c 5` through the proxy: a client that reads five
  // bytes of the response and goes away.
  Run CurlHead(const std::string& args) const {
    return RunWithEnv(
        {},
        {"sh", "-c", "curl -sS --max-time 20 -x http://" + address + " " + args + " | head -c 5"},
        std::chrono::seconds(30));
  }
  Run Curl(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"curl", "-sS", "--max-time", "20", "-x", "http://" + address};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunWithEnv({}, argv, std::chrono::seconds(30));
  }

  const RealUser& user;
  UserNode node;
  std::unique_ptr<mojoup::credproxy::SessionCa> upstream_ca =
      *mojoup::credproxy::SessionCa::Create("upstream test CA");
  EchoServer api{*upstream_ca->ServerContext("api.test")};
  EchoServer tunnel{*upstream_ca->ServerContext("tunnel.test")};
  EchoServer bulk;
  EchoServer plain;
  std::string upstream_ca_path;
  std::unique_ptr<BackgroundProcess> proxy;
  std::string address;
  std::string ca;
  std::string stand_in;
};

// The user, without the Docker the sessions need: the proxy alone needs none.
#define MOJOUP_REQUIRE_USER(user)                   \
  std::string why_##user;                           \
  const RealUser* user = RealUser::Get(why_##user); \
  if (user == nullptr) MOJOUP_SKIP(why_##user)

TEST_CASE("escape: process: the proxy's memory and environment are not its user's to read",
          "[escape][process][memory]") {
  MOJOUP_REQUIRE_USER(user);
  UserProxy world(*user);
  const std::string proc = "/proc/" + std::to_string(world.proxy->pid());
  // The proxy was started with the real key in its environment.
  // Another process of the same user, as an agent outside a sandbox (or
  // anything else the user runs) would be:
  Run environ = user->As({"cat", proc + "/environ"});
  INFO(Described(environ));
  REQUIRE(environ.result.exit_code != 0);
  REQUIRE_THAT(environ.result.err, Contains("Permission denied"));
  REQUIRE(environ.result.out.find(kReal) == std::string::npos);
  Run mem = user->As({"sh", "-c", "exec 3< " + proc + "/mem && echo opened"});
  INFO(Described(mem));
  REQUIRE(mem.result.exit_code != 0);
  REQUIRE_THAT(mem.result.err, Contains("Permission denied"));
  REQUIRE(mem.result.out.find("opened") == std::string::npos);
  // Nor a core file: the limit is 0, soft and hard.
  const std::string limits = mojoup::test::Slurp(proc + "/limits");
  INFO(limits);
  const std::size_t core = limits.find("Max core file size");
  REQUIRE(core != std::string::npos);
  std::istringstream fields(limits.substr(core + std::string("Max core file size").size()));
  std::string soft, hard;
  fields >> soft >> hard;
  REQUIRE(soft == "0");
  REQUIRE(hard == "0");

  // What the user may read of its own processes otherwise: the denial is the
  // proxy's doing, not this machine's /proc.
  std::vector<std::string> argv = user->Prefix({"MOJOUP_MARK=visible"});
  argv.insert(argv.end(), {"sleep", "30"});
  BackgroundProcess other({}, argv);
  Run readable;
  REQUIRE(mojoup::test::WaitFor(
      [&] {
        readable = user->As({"cat", "/proc/" + std::to_string(other.pid()) + "/environ"});
        return readable.result.out.find("MOJOUP_MARK=visible") != std::string::npos;
      },
      std::chrono::seconds(10)));
  other.Stop();

  // And the proxy still works.
  Run run = world.Curl({"--cacert", world.ca, "-H", "x-api-key: " + world.stand_in,
                        fmt::format("https://api.test:{}/after", world.api.port())});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(world.api.seen().back().Header("x-api-key") == kReal);
}

// A raw client of a CONNECT tunnel that reads five bytes of a large response,
// half-closes and closes with the rest unread: the proxy's next bytes into it
// meet a reset socket (splice(2) into it raised SIGPIPE, the end of the
// program, before the proxy blocked it).
std::string TunnelAndHangUp(const std::string& address, unsigned short port) {
  const auto colon = address.rfind(':');
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1))));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    return "cannot connect to the proxy";
  }
  timeval limit{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  const std::string target = fmt::format("bulk.test:{}", port);
  const std::string request = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target +
                              "\r\n\r\nGET /bytes/67108864 HTTP/1.1\r\nHost: bulk.test\r\n\r\n";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  std::string got(established.size() + 5, '\0');
  const ssize_t n = recv(fd, got.data(), got.size(), MSG_WAITALL);
  got.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  shutdown(fd, SHUT_WR);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  close(fd);
  return got == established + "HTTP/" ? "" : "the tunnel answered \"" + got + "\"";
}

TEST_CASE("escape: process: clients that hang up mid-response do not end the proxy",
          "[escape][process][sigpipe]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  MOJOUP_REQUIRE_USER(user);
  UserProxy world(*user);
  const std::string big = "/bytes/67108864";
  for (int round = 0; round < 5; ++round) {
    INFO("round " << round);
    REQUIRE(TunnelAndHangUp(world.address, world.bulk.port()).empty());
    // The same as a shell pipeline: through a tunnel, through interception,
    // and plain http.
    Run run = world.CurlHead(fmt::format("-i --cacert {} https://tunnel.test:{}{}",
                                         world.upstream_ca_path, world.tunnel.port(), big));
    REQUIRE(run.result.out == "HTTP/");
    run = world.CurlHead(fmt::format("-i --cacert {} -H 'x-api-key: {}' https://api.test:{}{}",
                                     world.ca, world.stand_in, world.api.port(), big));
    REQUIRE(run.result.out == "HTTP/");
    run = world.CurlHead(fmt::format("-i http://plain.test:{}{}", world.plain.port(), big));
    REQUIRE(run.result.out == "HTTP/");
    INFO(world.proxy->Stderr());
    REQUIRE_FALSE(Ended(world.proxy->pid()));
  }
  // Still answering every way, a second request and more.
  Run run = world.Curl({"--cacert", world.upstream_ca_path,
                        fmt::format("https://tunnel.test:{}/after", world.tunnel.port())});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  run = world.Curl({"--cacert", world.ca, "-H", "x-api-key: " + world.stand_in,
                    fmt::format("https://api.test:{}/after", world.api.port())});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(world.api.seen().back().Header("x-api-key") == kReal);
  run = world.Curl({fmt::format("http://plain.test:{}/after", world.plain.port())});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(world.plain.seen().back().target == "/after");
  INFO(world.proxy->Stderr());
  REQUIRE_FALSE(Ended(world.proxy->pid()));
  // It ends when asked to, and cleanly.
  const int status = world.proxy->Stop();
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

TEST_CASE("escape: process: a session that hangs up on its own proxy keeps its network",
          "[escape][process][sigpipe]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  auto upstream_ca = mojoup::credproxy::SessionCa::Create("upstream test CA");
  REQUIRE(upstream_ca.ok());
  EchoServer api(*(*upstream_ca)->ServerContext("api.test"));
  EchoServer tunnel(*(*upstream_ca)->ServerContext("tunnel.test"));
  EchoServer plain;
  const std::string ca_file = node.root + "/upstream-ca.pem";
  user->Write(ca_file, (*upstream_ca)->certificate_pem());
  // Inside, the upstream CA for the tunnel (curl verifies it itself).
  user->Write(node.repo + "/upstream-ca.pem", (*upstream_ca)->certificate_pem());
  node.Policy(fmt::format(R"({{"agents": {{"network": {{"tool_services": false, "allow": [
      {{"host": "api.test", "ports": [{}]}}, {{"host": "tunnel.test", "ports": [{}]}},
      {{"host": "plain.test", "ports": [{}]}}]}}}}}})",
                          api.port(), tunnel.port(), plain.port()));
  const std::string script = fmt::format(R"sh(
for i in 1 2 3; do
  curl -sS --max-time 20 --cacert ./upstream-ca.pem https://tunnel.test:{1}/bytes/67108864 | head -c 5
  curl -sS --max-time 20 -i -H "x-api-key: $ACME_KEY" https://api.test:{0}/bytes/67108864 | head -c 5
  curl -sS --max-time 20 -i http://plain.test:{2}/bytes/67108864 | head -c 5
  echo
done
t() {{ n="$1"; shift; if curl -sS --max-time 20 -o /dev/null "$@"; then echo "$n: ok"; else echo "$n: failed"; fi; }}
t tunnel --cacert ./upstream-ca.pem https://tunnel.test:{1}/after
t intercepted -H "x-api-key: $ACME_KEY" https://api.test:{0}/after
t plain http://plain.test:{2}/after
echo "end: yes"
)sh",
                                         api.port(), tunnel.port(), plain.port());
  Run run = node.Sh(script,
                    {"--credential", "ACME_KEY=api.test", "--upstream-ca", ca_file, "--resolve",
                     fmt::format("api.test:{}:127.0.0.1", api.port()), "--resolve",
                     fmt::format("tunnel.test:{}:127.0.0.1", tunnel.port()), "--resolve",
                     fmt::format("plain.test:{}:127.0.0.1", plain.port())},
                    {"ACME_KEY=" + kReal});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  auto verdicts = Verdicts(run.result.out);
  REQUIRE(verdicts["end"] == "yes");
  REQUIRE(verdicts["tunnel"] == "ok");
  REQUIRE(verdicts["intercepted"] == "ok");
  REQUIRE(verdicts["plain"] == "ok");
  REQUIRE(api.seen().back().target == "/after");
  REQUIRE(api.seen().back().Header("x-api-key") == kReal);
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace
