#!/usr/bin/env bash
# Run the benchmarks of a build directory and print their figures.
# Usage: bench/run.sh BUILD_DIR   (data goes under BUILD_DIR/bench-data, on
# the normal disk: fsync on tmpfs is free and would make every ratio a lie)
set -euo pipefail
build=${1:-build}
data="$build/bench-data"
mkdir -p "$data"
if [ "$(stat -f -c %T "$data")" = "tmpfs" ]; then
  echo "bench: $data is on tmpfs; durable-write figures would be meaningless" >&2
  exit 1
fi
for b in "$build"/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b") =="
  "$b" "$data"
  echo
done
