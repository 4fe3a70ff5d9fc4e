#pragma once
// A GPU driver library loaded at run time (dlopen / LoadLibraryExW), so that
// a Strata binary starts on a machine without one and says so when a GPU
// backend is asked for. This file and its .cc are the only place in gpu/ that
// includes an OS header.
//
// A library, once loaded, stays loaded for the life of the process: drivers
// start threads and register exit handlers that must not outlive their code,
// and a driver's state (cuInit) is per process anyway.

#include <string>

#include "runtime/base/status.h"

namespace strata::gpu {

class SharedLibrary {
 public:
  // Loads `path` (UTF-8), or finds it already loaded. A bare file name is
  // looked up the system's way on Linux (ld.so's search path), and on Windows
  // in System32 only (LOAD_LIBRARY_SEARCH_SYSTEM32: where the GPU drivers
  // install their DLLs, and never the current folder). A path with a folder
  // is loaded from there. Errors: kNotFound with the OS's reason ("dlopen:
  // libcuda.so.1: cannot open shared object file: No such file or directory").
  static Result<const SharedLibrary*> Open(const std::string& path);

  // The address of an exported symbol, or nullptr.
  void* Symbol(const char* name) const;
  const std::string& path() const { return path_; }

 private:
  SharedLibrary(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}
  std::string path_;
  void* handle_;
};

// The driver library to load: environment variable `env_var` when it is set
// and not empty (a test's fake driver, or a driver outside the search path),
// else `default_name`.
std::string DriverLibraryPath(const char* env_var, const char* default_name);

}  // namespace strata::gpu
