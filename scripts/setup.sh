#!/usr/bin/env bash
# Installs every build dependency from Debian 12 packages, then configures and
# builds Strata (optimized) in build/. Safe to run again. The GPU device code
# is compiled when its compilers are here: hipcc (installed below) and nvcc
# (the CUDA toolkit, at /usr/local/cuda or CUDAToolkit_ROOT; not a Debian
# package, so not installed here). Configure says which images it builds.
#   bash scripts/setup.sh            # install + build
#   STRATA_SKIP_APT=1 bash scripts/setup.sh   # build only
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3
  clang libclang-rt-14-dev              # libFuzzer + sanitizers for the fuzz targets
  flatbuffers-compiler libflatbuffers-dev
  libzstd-dev libxxhash-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libboost-dev                           # Boost.Beast + Asio (header-only): the server's HTTP layer
  libboost-context-dev                   # Boost.Context (fcontext): the software GPU's fibers
  libcpp-httplib-dev nlohmann-json3-dev  # httplib: the tests' HTTP client
  libutf8proc-dev                        # Unicode categories for the tokenizers
  nginx                                  # the test of replicas behind a load balancer (docs/deploy.md)
  hipcc libamdhip64-dev rocm-device-libs # the HIP device image (cmake/StrataGpu.cmake); the CUDA
                                         # one needs nvcc from NVIDIA's CUDA toolkit, not a Debian package
)

# The server's client tests (tests/serve/*.test.mjs) run on Node 18 or later:
# Debian 12's nodejs and npm, unless a node is already installed (NodeSource's
# bundles its own npm).
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

source scripts/apt-install.sh
strata_apt_install setup "${PACKAGES[@]}"

BUILD_DIR=${STRATA_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${STRATA_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR"
