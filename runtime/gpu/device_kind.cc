#include "runtime/gpu/device.h"

namespace strata::gpu {

std::string_view DeviceKindName(DeviceKind k) {
  switch (k) {
    case DeviceKind::kCuda: return "cuda";
    case DeviceKind::kHip: return "hip";
    case DeviceKind::kSoftware: return "software-gpu";
  }
  return "?";
}

}  // namespace strata::gpu
