// Codex's config.toml in a session's staging home: Codex takes its base URL
// from that file, not from the environment, so the file sends its API calls
// through the session's credential proxy.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "mojoup/sandbox/backend.h"

namespace mojoup::sandbox {

// Writes .codex/config.toml, with openai_base_url under `proxy`, into the
// mount of `spec` that is the sandbox's home (the staging home), unless the
// home has one already or there is no such mount.
absl::Status WriteCodexConfig(const SandboxSpec& spec, const std::string& proxy);

}  // namespace mojoup::sandbox
