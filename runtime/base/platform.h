#pragma once
// Small platform queries (the platform layer: no OS calls elsewhere).

#include <cstdint>

namespace strata {

// True if file descriptor `fd` (1 = stdout, 2 = stderr) is a terminal.
bool IsTerminal(int fd);
// Physical memory of the machine and memory available now, in bytes (0 if unknown).
uint64_t TotalMemoryBytes();
uint64_t AvailableMemoryBytes();
// Logical CPUs this process may use.
int CpuCount();

}  // namespace strata
