#include "mojoup/sandbox/agent_image.h"

#include "mojoup/version.h"

namespace mojoup::sandbox {

std::string DefaultAgentImage() { return "mojoup/agents:" + std::string(kVersion); }

}  // namespace mojoup::sandbox
