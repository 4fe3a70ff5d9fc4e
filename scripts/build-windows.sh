#!/usr/bin/env bash
# Cross-builds Strata for Windows x86-64 with MinGW-w64 on Debian 12, runs the
# whole test suite under Wine, and writes the release zip
# build-windows/strata-VERSION-windows-x86_64.zip. Installs what it needs.
#
#   bash scripts/build-windows.sh              # deps + build + tests + zip
#   STRATA_WINDOWS_TESTS=0 bash scripts/build-windows.sh    # no tests
#   STRATA_WINDOWS_BUILD_ONLY=1 ...            # deps + build, nothing after it
#   STRATA_SKIP_APT=1 ...                      # do not call apt-get install
#   STRATA_WINDOWS_TESTS_PER_BINARY=OFF ...    # one ctest per test case (default: per
#                                              # binary, ~50 Wine starts instead of ~500)
#
# Libraries: the header-only ones (FlatBuffers' headers, CLI11, nlohmann-json,
# xxHash with XXH_INLINE_ALL) are used from Debian's -dev packages as they
# are. Those Debian ships only as Linux binaries (zstd, utf8proc, cpp-httplib's
# implementation) are built for the Windows target from Debian's own source
# packages, at the exact version installed here (apt-get source PKG=VERSION),
# and GoogleTest from Debian's /usr/src/googletest. Nothing is copied into the
# repository: all of it lives under build-windows/deps.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${STRATA_WINDOWS_BUILD_DIR:-build-windows}
DEPS=$ROOT/$BUILD/deps
PREFIX=$DEPS/prefix
TOOLCHAIN=$ROOT/cmake/toolchains/mingw-w64-x86_64.cmake
JOBS=${STRATA_JOBS:-$(nproc)}

PACKAGES=(
  g++-mingw-w64-x86-64-posix wine wine64 dpkg-dev zip
  cmake ninja-build ccache pkg-config
  flatbuffers-compiler libflatbuffers-dev libcli11-dev nlohmann-json3-dev libxxhash-dev
  googletest libzstd-dev libutf8proc-dev libcpp-httplib-dev libboost-dev
)
source scripts/apt-install.sh
strata_apt_install build-windows "${PACKAGES[@]}"

# --- Debian source packages, pinned to the installed versions ---------------
# apt-get source needs a deb-src entry. When the machine has none, one is made
# from its own apt source list (the same mirrors and suites), never a host
# named here.
have_deb_src() {
  grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}
if ! have_deb_src; then
  echo "build-windows: adding deb-src entries mirroring the existing apt sources"
  tmp=$(mktemp)
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    # deb822 stanzas: keep those of type deb, as deb-src.
    perl -00 -ne 'if (/^Types:.*\bdeb\b/m) { s/^Types:.*$/Types: deb-src/m; s/\n*\z/\n\n/; print }' "$f" >>"$tmp"
  done
  if [[ -s "$tmp" ]]; then
    $SUDO install -m 644 "$tmp" /etc/apt/sources.list.d/strata-deb-src.sources
  fi
  rm -f "$tmp"
  if [[ -f /etc/apt/sources.list ]] && grep -qE '^deb ' /etc/apt/sources.list; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list | $SUDO tee /etc/apt/sources.list.d/strata-deb-src.list >/dev/null
  fi
  $SUDO apt-get update -qq
fi

mkdir -p "$DEPS/src" "$PREFIX/include" "$PREFIX/lib"
# fetch_source SRC_PKG BIN_PKG: unpacks the source of the installed BIN_PKG's
# version. When a mirror lacks that exact source (some security mirrors serve
# binaries only), the nearest Debian revision of the same upstream version is
# taken, and said.
fetch_source() {
  local src=$1 bin=$2 ver dir v
  ver=$(dpkg-query -W -f='${source:Version}' "$bin")
  dir="$DEPS/src/$src"
  if [[ ! -f "$dir/.unpacked" ]]; then
    rm -rf "$dir" && mkdir -p "$dir"
    local got=""
    for v in "$ver" $(apt-cache showsrc "$src" | sed -n 's/^Version: //p' | sort -rV | grep -F "${ver%-*}-" | grep -vxF "$ver"); do
      if (cd "$dir" && apt-get source -qq --only-source "$src=$v" >"$dir/apt-source.log" 2>&1); then got=$v; break; fi
      rm -rf "${dir:?}"/*
    done
    [[ -n "$got" ]] || { echo "build-windows: no source of $src $ver (${ver%-*}) could be fetched:"; cat "$dir/apt-source.log"; exit 1; }
    [[ "$got" == "$ver" ]] || echo "build-windows: $src $ver has no fetchable source here; using $got (same upstream ${ver%-*})" >&2
    echo "$got" >"$dir/.unpacked"
  fi
  find "$dir" -mindepth 1 -maxdepth 1 -type d | head -n1
}

cmake_dep() {  # cmake_dep NAME SOURCE_DIR [cmake args...]
  local name=$1 src=$2
  shift 2
  if [[ ! -f "$DEPS/$name.done" ]]; then
    echo "build-windows: building $name for Windows from $(basename "$(dirname "$src")")"
    cmake -S "$src" -B "$DEPS/build-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DCMAKE_INSTALL_PREFIX="$PREFIX" "$@" >"$DEPS/$name.log" 2>&1
    cmake --build "$DEPS/build-$name" -j "$JOBS" >>"$DEPS/$name.log" 2>&1
    cmake --install "$DEPS/build-$name" >>"$DEPS/$name.log" 2>&1
    touch "$DEPS/$name.done"
  fi
}

zstd_src=$(fetch_source libzstd libzstd-dev)
cmake_dep zstd "$zstd_src/build/cmake" -DZSTD_BUILD_PROGRAMS=OFF -DZSTD_BUILD_TESTS=OFF \
  -DZSTD_BUILD_SHARED=OFF -DZSTD_BUILD_STATIC=ON -DZSTD_MULTITHREAD_SUPPORT=OFF
utf8proc_src=$(fetch_source utf8proc libutf8proc-dev)
cmake_dep utf8proc "$utf8proc_src" -DBUILD_SHARED_LIBS=OFF -DUTF8PROC_ENABLE_TESTING=OFF
cmake_dep googletest /usr/src/googletest -DBUILD_SHARED_LIBS=OFF -DINSTALL_GTEST=ON -Dgtest_disable_pthreads=OFF
# cpp-httplib: Debian's -dev package holds the declarations of a split build
# (its implementation is a Linux .so); the source package's httplib.h is the
# whole header-only library, which the Windows build compiles in.
httplib_src=$(fetch_source cpp-httplib libcpp-httplib-dev)
install -m 644 "$httplib_src/httplib.h" "$PREFIX/include/httplib.h"
# Header-only libraries, as Debian ships them.
for d in flatbuffers nlohmann CLI; do
  rm -rf "${PREFIX:?}/include/$d" && cp -a "/usr/include/$d" "$PREFIX/include/$d"
done
cp -a /usr/include/xxhash.h "$PREFIX/include/xxhash.h"
# Boost (Beast, Asio; header-only): Debian's headers, linked rather than
# copied (about 150 MB); the MinGW build finds them through the prefix.
mkdir -p "$PREFIX/boost-include"
ln -sfn /usr/include/boost "$PREFIX/boost-include/boost"

# --- Strata -----------------------------------------------------------------
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DSTRATA_WINDOWS_PREFIX="$PREFIX" \
  -DSTRATA_BUILD_BENCH=OFF -DSTRATA_TESTS_PER_BINARY="${STRATA_WINDOWS_TESTS_PER_BINARY:-ON}" ${STRATA_CMAKE_ARGS:-}
cmake --build "$BUILD" -j "$JOBS"
if [[ "${STRATA_WINDOWS_BUILD_ONLY:-0}" == "1" ]]; then
  echo "build-windows: built (STRATA_WINDOWS_BUILD_ONLY: no tests, no pack comparison, no zip)"
  exit 0
fi

# --- Tests under Wine ---------------------------------------------------------
export WINEPREFIX=${WINEPREFIX:-$ROOT/$BUILD/wine}
export WINEDEBUG=${WINEDEBUG:--all}
export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=}
if [[ "${STRATA_WINDOWS_TESTS:-1}" == "1" ]]; then
  [[ -d "$WINEPREFIX" ]] || wineboot --init >/dev/null 2>&1 || true
  # A Wine server that stays up for the whole run: each test would otherwise
  # start and stop its own. It, and Wine's own background processes, must be
  # up before ctest runs anything: those a test's wine starts inherit that
  # test's output pipe, and ctest then waits for them until it times out.
  # (-p fails while wineboot's server still runs, so that one is stopped, and
  # waited for, first.)
  wineserver -k >/dev/null 2>&1 || true
  wineserver -w >/dev/null 2>&1 || true
  wineserver -p >/dev/null 2>&1
  wine "$BUILD/runtime/strata-run.exe" --version >/dev/null 2>&1
  set +e
  (cd "$BUILD" && ctest --output-on-failure -j "$JOBS" ${STRATA_CTEST_ARGS:-})
  rc=$?
  set -e
  wineserver -k || true
  if ((rc != 0)); then echo "build-windows: tests failed under Wine"; exit "$rc"; fi
fi

# --- The same pack from both systems ----------------------------------------
# With STRATA_COMPARE_PACKS_WITH=LINUX_BUILD_DIR: both strata-packs pack the
# same GGUFs (a synthetic qwen3moe and a qwen35moe, and the real stories260K
# when the shared data has it); the packs must be byte-identical.
if [[ -n "${STRATA_COMPARE_PACKS_WITH:-}" ]]; then
  linux=$STRATA_COMPARE_PACKS_WITH
  cmp_dir="$BUILD/pack-compare"
  rm -rf "$cmp_dir" && mkdir -p "$cmp_dir"
  "$linux/tests/strata-make-gguf" --arch qwen3moe --preset tiny --type Q4_K --seed 7 -o "$cmp_dir/q3.gguf" >/dev/null
  "$linux/tests/strata-make-gguf" --arch qwen35moe --preset tiny --type Q8_0 --seed 8 -o "$cmp_dir/q35.gguf" >/dev/null
  ggufs=("$cmp_dir/q3.gguf" "$cmp_dir/q35.gguf")
  data=${STRATA_DATA_DIR:-../shared/data}
  [[ -f "$data/models/stories260K.gguf" ]] && ggufs+=("$data/models/stories260K.gguf")
  wineserver -k >/dev/null 2>&1 || true
  wineserver -w >/dev/null 2>&1 || true
  wineserver -p >/dev/null 2>&1
  wine "$BUILD/runtime/strata-run.exe" --version >/dev/null 2>&1
  for g in "${ggufs[@]}"; do
    n=$(basename "$g" .gguf)
    "$linux/packer/strata-pack" "$g" -o "$cmp_dir/$n.linux.strata" >/dev/null
    wine "$BUILD/packer/strata-pack.exe" "$g" -o "$cmp_dir/$n.windows.strata" >/dev/null
    cmp "$cmp_dir/$n.linux.strata" "$cmp_dir/$n.windows.strata" ||
      { echo "build-windows: $n: the Linux and Windows packs differ"; exit 1; }
    echo "build-windows: $n: Linux and Windows packs are byte-identical ($(stat -c %s "$cmp_dir/$n.linux.strata") bytes)"
  done
  wineserver -k || true
fi

# --- Release zip --------------------------------------------------------------
version=$(sed -n 's/^project(strata VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
name="strata-$version-windows-x86_64"
stage="$BUILD/$name"
rm -rf "$stage" && mkdir -p "$stage"
for exe in packer/strata-pack validate/strata-validate runtime/strata-run; do
  cp "$BUILD/$exe.exe" "$stage/"
done
# Every DLL the programs import that Windows itself does not provide goes in
# the zip (with static runtimes this list is empty; the check keeps it true).
system_dll='^(kernel32|user32|advapi32|ws2_32|msvcrt|ucrtbase|api-ms-win-.*|bcrypt|crypt32|shell32|ole32|ntdll|mswsock|shlwapi|iphlpapi)\.dll$'
for exe in "$stage"/*.exe; do
  x86_64-w64-mingw32-objdump -p "$exe" | sed -n 's/^\s*DLL Name: //p'
done | tr 'A-Z' 'a-z' | sort -u | while read -r dll; do
  [[ "$dll" =~ $system_dll ]] && continue
  found=$(find /usr/lib/gcc/x86_64-w64-mingw32 /usr/x86_64-w64-mingw32/lib "$PREFIX" -iname "$dll" 2>/dev/null | head -n1)
  [[ -n "$found" ]] || { echo "build-windows: $dll is imported and not found"; exit 1; }
  cp "$found" "$stage/"
done
cp README.md "$stage/"
mkdir -p "$stage/licenses"
for pkg in libzstd-dev libutf8proc-dev libcpp-httplib-dev libboost1.74-dev libflatbuffers-dev libcli11-dev nlohmann-json3-dev libxxhash-dev gcc-mingw-w64-x86-64-posix-runtime mingw-w64-common; do
  [[ -f "/usr/share/doc/$pkg/copyright" ]] && cp "/usr/share/doc/$pkg/copyright" "$stage/licenses/$pkg.copyright"
done
[[ -f LICENSE ]] && cp LICENSE "$stage/licenses/strata.LICENSE"
zip_out="$BUILD/$name.zip"
rm -f "$zip_out.tmp"
(cd "$BUILD" && zip -qr "$name.zip.tmp" "$name")
mv "$zip_out.tmp" "$zip_out"
echo "build-windows: wrote $zip_out"
