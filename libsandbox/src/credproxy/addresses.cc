#include <boost/asio/ip/address.hpp>

#include "mojoup/sandbox/credproxy/proxy.h"

namespace mojoup::sandbox::credproxy {

bool IsBlockedAddress(const std::string& text) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(text, ec);
  if (ec) return true;  // not an address at all: refuse
  if (address.is_v6()) {
    auto v6 = address.to_v6();
    if (v6.is_v4_mapped()) {
      return IsBlockedAddress(
          boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).to_string());
    }
    const auto bytes = v6.to_bytes();
    return v6.is_loopback() || v6.is_unspecified() || v6.is_link_local() || v6.is_multicast() ||
           v6.is_site_local() || (bytes[0] & 0xfe) == 0xfc;  // fc00::/7
  }
  const auto bytes = address.to_v4().to_bytes();
  const unsigned a = bytes[0];
  const unsigned b = bytes[1];
  return a == 0 || a == 127 || a == 10 || (a == 172 && b >= 16 && b <= 31) ||
         (a == 192 && b == 168) || (a == 169 && b == 254) || (a == 100 && b >= 64 && b <= 127) ||
         a >= 224;
}

}  // namespace mojoup::sandbox::credproxy
