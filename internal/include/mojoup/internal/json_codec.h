// One codec per JSON message: a message type's fields are described once,
// in wire order, and both the writer and the checked reader come from that
// description. No business code calls `Key("...")` or `HasMember`.
//
//   struct Options { unsigned rows = 0; };
//   struct Start {
//     std::string workdir;
//     std::optional<int> exit_code;
//     std::vector<std::string> command;
//     Options options;
//     Mode mode = Mode::kRun;
//   };
//   namespace json = mojoup::internal::json;
//   constexpr auto kOptions = json::Message<Options>(json::Field("rows", &Options::rows));
//   constexpr auto kMode = json::Enum<Mode>({{Mode::kRun, "run"}, {Mode::kShell, "shell"}});
//   constexpr auto kStart = json::Message<Start>(
//       json::Const("schema", "mojoup.start/v1"),        // written; checked on read
//       json::Field("workdir", &Start::workdir),          // required
//       json::Optional("exit_code", &Start::exit_code),   // omitted when nullopt
//       json::Optional("command", &Start::command),       // may be absent on read
//       json::Field("options", &Start::options, kOptions),  // a nested message
//       json::Field("mode", &Start::mode, kMode)).RefuseUnknown();
//
//   std::string bytes = json::ToJson(start, kStart);        // compact, declared order
//   std::string pretty = json::ToPrettyJson(start, kStart); // 2-space indent
//   json::Write(writer, start, kStart);                      // into a rapidjson writer
//   absl::StatusOr<Start> s = json::Parse<Start>(text, kStart, "the start request",
//                                                {.max_bytes = 1 << 16});
//   absl::Status read = json::Read(doc, start, kStart, &error);  // a parsed value
//
// Types: std::string, bool, every integer type (range checked on read),
// double, std::optional<X>, std::vector<X>, std::map<std::string, X>,
// std::vector<std::pair<std::string, X>> (an object in that order),
// nested messages, enums (json::Enum), values a function names
// (json::Named, write-only) and elements read leniently (json::OrNull). The third argument of a
// field is the codec of the innermost value (after optional, vector and map), so `Field("items",
// &T::items, kItem)` reads a std::vector<Item>. A codec of your own is a struct with `using
// value_type = X;`, `template <typename W> void Write(W&, const X&) const` and `bool Read(const
// rapidjson::Value&, X&, const json::Path&, json::Error&) const` (see json::Enum).
//
// Presence:
//   Field      required on read (error when absent); always written.
//   Optional   may be absent on read (the member keeps its value); written
//              unless it is an empty std::optional.
//   A std::optional member reads JSON null as nullopt; for other members
//   `.NullAsAbsent()` takes null as absence. `.WriteNull()` writes an empty
//   optional as null instead of leaving it out; `.OmitDefault()` leaves a
//   member out when it equals its type's default ("" , false, 0).
//   `.Lenient()` takes a value of the wrong type as absent (old readers
//   that tolerated anything).
//   `.MissingAsWrongType()` refuses an absent required member as one of
//   the wrong type, saying what it must be (readers whose sentence did).
//   `.RefuseUnknown()` on a message refuses members it does not describe.
//   `Const(...).Unchecked()` is written but not checked on read.
//   `Member(&A::b, &B::c)` in place of a member pointer reaches a member of
//   a member (a flat wire object over nested structs).
//
// Errors are one sentence naming the field's path, in json::Error and the
// returned status (InvalidArgument):
//   field "options.rows" must be an integer from 0 to 65535
//   field "command[2]" must be a string
//   field "workdir" is missing
//   field "extra" is not one this message has
// The reader recurses only along the described types, whose depth is
// fixed by the code; the parse itself (ParseBoundedJson) is bounded and
// iterative, so use it (or json::Parse) for untrusted input.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/internal/bounded_json.h"

namespace mojoup::internal::json {

// Where a value sits in the message, as a chain up to the root: built on
// the stack while reading, formatted only for an error.
struct Path {
  const Path* parent = nullptr;
  std::string_view name;  // a member's name or a map's key
  std::size_t index = 0;  // an array element's index, when `name` is empty
  bool is_index = false;
};

// "options.rows", "command[2]"; empty for the root.
std::string FormatPath(const Path& path);

// The same place as a JSON Pointer (RFC 6901): "/options/rows",
// "/command/2"; empty for the root.
std::string FormatPointer(const Path& path);

struct Error {
  enum class Kind { kWrongType, kMissing, kUnknown };
  Kind kind = Kind::kWrongType;
  std::string path;      // FormatPath of the field
  std::string pointer;   // FormatPointer of the field
  std::string expected;  // for kWrongType: "a string", "an integer from 0 to 65535"
  std::string message;   // the whole sentence

  // Fills the error; always returns false, for `return Fail(...)`.
  bool Set(Kind kind, const Path& path, std::string_view expected = {});
};

enum Flags : unsigned {
  kRequired = 1u << 0,
  kNullAsAbsent = 1u << 1,
  kWriteNull = 1u << 2,
  kOmitDefault = 1u << 3,
  kLenient = 1u << 4,
  kEmptyAsNull = 1u << 5,
  kMissingAsWrongType = 1u << 6,
};

namespace detail {

template <typename X>
struct IsOptional : std::false_type {};
template <typename X>
struct IsOptional<std::optional<X>> : std::true_type {};
template <typename X>
struct IsVector : std::false_type {};
template <typename X, typename A>
struct IsVector<std::vector<X, A>> : std::true_type {};
// An object whose members keep the order they were added in.
template <typename X>
struct IsOrderedObject : std::false_type {};
template <typename X, typename A>
struct IsOrderedObject<std::vector<std::pair<std::string, X>, A>> : std::true_type {};
template <typename X>
struct IsStringMap : std::false_type {};
template <typename X, typename C, typename A>
struct IsStringMap<std::map<std::string, X, C, A>> : std::true_type {};

// The codec for a type's values when a field names none.
struct ByType {
  using value_type = void;
};

template <typename Codec, typename X>
constexpr bool kHandles = std::is_same_v<typename Codec::value_type, X>;

template <typename X>
constexpr bool kInteger = std::is_integral_v<X> && !std::is_same_v<X, bool>;

template <typename X>
std::string Expected() {
  if constexpr (std::is_same_v<X, std::string>) return "a string";
  if constexpr (std::is_same_v<X, bool>) return "true or false";
  if constexpr (std::is_floating_point_v<X>) return "a number";
  if constexpr (kInteger<X>) {
    // Promoted, so that a char-sized type prints as a number.
    return "an integer from " + std::to_string(+std::numeric_limits<X>::min()) + " to " +
           std::to_string(+std::numeric_limits<X>::max());
  }
  if constexpr (IsStringMap<X>::value || IsOrderedObject<X>::value) return "an object";
  if constexpr (IsVector<X>::value) return "an array";
  return "a value of another type";
}

template <typename X>
bool ReadInteger(const rapidjson::Value& v, X& out) {
  if constexpr (std::is_signed_v<X>) {
    if (!v.IsInt64()) return false;
    const std::int64_t n = v.GetInt64();
    if constexpr (sizeof(X) < sizeof(std::int64_t)) {
      if (n < std::numeric_limits<X>::min() || n > std::numeric_limits<X>::max()) return false;
    }
    out = static_cast<X>(n);
  } else {
    if (!v.IsUint64()) return false;
    const std::uint64_t n = v.GetUint64();
    if constexpr (sizeof(X) < sizeof(std::uint64_t)) {
      if (n > std::numeric_limits<X>::max()) return false;
    }
    out = static_cast<X>(n);
  }
  return true;
}

// A scalar of a type the reader knows by itself; false when `v` is not one.
template <typename X>
bool ReadScalar(const rapidjson::Value& v, X& out) {
  if constexpr (std::is_same_v<X, std::string>) {
    if (!v.IsString()) return false;
    out.assign(v.GetString(), v.GetStringLength());
    return true;
  } else if constexpr (std::is_same_v<X, bool>) {
    if (!v.IsBool()) return false;
    out = v.GetBool();
    return true;
  } else if constexpr (std::is_floating_point_v<X>) {
    if (!v.IsNumber()) return false;
    out = static_cast<X>(v.GetDouble());
    return true;
  } else {
    static_assert(kInteger<X>, "json codec: a type with no codec; give the field one");
    return ReadInteger(v, out);
  }
}

template <typename W, typename X>
void WriteScalar(W& w, const X& x) {
  if constexpr (std::is_same_v<X, std::string>) {
    w.String(x.data(), static_cast<rapidjson::SizeType>(x.size()));
  } else if constexpr (std::is_same_v<X, bool>) {
    w.Bool(x);
  } else if constexpr (std::is_floating_point_v<X>) {
    w.Double(static_cast<double>(x));
  } else if constexpr (std::is_signed_v<X>) {
    static_assert(kInteger<X>, "json codec: a type with no codec; give the field one");
    w.Int64(static_cast<std::int64_t>(x));
  } else {
    static_assert(kInteger<X>, "json codec: a type with no codec; give the field one");
    w.Uint64(static_cast<std::uint64_t>(x));
  }
}

template <typename W, typename X, typename Codec>
void WriteValue(W& w, const X& x, const Codec& codec) {
  if constexpr (kHandles<Codec, X>) {
    codec.Write(w, x);
  } else if constexpr (IsOptional<X>::value) {
    if (x) {
      WriteValue(w, *x, codec);
    } else {
      w.Null();
    }
  } else if constexpr (IsStringMap<X>::value || IsOrderedObject<X>::value) {
    w.StartObject();
    for (const auto& [key, item] : x) {
      w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
      WriteValue(w, item, codec);
    }
    w.EndObject();
  } else if constexpr (IsVector<X>::value) {
    w.StartArray();
    for (const auto& item : x) WriteValue(w, item, codec);
    w.EndArray();
  } else {
    WriteScalar(w, x);
  }
}

template <typename X, typename Codec>
bool ReadValue(const rapidjson::Value& v, X& out, const Codec& codec, const Path& path,
               Error& error) {
  using Kind = Error::Kind;
  if constexpr (kHandles<Codec, X>) {
    return codec.Read(v, out, path, error);
  } else if constexpr (IsOptional<X>::value) {
    if (v.IsNull()) {
      out.reset();
      return true;
    }
    typename X::value_type value{};
    if (!ReadValue(v, value, codec, path, error)) return false;
    out = std::move(value);
    return true;
  } else if constexpr (IsStringMap<X>::value || IsOrderedObject<X>::value) {
    if (!v.IsObject()) return error.Set(Kind::kWrongType, path, "an object");
    X items;
    for (const auto& member : v.GetObject()) {
      std::string key(member.name.GetString(), member.name.GetStringLength());
      const Path at{&path, key};
      typename X::value_type::second_type item{};
      if (!ReadValue(member.value, item, codec, at, error)) return false;
      if constexpr (IsStringMap<X>::value) {
        items[key] = std::move(item);
      } else {
        items.emplace_back(std::move(key), std::move(item));
      }
    }
    out = std::move(items);
    return true;
  } else if constexpr (IsVector<X>::value) {
    if (!v.IsArray()) return error.Set(Kind::kWrongType, path, "an array");
    X items;
    items.reserve(v.Size());
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      const Path at{&path, {}, i, true};
      typename X::value_type item{};
      if (!ReadValue(v[i], item, codec, at, error)) return false;
      items.push_back(std::move(item));
    }
    out = std::move(items);
    return true;
  } else {
    if (!ReadScalar(v, out)) return error.Set(Kind::kWrongType, path, Expected<X>());
    return true;
  }
}

// Empty strings, arrays and objects, zero, false and an enum's zero value.
template <typename X>
bool IsDefault(const X& x) {
  if constexpr (requires { x.empty(); }) {
    return x.empty();
  } else if constexpr (std::is_arithmetic_v<X> || std::is_enum_v<X>) {
    return x == X{};
  } else {
    return false;
  }
}

// How a field reaches its member: a member pointer, or a chain of them.
template <typename T, typename X>
struct MemberOf {
  using Owner = T;
  using Type = X;
  X T::*member;
  constexpr const X& Get(const T& t) const { return t.*member; }
  constexpr X& Get(T& t) const { return t.*member; }
};

template <typename Outer, typename Inner>
struct Chain {
  using Owner = typename Outer::Owner;
  using Type = typename Inner::Type;
  Outer outer;
  Inner inner;
  constexpr const Type& Get(const Owner& t) const { return inner.Get(outer.Get(t)); }
  constexpr Type& Get(Owner& t) const { return inner.Get(outer.Get(t)); }
};

template <typename T, typename X>
constexpr MemberOf<T, X> Access(X T::*member) {
  return {member};
}
template <typename T, typename X>
constexpr MemberOf<T, X> Access(MemberOf<T, X> member) {
  return member;
}
template <typename Outer, typename Inner>
constexpr Chain<Outer, Inner> Access(Chain<Outer, Inner> chain) {
  return chain;
}

}  // namespace detail

// A member of a member: Member(&Start::options, &Options::rows).
template <typename T, typename X, typename... More>
constexpr auto Member(X T::*first, More... rest) {
  if constexpr (sizeof...(rest) == 0) {
    return detail::MemberOf<T, X>{first};
  } else {
    auto inner = Member(rest...);
    return detail::Chain<detail::MemberOf<T, X>, decltype(inner)>{{first}, inner};
  }
}

template <typename Get, typename Codec>
class FieldCodec {
 public:
  using Owner = typename Get::Owner;
  using Type = typename Get::Type;

  constexpr FieldCodec(const char* name, Get get, Codec codec, unsigned flags)
      : name_(name), get_(get), codec_(codec), flags_(flags) {}

  constexpr FieldCodec NullAsAbsent() const { return With(kNullAsAbsent); }
  constexpr FieldCodec WriteNull() const { return With(kWriteNull); }
  constexpr FieldCodec OmitDefault() const { return With(kOmitDefault); }
  constexpr FieldCodec Lenient() const { return With(kLenient); }
  constexpr FieldCodec EmptyAsNull() const { return With(kEmptyAsNull | kNullAsAbsent); }
  constexpr FieldCodec MissingAsWrongType() const { return With(kMissingAsWrongType); }

  constexpr std::string_view name() const { return name_; }

  template <typename W>
  void Write(W& w, const Owner& owner) const {
    const Type& value = get_.Get(owner);
    if constexpr (detail::IsOptional<Type>::value) {
      if (!value && (flags_ & kWriteNull) == 0) return;
    }
    if ((flags_ & kOmitDefault) != 0 && detail::IsDefault(value)) return;
    w.Key(name_, static_cast<rapidjson::SizeType>(name().size()));
    if ((flags_ & kEmptyAsNull) != 0 && detail::IsDefault(value)) {
      w.Null();
    } else {
      detail::WriteValue(w, value, codec_);
    }
  }

  bool Read(const rapidjson::Value& object, Owner& owner, const Path& parent, Error& error) const {
    const Path path{&parent, name_};
    const auto found = object.FindMember(name_);
    const bool absent =
        found == object.MemberEnd() || (found->value.IsNull() && (flags_ & kNullAsAbsent) != 0);
    if (absent) {
      if ((flags_ & kRequired) == 0) return true;
      if ((flags_ & kMissingAsWrongType) != 0) {
        // What a null in its place is refused with says what was expected.
        static const rapidjson::Value kNull;
        Type ignored{};
        if (!detail::ReadValue(kNull, ignored, codec_, path, error)) return false;
      }
      return error.Set(Error::Kind::kMissing, path);
    }
    if ((flags_ & kLenient) == 0)
      return detail::ReadValue(found->value, get_.Get(owner), codec_, path, error);
    Type value = get_.Get(owner);
    Error ignored;
    if (detail::ReadValue(found->value, value, codec_, path, ignored)) {
      get_.Get(owner) = std::move(value);
    }
    return true;
  }

 private:
  constexpr FieldCodec With(unsigned flag) const {
    return FieldCodec(name_, get_, codec_, flags_ | flag);
  }

  const char* name_;
  Get get_;
  Codec codec_;
  unsigned flags_;
};

// A required member: error when absent on read, always written.
template <typename Member, typename Codec = detail::ByType>
constexpr auto Field(const char* name, Member member, Codec codec = {}) {
  auto get = detail::Access(member);
  return FieldCodec<decltype(get), Codec>(name, get, codec, kRequired);
}

// A member that may be absent: on read it then keeps its value; on write
// it is left out when it is an empty std::optional.
template <typename Member, typename Codec = detail::ByType>
constexpr auto Optional(const char* name, Member member, Codec codec = {}) {
  auto get = detail::Access(member);
  return FieldCodec<decltype(get), Codec>(name, get, codec, 0);
}

// A string member every message carries with the same value, such as
// "schema": written as it is, and on read refused unless equal.
class Const {
 public:
  constexpr Const(const char* name, const char* value, bool checked = true)
      : name_(name), value_(value), checked_(checked) {}
  constexpr std::string_view name() const { return name_; }

  // Written, but on read taken whatever it is, or absent (readers that
  // never looked at it).
  constexpr Const Unchecked() const { return Const(name_, value_, false); }

  template <typename W, typename Owner>
  void Write(W& w, const Owner& /*owner*/) const {
    w.Key(name_, static_cast<rapidjson::SizeType>(name().size()));
    const std::string_view value = value_;
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  }
  template <typename Owner>
  bool Read(const rapidjson::Value& object, Owner& /*owner*/, const Path& parent,
            Error& error) const {
    return !checked_ || Check(object, parent, error);
  }

 private:
  bool Check(const rapidjson::Value& object, const Path& parent, Error& error) const;

  const char* name_;
  const char* value_;
  bool checked_;
};

// A JSON object whose members are `Fields`, in the order written.
template <typename T, typename... Fields>
class MessageCodec {
 public:
  using value_type = T;

  constexpr explicit MessageCodec(std::tuple<Fields...> fields, bool refuse_unknown = false)
      : fields_(fields), refuse_unknown_(refuse_unknown) {}

  // Refuses, on read, a member none of the fields names.
  constexpr MessageCodec RefuseUnknown() const { return MessageCodec(fields_, true); }

  template <typename W>
  void Write(W& w, const T& value) const {
    w.StartObject();
    std::apply([&](const auto&... field) { (field.Write(w, value), ...); }, fields_);
    w.EndObject();
  }

  bool Read(const rapidjson::Value& v, T& out, const Path& path, Error& error) const {
    if (!v.IsObject()) return error.Set(Error::Kind::kWrongType, path, "an object");
    if (refuse_unknown_) {
      for (const auto& member : v.GetObject()) {
        const std::string_view name(member.name.GetString(), member.name.GetStringLength());
        if (!Describes(name)) return error.Set(Error::Kind::kUnknown, Path{&path, name});
      }
    }
    return std::apply(
        [&](const auto&... field) { return (field.Read(v, out, path, error) && ...); }, fields_);
  }

 private:
  bool Describes(std::string_view name) const {
    return std::apply([&](const auto&... field) { return ((field.name() == name) || ...); },
                      fields_);
  }

  std::tuple<Fields...> fields_;
  bool refuse_unknown_;
};

template <typename T, typename... Fields>
constexpr MessageCodec<T, Fields...> Message(Fields... fields) {
  return MessageCodec<T, Fields...>(std::tuple<Fields...>(fields...));
}

// An enum written as one of a table's strings.
template <typename E, std::size_t N>
class EnumCodec {
 public:
  using value_type = E;

  constexpr explicit EnumCodec(const std::pair<E, const char*> (&names)[N]) {
    for (std::size_t i = 0; i < N; ++i) names_[i] = names[i];
  }

  // The table must name every value written: one it lacks is written as "".
  template <typename W>
  void Write(W& w, E value) const {
    const std::string_view name = Name(value);
    w.String(name.data(), static_cast<rapidjson::SizeType>(name.size()));
  }

  bool Read(const rapidjson::Value& v, E& out, const Path& path, Error& error) const {
    if (v.IsString()) {
      const std::string_view text(v.GetString(), v.GetStringLength());
      for (const auto& [value, name] : names_) {
        if (text == name) {
          out = value;
          return true;
        }
      }
    }
    std::string expected = "one of";
    for (std::size_t i = 0; i < N; ++i) {
      expected += (i == 0 ? " \"" : ", \"") + std::string(names_[i].second) + "\"";
    }
    return error.Set(Error::Kind::kWrongType, path, expected);
  }

  constexpr std::string_view Name(E value) const {
    for (const auto& [known, name] : names_) {
      if (known == value) return name;
    }
    return {};
  }

 private:
  std::array<std::pair<E, const char*>, N> names_{};
};

// A value written as the string a function names it by, for a type whose
// names live elsewhere (a public `std::string_view LevelName(Level)`).
// Write-only: a message that uses it cannot be read.
template <typename X>
class NamedCodec {
 public:
  using value_type = X;
  using NameOf = std::string_view (*)(X);

  constexpr explicit NamedCodec(NameOf name_of) : name_of_(name_of) {}

  template <typename W>
  void Write(W& w, const X& value) const {
    const std::string_view name = name_of_(value);
    w.String(name.data(), static_cast<rapidjson::SizeType>(name.size()));
  }

 private:
  NameOf name_of_;
};

template <typename X>
constexpr NamedCodec<X> Named(std::string_view (*name_of)(X)) {
  return NamedCodec<X>(name_of);
}

// An element of an answer read one by one: a value `codec` cannot read is
// taken as nullopt instead of failing the whole message, for readers that
// skip what they do not understand (`std::vector<std::optional<X>>` with
// `OrNull<X>()` as its field's codec). An empty optional is written as null.
template <typename X, typename Codec = detail::ByType>
class OrNullCodec {
 public:
  using value_type = std::optional<X>;

  constexpr explicit OrNullCodec(Codec codec) : codec_(codec) {}

  template <typename W>
  void Write(W& w, const value_type& value) const {
    if (value) {
      detail::WriteValue(w, *value, codec_);
    } else {
      w.Null();
    }
  }

  bool Read(const rapidjson::Value& v, value_type& out, const Path& path, Error& /*error*/) const {
    X value{};
    Error ignored;
    if (detail::ReadValue(v, value, codec_, path, ignored)) {
      out = std::move(value);
    } else {
      out.reset();
    }
    return true;
  }

 private:
  Codec codec_;
};

template <typename X, typename Codec = detail::ByType>
constexpr OrNullCodec<X, Codec> OrNull(Codec codec = {}) {
  return OrNullCodec<X, Codec>(codec);
}

template <typename E, std::size_t N>
constexpr EnumCodec<E, N> Enum(const std::pair<E, const char*> (&names)[N]) {
  return EnumCodec<E, N>(names);
}

// Writes `value` into a rapidjson Writer or PrettyWriter.
template <typename W, typename T, typename Codec>
void Write(W& w, const T& value, const Codec& codec) {
  detail::WriteValue(w, value, codec);
}

// Compact JSON, as rapidjson::Writer writes it.
template <typename T, typename Codec>
std::string ToJson(const T& value, const Codec& codec) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  Write(w, value, codec);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// Indented JSON, as rapidjson::PrettyWriter writes it with `indent` spaces.
template <typename T, typename Codec>
std::string ToPrettyJson(const T& value, const Codec& codec, unsigned indent = 2) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.SetIndent(' ', indent);
  Write(w, value, codec);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// Reads a parsed value into `out`, every field checked. On error `out` may
// be partly filled; the status is InvalidArgument with Error::message, and
// `*error`, when given, says which field and what was wrong.
template <typename T, typename Codec>
absl::Status Read(const rapidjson::Value& value, T& out, const Codec& codec,
                  Error* error = nullptr) {
  Error local;
  Error& e = error != nullptr ? *error : local;
  if (detail::ReadValue(value, out, codec, Path{}, e)) return absl::OkStatus();
  return absl::InvalidArgumentError(e.message);
}

// Parses untrusted `text` with ParseBoundedJson and reads it. A parse
// error is ParseBoundedJson's; a field's is "<what>: <Error::message>".
template <typename T, typename Codec>
absl::StatusOr<T> Parse(std::string_view text, const Codec& codec, std::string_view what,
                        JsonBounds bounds = {}, Error* error = nullptr) {
  rapidjson::Document doc;
  if (absl::Status parsed = ParseBoundedJson(text, doc, what, bounds); !parsed.ok()) {
    return parsed;
  }
  T out{};
  if (absl::Status read = Read(doc, out, codec, error); !read.ok()) {
    return absl::InvalidArgumentError(std::string(what) + ": " + std::string(read.message()));
  }
  return out;
}

}  // namespace mojoup::internal::json
