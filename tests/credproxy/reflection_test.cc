// The credential proxy against an upstream that hands requests back: the
// scrubber, the inflater and the request and response heads on their own,
// then the proxy in process between a TLS client and the reflecting
// EchoServer. Whatever the upstream reflects, the client never holds a real
// key; what the proxy refuses never reaches the upstream.
#include <arpa/inet.h>
#include <zlib.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <functional>

#include "../support/connect_tunnel.h"
#include "../support/echo_server.h"
#include "../support/proxy_inputs.h"
#include "../support/test_support.h"
#include "body_filter.h"
#include "fmt/format.h"
#include "inflater.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/credproxy/session_ca.h"
#include "request_head.h"
#include "response_head.h"
#include "scrubber.h"

using namespace mojoup::credproxy;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::test::TempDir;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Pairs = std::vector<Scrubber::Pair>;

using mojoup::test::kReal;
using mojoup::test::Rules;

namespace {

std::string DecodeBase64(const std::string& text) {
  std::string out(beast::detail::base64::decoded_size(text.size()) + 3, '\0');
  out.resize(beast::detail::base64::decode(out.data(), text.data(), text.size()).first);
  return out;
}

// `text` fed to `scrubber` in pieces of `size` bytes.
std::string InPieces(Scrubber& scrubber, const std::string& text, std::size_t size) {
  std::string out;
  for (std::size_t at = 0; at < text.size(); at += size) {
    out += scrubber.Feed(std::string_view(text).substr(at, size));
  }
  return out + scrubber.Finish();
}

const std::string kOtherReal = "ghp_R3alT0kenF0rOtherH0stOnly1234567890";

}  // namespace

// --- the parts ---------------------------------------------------------------

TEST_CASE("the scrubber replaces texts split anywhere across pieces", "[scrubber]") {
  const std::string real = "sk-real-0123456789abcdef";
  const std::string shown = "sk-real-9876543210zyxwvu";
  const std::string text = "a" + real + "b" + real + real + "sk-re" + "\n" + real;
  const std::string expected = "a" + shown + "b" + shown + shown + "sk-re" + "\n" + shown;
  for (std::size_t size = 1; size <= text.size(); ++size) {
    INFO(size);
    Scrubber scrubber(Pairs{{real, shown}});
    REQUIRE(InPieces(scrubber, text, size) == expected);
    REQUIRE(scrubber.matched());
  }
  // Pairs of unequal length would change a body's length: ignored.
  Scrubber uneven(Pairs{{"abcdef", "xyz"}});
  REQUIRE(uneven.empty());
  REQUIRE(uneven.Scrub("abcdef") == "abcdef");
}

TEST_CASE("the scrubber streams what Scrub gives whole, however the stream is cut",
          "[scrubber]") {
  // Every form of a key, and of a second one, in long clean stretches and
  // close together, cut at uneven places: pieces with nothing to replace
  // pass by a shorter path than those with something, and both must agree.
  const Pairs forms = [] {
    Pairs all = ReflectedForms(kReal, std::string(kReal.size(), 'S'));
    for (auto& form : ReflectedForms(kOtherReal, std::string(kOtherReal.size(), 'O'))) {
      all.push_back(form);
    }
    return all;
  }();
  std::string text;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    text += std::string(1000 + 37 * i, 'a' + static_cast<char>(i % 26));
    text += forms[i].from;
    text += forms[(i + 1) % forms.size()].from.substr(0, 5);
  }
  const std::string whole = Scrubber(forms).Scrub(text);
  REQUIRE(whole != text);
  for (std::size_t seed = 1; seed <= 40; ++seed) {
    INFO(seed);
    Scrubber scrubber(forms);
    std::string out;
    std::size_t at = 0;
    for (std::size_t cut = seed; at < text.size(); cut = (cut * 7919 + 13) % 4099) {
      const std::size_t size = 1 + cut % 3000;
      out += scrubber.Feed(std::string_view(text).substr(at, size));
      at += size;
    }
    out += scrubber.Finish();
    REQUIRE(out == whole);
  }
}

TEST_CASE("the scrubber holds back only what could give a key away", "[scrubber]") {
  Scrubber scrubber(Pairs{{"sk-real-0123456789", "sk-real-9876543210"}});
  // An event ending in text no key begins with goes out at once.
  REQUIRE(scrubber.Feed("data: {\"x\": 1}\n\n") == "data: {\"x\": 1}\n\n");
  // The start a key shares with its stand-in goes out too...
  REQUIRE(scrubber.Feed("data: sk-re") == "data: sk-re");
  // ...what follows waits until it cannot be the key...
  REQUIRE(scrubber.Feed("al-0123") == "al-");
  REQUIRE(scrubber.Feed("X") == "0123X");
  REQUIRE_FALSE(scrubber.matched());
  REQUIRE(scrubber.Feed("sk-real-01234") == "sk-real-");
  REQUIRE(scrubber.Finish() == "01234");
  // ...or goes out as the stand-in's once it is.
  Scrubber completed(Pairs{{"sk-real-0123456789", "sk-real-9876543210"}});
  REQUIRE(completed.Feed("sk-real-0") == "sk-real-");
  REQUIRE(completed.Feed("123456789!") == "9876543210!");
  REQUIRE(completed.matched());
  // A watch sends nothing of a text, not even the start.
  Scrubber watch(Pairs{{"sk-real-0123456789", "sk-real-0123456789"}}, Scrubber::Hold::kWholeTexts);
  REQUIRE(watch.Feed("data: sk-re") == "data: ");
  REQUIRE(watch.Feed("al-0123456789") == "sk-real-0123456789");
  REQUIRE(watch.matched());
}

TEST_CASE("the scrubber replaces overlapping occurrences from the bytes as they came",
          "[scrubber]") {
  // A key that begins as it ends: "abXab" twice, overlapping in "ab".
  Scrubber scrubber(Pairs{{"abXab", "cdYcd"}});
  const std::string out = InPieces(scrubber, "abXabXab", 3);
  REQUIRE(out.find("abXab") == std::string::npos);
  REQUIRE(out.size() == 8);
}

TEST_CASE("reflections cover a real value and its base64 at any offset", "[vault][scrubber]") {
  Vault vault;
  auto stand_in = vault.Add("ACME_KEY", kReal, {"api.acme.test"});
  REQUIRE(stand_in.ok());
  std::vector<Scrubber::Pair> pairs;
  for (auto& reflection : vault.Reflections()) {
    REQUIRE(reflection.real.size() == reflection.shown.size());
    pairs.push_back({reflection.real, reflection.shown});
  }
  REQUIRE(pairs.size() >= 4);
  // The key base64-encoded after 0..5 bytes of other text, in both alphabets:
  // once scrubbed and decoded, no more than its edges' bits are left.
  for (std::size_t lead = 0; lead < 6; ++lead) {
    for (bool url_safe : {false, true}) {
      INFO(lead << " " << url_safe);
      std::string encoded = mojoup::test::Base64(std::string(lead, 'u') + ":" + kReal + "\n");
      if (url_safe) {
        for (char& c : encoded) c = c == '+' ? '-' : c == '/' ? '_' : c;
      }
      Scrubber scrubber(pairs);
      std::string scrubbed = InPieces(scrubber, encoded, 7);
      REQUIRE(scrubbed.size() == encoded.size());
      if (url_safe) {
        for (char& c : scrubbed) c = c == '-' ? '+' : c == '_' ? '/' : c;
      }
      const std::string decoded = DecodeBase64(scrubbed);
      // The random part of the key (after its 13-character prefix) is gone.
      REQUIRE(decoded.find(kReal.substr(13, 20)) == std::string::npos);
      REQUIRE(decoded.find(kReal.substr(kReal.size() - 20, 18)) == std::string::npos);
    }
  }
}

namespace {

// Every way an agent could have an upstream write the key and turn it back
// into the key: each encoded from scratch, not from the scrubber's own forms.
std::string Hexed(const std::string& text, bool upper) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += upper ? fmt::format("{:02X}", byte) : fmt::format("{:02x}", byte);
  }
  return out;
}
std::string Percented(const std::string& text, bool every) {
  std::string out;
  for (char c : text) {
    if (every || !std::isalnum(static_cast<unsigned char>(c))) {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}
std::string JsonEscaped(const std::string& text) {
  std::string out;
  for (char c : text) out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
  return out;
}
std::string Recased(std::string text, int how) {
  for (char& c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (how == 0) c = static_cast<char>(std::toupper(byte));
    if (how == 1) c = static_cast<char>(std::tolower(byte));
    if (how == 2) c = static_cast<char>(std::isupper(byte) ? std::tolower(byte) : std::toupper(byte));
  }
  return text;
}
std::string Base64Of(const std::string& text, bool url, bool padded) {
  std::string out(beast::detail::base64::encoded_size(text.size()), '\0');
  out.resize(beast::detail::base64::encode(out.data(), text.data(), text.size()));
  if (url) {
    for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  }
  if (!padded) out.erase(out.find_last_not_of('=') + 1);
  return out;
}
std::string Unhexed(const std::string& text) {
  std::string out;
  for (std::size_t at = 0; at + 1 < text.size(); at += 2) {
    out += static_cast<char>(std::stoi(text.substr(at, 2), nullptr, 16));
  }
  return out;
}
std::string UnPercented(const std::string& text) { return PercentDecoded(text); }
std::string UnJson(const std::string& text) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    if (text.compare(at, 2, "\\u") == 0 && at + 6 <= text.size()) {
      out += static_cast<char>(std::stoi(text.substr(at + 2, 4), nullptr, 16));
      at += 6;
    } else if (text.compare(at, 2, "\\/") == 0) {
      out += '/';
      at += 2;
    } else {
      out += text[at++];
    }
  }
  return out;
}
std::string Unbase64(std::string text) {
  for (char& c : text) c = c == '-' ? '+' : c == '_' ? '/' : c;
  text.erase(std::remove(text.begin(), text.end(), '\n'), text.end());
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());
  while (text.size() % 4 != 0) text += '=';
  return DecodeBase64(text);
}

// Whether the key's random part can be read back out of `shown`, decoded
// the way it was encoded, in any case.
bool GivesKeyAway(const std::string& decoded) {
  return Recased(decoded, 1).find(Recased(kReal.substr(13), 1)) != std::string::npos;
}

}  // namespace

TEST_CASE("the scrubber decodes before it compares: no encoding of the key gets through",
          "[scrubber]") {
  const std::string shown = MakeStandIn(kReal);
  Pairs forms = ReflectedForms(kReal, shown);
  struct Form {
    std::string name;
    std::string text;
    std::function<std::string(const std::string&)> decode;
  };
  const auto same = [](const std::string& text) { return text; };
  std::vector<Form> encoded = {
      {"raw", kReal, same},
      {"upper", Recased(kReal, 0), same},
      {"lower", Recased(kReal, 1), same},
      {"swapped", Recased(kReal, 2), same},
      {"hex", Hexed(kReal, false), Unhexed},
      {"HEX", Hexed(kReal, true), Unhexed},
      {"hex of swapped case", Hexed(Recased(kReal, 2), false),
       [](const std::string& t) { return Recased(Unhexed(t), 2); }},
      {"percent, every byte", Percented(kReal, true), UnPercented},
      {"percent, some bytes", Percented(kReal, false), UnPercented},
      {"percent, lowercase hex", Recased(Percented(kReal, true), 1), UnPercented},
      {"JSON \\u escapes", JsonEscaped(kReal), UnJson},
      {"JSON, upper", JsonEscaped(Recased(kReal, 0)), UnJson},
  };
  for (std::size_t skew = 0; skew < 3; ++skew) {
    const std::string prefix(skew, '#');
    for (bool url : {false, true}) {
      for (bool padded : {false, true}) {
        const std::string b64 = Base64Of(prefix + kReal + prefix, url, padded);
        encoded.push_back({fmt::format("base64 skew {} url {} padded {}", skew, url, padded), b64,
                           Unbase64});
        // The same, percent-encoded and JSON-escaped ('/' as "\/"), and
        // wrapped as MIME wraps it.
        encoded.push_back({"base64, percent-encoded", Percented(b64, false),
                           [](const std::string& t) { return Unbase64(UnPercented(t)); }});
        std::string slashed;
        for (char c : b64) slashed += c == '/' ? std::string("\\/") : std::string(1, c);
        encoded.push_back({"base64, JSON-escaped", slashed,
                           [](const std::string& t) { return Unbase64(UnJson(t)); }});
        std::string wrapped = b64;
        for (std::size_t at = 19; at < wrapped.size(); at += 21) wrapped.insert(at, "\r\n");
        encoded.push_back({"base64, wrapped", wrapped, Unbase64});
      }
      encoded.push_back({"base64 of the upper-cased key", Base64Of(Recased(kReal, 0), url, true),
                         [](const std::string& t) { return Unbase64(t); }});
      encoded.push_back({"base64 of the swapped key", Base64Of(Recased(kReal, 2), url, true),
                         [](const std::string& t) { return Recased(Unbase64(t), 2); }});
    }
  }
  for (const Form& form : encoded) {
    INFO(form.name << ": " << form.text);
    REQUIRE(GivesKeyAway(form.decode(form.text)));  // the test's own encoding is sound
    const std::string body = "{\"echo\": \"" + form.text + "\"}\n";
    const std::string whole = Scrubber(forms).Scrub(body);
    REQUIRE(whole.size() == body.size());
    REQUIRE_FALSE(GivesKeyAway(form.decode(whole.substr(10, form.text.size()))));
    // Streamed in pieces of every size up to 13 bytes: the same.
    for (std::size_t size = 1; size <= 13; ++size) {
      Scrubber scrubber(forms);
      REQUIRE(InPieces(scrubber, body, size) == whole);
    }
  }
  // The key as it was sent comes back as the stand-in, whole; in another
  // case, as the stand-in in that case where the key's letters differ.
  REQUIRE(Scrubber(forms).Scrub(kReal) == shown);
  REQUIRE(Recased(Scrubber(forms).Scrub(Recased(kReal, 0)), 0) == Recased(shown, 0));
  REQUIRE(UnPercented(Scrubber(forms).Scrub(Percented(kReal, true))) == shown);
  REQUIRE(UnJson(Scrubber(forms).Scrub(JsonEscaped(kReal))) == shown);
  // Text that only looks escaped is left as it is.
  const std::string plain = "100% sure, C:\\path\\uXYZ and %zz";
  REQUIRE(Scrubber(forms).Scrub(plain) == plain);
}

TEST_CASE("the scrubber holds an escape cut off at a piece's end, and nothing else extra",
          "[scrubber]") {
  Scrubber scrubber(Pairs{{"sk-real-0123456789", "sk-real-9876543210", true}});
  REQUIRE(scrubber.Feed("data: 50%") == "data: 50");
  REQUIRE(scrubber.Feed(" done\n\n") == "% done\n\n");
  REQUIRE(scrubber.Feed("x\\u00") == "x");
  REQUIRE(scrubber.Feed("41\n") == "\\u0041\n");
  // A key percent-encoded, cut inside an escape.
  std::string out = scrubber.Feed("sk-real-%3");
  out += scrubber.Feed("0123456789!");
  out += scrubber.Finish();
  REQUIRE(out == "sk-real-%39876543210!");
}

TEST_CASE("stand-ins keep the length of the key for every shape of key", "[vault]") {
  for (const std::string& real :
       {kReal, kOtherReal, std::string("AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"),
        std::string("key with spaces, punctuation; and UTF-8 \xc3\xa9\xc3\xa8 1234"),
        std::string("12345678")}) {
    INFO(real);
    REQUIRE(MakeStandIn(real).size() == real.size());
  }
}

TEST_CASE("the inflater undoes gzip, multi-member gzip, zlib and raw deflate in pieces",
          "[inflater]") {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += fmt::format("line {} of the reflected body\n", i);
  auto inflate = [](Inflater& inflater, const std::string& coded, std::size_t piece) {
    std::string out;
    for (std::size_t at = 0; at < coded.size(); at += piece) {
      inflater.Input(std::string_view(coded).substr(at, piece));
      std::string slice;
      while (inflater.Read(slice, 1000) && !slice.empty()) out += slice;
    }
    return out;
  };
  for (std::size_t piece : {1, 7, 4096, 1 << 20}) {
    INFO(piece);
    Inflater gzip(Inflater::Coding::kGzip);
    REQUIRE(inflate(gzip, mojoup::test::Gzip(text), piece) == text);
    REQUIRE(gzip.ended());
    Inflater members(Inflater::Coding::kGzip);
    REQUIRE(inflate(members, mojoup::test::Gzip(text) + mojoup::test::Gzip("tail"), piece) ==
            text + "tail");
    REQUIRE(members.ended());
    Inflater zlib(Inflater::Coding::kDeflate);
    REQUIRE(inflate(zlib, mojoup::test::Gzip(text, true), piece) == text);
    REQUIRE(zlib.ended());
  }
  // Raw deflate, as some servers send for "deflate".
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  std::string raw(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(text.data());
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(raw.data());
  z.avail_out = static_cast<uInt>(raw.size());
  deflate(&z, Z_FINISH);
  raw.resize(z.total_out);
  deflateEnd(&z);
  Inflater deflate_raw(Inflater::Coding::kDeflate);
  REQUIRE(inflate(deflate_raw, raw, 100) == text);
  REQUIRE(deflate_raw.ended());

  // Cut short: not ended. Garbage: an error.
  const std::string gz = mojoup::test::Gzip(text);
  Inflater cut(Inflater::Coding::kGzip);
  inflate(cut, gz.substr(0, gz.size() / 2), 100);
  REQUIRE_FALSE(cut.ended());
  Inflater garbage(Inflater::Coding::kGzip);
  garbage.Input("this is not gzip at all");
  std::string out;
  REQUIRE_FALSE(garbage.Read(out, 100));
}

TEST_CASE("a body filter decodes then scrubs, in bounded slices", "[inflater][scrubber]") {
  const std::string real = "sk-real-0123456789abcdef";
  const std::string shown = "sk-real-9876543210zyxwvu";
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "x" + real;  // inflates a lot
  const std::string coded = mojoup::test::Gzip(text);
  BodyFilter filter(Scrubber(Pairs{{real, shown}}),
                    std::make_unique<Inflater>(Inflater::Coding::kGzip));
  std::string out, piece;
  std::size_t largest = 0;
  for (std::size_t at = 0; at < coded.size(); at += 512) {
    filter.Input(std::string_view(coded).substr(at, 512));
    BodyFilter::Step step;
    while ((step = filter.Next(piece)) == BodyFilter::Step::kOutput) {
      largest = std::max(largest, piece.size());
      out += piece;
    }
    REQUIRE(step == BodyFilter::Step::kNeedInput);
  }
  REQUIRE(filter.Finish(piece));
  out += piece;
  REQUIRE(out.size() == text.size());
  REQUIRE(out.find(real) == std::string::npos);
  REQUIRE(largest <= 64 * 1024 + real.size());
}

TEST_CASE("request heads: a stand-in is in its place only in a credential header", "[request]") {
  Vault vault;
  auto stand_in = vault.Add("ACME_KEY", kReal, {"api.acme.test"});
  auto other = vault.Add("OTHER_KEY", kOtherReal, {"other.test"});
  REQUIRE(stand_in.ok());
  REQUIRE(other.ok());
  const std::vector<std::string> headers = CredentialHeaders("");
  auto head = [](const std::string& target,
                 std::vector<std::pair<std::string, std::string>> fields) {
    http::request_header<> header;
    header.method(http::verb::get);
    header.target(target);
    for (auto& [name, value] : fields) header.insert(name, value);
    return header;
  };
  auto misplaced = [&](const http::request_header<>& header) {
    return FindMisplacedStandIn(header, vault, "api.acme.test", headers, true);
  };

  SECTION("in place: swapped, and nothing else is touched") {
    const std::string basic_user = mojoup::test::Base64(*stand_in + ":x-oauth-basic");
    const std::string basic_password = mojoup::test::Base64("git:" + *stand_in);
    for (auto [name, value, sent] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"x-api-key", *stand_in, kReal},
             {"X-Api-Key", *stand_in, kReal},
             {"api-key", *stand_in, kReal},
             {"x-goog-api-key", *stand_in, kReal},
             {"Authorization", "Bearer " + *stand_in, "Bearer " + kReal},
             {"Authorization", "bearer  " + *stand_in, "bearer  " + kReal},
             {"Authorization", "token " + *stand_in, "token " + kReal},
             {"Authorization", *stand_in, kReal},
             {"Authorization", "Basic " + basic_user,
              "Basic " + mojoup::test::Base64(kReal + ":x-oauth-basic")},
             {"Authorization", "Basic " + basic_password,
              "Basic " + mojoup::test::Base64("git:" + kReal)}}) {
      INFO(name << ": " << value);
      auto header = head("/v1/messages?beta=1", {{name, value}, {"X-Other", "plain"}});
      REQUIRE_FALSE(misplaced(header));
      auto basics = SwapStandIns(header, vault, "api.acme.test", headers);
      REQUIRE(Str(header[name]) == sent);
      REQUIRE(Str(header["X-Other"]) == "plain");
      REQUIRE(Str(header.target()) == "/v1/messages?beta=1");
      if (value.rfind("Basic ", 0) == 0) {
        REQUIRE(basics.size() == 1);
        REQUIRE(basics[0].from == sent.substr(6));
        REQUIRE(basics[0].to == value.substr(6));
      }
    }
  }
  SECTION("anywhere else: refused, saying where") {
    for (auto [target, name, value, where] :
         std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
             {"/v1?key=" + *stand_in, "", "", "the request target"},
             {"/v1/" + *stand_in + "/x", "", "", "the request target"},
             {"/v1?key=%73" + stand_in->substr(1), "", "", "the request target"},
             {"/", "X-Token", *stand_in, "header X-Token"},
             {"/", "Cookie", "session=" + *stand_in, "header Cookie"},
             {"/", "X-" + *stand_in, "1", "the name of header X-" + *stand_in},
             {"/", "x-api-key", "prefix-" + *stand_in, "header x-api-key"},
             {"/", "x-api-key", *stand_in + "," + *stand_in, "header x-api-key"},
             {"/", "Authorization", "Bearer " + *stand_in + " extra", "header Authorization"},
             {"/", "Authorization", "Digest " + *stand_in, "header Authorization"},
             {"/", "Authorization", "Basic " + mojoup::test::Base64("u:pre" + *stand_in),
              "header Authorization"},
             {"/", "Proxy-Authorization", "Basic " + mojoup::test::Base64("u:" + *stand_in),
              "header Proxy-Authorization"},
             {"/", "X-Basic", "Basic " + mojoup::test::Base64("u:" + *stand_in),
              "header X-Basic"}}) {
      INFO(target << " " << name << ": " << value);
      std::vector<std::pair<std::string, std::string>> fields;
      if (!name.empty()) fields.emplace_back(name, value);
      auto found = misplaced(head(target, fields));
      REQUIRE(found.has_value());
      REQUIRE(found->credential->name == "ACME_KEY");
      REQUIRE(found->bound_here);
      REQUIRE(found->where == where);
    }
  }
  SECTION("another host's stand-in, even in a credential header") {
    auto found = misplaced(head("/", {{"x-api-key", *other}}));
    REQUIRE(found.has_value());
    REQUIRE(found->credential->name == "OTHER_KEY");
    REQUIRE_FALSE(found->bound_here);
  }
  SECTION("without swapping (plain http, unbound hosts) every stand-in is misplaced") {
    auto found = FindMisplacedStandIn(head("/", {{"x-api-key", *stand_in}}), vault, "api.acme.test",
                                      headers, false);
    REQUIRE(found.has_value());
  }
  SECTION("a tool's profile adds its headers to the common ones") {
    REQUIRE(CredentialHeaders("") ==
            std::vector<std::string>{"authorization", "x-api-key", "api-key", "x-goog-api-key"});
    REQUIRE(CredentialHeaders("claude-code") == CredentialHeaders(""));
    auto custom = head("/", {{"x-custom-key", *stand_in}});
    REQUIRE(misplaced(custom).has_value());
    REQUIRE_FALSE(FindMisplacedStandIn(custom, vault, "api.acme.test", {"x-custom-key"}, true));
  }
}

TEST_CASE("request heads: the authority a request names must be its tunnel's", "[request]") {
  auto check = [](const std::string& target, std::vector<std::string> hosts,
                  http::verb method = http::verb::get) {
    http::request_header<> header;
    header.method(method);
    header.target(target);
    for (const std::string& host : hosts) header.insert(http::field::host, host);
    return CheckAuthority(header, "api.test", 443);
  };
  for (const std::string host :
       {"api.test", "API.Test", "api.test.", "api.test:443", "API.TEST.:443"}) {
    INFO(host);
    auto ok = check("/v1", {host});
    REQUIRE(ok.named.empty());
    REQUIRE_FALSE(ok.malformed);
    REQUIRE(ok.origin == "/v1");
  }
  REQUIRE(check("/v1", {}).named.empty());  // HTTP/1.0: the proxy sets it
  REQUIRE(check("https://api.test/v1?x=1", {"api.test"}).origin == "/v1?x=1");
  REQUIRE(check("HTTPS://API.test:443", {}).origin == "/");
  REQUIRE(check("*", {"api.test"}, http::verb::options).origin == "*");
  REQUIRE(check("/v1", {"attacker.example"}).named == "Host: attacker.example");
  REQUIRE(check("/v1", {"api.test:8443"}).named == "Host: api.test:8443");
  REQUIRE(check("/v1", {"api.test.evil"}).named == "Host: api.test.evil");
  REQUIRE(check("/v1", {"user@api.test"}).named == "Host: user@api.test");
  REQUIRE(check("/v1", {""}).named == "Host: ");
  REQUIRE(check("/v1", {"api.test", "attacker.example"}).named == "two Host headers");
  REQUIRE(check("https://attacker.example/v1", {"api.test"}).named ==
          "the target's authority attacker.example");
  REQUIRE(check("http://api.test/v1", {"api.test"}).named == "the target's authority api.test");
  REQUIRE(check("https://u:p@api.test/v1", {"api.test"}).named ==
          "the target's authority u:p@api.test");
  REQUIRE(check("api.test:443", {"api.test"}).malformed);
  REQUIRE(check("*", {"api.test"}).malformed);
  REQUIRE(SameAuthority("[FD00::7]:443", "[fd00::7]", 443, 443));
}

TEST_CASE("request heads: TRACE and TRACK however they are asked for", "[request]") {
  auto head = [](const std::string& method, const std::string& override_header = "") {
    http::request_header<> header;
    header.method_string(method);
    if (!override_header.empty()) header.set(override_header, "TRACE");
    return header;
  };
  REQUIRE(IsReflectingMethod(head("TRACE")));
  REQUIRE(IsReflectingMethod(head("TRACK")));
  REQUIRE(IsReflectingMethod(head("trace")));
  REQUIRE(IsReflectingMethod(head("POST", "X-HTTP-Method-Override")));
  REQUIRE(IsReflectingMethod(head("POST", "x-http-method")));
  REQUIRE(IsReflectingMethod(head("POST", "X-Method-Override")));
  REQUIRE_FALSE(IsReflectingMethod(head("GET")));
  REQUIRE_FALSE(IsReflectingMethod(head("OPTIONS")));
}

TEST_CASE("response heads: codings, decoding marks and scrubbing", "[response]") {
  http::response_header<> header;
  std::string names;
  REQUIRE(CodingOf(header, names) == BodyCoding::kIdentity);
  header.set(http::field::content_encoding, "identity");
  REQUIRE(CodingOf(header, names) == BodyCoding::kIdentity);
  header.set(http::field::content_encoding, "GZIP");
  REQUIRE(CodingOf(header, names) == BodyCoding::kGzip);
  header.set(http::field::content_encoding, "x-gzip");
  REQUIRE(CodingOf(header, names) == BodyCoding::kGzip);
  header.set(http::field::content_encoding, "deflate");
  REQUIRE(CodingOf(header, names) == BodyCoding::kDeflate);
  header.set(http::field::content_encoding, "br");
  REQUIRE(CodingOf(header, names) == BodyCoding::kUnreadable);
  REQUIRE(names == "br");
  header.set(http::field::content_encoding, "gzip, gzip");
  REQUIRE(CodingOf(header, names) == BodyCoding::kUnreadable);
  header.erase(http::field::content_encoding);
  header.set(http::field::transfer_encoding, "gzip, chunked");
  REQUIRE(CodingOf(header, names) == BodyCoding::kGzip);
  header.set(http::field::transfer_encoding, "chunked");
  REQUIRE(CodingOf(header, names) == BodyCoding::kIdentity);

  header.set(http::field::content_encoding, "gzip");
  header.set(http::field::content_length, "10");
  header.erase(http::field::transfer_encoding);
  MarkDecoded(header, 11);
  REQUIRE(header.find(http::field::content_encoding) == header.end());
  REQUIRE(header.find(http::field::content_length) == header.end());
  REQUIRE(Str(header[http::field::transfer_encoding]) == "chunked");
  MarkDecoded(header, 10);
  REQUIRE(header.find(http::field::transfer_encoding) == header.end());
  REQUIRE(Str(header[http::field::connection]) == "close");

  http::response_header<> reflected;
  reflected.result(http::status::bad_request);
  reflected.reason("bad key sk-real-0123456789");
  reflected.insert("X-Echo-Key", "sk-real-0123456789");
  reflected.insert("X-sk-real-0123456789", "1");
  reflected.insert("X-Echo-Key", "again sk-real-0123456789");
  ScrubHead(reflected, Scrubber(Pairs{{"sk-real-0123456789", "sk-real-9876543210"}}));
  REQUIRE(Str(reflected.reason()) == "bad key sk-real-9876543210");
  auto range = reflected.equal_range("X-Echo-Key");
  REQUIRE(std::distance(range.first, range.second) == 2);
  REQUIRE(Str(range.first->value()) == "sk-real-9876543210");
  REQUIRE(reflected.find("X-sk-real-9876543210") != reflected.end());
}

// --- the proxy between a client and a reflecting upstream --------------------

namespace {

// The proxy in process; api.test (ACME_KEY bound) and other.test (OTHER_KEY
// bound) are TLS reflecting upstreams, plain.test a plain one.
struct ReflectWorld {
  TempDir dir;
  std::unique_ptr<SessionCa> upstream_ca = *SessionCa::Create("upstream test CA");
  mojoup::test::EchoServer api{*upstream_ca->ServerContext("api.test")};
  mojoup::test::EchoServer other{*upstream_ca->ServerContext("other.test")};
  mojoup::test::EchoServer plain;
  std::unique_ptr<Proxy> proxy;
  std::string stand_in;
  std::string other_stand_in;

  ReflectWorld() {
    ProxyOptions options;
    options.listen = "127.0.0.1:0";
    options.upstream_ca = dir.Write("upstream-ca.pem", upstream_ca->certificate_pem());
    options.rules = Rules(fmt::format(
        R"({{"agents": {{"network": {{"allow": [{{"host": "api.test", "ports": [{}]}},
            {{"host": "other.test", "ports": [{}]}}, {{"host": "plain.test", "ports": [{}]}}]}}}}}})",
        api.port(), other.port(), plain.port()));
    for (auto [host, port] : {std::pair{"api.test", api.port()},
                              {"other.test", other.port()},
                              {"plain.test", plain.port()}}) {
      options.pins[fmt::format("{}:{}", host, port)] = "127.0.0.1";
    }
    stand_in = *options.vault.Add("ACME_KEY", kReal, {"api.test"});
    other_stand_in = *options.vault.Add("OTHER_KEY", kOtherReal, {"other.test"});
    auto started = Proxy::Start(std::move(options));
    REQUIRE(started.ok());
    proxy = std::move(*started);
  }

  asio::ip::tcp::endpoint ProxyEndpoint() const {
    const std::string address = proxy->tcp_address();
    const auto colon = address.rfind(':');
    return {asio::ip::make_address(address.substr(0, colon)),
            static_cast<unsigned short>(std::stoi(address.substr(colon + 1)))};
  }
};

// A client inside a CONNECT tunnel to host:port through the proxy,
// trusting the session CA.
struct TunnelClient {
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  asio::ssl::context context{asio::ssl::context::tls_client};
  std::optional<asio::ssl::stream<asio::ip::tcp::socket&>> tls;
  beast::flat_buffer buffer;

  TunnelClient(const ReflectWorld& world, const std::string& host, unsigned short port) {
    socket.connect(world.ProxyEndpoint());
    const std::string target = fmt::format("{}:{}", host, port);
    mojoup::test::OpenTunnel(socket, buffer, target);
    context.load_verify_file(world.proxy->ca_cert_path());
    tls.emplace(socket, context);
    SSL_set_tlsext_host_name(tls->native_handle(), host.c_str());
    tls->set_verify_mode(asio::ssl::verify_peer);
    tls->set_verify_callback(asio::ssl::host_name_verification(host));
    tls->handshake(asio::ssl::stream_base::client);
  }

  // Sends `raw` as it is; returns the response as a client reads it.
  http::response<http::string_body> Send(const std::string& raw, bool head = false) {
    asio::write(*tls, asio::buffer(raw));
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    parser.skip(head);
    http::read(*tls, buffer, parser);
    return parser.release();
  }
};

// Every place a client could find text in a response: the head (reason and
// fields, names too) and the body, and the body decoded were it still
// coded.
std::string Everything(const http::response<http::string_body>& response) {
  std::string text = Str(response.reason()) + "\n";
  for (const auto& field : response) {
    text += Str(field.name_string()) + ": " + Str(field.value()) + "\n";
  }
  text += response.body();
  const std::string coding = Str(response[http::field::content_encoding]);
  if (!coding.empty()) {
    mojoup::credproxy::Inflater inflater(coding == "deflate" ? Inflater::Coding::kDeflate
                                                                      : Inflater::Coding::kGzip);
    inflater.Input(response.body());
    std::string slice;
    while (inflater.Read(slice, 1 << 20) && !slice.empty()) text += slice;
  }
  return text;
}

// No real key in `text`: not in the clear, not in any run of base64 in it
// (either alphabet, decoded at each offset), not even its random middle.
void RequireNoRealKey(const std::string& text) {
  auto base64ish = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '-' ||
           c == '_' || c == '=';
  };
  std::vector<std::string> decoded;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = at;
    while (end < text.size() && base64ish(text[end])) ++end;
    if (end - at >= 16) {
      std::string run = text.substr(at, end - at);
      for (char& c : run) c = c == '-' ? '+' : c == '_' ? '/' : c;
      for (std::size_t skip = 0; skip < 4 && skip < run.size(); ++skip) {
        decoded.push_back(DecodeBase64(run.substr(skip)));
      }
    }
    at = end + 1;
  }
  for (const std::string& real : {kReal, kOtherReal}) {
    const std::string middle = real.substr(real.size() / 2 - 8, 16);
    REQUIRE(text.find(real) == std::string::npos);
    REQUIRE(text.find(middle) == std::string::npos);
    for (const std::string& plain : decoded) REQUIRE(plain.find(middle) == std::string::npos);
  }
}

std::string Get(const std::string& target, const std::string& host,
                const std::vector<std::string>& headers, const std::string& method = "GET") {
  std::string raw = fmt::format("{} {} HTTP/1.1\r\nHost: {}\r\n", method, target, host);
  for (const std::string& header : headers) raw += header + "\r\n";
  return raw + "\r\n";
}

}  // namespace

TEST_CASE("proxy: whatever a reflecting upstream sends back, the client sees only stand-ins",
          "[proxy][reflect]") {
  ReflectWorld world;
  const std::string host = fmt::format("api.test:{}", world.api.port());
  const std::string basic = mojoup::test::Base64("user:" + world.stand_in);
  const std::vector<std::string> credentials = {"x-api-key: " + world.stand_in,
                                                "Authorization: Basic " + basic};
  for (const std::string query :
       {"", "?chunked=1", "?split=5", "?chunked=1&split=7", "?gzip=1", "?gzip=1&chunked=1&split=3",
        "?deflate=1&split=11", "?b64=1", "?b64=1&split=1", "?b64=1&gzip=1&chunked=1&split=2"}) {
    INFO(query);
    TunnelClient client(world, "api.test", world.api.port());
    auto response = client.Send(Get("/reflect" + query, host, credentials));
    REQUIRE(response.result_int() == 200);
    // The upstream had the real key, where it belongs.
    const auto seen = world.api.seen().back();
    REQUIRE(seen.Header("x-api-key") == kReal);
    REQUIRE(seen.Header("authorization") == "Basic " + mojoup::test::Base64("user:" + kReal));
    REQUIRE(seen.Header("accept-encoding") == "identity");
    // The client sees its stand-ins where the key was reflected, decoded.
    REQUIRE(response.find(http::field::content_encoding) == response.end());
    REQUIRE(Str(response["X-Echo-x-api-key"]) == world.stand_in);
    REQUIRE(Str(response["X-Echo-Authorization"]) == "Basic " + basic);
    std::string body = response.body();
    if (query.find("b64=1") != std::string::npos) {
      // Reflected in base64: the stand-in's characters, but for the low bits
      // of the last, which share a base64 character with the next byte.
      body = DecodeBase64(body);
      const std::string most = world.stand_in.substr(0, world.stand_in.size() - 1);
      REQUIRE_THAT(body, Contains("x-api-key: " + most));
      REQUIRE_THAT(body, Contains("Authorization: Basic " + basic.substr(0, basic.size() - 4)));
    } else {
      REQUIRE_THAT(body, Contains("x-api-key: " + world.stand_in));
      REQUIRE_THAT(body, Contains("Authorization: Basic " + basic));
    }
    RequireNoRealKey(Everything(response));
  }
}

TEST_CASE("proxy: keep-alive, a WebSocket and interim responses stay scrubbed",
          "[proxy][reflect]") {
  ReflectWorld world;
  const std::string host = fmt::format("api.test:{}", world.api.port());
  TunnelClient client(world, "api.test", world.api.port());
  for (int i = 0; i < 3; ++i) {
    auto response = client.Send(
        Get("/reflect?chunked=1&split=4", host, {"Authorization: Bearer " + world.stand_in}));
    INFO(i << "\n" << response);
    REQUIRE(response.result_int() == 200);
    REQUIRE(response.keep_alive());
    REQUIRE_THAT(response.body(), Contains("Bearer " + world.stand_in));
    RequireNoRealKey(Everything(response));
  }
  // A HEAD's answer has no body, not even the last chunk of a chunked one.
  {
    auto response = client.Send(
        Get("/reflect?chunked=1", host, {"Authorization: Bearer " + world.stand_in}, "HEAD"), true);
    REQUIRE(response.result_int() == 200);
    REQUIRE(Str(response["X-Echo-Authorization"]) == "Bearer " + world.stand_in);
    RequireNoRealKey(Everything(response));
  }
  // The upgrade request is swapped; the upstream's first frames echo it back.
  asio::write(
      *client.tls,
      asio::buffer(
          Get("/reflect/socket", host,
              {"Upgrade: websocket", "Connection: Upgrade",
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
               "Sec-WebSocket-Extensions: permessage-deflate", "x-api-key: " + world.stand_in})));
  http::response_parser<http::empty_body> switched;
  http::read_header(*client.tls, client.buffer, switched);
  REQUIRE(switched.get().result() == http::status::switching_protocols);
  const auto seen = world.api.seen().back();
  REQUIRE(seen.Header("x-api-key") == kReal);
  REQUIRE(seen.Header("sec-websocket-extensions").empty());  // no compressed frames
  asio::write(*client.tls, asio::buffer(std::string("frames after the upgrade\n")));
  std::string received = beast::buffers_to_string(client.buffer.data());
  while (received.find("frames after the upgrade") == std::string::npos) {
    char chunk[4096];
    const std::size_t got = client.tls->read_some(asio::buffer(chunk));
    received.append(chunk, got);
  }
  REQUIRE_THAT(received, Contains("x-api-key: " + world.stand_in));
  RequireNoRealKey(received);
}

TEST_CASE("proxy: what is refused inside a tunnel never reaches the upstream", "[proxy][reflect]") {
  ReflectWorld world;
  const std::string host = fmt::format("api.test:{}", world.api.port());
  const std::string key = "x-api-key: " + world.stand_in;
  auto refused = [&](const std::string& raw, const std::string& code) {
    TunnelClient client(world, "api.test", world.api.port());
    auto response = client.Send(raw);
    INFO(raw << "\n" << response);
    REQUIRE(response.result_int() == 403);
    REQUIRE(Str(response["X-Mojoup-Proxy-Error"]) == code);
    REQUIRE_THAT(response.body(), StartsWith("{\"error\":\"" + code + "\""));
    RequireNoRealKey(Everything(response));
    REQUIRE(world.api.seen().empty());
    return response.body();
  };
  SECTION("a stand-in in the query, the target or another header") {
    std::string body =
        refused(Get("/reflect?key=" + world.stand_in, host, {key}), "credential-misplaced");
    REQUIRE_THAT(body, Contains("in the request target"));
    REQUIRE_THAT(body, Contains("only as the whole value of a credential header"));
    refused(Get("/reflect/" + world.stand_in, host, {}), "credential-misplaced");
    body = refused(Get("/reflect", host, {key, "X-Reflect-Me: " + world.stand_in}),
                   "credential-misplaced");
    REQUIRE_THAT(body, Contains("header X-Reflect-Me"));
    refused(
        Get("/reflect", host, {"X-Basic: Basic " + mojoup::test::Base64("u:" + world.stand_in)}),
        "credential-misplaced");
  }
  SECTION("another host's stand-in") {
    refused(Get("/reflect", host, {"x-api-key: " + world.other_stand_in}),
            "credential-host-mismatch");
  }
  SECTION("TRACE and TRACK") {
    std::string body = refused(Get("/", host, {key}, "TRACE"), "method-not-allowed");
    REQUIRE_THAT(body, Contains("TRACE"));
    refused(Get("/", host, {key}, "TRACK"), "method-not-allowed");
    refused(Get("/", host, {key}, "trace"), "method-not-allowed");
    refused(Get("/", host, {key, "X-HTTP-Method-Override: TRACE"}, "POST"), "method-not-allowed");
  }
  SECTION("a Host or an absolute-form authority that is not the tunnel's") {
    std::string body = refused(Get("/reflect", "attacker.example", {key}), "host-mismatch");
    REQUIRE_THAT(body, Contains("attacker.example"));
    refused(Get("/reflect", "api.test", {key}), "host-mismatch");  // not the tunnel's port
    refused(Get("https://attacker.example/reflect", host, {key}), "host-mismatch");
    refused(Get(fmt::format("https://attacker.example:{}/reflect", world.api.port()),
                "attacker.example", {key}),
            "host-mismatch");
    // Two Hosts are two readings of one request: refused before the tunnel's
    // authority is even compared.
    TunnelClient client(world, "api.test", world.api.port());
    auto response = client.Send("GET /reflect HTTP/1.1\r\nHost: " + host +
                                "\r\nHost: attacker.example\r\n" + key + "\r\n\r\n");
    REQUIRE(response.result_int() == 400);
    REQUIRE_THAT(response.body(), Contains("Host is given more than once"));
    REQUIRE(world.api.seen().empty());
  }
  SECTION("another credential's stand-in in the body is cut off before it goes") {
    TunnelClient client(world, "api.test", world.api.port());
    const std::string body = std::string(100000, 'b') + world.other_stand_in + "tail";
    auto response = client.Send(
        fmt::format("POST /reflect HTTP/1.1\r\nHost: {}\r\n{}\r\nContent-Length: {}\r\n\r\n{}",
                    host, key, body.size(), body));
    REQUIRE(response.result_int() == 403);
    REQUIRE(Str(response["X-Mojoup-Proxy-Error"]) == "credential-host-mismatch");
    REQUIRE_THAT(response.body(), Contains("in the request body"));
    // The upstream got at most a cut-off request, never the stand-in.
    for (const auto& seen : world.api.seen()) REQUIRE(seen.body_bytes < 100000);
  }
}

TEST_CASE("proxy: a matching absolute-form target and a trailing-dot Host are the same host",
          "[proxy][reflect]") {
  ReflectWorld world;
  const std::string key = "x-api-key: " + world.stand_in;
  TunnelClient client(world, "api.test", world.api.port());
  auto response = client.Send(Get(fmt::format("https://API.test:{}/reflect?x=1", world.api.port()),
                                  fmt::format("api.test.:{}", world.api.port()), {key}));
  REQUIRE(response.result_int() == 200);
  REQUIRE(world.api.seen().back().target == "/reflect?x=1");
  REQUIRE(world.api.seen().back().Header("x-api-key") == kReal);
  RequireNoRealKey(Everything(response));
}

TEST_CASE("proxy: a WebSocket through base-URL mode is swapped and scrubbed", "[proxy][reflect]") {
  // The openshell runtime reaches the proxy only through base URLs, and
  // Codex opens the Responses API as a WebSocket there first.
  ReflectWorld world;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect(world.ProxyEndpoint());
  asio::write(
      socket,
      asio::buffer(
          Get(fmt::format("/api.test:{}/reflect/socket", world.api.port()), "proxy",
              {"Upgrade: websocket", "Connection: Upgrade",
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
               "Sec-WebSocket-Extensions: permessage-deflate", "x-api-key: " + world.stand_in})));
  beast::flat_buffer buffer;
  http::response_parser<http::empty_body> switched;
  http::read_header(socket, buffer, switched);
  REQUIRE(switched.get().result() == http::status::switching_protocols);
  const auto seen = world.api.seen().back();
  REQUIRE(seen.Header("x-api-key") == kReal);
  REQUIRE(seen.Header("sec-websocket-extensions").empty());  // no compressed frames
  asio::write(socket, asio::buffer(std::string("frames after the upgrade\n")));
  std::string received = beast::buffers_to_string(buffer.data());
  while (received.find("frames after the upgrade") == std::string::npos) {
    char chunk[4096];
    const std::size_t got = socket.read_some(asio::buffer(chunk));
    received.append(chunk, got);
  }
  // The upstream's first frames reflect the upgrade request: the stand-in.
  REQUIRE_THAT(received, Contains("x-api-key: " + world.stand_in));
  RequireNoRealKey(received);
}

TEST_CASE("proxy: base-URL mode and plain http refuse and scrub the same way", "[proxy][reflect]") {
  ReflectWorld world;
  auto send = [&](const std::string& raw) {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect(world.ProxyEndpoint());
    asio::write(socket, asio::buffer(raw));
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    http::read(socket, buffer, parser);
    return parser.release();
  };
  const std::string base = fmt::format("/api.test:{}", world.api.port());
  const std::string key = "x-api-key: " + world.stand_in;

  for (const std::string query : {"", "?gzip=1&chunked=1&split=3", "?b64=1&split=2"}) {
    INFO(query);
    auto response = send(Get(base + "/reflect" + query, "proxy", {key}));
    REQUIRE(response.result_int() == 200);
    REQUIRE(world.api.seen().back().Header("x-api-key") == kReal);
    RequireNoRealKey(Everything(response));
  }
  const std::size_t before = world.api.seen().size();
  auto response = send(Get(base + "/reflect?key=" + world.stand_in, "proxy", {}));
  REQUIRE(Str(response["X-Mojoup-Proxy-Error"]) == "credential-misplaced");
  response = send(Get(base + "/", "proxy", {key}, "TRACE"));
  REQUIRE(Str(response["X-Mojoup-Proxy-Error"]) == "method-not-allowed");
  REQUIRE(world.api.seen().size() == before);
  // To a host the credential is not bound to: the stand-in in a header, or
  // in the body, never goes.
  const std::string other = fmt::format("/other.test:{}", world.other.port());
  response = send(Get(other + "/reflect", "proxy", {key}));
  REQUIRE(Str(response["X-Mojoup-Proxy-Error"]) == "credential-host-mismatch");
  const std::string body = "{\"leak\": \"" + world.stand_in + "\"}";
  response =
      send(fmt::format("POST {}/reflect HTTP/1.1\r\nHost: proxy\r\nContent-Length: {}\r\n\r\n{}",
                       other, body.size(), body));
  REQUIRE(Str(response["X-Mojoup-Proxy-Error"]) == "credential-host-mismatch");
  REQUIRE_THAT(response.body(), Contains("in the request body"));
  for (const auto& seen : world.other.seen()) REQUIRE(seen.body_bytes == 0);

  // Plain http: TRACE refused; a stand-in in the head or the body refused;
  // Host set from the target.
  const std::string plain = fmt::format("http://plain.test:{}", world.plain.port());
  response = send(Get(plain + "/", "whatever", {}, "TRACE"));
  REQUIRE(Str(response["X-Mojoup-Proxy-Error"]) == "method-not-allowed");
  response = send(fmt::format("POST {}/reflect HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{}",
                              plain, body.size(), body));
  REQUIRE(Str(response["X-Mojoup-Proxy-Error"]) == "credential-host-mismatch");
  REQUIRE(world.plain.seen().empty());
  response = send(Get(plain + "/reflect", "attacker.example", {}));
  REQUIRE(response.result_int() == 200);
  REQUIRE(world.plain.seen().back().Header("host") ==
          fmt::format("plain.test:{}", world.plain.port()));
}
