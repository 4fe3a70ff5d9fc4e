#pragma once
// ExpertSlots: the device tier's memory (docs/experts-runtime.md). A fixed
// number of expert slots, allocated once at start in a buffer of the backend
// that holds the tier; the tiered executor uploads an expert's three
// matrices (gate, up, down) into a slot (Backend::Upload) and runs the
// expert's SwiGLU from it (Backend::SlotSwiGlu). There is one device
// interface, Backend: a device backend holds the tier in its own memory and
// runs it with its own kernels; `--expert-device cpu` gives the tier a CPU
// backend of its own (host RAM standing in for a device: the simulated
// device), so the tiering is built and tested where there is no GPU, and a
// run from a slot computes exactly what the host tier computes from the pack
// (same kernels, same ISA), which the tests check bit for bit.
//
// Slot layout: every slot has room for the largest expert of any layer (the
// three matrices at 64-byte-aligned offsets), and each matrix is followed by
// kSlotPadding zero bytes: a SIMD kernel may read up to 64 bytes past a row
// (docs/kernels.md, memory contract), so a slot must give it the same slack a
// pack blob has (seeds/004: a read past an expert buffer).

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/model/backend.h"
#include "runtime/model/model.h"

namespace strata {

// An expert's three matrices as the host holds them (views into the pack).
struct ExpertWeights {
  WeightMatrix gate, up, down;
  ExpertExtras extras;  // its biases and activation (gpt-oss)
  uint64_t bytes() const {
    return gate.row_bytes * static_cast<uint64_t>(gate.rows) + up.row_bytes * static_cast<uint64_t>(up.rows) +
           down.row_bytes * static_cast<uint64_t>(down.rows);
  }
};

// The matrices of (layer, expert): its decode copies when `decode_copies` and
// the pack has them, else the native blobs. Errors: not an expert of the model.
Result<ExpertWeights> HostExpertWeights(const Model& model, int32_t layer, uint32_t expert, bool decode_copies);

inline constexpr uint64_t kSlotPadding = kMatrixPadding;

struct SlotLayout {
  uint64_t offset[3] = {0, 0, 0};  // gate, up, down
  uint64_t capacity[3] = {0, 0, 0};
  uint64_t bytes = 0;  // one slot, a multiple of 64
};
// The layout that fits every routed expert of the model (the largest of each
// matrix over the layers), as HostExpertWeights(decode_copies) gives them.
SlotLayout ExpertSlotLayout(const Model& model, bool decode_copies);

// The device that holds the device tier.
struct TierDevice {
  Backend* backend = nullptr;  // its memory holds the slots, its SlotSwiGlu runs them; null: no device tier
  std::string name;            // "cpu (simulated device tier, fast (avx512, 2 threads))"
  MemoryPlace place = MemoryPlace::Device(0);  // where the slots are: the plan's device lines
  bool host_ram = false;       // that device's memory is host RAM (the simulated device)
};

class ExpertSlots {
 public:
  // Bytes of `slots` slots: the plan's "expert slots" line.
  static uint64_t SlotBytes(int32_t slots, const SlotLayout& layout);
  // What running experts from the slots takes on `backend` for up to
  // max_rows rows: its matrix engine's scratch for the largest expert matrix
  // (native or decode copy) and the SwiGLU's gate and up outputs: the plan's
  // "device tier scratch" line.
  static uint64_t ScratchBytes(const Backend& backend, const Model& model, int64_t max_rows);

  // Allocates `slots` zeroed slots and the scratch for up to max_rows rows
  // per Run on device.backend, once. `device.backend` must outlive the slots.
  // Errors: kResourceExhausted saying what and how much.
  static Result<ExpertSlots> Create(const TierDevice& device, const Model& model, int32_t slots,
                                    const SlotLayout& layout, int64_t max_rows);

  // Copies an expert's matrices into `slot`, replacing what it held; until
  // it succeeds the slot holds nothing that can run. Errors: no such slot, a
  // matrix larger than its place or of a type the device has no kernel for,
  // the copy failed.
  Status Upload(int32_t slot, const ExpertWeights& w);
  // y[m x n_embd] = down(silu(gate x) * up x) from the slot's matrices, for
  // m <= max_rows rows of x (host memory). Errors: a slot that holds no
  // expert, m too large.
  Status Run(int32_t slot, const float* x, int64_t m, float* y);

  int32_t size() const { return static_cast<int32_t>(held_.size()); }
  // For a backend that runs experts from the slots itself (ExpertSplit):
  // the buffer, one slot's bytes, and what slot s holds (offsets within the
  // buffer; nothing valid unless it holds an expert).
  const BackendBuffer& buffer() const { return slots_; }
  uint64_t slot_bytes() const { return layout_.bytes; }
  const SwiGluMatrices& matrices(int32_t slot) const { return held_[static_cast<size_t>(slot)].m; }
  bool holds(int32_t slot) const { return slot >= 0 && slot < size() && held_[static_cast<size_t>(slot)].full; }

 private:
  ExpertSlots(const TierDevice& device, const SlotLayout& layout, int64_t max_rows)
      : backend_(device.backend), name_(device.name), layout_(layout), max_rows_(max_rows) {}
  struct Held {
    SwiGluMatrices m;
    bool full = false;
  };
  Backend* backend_;
  std::string name_;
  SlotLayout layout_;
  int64_t max_rows_;
  BackendBuffer slots_;
  BackendBuffer scratch_;  // SwiGLU's gate and up outputs
  std::vector<Held> held_;
};

}  // namespace strata
