#include "runtime/openshell/openshell_logs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>

#include "mojoup/policy/network_rules.h"

namespace mojoup::sandbox {
namespace {

constexpr std::size_t kMaxReason = 512;
constexpr std::size_t kMaxProgram = 1024;
constexpr std::size_t kMaxMethod = 16;

// "[TEXT] " at the front of `line`, consumed; TEXT without the padding
// print_log_line adds ({:<7}, {:<5}).
std::optional<std::string_view> Bracketed(std::string_view& line) {
  if (line.empty() || line.front() != '[') return std::nullopt;
  const std::size_t close = line.find("] ");
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view text = line.substr(1, close - 1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  line.remove_prefix(close + 2);
  return text;
}

// "SECS.MMM" as milliseconds.
std::optional<std::int64_t> Timestamp(std::string_view text) {
  const std::size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 15 || text.size() - dot != 4) {
    return std::nullopt;
  }
  std::int64_t secs = 0;
  int millis = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + dot, secs);
  if (error != std::errc() || end != text.data() + dot) return std::nullopt;
  auto [end2, error2] = std::from_chars(text.data() + dot + 1, text.data() + text.size(), millis);
  if (error2 != std::errc() || end2 != text.data() + text.size()) return std::nullopt;
  return secs * 1000 + millis;
}

bool IsMethod(std::string_view method) {
  return !method.empty() && method.size() <= kMaxMethod &&
         std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

// "host:port" (an IPv6 host in brackets) into the denial; false when either
// is not one.
bool HostPort(std::string_view text, OpenShellDenial& denial) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  unsigned port = 0;
  const std::string_view digits = text.substr(colon + 1);
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (error != std::errc() || end != digits.data() + digits.size() || port == 0 || port > 65535) {
    return false;
  }
  std::optional<std::string> host = policy::CanonicalHost(text.substr(0, colon));
  if (!host) return false;
  denial.host = *std::move(host);
  denial.port = static_cast<std::uint16_t>(port);
  return true;
}

// Url::to_display_string's "http://host[:port]/path" (the port left out when
// it is the scheme's own).
bool Url(std::string_view url, OpenShellDenial& denial) {
  std::uint16_t fallback = 0;
  if (url.substr(0, 7) == "http://") {
    fallback = 80;
    url.remove_prefix(7);
  } else if (url.substr(0, 8) == "https://") {
    fallback = 443;
    url.remove_prefix(8);
  } else {
    return false;
  }
  const std::size_t slash = url.find('/');
  const std::string_view authority = url.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "/" : url.substr(slash);
  path = path.substr(0, path.find_first_of("?#"));
  const bool has_port = !authority.empty() && authority.back() != ']' &&
                        authority.find(':', authority.rfind(']') + 1) != std::string_view::npos;
  if (has_port) {
    if (!HostPort(authority, denial)) return false;
  } else if (!HostPort(std::string(authority) + ":" + std::to_string(fallback), denial)) {
    return false;
  }
  denial.path = std::string(path);
  return true;
}

// What is printable of `text`, at most `max` bytes.
std::string Printable(std::string_view text, std::size_t max) {
  std::string out;
  for (char c : text.substr(0, max)) {
    out += std::iscntrl(static_cast<unsigned char>(c)) != 0 ? ' ' : c;
  }
  return out;
}

// What follows an arrow when it has the shape format_shorthand gives the
// rest of a denial: "[METHOD ]TOKEN [policy:NAME engine:ENGINE]", then the
// line's end or one last bracket, " [reason:TEXT]" (NET) or " [FIELDS...
// reason:TEXT]" (HTTP). Only the shape: what TOKEN names is checked later.
struct Shape {
  std::string_view destination;
  std::string_view engine;
  std::string_view context;  // inside the last bracket; "" when there is none
};
std::optional<Shape> ShapeAfter(std::string_view after, const std::string& method) {
  if (!method.empty()) {
    if (after.substr(0, method.size() + 1) != method + " ") return std::nullopt;
    after.remove_prefix(method.size() + 1);
  }
  Shape shape;
  const std::size_t space = after.find(' ');
  if (space == 0 || space == std::string_view::npos) return std::nullopt;
  shape.destination = after.substr(0, space);
  after.remove_prefix(space);
  const std::size_t close = after.find(']');
  if (after.substr(0, 9) != " [policy:" || close == std::string_view::npos) return std::nullopt;
  const std::string_view rule = after.substr(9, close - 9);
  const std::size_t engine = rule.find(" engine:");
  if (engine == std::string_view::npos) return std::nullopt;
  shape.engine = rule.substr(engine + 8);
  after.remove_prefix(close + 1);
  if (!after.empty()) {
    if (after.substr(0, 2) != " [" || after.back() != ']') return std::nullopt;
    shape.context = after.substr(2, after.size() - 3);
  }
  return shape;
}

// The reason in the last bracket: all of a NET denial's ("reason:TEXT"; no
// other bracket is allowed there), the last field of an HTTP one's (the
// fields before it are escaped, so the first "reason:" that starts a field
// is it).
std::optional<std::string> Reason(std::string_view context, bool http) {
  if (context.empty()) return std::string();
  std::size_t at = context.substr(0, 7) == "reason:" ? 0 : std::string_view::npos;
  if (http && at != 0) {
    at = context.find(" reason:");
    if (at != std::string_view::npos) ++at;
  }
  if (at == std::string_view::npos) {
    return http ? std::optional<std::string>(std::string()) : std::nullopt;
  }
  return Printable(context.substr(at + 7), kMaxReason);
}

// "<actor> -> <destination> [policy:..." after "DENIED ", `method` set for
// HTTP, whose destination is "METHOD URL". The actor (a program's path) and
// the reason (which may quote one) are unescaped text the sandbox can
// choose, so either may hold " -> " and a whole tail of its own: the line is
// read only when exactly one " -> " is followed by the shape of the rest of
// a denial. One that could be read two ways is skipped, not guessed at.
bool Denied(std::string_view rest, const std::string& method, OpenShellDenial& denial) {
  std::size_t found = std::string_view::npos;
  std::optional<Shape> shape;
  for (std::size_t arrow = rest.find(" -> "); arrow != std::string_view::npos;
       arrow = rest.find(" -> ", arrow + 1)) {
    std::optional<Shape> candidate = ShapeAfter(rest.substr(arrow + 4), method);
    if (!candidate) continue;
    if (shape) return false;  // ambiguous
    shape = candidate;
    found = arrow;
  }
  if (!shape || (shape->engine != "opa" && shape->engine != "ssrf")) return false;
  const bool read =
      method.empty() ? HostPort(shape->destination, denial) : Url(shape->destination, denial);
  std::optional<std::string> reason = Reason(shape->context, !method.empty());
  if (!read || !reason) return false;
  std::string_view actor = rest.substr(0, found);
  if (const std::size_t open = actor.rfind('(');
      open != std::string_view::npos && !actor.empty() && actor.back() == ')') {
    actor = actor.substr(0, open);
  }
  denial.program = Printable(actor, kMaxProgram);
  denial.method = method.empty() ? "CONNECT" : method;
  denial.engine = std::string(shape->engine);
  denial.reason = *std::move(reason);
  return true;
}

// "[SEV] DENIED " after the class: the rest, or nullopt.
std::optional<std::string_view> AfterDenied(std::string_view message) {
  if (message.empty() || message.front() != '[') return std::nullopt;
  const std::size_t close = message.find("] DENIED ");
  if (close == std::string_view::npos || close > 8) return std::nullopt;
  return message.substr(close + 9);
}

}  // namespace

std::optional<OpenShellDenial> ParseOpenShellDenial(std::string_view line) {
  if (line.size() > kMaxOpenShellLogLine) return std::nullopt;
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  OpenShellDenial denial;
  auto time = Bracketed(line);
  auto source = Bracketed(line);
  auto level = Bracketed(line);
  auto target = Bracketed(line);
  if (!time || !source || !level || !target || *source != "sandbox" || *level != "OCSF" ||
      *target != "ocsf") {
    return std::nullopt;
  }
  std::optional<std::int64_t> ms = Timestamp(*time);
  if (!ms) return std::nullopt;
  denial.timestamp_ms = *ms;
  std::string method;
  if (line.substr(0, 9) == "NET:OPEN ") {
    line.remove_prefix(9);
  } else if (line.substr(0, 5) == "HTTP:") {
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    method = std::string(line.substr(5, space - 5));
    if (!IsMethod(method)) return std::nullopt;
    line.remove_prefix(space + 1);
  } else {
    return std::nullopt;
  }
  std::optional<std::string_view> rest = AfterDenied(line);
  if (!rest || !Denied(*rest, method, denial)) return std::nullopt;
  return denial;
}

OpenShellDenialReader::Read OpenShellDenialReader::Next(std::string_view output,
                                                        std::size_t asked) {
  Read read;
  const std::int64_t now = now_ms_ ? now_ms_()
                                   : std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count();
  std::map<std::string, int, std::less<>> at_known;   // lines at last_ms_ in this output
  std::map<std::string, int, std::less<>> at_latest;  // lines at the latest time after it
  std::int64_t latest = last_ms_;
  std::size_t lines = 0;
  bool all_new = true;
  std::size_t start = 0;
  while (start < output.size()) {
    std::size_t end = output.find('\n', start);
    if (end == std::string_view::npos) end = output.size();
    const std::string_view line = output.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line.size() > kMaxOpenShellLogLine) continue;
    ++lines;
    // Every line counts for what is new, denial or not, by its time.
    const std::size_t close = line.find(']');
    const std::optional<std::int64_t> ms = line.front() == '[' && close != std::string_view::npos
                                               ? Timestamp(line.substr(1, close - 1))
                                               : std::nullopt;
    // Counted as a line, and as new, but not read: it may not move time on.
    if (!ms || *ms > now + kOpenShellClockSlackMs) continue;
    bool fresh = *ms > last_ms_;
    if (*ms == last_ms_) {
      auto known = at_last_.find(line);
      fresh = ++at_known[std::string(line)] > (known == at_last_.end() ? 0 : known->second);
    } else if (*ms > last_ms_) {
      if (*ms > latest) at_latest.clear();
      latest = std::max(latest, *ms);
      if (*ms == latest) ++at_latest[std::string(line)];
    }
    all_new = all_new && fresh;
    if (!fresh) continue;
    if (std::optional<OpenShellDenial> denial = ParseOpenShellDenial(line)) {
      read.denials.push_back(*std::move(denial));
    }
  }
  read.gap = all_new && asked > 0 && lines >= asked;
  if (latest == last_ms_) {
    for (auto& [line, count] : at_known) at_last_[line] = std::max(at_last_[line], count);
  } else {
    at_last_ = std::move(at_latest);
    last_ms_ = latest;
  }
  return read;
}

}  // namespace mojoup::sandbox
