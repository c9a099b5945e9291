// The agent image as JSON: described once, for `image build --json` and
// for the status line that embeds it.
#pragma once

#include "mojoup/internal/json_codec.h"
#include "mojoup/sandbox/agent_image.h"

namespace mojoup::sandbox {

inline constexpr auto kAgentImageJson = internal::json::Message<AgentImage>(
    internal::json::Field("reference", &AgentImage::reference),
    internal::json::Field("id", &AgentImage::id), internal::json::Field("base", &AgentImage::base),
    internal::json::Field("agents", &AgentImage::agents),
    internal::json::Field("size_bytes", &AgentImage::size_bytes));

}  // namespace mojoup::sandbox
