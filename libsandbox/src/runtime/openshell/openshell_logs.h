// OpenShell's own refusals, read from `openshell logs NAME`: the lines its
// sandbox proxy pushes to the gateway when it denies a request.
//
// The text comes from the sandbox's side (a program's path, the host it
// asked for, the reason the policy engine gave), so it is read as untrusted:
// each line bounded, every part checked, anything else skipped.
//
//   OpenShellDenialReader reader;
//   OpenShellDenialReader::Read read = reader.Next(cli_output, 200);
//   for (const OpenShellDenial& denial : read.denials) ...;
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mojoup::sandbox {

// One request OpenShell's sandbox proxy refused.
struct OpenShellDenial {
  std::int64_t timestamp_ms = 0;  // when the sandbox logged it
  std::string method;             // "CONNECT", or a forwarded request's method
  std::string host;               // policy::CanonicalHost's spelling
  std::uint16_t port = 0;
  std::string path;     // a forwarded request's, without its query; "" for a CONNECT
  std::string program;  // the binary OpenShell names, "-" when it resolved none
  std::string engine;   // "opa" (no policy rule allowed it) or "ssrf" (its address)
  std::string reason;   // OpenShell's reason, at most 512 bytes
};

// The longest line read; a longer one is skipped.
inline constexpr std::size_t kMaxOpenShellLogLine = 8 * 1024;

// One line `openshell logs` printed (v0.0.92..v0.0.111
// crates/openshell-cli/src/run.rs print_log_line), when it is a denial the
// sandbox pushed: source "sandbox", level "OCSF", target "ocsf", and a
// message of crates/openshell-ocsf/src/format/shorthand.rs format_shorthand
// for a denied NetworkActivity ("NET:OPEN [MED] DENIED /usr/bin/curl(42) ->
// host:443 [policy:- engine:opa] [reason:...]") or HttpActivity
// ("HTTP:GET [MED] DENIED ... -> GET http://host:8080/path [policy:- ...]").
// nullopt for any other line.
std::optional<OpenShellDenial> ParseOpenShellDenial(std::string_view line);

// How far ahead of this node's clock a line's time may be and still be
// read: the sandbox's clock may run a little ahead, but a line stamped
// further on is one the sandbox forged (a program's path may hold a line
// break) to make every later refusal look as if it had been read already.
inline constexpr std::int64_t kOpenShellClockSlackMs = 60 * 1000;

// Successive outputs of `openshell logs NAME -n N`, each the gateway's last
// N lines: the denials not seen in an earlier one. A line stamped more than
// kOpenShellClockSlackMs after `now_ms()` is skipped and moves nothing on.
class OpenShellDenialReader {
 public:
  // `now_ms`: milliseconds since the epoch; unset, the system clock.
  explicit OpenShellDenialReader(std::function<std::int64_t()> now_ms = {})
      : now_ms_(std::move(now_ms)) {}
  struct Read {
    std::vector<OpenShellDenial> denials;
    // Every line was new and there were as many as asked for: denials
    // before them may have been missed.
    bool gap = false;
  };
  Read Next(std::string_view output, std::size_t asked);

 private:
  std::function<std::int64_t()> now_ms_;
  std::int64_t last_ms_ = -1;
  // The lines seen with the latest timestamp, and how often each.
  std::map<std::string, int, std::less<>> at_last_;
};

}  // namespace mojoup::sandbox
