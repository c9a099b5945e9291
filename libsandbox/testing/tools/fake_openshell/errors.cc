// How the CLI reports errors: a miette report on stderr (main returns
// miette::Result), a gateway's tonic::Status as its Display text, clap's usage
// errors, and what this double does not model.

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

namespace {

// The release being played; tonic's Status text differs between releases.
Version g_version{0, 0, 111};

// The description tonic 0.14 gives each code (tonic/src/status.rs
// Code::description, v0.14.x), which its Display prints.
std::string_view CodeDescription(std::string_view code) {
  static constexpr std::pair<std::string_view, std::string_view> kDescriptions[] = {
      {"Ok", "The operation completed successfully"},
      {"Cancelled", "The operation was cancelled"},
      {"Unknown", "Unknown error"},
      {"InvalidArgument", "Client specified an invalid argument"},
      {"DeadlineExceeded", "Deadline expired before operation could complete"},
      {"NotFound", "Some requested entity was not found"},
      {"AlreadyExists", "Some entity that we attempted to create already exists"},
      {"PermissionDenied",
       "The caller does not have permission to execute the specified operation"},
      {"ResourceExhausted", "Some resource has been exhausted"},
      {"FailedPrecondition", "The system is not in a state required for the operation's execution"},
      {"Aborted", "The operation was aborted"},
      {"OutOfRange", "Operation was attempted past the valid range"},
      {"Unimplemented", "Operation is not implemented or not supported"},
      {"Internal", "Internal error"},
      {"Unavailable", "The service is currently unavailable"},
      {"DataLoss", "Unrecoverable data loss or corruption"},
      {"Unauthenticated", "The request does not have valid authentication credentials"},
  };
  for (const auto& [name, description] : kDescriptions) {
    if (name == code) return description;
  }
  return code;
}

// One piece of a line as textwrap 0.16 (miette's wrapper, with its
// unicode-linebreak word separator and default HyphenSplitter) sees it.
struct Fragment {
  std::string word;
  std::string whitespace;
};

std::size_t Columns(std::string_view text) {
  std::size_t columns = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++columns;  // one column per code point: enough for our text
  }
  return columns;
}

// Break opportunities: after runs of spaces, after '/' not followed by a
// digit (UAX #14 SY), and after a '-' between alphanumerics (textwrap leaves
// hyphens to its HyphenSplitter).
std::vector<Fragment> Fragments(std::string_view line) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  std::vector<Fragment> out;
  Fragment current;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ') {
      current.whitespace += c;
      if (i + 1 == line.size() || line[i + 1] != ' ') {
        out.push_back(std::move(current));
        current = {};
      }
      continue;
    }
    current.word += c;
    const bool has_next = i + 1 < line.size() && line[i + 1] != ' ';
    if (!has_next) continue;
    const char next = line[i + 1];
    const bool after_slash = c == '/' && !(next >= '0' && next <= '9');
    const bool after_hyphen = c == '-' && i > 0 && alnum(line[i - 1]) && alnum(next);
    if (after_slash || after_hyphen) {
      out.push_back(std::move(current));
      current = {};
    }
  }
  if (!current.word.empty() || !current.whitespace.empty()) out.push_back(std::move(current));
  return out;
}

// textwrap::fill with break_words and the first-fit algorithm: each line of
// `text` wrapped to `width` columns, the first output line after
// `initial_indent`, every other after `subsequent_indent`.
std::string Fill(std::string_view text, std::size_t width, std::string_view initial_indent,
                 std::string_view subsequent_indent) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find('\n', start);
    std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    const std::size_t line_width = width - Columns(subsequent_indent);
    // Words longer than a line are cut (break_words), then an empty word
    // leads so the first real word may move to the second line.
    std::vector<Fragment> fragments{Fragment{}};
    for (Fragment& fragment : Fragments(line)) {
      while (Columns(fragment.word) > line_width) {
        fragments.push_back({fragment.word.substr(0, line_width), ""});
        fragment.word.erase(0, line_width);
      }
      fragments.push_back(std::move(fragment));
    }
    std::size_t first = 0;
    std::size_t used = 0;
    auto flush = [&](std::size_t until) {
      std::string out(lines.empty() ? initial_indent : subsequent_indent);
      for (std::size_t i = first; i < until; ++i) {
        out += fragments[i].word;
        if (i + 1 < until) out += fragments[i].whitespace;
      }
      lines.push_back(std::move(out));
    };
    for (std::size_t i = 0; i < fragments.size(); ++i) {
      const std::size_t available =
          width - Columns(lines.empty() ? initial_indent : subsequent_indent);
      if (used + Columns(fragments[i].word) > available && i > first) {
        flush(i);
        first = i;
        used = 0;
      }
      used += Columns(fragments[i].word) + Columns(fragments[i].whitespace);
    }
    flush(fragments.size());
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::string out;
  for (const std::string& line : lines) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

// miette reads the terminal's width from stdout (terminal_size), else 80.
std::size_t TerminalWidth() {
  winsize size{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0) {
    return size.ws_col;
  }
  return 80;
}

}  // namespace

void SetReleaseForErrors(const Version& version) { g_version = version; }

void Print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// miette 7.6's GraphicalReportHandler (v7.6.0 src/handlers/graphical.rs
// render_causes) as MietteHandlerOpts builds it when stderr is not a
// terminal: unicode characters (supports-unicode 3.0 says yes to pipes),
// no colours, width 80 less 2, "  × " then "  │ " before the message's lines,
// "  ├─▶ " / "  ╰─▶ " before each cause. Rust's main prints "Error: " first
// and a newline after the report, which already ends in one.
std::string Report(std::string_view message, const std::vector<std::string>& causes) {
  const std::size_t width = TerminalWidth() - 2;
  std::string out = "Error: " + Fill(message, width, "  × ", "  │ ") + "\n";
  for (std::size_t i = 0; i < causes.size(); ++i) {
    const bool last = i + 1 == causes.size();
    out += Fill(causes[i], width, last ? "  ╰─▶ " : "  ├─▶ ", last ? "      " : "  │   ") + "\n";
  }
  return out + "\n";
}

int PrintError(std::string_view message, const std::vector<std::string>& causes) {
  std::fflush(stdout);
  const std::string text = Report(message, causes);
  std::fwrite(text.data(), 1, text.size(), stderr);
  return 1;
}

// A Rust `{:?}` of a string.
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

// A tonic::Status's Display. Cargo.lock pins tonic 0.12.3 up to v0.0.60
// ("status: Code, message: .., details: .., metadata: ..", tonic v0.12.3
// src/status.rs) and tonic 0.14.6 from v0.0.61 ("code: '<description>'" and
// the message when there is one, tonic v0.14.5 src/status.rs). The 0.12 form's
// metadata is drawn empty: the headers a real gateway sends are not modelled.
std::string GrpcError(std::string_view code, std::string_view message) {
  if (g_version < Release(61)) {
    return fmt::format(
        "status: {}, message: {}, details: [], metadata: MetadataMap {{ headers: {{}} }}", code,
        Quoted(message));
  }
  std::string text = fmt::format("code: '{}'", CodeDescription(code));
  if (!message.empty()) text += ", message: " + Quoted(message);
  return text;
}

int ClapError(std::string_view message, std::string_view usage, std::string_view tip) {
  std::string text = fmt::format("error: {}\n\n", message);
  if (!tip.empty()) text += fmt::format("  tip: {}\n\n", tip);
  text += fmt::format("Usage: {}\n\nFor more information, try '--help'.\n", usage);
  std::fputs(text.c_str(), stderr);
  return 2;
}

int NotModelled(std::string_view what) {
  fmt::print(stderr, "fake-openshell: {} is not implemented by this test double\n", what);
  return 2;
}

}  // namespace mojoup::fake_openshell
