#!/usr/bin/env bash
# Build faucet and run its main job on the embedded default, the file store:
#  1. the incremental-copy example twice (the second run copies only what
#     was appended, resuming from its bookmark);
#  2. a short operator session with the `faucet` command: put bookmarks,
#     show them, export them, import them into a second store, run doctor.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

demo=$(mktemp -d "${TMPDIR:-/tmp}/faucet-demo-XXXXXX")
trap 'rm -rf "$demo"' EXIT
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
  $f state put orders::default::__status__ '{"last":"ok"}'
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
  echo "== faucet doctor =="
  $f doctor
fi
