// The node's setup wizard for the sandbox role, as `mojoup-node setup` asks
// it on a terminal: the verdict first, then one question per setting, each
// asked again until the answer is valid; then the agent image and the
// service's systemd unit, offered when the role is on. Another program that
// sets a node up (a console, an installer) asks the same questions in the
// same order through its own streams.
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "mojoup/sandbox/node.h"

namespace mojoup {

// Config keys and the values the wizard chose (nullopt: unset).
using SetupChanges = std::map<std::string, std::optional<std::string>>;

// Asks the settings' questions on `out`, reading answers from `in`: the
// changes to write, or nullopt when `in` ends before the last answer.
std::optional<SetupChanges> AskSetupQuestions(const Node& node, std::istream& in,
                                              std::ostream& out);

// Builds the default agent image, each step on a line of its own on `out`.
absl::Status BuildAgentImageShown(const Node& node, std::ostream& out);

// `setup --build-image`: builds the image sessions use unless it is there or
// is not the agent image this library builds (said on `out`).
absl::Status BuildImageIfMissing(const Node& node, std::ostream& out);

// The wizard's offers when the role is on: build the missing default image
// (yes unless the answer is no), then run the service under systemd (user,
// system or no).
absl::Status OfferImage(const Node& node, std::istream& in, std::ostream& out);
absl::Status OfferService(const Node& node, std::istream& in, std::ostream& out);

// Enables the service's systemd unit of `kind` (user, system) and says so on
// `out`; nothing for "no".
absl::Status EnableServiceShown(const std::string& kind, std::ostream& out);

}  // namespace mojoup
