// Kernel constants that Debian 12's 6.1-era UAPI headers lack or that differ
// between libcs. Defined once, here.
#pragma once

#include <cstdint>

namespace mojoup::probe::sys {

inline constexpr long kNrLandlockCreateRuleset = 444;  // same on every architecture
inline constexpr std::uint32_t kLandlockCreateRulesetVersion = 1U << 0;
inline constexpr std::uint32_t kLandlockCreateRulesetErrata = 1U << 1;

inline constexpr unsigned kSeccompSetModeStrict = 0;
inline constexpr unsigned kSeccompSetModeFilter = 1;
inline constexpr unsigned kSeccompGetActionAvail = 2;
inline constexpr unsigned kSeccompGetNotifSizes = 3;
inline constexpr unsigned kSeccompFilterFlagNewListener = 1U << 3;
inline constexpr std::uint32_t kSeccompRetAllow = 0x7fff0000U;

}  // namespace mojoup::probe::sys
