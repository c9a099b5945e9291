#include "remote/return_patch.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "guard/git_index.h"
#include "mojoup/internal/safe_file.h"

namespace mojoup::sandbox {
namespace return_patch {
namespace {

// Longer than any symbolic link's target Linux takes (PATH_MAX).
constexpr std::size_t kMaxTarget = 4096;
constexpr std::uint32_t kRegular = 0100644;
constexpr std::uint32_t kExecutable = 0100755;
constexpr std::uint32_t kSymlink = 0120000;
constexpr std::uint32_t kGitlink = 0160000;

// Abseil's own string_view is not std's here (STYLE.md): these take std's.
absl::string_view A(std::string_view text) { return {text.data(), text.size()}; }
bool StartsWith(std::string_view text, std::string_view prefix) { return text.starts_with(prefix); }
bool EndsWith(std::string_view text, std::string_view suffix) { return text.ends_with(suffix); }
template <typename Number>
bool ParseNumber(std::string_view text, Number* into) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *into);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

std::string Shown(std::string_view line) {
  std::string shown(line.substr(0, 60));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return line.size() > 60 ? shown + "..." : shown;
}

// Why `path` (a name in the patch, its prefix removed) may not be written
// by it, or "".
std::string PathProblem(std::string_view path) {
  if (path.empty()) return "an empty path";
  if (path.find('\0') != std::string_view::npos) return fmt::format("{} holds a NUL", Shown(path));
  if (path.front() == '/') return fmt::format("{} is an absolute path", Shown(path));
  bool first = true;
  for (absl::string_view piece : absl::StrSplit(absl::string_view(path.data(), path.size()), '/')) {
    std::string_view part(piece.data(), piece.size());
    if (part.empty() || part == "." || part == "..") {
      return fmt::format("{} is not a plain path in the tree (an empty, . or .. component)",
                         Shown(path));
    }
    if (IsGitDirName(part)) {
      return fmt::format("{} is in a git directory, whose config and hooks git runs", Shown(path));
    }
    std::string lower = absl::AsciiStrToLower(piece);
    if (first && StartsWith(lower, ".mojoup") &&
        lower.find_first_not_of(". ", 7) == std::string::npos) {
      return fmt::format("{} is under .mojoup/, the repository's policy", Shown(path));
    }
    first = false;
  }
  return "";
}

// A C-quoted name as git writes one (quote.c quote_c_style): `text` starts
// at the opening quote; `end` gets the offset after the closing one.
std::optional<std::string> Unquote(std::string_view text, std::size_t& end) {
  std::string name;
  for (std::size_t i = 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      end = i + 1;
      return name;
    }
    if (c != '\\') {
      name.push_back(c);
      continue;
    }
    if (++i >= text.size()) return std::nullopt;
    static constexpr std::string_view kFrom = "abtnvfr\"\\", kTo = "\a\b\t\n\v\f\r\"\\";
    if (std::size_t at = kFrom.find(text[i]); at != std::string_view::npos) {
      name.push_back(kTo[at]);
    } else if (i + 2 < text.size() && text[i] >= '0' && text[i] <= '3' && text[i + 1] >= '0' &&
               text[i + 1] <= '7' && text[i + 2] >= '0' && text[i + 2] <= '7') {
      name.push_back(
          static_cast<char>((text[i] - '0') * 64 + (text[i + 1] - '0') * 8 + (text[i + 2] - '0')));
      i += 2;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The name without its "a/" or "b/" (apply.c skip_tree_prefix, -p1).
std::optional<std::string> SkipPrefix(std::string_view name) {
  std::size_t slash = name.find('/');
  if (slash == 0 || slash == std::string_view::npos) return std::nullopt;
  return std::string(name.substr(slash + 1));
}

// A file's mode as git writes it (six octal digits).
std::optional<std::uint32_t> Mode(std::string_view text) {
  if (text.size() != 6) return std::nullopt;
  std::uint32_t mode = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return std::nullopt;
    mode = mode * 8 + static_cast<std::uint32_t>(c - '0');
  }
  return mode;
}

std::string ModeProblem(std::uint32_t mode) {
  if (mode == kRegular || mode == kExecutable || mode == kSymlink) return "";
  if (mode == kGitlink) return "is a gitlink (a submodule), which the host would enter";
  if ((mode & (S_ISUID | S_ISGID | S_ISVTX)) != 0) {
    return fmt::format("has mode {:06o}, which sets set-user-ID, set-group-ID or sticky", mode);
  }
  return fmt::format("has mode {:06o}, not 100644, 100755 or 120000", mode);
}

// Why a symbolic link at `link` with `target` would point out of the tree,
// or into a git directory or .mojoup/, or "". A target climbs (..) first
// and only then descends: the link's own directories are real ones (no
// path goes through a link), so the climb is the one the kernel makes.
std::string TargetProblem(std::string_view link, std::string_view target) {
  if (target.empty()) return "has an empty target";
  if (target.find_first_of(std::string_view("\0\n", 2)) != std::string_view::npos) {
    return "has a target holding a newline or NUL";
  }
  if (target.front() == '/') return fmt::format("points to {}, an absolute path", Shown(target));
  std::vector<std::string> where = absl::StrSplit(absl::string_view(link.data(), link.size()), '/');
  where.pop_back();
  bool descended = false;
  for (absl::string_view piece :
       absl::StrSplit(absl::string_view(target.data(), target.size()), '/')) {
    if (piece.empty() || piece == ".") continue;
    if (piece != "..") {
      where.emplace_back(piece);
      descended = true;
    } else if (descended) {
      return fmt::format("points to {}, which climbs after it descends", Shown(target));
    } else if (where.empty()) {
      return fmt::format("points to {}, out of the tree", Shown(target));
    } else {
      where.pop_back();
    }
  }
  if (where.empty()) return "";
  std::string resolved = absl::StrJoin(where, "/");
  if (std::string problem = PathProblem(resolved); !problem.empty()) {
    return fmt::format("points to {}: {}", Shown(target), problem);
  }
  return "";
}

// One `git diff` section: the file it changes and what git apply learns
// of it from its headers.
struct Section {
  std::size_t line = 0;  // of its `diff --git`
  std::optional<std::string> old_name, new_name;
  std::vector<std::string> names;  // every name it holds, for the links on their way
  std::optional<std::uint32_t> new_mode, index_mode;
  bool deleted = false, moved = false, binary = false, hunks = false;
  std::string post;  // the hunks' post-image, while it may be a link's target
  char last = 0;     // the kind of the last hunk line (' ', '-', '+')
};

// The patch, fed a line at a time (without its newline).
class Checker {
 public:
  Checker(int tree, const PatchCaps& caps) : tree_(tree), caps_(caps) {}

  absl::Status Line(std::string_view line);
  absl::Status Finish();
  std::size_t files() const { return files_; }

 private:
  enum class State {
    kBetween,
    kHeader,
    kHunk,
    kAfterHunk,
    kBinary,
    kBinaryData,
    kBinaryNext,
    kDone
  };

  absl::Status Refuse(const std::string& what, std::size_t line = 0) const {
    return absl::InvalidArgumentError(fmt::format("line {}: {}", line ? line : line_, what));
  }
  absl::Status Begin(std::string_view line);
  absl::Status HeaderName(std::string_view rest);
  absl::Status Header(std::string_view line);
  absl::Status ModeHeader(std::string_view name, std::string_view value);
  absl::Status Name(std::string_view text, bool old, bool verify, bool assign);
  absl::Status HunkStart(std::string_view line);
  absl::Status HunkLine(std::string_view line);
  absl::Status BinaryLine(std::string_view line);
  absl::Status EndSection();
  absl::StatusOr<bool> EndsAsLink();
  absl::Status OnItsWay(const std::string& name);

  int tree_;
  PatchCaps caps_;
  std::size_t line_ = 0;
  State state_ = State::kBetween;
  Section section_;
  std::size_t old_left_ = 0, new_left_ = 0;
  int binary_blocks_ = 0;
  bool no_newline_seen_ = false;
  std::size_t files_ = 0;
  std::vector<std::string> names_;  // of every section
  std::set<std::string> links_;     // the symbolic links the patch makes
  std::set<std::string> dirs_;      // directories of the work tree found on the way
};

absl::Status Checker::Line(std::string_view line) {
  ++line_;
  const bool next = StartsWith(line, "diff --git ");
  switch (state_) {
    case State::kBetween:
      if (next) return Begin(line);
      return Refuse(fmt::format("expected a `diff --git` line, found \"{}\"", Shown(line)));
    case State::kHeader:
      if (next) break;
      if (StartsWith(line, "@@ -")) return HunkStart(line);
      if (line == "GIT binary patch") {
        section_.binary = true;
        state_ = State::kBinary;
        return absl::OkStatus();
      }
      if (StartsWith(line, "Binary files ") && EndsWith(line, " differ")) {
        section_.binary = true;
        state_ = State::kDone;
        return absl::OkStatus();
      }
      return Header(line);
    case State::kHunk:
      return HunkLine(line);
    case State::kAfterHunk:
      if (next) break;
      if (StartsWith(line, "@@ -")) return HunkStart(line);
      if (StartsWith(line, "\\ ") && !no_newline_seen_) return HunkLine(line);
      return Refuse(
          fmt::format("expected a hunk or a `diff --git` line, found \"{}\"", Shown(line)));
    case State::kBinary:
    case State::kBinaryData:
    case State::kBinaryNext:
      if (state_ == State::kBinaryNext && next) break;
      return BinaryLine(line);
    case State::kDone:
      if (next) break;
      return Refuse(fmt::format("expected a `diff --git` line, found \"{}\"", Shown(line)));
  }
  if (absl::Status ended = EndSection(); !ended.ok()) return ended;
  return Begin(line);
}

absl::Status Checker::Begin(std::string_view line) {
  section_ = Section{};
  section_.line = line_;
  binary_blocks_ = 0;
  state_ = State::kHeader;
  if (++files_ > caps_.max_files) {
    return Refuse(fmt::format("the patch changes more than {} files", caps_.max_files));
  }
  return HeaderName(line.substr(std::string_view("diff --git ").size()));
}

// The names of `diff --git a/X b/Y` (apply.c git_header_name): git takes
// them for the file only when both are the same; all are checked anyway.
absl::Status Checker::HeaderName(std::string_view rest) {
  std::vector<std::string> found;
  if (!rest.empty() && rest.front() == '"') {
    std::size_t end = 0;
    auto first = Unquote(rest, end);
    if (!first) return Refuse("a `diff --git` line with a badly quoted name");
    std::string_view second =
        std::string_view(rest.substr(end))
            .substr(std::min(rest.substr(end).find_first_not_of(" \t"), rest.substr(end).size()));
    auto other = second.empty() || second.front() != '"'
                     ? std::optional<std::string>(std::string(second))
                     : Unquote(second, end);
    if (!other) return Refuse("a `diff --git` line with a badly quoted name");
    found = {*first, *other};
  } else if (std::size_t quote = rest.find(" \""); quote != std::string_view::npos) {
    std::size_t end = 0;
    auto other = Unquote(rest.substr(quote + 1), end);
    if (!other) return Refuse("a `diff --git` line with a badly quoted name");
    found = {std::string(rest.substr(0, quote)), *other};
  } else {
    auto name = SkipPrefix(rest);
    if (!name) return Refuse("a `diff --git` line without a/ and b/ names");
    for (std::size_t len = 0; len < name->size(); ++len) {
      if ((*name)[len] != ' ' && (*name)[len] != '\t') continue;
      auto second = SkipPrefix(std::string_view(*name).substr(len + 1));
      if (second && *second == name->substr(0, len)) {
        if (absl::Status checked = Name(*second, true, false, true); !checked.ok()) return checked;
        return Name(*second, false, false, true);
      }
    }
    // A rename's names, split nowhere git would split them: the rename
    // headers name the files, and these words are checked as paths.
    for (absl::string_view word :
         absl::StrSplit(absl::string_view(rest.data(), rest.size()), ' ')) {
      if (auto part = SkipPrefix(std::string_view(word.data(), word.size()))) {
        found.push_back(*part);
      }
    }
    for (const std::string& part : found) {
      if (std::string problem = PathProblem(part); !problem.empty()) return Refuse(problem);
    }
    return absl::OkStatus();
  }
  std::optional<std::string> a = SkipPrefix(found[0]), b = SkipPrefix(found[1]);
  if (!a || !b) return Refuse("a `diff --git` line without a/ and b/ names");
  if (absl::Status old_ok = Name(*a, true, false, *a == *b); !old_ok.ok()) return old_ok;
  return Name(*b, false, false, *a == *b);
}

// Checks a name of the section and, when `assign`, takes it for the old or
// new file; a name that disagrees with one taken before is refused, as git
// apply refuses it ("inconsistent old filename").
absl::Status Checker::Name(std::string_view text, bool old, bool verify, bool assign) {
  std::string name(text);
  if (std::string problem = PathProblem(name); !problem.empty()) return Refuse(problem);
  section_.names.push_back(name);
  std::optional<std::string>& slot = old ? section_.old_name : section_.new_name;
  if (verify && slot && *slot != name) {
    return Refuse(
        fmt::format("the patch names {} where its header named {}", Shown(name), Shown(*slot)));
  }
  if (assign || (verify && !slot)) slot = name;
  return absl::OkStatus();
}

// The extended headers git apply reads (apply.c parse_git_diff_header).
absl::Status Checker::Header(std::string_view line) {
  static constexpr std::string_view kModes[] = {"old mode ", "new mode ", "deleted file mode ",
                                                "new file mode "};
  for (std::string_view header : kModes) {
    if (StartsWith(line, header)) return ModeHeader(header, line.substr(header.size()));
  }
  auto after = [&line](std::string_view header) -> std::optional<std::string_view> {
    if (!StartsWith(line, header)) return std::nullopt;
    return line.substr(header.size());
  };
  auto name_of = [](std::string_view text) -> std::optional<std::string> {
    std::size_t end = 0;
    if (text.empty() || text.front() != '"') return std::string(text);
    auto name = Unquote(text, end);
    if (!name || end != text.size()) return std::nullopt;
    return name;
  };
  for (std::string_view header : {"rename from ", "copy from ", "rename to ", "copy to "}) {
    if (auto text = after(header)) {
      auto name = name_of(*text);
      if (!name) return Refuse(fmt::format("a badly quoted name in \"{}\"", Shown(line)));
      section_.moved = true;
      return Name(*name, EndsWith(header, "from "), false, true);
    }
  }
  for (std::string_view header : {"--- ", "+++ "}) {
    if (auto text = after(header)) {
      if (*text == "/dev/null") return absl::OkStatus();
      // An unquoted name ends at a tab (diff.c adds one after a name with
      // a space; apply.c find_name stops there).
      auto name = !text->empty() && text->front() == '"'
                      ? name_of(EndsWith(*text, "\"\t") ? text->substr(0, text->size() - 1) : *text)
                      : std::optional<std::string>(text->substr(0, text->find('\t')));
      std::optional<std::string> bare = name ? SkipPrefix(*name) : std::nullopt;
      if (!bare)
        return Refuse(fmt::format("a file name git apply would not take in \"{}\"", Shown(line)));
      return Name(*bare, header == "--- ", true, false);
    }
  }
  if (auto text = after("index ")) {
    std::vector<absl::string_view> parts = absl::StrSplit(A(*text), ' ');
    std::vector<absl::string_view> ids = absl::StrSplit(parts[0], "..");
    auto hex = [](absl::string_view id) {
      return id.size() >= 7 && id.size() <= 64 &&
             id.find_first_not_of("0123456789abcdef") == std::string_view::npos;
    };
    if (parts.size() > 2 || ids.size() != 2 || !hex(ids[0]) || !hex(ids[1])) {
      return Refuse(fmt::format("an index line git does not write: \"{}\"", Shown(line)));
    }
    if (parts.size() == 2)
      return ModeHeader("index ", std::string_view(parts[1].data(), parts[1].size()));
    return absl::OkStatus();
  }
  for (std::string_view header : {"similarity index ", "dissimilarity index "}) {
    if (auto text = after(header)) {
      std::uint32_t percent = 0;
      if (text->empty() || text->back() != '%' ||
          !ParseNumber(text->substr(0, text->size() - 1), &percent) || percent > 100) {
        return Refuse(fmt::format("a similarity git does not write: \"{}\"", Shown(line)));
      }
      return absl::OkStatus();
    }
  }
  return Refuse(fmt::format("a line that is no header git apply knows: \"{}\"", Shown(line)));
}

absl::Status Checker::ModeHeader(std::string_view name, std::string_view value) {
  auto mode = Mode(value);
  if (!mode) return Refuse(fmt::format("a mode git does not write: \"{}\"", Shown(value)));
  if (std::string problem = ModeProblem(*mode); !problem.empty()) {
    return Refuse(fmt::format(
        "{} {}", section_.new_name.value_or(section_.old_name.value_or("a file")), problem));
  }
  if (name == "deleted file mode ") section_.deleted = true;
  if (name == "new mode " || name == "new file mode ") section_.new_mode = mode;
  if (name == "index ") section_.index_mode = mode;
  return absl::OkStatus();
}

// `@@ -a[,b] +c[,d] @@` (apply.c parse_fragment_header).
absl::Status Checker::HunkStart(std::string_view line) {
  auto number = [&line](std::size_t& at, std::size_t& into) {
    std::size_t end = line.find_first_not_of("0123456789", at);
    if (end == at || end == std::string_view::npos || end - at > 9) return false;
    into = 0;
    ParseNumber(line.substr(at, end - at), &into);
    at = end;
    return true;
  };
  auto range = [&](std::size_t& at, std::size_t& count) {
    std::size_t start = 0;
    if (!number(at, start)) return false;
    count = 1;
    if (line[at] != ',') return true;
    return number(++at, count);
  };
  std::size_t at = 4;
  bool ok = range(at, old_left_) && line.substr(at, 2) == " +" && range(at += 2, new_left_) &&
            line.substr(at, 3) == " @@";
  if (!ok) return Refuse(fmt::format("a hunk header git does not write: \"{}\"", Shown(line)));
  if (old_left_ == 0 && new_left_ == 0) return Refuse("a hunk of no lines");
  section_.hunks = true;
  no_newline_seen_ = false;
  state_ = State::kHunk;
  return absl::OkStatus();
}

absl::Status Checker::HunkLine(std::string_view line) {
  if (StartsWith(line, "\\ ")) {
    // "\ No newline at end of file": the line before had none.
    if (section_.last == 0) return Refuse("a \"\\\" line before any line of its hunk");
    if (section_.last != '-' && !section_.post.empty()) section_.post.pop_back();
    if (state_ == State::kAfterHunk) no_newline_seen_ = true;
    return absl::OkStatus();
  }
  const char kind = line.empty() ? ' ' : line.front();
  if (kind != ' ' && kind != '-' && kind != '+') {
    return Refuse(fmt::format("a line in a hunk that is no context, removal or addition: \"{}\"",
                              Shown(line)));
  }
  if ((kind != '+' && old_left_ == 0) || (kind != '-' && new_left_ == 0)) {
    return Refuse("a hunk longer than its header says");
  }
  if (kind != '+') --old_left_;
  if (kind != '-') --new_left_;
  section_.last = kind;
  if (kind != '-' && section_.post.size() <= kMaxTarget) {
    section_.post.append(line.empty() ? line : line.substr(1));
    section_.post.push_back('\n');
  }
  if (old_left_ == 0 && new_left_ == 0) state_ = State::kAfterHunk;
  return absl::OkStatus();
}

// "GIT binary patch", then one or two blocks of `literal N` or `delta N`
// and base85 lines, each ended by an empty line (apply.c parse_binary).
absl::Status Checker::BinaryLine(std::string_view line) {
  if (state_ != State::kBinaryData) {
    std::size_t size = 0;
    std::string_view number = StartsWith(line, "literal ") ? line.substr(8)
                              : StartsWith(line, "delta ") ? line.substr(6)
                                                           : std::string_view();
    if (++binary_blocks_ > 2 || !ParseNumber(number, &size)) {
      return Refuse(fmt::format("a binary patch git does not write: \"{}\"", Shown(line)));
    }
    state_ = State::kBinaryData;
    return absl::OkStatus();
  }
  if (line.empty()) {
    state_ = State::kBinaryNext;
    return absl::OkStatus();
  }
  static constexpr std::string_view kBase85 =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
  const char first = line.front();
  std::size_t bytes = first >= 'A' && first <= 'Z'   ? static_cast<std::size_t>(first - 'A' + 1)
                      : first >= 'a' && first <= 'z' ? static_cast<std::size_t>(first - 'a' + 27)
                                                     : 0;
  if (bytes == 0 || line.size() - 1 != (bytes + 3) / 4 * 5 ||
      line.find_first_not_of(kBase85, 1) != std::string_view::npos) {
    return Refuse("a line of a binary patch that is not git's base85");
  }
  return absl::OkStatus();
}

// Whether the file the section leaves is a symbolic link: its mode says
// so, or it keeps the mode of a link in the work tree.
absl::StatusOr<bool> Checker::EndsAsLink() {
  if (section_.deleted) return false;
  if (section_.new_mode) return *section_.new_mode == kSymlink;
  if (section_.index_mode) return *section_.index_mode == kSymlink;
  if (!section_.old_name) return false;
  auto there = internal::OpenBeneath(tree_, *section_.old_name, O_PATH);
  if (!there.ok()) {
    if (absl::IsNotFound(there.status())) return false;
    return Refuse(fmt::format("{} cannot be looked at in the work tree: {}",
                              Shown(*section_.old_name), std::string(there.status().message())),
                  section_.line);
  }
  struct stat info {};
  if (::fstat(there->get(), &info) != 0) {
    return Refuse(fmt::format("{} cannot be looked at in the work tree: {}",
                              Shown(*section_.old_name), std::strerror(errno)),
                  section_.line);
  }
  return S_ISLNK(info.st_mode);
}

// The directories on the way to `name` are directories in the work tree
// (or not there yet), never a symbolic link git apply would write through.
absl::Status Checker::OnItsWay(const std::string& name) {
  for (std::size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    const std::string dir = name.substr(0, slash);
    if (dirs_.count(dir) != 0) continue;
    auto there = internal::OpenBeneath(tree_, dir, O_PATH);
    if (!there.ok() && absl::IsNotFound(there.status())) return absl::OkStatus();
    if (!there.ok()) {
      return Refuse(fmt::format("{} cannot be checked on its way: {}", Shown(name),
                                std::string(there.status().message())),
                    section_.line);
    }
    struct stat info {};
    if (::fstat(there->get(), &info) != 0 || S_ISLNK(info.st_mode)) {
      return Refuse(fmt::format("{} goes through {}, a symbolic link in the work tree", Shown(name),
                                Shown(dir)),
                    section_.line);
    }
    // A file there: git apply says what is wrong with that.
    if (!S_ISDIR(info.st_mode)) return absl::OkStatus();
    dirs_.insert(dir);
  }
  return absl::OkStatus();
}

absl::Status Checker::EndSection() {
  if (!section_.old_name && !section_.new_name) {
    return Refuse("the section does not say which file it changes", section_.line);
  }
  for (const std::string& name : section_.names) {
    if (absl::Status way = OnItsWay(name); !way.ok()) return way;
  }
  auto link = EndsAsLink();
  if (!link.ok()) return link.status();
  const std::string& at = section_.new_name ? *section_.new_name : *section_.old_name;
  if (*link) {
    std::string problem;
    if (section_.binary) {
      problem = "has a binary target, which cannot be checked";
    } else if (!section_.hunks) {
      problem = "has a target the patch does not show";
    } else if (section_.post.size() > kMaxTarget) {
      problem = "has a target longer than any a link may have";
    } else {
      problem = TargetProblem(at, section_.post);
    }
    if (!problem.empty()) {
      return Refuse(fmt::format("{} is a symbolic link that {}", Shown(at), problem),
                    section_.line);
    }
    links_.insert(at);
  }
  names_.insert(names_.end(), section_.names.begin(), section_.names.end());
  state_ = State::kBetween;
  return absl::OkStatus();
}

absl::Status Checker::Finish() {
  ++line_;
  switch (state_) {
    case State::kBetween:
      return absl::OkStatus();
    case State::kHunk:
      return Refuse("the patch ends inside a hunk");
    case State::kBinary:
    case State::kBinaryData:
      return Refuse("the patch ends inside a binary patch");
    default:
      break;
  }
  if (absl::Status ended = EndSection(); !ended.ok()) return ended;
  // A path through a link the patch itself makes.
  for (const std::string& name : names_) {
    for (std::size_t slash = name.find('/'); slash != std::string::npos;
         slash = name.find('/', slash + 1)) {
      if (links_.count(name.substr(0, slash)) != 0) {
        return Refuse(fmt::format("{} goes through {}, a symbolic link the patch makes",
                                  Shown(name), name.substr(0, slash)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

// Reads `fd` to its end in pieces, handing each line to `checker` and
// each piece to `copy`.
absl::Status Feed(int fd, std::uint64_t max_bytes, const PatchCaps& caps, Checker& checker,
                  int copy) {
  std::vector<char> buffer(1 << 16);
  std::string line;
  std::uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(fmt::format("cannot be read: {}", std::strerror(errno)));
    if (n == 0) break;
    total += static_cast<std::uint64_t>(n);
    if (total > max_bytes) return absl::InvalidArgumentError("grew past its cap while read");
    if (absl::Status copied = WriteAll(copy, buffer.data(), static_cast<std::size_t>(n));
        !copied.ok()) {
      return absl::InternalError(
          fmt::format("cannot be copied: {}", std::string(copied.message())));
    }
    std::string_view piece(buffer.data(), static_cast<std::size_t>(n));
    for (std::size_t end; (end = piece.find('\n')) != std::string_view::npos;
         piece.remove_prefix(end + 1)) {
      line.append(piece.substr(0, end));
      if (line.size() > caps.max_line) break;
      if (absl::Status took = checker.Line(line); !took.ok()) return took;
      line.clear();
    }
    line.append(piece);
    if (line.size() > caps.max_line) {
      return absl::InvalidArgumentError(
          fmt::format("a line is over the {} bytes a line may have", caps.max_line));
    }
  }
  if (!line.empty()) return absl::InvalidArgumentError("the last line has no newline");
  return checker.Finish();
}

}  // namespace
}  // namespace return_patch

absl::StatusOr<CheckedPatch> CheckReturnPatch(const std::string& path, int tree,
                                              const PatchCaps& caps) {
  struct stat info {};
  auto fd = internal::OpenRegularFile(path, caps.max_bytes, &info);
  if (!fd.ok()) {
    return absl::InvalidArgumentError(fd.status().message());
  }
  CheckedPatch patch;
  patch.copy = internal::Fd(::memfd_create("mojoup-return.patch", MFD_CLOEXEC));
  if (!patch.copy.ok()) {
    return absl::InternalError(
        fmt::format("cannot hold a copy of {}: {}", path, std::strerror(errno)));
  }
  return_patch::Checker checker(tree, caps);
  if (absl::Status fed =
          return_patch::Feed(fd->get(), caps.max_bytes, caps, checker, patch.copy.get());
      !fed.ok()) {
    return absl::Status(fed.code(),
                        fmt::format("the patch {}, {}", path, std::string(fed.message())));
  }
  patch.files = checker.files();
  patch.bytes = static_cast<std::uint64_t>(::lseek(patch.copy.get(), 0, SEEK_CUR));
  if (::lseek(patch.copy.get(), 0, SEEK_SET) != 0) {
    return absl::InternalError(fmt::format("cannot rewind the copy of {}", path));
  }
  return patch;
}

}  // namespace mojoup::sandbox
