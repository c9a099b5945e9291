#include "mojoup/sandbox/agent_image.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "fmt/format.h"
#include "image/agent_image_json.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/version.h"

namespace mojoup::sandbox {
namespace image_files {
extern const std::string_view kAgentsFile;  // image/agents.txt
extern const std::string_view kDockerfile;  // image/Dockerfile
}  // namespace image_files

namespace {

namespace fs = std::filesystem;
using probe::CommandResult;
using Clock = std::chrono::steady_clock;

// Deadlines of the steps that wait on the outside world. A download is
// some 190 MB at most (claude-code); mmdebstrap fetches and installs about
// 90 packages; docker import and build write some 1.7 GB.
constexpr auto kQuick = std::chrono::seconds(60);
constexpr auto kDownload = std::chrono::minutes(15);
constexpr auto kBase = std::chrono::minutes(20);
constexpr auto kImport = std::chrono::minutes(15);
constexpr auto kPull = std::chrono::minutes(2);
constexpr auto kVersionCheck = std::chrono::seconds(60);

// The Debian suite of the image, and the packages put in beside the
// essential ones (minbase): TLS roots for the agents and curl, git for the
// repository, curl for whoever needs it.
constexpr std::string_view kSuite = "bookworm";
constexpr std::string_view kPackages = "ca-certificates,curl,git";
constexpr std::string_view kRegistryBase = "debian:12-slim";
constexpr std::string_view kDebianBase = "debian:12 (mmdebstrap)";
constexpr std::string_view kAgentsRoot = "/opt/mojoup/agents";

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> words;
  std::istringstream in{std::string(line)};
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// "<registry path of the tarball>" for "name@version": scoped names keep
// their scope in the path, not in the file name.
std::string TarballPath(const std::string& name, const std::string& version) {
  const std::size_t slash = name.rfind('/');
  const std::string base = slash == std::string::npos ? name : name.substr(slash + 1);
  return fmt::format("{}/-/{}-{}.tgz", name, base, version);
}

absl::StatusOr<std::vector<AgentPin>> ParsePins(std::string_view text) {
  std::vector<AgentPin> pins;
  std::istringstream lines{std::string(text)};
  int number = 0;
  auto bad = [&](std::string_view what) {
    return absl::InternalError(fmt::format("image/agents.txt:{}: {}", number, what));
  };
  for (std::string line; std::getline(lines, line);) {
    ++number;
    std::vector<std::string> words = Words(line);
    if (words.empty() || words.front().front() == '#') continue;
    if (line.front() == ' ') {
      if (pins.empty() || !pins.back().integrity.empty() || words.size() != 1 ||
          words.front().rfind("sha512-", 0) != 0) {
        return bad("expected the sha512 integrity of the agent on the line above");
      }
      pins.back().integrity = words.front();
      continue;
    }
    if (!pins.empty() && pins.back().integrity.empty()) {
      return bad(fmt::format("{} has no integrity line", pins.back().tool));
    }
    if (words.size() < 5) return bad("expected: tool package version native@version programs");
    AgentPin pin{words[0], words[1], words[2], words[3], "", "", {}};
    const std::size_t at = pin.native.rfind('@');
    if (at == 0 || at == std::string::npos)
      return bad("expected the native package as name@version");
    pin.tarball = TarballPath(pin.native.substr(0, at), pin.native.substr(at + 1));
    for (std::size_t i = 4; i < words.size(); ++i) {
      const std::size_t equals = words[i].find('=');
      if (equals == 0 || equals == std::string::npos || equals + 1 == words[i].size()) {
        return bad(fmt::format("expected a program as name=path, not \"{}\"", words[i]));
      }
      pin.programs.emplace_back(words[i].substr(0, equals), words[i].substr(equals + 1));
    }
    pins.push_back(std::move(pin));
  }
  if (!pins.empty() && pins.back().integrity.empty()) {
    return bad(fmt::format("{} has no integrity line", pins.back().tool));
  }
  return pins;
}

// "sha512-<base64>" of the file, as npm writes integrity (Subresource
// Integrity); empty when it cannot be read.
std::string FileIntegrity(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  EVP_DigestInit_ex(context, EVP_sha512(), nullptr);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    EVP_DigestUpdate(context, buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context, digest, &length);
  EVP_MD_CTX_free(context);
  if (in.bad()) return "";
  std::string encoded(4 * ((length + 2) / 3) + 1, '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()), digest,
                                      static_cast<int>(length));
  encoded.resize(static_cast<std::size_t>(written));
  return "sha512-" + encoded;
}

// docker build colours what a step wrote to stderr (ESC [ 91 m ... ESC [ 0 m),
// even inside a word: the text without those sequences.
std::string WithoutColour(const std::string& text) {
  std::string plain;
  plain.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      std::size_t end = i + 2;
      while (end < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[end])) != 0 || text[end] == ';')) {
        ++end;
      }
      if (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end])) != 0) {
        i = end;
        continue;
      }
    }
    plain.push_back(text[i]);
  }
  return plain;
}

std::string Problem(const CommandResult& result) {
  switch (result.outcome) {
    case CommandResult::Outcome::kNotStarted:
      return result.spawn_error == ENOENT
                 ? "it is not installed"
                 : fmt::format("it cannot be started (errno {})", result.spawn_error);
    case CommandResult::Outcome::kTimedOut:
      return "it did not finish in time";
    case CommandResult::Outcome::kSignaled:
      return fmt::format("it was killed by signal {}", result.signal);
    case CommandResult::Outcome::kExited:
      break;
  }
  // apt's first error ("E: Failed to fetch ..."), which names the cause;
  // mmdebstrap's own last line only says it failed. Else the last line that
  // says something: docker ends with the cause.
  std::istringstream lines(WithoutColour(result.err.empty() ? result.out : result.err));
  std::string last;
  std::string first_error;
  for (std::string line; std::getline(lines, line);) {
    if (first_error.empty() && line.rfind("E: ", 0) == 0) first_error = line.substr(3);
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  if (!first_error.empty()) last = first_error;
  while (!last.empty() && (last.back() == '\r' || last.back() == ' ')) last.pop_back();
  return last.empty() ? fmt::format("it exited with {}", result.exit_code)
                      : fmt::format("exit {}: {}", result.exit_code, last);
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

std::string CacheDir(const AgentImageOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/mojoup";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.cache/mojoup";
  }
  return fmt::format("/var/tmp/mojoup-{}", geteuid());
}

// The node's own apt sources when the node is Debian 12 too, so that
// mmdebstrap fetches from wherever this node's apt does (a local mirror, a
// snapshot); else Debian's mirrors (or `mirror`), with the suite's updates
// and, from Debian's own mirrors, its security fixes.
std::vector<std::string> DebianSources(const std::string& mirror) {
  const std::string base = mirror.empty() ? "http://deb.debian.org/debian" : mirror;
  std::vector<std::string> sources = {fmt::format("deb {} {} main", base, kSuite),
                                      fmt::format("deb {} {}-updates main", base, kSuite)};
  if (!mirror.empty()) return sources;
  sources.push_back(
      fmt::format("deb http://deb.debian.org/debian-security {}-security main", kSuite));
  std::ifstream release("/etc/os-release");
  const std::string text((std::istreambuf_iterator<char>(release)),
                         std::istreambuf_iterator<char>());
  if (text.find(fmt::format("VERSION_CODENAME={}", kSuite)) == std::string::npos) return sources;
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_regular_file("/etc/apt/sources.list", ec) &&
      fs::file_size("/etc/apt/sources.list", ec) > 0) {
    files.emplace_back("/etc/apt/sources.list");
  }
  for (const auto& entry : fs::directory_iterator("/etc/apt/sources.list.d", ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".list" || ext == ".sources")) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files.empty() ? sources : files;
}

class Builder {
 public:
  Builder(const AgentImageOptions& options, probe::CommandRunner& commands,
          std::vector<const AgentPin*> pins)
      : options_(options), commands_(commands), pins_(std::move(pins)) {}

  absl::StatusOr<AgentImage> Build() {
    image_.reference = options_.reference.empty() ? DefaultAgentImage() : options_.reference;
    count_ = static_cast<int>(pins_.size()) + 4;
    cache_ = CacheDir(options_);
    // The downloads go into the image: the cache is the user's alone, never
    // a directory another user could have made first.
    if (absl::Status made = internal::MakePrivateDir(cache_, "the download cache"); !made.ok()) {
      return made;
    }
    std::error_code ec;
    fs::create_directories(cache_ + "/npm", ec);
    if (ec) {
      return absl::FailedPreconditionError(
          fmt::format("cannot create the download cache {}: {}", cache_, ec.message()));
    }
    std::random_device random;
    staging_ = fmt::format("{}/build-{:08x}", cache_, random());
    absl::StatusOr<AgentImage> built = BuildIn();
    fs::remove_all(staging_, ec);
    if (!built.ok() && !untagged_.empty()) {
      commands_.Run({"docker", "image", "rm", "--force", untagged_}, kQuick);
    }
    return built;
  }

 private:
  absl::StatusOr<AgentImage> BuildIn() {
    for (const AgentPin* pin : pins_) {
      auto done = Step(fmt::format("download {} {}", pin->tool, pin->version),
                       [&] { return Download(*pin); });
      if (!done.ok()) return done;
    }
    if (absl::Status staged = Step("unpack the agents", [&] { return Stage(); }); !staged.ok()) {
      return staged;
    }
    ImageBase base = options_.base;
    if (base == ImageBase::kAuto)
      base = RegistryAnswers() ? ImageBase::kRegistry : ImageBase::kDebian;
    image_.base = std::string(base == ImageBase::kRegistry ? kRegistryBase : kDebianBase);
    const std::string what =
        base == ImageBase::kRegistry
            ? fmt::format("build on {} from the registry (image/Dockerfile)", kRegistryBase)
            : fmt::format("build Debian 12 with mmdebstrap and import it");
    if (absl::Status made = Step(
            what, [&] { return base == ImageBase::kRegistry ? FromRegistry() : FromDebian(); });
        !made.ok()) {
      return made;
    }
    if (absl::Status checked = Step("check each agent runs in the image", [&] { return Verify(); });
        !checked.ok()) {
      return checked;
    }
    if (absl::Status tagged = Step(fmt::format("tag {}", image_.reference), [&] { return Tag(); });
        !tagged.ok()) {
      return tagged;
    }
    return image_;
  }

  template <class Work>
  absl::Status Step(std::string what, Work work) {
    ImageStep step{++index_, count_, std::move(what), false, {}};
    if (options_.progress) options_.progress(step);
    const auto start = Clock::now();
    absl::Status status = work();
    if (!status.ok()) return status;
    step.done = true;
    step.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (options_.progress) options_.progress(step);
    return absl::OkStatus();
  }

  std::string CachedTarball(const AgentPin& pin) const {
    std::string name = pin.native;
    std::replace(name.begin(), name.end(), '/', '_');
    return fmt::format("{}/npm/{}.tgz", cache_, name);
  }

  absl::Status Download(const AgentPin& pin) {
    const std::string path = CachedTarball(pin);
    if (FileIntegrity(path) == pin.integrity) return absl::OkStatus();
    const std::string url = fmt::format("{}/{}", options_.npm_registry, pin.tarball);
    // A partial download of this build's own: another build of the same
    // user's, at the same time, downloads to a name of its own.
    std::random_device random;
    const std::string partial = fmt::format("{}.part-{:08x}", path, random());
    CommandResult got =
        commands_.Run({"curl", "--fail", "--silent", "--show-error", "--location", "--retry", "2",
                       "--connect-timeout", "30", "--output", partial, url},
                      kDownload);
    std::error_code ec;
    if (!got.Succeeded()) {
      fs::remove(partial, ec);
      return absl::UnavailableError(
          fmt::format("cannot download {} from the npm registry ({}): curl: {}", pin.native, url,
                      Problem(got)));
    }
    const std::string integrity = FileIntegrity(partial);
    if (integrity != pin.integrity) {
      fs::remove(partial, ec);
      return absl::DataLossError(fmt::format(
          "{} from {} is not what image/agents.txt pins: its integrity is {}, not {}; nothing "
          "was built",
          pin.native, url, integrity.empty() ? "unreadable" : integrity, pin.integrity));
    }
    fs::rename(partial, path, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          fmt::format("cannot keep the download {}: {}", path, ec.message()));
    }
    return absl::OkStatus();
  }

  // staging/agents is the tree laid over the base system: the packages
  // under /opt/mojoup/agents/<tool> and their programs linked into
  // /usr/local/bin.
  absl::Status Stage() {
    const std::string root = staging_ + "/agents";
    std::error_code ec;
    fs::create_directories(root + "/usr/local/bin", ec);
    for (const AgentPin* pin : pins_) {
      const std::string dir = fmt::format("{}{}/{}", root, kAgentsRoot, pin->tool);
      fs::create_directories(dir, ec);
      if (ec) {
        return absl::FailedPreconditionError(
            fmt::format("cannot create {}: {}", dir, ec.message()));
      }
      CommandResult unpacked =
          commands_.Run({"tar", "--extract", "--gzip", "--no-same-owner", "--strip-components=1",
                         "--file", CachedTarball(*pin), "--directory", dir},
                        kImport);
      if (!unpacked.Succeeded()) {
        return absl::InternalError(
            fmt::format("cannot unpack {}: tar: {}", pin->native, Problem(unpacked)));
      }
      for (const auto& [name, path] : pin->programs) {
        const std::string program = dir + "/" + path;
        if (::access(program.c_str(), X_OK) != 0) {
          return absl::InternalError(fmt::format(
              "{} has no program {} (image/agents.txt names it for {})", pin->native, path, name));
        }
        const std::string link = root + "/usr/local/bin/" + name;
        fs::remove(link, ec);
        fs::create_symlink(fmt::format("{}/{}/{}", kAgentsRoot, pin->tool, path), link, ec);
        if (ec) {
          return absl::FailedPreconditionError(
              fmt::format("cannot link {}: {}", link, ec.message()));
        }
      }
    }
    return absl::OkStatus();
  }

  bool RegistryAnswers() {
    const std::string base(kRegistryBase);
    if (commands_.Run({"docker", "image", "inspect", base}, kQuick).Succeeded()) return true;
    return commands_.Run({"docker", "pull", "--quiet", base}, kPull).Succeeded();
  }

  std::vector<std::string> Labels() const {
    std::vector<std::string> labels = {
        fmt::format("{}=agents", kImageLabel),
        fmt::format("{}={}", kImageVersionLabel, kVersion),
        fmt::format("{}={}", kImageBaseLabel, image_.base),
    };
    for (const AgentPin* pin : pins_) {
      labels.push_back(fmt::format("{}{}={}", kAgentLabelPrefix, pin->tool, pin->version));
    }
    return labels;
  }

  absl::Status FromDebian() {
    const std::string tarball = staging_ + "/rootfs.tar";
    std::vector<std::string> argv = {
        "mmdebstrap", "--variant=minbase", fmt::format("--include={}", kPackages),
        fmt::format("--customize-hook=sync-in {}/agents /", staging_),
        // Owned by root like the rest of the system, whoever built it.
        fmt::format("--customize-hook=chown -R 0:0 \"$1{}\"", kAgentsRoot),
        // apt's lists are some 50 MB that no session reads.
        "--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/*", std::string(kSuite), tarball};
    for (const std::string& source : DebianSources(options_.debian_mirror)) argv.push_back(source);
    CommandResult made = commands_.Run(argv, kBase);
    if (!made.Succeeded()) {
      std::string hint;
      if (made.outcome == CommandResult::Outcome::kNotStarted) {
        hint = "; install it (Debian: apt-get install mmdebstrap)";
      } else if (geteuid() != 0) {
        hint =
            "; as a normal user it needs unprivileged user namespaces and an /etc/subuid "
            "range, or run the build as root";
      }
      return absl::FailedPreconditionError(
          fmt::format("cannot build the Debian 12 base: mmdebstrap: {}{}", Problem(made), hint));
    }
    std::vector<std::string> import = {"docker", "import"};
    for (const std::string& label : Labels()) {
      const std::size_t equals = label.find('=');
      import.push_back("--change");
      import.push_back(
          fmt::format("LABEL {}=\"{}\"", label.substr(0, equals), label.substr(equals + 1)));
    }
    import.insert(import.end(), {"--change", "CMD [\"/bin/bash\"]", tarball});
    CommandResult imported = commands_.Run(import, kImport);
    if (!imported.Succeeded()) {
      return absl::InternalError(fmt::format("docker import failed: {}", Problem(imported)));
    }
    untagged_ = Trimmed(imported.out);
    image_.id = untagged_;
    return absl::OkStatus();
  }

  absl::Status FromRegistry() {
    const std::string dockerfile = staging_ + "/Dockerfile";
    {
      std::ofstream out(dockerfile);
      out << image_files::kDockerfile;
      if (!out) {
        return absl::FailedPreconditionError(fmt::format("cannot write {}", dockerfile));
      }
    }
    // The legacy builder: Debian's docker.io has no buildx. The host's
    // network, as the bridge may be off (dockerd --bridge=none).
    std::vector<std::string> argv = {"env",     "DOCKER_BUILDKIT=0", "docker", "build",
                                     "--quiet", "--network",         "host",   "--file",
                                     dockerfile};
    for (const std::string& label : Labels()) {
      argv.push_back("--label");
      argv.push_back(label);
    }
    argv.push_back(staging_);
    CommandResult built = commands_.Run(argv, kBase);
    if (!built.Succeeded()) {
      return absl::InternalError(fmt::format("docker build failed: {}", Problem(built)));
    }
    untagged_ = Trimmed(built.out);
    image_.id = untagged_;
    return absl::OkStatus();
  }

  absl::Status Verify() {
    for (const AgentPin* pin : pins_) {
      const std::string& program = pin->programs.front().first;
      CommandResult ran = commands_.Run(
          {"docker", "run", "--rm", "--network", "none", "--user", "65534:65534", "--env",
           "HOME=/tmp", "--entrypoint", "/usr/local/bin/" + program, image_.id, "--version"},
          kVersionCheck);
      if (!ran.Succeeded() || ran.out.find(pin->version) == std::string::npos) {
        return absl::InternalError(fmt::format(
            "{} {} does not run in the new image: `{} --version` {}", pin->tool, pin->version,
            program,
            ran.Succeeded() ? fmt::format("printed \"{}\"", Trimmed(ran.out)) : Problem(ran)));
      }
      image_.agents[pin->tool] = pin->version;
    }
    return absl::OkStatus();
  }

  absl::Status Tag() {
    CommandResult tagged = commands_.Run({"docker", "tag", image_.id, image_.reference}, kQuick);
    if (!tagged.Succeeded()) {
      return absl::InternalError(fmt::format("cannot tag the image {}: docker tag: {}",
                                             image_.reference, Problem(tagged)));
    }
    untagged_.clear();
    CommandResult size =
        commands_.Run({"docker", "image", "inspect", "--format", "{{.Size}}", image_.id}, kQuick);
    if (size.Succeeded()) image_.size_bytes = std::atoll(size.out.c_str());
    return absl::OkStatus();
  }

  const AgentImageOptions& options_;
  probe::CommandRunner& commands_;
  std::vector<const AgentPin*> pins_;
  AgentImage image_;
  std::string cache_;
  std::string staging_;
  std::string untagged_;  // built, not yet tagged: removed if the build fails
  int index_ = 0;
  int count_ = 0;
};

}  // namespace

std::string DefaultAgentImage() { return "mojoup/agents:" + std::string(kVersion); }

const std::vector<AgentPin>& AgentPins() {
  static const std::vector<AgentPin> kPins = [] {
    auto pins = ParsePins(image_files::kAgentsFile);
    // The file is part of the build; a unit test parses it.
    return pins.ok() ? *pins : std::vector<AgentPin>{};
  }();
  return kPins;
}

std::string AgentImageToJson(const AgentImage& image) {
  return internal::json::ToJson(image, kAgentImageJson);
}

absl::StatusOr<AgentImage> BuildAgentImage(const AgentImageOptions& options) {
  const std::vector<AgentPin>& all = options.pins.empty() ? AgentPins() : options.pins;
  std::vector<const AgentPin*> chosen;
  for (const std::string& tool : options.tools) {
    auto it =
        std::find_if(all.begin(), all.end(), [&](const AgentPin& pin) { return pin.tool == tool; });
    if (it == all.end()) {
      std::string names;
      for (const AgentPin& pin : all) names += (names.empty() ? "" : ", ") + pin.tool;
      return absl::InvalidArgumentError(fmt::format(
          "--tools: \"{}\" is not an agent of the image; expected some of {}", tool, names));
    }
    if (std::find(chosen.begin(), chosen.end(), &*it) == chosen.end()) chosen.push_back(&*it);
  }
  if (options.tools.empty()) {
    for (const AgentPin& pin : all) chosen.push_back(&pin);
  }
  if (chosen.empty()) return absl::InternalError("image/agents.txt pins no agent");
  // The pins are the agents' linux-x64 packages.
  if (struct utsname host{};
      options.pins.empty() && ::uname(&host) == 0 && std::string_view(host.machine) != "x86_64") {
    return absl::FailedPreconditionError(fmt::format(
        "the agents pinned in image/agents.txt are linux-x64 builds, and this node is {}",
        host.machine));
  }
  std::unique_ptr<probe::CommandRunner> system;
  probe::CommandRunner* commands = options.commands;
  if (commands == nullptr) {
    system = probe::MakeSystemCommandRunner();
    commands = system.get();
  }
  return Builder(options, *commands, std::move(chosen)).Build();
}

}  // namespace mojoup::sandbox
