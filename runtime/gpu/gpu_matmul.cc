#include "runtime/gpu/gpu_matmul.h"

#include "runtime/base/strings.h"
#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/kernels/weight_types.h"
#include "runtime/kernels/activation.h"

namespace strata::gpu {
namespace {

constexpr uint32_t kTileThreads = 256;  // kernels/matmul.cu
constexpr int64_t kTileRows = 64;
constexpr uint32_t kQuantizeThreads = 128;  // 4 blocks of 32 values per thread block

template <typename T>
T* Ptr(DevicePtr p) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(p));
}

uint32_t Blocks(int64_t n, int64_t per) { return static_cast<uint32_t>((n + per - 1) / per); }

Status CheckMatrix(const DeviceMatrix& w) {
  if (!KernelTable::CoversType(w.type))
    return Unsupported(StrFormat("no GPU kernel multiplies %s weights", std::string(TypeName(w.type)).c_str()));
  if (QuantizesActivations(w.type) && w.cols % 32 != 0)
    return Internal(StrFormat("a %s matrix of %lld columns (not whole blocks of 32)", std::string(TypeName(w.type)).c_str(),
                              static_cast<long long>(w.cols)));
  if (w.rows > INT32_MAX || w.cols > INT32_MAX)
    return Unsupported(StrFormat("a matrix of %lld x %lld is beyond the GPU kernels' 32-bit indexes",
                                 static_cast<long long>(w.rows), static_cast<long long>(w.cols)));
  return Status::Ok();
}

MatMulArgs BaseArgs(const DeviceMatrix& w, DevicePtr x, int64_t x_stride, DevicePtr y) {
  MatMulArgs a{};
  a.w = Ptr<const uint8_t>(w.data);
  a.row_bytes = w.row_bytes;
  a.expert_stride = w.expert_stride;
  a.rows = static_cast<int32_t>(w.rows);
  a.cols = static_cast<int32_t>(w.cols);
  a.x = Ptr<const void>(x);
  a.x_stride = x_stride;
  a.y = Ptr<float>(y);
  a.y_stride = w.rows;
  return a;
}

int64_t XStride(const DeviceMatrix& w) { return QuantizesActivations(w.type) ? w.cols / 32 : w.cols; }

// The tiled kernel for the type: on tensor cores where the device has them.
Kernel Tiled(const Launcher& L, GgmlType type) {
  const size_t t = static_cast<size_t>(type);
  return L.use_mma && L.device->info().int8_mma && QuantizesActivations(type) ? L.kernels->mmq_mma[t] : L.kernels->mmq[t];
}

}  // namespace

uint64_t QuantizedBytes(int64_t n, int64_t cols) {
  return static_cast<uint64_t>(n) * static_cast<uint64_t>(cols / 32) * sizeof(XBlock);
}

bool QuantizesActivations(GgmlType type) { return IsQuantized(static_cast<int>(type)); }

int32_t ActQuantFor(GgmlType type) {
  // The fast CPU path's choice (VecDotFormat), so the two quantize alike.
  switch (VecDotFormat(type)) {
    case ActFormat::kQ8_0: return kActQ8_0;
    case ActFormat::kQ8_1: return kActQ8_1;
    default: return kActQ8_K;
  }
}

Status Quantize(const Launcher& L, DevicePtr x, DevicePtr rows, int64_t n, int64_t cols, DevicePtr xq, int32_t mode) {
  if (n == 0) return Status::Ok();
  QuantizeArgs a{};
  a.x = Ptr<const float>(x);
  a.q = Ptr<XBlock>(xq);
  a.rows = Ptr<const int32_t>(rows);
  a.n = static_cast<int32_t>(n);
  a.cols = static_cast<int32_t>(cols);
  a.mode = mode;
  if (mode == kActQ8_K) {
    if (cols % 256 != 0) return Internal("Q8_K activations of a row that is not whole 256s");
    return L(L.kernels->quantize_q8k, Dim3{static_cast<uint32_t>(n), static_cast<uint32_t>(cols / 256), 1},
             Dim3{256, 1, 1}, 0, a);
  }
  const Dim3 grid{static_cast<uint32_t>(n), Blocks(cols / 32, kQuantizeThreads / 32), 1};
  return L(L.kernels->quantize, grid, Dim3{kQuantizeThreads, 1, 1}, 0, a);
}

Result<DevicePtr> PreparedInput::For(const DeviceMatrix& w) {
  if (!QuantizesActivations(w.type)) return x_;
  const int32_t mode = ActQuantFor(w.type);
  if (mode != mode_) {
    STRATA_RETURN_IF_ERROR(Quantize(L_, x_, 0, n_, cols_, xq_, mode));
    mode_ = mode;
  }
  return xq_;
}

Status MatMulPrepared(const Launcher& L, const DeviceMatrix& w, DevicePtr x_prepared, int64_t n, DevicePtr y) {
  STRATA_RETURN_IF_ERROR(CheckMatrix(w));
  if (n == 0) return Status::Ok();
  MatMulArgs a = BaseArgs(w, x_prepared, XStride(w), y);
  a.n = static_cast<int32_t>(n);
  const size_t t = static_cast<size_t>(w.type);
  if (n <= kMatVecMaxColumns) {
    const uint32_t warps = 4;
    const Kernel k = n == 1 ? L.kernels->mmv1[t] : L.kernels->mmv8[t];
    return L(k, Dim3{Blocks(w.rows, warps), 1, 1}, Dim3{warps * L.warp(), 1, 1}, 0, a);
  }
  return L(Tiled(L, w.type), Dim3{Blocks(w.rows, kTileRows), Blocks(n, kTileColumns), 1}, Dim3{kTileThreads, 1, 1}, 0,
           a);
}

Status MatMul(const Launcher& L, const DeviceMatrix& w, DevicePtr x, int64_t n, DevicePtr y, DevicePtr xq) {
  if (!QuantizesActivations(w.type)) return MatMulPrepared(L, w, x, n, y);
  STRATA_RETURN_IF_ERROR(CheckMatrix(w));
  STRATA_RETURN_IF_ERROR(Quantize(L, x, 0, n, w.cols, xq, ActQuantFor(w.type)));
  return MatMulPrepared(L, w, xq, n, y);
}

Status ExpertMatMulPrepared(const Launcher& L, const DeviceMatrix& w, DevicePtr x_prepared, int64_t x_stride,
                            const ExpertPlaces& p, DevicePtr y) {
  STRATA_RETURN_IF_ERROR(CheckMatrix(w));
  if (p.n_places == 0) return Status::Ok();
  MatMulArgs a = BaseArgs(w, x_prepared, x_stride, y);
  a.n = static_cast<int32_t>(p.n_places);
  a.group_xcol = Ptr<const int32_t>(p.place_xcol);
  const size_t t = static_cast<size_t>(w.type);
  if (p.per_place) {
    if (p.n_places > 65535) return Internal("ExpertMatMul: more places than a grid dimension holds");
    a.group_expert = Ptr<const int32_t>(p.place_expert);
    const uint32_t warps = 4;
    return L(L.kernels->mmv1[t], Dim3{Blocks(w.rows, warps), static_cast<uint32_t>(p.n_places), 1},
             Dim3{warps * L.warp(), 1, 1}, 0, a);
  }
  a.tile_expert = Ptr<const int32_t>(p.tile_expert);
  a.tile_col0 = Ptr<const int32_t>(p.tile_col0);
  a.tile_ncols = Ptr<const int32_t>(p.tile_ncols);
  a.n_tiles = Ptr<const int32_t>(p.n_tiles);
  return L(Tiled(L, w.type), Dim3{Blocks(w.rows, kTileRows), static_cast<uint32_t>(p.max_tiles), 1},
           Dim3{kTileThreads, 1, 1}, 0, a);
}

}  // namespace strata::gpu
