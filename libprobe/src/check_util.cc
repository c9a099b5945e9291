#include "check_util.h"

#include <cstring>

#include "fmt/format.h"

namespace mojoup::probe::internal {
namespace {

std::string Capitalized(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 32);
  return text;
}

Check Make(std::string_view id, Status status, std::string summary, std::string detail) {
  Check check;
  check.id = std::string(id);
  check.status = status;
  check.summary = Capitalized(std::move(summary)) + ".";
  check.detail = std::move(detail);
  return check;
}

}  // namespace

Check FailedCheck(std::string_view id, std::string cause, std::string fix, std::string detail) {
  Check check = Make(id, Status::kFail, cause, std::move(detail));
  check.remedy = Capitalized(fix) + ".";
  check.reason = fmt::format("{}; {}.", Capitalized(std::move(cause)), fix);
  return check;
}

Check Warn(std::string_view id, std::string summary, std::string fix, std::string detail) {
  Check check = Make(id, Status::kWarn, std::move(summary), std::move(detail));
  check.remedy = Capitalized(std::move(fix)) + ".";
  return check;
}

Check Pass(std::string_view id, std::string summary, std::string detail) {
  return Make(id, Status::kPass, std::move(summary), std::move(detail));
}

Check Skip(std::string_view id, std::string summary, bool required) {
  Check check = Make(id, Status::kSkip, std::move(summary), {});
  check.required = required;
  return check;
}

std::string ErrnoName(int error) {
#if defined(__GLIBC__)
  if (const char* name = strerrorname_np(error)) return fmt::format("{} ({})", name, error);
#endif
  return fmt::format("errno {}", error);
}

std::string Seconds(std::chrono::milliseconds timeout) {
  return fmt::format("{:g} s", static_cast<double>(timeout.count()) / 1000.0);
}

std::string FirstLine(std::string_view text) {
  auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return {};
  text.remove_prefix(start);
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  return std::string(text);
}

}  // namespace mojoup::probe::internal
