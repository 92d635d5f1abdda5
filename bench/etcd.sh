#!/usr/bin/env bash
# etcd.sh - the etcd store's figures (bench/README.md), measured in one run:
#
#   bench/etcd.sh BUILD_DIR
#
# 1. bench_etcd against the shared cluster of scripts/test-servers.sh
#    (FAUCET_TEST_ETCD_URL; started here when unset): point get and put
#    beside a bare gateway round trip, list of 100,000 keys beside a bare
#    gRPC range of them (the floor) and a bare gateway range;
# 2. `faucet state export` of those 100,000 keys beside a bare gRPC range
#    of them with values by curl (the floor: the store reads ranges through
#    gRPC), and a bare gateway range (the old transport's floor);
# 3. on a private 3-member cluster (tests/cluster/etcd_cluster.sh), two
#    compare-and-put writers, the leader SIGKILLed: the time from the kill to
#    the first acknowledged write that began after it.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
started=""
if [ -z "${FAUCET_TEST_ETCD_URL:-}" ]; then
  eval "$("$src/scripts/test-servers.sh" start)"
  started=$FAUCET_TEST_SERVERS_DIR
fi
work=$(mktemp -d "$build/bench-etcd.XXXXXX")
. "$src/tests/cluster/etcd_cluster.sh"
cleanup() {
  touch "$work/stop"
  ec_stop 2>/dev/null || true
  rm -rf "$work"
  [ -z "$started" ] || "$src/scripts/test-servers.sh" stop "$started"
}
trap cleanup EXIT

"$build/bench_etcd" "$FAUCET_TEST_ETCD_URL" 100000

# Export: the first endpoint, the bench's prefix (bench_etcd writes under
# PREFIX_bench), pipeline "big"; beside it the floors, a bare range of the
# same keys with their values in one reply by curl (not parsed), through
# gRPC (HTTP/2) and through the gateway.  Three alternating blocks, medians
# (the machine is shared: one figure lies).
first=${FAUCET_TEST_ETCD_URL#etcd://}
first=${first%%,*}
prefix=${FAUCET_TEST_ETCD_URL##*/}_bench
b64() { printf '%s' "$1" | base64 -w0; }
bare_body="{\"key\":\"$(b64 "$prefix/big::")\",\"range_end\":\"$(b64 "$prefix/big:;")\"}"
# The gRPC request: a RangeRequest (key=1, range_end=2) in a gRPC frame.
python3 - "$prefix/big::" "$prefix/big:;" >"$work/grpc.req" <<'PY'
import sys
def field(n, b):
    assert len(b) < 128
    return bytes([n << 3 | 2, len(b)]) + b
m = field(1, sys.argv[1].encode()) + field(2, sys.argv[2].encode())
sys.stdout.buffer.write(b"\0" + len(m).to_bytes(4, "big") + m)
PY
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
exp_t=() bare_t=() grpc_t=()
for _ in 1 2 3; do
  t0=$(date +%s%N)
  "$build/faucet" --state "etcd://$first/$prefix" state export big >"$work/export.json"
  t1=$(date +%s%N)
  curl -sf --http2-prior-knowledge -H 'Content-Type: application/grpc' -H 'TE: trailers' \
    -o "$work/bare.grpc" --data-binary @"$work/grpc.req" "http://$first/etcdserverpb.KV/Range"
  t2=$(date +%s%N)
  curl -sf -o "$work/bare.json" -X POST -d "$bare_body" "http://$first/v3/kv/range"
  t3=$(date +%s%N)
  exp_t+=($(((t1 - t0) / 1000000)))
  grpc_t+=($(((t2 - t1) / 1000000)))
  bare_t+=($(((t3 - t2) / 1000000)))
done
e=$(printf '%s\n' "${exp_t[@]}" | median)
g=$(printf '%s\n' "${grpc_t[@]}" | median)
f=$(printf '%s\n' "${bare_t[@]}" | median)
printf 'etcd export     %8.3f s    %s keys, faucet state export (target <= 2 s; median of 3)\n' \
  "$(echo "$e / 1000" | bc -l)" \
  "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["keys"]))' "$work/export.json")"
printf 'bare grpc+val   %8.3f s    the same keys with values, one gRPC reply by curl, unparsed (the floor); ratio %.2fx\n' \
  "$(echo "$g / 1000" | bc -l)" "$(echo "$e / $g" | bc -l)"
printf 'bare range+val  %8.3f s    the same by the JSON gateway (the old transport'"'"'s floor); ratio %.2fx\n' \
  "$(echo "$f / 1000" | bc -l)" "$(echo "$e / $f" | bc -l)"
echo "targets: list of 100k <= 1.5 s, export of 100k <= 2 s (issue 22)"

# Failover: kill the leader, time to the first acknowledged write after it.
ec_start "$work/cluster"
url="$EC_URL/bench?request_timeout=8s&dial_timeout=300ms"
writers=()
for w in 1 2; do
  "$build/tests/faucet_counter" "$url" bench::counter "$work/log.$w" "$work/stop" >/dev/null 2>&1 &
  writers+=($!)
done
deadline=$((SECONDS + 30))
until [ "$(cat "$work"/log.* 2>/dev/null | grep -c '^ack ')" -ge 50 ] || [ $SECONDS -ge $deadline ]; do :; done
leader=$(ec_leader_index)
kill_ms=$(date +%s%3N)
ec_kill "$leader"
deadline=$((SECONDS + 30))
first_ack=""
while [ -z "$first_ack" ] && [ $SECONDS -lt $deadline ]; do
  first_ack=$(cat "$work"/log.* | awk -v k="$kill_ms" '$1 == "ack" && $4 > k { print $3 }' | sort -n | head -1)
done
touch "$work/stop"
wait "${writers[@]}"
if [ -n "$first_ack" ]; then
  printf 'etcd failover   %8.3f s    from SIGKILL of the leader to the first acknowledged write begun after it\n' \
    "$(echo "($first_ack - $kill_ms) / 1000" | bc -l)"
else
  echo "etcd failover: no write was acknowledged within 30 s of the leader's death" >&2
  exit 1
fi
