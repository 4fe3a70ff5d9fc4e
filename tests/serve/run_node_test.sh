#!/usr/bin/env bash
# Runs one Node test file of the server suite with node's test runner, after
# installing what it needs (CTest calls this; see tests/CMakeLists.txt):
#   - the npm packages of package.json/package-lock.json (openai,
#     playwright-core) into $STRATA_NODE_DIR, once per build folder;
#   - with --browser, Debian's chromium (apt-get, as root) if it is missing.
# A missing tool fails the test with a message saying what is missing. Only
# with STRATA_ALLOW_MISSING_TOOLS=1 does it skip instead (exit 77, which CTest
# reports as skipped), still loudly.
#
#   run_node_test.sh [--browser] FILE.test.mjs
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
browser=0
if [[ "${1:-}" == "--browser" ]]; then browser=1; shift; fi
test_file=${1:?usage: run_node_test.sh [--browser] FILE.test.mjs}
: "${STRATA_BINARY_DIR:?set STRATA_BINARY_DIR to the build folder}"
export STRATA_NODE_DIR=${STRATA_NODE_DIR:-$STRATA_BINARY_DIR/tests/serve-node}

missing() {
  echo "" >&2
  echo "************************************************************************" >&2
  if [[ "${STRATA_ALLOW_MISSING_TOOLS:-0}" == "1" ]]; then
    echo "SKIPPED $test_file (STRATA_ALLOW_MISSING_TOOLS=1): $*" >&2
    echo "************************************************************************" >&2
    exit 77
  fi
  echo "FAILED $test_file: $*" >&2
  echo "(set STRATA_ALLOW_MISSING_TOOLS=1 to skip these tests instead)" >&2
  echo "************************************************************************" >&2
  exit 1
}

command -v node >/dev/null || missing "node is not installed (Node 18 or later: apt-get install nodejs npm)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
(( node_major >= 18 )) || missing "node $(node --version) is too old (18 or later needed: Debian 12's)"

# One installer at a time: ctest -j runs several of these tests at once.
mkdir -p "$STRATA_NODE_DIR"
exec 9>"$STRATA_NODE_DIR/.install.lock"
flock 9
if [[ ! -f "$STRATA_NODE_DIR/node_modules/.strata-installed" ]] ||
   ! cmp -s "$here/package-lock.json" "$STRATA_NODE_DIR/package-lock.json"; then
  command -v npm >/dev/null || missing "npm is not installed (apt-get install npm)"
  echo "run_node_test: installing openai and playwright-core into $STRATA_NODE_DIR" >&2
  cp "$here/package.json" "$here/package-lock.json" "$STRATA_NODE_DIR/"
  if ! (cd "$STRATA_NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error >&2); then
    missing "npm could not install the test's packages (openai, playwright-core): is the npm registry reachable?"
  fi
  touch "$STRATA_NODE_DIR/node_modules/.strata-installed"
fi
if (( browser )); then
  chromium=${STRATA_CHROMIUM:-/usr/bin/chromium}
  if [[ ! -x "$chromium" ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
      echo "run_node_test: installing Debian's chromium" >&2
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >&2 ||
        missing "apt-get could not install chromium"
    fi
    [[ -x "$chromium" ]] || missing "no Chromium at $chromium (apt-get install chromium, or set STRATA_CHROMIUM)"
  fi
fi
flock -u 9

cd "$here"
exec node --test --test-reporter=spec "$here/$test_file"
