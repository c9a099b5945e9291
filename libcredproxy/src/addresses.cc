#include <array>
#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "mojoup/credproxy/proxy.h"

namespace mojoup::credproxy {
namespace {

using V4 = std::array<std::uint8_t, 4>;
using V6 = std::array<std::uint8_t, 16>;

bool StartsWith(const V6& bytes, std::initializer_list<std::uint8_t> prefix) {
  std::size_t i = 0;
  for (std::uint8_t byte : prefix) {
    if (bytes[i++] != byte) return false;
  }
  return true;
}

bool ZeroBetween(const V6& bytes, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    if (bytes[i] != 0) return false;
  }
  return true;
}

V4 At(const V6& bytes, std::initializer_list<std::size_t> positions) {
  V4 out{};
  std::size_t i = 0;
  for (std::size_t at : positions) out[i++] = bytes[at];
  return out;
}

bool IsBlockedV4(const V4& bytes) {
  const unsigned a = bytes[0];
  const unsigned b = bytes[1];
  return a == 0 || a == 127 || a == 10 || (a == 172 && b >= 16 && b <= 31) ||
         (a == 192 && b == 168) || (a == 169 && b == 254) || (a == 100 && b >= 64 && b <= 127) ||
         a >= 224;
}

// The IPv4 addresses an IPv6 address stands for, on a network that routes or
// translates it to IPv4. Packets to such an address end at the embedded IPv4
// address, so it is refused when that address is.
std::vector<V4> EmbeddedV4(const V6& bytes) {
  // IPv4-mapped ::ffff:a.b.c.d (RFC 4291 section 2.5.5.2) and IPv4-translated
  // ::ffff:0:a.b.c.d (RFC 2765 section 2.1, SIIT).
  if (ZeroBetween(bytes, 0, 10) && bytes[10] == 0xff && bytes[11] == 0xff) {
    return {At(bytes, {12, 13, 14, 15})};
  }
  if (ZeroBetween(bytes, 0, 8) && bytes[8] == 0xff && bytes[9] == 0xff && bytes[10] == 0 &&
      bytes[11] == 0) {
    return {At(bytes, {12, 13, 14, 15})};
  }
  // IPv4-compatible ::a.b.c.d (RFC 4291 section 2.5.5.1, deprecated but still
  // routed by some stacks); :: and ::1 are themselves blocked below.
  if (ZeroBetween(bytes, 0, 12)) return {At(bytes, {12, 13, 14, 15})};
  // NAT64, the well-known prefix 64:ff9b::/96 (RFC 6052 section 2.1): the
  // IPv4 address is the last 32 bits.
  if (StartsWith(bytes, {0x00, 0x64, 0xff, 0x9b}) && ZeroBetween(bytes, 4, 12)) {
    return {At(bytes, {12, 13, 14, 15})};
  }
  // NAT64, the local-use prefix 64:ff9b:1::/48 (RFC 8215). A site may use it
  // with any prefix length from /48 to /96, each of which puts the IPv4
  // address elsewhere (RFC 6052 section 2.2, bits 64-71 skipped): every
  // reading counts.
  if (StartsWith(bytes, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01})) {
    return {At(bytes, {6, 7, 9, 10}), At(bytes, {7, 9, 10, 11}), At(bytes, {9, 10, 11, 12}),
            At(bytes, {12, 13, 14, 15})};
  }
  // 6to4 2002:V4ADDR::/48 (RFC 3056 section 2): the relay sends to bytes 2-5.
  if (StartsWith(bytes, {0x20, 0x02})) return {At(bytes, {2, 3, 4, 5})};
  // Teredo 2001:0::/32 (RFC 4380 section 4): the client's address is the
  // last 32 bits with every bit inverted.
  if (StartsWith(bytes, {0x20, 0x01, 0x00, 0x00})) {
    V4 client = At(bytes, {12, 13, 14, 15});
    for (std::uint8_t& byte : client) byte = static_cast<std::uint8_t>(~byte);
    return {client};
  }
  return {};
}

bool IsBlockedV6(const boost::asio::ip::address_v6& v6) {
  const V6 bytes = v6.to_bytes();
  if (v6.is_loopback() || v6.is_unspecified() || v6.is_link_local() || v6.is_multicast() ||
      v6.is_site_local() || (bytes[0] & 0xfe) == 0xfc) {  // fc00::/7 (RFC 4193)
    return true;
  }
  for (const V4& embedded : EmbeddedV4(bytes)) {
    if (IsBlockedV4(embedded)) return true;
  }
  return false;
}

}  // namespace

bool IsBlockedAddress(const std::string& text) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(text, ec);
  if (ec) return true;  // not an address at all: refuse
  if (address.is_v6()) return IsBlockedV6(address.to_v6());
  return IsBlockedV4(address.to_v4().to_bytes());
}

}  // namespace mojoup::credproxy
