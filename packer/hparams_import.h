#pragma once
// Reads an architecture's hyperparameters from GGUF metadata into the typed
// HParams, following the ArchSpec table: strict types, with provably safe
// normalizations (integer widths, exact float conversions, per-layer arrays
// that hold one value, documented defaults) applied and recorded, and
// everything else refused with the reason.

#include "packer/fixes.h"
#include "packer/gguf/gguf_file.h"
#include "packer/pack_options.h"
#include "runtime/arch/arch_spec.h"

namespace strata {

// `token_count` is the tokenizer's vocabulary size (the default n_vocab).
// Returns the hyperparameters; problems are collected in `log` (the caller
// checks log->refused()). A kInvalidArgument status means a bad --set.
Result<HParams> ImportHParams(const gguf::GgufModel& model, Arch arch, uint32_t token_count,
                              const PackOptions& options, FixLog* log);

}  // namespace strata
