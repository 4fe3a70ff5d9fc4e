#include "runtime/gpu/shared_library.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "runtime/base/platform.h"  // WidePath, NarrowPath
#else
#include <dlfcn.h>
#endif

namespace strata::gpu {
namespace {

#ifdef _WIN32
// The text of GetLastError's code, without the trailing line break.
std::string LastErrorText() {
  const DWORD code = GetLastError();
  wchar_t* text = nullptr;
  const DWORD n =
      FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                     nullptr, code, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::string out = n != 0 ? NarrowPath(std::wstring_view(text, n)) : std::string();
  if (text != nullptr) LocalFree(text);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  return "error " + std::to_string(code) + (out.empty() ? "" : ": " + out);
}

bool HasFolder(const std::string& path) { return path.find_first_of("/\\") != std::string::npos; }
#endif

}  // namespace

Result<const SharedLibrary*> SharedLibrary::Open(const std::string& path) {
  // Loaded libraries, by the path they were asked for; never freed (see the header).
  static std::mutex mutex;
  static auto* loaded = new std::map<std::string, const SharedLibrary*>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded->find(path); it != loaded->end()) return it->second;
#ifdef _WIN32
  // A bare name: System32 only. A path: that file, with the DLLs it imports
  // looked up in its own folder first (LOAD_WITH_ALTERED_SEARCH_PATH).
  const std::wstring wide = WidePath(path);
  HMODULE handle = HasFolder(path) ? LoadLibraryExW(wide.c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH)
                                   : LoadLibraryExW(wide.c_str(), nullptr, LOAD_LIBRARY_SEARCH_SYSTEM32);
  if (handle == nullptr) {
    return NotFound("LoadLibraryExW(" + path + (HasFolder(path) ? "" : ", System32 only") + "): " + LastErrorText());
  }
  auto* library = new SharedLibrary(path, reinterpret_cast<void*>(handle));
#else
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return NotFound("dlopen: " + (why != nullptr ? std::string(why) : path + ": unknown error"));
  }
  auto* library = new SharedLibrary(path, handle);
#endif
  loaded->emplace(path, library);
  return library;
}

void* SharedLibrary::Symbol(const char* name) const {
#ifdef _WIN32
  // A FARPROC as an address: the caller casts it to the entry point's type.
  return reinterpret_cast<void*>(GetProcAddress(static_cast<HMODULE>(handle_), name));
#else
  return dlsym(handle_, name);
#endif
}

std::string DriverLibraryPath(const char* env_var, const char* default_name) {
#ifdef _WIN32
  // The wide environment: a path there may hold any character.
  const std::wstring name = WidePath(env_var);
  const wchar_t* value = _wgetenv(name.c_str());
  if (value != nullptr && *value != L'\0') return NarrowPath(value);
#else
  const char* value = std::getenv(env_var);
  if (value != nullptr && *value != '\0') return value;
#endif
  return default_name;
}

}  // namespace strata::gpu
