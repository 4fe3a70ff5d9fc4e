#include "runtime/gpu/software/kernel_registry.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace strata::sgpu {
namespace {

struct Registry {
  std::mutex mu;  // registration happens before main, lookups after; cheap insurance
  std::map<std::pair<std::string, uint32_t>, std::unique_ptr<RegisteredKernel>> kernels;
};

// A function-local static: registrars in other translation units run during
// static initialization, in an order C++ does not fix.
Registry& TheRegistry() {
  static Registry* r = new Registry();  // never destroyed: lookups may come from static destructors
  return *r;
}

}  // namespace

KernelRegistrar::KernelRegistrar(const char* name, uint32_t warp_size, size_t args_bytes, KernelEntry entry) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::unique_ptr<RegisteredKernel>& k = r.kernels[{std::string(name), warp_size}];
  if (!k) {
    k = std::make_unique<RegisteredKernel>();
    k->name = name;
    k->warp_size = warp_size;
    k->args_bytes = args_bytes;
    k->entry = entry;
  }
  ++k->registrations;
}

const RegisteredKernel* FindRegisteredKernel(std::string_view name, uint32_t warp_size) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kernels.find(std::pair<std::string, uint32_t>(std::string(name), warp_size));
  return it == r.kernels.end() ? nullptr : it->second.get();
}

std::vector<std::string> RegisteredKernelNames(uint32_t warp_size) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [key, k] : r.kernels)
    if (key.second == warp_size) names.push_back(key.first);
  return names;  // the map's order: sorted by name
}

}  // namespace strata::sgpu
