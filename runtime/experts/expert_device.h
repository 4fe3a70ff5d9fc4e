#pragma once
// ExpertDevice: the device tier's backend. A device holds a fixed number of
// expert slots, allocated once at start; the tiered executor uploads an
// expert's three matrices (gate, up, down) into a slot and runs the expert's
// SwiGLU from it. A GPU backend implements this interface (slots in VRAM,
// uploads through pinned staging buffers, its own kernels); CpuExpertDevice
// (cpu_expert_device.h) implements it with host buffers and a FastBackend, so
// the tiering is built and tested where there is no GPU.
//
// Slot layout: every slot has room for the largest expert of any layer (the
// three matrices at 64-byte-aligned offsets), and each matrix is followed by
// kSlotPadding zero bytes: a SIMD kernel may read up to 64 bytes past a row
// (docs/kernels.md, memory contract), so a slot must give it the same slack a
// pack blob has (seeds/004: a read past an expert buffer).

#include <cstdint>
#include <string>

#include "runtime/base/status.h"
#include "runtime/model/model.h"

namespace strata {

// An expert's three matrices as the host holds them (views into the pack).
struct ExpertWeights {
  WeightMatrix gate, up, down;
  uint64_t bytes() const {
    return gate.row_bytes * static_cast<uint64_t>(gate.rows) + up.row_bytes * static_cast<uint64_t>(up.rows) +
           down.row_bytes * static_cast<uint64_t>(down.rows);
  }
};

// The matrices of (layer, expert): its decode copies when `decode_copies` and
// the pack has them, else the native blobs. Errors: not an expert of the model.
Result<ExpertWeights> HostExpertWeights(const Model& model, int32_t layer, uint32_t expert, bool decode_copies);

inline constexpr uint64_t kSlotPadding = 64;

struct SlotLayout {
  uint64_t offset[3] = {0, 0, 0};  // gate, up, down
  uint64_t capacity[3] = {0, 0, 0};
  uint64_t bytes = 0;  // one slot, a multiple of 64
};
// The layout that fits every routed expert of the model (the largest of each
// matrix over the layers), as HostExpertWeights(decode_copies) gives them.
SlotLayout ExpertSlotLayout(const Model& model, bool decode_copies);

// Where a device's slot memory lives, for the memory plan.
enum class DeviceMemory : uint8_t { kHostRam, kDeviceRam };

class ExpertDevice {
 public:
  virtual ~ExpertDevice() = default;
  virtual std::string name() const = 0;  // "cpu (simulated device tier, fast (avx2, 1 thread))"
  virtual DeviceMemory memory() const = 0;
  // Memory the device can give its slots and scratch, 0 if unknown.
  virtual uint64_t capacity_bytes() const = 0;
  // Whether the device has a kernel for matrices of this type.
  virtual bool CanRun(GgmlType type) const = 0;

  // Bytes AllocateSlots(slots, layout, max_rows) takes on the device
  // (slots and the device's scratch) and host staging buffers it uses for
  // uploads: the memory plan's lines.
  virtual uint64_t SlotBytes(int32_t slots, const SlotLayout& layout) const = 0;
  virtual uint64_t ScratchBytes(const Model& model, const SlotLayout& layout, int64_t max_rows) const = 0;
  virtual uint64_t StagingBytes(const SlotLayout& layout) const = 0;

  // Allocates every slot and the scratch for up to max_rows rows per Run,
  // once. Errors: kResourceExhausted saying what and how much.
  virtual Status AllocateSlots(const Model& model, int32_t slots, const SlotLayout& layout, int64_t max_rows) = 0;
  // Copies an expert's matrices into `slot`, replacing what it held.
  // Errors: the slot or the expert does not fit, the copy failed.
  virtual Status Upload(int32_t slot, const ExpertWeights& w) = 0;
  // y[m x n_embd] = down(silu(gate x) * up x) from the slot's matrices, for
  // m <= max_rows rows of x (host memory). Errors: an empty slot, m too large.
  virtual Status Run(int32_t slot, const float* x, int64_t m, float* y) = 0;
};

}  // namespace strata
