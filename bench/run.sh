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
. "$here/bench/lib.sh"
refuse_tmpfs "$data" bench
# On a machine with two CPUs or more, the servers run on CPU 1 and the
# backend benchmark on CPU 0.  Unpinned, the scheduler sometimes puts client
# and server on one CPU (a loopback round trip of ~10 us) and sometimes on
# two (~100 us), and switches mid-run, so a store call and the bare round
# trip it is compared with could be measured in different modes.  Apart,
# every round trip crosses CPUs, as it crosses hosts in production.
pin_client=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  export FAUCET_SERVERS_CPUS=1
  pin_client=(taskset -c 0)
fi
servers_env=$("$here/scripts/test-servers.sh" start)
eval "$servers_env"
trap '"$here/scripts/test-servers.sh" stop "$FAUCET_TEST_SERVERS_DIR"' EXIT
for b in "$build"/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b") =="
  if [ "$(basename "$b")" = bench_backends ]; then
    "${pin_client[@]}" "$b" "$data"
  else
    "$b" "$data"
  fi
  echo
done
echo "== bench_singer.sh =="
"$here/bench/bench_singer.sh" "$build"
