# Warning, sanitizer and ISA flags shared by every Strata target.

set(STRATA_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wcast-align -Wunused -Woverloaded-virtual
    -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12's flow-based object-size warnings misfire at -O3 on inlined
  # libstdc++ code (std::string and std::vector inserts): -Wrestrict (GCC PR
  # 105329/105651), -Wstringop-overflow and -Wstringop-overread (PR 106199),
  # -Warray-bounds (PR 107852). Real overruns are the sanitizer build's job.
  list(APPEND STRATA_WARNINGS -Wno-maybe-uninitialized -Wno-restrict -Wno-stringop-overflow -Wno-stringop-overread
       -Wno-array-bounds)
endif()
if(STRATA_WERROR)
  list(APPEND STRATA_WARNINGS -Werror)
endif()

# With STRATA_FUZZ, the libraries are instrumented for coverage so libFuzzer
# gets feedback from the code under test, not only from the fuzz target; the
# compute paths no fuzz target reaches, and the unit tests, are left out
# (cmake/fuzz-coverage-ignorelist.txt says which, and why).
if(STRATA_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link
                      -fsanitize-coverage-ignorelist=${PROJECT_SOURCE_DIR}/cmake/fuzz-coverage-ignorelist.txt)
endif()

# float-cast-overflow (a float or double converted to an integer type that
# cannot hold it) is part of clang's "undefined" group but not of GCC's, so it
# is named explicitly: untrusted numbers must go through
# runtime/base/checked_cast.h, and this check proves they do.
if(STRATA_SANITIZE)
  set(strata_sanitize "${STRATA_SANITIZE}")
  if(strata_sanitize MATCHES "undefined")
    string(APPEND strata_sanitize ",float-cast-overflow")
  endif()
  add_compile_options(-fsanitize=${strata_sanitize} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${strata_sanitize})
endif()

# strata_target_defaults(target): warnings + include roots for a project target.
function(strata_target_defaults target)
  target_compile_options(${target} PRIVATE ${STRATA_WARNINGS})
  target_include_directories(${target} PUBLIC
    ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
endfunction()

# Per-ISA compile flags. Kernel sources for one ISA are compiled with these and
# only ever called after a CPUID check (runtime/kernels/cpu_features.h). The
# AVX-512 level requires F, BW, VL, DQ and VNNI; nothing may use AVX512_BF16
# (the flag is left out so the compiler cannot emit it either).
# -ffp-contract=off: with FMA available GCC would otherwise fuse a separate
# multiply and add (its C++ default is "fast"), and the SIMD activation
# quantizers must round exactly like their scalar references. Kernels write
# the fused multiply-adds they want explicitly.
set(STRATA_AVX2_FLAGS "-mavx2 -mfma -mf16c -mbmi2 -ffp-contract=off")
set(STRATA_AVX512_FLAGS "-mavx2 -mfma -mf16c -mbmi2 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -ffp-contract=off")
