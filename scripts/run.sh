#!/usr/bin/env bash
# Build faucet and run its main job on the embedded default, the file store:
#  1. the incremental-copy example twice (the second run copies only what
#     was appended, resuming from its bookmark);
#  2. a short operator session with the `faucet` command: put bookmarks,
#     show them, export them, import them into a second store, back-fill a
#     few days and look at the backfill's status, run doctor.
# The demo's store stays in build/demo/state (replaced on the next run); the
# script ends by printing its path and commands to try on it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

demo="$PWD/build/demo"
rm -rf "$demo"
mkdir -p "$demo"
state="$demo/state"

echo "== incremental copy, first run =="
printf 'row 1\nrow 2\nrow 3\n' > "$demo/source.log"
./build/incremental_copy "$state" "$demo/source.log" "$demo/copy.log"
echo "== two rows appended; second run copies only those =="
printf 'row 4\nrow 5\n' >> "$demo/source.log"
./build/incremental_copy "$state" "$demo/source.log" "$demo/copy.log"
cmp "$demo/source.log" "$demo/copy.log" && echo "copy.log is identical to source.log"

if [ -x build/faucet ]; then
  f=./build/faucet
  export FAUCET_STATE="file:$state"
  echo
  echo "== faucet state put / list / show =="
  $f state put orders::default '{"cursor":"2026-11-29T00:00:00Z","offset":18446744073709551615}'
  $f state put orders::eu '{"cursor":"2026-11-28T00:00:00Z"}'
  $f state put acme::orders::eu '{"page":3}'
  $f state list
  $f state show orders
  echo "== faucet state get =="
  $f state get orders::default
  echo "== faucet state export / import into a second store =="
  $f state export orders -o "$demo/orders.json"
  cat "$demo/orders.json"; echo
  $f --state "file:$demo/second" state import "$demo/orders.json"
  $f --state "file:$demo/second" state list
  echo "== faucet backfill: three days, one unit a day, in Berlin time =="
  $f backfill --pipeline orders --from 2026-06-01 --to 2026-06-04 --window 1d \
    --timezone Europe/Berlin -- sh -c 'echo "loading $1 .. $2"' unit '${backfill.start}' '${backfill.end}'
  $f backfill status --pipeline orders
  echo "== faucet doctor =="
  $f doctor
  echo
  echo "The demo's state store is in $state (kept until the next run)."
  echo "Try:"
  echo "  ./build/faucet --state file:$state state show orders"
  echo "  ./build/faucet --state file:$state backfill status --pipeline orders"
  echo "  ./build/faucet --state file:$state doctor"
fi
