# Third-party libraries, under one name on every platform:
#   strata::flatbuffers strata::zstd strata::cli11 strata::json strata::xxhash
#   strata::utf8proc strata::httplib strata::asio  (and GTest::*, benchmark::* as found)
#   strata::boost_context (Linux only: Windows uses its own fibers)
# Linux: Debian's packages (CMake configs, pkg-config). Windows (MinGW-w64
# cross build, scripts/build-windows.sh): headers and static libraries under
# STRATA_WINDOWS_PREFIX, built from Debian's source packages.

function(strata_dep name)
  add_library(strata_dep_${name} INTERFACE)
  add_library(strata::${name} ALIAS strata_dep_${name})
  target_link_libraries(strata_dep_${name} INTERFACE ${ARGN})
endfunction()

find_program(FLATC_EXECUTABLE flatc REQUIRED)
find_package(Threads REQUIRED)

if(NOT WIN32)
  find_package(FlatBuffers CONFIG REQUIRED)
  find_package(zstd CONFIG REQUIRED)
  find_package(CLI11 CONFIG REQUIRED)
  find_package(nlohmann_json CONFIG REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
  pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
  # Debian's libcpp-httplib-dev is a shared library; its pkg-config flags must
  # match how it was built.
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
  strata_dep(flatbuffers flatbuffers::flatbuffers)
  strata_dep(zstd zstd::libzstd_shared)
  strata_dep(cli11 CLI11::CLI11)
  strata_dep(json nlohmann_json::nlohmann_json)
  strata_dep(xxhash PkgConfig::XXHASH)
  strata_dep(utf8proc PkgConfig::UTF8PROC)
  strata_dep(httplib PkgConfig::HTTPLIB)
  # Boost.Beast and Asio (header-only) for the server's HTTP layer.
  find_package(Boost 1.74 REQUIRED)
  strata_dep(asio Boost::headers Threads::Threads)
  # Boost.Context's fcontext: the software GPU's fibers. The static library,
  # so the programs need no libboost-context at run time.
  find_library(STRATA_BOOST_CONTEXT_LIB NAMES libboost_context.a boost_context REQUIRED)
  strata_dep(boost_context ${STRATA_BOOST_CONTEXT_LIB} Boost::headers)
else()
  # strata_windows_header(VAR header): the include folder holding `header`.
  macro(strata_windows_header var header)
    find_path(${var} ${header} REQUIRED)
  endmacro()
  strata_windows_header(STRATA_FLATBUFFERS_INCLUDE flatbuffers/flatbuffers.h)
  strata_windows_header(STRATA_CLI11_INCLUDE CLI/CLI.hpp)
  strata_windows_header(STRATA_JSON_INCLUDE nlohmann/json.hpp)
  strata_windows_header(STRATA_XXHASH_INCLUDE xxhash.h)
  strata_windows_header(STRATA_UTF8PROC_INCLUDE utf8proc.h)
  strata_windows_header(STRATA_HTTPLIB_INCLUDE httplib.h)
  find_library(STRATA_ZSTD_LIB NAMES libzstd.a zstd REQUIRED)
  find_library(STRATA_UTF8PROC_LIB NAMES libutf8proc.a utf8proc REQUIRED)
  strata_windows_header(STRATA_ZSTD_INCLUDE zstd.h)
  strata_dep(flatbuffers)
  target_include_directories(strata_dep_flatbuffers SYSTEM INTERFACE ${STRATA_FLATBUFFERS_INCLUDE})
  strata_dep(zstd ${STRATA_ZSTD_LIB})
  target_include_directories(strata_dep_zstd SYSTEM INTERFACE ${STRATA_ZSTD_INCLUDE})
  strata_dep(cli11)
  target_include_directories(strata_dep_cli11 SYSTEM INTERFACE ${STRATA_CLI11_INCLUDE})
  strata_dep(json)
  target_include_directories(strata_dep_json SYSTEM INTERFACE ${STRATA_JSON_INCLUDE})
  # xxHash is header-only when XXH_INLINE_ALL is defined.
  strata_dep(xxhash)
  target_include_directories(strata_dep_xxhash SYSTEM INTERFACE ${STRATA_XXHASH_INCLUDE})
  target_compile_definitions(strata_dep_xxhash INTERFACE XXH_INLINE_ALL)
  strata_dep(utf8proc ${STRATA_UTF8PROC_LIB})
  target_include_directories(strata_dep_utf8proc SYSTEM INTERFACE ${STRATA_UTF8PROC_INCLUDE})
  target_compile_definitions(strata_dep_utf8proc INTERFACE UTF8PROC_STATIC)
  # cpp-httplib as the source package ships it: one header, over Winsock.
  strata_dep(httplib ws2_32)
  target_include_directories(strata_dep_httplib SYSTEM INTERFACE ${STRATA_HTTPLIB_INCLUDE})
  # Boost.Beast and Asio: Debian's headers (scripts/build-windows.sh links
  # them into the prefix), over Winsock, for Windows 10 and later.
  find_path(STRATA_BOOST_INCLUDE boost/beast.hpp PATHS ${STRATA_WINDOWS_PREFIX}/boost-include
            NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH REQUIRED)
  strata_dep(asio ws2_32 mswsock)
  target_include_directories(strata_dep_asio SYSTEM INTERFACE ${STRATA_BOOST_INCLUDE})
  target_compile_definitions(strata_dep_asio INTERFACE _WIN32_WINNT=0x0A00)
endif()
target_compile_definitions(strata_dep_asio INTERFACE BOOST_ASIO_NO_DEPRECATED BOOST_BEAST_USE_STD_STRING_VIEW)
