#!/usr/bin/env bash
# test_exports.sh - the shared library exports exactly the functions that
# include/faucet/ declares with FAUCET_EXTERN: no internal helper
# (faucet__*, faucet_buf_*, test hooks) leaks into the ABI, and no public
# declaration lacks its definition or its mark.
#   usage: test_exports.sh LIBRARY SOURCE_DIR
set -euo pipefail
lib=$1 src=$2

exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "D" || $2 == "B" || $2 == "R" {print $3}' | sort)
declared=$(cat "$src"/include/faucet/*.h "$src"/include/faucet/sys/*.h |
  grep -oE '^FAUCET_EXTERN [^;{]*\bfaucet_[a-z0-9_]+\(' | grep -oE 'faucet_[a-z0-9_]+\($' |
  tr -d '(' | sort)
# A public function declared without the mark would be hidden: catch it.
unmarked=$(cat "$src"/include/faucet/*.h "$src"/include/faucet/sys/*.h |
  grep -E '^[a-z][^;{]*\bfaucet_[a-z0-9_]+\(' | grep -vE '^(typedef|FAUCET_EXTERN) ' || true)

status=0
if [ -n "$unmarked" ]; then
  echo "public declarations without FAUCET_EXTERN:" >&2
  echo "$unmarked" >&2
  status=1
fi
extra=$(comm -23 <(echo "$exported") <(echo "$declared"))
missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
if [ -n "$extra" ]; then
  echo "exported but not declared in include/faucet/ ($(echo "$extra" | wc -l)):" >&2
  echo "$extra" | sed 's/^/  /' >&2
  status=1
fi
if [ -n "$missing" ]; then
  echo "declared in include/faucet/ but not exported:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  status=1
fi
[ $status -eq 0 ] && echo "ok: $(echo "$exported" | wc -l) exported symbols, all declared"
exit $status
