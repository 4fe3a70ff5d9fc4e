#pragma once
// Matrix products on a device: which kernel of matmul.cu runs a product of a
// given type and column count, with what grid, after quantizing the
// activations where the type needs it. The GPU backend's ops and the
// kernel tests (tests/gpu_matmul_test.cc) call these.

#include <cstdint>

#include "runtime/base/status.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/kernel_table.h"
#include "runtime/quant/ggml_type.h"

namespace strata::gpu {

// What every launch needs: the device, the stream, the kernels.
struct Launcher {
  Device* device = nullptr;
  Stream stream = nullptr;
  const KernelTable* kernels = nullptr;
  // The tiled products of quantized types on tensor cores where the device
  // has them (DeviceInfo::int8_mma); false forces the portable kernel (the
  // device check compares the two).
  bool use_mma = true;

  uint32_t warp() const { return device->info().warp_size; }
  template <typename Args>
  Status operator()(Kernel k, Dim3 grid, Dim3 block, uint32_t dynamic_shared, const Args& args) const {
    return device->Launch(k, grid, block, dynamic_shared, stream, &args, sizeof(Args));
  }
};

// A weight matrix in device memory, or a tensor of experts (expert e's rows
// start at data + e * expert_stride).
struct DeviceMatrix {
  GgmlType type = GgmlType::kF32;
  DevicePtr data = 0;
  uint64_t row_bytes = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t expert_stride = 0;
};

// Columns up to which the matrix-vector kernels run (decode); more take the
// tiled kernels (prefill).
inline constexpr int64_t kMatVecMaxColumns = 8;
// Columns of one tile of the tiled kernels (kernels/matmul.cu kTileCols).
inline constexpr int64_t kTileColumns = 64;

// Bytes of quantized activations for n columns of `cols` values (XBlocks).
uint64_t QuantizedBytes(int64_t n, int64_t cols);
// Whether products with weights of this type quantize their activations.
bool QuantizesActivations(GgmlType type);
// How, for weights of this type (kernel_args.h ActQuant: llama.cpp's CPU
// vec_dot type, so the int8 sums are the ones it computes). REQUIRES:
// QuantizesActivations(type).
int32_t ActQuantFor(GgmlType type);

// xq = the XBlocks of rows (rows ? rows[r] : r) of x (n rows of cols
// floats), quantized as `mode` says (ActQuant; kActQ8_K needs cols % 256 == 0).
Status Quantize(const Launcher& L, DevicePtr x, DevicePtr rows, int64_t n, int64_t cols, DevicePtr xq, int32_t mode);

// One input (n rows of cols floats) for several products: For(w) gives it in
// the form w's kernels read (the floats, or XBlocks quantized as w's type
// asks), quantizing into `xq` (QuantizedBytes(n, cols)) only when the form
// changes. Products must be launched in the order For is asked (one stream).
class PreparedInput {
 public:
  PreparedInput(const Launcher& L, DevicePtr x, int64_t n, int64_t cols, DevicePtr xq)
      : L_(L), x_(x), n_(n), cols_(cols), xq_(xq) {}
  Result<DevicePtr> For(const DeviceMatrix& w);

 private:
  Launcher L_;
  DevicePtr x_;
  int64_t n_, cols_;
  DevicePtr xq_;
  int32_t mode_ = -1;  // what xq holds (-1: nothing yet)
};

// y[c * w.rows + r] = dot(row r of w, column c of x) for c < n. x: n x
// w.cols floats; xq: QuantizedBytes(n, w.cols) of scratch for the quantized
// types (0 for float types).
Status MatMul(const Launcher& L, const DeviceMatrix& w, DevicePtr x, int64_t n, DevicePtr y, DevicePtr xq);
// The same with activations already in the form the type reads (XBlocks for
// quantized types, floats otherwise): one quantization serves several
// products of the same input.
Status MatMulPrepared(const Launcher& L, const DeviceMatrix& w, DevicePtr x_prepared, int64_t n, DevicePtr y);

// The experts' products (MoE): output column p (of n_places) is expert
// place_expert[p] times activation column (place_xcol ? place_xcol[p] : p).
// With few tokens a matrix-vector launch per place; otherwise the tiled
// kernel over the expert tiles (tile_* and n_tiles from strata_moe_offsets;
// max_tiles bounds the grid).
struct ExpertPlaces {
  int64_t n_places = 0;
  DevicePtr place_expert = 0;
  DevicePtr place_xcol = 0;  // 0: column p
  bool per_place = true;     // matrix-vector per place (decode) or tiles
  DevicePtr tile_expert = 0, tile_col0 = 0, tile_ncols = 0, n_tiles = 0;
  int32_t max_tiles = 0;
};
Status ExpertMatMulPrepared(const Launcher& L, const DeviceMatrix& w, DevicePtr x_prepared, int64_t x_stride,
                            const ExpertPlaces& places, DevicePtr y);

}  // namespace strata::gpu
