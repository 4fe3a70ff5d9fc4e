// A fake CUDA driver for tests: a shared library with the driver API's
// exports that runtime/gpu/cuda_driver.cc loads instead of libcuda.so.1
// (STRATA_CUDA_DRIVER=path). It implements the entry points Strata uses over
// host memory: an allocation is malloc'd and its address is the device
// pointer; copies and fills run at once with memcpy/memset; a module "has"
// every kernel (or those FAKE_CUDA_KERNELS lists), and a launch is recorded,
// argument bytes included, and runs nothing; events read a virtual clock that
// each operation advances by 1 ms; stream capture records operations into a
// graph that cuGraphLaunch replays. Configuration and failure injection:
// fake_cuda_control.h.
//
// It checks what a real driver checks where a loader bug would show: a
// current context on the calling thread, copies inside one allocation,
// launch shapes and shared memory limits, calls that thread-local stream
// capture forbids, and sticky errors.
//
// Builds (tests/fake_cuda/CMakeLists.txt): the full driver (cuGetProcAddress
// and cuGetProcAddress_v2, CUDA 13.0); FAKE_CUDA_LEGACY: only the first
// cuGetProcAddress, CUDA 11.8; FAKE_CUDA_ANCIENT: no cuGetProcAddress at all.
// Each is a .so on Linux and a DLL on Windows (run under Wine), so the
// loader's dlopen and LoadLibraryExW paths both run.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/gpu/cuda_driver_api.h"
#include "tests/fake_cuda/fake_cuda_control.h"

#if defined(_WIN32)
#define FAKE_EXPORT extern "C" __declspec(dllexport)
#else
#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace {

using namespace strata::gpu::cuda;  // NOLINT: the driver API's names

// --- configuration --------------------------------------------------------------

struct Injection {
  int nth = 0;
  CUresult error = CUDA_ERROR_INVALID_VALUE;
};

struct Settings {
  int devices = 1;
  int cc = 90;
#if defined(FAKE_CUDA_LEGACY)
  int version = 11080;
#else
  int version = 13000;
#endif
  uint64_t memory = 64ull << 20;
  bool all_kernels = true;
  std::set<std::string> kernels;
  std::map<std::string, size_t> params;
  std::set<std::string> hidden;
  std::map<std::string, Injection> failures;
};

std::vector<std::string> SplitList(const char* text) {
  std::vector<std::string> out;
  std::string item;
  for (const char* p = text; p != nullptr; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!item.empty()) out.push_back(item);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return out;
}

CUresult ErrorKind(const std::string& call, const std::string& kind) {
  if (kind.empty()) return call.rfind("cuMemAlloc", 0) == 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
  if (kind == "oom") return CUDA_ERROR_OUT_OF_MEMORY;
  if (kind == "illegal") return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (kind == "launch") return CUDA_ERROR_LAUNCH_FAILED;
  if (kind == "nobinary") return CUDA_ERROR_NO_BINARY_FOR_GPU;
  if (kind == "ptx") return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  if (kind == "nodevice") return CUDA_ERROR_NO_DEVICE;
  if (kind == "invalidated") return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (kind == "invalid") return CUDA_ERROR_INVALID_VALUE;
  return std::atoi(kind.c_str());
}

Settings ReadSettings() {
  Settings s;
  if (const char* v = std::getenv("FAKE_CUDA_DEVICES")) s.devices = std::atoi(v);
  if (const char* v = std::getenv("FAKE_CUDA_CC")) s.cc = std::atoi(v);
  if (const char* v = std::getenv("FAKE_CUDA_VERSION")) s.version = std::atoi(v);
  if (const char* v = std::getenv("FAKE_CUDA_MEMORY")) s.memory = std::strtoull(v, nullptr, 10);
  if (const char* v = std::getenv("FAKE_CUDA_KERNELS")) {
    s.all_kernels = false;
    for (const std::string& k : SplitList(v)) s.kernels.insert(k);
  }
  for (const std::string& p : SplitList(std::getenv("FAKE_CUDA_PARAMS"))) {
    const size_t colon = p.find(':');
    if (colon != std::string::npos) s.params[p.substr(0, colon)] = std::strtoull(p.c_str() + colon + 1, nullptr, 10);
  }
  for (const std::string& h : SplitList(std::getenv("FAKE_CUDA_HIDE"))) s.hidden.insert(h);
  for (const std::string& f : SplitList(std::getenv("FAKE_CUDA_FAIL"))) {
    const size_t a = f.find(':');
    if (a == std::string::npos) continue;
    const size_t b = f.find(':', a + 1);
    const std::string call = f.substr(0, a);
    Injection inj;
    inj.nth = std::atoi(f.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1).c_str());
    inj.error = ErrorKind(call, b == std::string::npos ? "" : f.substr(b + 1));
    s.failures[call] = inj;
  }
  return s;
}

// --- state -----------------------------------------------------------------------

struct Op;  // an operation a stream ran or a capture recorded

struct FakeContext {
  int retains = 0;
};
struct FakeFunction {
  std::string name;
#if defined(FAKE_GPU_HIP)
  int max_dynamic_shared = 64 << 10;  // AMD: all of the LDS, no opt-in
#else
  int max_dynamic_shared = 48 << 10;  // more needs cuFuncSetAttribute
#endif
};
struct FakeModule {
  std::map<std::string, std::unique_ptr<FakeFunction>> functions;
};
struct FakeStream {
  unsigned flags = 0;
  bool capturing = false;
  int mode = 0;
  bool invalidated = false;
  std::vector<std::shared_ptr<Op>> captured;
};
struct FakeEvent {
  bool recorded = false;
  double time_ms = 0;
};
struct FakeGraph {
  std::vector<std::shared_ptr<Op>> ops;
};

struct Op {
  bool is_launch = false;
  FakeCudaLaunch launch{};
  std::function<void()> run;  // copies, fills, event records
};

constexpr int kMaxDevices = 8;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kSharedPerBlock = 48 << 10;
constexpr int kSharedOptin = 227 << 10;

struct State {
  std::recursive_mutex mutex;
  bool initialized = false;
  Settings settings;
  std::map<std::string, int> calls;
  std::map<std::string, int> proc_versions;
  CUresult sticky = CUDA_SUCCESS;
  FakeContext contexts[kMaxDevices];
  std::map<uintptr_t, size_t> allocations;  // device: address -> bytes
  uint64_t used = 0;
  std::map<void*, size_t> host_allocations;
  std::vector<FakeCudaLaunch> launches;
  int last_capture_mode = -1;
  int last_stream_flags = -1;
  int last_max_dynamic_shared = -1;
  size_t loaded_image_size = 0;
  double clock_ms = 0;
};

State& S() {
  static State* state = new State();  // never destroyed: calls may come during exit
  return *state;
}

thread_local FakeContext* current_context = nullptr;
thread_local int capturing_on_thread = 0;  // streams this thread captures (thread-local mode)

// Every entry point starts here: counts the call, applies an injected
// failure, returns a sticky error, and checks cuInit and the context.
enum class Needs { kNothing, kInit, kContext };
CUresult Enter(const char* call, Needs needs) {
  State& s = S();
  if (s.sticky != CUDA_SUCCESS && needs != Needs::kNothing) return s.sticky;
  const int n = ++s.calls[call];
  if (auto it = s.settings.failures.find(call); it != s.settings.failures.end() && it->second.nth == n) {
    const CUresult e = it->second.error;
    if (e == CUDA_ERROR_ILLEGAL_ADDRESS || e == CUDA_ERROR_LAUNCH_FAILED) s.sticky = e;
    return e;
  }
  if (needs != Needs::kNothing && !s.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (needs == Needs::kContext && current_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}

#define FAKE_ENTER(needs)                                 \
  std::lock_guard<std::recursive_mutex> lock_(S().mutex); \
  if (const CUresult e_ = Enter(__func__, needs); e_ != CUDA_SUCCESS) return e_

std::map<void*, std::unique_ptr<FakeStream>>& Streams() {
  static auto* streams = new std::map<void*, std::unique_ptr<FakeStream>>();
  return *streams;
}
std::map<void*, std::unique_ptr<FakeEvent>>& Events() {
  static auto* events = new std::map<void*, std::unique_ptr<FakeEvent>>();
  return *events;
}
std::map<void*, std::unique_ptr<FakeModule>>& Modules() {
  static auto* modules = new std::map<void*, std::unique_ptr<FakeModule>>();
  return *modules;
}
std::map<void*, std::unique_ptr<FakeGraph>>& Graphs() {
  static auto* graphs = new std::map<void*, std::unique_ptr<FakeGraph>>();
  return *graphs;
}
std::map<void*, std::unique_ptr<FakeGraph>>& Execs() {
  static auto* execs = new std::map<void*, std::unique_ptr<FakeGraph>>();
  return *execs;
}

// A call that thread-local (or global) capture forbids on the capturing
// thread: it fails, and the capture is invalidated.
CUresult ForbiddenDuringCapture() {
  if (capturing_on_thread == 0) return CUDA_SUCCESS;
  for (auto& [key, stream] : Streams()) {
    if (stream->capturing) stream->invalidated = true;
  }
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

// The stream `s` names (nullptr: the legacy default stream), or nullptr with
// *bad set when it is not a stream of this driver.
FakeStream* FindStream(CUstream s, bool* bad) {
  *bad = false;
  if (s == nullptr) return nullptr;
  auto it = Streams().find(s);
  if (it == Streams().end()) {
    *bad = true;
    return nullptr;
  }
  return it->second.get();
}

void Execute(Op& op, bool from_graph) {
  S().clock_ms += 1.0;
  if (op.is_launch) {
    FakeCudaLaunch l = op.launch;
    l.from_graph = from_graph ? 1 : 0;
    S().launches.push_back(l);
  } else {
    op.run();
  }
}

// Runs `op` on stream `s`, or records it while `s` captures.
CUresult Submit(CUstream s, std::shared_ptr<Op> op) {
  bool bad = false;
  FakeStream* stream = FindStream(s, &bad);
  if (bad) return CUDA_ERROR_INVALID_HANDLE;
  if (stream != nullptr && stream->capturing) {
    stream->captured.push_back(std::move(op));
    return CUDA_SUCCESS;
  }
  Execute(*op, false);
  return CUDA_SUCCESS;
}

// True if [p, p + bytes) lies inside one device allocation.
bool InDeviceMemory(CUdeviceptr p, size_t bytes) {
  auto& allocs = S().allocations;
  auto it = allocs.upper_bound(static_cast<uintptr_t>(p));
  if (it == allocs.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

void FreeEverything() {
  State& s = S();
  for (auto& [p, bytes] : s.allocations) ::operator delete (reinterpret_cast<void*>(p), std::align_val_t{256});
  s.allocations.clear();
  s.used = 0;
  Streams().clear();
  Events().clear();
  Modules().clear();
  Graphs().clear();
  Execs().clear();
}

const std::map<CUresult, std::pair<const char*, const char*>>& ErrorTable() {
  static const auto* table = new std::map<CUresult, std::pair<const char*, const char*>>{
      {CUDA_SUCCESS, {"CUDA_SUCCESS", "no error"}},
      {CUDA_ERROR_INVALID_VALUE, {"CUDA_ERROR_INVALID_VALUE", "invalid argument"}},
      {CUDA_ERROR_OUT_OF_MEMORY, {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"}},
      {CUDA_ERROR_NOT_INITIALIZED, {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"}},
      {CUDA_ERROR_NO_DEVICE, {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"}},
      {CUDA_ERROR_INVALID_DEVICE, {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"}},
      {CUDA_ERROR_INVALID_IMAGE, {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"}},
      {CUDA_ERROR_INVALID_CONTEXT, {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"}},
      {CUDA_ERROR_NO_BINARY_FOR_GPU,
       {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"}},
      {CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
       {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."}},
      {CUDA_ERROR_INVALID_HANDLE, {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"}},
      {CUDA_ERROR_NOT_FOUND, {"CUDA_ERROR_NOT_FOUND", "named symbol not found"}},
      {CUDA_ERROR_ILLEGAL_ADDRESS, {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"}},
      {CUDA_ERROR_LAUNCH_FAILED, {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"}},
      {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
       {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"}},
      {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
       {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"}},
  };
  return *table;
}

}  // namespace

// --- the driver API ------------------------------------------------------------------

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** str) {
  auto it = ErrorTable().find(error);
  if (it == ErrorTable().end()) {
    *str = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *str = it->second.first;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult error, const char** str) {
  auto it = ErrorTable().find(error);
  if (it == ErrorTable().end()) {
    *str = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *str = it->second.second;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuInit(unsigned flags) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  State& s = S();
  s.settings = ReadSettings();
  s.calls.clear();
  s.sticky = CUDA_SUCCESS;
  s.launches.clear();
  s.last_capture_mode = -1;
  s.last_stream_flags = -1;
  s.last_max_dynamic_shared = -1;
  s.loaded_image_size = 0;
  if (const CUresult e = Enter(__func__, Needs::kNothing); e != CUDA_SUCCESS) return e;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  s.initialized = true;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int* version) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  // Works before cuInit, as the real one does; reads the setting itself.
  const char* v = std::getenv("FAKE_CUDA_VERSION");
  *version = v != nullptr ? std::atoi(v) : Settings().version;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  FAKE_ENTER(Needs::kInit);
  *count = S().settings.devices;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTER(Needs::kInit);
  if (ordinal < 0 || ordinal >= S().settings.devices || ordinal >= kMaxDevices) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  FAKE_ENTER(Needs::kInit);
  if (device < 0 || device >= S().settings.devices) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "Fake CUDA GPU %d", device);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  FAKE_ENTER(Needs::kInit);
  if (device < 0 || device >= S().settings.devices) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = kMaxThreadsPerBlock; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = kSharedPerBlock; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = S().settings.cc / 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = S().settings.cc % 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = kSharedOptin; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

FAKE_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  FAKE_ENTER(Needs::kInit);
  if (device < 0 || device >= S().settings.devices) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = S().settings.memory;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  FAKE_ENTER(Needs::kInit);
  if (device < 0 || device >= S().settings.devices || device >= kMaxDevices) return CUDA_ERROR_INVALID_DEVICE;
  ++S().contexts[device].retains;
  *ctx = reinterpret_cast<CUcontext>(&S().contexts[device]);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  // Works on a poisoned context: releasing is how a process gives it up.
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  ++S().calls[__func__];
  if (device < 0 || device >= kMaxDevices || S().contexts[device].retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  // The last release destroys the context and everything in it.
  if (--S().contexts[device].retains == 0) {
    FreeEverything();
    if (current_context == &S().contexts[device]) current_context = nullptr;
  }
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  FAKE_ENTER(Needs::kInit);
  current_context = reinterpret_cast<FakeContext*>(ctx);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  FAKE_ENTER(Needs::kContext);
  *free_bytes = S().settings.memory - S().used;
  *total_bytes = S().settings.memory;
  return CUDA_SUCCESS;
}

// The image's size from its own header, or 0 when it is not an image this
// fake's API takes: a CUDA fatbin (magic 0xBA55ED50, version (2 bytes),
// header size (2), then the size of what follows the header (8)), or, for the
// HIP fake, a clang offload bundle ("__CLANG_OFFLOAD_BUNDLE__", the entry
// count, then per entry its offset, size, triple length and triple).
static size_t ImageSize(const unsigned char* b) {
#if defined(FAKE_GPU_HIP)
  if (std::memcmp(b, "__CLANG_OFFLOAD_BUNDLE__", 24) != 0) return 0;
  uint64_t count = 0, end = 0, off = 32;
  std::memcpy(&count, b + 24, 8);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t entry[3];
    std::memcpy(entry, b + off, sizeof entry);
    if (entry[0] + entry[1] > end) end = entry[0] + entry[1];
    off += 24 + entry[2];
  }
  return end;
#else
  uint32_t magic = 0;
  std::memcpy(&magic, b, 4);
  if (magic != 0xBA55ED50u) return 0;
  uint16_t header = 0;
  uint64_t body = 0;
  std::memcpy(&header, b + 6, 2);
  std::memcpy(&body, b + 8, 8);
  return header + body;
#endif
}

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  FAKE_ENTER(Needs::kContext);
  const size_t size = ImageSize(static_cast<const unsigned char*>(image));
  if (size == 0) return CUDA_ERROR_INVALID_IMAGE;
  S().loaded_image_size = size;
  auto m = std::make_unique<FakeModule>();
  *module = reinterpret_cast<CUmodule>(m.get());
  Modules()[m.get()] = std::move(m);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleUnload(CUmodule module) {
  FAKE_ENTER(Needs::kContext);
  return Modules().erase(module) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  FAKE_ENTER(Needs::kContext);
  auto it = Modules().find(module);
  if (it == Modules().end()) return CUDA_ERROR_INVALID_HANDLE;
  const Settings& s = S().settings;
  if (!s.all_kernels && s.kernels.count(name) == 0) return CUDA_ERROR_NOT_FOUND;
  auto& f = it->second->functions[name];
  if (!f) {
    f = std::make_unique<FakeFunction>();
    f->name = name;
  }
  *function = reinterpret_cast<CUfunction>(f.get());
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncSetAttribute(CUfunction function, int attribute, int value) {
  FAKE_ENTER(Needs::kContext);
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (value < 0 || value > kSharedOptin) return CUDA_ERROR_INVALID_VALUE;
  reinterpret_cast<FakeFunction*>(function)->max_dynamic_shared = value;
  S().last_max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction function, size_t index, size_t* offset, size_t* size) {
  FAKE_ENTER(Needs::kContext);
  auto it = S().settings.params.find(reinterpret_cast<FakeFunction*>(function)->name);
  if (it == S().settings.params.end() || index != 0) return CUDA_ERROR_INVALID_VALUE;
  *offset = 0;
  *size = it->second;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
  FAKE_ENTER(Needs::kContext);
  const auto* fn = reinterpret_cast<const FakeFunction*>(f);
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return CUDA_ERROR_INVALID_VALUE;
  if (uint64_t{bx} * by * bz > kMaxThreadsPerBlock) return CUDA_ERROR_INVALID_VALUE;
  if (shared > static_cast<unsigned>(fn->max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
  if (extra != nullptr) return CUDA_ERROR_INVALID_VALUE;  // Strata passes kernelParams only
  auto op = std::make_shared<Op>();
  op->is_launch = true;
  FakeCudaLaunch& l = op->launch;
  std::snprintf(l.kernel, sizeof l.kernel, "%s", fn->name.c_str());
  l.grid[0] = gx;
  l.grid[1] = gy;
  l.grid[2] = gz;
  l.block[0] = bx;
  l.block[1] = by;
  l.block[2] = bz;
  l.shared_bytes = shared;
  l.stream = stream;
  // Like the driver, read the parameter's size from kernelParams[0] now: the
  // caller's struct need not outlive the call.
  if (auto it = S().settings.params.find(fn->name); it != S().settings.params.end()) {
    if (params == nullptr || params[0] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    l.args_bytes = it->second < sizeof l.args ? it->second : sizeof l.args;
    std::memcpy(l.args, params[0], l.args_bytes);
  }
  return Submit(stream, std::move(op));
}

FAKE_EXPORT CUresult cuMemAlloc(CUdeviceptr* ptr, size_t bytes) {
  FAKE_ENTER(Needs::kContext);
  if (const CUresult e = ForbiddenDuringCapture(); e != CUDA_SUCCESS) return e;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = S();
  if (bytes > s.settings.memory - s.used) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = ::operator new (bytes, std::align_val_t{256}, std::nothrow);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  s.allocations[reinterpret_cast<uintptr_t>(p)] = bytes;
  s.used += bytes;
  *ptr = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemFree(CUdeviceptr ptr) {
  FAKE_ENTER(Needs::kContext);
  if (const CUresult e = ForbiddenDuringCapture(); e != CUDA_SUCCESS) return e;
  auto it = S().allocations.find(static_cast<uintptr_t>(ptr));
  if (it == S().allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  S().used -= it->second;
  ::operator delete (reinterpret_cast<void*>(it->first), std::align_val_t{256});
  S().allocations.erase(it);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemHostAlloc(void** ptr, size_t bytes, unsigned flags) {
  FAKE_ENTER(Needs::kContext);
  if (const CUresult e = ForbiddenDuringCapture(); e != CUDA_SUCCESS) return e;
  if (bytes == 0 || (flags & ~0xFu) != 0) return CUDA_ERROR_INVALID_VALUE;
  *ptr = std::malloc(bytes);
  if (*ptr == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  S().host_allocations[*ptr] = bytes;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemFreeHost(void* ptr) {
  FAKE_ENTER(Needs::kContext);
  if (const CUresult e = ForbiddenDuringCapture(); e != CUDA_SUCCESS) return e;
  if (S().host_allocations.erase(ptr) != 1) return CUDA_ERROR_INVALID_VALUE;
  std::free(ptr);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  FAKE_ENTER(Needs::kContext);
  if (!InDeviceMemory(dst, bytes) || src == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto op = std::make_shared<Op>();
  op->run = [dst, src, bytes] { std::memcpy(reinterpret_cast<void*>(dst), src, bytes); };
  return Submit(stream, std::move(op));
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  FAKE_ENTER(Needs::kContext);
  if (!InDeviceMemory(src, bytes) || dst == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto op = std::make_shared<Op>();
  op->run = [dst, src, bytes] { std::memcpy(dst, reinterpret_cast<const void*>(src), bytes); };
  return Submit(stream, std::move(op));
}

FAKE_EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  FAKE_ENTER(Needs::kContext);
  if (!InDeviceMemory(dst, bytes) || !InDeviceMemory(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  auto op = std::make_shared<Op>();
  op->run = [dst, src, bytes] {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  };
  return Submit(stream, std::move(op));
}

FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
  FAKE_ENTER(Needs::kContext);
  if (!InDeviceMemory(dst, count)) return CUDA_ERROR_INVALID_VALUE;
  auto op = std::make_shared<Op>();
  op->run = [dst, value, count] { std::memset(reinterpret_cast<void*>(dst), value, count); };
  return Submit(stream, std::move(op));
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned flags) {
  FAKE_ENTER(Needs::kContext);
  auto s = std::make_unique<FakeStream>();
  s->flags = flags;
  S().last_stream_flags = static_cast<int>(flags);
  *stream = reinterpret_cast<CUstream>(s.get());
  Streams()[s.get()] = std::move(s);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamDestroy(CUstream stream) {
  FAKE_ENTER(Needs::kContext);
  auto it = Streams().find(stream);
  if (it == Streams().end()) return CUDA_ERROR_INVALID_HANDLE;
  if (it->second->capturing && it->second->mode != CU_STREAM_CAPTURE_MODE_RELAXED) --capturing_on_thread;
  Streams().erase(it);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  FAKE_ENTER(Needs::kContext);
  bool bad = false;
  FakeStream* s = FindStream(stream, &bad);
  if (bad) return CUDA_ERROR_INVALID_HANDLE;
  if (s != nullptr && s->capturing) {
    s->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return ForbiddenDuringCapture();
}

FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  FAKE_ENTER(Needs::kContext);
  if (Events().count(event) == 0 || flags != 0) return CUDA_ERROR_INVALID_HANDLE;
  bool bad = false;
  FindStream(stream, &bad);
  return bad ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;  // work runs at once: nothing to wait for
}

FAKE_EXPORT CUresult cuEventCreate(CUevent* event, unsigned flags) {
  FAKE_ENTER(Needs::kContext);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<FakeEvent>();
  *event = reinterpret_cast<CUevent>(e.get());
  Events()[e.get()] = std::move(e);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventDestroy(CUevent event) {
  FAKE_ENTER(Needs::kContext);
  return Events().erase(event) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  FAKE_ENTER(Needs::kContext);
  auto it = Events().find(event);
  if (it == Events().end()) return CUDA_ERROR_INVALID_HANDLE;
  FakeEvent* e = it->second.get();
  auto op = std::make_shared<Op>();
  op->run = [e] {
    e->recorded = true;
    e->time_ms = S().clock_ms;
  };
  return Submit(stream, std::move(op));
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent event) {
  FAKE_ENTER(Needs::kContext);
  if (const CUresult e = ForbiddenDuringCapture(); e != CUDA_SUCCESS) return e;
  return Events().count(event) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  FAKE_ENTER(Needs::kContext);
  auto a = Events().find(start), b = Events().find(end);
  if (a == Events().end() || b == Events().end()) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->second->recorded || !b->second->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *ms = static_cast<float>(b->second->time_ms - a->second->time_ms);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamBeginCapture(CUstream stream, int mode) {
  FAKE_ENTER(Needs::kContext);
  bool bad = false;
  FakeStream* s = FindStream(stream, &bad);
  if (bad) return CUDA_ERROR_INVALID_HANDLE;
  if (s == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
  if (s->capturing || mode < 0 || mode > 2) return CUDA_ERROR_INVALID_VALUE;
  s->capturing = true;
  s->mode = mode;
  s->invalidated = false;
  s->captured.clear();
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) ++capturing_on_thread;
  S().last_capture_mode = mode;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  FAKE_ENTER(Needs::kContext);
  bool bad = false;
  FakeStream* s = FindStream(stream, &bad);
  if (bad || s == nullptr || !s->capturing) return CUDA_ERROR_INVALID_VALUE;
  s->capturing = false;
  if (s->mode != CU_STREAM_CAPTURE_MODE_RELAXED) --capturing_on_thread;
  if (s->invalidated) {
    s->captured.clear();
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  auto g = std::make_unique<FakeGraph>();
  g->ops = std::move(s->captured);
  s->captured.clear();
  *graph = reinterpret_cast<CUgraph>(g.get());
  Graphs()[g.get()] = std::move(g);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  FAKE_ENTER(Needs::kContext);
  auto it = Graphs().find(graph);
  if (it == Graphs().end() || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<FakeGraph>(*it->second);
  *exec = reinterpret_cast<CUgraphExec>(e.get());
  Execs()[e.get()] = std::move(e);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  FAKE_ENTER(Needs::kContext);
  auto it = Execs().find(exec);
  if (it == Execs().end()) return CUDA_ERROR_INVALID_HANDLE;
  bool bad = false;
  FakeStream* s = FindStream(stream, &bad);
  if (bad || (s != nullptr && s->capturing)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& op : it->second->ops) Execute(*op, true);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  FAKE_ENTER(Needs::kContext);
  return Execs().erase(exec) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuGraphDestroy(CUgraph graph) {
  FAKE_ENTER(Needs::kContext);
  return Graphs().erase(graph) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// --- cuGetProcAddress ---------------------------------------------------------------

namespace {

struct Entry {
  const char* name;
  int since;  // the CUDA version whose ABI this entry has
  void* fn;
};

#define FAKE_ENTRY(name, since) \
  { #name, since, reinterpret_cast < void*>(&name) }
const std::vector<Entry>& Entries() {
  static const auto* entries = new std::vector<Entry>{
      FAKE_ENTRY(cuGetErrorName, 6000),
      FAKE_ENTRY(cuGetErrorString, 6000),
      FAKE_ENTRY(cuInit, 2000),
      FAKE_ENTRY(cuDriverGetVersion, 2020),
      FAKE_ENTRY(cuDeviceGetCount, 2000),
      FAKE_ENTRY(cuDeviceGet, 2000),
      FAKE_ENTRY(cuDeviceGetName, 2000),
      FAKE_ENTRY(cuDeviceGetAttribute, 2000),
      FAKE_ENTRY(cuDeviceTotalMem, 3020),
      FAKE_ENTRY(cuDevicePrimaryCtxRetain, 7000),
      FAKE_ENTRY(cuDevicePrimaryCtxRelease, 11000),
      FAKE_ENTRY(cuCtxSetCurrent, 4000),
      FAKE_ENTRY(cuMemGetInfo, 3020),
      FAKE_ENTRY(cuModuleLoadData, 2000),
      FAKE_ENTRY(cuModuleUnload, 2000),
      FAKE_ENTRY(cuModuleGetFunction, 2000),
      FAKE_ENTRY(cuFuncSetAttribute, 9000),
      FAKE_ENTRY(cuFuncGetParamInfo, 12040),
      FAKE_ENTRY(cuLaunchKernel, 4000),
      FAKE_ENTRY(cuMemAlloc, 3020),
      FAKE_ENTRY(cuMemFree, 3020),
      FAKE_ENTRY(cuMemHostAlloc, 2020),
      FAKE_ENTRY(cuMemFreeHost, 2000),
      FAKE_ENTRY(cuMemcpyHtoDAsync, 3020),
      FAKE_ENTRY(cuMemcpyDtoHAsync, 3020),
      FAKE_ENTRY(cuMemcpyDtoDAsync, 3020),
      FAKE_ENTRY(cuMemsetD8Async, 3020),
      FAKE_ENTRY(cuStreamCreate, 2000),
      FAKE_ENTRY(cuStreamDestroy, 4000),
      FAKE_ENTRY(cuStreamSynchronize, 2000),
      FAKE_ENTRY(cuStreamWaitEvent, 3020),
      FAKE_ENTRY(cuEventCreate, 2000),
      FAKE_ENTRY(cuEventDestroy, 4000),
      FAKE_ENTRY(cuEventRecord, 2000),
      FAKE_ENTRY(cuEventSynchronize, 2000),
      FAKE_ENTRY(cuEventElapsedTime, 2000),
      FAKE_ENTRY(cuStreamBeginCapture, 10010),
      FAKE_ENTRY(cuStreamEndCapture, 10000),
      FAKE_ENTRY(cuGraphInstantiateWithFlags, 11040),
      FAKE_ENTRY(cuGraphLaunch, 10000),
      FAKE_ENTRY(cuGraphExecDestroy, 10000),
      FAKE_ENTRY(cuGraphDestroy, 10000),
  };
  return *entries;
}
#undef FAKE_ENTRY

// cuda.h's rules: a version above the driver's is CUDA_ERROR_INVALID_VALUE;
// a symbol not found, or not available at that version, is CUDA_SUCCESS
// with a null pointer (and a status, for _v2).
[[maybe_unused]] CUresult GetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  *pfn = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (symbol == nullptr || flags > 2) return CUDA_ERROR_INVALID_VALUE;
  const char* v = std::getenv("FAKE_CUDA_VERSION");
  const int driver = v != nullptr ? std::atoi(v) : Settings().version;
  if (version > driver) return CUDA_ERROR_INVALID_VALUE;
  S().proc_versions[symbol] = version;
  const std::set<std::string> hidden = ReadSettings().hidden;
  for (const Entry& e : Entries()) {
    if (std::strcmp(e.name, symbol) != 0 || hidden.count(symbol) != 0) continue;
    if (version < e.since) {
      if (status != nullptr) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      return CUDA_SUCCESS;
    }
    *pfn = e.fn;
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  return CUDA_SUCCESS;
}

}  // namespace

#if !defined(FAKE_CUDA_ANCIENT)
// The first resolver (CUDA 11.3): four arguments. Drivers for 12.x still
// export it under this name.
FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags) {
  return GetProcAddress(symbol, pfn, version, flags, nullptr);
}
#endif
#if !defined(FAKE_CUDA_ANCIENT) && !defined(FAKE_CUDA_LEGACY)
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  return GetProcAddress(symbol, pfn, version, flags, status);
}
#endif

// --- what tests read back -------------------------------------------------------------

FAKE_EXPORT int fake_cuda_launch_count(void) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  return static_cast<int>(S().launches.size());
}

FAKE_EXPORT int fake_cuda_get_launch(int index, FakeCudaLaunch* out) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  if (index < 0 || static_cast<size_t>(index) >= S().launches.size()) return 0;
  *out = S().launches[static_cast<size_t>(index)];
  return 1;
}

FAKE_EXPORT int fake_cuda_live_allocations(void) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  return static_cast<int>(S().allocations.size());
}

FAKE_EXPORT int fake_cuda_live_host_allocations(void) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  return static_cast<int>(S().host_allocations.size());
}

FAKE_EXPORT int fake_cuda_primary_context_retains(void) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  return S().contexts[0].retains;
}

FAKE_EXPORT int fake_cuda_last_capture_mode(void) { return S().last_capture_mode; }
FAKE_EXPORT int fake_cuda_last_stream_flags(void) { return S().last_stream_flags; }

FAKE_EXPORT int fake_cuda_proc_version(const char* name) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  auto it = S().proc_versions.find(name);
  return it == S().proc_versions.end() ? -1 : it->second;
}

FAKE_EXPORT int fake_cuda_calls(const char* name) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  auto it = S().calls.find(name);
  return it == S().calls.end() ? 0 : it->second;
}

FAKE_EXPORT size_t fake_cuda_loaded_image_size(void) { return S().loaded_image_size; }
FAKE_EXPORT int fake_cuda_last_max_dynamic_shared(void) { return S().last_max_dynamic_shared; }
