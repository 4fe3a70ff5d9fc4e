#pragma once
// Random but valid ggml blocks of any type, for tests, benchmarks and
// synthetic models. Test-only (strata_testing).

#include <cstdint>
#include <random>

#include "runtime/quant/ggml_type.h"

namespace strata::testing {

// Writes n_blocks blocks of `type` to `out` (n_blocks * block_bytes bytes, any
// alignment). Quant bits, grid indices and signs are random; scale fields are
// set so that the dequantized values have an RMS of roughly `scale` (within a
// factor of about 2) and are finite. Float types get Gaussian values with
// standard deviation `scale`; integer types get random bytes. Deterministic for
// a given rng state.
void FillRandomBlocks(GgmlType type, uint64_t n_blocks, std::mt19937_64& rng, uint8_t* out, float scale = 0.02f);

}  // namespace strata::testing
