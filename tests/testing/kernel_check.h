#pragma once
// Helpers for the kernel tests: random matrices and activations, activations
// decoded back to floats, and the error bound every kernel comparison uses.
//
// The bound. Two ways of computing the same dot product from the same
// integers differ only by float rounding. Each rounds once per accumulation
// step (at most one per block, plus a few scale products and a reduction of
// 8 lanes), every step on a partial sum no larger than
//   S = sum_i (|w_i| + m_i) * |a_i|,
// where w_i is the dequantized weight, a_i the dequantized activation and m_i
// the largest |w| in element i's weight block: the extra m_i covers terms a
// kernel computes separately and that cancel in w_i (Q4_K's min, Q6_K's -32).
// So the tests allow
//   |x - y| <= 8 * eps * (steps + 8) * S,   eps = 2^-23, steps = blocks in the row
// (for F32/F16/BF16 weights, steps = elements / 8). A wrong scale, code or
// sign in one sub-block of a row misses by ~S / sub-blocks, far above it.

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/kernels/activation.h"
#include "runtime/quant/ggml_type.h"

namespace strata::testing {

// Rows of random valid blocks (FillRandomBlocks), `rows` x RowBytes(type, k).
std::vector<uint8_t> RandomMatrix(GgmlType type, int64_t rows, int64_t k, std::mt19937_64& rng);
// n x k activations: Gaussian with a few larger outliers per row, as
// transformer activations have.
std::vector<float> RandomActivations(int64_t n, int64_t k, std::mt19937_64& rng);

// One activation row in `format` back to floats (Q8 blocks: d * q).
std::vector<float> DecodeActivationRow(ActFormat format, const uint8_t* row, int64_t k);
// One weight row dequantized by the reference dequantizer.
std::vector<float> DequantizeWeightRow(GgmlType type, const uint8_t* row, int64_t k);

// S above, and the allowed difference for one dot product of weight row w
// (dequantized) with activation row a (decoded).
double ErrorScale(GgmlType type, const std::vector<float>& w, const std::vector<float>& a);
double AllowedError(GgmlType type, int64_t k, double error_scale);
// sum w_i * a_i in double.
double ExactDot(const std::vector<float>& w, const std::vector<float>& a);

}  // namespace strata::testing
