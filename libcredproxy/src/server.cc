// The proxy's server: the accept loop, one client connection's requests
// dispatched to a tunnel, an interception or a forward, and starting and
// stopping the serving thread.
#include "server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "fmt/format.h"
#include "mojoup/policy/tool_profiles.h"
#include "request_head.h"

namespace mojoup::credproxy {

void Proxy::Impl::VaultChanged() { reflections.clear(); }

const std::vector<Scrubber::Pair>& Proxy::Impl::ReflectionsAt(const std::string& host) {
  auto known = reflections.find(host);
  if (known != reflections.end()) return known->second;
  std::vector<Scrubber::Pair> pairs;
  for (Vault::Reflection& reflection : options.vault.Reflections(host)) {
    pairs.push_back(
        {std::move(reflection.real), std::move(reflection.shown), reflection.any_case});
  }
  return reflections.emplace(host, std::move(pairs)).first->second;
}

bool Proxy::Impl::IsBound(const std::string& host) const {
  if (options.vault.IsTokenHost(host)) return true;
  for (const Credential& credential : options.vault.credentials()) {
    if (std::find(credential.hosts.begin(), credential.hosts.end(), host) !=
        credential.hosts.end()) {
      return true;
    }
  }
  return false;
}

std::optional<Refusal> Proxy::Impl::CheckHead(const http::request_header<>& header,
                                              const std::string& host, std::uint16_t port,
                                              bool swap, bool over_tls) const {
  auto misplaced =
      FindMisplacedStandIn(header, options.vault, host, options.credential_headers, swap);
  if (!misplaced) return std::nullopt;
  if (!over_tls || !misplaced->bound_here) {
    return Refusal::CredentialMismatch(host, port, *misplaced->credential, over_tls);
  }
  return Refusal::StandInMisplaced(host, port, *misplaced->credential, misplaced->where,
                                   options.credential_headers);
}

std::optional<Scrubber> Proxy::Impl::BodyWatch(const std::string& host, bool swap) const {
  std::vector<Scrubber::Pair> pairs;
  for (const Credential& credential : options.vault.credentials()) {
    const bool bound =
        std::find(credential.hosts.begin(), credential.hosts.end(), host) != credential.hosts.end();
    if (!(swap && bound)) pairs.push_back({credential.stand_in, credential.stand_in});
  }
  if (pairs.empty()) return std::nullopt;
  return Scrubber(std::move(pairs), Scrubber::Hold::kWholeTexts);
}

Refusal Proxy::Impl::BodyRefusal(const Scrubber& watch, const std::string& host, std::uint16_t port,
                                 bool over_tls) const {
  for (const Credential& credential : options.vault.credentials()) {
    if (credential.stand_in == watch.first_match()) {
      return Refusal::CredentialMismatch(host, port, credential, over_tls, "in the request body");
    }
  }
  return Refusal::CredentialMismatch(host, port, options.vault.credentials().front(), over_tls,
                                     "in the request body");
}

std::vector<Scrubber::Pair> Proxy::Impl::ResponsePairs(const std::string& host,
                                                       std::vector<Scrubber::Pair> extra) {
  std::vector<Scrubber::Pair> pairs = ReflectionsAt(host);
  for (const Scrubber::Pair& pair : extra) {
    for (Scrubber::Pair& form : ReflectedForms(pair.from, pair.to))
      pairs.push_back(std::move(form));
  }
  return pairs;
}

// --- accepting -----------------------------------------------------------

awaitable<void> Proxy::Impl::Accept(asio::basic_socket_acceptor<Generic>& acceptor) {
  for (;;) {
    beast::error_code ec;
    Generic::socket socket =
        co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // EMFILE and friends: back off briefly rather than spin.
      asio::steady_timer pause(io, std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;
    }
    if (tcp_acceptor && &acceptor == &*tcp_acceptor) {
      // A response goes out as a head, then its body piece by piece: with
      // Nagle's algorithm each small write after the first would wait for
      // the client's delayed ACK.
      const int on = 1;
      setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    ClientStream stream(std::move(socket));
    if (active >= options.max_connections) {
      asio::co_spawn(
          io,
          [this, s = std::move(stream)]() mutable -> awaitable<void> {
            co_await RespondError(s, http::status::service_unavailable,
                                  "the proxy is at its connection limit; try again shortly", 11);
          },
          asio::detached);
      continue;
    }
    ++active;
    asio::co_spawn(io, Serve(std::move(stream)), [this](std::exception_ptr) { --active; });
  }
}

// --- one client connection -------------------------------------------------

awaitable<void> Proxy::Impl::Serve(ClientStream stream) {
  beast::flat_buffer buffer;
  std::optional<KeptUpstream> kept;
  for (bool first = true;; first = false) {
    http::request_parser<http::buffer_body> parser;
    stream.expires_after(first ? options.header_timeout : options.idle_timeout);
    beast::error_code ec;
    const Framing framing =
        co_await ReadHead(stream, buffer, parser, options.header_limit, false, ec);
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset) {
      co_return;
    }
    // On a timeout Beast has closed the socket already: a slow or silent
    // client is simply disconnected.
    if (ec == beast::error::timeout) co_return;
    if (ec == http::error::header_limit) {
      co_await RespondError(
          stream, http::status::request_header_fields_too_large,
          fmt::format("the request headers exceed {} bytes", options.header_limit), 11);
      co_return;
    }
    if (ec) co_return;
    if (!framing.ok()) {
      co_await RefuseFraming(stream, framing, "", 0);
      co_return;
    }
    stream.expires_never();
    auto& request = parser.get();
    const std::string target = Str(request.target());
    if (request.method() == http::verb::connect) {
      if (framing.kind != Framing::Kind::kNone) {
        Framing refused;
        refused.error = "a CONNECT request carries no body";
        co_await RefuseFraming(stream, refused, "", 0);
        co_return;
      }
      co_await Connect(stream, buffer, target, request.version());
      co_return;
    }
    Reframe(request, framing, request.keep_alive());
    if (target.rfind("http://", 0) == 0 || target.rfind("/", 0) == 0) {
      if (!co_await Forward(stream, buffer, parser, kept)) co_return;
      continue;
    }
    co_await RespondError(
        stream, http::status::bad_request,
        target.rfind("https://", 0) == 0
            ? "send https requests through CONNECT, not as absolute-form"
            : "send CONNECT host:port, an absolute-form http:// request, or a base-URL "
              "request /host/path",
        request.version());
    co_return;
  }
}

// --- starting and stopping -------------------------------------------------

namespace {

absl::Status WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) return absl::InternalError(fmt::format("{}: cannot write", path));
  chmod(path.c_str(), mode);
  return absl::OkStatus();
}

std::string ReadSystemBundle() {
  for (const char* path :
       {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}) {
    std::ifstream in(path, std::ios::binary);
    if (in)
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return {};
}

// The process now holds real credentials: no other process of its user may
// read its memory (/proc/PID/mem, /proc/PID/environ, ptrace), and no core
// dump may write it to disk.
absl::Status GuardProcessMemory() {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return absl::InternalError(fmt::format(
        "cannot keep the proxy's memory from other processes: prctl(PR_SET_DUMPABLE): {}",
        std::strerror(errno)));
  }
  const rlimit no_core{0, 0};
  if (setrlimit(RLIMIT_CORE, &no_core) != 0) {
    return absl::InternalError(
        fmt::format("cannot turn core dumps off for the proxy: setrlimit(RLIMIT_CORE): {}",
                    std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Proxy::Start's steps, each on the proxy being started.

// Credential header names are matched lowercase; the real values' reflected
// forms are computed once.
void PrepareCredentials(Proxy::Impl& impl) {
  for (std::string& name : impl.options.credential_headers) {
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  impl.VaultChanged();
}

// The session CA, and ca.pem and ca-bundle.pem in ca_dir (a temporary one
// of the proxy's own when none is given).
absl::Status CreateSessionCa(Proxy::Impl& impl) {
  ProxyOptions& opts = impl.options;
  auto ca = SessionCa::Create(opts.session);
  if (!ca.ok()) return ca.status();
  impl.ca = *std::move(ca);
  if (opts.ca_dir.empty()) {
    std::string dir = (std::filesystem::temp_directory_path() / "mojoup-proxy-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("cannot create a CA directory");
    opts.ca_dir = dir;
    impl.own_ca_dir = true;
  } else {
    std::error_code fs_ec;
    std::filesystem::create_directories(opts.ca_dir, fs_ec);
  }
  impl.ca_path = opts.ca_dir + "/ca.pem";
  impl.bundle_path = opts.ca_dir + "/ca-bundle.pem";
  if (auto s = WriteFile(impl.ca_path, impl.ca->certificate_pem(), 0644); !s.ok()) return s;
  // The upstream CAs too, in the bundle and in what adds to a tool's own
  // store: a host that is tunnelled, not intercepted, shows the sandbox its
  // own certificate, which must verify there as it does here.
  std::string upstream;
  if (!opts.upstream_ca.empty()) {
    std::ifstream in(opts.upstream_ca, std::ios::binary);
    upstream.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!upstream.empty() && upstream.back() != '\n') upstream += '\n';
  }
  impl.extra_path = impl.ca_path;
  if (!upstream.empty()) {
    impl.extra_path = opts.ca_dir + "/ca-extra.pem";
    if (auto s = WriteFile(impl.extra_path, impl.ca->certificate_pem() + upstream, 0644); !s.ok()) {
      return s;
    }
  }
  return WriteFile(impl.bundle_path, ReadSystemBundle() + upstream + impl.ca->certificate_pem(),
                   0644);
}

// Verified TLS 1.2 or later to upstreams, trusting upstream_ca too.
absl::Status ConfigureUpstreamTls(Proxy::Impl& impl) {
  const ProxyOptions& opts = impl.options;
  if (!opts.upstream_ca.empty()) {
    boost::system::error_code ec;
    impl.upstream_tls.load_verify_file(opts.upstream_ca, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          fmt::format("{}: cannot load upstream CAs: {}", opts.upstream_ca, ec.message()));
    }
  }
  SSL_CTX_set_min_proto_version(impl.upstream_tls.native_handle(), TLS1_2_VERSION);
  return absl::OkStatus();
}

// The session's log when it passed one; else `audit_file`, appended to
// without a bound as it always was (or no file: decisions are still counted).
absl::Status OpenAudit(Proxy::Impl& impl) {
  if (impl.options.audit) {
    impl.audit = impl.options.audit;
    return absl::OkStatus();
  }
  auto audit = AuditLog::Open({.mirror = impl.options.audit_file,
                               .session = impl.options.session,
                               .max_bytes = std::numeric_limits<std::uint64_t>::max()});
  if (!audit.ok()) return audit.status();
  impl.audit = *std::move(audit);
  return absl::OkStatus();
}

// Binds `listen` (port 0: any free one) and keeps the address it got.
absl::Status ListenTcp(Proxy::Impl& impl) {
  const std::string& listen = impl.options.listen;
  if (listen.empty()) return absl::OkStatus();
  auto parsed = SplitHostPort(listen, 0, /*allow_zero=*/true);
  boost::system::error_code ec;
  asio::ip::address address =
      parsed ? asio::ip::make_address(WithoutBrackets(parsed->first), ec) : asio::ip::address();
  if (!parsed || ec) {
    return absl::InvalidArgumentError(
        fmt::format("--listen {}: expected ADDRESS:PORT such as 127.0.0.1:0", listen));
  }
  asio::ip::tcp::endpoint endpoint(address, parsed->second);
  auto& acceptor = impl.tcp_acceptor.emplace(impl.io);
  acceptor.open(Generic(endpoint.protocol().family(), IPPROTO_TCP), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(Generic::endpoint(endpoint), ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(fmt::format("cannot listen on {}: {}", listen, ec.message()));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(acceptor.native_handle(), reinterpret_cast<sockaddr*>(&bound), &length);
  const std::uint16_t port =
      ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                       : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  impl.tcp_address = address.is_v6() ? fmt::format("[{}]:{}", address.to_string(), port)
                                     : fmt::format("{}:{}", address.to_string(), port);
  return absl::OkStatus();
}

absl::Status ListenUnix(Proxy::Impl& impl) {
  const std::string& socket = impl.options.socket;
  if (socket.empty()) return absl::OkStatus();
  ::unlink(socket.c_str());
  asio::local::stream_protocol::endpoint endpoint(socket);
  auto& acceptor = impl.unix_acceptor.emplace(impl.io);
  boost::system::error_code ec;
  acceptor.open(Generic(AF_UNIX, 0), ec);
  if (!ec) acceptor.bind(Generic::endpoint(endpoint), ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(fmt::format("cannot listen on {}: {}", socket, ec.message()));
  }
  return absl::OkStatus();
}

// The serving thread: the system's trust store, then the accept loops.
void StartServing(Proxy::Impl& impl) {
  Proxy::Impl* raw = &impl;
  // Parsing the system's trust store takes ~20 ms: the serving thread does it
  // first, before any connection, while the caller goes on (starting the
  // sandbox, say).
  asio::post(raw->io, [raw] {
    boost::system::error_code ignored;
    raw->upstream_tls.set_default_verify_paths(ignored);
  });
  if (raw->tcp_acceptor) asio::co_spawn(raw->io, raw->Accept(*raw->tcp_acceptor), asio::detached);
  if (raw->unix_acceptor) asio::co_spawn(raw->io, raw->Accept(*raw->unix_acceptor), asio::detached);
  if (raw->control_acceptor) asio::co_spawn(raw->io, raw->AcceptControl(), asio::detached);
  {
    std::lock_guard lock(raw->wake_gate->mu);
    raw->wake_gate->io = &raw->io;
  }
  // SIGPIPE blocked on the serving thread before it does anything: splice(2)
  // into a socket whose peer has gone has no MSG_NOSIGNAL, and the signal it
  // raises is directed at the calling thread, so there it stays pending and
  // the call fails with EPIPE instead of ending the embedding program. The
  // program's own disposition and its other threads are left as they are.
  raw->thread = std::thread([raw] {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    raw->io.run();
  });
}

}  // namespace

absl::StatusOr<std::unique_ptr<Proxy>> Proxy::Start(ProxyOptions options) {
  if (options.listen.empty() && options.socket.empty()) {
    return absl::InvalidArgumentError(
        "the proxy needs a TCP address to listen on, a socket, or both");
  }
  if (absl::Status guarded = GuardProcessMemory(); !guarded.ok()) return guarded;
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  PrepareCredentials(*impl);
  if (absl::Status made = CreateSessionCa(*impl); !made.ok()) return made;
  if (absl::Status tls = ConfigureUpstreamTls(*impl); !tls.ok()) return tls;
  if (absl::Status audit = OpenAudit(*impl); !audit.ok()) return audit;
  if (absl::Status tcp = ListenTcp(*impl); !tcp.ok()) return tcp;
  if (absl::Status unix_socket = ListenUnix(*impl); !unix_socket.ok()) return unix_socket;
  if (absl::Status control = ListenControl(*impl); !control.ok()) return control;
  StartServing(*impl);
  return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Proxy::~Proxy() {
  {
    std::lock_guard lock(impl_->wake_gate->mu);
    impl_->wake_gate->io = nullptr;
  }
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  if (!impl_->options.socket.empty()) ::unlink(impl_->options.socket.c_str());
  if (!impl_->options.control_socket.empty()) ::unlink(impl_->options.control_socket.c_str());
  if (impl_->own_ca_dir) {
    std::error_code ec;
    std::filesystem::remove_all(impl_->options.ca_dir, ec);
  }
}

std::vector<std::string> CredentialHeaders(std::string_view tool) {
  std::vector<std::string> names(std::begin(policy::kCommonCredentialHeaders),
                                 std::end(policy::kCommonCredentialHeaders));
  if (const policy::ToolProfile* profile = policy::FindToolProfile(tool)) {
    for (std::string_view name : profile->credential_headers) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
    }
  }
  return names;
}

std::string Proxy::tcp_address() const { return impl_->tcp_address; }
std::string Proxy::socket_path() const { return impl_->options.socket; }
std::string Proxy::ca_cert_path() const { return impl_->ca_path; }
std::string Proxy::ca_bundle_path() const { return impl_->bundle_path; }

std::map<std::string, std::string> Proxy::Environment() const {
  std::map<std::string, std::string> env = {
      {"NO_PROXY", "localhost,127.0.0.1,::1"},
      {"no_proxy", "localhost,127.0.0.1,::1"},
      {"NODE_USE_ENV_PROXY", "1"},
  };
  const std::string& address =
      impl_->options.sandbox_address.empty() ? impl_->tcp_address : impl_->options.sandbox_address;
  if (impl_->options.proxy_variables && !address.empty()) {
    for (const char* name : {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"}) {
      env[name] = "http://" + address;
    }
  }
  // Every CA variable any tool reads, whatever the session's tool: a
  // variable adding to the system's store gets the session CA (and the
  // upstream CAs), one replacing it the system's CAs, the upstream CAs and
  // the session CA.
  auto set_ca = [&](std::string_view name) {
    const bool extra =
        std::find(std::begin(policy::kExtraCaVariables), std::end(policy::kExtraCaVariables),
                  name) != std::end(policy::kExtraCaVariables);
    env[std::string(name)] = extra ? impl_->extra_path : impl_->bundle_path;
  };
  for (std::string_view name : policy::kCommonCaVariables) set_ca(name);
  for (const policy::ToolProfile& profile : policy::ToolProfiles()) {
    for (std::string_view name : profile.ca_variables) set_ca(name);
  }
  for (const Credential& credential : impl_->options.vault.credentials()) {
    // A sign-in's stand-ins are in its files, not the environment.
    if (credential.sign_in.empty()) env[credential.name] = credential.stand_in;
  }
  return env;
}

}  // namespace mojoup::credproxy
