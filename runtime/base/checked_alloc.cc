#include "runtime/base/checked_alloc.h"

#include <cinttypes>
#include <utility>

namespace strata {

Status AllocationFailed(std::string_view what, uint64_t bytes, bool injected) {
  return ResourceExhausted(StrFormat("cannot allocate %.*s: %" PRIu64 " bytes (%s) asked%s",
                                     static_cast<int>(what.size()), what.data(), bytes, HumanBytes(bytes).c_str(),
                                     injected ? ": injected fault" : ""));
}

AlignedBuffer::~AlignedBuffer() {
  if (data_) ::operator delete(data_, std::align_val_t(kBufferAlignment));
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) ::operator delete(data_, std::align_val_t(kBufferAlignment));
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

Result<AlignedBuffer> AlignedBuffer::Allocate(uint64_t bytes, std::string_view what, FaultSite site) {
  AlignedBuffer b;
  if (bytes == 0) return b;
  if (ShouldInjectFault(site)) return AllocationFailed(what, bytes, true);
  if (bytes > static_cast<uint64_t>(SIZE_MAX) - kBufferAlignment) return AllocationFailed(what, bytes);
  void* p = ::operator new(static_cast<size_t>(bytes), std::align_val_t(kBufferAlignment), std::nothrow);
  if (!p) return AllocationFailed(what, bytes);
  b.data_ = static_cast<uint8_t*>(p);
  b.size_ = bytes;
  return b;
}

}  // namespace strata
