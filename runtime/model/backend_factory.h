#pragma once
// Chooses and builds the matmul backend for a model.

#include <memory>
#include <string_view>

#include "runtime/model/backend.h"

namespace strata {

enum class BackendKind { kReference, kFast };

// threads: 0 = all cores.
Result<std::unique_ptr<MatMulBackend>> MakeBackend(const Model& model, BackendKind kind, int threads);

// --decode-copies: points the model at its Q8_0 decode copies as `policy`
// ("auto", "native", "copies") says for a backend of `kind`, before that
// backend is made (its notes then describe the bytes that run). The
// reference backend computes every type the same way, so "auto" keeps the
// native bytes there. Returns how many tensors now read their copy.
Result<size_t> ApplyDecodeCopies(Model& model, std::string_view policy, BackendKind kind);

}  // namespace strata
