#include <vector>

#include "runtime/model/backend.h"
#include "runtime/quant/dequantize.h"

namespace strata {

bool ReferenceBackend::CanMultiply(GgmlType type) const { return HasDequantizer(type); }

void ReferenceBackend::MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) {
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    DequantizeRowUnchecked(w.type, w.data + r * w.row_bytes, row.data(), w.cols);
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      float sum = 0.0f;
      for (int64_t k = 0; k < w.cols; ++k) sum += row[k] * xt[k];
      y[t * w.rows + r] = sum;
    }
  }
}

}  // namespace strata
