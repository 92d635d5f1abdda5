#!/usr/bin/env bash
# Side by side with the original: our file and memory stores (bench_core)
# against the original Rust faucet_core's (bench/original, built from the
# seed sources in shared/seeds), in alternating rounds on the normal disk.
#
# Usage: bench/original.sh [BUILD_DIR] [--rounds N] [--seed-tests]
#
#   BUILD_DIR     a CMake build of this repository (Release for figures worth
#                 quoting); bench_core is built there if it is missing.  The
#                 original is built into BUILD_DIR/original-target, the data
#                 goes under BUILD_DIR/bench-data (never tmpfs).
#   --rounds N    rounds of (ours, original), at least 3 (default 3)
#   --seed-tests  also run the seeds' own tests (cargo test) first
#
# Needs rustc >= 1.89 and cargo on PATH (or in ~/.cargo/bin), and the crate
# sources Debian packages (nothing is downloaded; cargo's crates-io source is
# replaced by /usr/share/cargo/registry, see bench/original/.cargo):
#   scripts/install-deps.sh --original-bench
# The seeds are read from $FAUCET_SEEDS, by default ../shared/seeds beside
# the repository.
#
# Each figure is printed as the median over the rounds of ours, of the
# original's, and of the per-round ratio ours/original (its range beside
# it): under 1 means ours takes less time, except for the throughput lines,
# where over 1 means ours does more.  For durable writes the ratio that
# counts is the one against each program's own two-fsync floor, measured in
# the same run in alternating blocks: the floor here moves by 2-10x from one
# minute to the next, so the absolute times of two runs minutes apart say
# little (their ratio is printed too).  The throughputs have no floor
# measured beside them: their ratio moves with the disk.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

build_arg=""
rounds=3
seed_tests=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --seed-tests) seed_tests=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "original.sh: unknown option $1" >&2; exit 2 ;;
    *) [ -z "$build_arg" ] || { echo "original.sh: one BUILD_DIR only" >&2; exit 2; }
       build_arg=$1; shift ;;
  esac
done
case "$rounds" in ''|*[!0-9]*) echo "original.sh: --rounds takes a number" >&2; exit 2 ;; esac
[ "$rounds" -ge 3 ] || { echo "original.sh: at least 3 rounds" >&2; exit 2; }

build=$(cd "${build_arg:-build}" && pwd)
data="$build/bench-data/original-side-by-side"
mkdir -p "$data"
. "$here/bench/lib.sh"
refuse_tmpfs "$data" original.sh

# ---- the toolchain and the crates -------------------------------------------
PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
if ! command -v cargo >/dev/null || ! command -v rustc >/dev/null; then
  echo "original.sh: cargo and rustc (>= 1.89) are needed on PATH" >&2
  exit 1
fi
rustc_version=$(rustc --version)
minor=$(echo "$rustc_version" | sed -n 's/^rustc 1\.\([0-9]*\)\..*/\1/p')
if [ -z "$minor" ] || [ "$minor" -lt 89 ]; then
  echo "original.sh: $rustc_version is too old: the seeds need 1.89 (let-chains: 1.88, File::try_lock: 1.89)" >&2
  exit 1
fi
registry=/usr/share/cargo/registry
if ! ls -d "$registry"/tokio-1.* >/dev/null 2>&1; then
  echo "original.sh: no crate sources in $registry; install them with" >&2
  echo "  scripts/install-deps.sh --original-bench" >&2
  exit 1
fi
FAUCET_SEEDS="${FAUCET_SEEDS:-$here/../shared/seeds}"
if [ ! -d "$FAUCET_SEEDS" ]; then
  echo "original.sh: no seed directory $FAUCET_SEEDS (set FAUCET_SEEDS)" >&2
  exit 1
fi
FAUCET_SEEDS=$(cd "$FAUCET_SEEDS" && pwd)
export FAUCET_SEEDS
export CARGO_TARGET_DIR="$build/original-target"

# cargo reads bench/original/.cargo/config.toml (the offline Debian source)
# only when run from inside bench/original.
cd "$here/bench/original"
if [ "$seed_tests" = 1 ]; then
  echo "== seed tests (cargo test -p faucet_core) ==" >&2
  cargo test --quiet -p faucet_core 2>&1 | grep -E '^(test result|error|failures)' >&2
fi
echo "original.sh: building the original (cargo build --release)" >&2
cargo build --quiet --release -p original_bench
original="$CARGO_TARGET_DIR/release/original_bench"
cd "$here"

ours="$build/bench_core"
if [ ! -x "$ours" ]; then
  echo "original.sh: building bench_core in $build" >&2
  cmake --build "$build" --target bench_core >/dev/null
fi

# ---- alternating rounds ----------------------------------------------------
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(uptime)
for r in $(seq 1 "$rounds"); do
  echo "original.sh: round $r/$rounds: ours" >&2
  "$ours" "$data/ours" >"$data/ours.$r.txt"
  echo "original.sh: round $r/$rounds: original" >&2
  "$original" "$data/original" >"$data/original.$r.txt"
done
load_after=$(uptime)

echo "Side by side with the original: $rounds rounds, $started to $(date -u '+%H:%M UTC')"
echo "ours: $ours ($(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "original: faucet_core from $FAUCET_SEEDS, $rustc_version, Debian crates (tokio $(basename "$(ls -d "$registry"/tokio-1.* | tail -1)" | sed 's/tokio-//'))"
echo "load before: $load_before"
echo "load after:  $load_after"
echo "raw outputs: $data/{ours,original}.N.txt"
echo

# Every output line is bench_core's: a 44-column label, the value, the unit,
# and for some a ratio to the floor ("1.06x").
awk -v rounds="$rounds" -v dir="$data" '
function median(a, n,    i, j, t) {
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function label(line) { sub(/ +$/, "", line); return line }
function load(side, r,    file, line, lab, rest, f) {
  file = dir "/" side "." r ".txt"
  while ((getline line < file) > 0) {
    lab = label(substr(line, 1, 44)); rest = substr(line, 45)
    split(rest, f, " ")
    if (f[1] !~ /^[0-9.]+$/) continue
    val[side, r, lab] = f[1] + 0
    if (f[3] ~ /^[0-9.]+x$/) xfloor[side, r, lab] = substr(f[3], 1, length(f[3]) - 1) + 0
  }
  close(file)
}
function fmt(v, unit) {
  if (unit == "op/s") return sprintf("%.0f op/s", v)
  if (unit == "ms" && v >= 100) return sprintf("%.0f ms", v)
  if (unit == "ms") return sprintf("%.2f ms", v)
  if (unit == "us" && v < 1) return sprintf("%.3f us", v)
  return sprintf("%.2f %s", v, unit)
}
# name: how the figure is printed; lab: the label in both outputs; unit;
# inv: 1 when the output gives M/s and the table gives us per operation;
# durable: 1 for a durable write (its line has the ratio to the floor its
# program measured in alternating blocks).
function fig(name, lab, unit, inv, durable,    r, o, g, ra, rx, n, ov, gv, lo, hi, xlo, xhi) {
  n = 0
  for (r = 1; r <= rounds; r++) {
    if (!((("ours", r, lab) in val) && (("original", r, lab) in val))) {
      printf "| %s | (missing in round %d) | | |\n", name, r; return
    }
    o = val["ours", r, lab]; g = val["original", r, lab]
    if (inv) { o = 1 / o; g = 1 / g }
    n++; ov[n] = o; gv[n] = g; ra[n] = o / g
    if (n == 1 || ra[n] < lo) lo = ra[n]
    if (n == 1 || ra[n] > hi) hi = ra[n]
    if (durable) rx[n] = xfloor["ours", r, lab] / xfloor["original", r, lab]
    if (durable && (n == 1 || rx[n] < xlo)) xlo = rx[n]
    if (durable && (n == 1 || rx[n] > xhi)) xhi = rx[n]
  }
  printf "| %s | %s | %s | ", name, fmt(median(ov, n), unit), fmt(median(gv, n), unit)
  if (durable) printf "**%.2fx** (%.2f-%.2f) against each one'"'"'s floor; absolute %.2fx (%.2f-%.2f) |\n", median(rx, n), xlo, xhi, median(ra, n), lo, hi
  else printf "**%.2fx** (%.2f-%.2f) |\n", median(ra, n), lo, hi
}
# The ratio each program measured within its own run (8 threads against 1).
function scaling(name, lab,    r, n, ov, gv) {
  n = 0
  for (r = 1; r <= rounds; r++) {
    if (!((("ours", r, lab) in xfloor) && (("original", r, lab) in xfloor))) return
    n++; ov[n] = xfloor["ours", r, lab]; gv[n] = xfloor["original", r, lab]
  }
  printf "| %s | %.2fx | %.2fx | - |\n", name, median(ov, n), median(gv, n)
}
BEGIN {
  for (r = 1; r <= rounds; r++) { load("ours", r); load("original", r) }
  print "| figure | ours | original | ours / original: median of the rounds (range) |"
  print "|---|---|---|---|"
  fig("two-fsync floor, each program its own (how the disk drifts)", "floor: temp+fsync+rename+fsync dir", "ms", 0, 0)
  fig("file put, one key", "file put, one key", "ms", 0, 1)
  fig("file put, distinct keys", "file put, distinct keys", "ms", 0, 1)
  fig("file compare-and-put cycle", "file compare-and-put cycle", "ms", 0, 1)
  fig("file put throughput, 1 thread (higher is better)", "file put throughput, 1 thread", "op/s", 0, 0)
  fig("file put throughput, 8 threads (higher is better)", "file put throughput, 8 threads", "op/s", 0, 0)
  scaling("8 threads against 1 thread, in the same run", "file put throughput, 8 threads")
  fig("file get", "file get", "us", 0, 0)
  fig("file list, 100,000 keys", "file list, 100,000 keys", "ms", 0, 0)
  fig("file export, 100,000 keys (+ JSON text)", "file export, 100,000 keys", "ms", 0, 0)
  fig("memory store get", "memory get", "us", 1, 0)
  fig("memory store put", "memory put", "us", 1, 0)
}'
