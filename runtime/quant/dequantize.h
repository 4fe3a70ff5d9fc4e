#pragma once
// Reference dequantization: every ggml weight type to F32, one row at a time.
//
// This is the plain scalar path that every fast kernel is tested against. Its
// output is bit-identical to ggml's dequantize_row_* (ggml-quants.c): the same
// float operations in the same order (e.g. Q4_K computes d*sc, then that times
// q, then subtracts dmin*m), no fused multiply-add. docs/quant-types.md lists
// the types and formulas.
//
// Types without a dequantizer: Q8_1 (ggml defines no to_float for it), the
// integer types I8..I64, and F64. Q8_K has one (ggml's dequantize_row_q8_K),
// though it only ever holds activations.

#include <cstdint>
#include <span>

#include "runtime/base/status.h"
#include "runtime/quant/ggml_type.h"

namespace strata {

// True if DequantizeRow accepts this type.
bool HasDequantizer(GgmlType type);

// Dequantizes one row of dst.size() elements stored in `src`.
// Errors (nothing is written to dst, nothing outside src is read):
//   kUnsupported      the type has no dequantizer;
//   kInvalidArgument  dst.size() is not a whole number of blocks, or
//                     src.size() != RowBytes(type, dst.size()).
// A row may span several tensor rows (a whole tensor at once is fine: GGUF
// rows are contiguous).
Status DequantizeRow(GgmlType type, std::span<const uint8_t> src, std::span<float> dst);

// The unchecked form for internal callers that have validated sizes already.
// REQUIRES: HasDequantizer(type); n >= 0 and a multiple of the type's block
// size; src holds RowBytes(type, n) bytes (any alignment); dst holds n floats.
void DequantizeRowUnchecked(GgmlType type, const void* src, float* dst, int64_t n);

}  // namespace strata
