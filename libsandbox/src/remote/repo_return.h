// The way back from a sandbox on a remote gateway, which shares no
// filesystem with this node: what the session made of the repository comes
// back as two files, and only what they are checked to hold reaches the
// host's repository.
//
// Inside the sandbox, ReturnCommand writes a bundle of the refs and a
// binary patch of the work tree against HEAD. On the host, ImportReturn
// refuses both unless every ref is a branch or a tag and every path of the
// patch stays in the tree, out of .git and .mojoup/, with plain modes; then
// it fetches the refs into refs/mojoup/<session>/ and applies the patch to
// the work tree when it has not changed meanwhile. The repository's config,
// hooks and alternates never cross: a bundle carries refs and objects, and
// the patch only files of the work tree.
//
//   // At stop, in the sandbox (as the session's user):
//   exec(ReturnCommand("/home/u/proj", "/sandbox/.mojoup-return"));
//   // download both files, then on the host:
//   ReturnRequest request{.repo = "/home/u/proj", .session = id, .bundle = b, .patch = p,
//                         .baseline = baseline, .keep_dir = state + "/return"};
//   auto outcome = ImportReturn(request);
//   if (!outcome.ok()) say(outcome.status().message());  // refused, nothing applied
//   else say(outcome->summary);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mojoup::sandbox {

// The names of the two files under OUT.
inline constexpr char kReturnBundleName[] = "mojoup-return.bundle";
inline constexpr char kReturnPatchName[] = "mojoup-return.patch";

// The command (argv) an exec runs inside the sandbox, as the session's user,
// to write OUT/mojoup-return.bundle (`git bundle create --branches --tags
// HEAD`: of `--all`, what ImportReturn takes; no file when the repository
// has no commit) and OUT/mojoup-return.patch (the work
// tree against HEAD, built with a temporary index: `git add -A` into it,
// then `git diff --cached --binary --full-index HEAD`; untracked files in,
// ignored files out; the real index untouched). OUT must be under the
// sandbox's workspace (`sandbox download` refuses anything outside it) and
// outside the repository; it is made 0700 when absent. POSIX sh and git
// only: `/bin/sh -c SCRIPT sh REPO OUT`. Exits 0, or non-zero with one
// sentence on stderr.
//
// With `sent`, the id of the tree the repository was sent as (WorkTreeId
// on the host, WorkTreeIdCommand in the sandbox), the patch is of the work
// tree against that tree instead: what the session changed, whatever it
// committed, and nothing of what the host already had (its own uncommitted
// and untracked files went with the copy). It then applies to a host tree
// still at `sent` by construction.
std::vector<std::string> ReturnCommand(const std::string& repo, const std::string& out_dir,
                                       const std::string& sent = "");

// The command (argv) that prints, in the sandbox, the id WorkTreeId gives
// on the host for the same files, and leaves that tree in the sandbox's
// object store: `/bin/sh -c SCRIPT sh REPO`.
std::vector<std::string> WorkTreeIdCommand(const std::string& repo);

// The host work tree as git would record it, index untouched: the tree id
// a temporary index (seeded from HEAD) gets from `git add -A` (ignored
// files out).
absl::StatusOr<std::string> WorkTreeId(const std::string& repo);

struct ReturnRequest {
  std::string repo;     // the host repository's top
  std::string session;  // refs go to refs/mojoup/<session>/...
  std::string bundle;   // downloaded files, host paths ("" when none came)
  std::string patch;
  std::string baseline;  // WorkTreeId when the session started
  std::string keep_dir;  // where bundle and patch are kept when not applied
  std::uint64_t max_patch_bytes = 256ull << 20;
  std::uint64_t max_bundle_bytes = 4ull << 30;
};

struct ReturnOutcome {
  std::vector<std::string> refs;  // written, full names
  bool applied = false;           // a patch with changes is in the work tree
  std::string kept;               // where bundle and patch were kept, "" when not
  std::string summary;            // one sentence for the user
};

// Checks everything before it changes anything. Refused (InvalidArgument,
// one sentence naming the file and what was wrong; no ref written, nothing
// applied; the files kept in keep_dir): a bundle that fails `git bundle
// verify`, carries a ref outside refs/heads/ and refs/tags/ (or HEAD), or
// fails fsck; a patch over its cap, touching a path with a `.git`
// component (any case) or under `.mojoup/`, an absolute or `..` path, a
// gitlink, a symlink whose target leaves the tree, a mode other than
// 100644/100755/120000. Then fetches into refs/mojoup/<session>/heads/...,
// tags/...; never HEAD, config or hooks (transfer.fsckObjects on). Applies
// the patch only when the host's WorkTreeId still equals baseline and
// `git apply --check` passes; else keeps bundle and patch in keep_dir and
// says where. An empty patch applies nothing (applied stays false).
absl::StatusOr<ReturnOutcome> ImportReturn(const ReturnRequest& request);

}  // namespace mojoup::sandbox
