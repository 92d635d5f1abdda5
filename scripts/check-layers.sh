#!/usr/bin/env bash
# check-layers.sh - the modules of src/ depend on each other in one
# direction only: a file may use its own module and the modules below it,
# never one above.  A file's module is its folder (src/values/value.c is in
# `values`); the order, lowest first:
#
#   util      allocation, buffers, string arrays, the last error, clocks,
#             the JSON string writer - shared by the library and the command
#   common    durable writes, the system-call seam, loading libraries, holders
#   proc      starting commands
#   crypto    the sealed-file envelope
#   metrics   the metrics registry
#   values    JSON values and the strict checker every value passes
#   keys      key validation, rendering, parsing
#   check     doctor probe reports
#   store     the store front-end, export/import, store URLs, migration
#   stores    the backends (memory, file, sqlite, postgres, redis)
#   backfill  plans, markers, leases, the runner
#   run       invocation runs
#   cli       the `faucet` command - which may use util and the public API,
#             nothing else
#   serve     `faucet serve`, the HTTP API: util, the command's helpers and
#             the public API only (its one row in main.c's command table is
#             the dispatcher reaching up)
#
# Public headers count as their module's: faucet/common.h, export.h and
# version.h are util's, value.h the values', store.h and
# sys/store_backend.h the store's, keys.h, check.h, metrics.h, backfill.h
# and run.h their namesakes', faucet.h (everything) belongs above the
# library.
#
# Two checks:
#   includes  a file including a header of a module above its own
#             (from the sources alone);
#   calls     an object file calling a function defined by a module above
#             its own, and the command calling a library function that is
#             not public (needs a build: BUILD_DIR, default build; skipped
#             with a note when there is none).
#
#   usage: scripts/check-layers.sh [--list] [BUILD_DIR]
#          (--list prints every violation, known or not, and exits 0)
#
# KNOWN lists the violations of today that need a file moved to fix; each
# line is "FILE -> MODULE".  Anything not on it fails the check, so no new
# one gets in; an entry that is no longer needed is reported (remove it).
set -euo pipefail
cd "$(dirname "$0")/.."
list=0
if [ "${1:-}" = "--list" ]; then
  list=1
  shift
fi
build=${1:-build}

LAYERS=(util common proc crypto metrics values keys check store stores config lease backfill run cli serve)

KNOWN=(
  # (none left: a new violation fails the check)
)

rank() {
  local i
  for i in "${!LAYERS[@]}"; do
    if [ "${LAYERS[$i]}" = "$1" ]; then
      echo "$i"
      return
    fi
  done
  echo "check-layers: module '$1' is not in the order (add it to LAYERS)" >&2
  exit 2
}

# The module of a public header (path under include/faucet/).
public_module() {
  case $1 in
    common.h | export.h | version.h) echo util ;;
    value.h) echo values ;;
    store.h | sys/store_backend.h) echo store ;;
    config.h) echo config ;;
    keys.h) echo keys ;;
    check.h) echo check ;;
    metrics.h) echo metrics ;;
    backfill.h) echo backfill ;;
    run.h) echo run ;;
    proc.h) echo proc ;;
    lease.h) echo lease ;;
    faucet.h) echo cli ;;
    *) echo "check-layers: public header faucet/$1 has no module (add it to public_module)" >&2
       exit 2 ;;
  esac
}

# The module of the header `inc` included by `file`, or nothing for a
# system header.  Quoted names resolve as the compiler does: the file's own
# folder, then src/util, then src/common, then src/.
header_module() {
  local file=$1 inc=$2 quoted=$3 dir
  dir=$(dirname "$file")
  if [ "${inc#faucet/}" != "$inc" ]; then
    public_module "${inc#faucet/}"
  elif [ "$quoted" = 1 ] && [ -f "$dir/$inc" ]; then
    basename "$(cd "$(dirname "$dir/$inc")" && pwd)"
  elif [ "$quoted" = 1 ] && [ -f "src/util/$inc" ]; then
    echo util
  elif [ "$quoted" = 1 ] && [ -f "src/common/$inc" ]; then
    echo common
  elif [ "$quoted" = 1 ] && [ -f "src/$inc" ]; then
    echo "${inc%%/*}"
  fi
}

violations=()
add() {
  local entry=$1 why=$2 e
  for e in "${violations[@]+"${violations[@]}"}"; do
    [ "${e%%	*}" = "$entry" ] && return
  done
  violations+=("$entry	$why")
}

# ---- includes ----------------------------------------------------------
for file in src/*/*.c src/*/*.h; do
  module=$(basename "$(dirname "$file")")
  own=$(rank "$module")
  while IFS= read -r line; do
    quoted=0
    case $line in
      *'"'*) quoted=1; inc=${line#*\"}; inc=${inc%%\"*} ;;
      *'<'*) inc=${line#*<}; inc=${inc%%>*} ;;
      *) continue ;;
    esac
    target=$(header_module "$file" "$inc" "$quoted")
    [ -n "$target" ] || continue
    if { [ "$module" = cli ] || [ "$module" = serve ]; } && [ "$target" != cli ] &&
      [ "$target" != serve ] && [ "$target" != util ] && [ "${inc#faucet/}" = "$inc" ]; then
      add "$file -> $target" "includes $inc: the command may use util and the public API only"
    elif [ "$(rank "$target")" -gt "$own" ]; then
      add "$file -> $target" "includes $inc ($target is above $module)"
    fi
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$file" || true)
done

# ---- names -------------------------------------------------------------
# One prefix rule for what is not the public API: faucet__ (or a module's
# faucet_<module>__) in the library, cli_ in src/cli, serve_ in src/serve.
# A client library's own names (PQexec, json_object_put) are the stubs of a
# *_load.c file that loads it on first use.  Needs $public (below).
check_names() {
  local o=$1 module=$2 src=$3 sym
  case $src in *_load.c) return ;; esac
  while read -r sym; do
    case $module:$sym in
      *:__*) continue ;; # the compiler's own (ASan's __odr_asan.*)
      cli:cli_* | cli:main | serve:serve_*) continue ;;
      cli:* | serve:*) ;;
      *:faucet__* | *:faucet_[a-z]*__*) continue ;;
      *) grep -qx "$sym" <<<"$public" && continue ;;
    esac
    add "$src: $sym" "an internal name without its prefix (faucet__ or faucet_<module>__ in the library, cli_ in src/cli, serve_ in src/serve)"
  done < <(nm --defined-only "$o" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort -u)
}

# ---- calls -------------------------------------------------------------
objdir=$build/CMakeFiles/faucet_obj.dir/src
if [ -d "$objdir" ]; then
  defs=$(mktemp)
  trap 'rm -f "$defs"' EXIT
  for o in "$objdir"/*/*.o; do
    m=$(basename "$(dirname "$o")")
    [ -f "src/$m/$(basename "$o" .o)" ] || continue
    # A *_load.c file defines a client library's own functions (json-c's,
    # libpq's), which forward to it once it is loaded: calling them is
    # calling that library, not the module.
    case $o in *_load.c.o) continue ;; esac
    nm --defined-only "$o" | awk -v m="$m" '$2 ~ /^[TDBR]$/ {print $3, m}'
  done | sort -u >"$defs"
  public=$(nm -D --defined-only "$build/libfaucet.so" 2>/dev/null | awk '{print $3}' | sort -u)
  for o in "$objdir"/*/*.o "$build"/CMakeFiles/faucet.dir/src/cli/*.o \
    "$build"/CMakeFiles/faucet.dir/src/serve/*.o; do
    [ -f "$o" ] || continue
    module=$(basename "$(dirname "$o")")
    src=src/$module/$(basename "$o" .o)
    # An object left behind by a source that moved or went away.
    [ -f "$src" ] || continue
    own=$(rank "$module")
    check_names "$o" "$module" "$src"
    while read -r sym target; do
      if [ "$module" = cli ] || [ "$module" = serve ]; then
        if [ "$target" != util ] && ! grep -qx "$sym" <<<"$public"; then
          add "$src -> $target" "calls $sym: the command may use util and the public API only"
        fi
      elif [ "$target" != "$module" ] && [ "$(rank "$target")" -gt "$own" ]; then
        add "$src -> $target" "calls $sym ($target is above $module)"
      fi
    done < <(nm --undefined-only "$o" | awk '{print $2}' | sort -u | join - "$defs")
  done

else
  echo "check-layers: no objects under $objdir: only the includes were checked"
fi

# ---- verdict -----------------------------------------------------------
if [ $list = 1 ]; then
  for v in "${violations[@]+"${violations[@]}"}"; do
    echo "${v%%	*}	(${v#*	})"
  done
  exit 0
fi
status=0
for v in "${violations[@]+"${violations[@]}"}"; do
  entry=${v%%	*}
  known=0
  for k in "${KNOWN[@]+"${KNOWN[@]}"}"; do
    [ "$k" = "$entry" ] && known=1
  done
  if [ $known = 0 ]; then
    echo "check-layers: $entry: ${v#*	}" >&2
    status=1
  fi
done
for k in "${KNOWN[@]+"${KNOWN[@]}"}"; do
  found=0
  for v in "${violations[@]+"${violations[@]}"}"; do
    [ "${v%%	*}" = "$k" ] && found=1
  done
  [ $found = 1 ] || echo "check-layers: '$k' is fixed: remove it from KNOWN in $0"
done
if [ $status = 0 ]; then
  echo "check-layers: ok (${#KNOWN[@]} known violations left, listed in $0)"
else
  echo "check-layers: a module uses one above it (order: ${LAYERS[*]})" >&2
fi
exit $status
