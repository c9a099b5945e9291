// The one sentence for a sandbox image the node's Docker does not hold.
#pragma once

#include <string>
#include <string_view>

namespace mojoup::sandbox {

// How to get `reference`: the default agent image is built on the node
// (`mojoup-node image build`); any other is the operator's to build or load.
// `problem` is what Docker said, kept for a custom image unless it only says
// "No such image".
std::string MissingImageSentence(const std::string& reference, std::string_view problem);

}  // namespace mojoup::sandbox
