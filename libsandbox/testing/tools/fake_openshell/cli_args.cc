// Arguments, the way clap reads them.

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

std::string Placeholder(std::string_view name) {
  std::string out;
  for (char c : name) {
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// Returns the exit code of a grammar error, or nothing when `args` is filled.
std::optional<int> Parse(const std::vector<std::string>& argv, std::size_t first,
                         const Grammar& grammar, const Version& version, Args& args) {
  auto known = [&](auto match) -> const FlagSpec* {
    for (const FlagSpec& spec : grammar.flags) {
      if (match(spec) && version >= spec.since) return &spec;
    }
    return nullptr;
  };
  bool in_command = false;
  for (std::size_t i = first; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (in_command) {
      args.command.push_back(arg);
      continue;
    }
    if (arg == "--") {
      in_command = true;
      continue;
    }
    const FlagSpec* spec = nullptr;
    std::string shown = arg;
    std::string value;
    bool inline_value = false;
    if (arg.size() > 2 && arg.starts_with("--")) {
      std::string name = arg.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        inline_value = true;
        shown = "--" + name;
      }
      spec = known([&](const FlagSpec& s) { return s.name == name; });
    } else if (arg.size() > 1 && arg[0] == '-') {
      spec = known([&](const FlagSpec& s) { return s.short_name == arg[1]; });
      shown = arg.substr(0, 2);
      if (arg.size() > 2) {
        value = arg.substr(arg[2] == '=' ? 3 : 2);
        inline_value = true;
      }
    } else {
      if (args.positionals.size() < grammar.max_positionals) {
        args.positionals.push_back(arg);
      } else if (grammar.command_at_first_positional) {
        in_command = true;
        args.command.push_back(arg);
      } else {
        return ClapError(fmt::format("unexpected argument '{}' found", arg), grammar.usage);
      }
      continue;
    }
    if (spec == nullptr) {
      return ClapError(fmt::format("unexpected argument '{}' found", shown), grammar.usage,
                       fmt::format("to pass '{}' as a value, use '-- {}'", shown, shown));
    }
    if (!spec->modelled) return NotModelled(fmt::format("`--{}`", spec->name));
    if (spec->takes_value) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) {
          return ClapError(fmt::format("a value is required for '--{} <{}>' but none was supplied",
                                       spec->name, Placeholder(spec->name)),
                           grammar.usage);
        }
        value = argv[++i];
      }
    } else if (inline_value) {
      return ClapError(fmt::format("unexpected value '{}' for '--{}' found; no more were expected",
                                   value, spec->name),
                       grammar.usage);
    }
    args.values[std::string(spec->name)].push_back(value);
  }
  return std::nullopt;
}

// -o / --output: table (the default) or json.
std::optional<int> OutputFormat(const Args& args, std::string_view usage, std::string& format) {
  format = args.Has("output") ? args.Last("output") : "table";
  if (format == "table" || format == "json") return std::nullopt;
  if (format == "yaml") return NotModelled("`--output yaml`");
  return ClapError(fmt::format("invalid value '{}' for '--output <OUTPUT>'\n  [possible values: "
                               "table, json, yaml]",
                               format),
                   usage);
}

}  // namespace mojoup::fake_openshell
