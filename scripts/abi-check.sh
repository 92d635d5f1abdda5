#!/usr/bin/env bash
# abi-check.sh - compare the ABI of the built libfaucet.so with the
# committed baseline abi/libfaucet.abi, and fail on any difference.
#
#   scripts/abi-check.sh [--update] [BUILD_DIR]     (BUILD_DIR: build)
#
# The baseline is abidw's description (Debian's abigail-tools) of the shared
# library, limited to the types the public headers declare: include/faucet/
# and the generated faucet/version.h in BUILD_DIR.  An accidental change -
# a struct field moved, a function's signature changed, a function gone or
# added - fails the check.  An intended change is recorded by running this
# with --update and committing abi/libfaucet.abi with the change that made
# it; a change that is not backward compatible also needs the major
# version (the soname) raised in CMakeLists.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

update=0
if [ "${1:-}" = "--update" ]; then
  update=1
  shift
fi
build=${1:-build}
lib=$build/libfaucet.so
baseline=abi/libfaucet.abi

for tool in abidw abidiff; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "abi-check: $tool is missing (Debian: abigail-tools; scripts/install-deps.sh installs it)" >&2
    exit 2
  fi
done
if [ ! -f "$lib" ]; then
  echo "abi-check: $lib not found: build first (cmake --build $build)" >&2
  exit 2
fi

# Stable output: no paths, no line numbers, type ids by hash, only the
# symbols the library defines.
current=$(mktemp)
trap 'rm -f "$current"' EXIT
abidw --headers-dir include/faucet --headers-dir "$build/include/faucet" \
  --drop-private-types --drop-undefined-syms --no-corpus-path --no-comp-dir-path \
  --no-show-locs --type-id-style hash --out-file "$current" "$lib"

if [ $update -eq 1 ]; then
  mkdir -p abi
  cp "$current" "$baseline"
  echo "abi-check: $baseline updated from $lib; commit it with the change"
  exit 0
fi
if [ ! -f "$baseline" ]; then
  echo "abi-check: no baseline $baseline (make one with scripts/abi-check.sh --update)" >&2
  exit 1
fi
# abidiff's exit status is a bit set: 4 = an ABI change, 8 = an incompatible
# one, 1/2 = an error of its own.  Any of them fails the check; additions
# are listed too (they need a new baseline, not a new soname).
set +e
report=$(abidiff --harmless "$baseline" "$current" 2>&1)
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "$report"
  echo "abi-check: the ABI of $lib differs from $baseline (abidiff status $rc)." >&2
  echo "abi-check: if the change is intended, run scripts/abi-check.sh --update and commit" \
       "$baseline with it (an incompatible change also needs a new major version)." >&2
  exit 1
fi
echo "abi-check: $lib matches $baseline"
