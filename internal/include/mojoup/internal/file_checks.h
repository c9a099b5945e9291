// Checks on files a user names (a flag's value, a config value), each giving
// the one sentence to refuse with, or "" when the file will do.
#pragma once

#include <string>
#include <string_view>

namespace mojoup::internal {

// `path` must be a readable regular file. `what` names it in the sentence
// ("--upstream-ca", a config key); `expected` says what it should be.
std::string ReadableFileProblem(std::string_view what, const std::string& path,
                                std::string_view expected);

// A file that will be created or appended to: not a directory, and its
// directory exists.
std::string NewFileProblem(std::string_view what, const std::string& path);

}  // namespace mojoup::internal
