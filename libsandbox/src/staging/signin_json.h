// The sign-in staging as a member of a session record, for the record's
// codec (mojoup/internal/json_codec.h): written as SignInStagingToJson
// writes it, and read with SignInStagingFromJson's checks. A staging that
// is not one is refused with the sentence SignInStagingFromJson gives, in
// Error::message, its place named from the staging's own top.
//
//   constexpr auto kRecord = json::Message<SessionRecord>(
//       json::Optional("sign_in", &SessionRecord::sign_in, SignInStagingCodec{}));
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <optional>

#include "mojoup/internal/json_codec.h"
#include "mojoup/sandbox/signin.h"

namespace mojoup::sandbox {

struct SignInStagingCodec {
  using value_type = std::optional<SignInStaging>;

  // `staging` holds a value: an empty one is left out by its field.
  void Write(rapidjson::Writer<rapidjson::StringBuffer>& w, const value_type& staging) const;
  bool Read(const rapidjson::Value& v, value_type& out, const internal::json::Path& path,
            internal::json::Error& error) const;
};

}  // namespace mojoup::sandbox
