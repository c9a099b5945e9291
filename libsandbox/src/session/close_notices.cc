#include "session/close_notices.h"

#include "fmt/format.h"

namespace mojoup::sandbox {

std::vector<CloseNotice> WriteBackNotices(const WriteBackReport& report) {
  std::vector<CloseNotice> notices;
  for (const std::string& path : report.written) {
    notices.push_back(
        {"sign-in",
         fmt::format("the session refreshed its sign-in; {} has the provider's new tokens", path)});
  }
  for (const std::string& notice : report.notices) notices.push_back({"sign-in", notice});
  for (const KeptAside& kept : report.kept_aside) {
    notices.push_back(
        {"quarantine", fmt::format("{} was not written back: {}; the sandbox's copy is kept at {}",
                                   kept.host_path, kept.why, kept.aside_path)});
  }
  for (const std::string& error : report.errors) notices.push_back({"sign-in", error});
  return notices;
}

std::vector<CloseNotice> CloseNotices(const CloseReport& report) {
  std::vector<CloseNotice> notices = WriteBackNotices(report.sign_in);
  for (const std::string& message : report.notices) notices.push_back({"quarantine", message});
  for (const std::string& message : report.errors) notices.push_back({"cleanup", message});
  return notices;
}

}  // namespace mojoup::sandbox
