// The real agent CLIs (image/agents.txt, in the agent image) in real native
// sessions, run by a normal user with the repository under $HOME, against
// fakes of their providers' APIs on the host. The fakes listen on port 443 of
// loopback addresses of their own and are reached under the providers' real
// names: the session's proxy pins the name (`--resolve`) and trusts the
// fakes' CA (`--upstream-ca`), so the agent's request takes the path it
// takes on a user's node, through the proxy's interception and key swap.
// The last two tests take Claude Code and Codex through the openshell
// runtime (the fake `openshell`) and the proxy's base-URL mode instead.
//
// What a user would notice is asserted: the answer comes back, the provider
// got the real key (or the sign-in's token), and the sandbox only ever held
// the stand-in.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/fake_provider.h"
#include "../support/named_provider.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/signin_files.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::test::Described;
using mojoup::test::FakeProvider;
using mojoup::test::ProviderRequest;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::Slurp;
using mojoup::test::UserNode;

// Real keys, in the providers' shapes; only mojoup-node's environment has them.
const std::string kAnthropicKey =
    "sk-ant-api03-"
    "Rk7vQ2mXpL9tW4yZ8bN3cF6hJ1dS5gA0eRtU2iO7pZ4xC9vB3nM6qW1eR5tY8uI0oP2aS4dF7gH9jK3lZ6xC8v"
    "B1nM-Ab12CdAA";
const std::string kOpenAiKey =
    "sk-proj-"
    "Hq3Wk8Lm2Np5Rt7Vx9Zb1Dc4Fg6Jh8Kl0Mn3Pq5Rs7Tu9Vw2Xy4Za6Bc8De0Fg2Hi4Jk6Lm8No0Pq2Rs4Tu6Vw8"
    "Xy0Za2Bc4De6Fg8Hi0Jk2Lm4No6Pq8Rs0T";
const std::string kCodexKey =
    "sk-proj-"
    "Codex7Wk8Lm2Np5Rt7Vx9Zb1Dc4Fg6Jh8Kl0Mn3Pq5Rs7Tu9Vw2Xy4Za6Bc8De0Fg2Hi4Jk6Lm8No0Pq2Rs4Tu6"
    "Vw8Xy0Za2Bc4De6Fg8Hi0Jk2Lm4No6Pq8Rs0";

// Where the fakes listen; --resolve keeps the port, and the agents call 443.
constexpr const char* kAnthropicAddress = "127.0.13.1";
constexpr const char* kOpenAiAddress = "127.0.13.2";

// Why the agent image is not on the local dockerd, or "".
std::string WhyNoAgentImage() {
  const std::string image = mojoup::sandbox::DefaultAgentImage();
  auto kernel = mojoup::probe::MakeSystemKernel();
  auto endpoint = mojoup::probe::ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) return std::string(endpoint.status().message());
  auto docker = mojoup::probe::MakeDockerApi();
  auto found =
      mojoup::sandbox::InspectSandboxImage(*endpoint, *docker, image, std::chrono::seconds(10));
  return found.ok() ? "" : std::string(found.status().message());
}

#define MOJOUP_REQUIRE_AGENT_IMAGE()                            \
  do {                                                          \
    static const std::string missing_image = WhyNoAgentImage(); \
    if (!missing_image.empty()) MOJOUP_SKIP(missing_image);     \
  } while (false)

using Provider = mojoup::test::NamedProvider;

#define MOJOUP_REQUIRE_LISTENING(provider) \
  if (!(provider).fake->error().empty()) MOJOUP_SKIP((provider).fake->error())

// `mojoup-node run --repo REPO FLAGS -- /bin/sh -c SCRIPT` as the user, with
// `env` in mojoup-node's environment (never the sandbox's), given the time a
// real agent takes.
Run RunAgent(const UserNode& node, const std::vector<std::string>& flags, const std::string& script,
             const std::vector<std::string>& env) {
  std::vector<std::string> args{"run", "--repo", node.repo};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "/bin/sh", "-c", script});
  return node.Cli(args, env, std::chrono::seconds(240));
}

// The script's end: what the sandbox saw of itself, kept in the repository
// for Report(): its environment, the files the agent wrote under $HOME (the
// repository and the node's own directory left out, three levels deep), and
// the container's peak memory and process count while the agent ran (cgroup
// v1 or v2, whichever the host has; a sampler counts processes, as cgroup v1
// keeps no peak).
constexpr const char* kSampler = R"(
mkdir -p .observed
pids() { cat /sys/fs/cgroup/pids/pids.current 2>/dev/null || cat /sys/fs/cgroup/pids.current; }
( max=0; while [ ! -e .observed/done ]; do n=$(pids); [ "${n:-0}" -gt "$max" ] && max=$n && echo "$max" > .observed/pids.max; sleep 0.1; done ) &
sampler=$!
)";
constexpr const char* kObserve = R"(
touch .observed/done; wait $sampler
env | sort > .observed/env
find "$HOME" -maxdepth 3 \( -path "$PWD" -o -path "$HOME/.mojoup-test-*" -o -path "$HOME/.mojoup-test-bin" \) -prune -o -type f -print | sort > .observed/home
{ cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes || cat /sys/fs/cgroup/memory.peak; } > .observed/memory.peak 2>/dev/null
id > .observed/id 2>&1
)";

// Every regular file in `dir` (recursively, .git included) whose content
// holds `text`.
std::vector<std::string> FilesHolding(const std::string& dir, const std::string& text) {
  std::vector<std::string> holding;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    if (Slurp(entry.path().string()).find(text) != std::string::npos) {
      holding.push_back(entry.path().string());
    }
  }
  return holding;
}

// Prints what the session observed, for the tool profiles' record of what each agent does.
void Report(const std::string& tool, const UserNode& node, const std::string& audit,
            const Run& run) {
  std::cout << "=== " << tool << "\n" << Described(run) << "\n--- audit\n" << Slurp(audit);
  for (const char* name : {"home", "memory.peak", "pids.max", "id", "env"}) {
    std::cout << "--- " << name << "\n" << Slurp(node.repo + "/.observed/" + name);
  }
  std::cout << std::endl;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// The session's command: `body`, whose last command's exit code is the
// session's, between the sampler and the observation.
std::string Script(const std::string& body) {
  return std::string(kSampler) + body + "\ncode=$?\n" + kObserve + "exit $code\n";
}

// An empty directory of the node's for a tool's relocation variable
// (CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_DATA_HOME, COPILOT_HOME): run stages
// the sign-in from there, so a test decides what the agent is signed in
// with, whatever other tests left in the user's home.
std::string EmptyConfig(const UserNode& node, const std::string& name) {
  const std::string dir = node.root + "/" + name;
  node.user.Write(dir + "/.keep", "");
  return dir;
}

// The repository's policy allowing a provider the tool's own service hosts
// do not include (OpenCode's and Kilo's providers are the user's choice).
void AllowProvider(const UserNode& node, const std::string& host) {
  node.Policy(R"({"agents": {"network": {"allow": [{"host": ")" + host +
              R"(", "ports": [443]}]}}})");
}

// The three things a user relies on: the answer came back, the provider got
// the real key in `header` (as `scheme` + key) on every request for an
// answer, and the sandbox only ever held the stand-in.
void RequireKeyKeptOut(const UserNode& node, const Run& run,
                       const std::vector<ProviderRequest>& asks, const std::string& header,
                       const std::string& scheme, const std::string& real,
                       const std::string& stand_in_file = ".standin") {
  REQUIRE(!asks.empty());
  for (const ProviderRequest& request : asks) {
    INFO(request.method << " " << request.target);
    CHECK(request.Header(header) == scheme + real);
  }
  const std::string stand_in = Trimmed(Slurp(node.repo + "/" + stand_in_file));
  CHECK(stand_in.size() == real.size());
  CHECK(stand_in.substr(0, 8) == real.substr(0, 8));  // shaped like a key
  CHECK(stand_in != real);
  CHECK(FilesHolding(node.repo, real).empty());
  CHECK(run.result.out.find(real) == std::string::npos);
  CHECK(run.result.err.find(real) == std::string::npos);
}

}  // namespace

TEST_CASE("agents: Claude Code answers through the proxy with the API key kept out",
          "[agents][claude-code]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider anthropic(node, "api.anthropic.com", kAnthropicAddress, "Hello from the fake Anthropic");
  MOJOUP_REQUIRE_LISTENING(anthropic);
  const std::string audit = node.root + "/audit.jsonl";

  std::vector<std::string> flags{"--tool",  "claude-code", "--credential", "ANTHROPIC_API_KEY",
                                 "--audit", audit};
  for (const std::string& flag : anthropic.Flags()) flags.push_back(flag);
  Run run = RunAgent(
      node, flags,
      Script("printenv ANTHROPIC_API_KEY > .standin\n"
             "claude -p 'Say hello' --output-format json"),
      {"ANTHROPIC_API_KEY=" + kAnthropicKey, "CLAUDE_CONFIG_DIR=" + EmptyConfig(node, "claude")});
  Report("claude-code", node, audit, run);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains(R"("result":"Hello from the fake Anthropic")"));
  RequireKeyKeptOut(node, run, anthropic.fake->seen("POST", "/v1/messages"), "x-api-key", "",
                    kAnthropicKey);
  // Whatever else it called on its provider at start carried the real key or
  // none: never the stand-in, never another's.
  for (const ProviderRequest& request : anthropic.fake->seen()) {
    INFO(request.method << " " << request.target);
    CHECK((request.Header("x-api-key").empty() || request.Header("x-api-key") == kAnthropicKey));
    CHECK(request.Header("authorization").empty());
  }
  CHECK(node.Leftovers() == 0);
}

namespace {

long long MillisFromNow(std::chrono::seconds offset) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             (std::chrono::system_clock::now() + offset).time_since_epoch())
      .count();
}

// A Claude subscriber's ~/.claude/.credentials.json (FACTS.md, "The agent
// tools"), its access token expiring at `expires_ms`.
std::string ClaudeSignIn(const std::string& access, const std::string& refresh,
                         long long expires_ms) {
  return R"({"claudeAiOauth":{"accessToken":")" + access + R"(","refreshToken":")" + refresh +
         R"(","expiresAt":)" + std::to_string(expires_ms) +
         R"(,"scopes":["user:inference","user:profile","user:sessions:claude_code"],)"
         R"("subscriptionType":"max","rateLimitTier":"default_claude_max_20x"}})";
}

// What the sandbox's copy of a sign-in held at the end (the script copies
// it into the repository): none of `reals`.
void RequireOnlyStandIns(const UserNode& node, const Run& run,
                         const std::vector<std::string>& reals) {
  for (const std::string& real : reals) {
    INFO(real);
    CHECK(FilesHolding(node.repo, real).empty());
    CHECK(run.result.out.find(real) == std::string::npos);
    CHECK(run.result.err.find(real) == std::string::npos);
  }
}

}  // namespace

TEST_CASE("agents: Claude Code signed in with a staged sign-in file sends its token",
          "[agents][claude-code]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider anthropic(node, "api.anthropic.com", kAnthropicAddress, "Hello, subscriber");
  MOJOUP_REQUIRE_LISTENING(anthropic);
  const std::string audit = node.root + "/audit.jsonl";
  // Valid for a year, in a config directory of this test's (CLAUDE_CONFIG_DIR, which run honours).
  const std::string token =
      "sk-ant-oat01-FakeSubscriberAccessToken0123456789abcdefghijklmnopqrstuv";
  const std::string refresh = "sk-ant-ort01-FakeSubscriberRefreshToken0123456789";
  const std::string config_dir = EmptyConfig(node, "claude");
  user->Write(config_dir + "/.credentials.json",
              ClaudeSignIn(token, refresh, MillisFromNow(std::chrono::hours(24 * 365))), 0600);

  std::vector<std::string> flags{"--tool", "claude-code", "--audit", audit};
  for (const std::string& flag : anthropic.Flags()) flags.push_back(flag);
  Run run = RunAgent(node, flags,
                     Script("claude -p 'Say hello' --output-format json\n"
                            "c=$?; cp \"$HOME/.claude/.credentials.json\" .observed-signin; (exit $c)"),
                     {"CLAUDE_CONFIG_DIR=" + config_dir});
  Report("claude-code sign-in", node, audit, run);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains(R"("result":"Hello, subscriber")"));
  const auto messages = anthropic.fake->seen("POST", "/v1/messages");
  REQUIRE(!messages.empty());
  for (const ProviderRequest& request : messages) {
    CHECK(request.Header("authorization") == "Bearer " + token);
    CHECK(request.Header("x-api-key").empty());
  }
  // The sandbox's copy held a stand-in of the token's shape.
  CHECK_THAT(Slurp(node.repo + "/.observed-signin"), Contains(R"("accessToken":"sk-ant-oat01-)"));
  RequireOnlyStandIns(node, run, {token, refresh});
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("agents: Claude Code refreshes an expired sign-in through the proxy",
          "[agents][claude-code][refresh]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider anthropic(node, "api.anthropic.com", kAnthropicAddress, "Hello, refreshed subscriber");
  Provider platform(anthropic, "platform.claude.com", "127.0.13.3", "unused");
  MOJOUP_REQUIRE_LISTENING(anthropic);
  MOJOUP_REQUIRE_LISTENING(platform);
  const std::string audit = node.root + "/audit.jsonl";
  const std::string old_access = "sk-ant-oat01-ExpiredAccessToken0123456789abcdefghijklmnopqrstu";
  const std::string old_refresh = "sk-ant-ort01-SingleUseRefreshToken0123456789abcdefghijklmnop";
  const std::string new_access = "sk-ant-oat01-IssuedAtRefreshAccess0123456789abcdefghijklmno";
  const std::string new_refresh = "sk-ant-ort01-IssuedAtRefreshRefresh0123456789abcdefghijklm";
  const std::string config_dir = EmptyConfig(node, "claude");
  const std::string host_file = config_dir + "/.credentials.json";
  user->Write(host_file, ClaudeSignIn(old_access, old_refresh, MillisFromNow(-std::chrono::hours(1))),
              0600);
  // Anthropic's OAuth token endpoint answers a refresh grant with a new
  // access token, a rotated refresh token and their lifetime.
  platform.fake->IssueTokens(
      "/v1/oauth/token", old_refresh,
      R"({"token_type":"Bearer","access_token":")" + new_access + R"(","refresh_token":")" +
          new_refresh +
          R"(","expires_in":28800,"scope":"user:inference user:profile user:sessions:claude_code"})");

  std::vector<std::string> flags{"--tool", "claude-code", "--audit", audit};
  for (const std::string& flag : anthropic.Flags()) flags.push_back(flag);
  flags.insert(flags.end(), {"--resolve", "platform.claude.com:443:127.0.13.3"});
  Run run = RunAgent(node, flags,
                     Script("claude -p 'Say hello' --output-format json\n"
                            "c=$?; cp \"$HOME/.claude/.credentials.json\" .observed-signin; (exit $c)"),
                     {"CLAUDE_CONFIG_DIR=" + config_dir});
  Report("claude-code refresh", node, audit, run);
  INFO(Described(run));
  for (const ProviderRequest& request : platform.fake->seen()) {
    UNSCOPED_INFO("platform: " << request.method << " " << request.target << " " << request.body);
  }
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains(R"("result":"Hello, refreshed subscriber")"));
  // The provider saw the real refresh token, once, and then the new access token.
  const auto refreshes = platform.fake->seen("POST", "/v1/oauth/token");
  REQUIRE(refreshes.size() == 1);
  CHECK_THAT(refreshes[0].body, Contains("\"" + old_refresh + "\""));
  const auto messages = anthropic.fake->seen("POST", "/v1/messages");
  REQUIRE(!messages.empty());
  for (const ProviderRequest& request : messages) {
    CHECK(request.Header("authorization") == "Bearer " + new_access);
  }
  // The sandbox saw only stand-ins, and the host file ends with the
  // provider's new tokens.
  RequireOnlyStandIns(node, run, {old_access, old_refresh, new_access, new_refresh});
  const std::string after = Slurp(host_file);
  CHECK_THAT(after, Contains(R"("accessToken":")" + new_access + "\""));
  CHECK_THAT(after, Contains(R"("refreshToken":")" + new_refresh + "\""));
  CHECK_THAT(after, Contains(R"("subscriptionType":"max")"));
  CHECK_THAT(run.result.err, Contains(host_file + " has the provider's new tokens"));
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("agents: Codex answers through the proxy with the API key kept out", "[agents][codex]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider openai(node, "api.openai.com", kOpenAiAddress, "Hello from the fake OpenAI");
  MOJOUP_REQUIRE_LISTENING(openai);
  const std::string audit = node.root + "/audit.jsonl";

  // The two ways a user gives Codex 0.171 an API key: CODEX_API_KEY, which
  // `codex exec` reads, and `codex login --with-api-key`, which keeps the key
  // in ~/.codex/auth.json (here the session's, holding the stand-in).
  // OPENAI_API_KEY alone sends no key at all.
  std::vector<std::string> flags{"--tool",       "codex",          "--credential", "CODEX_API_KEY",
                                 "--credential", "OPENAI_API_KEY", "--audit",      audit};
  for (const std::string& flag : openai.Flags()) flags.push_back(flag);
  Run run = RunAgent(
      node, flags,
      Script("printenv CODEX_API_KEY > .standin-codex\n"
             "printenv OPENAI_API_KEY > .standin\n"
             "codex exec --skip-git-repo-check -s read-only 'Say hello' || exit 1\n"
             "echo '=== after login'\n"
             "printenv OPENAI_API_KEY | codex login --with-api-key >&2 || exit 1\n"
             "env -u CODEX_API_KEY codex exec --skip-git-repo-check -s read-only 'Say hello'"),
      {"OPENAI_API_KEY=" + kOpenAiKey, "CODEX_API_KEY=" + kCodexKey,
       "CODEX_HOME=" + EmptyConfig(node, "codex")});
  Report("codex", node, audit, run);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  const std::size_t login = run.result.out.find("=== after login");
  REQUIRE(login != std::string::npos);
  CHECK_THAT(run.result.out.substr(0, login), Contains("Hello from the fake OpenAI"));
  CHECK_THAT(run.result.out.substr(login), Contains("Hello from the fake OpenAI"));
  // Its WebSocket went through the proxy; it did not give up on it.
  CHECK(run.result.err.find("Falling back from WebSockets") == std::string::npos);
  CHECK(!openai.fake->seen("WS", "/v1/responses").empty());

  // Each request for an answer carried one of the two real keys: over the
  // WebSocket Codex opens first (the upgrade, GET /v1/responses, holds the
  // key; its messages are recorded as WS), or POSTed if that fails.
  std::vector<ProviderRequest> by_codex_key;
  std::vector<ProviderRequest> by_login;
  for (const ProviderRequest& request : openai.fake->seen()) {
    INFO(request.method << " " << request.target << " " << request.Header("authorization"));
    const std::string authorization = request.Header("authorization");
    CHECK((authorization == "Bearer " + kCodexKey || authorization == "Bearer " + kOpenAiKey));
    if ((request.method != "POST" && request.method != "WS") ||
        request.target.rfind("/v1/responses", 0) != 0) {
      continue;
    }
    (authorization == "Bearer " + kCodexKey ? by_codex_key : by_login).push_back(request);
  }
  RequireKeyKeptOut(node, run, by_codex_key, "authorization", "Bearer ", kCodexKey,
                    ".standin-codex");
  RequireKeyKeptOut(node, run, by_login, "authorization", "Bearer ", kOpenAiKey);
  CHECK(node.Leftovers() == 0);
}

namespace {

// The claims OpenAI puts in a ChatGPT sign-in's JWTs, expiring at `exp`
// (seconds since the epoch).
std::string ChatGptJwt(long long exp, const std::string& tag) {
  return mojoup::test::Jwt(
      R"({"iss":"https://auth.openai.com","sub":"auth0|ada","email":"ada@example.com","exp":)" +
      std::to_string(exp) +
      R"(,"https://api.openai.com/auth":{"chatgpt_account_id":"acct-ada","chatgpt_user_id":"user-ada",)"
      R"("chatgpt_plan_type":"plus","user_id":"user-ada"},"tag":")" +
      tag + R"("})");
}

long long SecondsFromNow(std::chrono::seconds offset) {
  return std::chrono::duration_cast<std::chrono::seconds>(
             (std::chrono::system_clock::now() + offset).time_since_epoch())
      .count();
}

// The policy allowing exactly `hosts` on 443 besides the tool's own services.
void AllowProviders(const UserNode& node, const std::vector<std::string>& hosts) {
  std::string allow;
  for (const std::string& host : hosts) {
    allow += (allow.empty() ? "" : ", ") + std::string(R"({"host": ")") + host + R"(", "ports": [443]})";
  }
  node.Policy(R"({"agents": {"network": {"allow": [)" + allow + "]}}}");
}

}  // namespace

TEST_CASE("agents: Codex refreshes an expired ChatGPT sign-in through the proxy",
          "[agents][codex][refresh]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider chatgpt(node, "chatgpt.com", "127.0.13.4", "Hello, ChatGPT subscriber");
  Provider auth(chatgpt, "auth.openai.com", "127.0.13.5", "unused");
  MOJOUP_REQUIRE_LISTENING(chatgpt);
  MOJOUP_REQUIRE_LISTENING(auth);
  const std::string audit = node.root + "/audit.jsonl";
  // An access token that expired yesterday: Codex refreshes before its first call.
  const std::string old_id = ChatGptJwt(SecondsFromNow(-std::chrono::hours(24)), "old-id");
  const std::string old_access = ChatGptJwt(SecondsFromNow(-std::chrono::hours(24)), "old-access");
  const std::string old_refresh = "rt_SingleUseRefreshToken0123456789abcdefghijklmn";
  const std::string new_id = ChatGptJwt(SecondsFromNow(std::chrono::hours(240)), "new-id");
  const std::string new_access = ChatGptJwt(SecondsFromNow(std::chrono::hours(240)), "new-access");
  const std::string new_refresh = "rt_RotatedByTheProvider0123456789abcdefghijklmnop";
  const std::string config_dir = EmptyConfig(node, "codex");
  const std::string host_file = config_dir + "/auth.json";
  user->Write(host_file,
              R"({"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"id_token":")" + old_id +
                  R"(","access_token":")" + old_access + R"(","refresh_token":")" + old_refresh +
                  R"(","account_id":"acct-ada"},"last_refresh":"2026-09-01T10:00:00Z"})",
              0600);
  // Codex asks ChatGPT which workspace backend serves the account before
  // its first turn (codex-rs backend-client, AccountsCheckResponse).
  chatgpt.fake->Answer(
      "GET", "/backend-api/wham/accounts/check",
      R"({"accounts":[{"id":"acct-ada","name":null,"plan_type":"plus","structure":"personal",)"
      R"("profile_picture_url":null,"workspace_backend_origin":"NO_CONSTRAINT",)"
      R"("account_routing_override":"NO_CONSTRAINT"}],"account_ordering":["acct-ada"],)"
      R"("default_account_id":"acct-ada"})");
  auth.fake->IssueTokens("/oauth/token", old_refresh,
                         R"({"id_token":")" + new_id + R"(","access_token":")" + new_access +
                             R"(","refresh_token":")" + new_refresh + R"("})");

  std::vector<std::string> flags{"--tool", "codex", "--audit", audit};
  for (const std::string& flag : chatgpt.Flags()) flags.push_back(flag);
  flags.insert(flags.end(), {"--resolve", "auth.openai.com:443:127.0.13.5"});
  Run run = RunAgent(node, flags,
                     Script("codex exec --skip-git-repo-check -s read-only 'Say hello'\n"
                            "c=$?; cp \"$HOME/.codex/auth.json\" .observed-signin; (exit $c)"),
                     {"CODEX_HOME=" + config_dir});
  Report("codex refresh", node, audit, run);
  INFO(Described(run));
  for (const ProviderRequest& request : chatgpt.fake->seen()) {
    UNSCOPED_INFO("chatgpt.com: " << request.method << " " << request.target);
  }
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains("Hello, ChatGPT subscriber"));
  const auto refreshes = auth.fake->seen("POST", "/oauth/token");
  REQUIRE(refreshes.size() == 1);
  CHECK_THAT(refreshes[0].body, Contains(R"("refresh_token":")" + old_refresh + "\""));
  // Every call to ChatGPT's API carried the provider's new access token.
  std::size_t answered = 0;
  for (const ProviderRequest& request : chatgpt.fake->seen()) {
    INFO(request.method << " " << request.target);
    if (request.method == "WS") continue;  // messages of the upgrade below
    CHECK(request.Header("authorization") == "Bearer " + new_access);
    answered += request.target.rfind("/backend-api/codex/responses", 0) == 0;
  }
  CHECK(answered > 0);
  RequireOnlyStandIns(node, run, {old_id, old_access, old_refresh, new_id, new_access, new_refresh});
  // The sandbox's copy kept the claims Codex reads.
  CHECK_THAT(Slurp(node.repo + "/.observed-signin"),
             Contains(new_access.substr(0, new_access.rfind('.') + 1)));
  const std::string after = Slurp(host_file);
  CHECK_THAT(after, Contains(R"("access_token":")" + new_access + "\""));
  CHECK_THAT(after, Contains(R"("id_token":")" + new_id + "\""));
  CHECK_THAT(after, Contains(R"("refresh_token":")" + new_refresh + "\""));
  CHECK_THAT(after, Contains(R"("account_id":"acct-ada")"));
  CHECK(after.find("2026-09-01T10:00:00Z") == std::string::npos);  // last_refresh moved
  CHECK_THAT(run.result.err, Contains(host_file + " has the provider's new tokens"));
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("agents: OpenCode refreshes its ChatGPT sign-in, its Anthropic OAuth entry stays a stand-in",
          "[agents][opencode][refresh]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider chatgpt(node, "chatgpt.com", "127.0.13.7", "Hello from OpenCode, refreshed");
  Provider auth(chatgpt, "auth.openai.com", "127.0.13.8", "unused");
  MOJOUP_REQUIRE_LISTENING(chatgpt);
  MOJOUP_REQUIRE_LISTENING(auth);
  AllowProviders(node, {"chatgpt.com", "auth.openai.com"});
  const std::string audit = node.root + "/audit.jsonl";
  const std::string old_access = ChatGptJwt(SecondsFromNow(-std::chrono::hours(24)), "oc-old");
  const std::string old_refresh = "rt_OpenCodeSingleUseRefresh0123456789abcdefghij";
  const std::string new_access = ChatGptJwt(SecondsFromNow(std::chrono::hours(240)), "oc-new");
  const std::string new_refresh = "rt_OpenCodeRotatedRefresh0123456789abcdefghijkl";
  // An Anthropic OAuth entry, as the opencode-anthropic-auth plugin writes
  // it: opencode 1.18 has no Anthropic sign-in of its own, so it only ever
  // sits there, as stand-ins.
  const std::string anthropic_access = "sk-ant-oat01-OpenCodePluginAccess0123456789abcdefgh";
  const std::string anthropic_refresh = "sk-ant-ort01-OpenCodePluginRefresh0123456789abcdef";
  const std::string data = EmptyConfig(node, "data");
  const std::string host_file = data + "/opencode/auth.json";
  user->Write(host_file,
              R"({"anthropic":{"type":"oauth","refresh":")" + anthropic_refresh +
                  R"(","access":")" + anthropic_access + R"(","expires":)" +
                  std::to_string(MillisFromNow(std::chrono::hours(8))) +
                  R"(},"openai":{"type":"oauth","refresh":")" + old_refresh + R"(","access":")" +
                  old_access + R"(","expires":1000,"accountId":"acct-ada"}})",
              0600);
  auth.fake->IssueTokens("/oauth/token", old_refresh,
                         R"({"access_token":")" + new_access + R"(","refresh_token":")" +
                             new_refresh + R"(","expires_in":864000})");

  std::vector<std::string> flags{"--tool", "opencode", "--audit", audit};
  for (const std::string& flag : chatgpt.Flags()) flags.push_back(flag);
  flags.insert(flags.end(), {"--resolve", "auth.openai.com:443:127.0.13.8"});
  Run run = RunAgent(
      node, flags,
      Script("opencode run --model openai/gpt-5.5 'Say hello'\n"
             "c=$?; cp \"$HOME/.local/share/opencode/auth.json\" .observed-signin; (exit $c)"),
      {"XDG_DATA_HOME=" + data});
  Report("opencode refresh", node, audit, run);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains("Hello from OpenCode, refreshed"));
  // opencode sends its refresh form-encoded.
  const auto refreshes = auth.fake->seen("POST", "/oauth/token");
  REQUIRE(refreshes.size() == 1);
  CHECK_THAT(refreshes[0].body, Contains("refresh_token=" + old_refresh));
  const auto answers = chatgpt.fake->seen("POST", "/backend-api/codex/responses");
  REQUIRE(!answers.empty());
  for (const ProviderRequest& request : answers) {
    CHECK(request.Header("authorization") == "Bearer " + new_access);
  }
  RequireOnlyStandIns(node, run,
                      {old_access, old_refresh, new_access, new_refresh, anthropic_access,
                       anthropic_refresh});
  const std::string after = Slurp(host_file);
  CHECK_THAT(after, Contains(R"("access":")" + new_access + "\""));
  CHECK_THAT(after, Contains(R"("refresh":")" + new_refresh + "\""));
  CHECK(after.find(R"("expires":1000)") == std::string::npos);
  // The Anthropic entry is the user's, as it was.
  CHECK_THAT(after, Contains(R"("refresh":")" + anthropic_refresh + "\""));
  CHECK_THAT(after, Contains(R"("access":")" + anthropic_access + "\""));
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("agents: Copilot CLI's stored gho_ token reaches GitHub only as the real token",
          "[agents][copilot][signin]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider github(node, "api.github.com", "127.0.13.6", "unused");
  MOJOUP_REQUIRE_LISTENING(github);
  const std::string audit = node.root + "/audit.jsonl";
  const std::string token = "gho_R3alC0pil0tT0kenOfTheUser0123456789ab";
  const std::string config_dir = EmptyConfig(node, "copilot");
  const std::string host_file = config_dir + "/config.json";
  // Copilot CLI 1.0.102's own file when no keychain is there: comment
  // lines, then the token under copilotTokens and authTokens.
  const std::string config =
      "// User settings belong in settings.json.\n// This file is managed automatically.\n"
      R"({"lastLoggedInUser":{"host":"https://github.com","login":"ada"},)"
      R"("loggedInUsers":[{"host":"https://github.com","login":"ada"}],)"
      R"("copilotTokens":{"https://github.com:ada":")" +
      token + R"("},"authTokens":{"https://github.com:ada:github":{"token":")" + token + R"("}}})";
  user->Write(host_file, config, 0600);

  std::vector<std::string> flags{"--tool", "copilot", "--audit", audit};
  for (const std::string& flag : github.Flags()) flags.push_back(flag);
  // The fake has no Copilot API behind it: Copilot stops once GitHub has
  // no account for the token. What matters is what GitHub was sent.
  Run run = RunAgent(node, flags,
                     Script("COPILOT_AUTO_UPDATE=false timeout 60 copilot -p 'Say hello' "
                            "--allow-all-tools\n"
                            "cp \"$HOME/.copilot/config.json\" .observed-signin; true"),
                     {"COPILOT_HOME=" + config_dir});
  Report("copilot sign-in", node, audit, run);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  const auto asked = github.fake->seen("GET", "/copilot_internal/user");
  REQUIRE(!asked.empty());
  for (const ProviderRequest& request : github.fake->seen()) {
    INFO(request.method << " " << request.target);
    const std::string authorization = request.Header("authorization");
    CHECK((authorization.empty() || authorization == "Bearer " + token ||
           authorization == "bearer " + token || authorization == "token " + token));
  }
  CHECK(asked[0].Header("authorization") == "Bearer " + token);
  RequireOnlyStandIns(node, run, {token});
  CHECK_THAT(Slurp(node.repo + "/.observed-signin"), Contains("\"gho_"));
  // Access only: nothing to refresh, nothing written back.
  CHECK(Slurp(host_file) == config);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("agents: OpenCode answers through the proxy with the API key kept out",
          "[agents][opencode]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider anthropic(node, "api.anthropic.com", kAnthropicAddress, "Hello from OpenCode's fake");
  MOJOUP_REQUIRE_LISTENING(anthropic);
  AllowProvider(node, "api.anthropic.com");
  const std::string audit = node.root + "/audit.jsonl";

  std::vector<std::string> flags{"--tool",  "opencode", "--credential", "ANTHROPIC_API_KEY",
                                 "--audit", audit};
  for (const std::string& flag : anthropic.Flags()) flags.push_back(flag);
  Run run = RunAgent(
      node, flags,
      Script("printenv ANTHROPIC_API_KEY > .standin\n"
             "opencode run -m anthropic/claude-sonnet-4-5 'Say hello'"),
      {"ANTHROPIC_API_KEY=" + kAnthropicKey, "XDG_DATA_HOME=" + EmptyConfig(node, "data")});
  Report("opencode", node, audit, run);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains("Hello from OpenCode's fake"));
  RequireKeyKeptOut(node, run, anthropic.fake->seen("POST", "/v1/messages"), "x-api-key", "",
                    kAnthropicKey);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("agents: Kilo Code answers through the proxy with the API key kept out",
          "[agents][kilocode]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider anthropic(node, "api.anthropic.com", kAnthropicAddress, "Hello from Kilo's fake");
  MOJOUP_REQUIRE_LISTENING(anthropic);
  AllowProvider(node, "api.anthropic.com");
  const std::string audit = node.root + "/audit.jsonl";

  std::vector<std::string> flags{"--tool",  "kilocode", "--credential", "ANTHROPIC_API_KEY",
                                 "--audit", audit};
  for (const std::string& flag : anthropic.Flags()) flags.push_back(flag);
  Run run = RunAgent(
      node, flags,
      Script("printenv ANTHROPIC_API_KEY > .standin\n"
             "kilo run -m anthropic/claude-sonnet-4-5 'Say hello'"),
      {"ANTHROPIC_API_KEY=" + kAnthropicKey, "XDG_DATA_HOME=" + EmptyConfig(node, "data")});
  Report("kilocode", node, audit, run);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains("Hello from Kilo's fake"));
  RequireKeyKeptOut(node, run, anthropic.fake->seen("POST", "/v1/messages"), "x-api-key", "",
                    kAnthropicKey);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("agents: Copilot CLI answers from a provider of the user's with the API key kept out",
          "[agents][copilot]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  Provider anthropic(node, "api.anthropic.com", kAnthropicAddress, "Hello from Copilot's fake");
  MOJOUP_REQUIRE_LISTENING(anthropic);
  AllowProvider(node, "api.anthropic.com");
  const std::string audit = node.root + "/audit.jsonl";

  // Copilot's own models need a GitHub sign-in and GitHub's Copilot API,
  // which this test does not fake; its "bring your own key" mode
  // (`copilot help environment`: COPILOT_PROVIDER_*) talks to Anthropic's
  // API instead, with no GitHub sign-in (COPILOT_OFFLINE). The key's name is
  // Copilot's own, so it is bound to the provider's host by hand.
  std::vector<std::string> flags{"--tool",       "copilot",
                                 "--credential", "COPILOT_PROVIDER_API_KEY=api.anthropic.com",
                                 "--audit",      audit};
  for (const std::string& flag : anthropic.Flags()) flags.push_back(flag);
  Run run = RunAgent(
      node, flags,
      Script("copilot --version\n"
             "printenv COPILOT_PROVIDER_API_KEY > .standin\n"
             "COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false "
             "COPILOT_PROVIDER_TYPE=anthropic COPILOT_PROVIDER_BASE_URL=https://api.anthropic.com "
             "COPILOT_MODEL=claude-sonnet-4.5 copilot -p 'Say hello' --allow-all-tools"),
      {"COPILOT_PROVIDER_API_KEY=" + kAnthropicKey,
       "COPILOT_HOME=" + EmptyConfig(node, "copilot")});
  Report("copilot", node, audit, run);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains("GitHub Copilot CLI 1.0."));
  CHECK_THAT(run.result.out, Contains("Hello from Copilot's fake"));
  RequireKeyKeptOut(node, run, anthropic.fake->seen("POST", "/v1/messages"), "x-api-key", "",
                    kAnthropicKey);
  CHECK(node.Leftovers() == 0);
}

namespace {

// The openshell runtime on this node, through the fake `openshell` whose
// sandboxes are real containers on the `openshell-docker` bridge (OpenShell's own
// proxy is not there: the sandbox reaches our proxy's base URL directly, as
// OpenShell's network policy would let it). "" or why not.
std::string UseOpenShell(const UserNode& node) {
  if (std::string why = mojoup::test::WhyNoOpenShellNetwork(); !why.empty()) return why;
  const std::string dir = node.root + "/openshell";
  node.user.Write(dir + "/.keep", "");
  mojoup::sandbox::testing::InstallFakeOpenShellSandbox(
      dir, mojoup::test::BinDir() + "/fake-openshell", {});
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (lchown(entry.path().c_str(), node.user.uid, node.user.gid) != 0 && geteuid() == 0) {
      return "cannot give " + entry.path().string() + " to " + node.user.name;
    }
  }
  node.user.Write(node.config,
                  R"({"node.sandbox.engine": "docker", "node.sandbox.role": true, )"
                  R"("node.sandbox.runtime": "openshell", "node.sandbox.openshell_path": ")" +
                      dir + R"(/openshell", "node.sandbox.image": ")" +
                      mojoup::sandbox::DefaultAgentImage() +
                      R"(", "node.sandbox.allowed_users": ")" + node.user.name + "\"}\n",
                  0600);
  return "";
}

}  // namespace

TEST_CASE("agents: Claude Code on the openshell runtime answers through the base URL",
          "[agents][openshell][claude-code]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  if (std::string why = UseOpenShell(node); !why.empty()) MOJOUP_SKIP(why);
  Provider anthropic(node, "api.anthropic.com", kAnthropicAddress, "Hello through OpenShell");
  MOJOUP_REQUIRE_LISTENING(anthropic);

  std::vector<std::string> flags{"--tool", "claude-code", "--credential", "ANTHROPIC_API_KEY"};
  for (const std::string& flag : anthropic.Flags()) flags.push_back(flag);
  Run run = RunAgent(
      node, flags,
      "printenv ANTHROPIC_API_KEY > .standin\n"
      "echo \"base: $ANTHROPIC_BASE_URL\"\n"
      "claude -p 'Say hello' --output-format json",
      {"ANTHROPIC_API_KEY=" + kAnthropicKey, "CLAUDE_CONFIG_DIR=" + EmptyConfig(node, "claude")});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains("base: http://host.openshell.internal:"));
  CHECK_THAT(run.result.out, Contains(R"("result":"Hello through OpenShell")"));
  RequireKeyKeptOut(node, run, anthropic.fake->seen("POST", "/v1/messages"), "x-api-key", "",
                    kAnthropicKey);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("agents: Codex on the openshell runtime answers through the base URL",
          "[agents][openshell][codex]") {
  MOJOUP_REQUIRE_AGENT_IMAGE();
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user, mojoup::sandbox::DefaultAgentImage());
  if (std::string why = UseOpenShell(node); !why.empty()) MOJOUP_SKIP(why);
  Provider openai(node, "api.openai.com", kOpenAiAddress, "Hello through OpenShell");
  MOJOUP_REQUIRE_LISTENING(openai);

  std::vector<std::string> flags{"--tool", "codex", "--credential", "CODEX_API_KEY"};
  for (const std::string& flag : openai.Flags()) flags.push_back(flag);
  Run run = RunAgent(node, flags,
                     "printenv CODEX_API_KEY > .standin\n"
                     "cat \"$HOME/.codex/config.toml\"\n"
                     "codex exec --skip-git-repo-check -s read-only 'Say hello'",
                     {"CODEX_API_KEY=" + kCodexKey, "CODEX_HOME=" + EmptyConfig(node, "codex")});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains("http://host.openshell.internal:"));
  CHECK_THAT(run.result.out, Contains("Hello through OpenShell"));
  // Its WebSocket (ws://host.openshell.internal:PORT/api.openai.com/v1/responses)
  // went through the base URL; it did not give up on it.
  CHECK(run.result.err.find("Falling back from WebSockets") == std::string::npos);
  CHECK(!openai.fake->seen("WS", "/v1/responses").empty());
  std::vector<ProviderRequest> asks = openai.fake->seen("POST", "/v1/responses");
  for (const ProviderRequest& request : openai.fake->seen("WS", "/v1/responses")) {
    asks.push_back(request);
  }
  RequireKeyKeptOut(node, run, asks, "authorization", "Bearer ", kCodexKey);
  CHECK(node.Leftovers() == 0);
}
