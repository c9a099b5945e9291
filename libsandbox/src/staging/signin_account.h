// Whether a credential file the agent changed inside the sandbox still holds
// the sign-in that was staged: the same shape, the same account, and changed
// only where a token refresh changes it. Write-back takes nothing else back
// to the host, so an agent cannot sign the user's own tool in to another
// account (whose conversations its owner could then read) or plant a
// credential of another kind.
//
//   SignInComparison same = CompareSignIn(SignInFormat::kCodexAuth, staged, refreshed);
//   if (same.verdict != SignInVerdict::kSame) KeepAside(same.why);
#pragma once

#include <string>
#include <string_view>

#include "mojoup/policy/tool_profiles.h"

namespace mojoup::sandbox {

using policy::SignInFormat;

enum class SignInVerdict {
  kSame,            // a refresh of the staged sign-in
  kNotSameAccount,  // shaped alike, but another account or a change no refresh makes
  kNotSignInShape,  // not JSON, or not shaped like the file staged
};

struct SignInComparison {
  SignInVerdict verdict = SignInVerdict::kSame;
  // One clause for people, naming the field: "tokens.account_id differs from
  // the staged file's". Empty when kSame. Names taken from the file are
  // shortened and stripped of control characters, as the CLI prints them.
  std::string why;
};

// Compares `refreshed` (the sandbox's copy) with `staged` (the file as it was
// staged, which the host still has). The rules, per format, are data in
// signin_account.cc: which fields name the account, which a refresh
// rewrites, and that every other field comes back as it was.
SignInComparison CompareSignIn(SignInFormat format, std::string_view staged,
                               std::string_view refreshed);

}  // namespace mojoup::sandbox
