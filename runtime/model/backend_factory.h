#pragma once
// Chooses and builds the matmul backend for a model.

#include <memory>

#include "runtime/model/backend.h"

namespace strata {

enum class BackendKind { kReference, kFast };

// threads: 0 = all cores.
Result<std::unique_ptr<MatMulBackend>> MakeBackend(const Model& model, BackendKind kind, int threads);

}  // namespace strata
