// Building Check values with consistent wording.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "mojoup/probe/report.h"

namespace mojoup::probe::internal {

// `cause` and `fix` are sentence fragments without a final period; `cause`
// starts with a capital letter, `fix` with a lowercase imperative. The check's
// summary is the cause, its remedy the fix, and its reason both in one
// sentence: "<cause>; <fix>."
Check FailedCheck(std::string_view id, std::string cause, std::string fix, std::string detail = {});
Check Warn(std::string_view id, std::string summary, std::string fix, std::string detail = {});
Check Pass(std::string_view id, std::string summary, std::string detail = {});
Check Skip(std::string_view id, std::string summary, bool required);

// "EBUSY (16)" or "errno 4242".
std::string ErrnoName(int error);
// "2 s", "0.5 s".
std::string Seconds(std::chrono::milliseconds timeout);
// The first line of `text`, trimmed; "" when there is none.
std::string FirstLine(std::string_view text);

}  // namespace mojoup::probe::internal
