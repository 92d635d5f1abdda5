#!/usr/bin/env bash
# Run the benchmarks of a build directory and print their figures.
# Usage: bench/run.sh BUILD_DIR   (data goes under BUILD_DIR/bench-data, on
# the normal disk: fsync on tmpfs is free and would make every ratio a lie)
#
# The backend benchmark needs PostgreSQL and Redis: the same throw-away
# loopback servers the tests use are started here and stopped on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
data="$build/bench-data"
mkdir -p "$data"
if [ "$(stat -f -c %T "$data")" = "tmpfs" ]; then
  echo "bench: $data is on tmpfs; durable-write figures would be meaningless" >&2
  exit 1
fi
servers_env=$("$here/scripts/test-servers.sh" start)
eval "$servers_env"
trap '"$here/scripts/test-servers.sh" stop "$FAUCET_TEST_SERVERS_DIR"' EXIT
for b in "$build"/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b") =="
  "$b" "$data"
  echo
done
