#pragma once
// Chooses and builds the backend for a model: the CPU backend over the fast
// (SIMD, threads) or the reference matrix engine, or the sim backend over
// the fast engine (sim_backend.h).

#include <memory>
#include <string_view>

#include "runtime/base/status.h"

#include "runtime/model/backend.h"

namespace strata {

enum class BackendKind { kReference, kFast, kSim };
std::string_view BackendKindName(BackendKind k);  // "reference", "cpu", "sim"
// "cpu", "reference", "sim". Errors: anything else, naming the choices.
Result<BackendKind> ParseBackendKind(std::string_view name);

// threads: 0 = all cores. The backend refuses, naming it, a matrix it cannot
// multiply, and holds the model's weights (Backend::Bind) when it returns.
Result<std::unique_ptr<CpuBackend>> MakeBackend(const Model& model, BackendKind kind, int threads);
// The sim backend over `engine` (a fast or reference CPU backend), bound to `model`.
Result<std::unique_ptr<CpuBackend>> MakeSimBackend(const Model& model, std::unique_ptr<CpuBackend> engine);

// --decode-copies: points the model at its Q8_0 decode copies as `policy`
// ("auto", "native", "copies") says for a backend of `kind`, before that
// backend is made (its notes then describe the bytes that run). The
// reference backend computes every type the same way, so "auto" keeps the
// native bytes there. Returns how many tensors now read their copy.
Result<size_t> ApplyDecodeCopies(Model& model, std::string_view policy, BackendKind kind);

}  // namespace strata
