// Where a user's things are by default: their home and the node's state
// directory. The sandbox library's public sandbox::UserHome() and
// sandbox::DefaultStateDir() are these; the service's client finds the
// user's own service from them without the sandbox library.
#pragma once

#include <string>

namespace mojoup::internal {

// $HOME when absolute, else the account's home, else "/".
std::string UserHome();

// $MOJOUP_STATE_DIR when absolute; for root /var/lib/mojoup; else
// $XDG_STATE_HOME/mojoup when absolute, else ~/.local/state/mojoup.
std::string DefaultStateDir();

}  // namespace mojoup::internal
