#include "runtime/model/backend_factory.h"

namespace strata {

Result<std::unique_ptr<MatMulBackend>> MakeBackend(const Model&, BackendKind kind, int) {
  if (kind == BackendKind::kReference) return std::unique_ptr<MatMulBackend>(new ReferenceBackend());
  return Unsupported("the fast CPU backend is not built yet; run with --reference");
}

}  // namespace strata
