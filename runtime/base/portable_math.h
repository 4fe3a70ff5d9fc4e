#pragma once
// The float transcendental functions the model code computes with, giving
// the same bits on every system Strata builds for. The C libraries' float
// functions differ in their last bits (glibc's expf is not MinGW's), which
// made a pack's measured expert profile and probe, computed at pack time,
// differ between a Linux-built and a Windows-built strata-pack. Each of these
// evaluates in double and rounds once to float: the double functions of both
// C libraries are accurate to within an ulp of double, so the float result is
// the correctly rounded one on both (compared bit for bit over millions of
// inputs; tests/portable_math_test.cc keeps known values).

#include <cmath>

namespace strata {

inline float ExpF(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }
inline float Log1pF(float x) { return static_cast<float>(std::log1p(static_cast<double>(x))); }
inline float SinF(float x) { return static_cast<float>(std::sin(static_cast<double>(x))); }
inline float CosF(float x) { return static_cast<float>(std::cos(static_cast<double>(x))); }
inline float PowF(float x, float y) { return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y))); }

}  // namespace strata
