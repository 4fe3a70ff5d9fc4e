#pragma once
// The fake drivers' read-back functions (fake_cuda_control.h), found in the
// library the loader opened: cuda_device_test and hip_device_test share this.

#include <string>
#include <vector>

#include "runtime/gpu/shared_library.h"
#include "tests/fake_cuda/fake_cuda_control.h"

namespace strata::gpu {

struct FakeReader {
  int (*launch_count)() = nullptr;
  int (*get_launch)(int, FakeCudaLaunch*) = nullptr;
  int (*live_allocations)() = nullptr;
  int (*live_host_allocations)() = nullptr;
  int (*primary_context_retains)() = nullptr;
  int (*last_capture_mode)() = nullptr;
  int (*last_stream_flags)() = nullptr;
  int (*proc_version)(const char*) = nullptr;
  int (*calls)(const char*) = nullptr;
  size_t (*loaded_image_size)() = nullptr;
  int (*last_max_dynamic_shared)() = nullptr;

  // Finds every function in the library at `path` (the same instance the
  // loader opened: libraries stay loaded). Errors name what is missing.
  Status Open(const std::string& path) {
    STRATA_ASSIGN_OR_RETURN(const SharedLibrary* lib, SharedLibrary::Open(path));
    std::string missing;
    const auto find = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lib->Symbol(name));
      if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    find(launch_count, "fake_cuda_launch_count");
    find(get_launch, "fake_cuda_get_launch");
    find(live_allocations, "fake_cuda_live_allocations");
    find(live_host_allocations, "fake_cuda_live_host_allocations");
    find(primary_context_retains, "fake_cuda_primary_context_retains");
    find(last_capture_mode, "fake_cuda_last_capture_mode");
    find(last_stream_flags, "fake_cuda_last_stream_flags");
    find(proc_version, "fake_cuda_proc_version");
    find(calls, "fake_cuda_calls");
    find(loaded_image_size, "fake_cuda_loaded_image_size");
    find(last_max_dynamic_shared, "fake_cuda_last_max_dynamic_shared");
    if (!missing.empty()) return NotFound(path + " does not export " + missing);
    return Status::Ok();
  }

  // Every launch recorded since the last cuInit.
  std::vector<FakeCudaLaunch> Launches() const {
    std::vector<FakeCudaLaunch> out(static_cast<size_t>(launch_count()));
    for (size_t i = 0; i < out.size(); ++i) get_launch(static_cast<int>(i), &out[i]);
    return out;
  }
};

}  // namespace strata::gpu
