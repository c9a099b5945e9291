// BindMount: a host path at a path inside a sandbox. The repository guard
// produces them and every runtime (sandbox::Backend) takes them.
#pragma once

#include <string>

namespace mojoup::sandbox {

struct BindMount {
  std::string source;  // host path
  std::string target;  // path inside the sandbox
  bool read_only = false;
};

}  // namespace mojoup::sandbox
