#include "runtime/gpu/driver_checks.h"

#include <cstdio>

namespace strata::gpu {

std::string ByteCount(uint64_t bytes) {
  char buf[48];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / static_cast<double>(1ull << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

Status CheckLaunch(std::string_view kernel, Dim3 grid, Dim3 block, uint32_t dynamic_shared, const void* args,
                   size_t args_bytes, size_t param_bytes, uint32_t max_threads, uint32_t max_shared) {
  // Strings are made on the error paths only: this runs at every launch.
  if (args == nullptr || args_bytes == 0)
    return InvalidArgument("launch of " + std::string(kernel) + " without its argument struct");
  if (param_bytes != 0 && param_bytes != args_bytes) {
    return InvalidArgument("launch of " + std::string(kernel) + ": its argument struct is " +
                           std::to_string(args_bytes) + " bytes, and the kernel in the device image takes " +
                           std::to_string(param_bytes) +
                           " (kernel_args.h changed since the image was compiled: rebuild it)");
  }
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > max_threads) {
    return InvalidArgument("launch of " + std::string(kernel) + ": grid " + std::to_string(grid.x) + "x" +
                           std::to_string(grid.y) + "x" + std::to_string(grid.z) + ", block " +
                           std::to_string(block.x) + "x" + std::to_string(block.y) + "x" + std::to_string(block.z) +
                           ": every dimension must be at least 1, and a block at most " + std::to_string(max_threads) +
                           " threads on this device");
  }
  if (dynamic_shared > max_shared) {
    return InvalidArgument("launch of " + std::string(kernel) + ": " + std::to_string(dynamic_shared) +
                           " bytes of dynamic shared memory; the kernel is allowed " + std::to_string(max_shared) +
                           " (SetMaxDynamicShared raises that, up to the device's opt-in limit)");
  }
  return Status::Ok();
}

}  // namespace strata::gpu
