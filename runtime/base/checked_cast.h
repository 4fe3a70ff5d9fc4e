#pragma once
// Checked conversions of untrusted numbers: the one place where a value read
// from a file, a request or a command line changes numeric type. Casting a
// float or double outside the range of an integer type is undefined behaviour
// in C++ (UBSan: float-cast-overflow), and narrowing an integer silently
// wraps; both turn a hostile input into a wrong size or index. Every such
// conversion goes through ExactCast (nullopt when the value does not fit) or
// CheckedCast (a Status naming what was read, what was expected and what was
// found).
//
// "Fits" means exactly: a float converts to an integer type only when it is a
// whole number inside the type's range (not NaN, not infinite, no fraction),
// an integer converts when std::in_range says so, and a double converts to
// float when it is NaN, infinite, or finite within float's range (rounding to
// the nearest float, as IEEE 754 defines; a finite double beyond FLT_MAX is
// refused rather than silently made infinite).

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "runtime/base/status.h"
#include "runtime/base/strings.h"

namespace strata {

template <typename T>
concept CheckedNumber = (std::integral<T> && !std::same_as<T, bool>) || std::floating_point<T>;

// The value `v` as a To, or nullopt when it does not fit exactly (see above).
template <CheckedNumber To, CheckedNumber From>
[[nodiscard]] constexpr std::optional<To> ExactCast(From v) {
  if constexpr (std::integral<To> && std::integral<From>) {
    if (!std::in_range<To>(v)) return std::nullopt;
    return static_cast<To>(v);
  } else if constexpr (std::integral<To>) {  // floating point -> integer
    const long double x = static_cast<long double>(v);
    if (!(x == x) || x - x != 0) return std::nullopt;  // NaN or infinite (no <cmath> needed in constexpr)
    // Bounds as powers of two, which every floating type holds exactly:
    // [-2^digits, 2^digits) for signed, [0, 2^digits) for unsigned.
    constexpr int kDigits = std::numeric_limits<To>::digits;
    long double limit = 1;
    for (int i = 0; i < kDigits; ++i) limit *= 2;
    const long double lo = std::is_signed_v<To> ? -limit : 0;
    if (x < lo || x >= limit) return std::nullopt;
    const To t = static_cast<To>(x);  // in range: truncation is defined
    if (static_cast<long double>(t) != x) return std::nullopt;  // had a fraction
    return t;
  } else if constexpr (std::integral<From>) {  // integer -> floating point: always in range
    return static_cast<To>(v);
  } else {  // floating point -> floating point
    if constexpr (sizeof(To) < sizeof(From)) {
      if (v == v && v - v == 0 &&
          (v > static_cast<From>(std::numeric_limits<To>::max()) ||
           v < static_cast<From>(std::numeric_limits<To>::lowest())))
        return std::nullopt;
    }
    return static_cast<To>(v);
  }
}

// What ExactCast<To> accepts, for messages: "a whole number in [0, 4294967295]".
template <CheckedNumber To>
std::string CastRangeText() {
  if constexpr (std::integral<To>) {
    if constexpr (std::is_signed_v<To>)
      return StrFormat("a whole number in [%lld, %lld]", static_cast<long long>(std::numeric_limits<To>::min()),
                       static_cast<long long>(std::numeric_limits<To>::max()));
    else
      return StrFormat("a whole number in [0, %llu]", static_cast<unsigned long long>(std::numeric_limits<To>::max()));
  } else {
    return StrFormat("a number within +-%g", static_cast<double>(std::numeric_limits<To>::max()));
  }
}

// The value as text, whatever its type ("-3", "18446744073709551615", "6.2e+223", "nan").
template <CheckedNumber From>
std::string NumberText(From v) {
  if constexpr (std::floating_point<From>) return StrFormat("%.9g", static_cast<double>(v));
  else if constexpr (std::is_signed_v<From>) return StrFormat("%lld", static_cast<long long>(v));
  else return StrFormat("%llu", static_cast<unsigned long long>(v));
}

// ExactCast with an error: "<what>: expected a whole number in [0, 4294967295],
// found 6.2e+223". `what` names the value (key, element, field, option).
template <CheckedNumber To, CheckedNumber From>
[[nodiscard]] Result<To> CheckedCast(From v, std::string_view what,
                                     StatusCode code = StatusCode::kInvalidArgument) {
  if (std::optional<To> t = ExactCast<To>(v)) return *t;
  return Status(code, std::string(what) + ": expected " + CastRangeText<To>() + ", found " + NumberText(v));
}

}  // namespace strata
