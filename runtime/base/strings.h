#pragma once
// Small string helpers used in messages and reports.

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/compiler.h"

namespace strata {

// printf-style formatting into a std::string.
std::string StrFormat(const char* fmt, ...) STRATA_PRINTF_FORMAT(1, 2);
// "1.23 GiB", "512 B"
std::string HumanBytes(uint64_t bytes);
// A string safe to print: non-printable bytes as \xNN, cut to max_len with "...".
std::string Printable(std::string_view s, size_t max_len = 80);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
// Equal but for the case of ASCII letters (HTTP header names, host names, media types).
bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b);

}  // namespace strata
