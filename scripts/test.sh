#!/usr/bin/env bash
# Build and run every test: once in a normal build, once under
# AddressSanitizer + UndefinedBehaviorSanitizer.  This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh

jobs=$(nproc)
status=0

# Throw-away PostgreSQL and Redis servers for the backend tests; their URLs
# reach the tests through the environment (FAUCET_TEST_PG_URL, ...).  They
# are stopped on every exit, failure included.
servers_env=$(./scripts/test-servers.sh start)
eval "$servers_env"
trap './scripts/test-servers.sh stop "$FAUCET_TEST_SERVERS_DIR"' EXIT

run_suite() {
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure -j"$jobs") || status=1
}

echo "== normal build =="
run_suite build
echo "== AddressSanitizer + UndefinedBehaviorSanitizer build =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build-asan -DFAUCET_SANITIZE=ON

exit $status
