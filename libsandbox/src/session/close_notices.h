// What ending a session did on the side, one sentence each with its kind:
// what the node tells the user, and what the session's audit records.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mojoup/sandbox/session.h"

namespace mojoup::sandbox {

struct CloseNotice {
  std::string_view kind;  // "sign-in", "quarantine" or "cleanup"
  std::string message;
};

// A sign-in written back ("sign-in"), or kept aside ("quarantine"), and the
// write-back's own notices and errors ("sign-in").
std::vector<CloseNotice> WriteBackNotices(const WriteBackReport& report);

// WriteBackNotices, then repositories the session planted, moved aside
// ("quarantine"), then what could not be removed ("cleanup").
std::vector<CloseNotice> CloseNotices(const CloseReport& report);

}  // namespace mojoup::sandbox
