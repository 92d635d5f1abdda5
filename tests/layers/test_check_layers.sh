#!/usr/bin/env bash
# test_check_layers.sh - scripts/check-layers.sh passes on the tree as it is
# (includes and, from the build's objects, calls) and fails on a new upward
# dependency: a copy of the sources with one injected is refused, naming it.
#   usage: test_check_layers.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# The real tree, with the real build.
"$src/scripts/check-layers.sh" "$(cd "$build" && pwd)" || fail "the tree itself violates the layers"

# A copy (sources only: the include check) with one violation injected.
copy() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree"
  cp -r "$src/scripts" "$src/src" "$src/include" "$work/tree/"
}
expect_refused() {
  local what=$1 needle=$2 out
  if out=$("$work/tree/scripts/check-layers.sh" "$work/nobuild" 2>&1); then
    fail "$what was not refused"
  fi
  grep -qF -- "$needle" <<<"$out" || fail "$what: the message does not name '$needle': $out"
}

copy
"$work/tree/scripts/check-layers.sh" "$work/nobuild" >/dev/null || fail "the copy does not pass"

# keys is below store: including a store header from keys is refused.
sed -i '0,/^#include "keys_internal.h"/s//#include "keys_internal.h"\n#include "store\/open_internal.h"/' \
  "$work/tree/src/keys/encode.c"
expect_refused "keys including a store header" "src/keys/encode.c -> store"

# The values sit below the store: they may not use it (a value that needed
# a store would tie the checker to the backends again).
copy
sed -i '0,/^#include "value_internal.h"/s//#include "value_internal.h"\n#include <faucet\/store.h>/' \
  "$work/tree/src/values/value.c"
expect_refused "values including faucet/store.h" "src/values/value.c -> store"

# The lowest module including a public header of a higher one.
copy
sed -i 's|^#include <faucet/common.h>|#include <faucet/common.h>\n#include <faucet/backfill.h>|' \
  "$work/tree/src/common/internal.h"
expect_refused "common including faucet/backfill.h" "src/common/internal.h -> backfill"

# The command including an internal header it did not include before.
copy
printf '#include "stores/pool.h"\n' >>"$work/tree/src/cli/completion.c"
expect_refused "the command including a backend's header" "src/cli/completion.c -> stores"
# util is below everything: it may not use common (durable writes).
copy
sed -i '0,/^#include "util.h"/s//#include "util.h"\n#include "durable.h"/' \
  "$work/tree/src/util/buf.c"
expect_refused "util including a common header" "src/util/buf.c -> common"

# The command may use util (it does), but not the library's other internals.
copy
printf '#include "internal.h"\n' >>"$work/tree/src/cli/completion.c"
expect_refused "the command including common's internal.h" "src/cli/completion.c -> common"
echo "ok: the tree passes; six injected violations are refused"
