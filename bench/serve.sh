#!/usr/bin/env bash
# serve.sh - the figures of `faucet serve` (doc/design.md §9) on the file store.
#
#   bench/serve.sh BUILD_DIR
#
#  1. GET /v1/keys/{key} with keep-alive, 10 s each:
#     a. the target: 8 connections from one wrk thread - requests/s (target
#        >= 20,000 on 2 cores) and, at that load, p99 (target <= 2 ms);
#     b. saturation: 32 connections from two wrk threads - the most the
#        server answers, and its p99, which is then queueing: wrk's two
#        threads and the server's two compete for the two cores, so a
#        request waits for a core rather than for the server.
#  2. PUT /v1/keys/{key}, one connection, each PUT a new value: the mean
#     latency beside the store's own durable put and beside the same put
#     recorded as a run (bench_serve_put), which is what every API write is
#     (target: PUT <= 1.2x the run-recorded put).  A durable write's time
#     drifts by a third from one minute to the next on this disk, so the
#     two alternate, $BENCH_SERVE_PUT_BLOCKS blocks (default 7) of 2 s of
#     PUTs and 60 run-recorded puts, and the figure is the median of the
#     blocks' own ratios.
#
# wrk comes from scripts/install-deps.sh.  Data goes under BUILD_DIR (on
# the normal disk: fsync on tmpfs is free and would make the ratio a lie).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
command -v wrk >/dev/null || { echo "serve.sh: wrk is not installed (scripts/install-deps.sh)" >&2; exit 1; }
data=$(mktemp -d "$build/bench-serve.XXXXXX")
log=$data/serve.log
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$data"
}
trap cleanup EXIT
"$build/faucet" -q --state "file:$data/state" state put 'bench::default::cursor' '{"cursor":123456,"ts":"2026-01-01T00:00:00Z"}'
: >"$log"
"$build/faucet" --state "file:$data/state" serve --listen 127.0.0.1:0 --threads 2 --max-connections 128 2>"$log" &
pid=$!
for _ in $(seq 200); do
  grep -q 'listening on' "$log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.05
done
port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$log")
[ -n "$port" ] || { cat "$log" >&2; exit 1; }
url="http://127.0.0.1:$port/v1/keys/bench%3A%3Adefault%3A%3Acursor"

# The access log costs a write(2) per request; it goes to a file here.
to_ms() { case $1 in *us) awk -v v="${1%us}" 'BEGIN{printf "%.3f", v/1000}' ;; *ms) echo "${1%ms}" ;; *s) awk -v v="${1%s}" 'BEGIN{printf "%.3f", v*1000}' ;; esac; }
get_load() { # THREADS CONNECTIONS TITLE TARGETS(0/1)
  local out rps p99
  out=$(wrk -t"$1" -c"$2" -d10s --latency "$url")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  echo "GET /v1/keys/{key}, keep-alive, $3:"
  if [ "$4" = 1 ]; then
    printf '  %-34s %10.0f req/s  (target >= 20000)\n' "throughput" "$rps"
    printf '  %-34s %10.3f ms     (target <= 2, at that throughput)\n' "p99 latency" "$p99"
  else
    printf '  %-34s %10.0f req/s\n' "throughput" "$rps"
    printf '  %-34s %10.3f ms     (queueing for the cores)\n' "p99 latency" "$p99"
  fi
}
get_load 1 8 "8 connections, one wrk thread (the target)" 1
get_load 2 32 "32 connections, two wrk threads (saturation)" 0

cat >"$data/put.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  return wrk.format("PUT", "/v1/keys/bench%3A%3Adefault%3A%3Aput", {["Content-Type"] = "application/json"}, '{"n":' .. n .. '}')
end
LUA
blocks=${BENCH_SERVE_PUT_BLOCKS:-7}
: >"$data/put-blocks.txt"
for _ in $(seq "$blocks"); do
  out=$(wrk -t1 -c1 -d2s --latency -s "$data/put.lua" "http://127.0.0.1:$port")
  mean=$(to_ms "$(awk '$1 == "Latency" && $2 ~ /s$/ {print $2; exit}' <<<"$out")")
  floors=$("$build/bench_serve_put" "$data" 60)
  printf '%s %s %s\n' "$(awk -v m="$mean" 'BEGIN{print m*1000}')" \
    "$(awk '$1 == "put_us" {print $2}' <<<"$floors")" \
    "$(awk '$1 == "run_put_us" {print $2}' <<<"$floors")" >>"$data/put-blocks.txt"
done
# The median of column C (1 HTTP, 2 plain put, 3 run put, 4 HTTP/run).
median() {
  awk '{print $1, $2, $3, $1 / $3}' "$data/put-blocks.txt" | sort -g -k"$1" |
    awk -v c="$1" '{v[NR] = $c} END {print v[int((NR + 1) / 2)]}'
}
range() {
  awk '{r = $1 / $3; if (NR == 1 || r < lo) lo = r; if (NR == 1 || r > hi) hi = r}
       END {printf "%.2f-%.2fx", lo, hi}' "$data/put-blocks.txt"
}
echo "PUT /v1/keys/{key}, one connection ($blocks alternating blocks, medians):"
printf '  %-34s %10.1f us\n' "HTTP PUT (mean)" "$(median 1)"
printf '  %-34s %10.1f us\n' "store put (durable, no run)" "$(median 2)"
printf '  %-34s %10.1f us\n' "store put recorded as a run" "$(median 3)"
printf '  %-34s %10.2fx    (target <= 1.2x; blocks %s)\n' "HTTP PUT / run-recorded put" "$(median 4)" "$(range)"

# 3. The server idle with an open dashboard: one /v1/events stream for
#    $BENCH_SERVE_IDLE_S seconds (default 30), the server's CPU time from
#    /proc (utime + stime) over that time; with the one key above, then with
#    $BENCH_SERVE_KEYS more (default 20000: the poller's scan grows with
#    the store, and its rate adapts to what a scan costs).  Target < 1%.
idle_s=${BENCH_SERVE_IDLE_S:-30}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
idle_cpu() { # LABEL
  local stream t0 t1
  curl -sN "http://127.0.0.1:$port/v1/events" >/dev/null &
  stream=$!
  sleep 3 # the stream's baseline poll and the first interval pass
  t0=$(cpu_ticks)
  sleep "$idle_s"
  t1=$(cpu_ticks)
  kill "$stream" 2>/dev/null; wait "$stream" 2>/dev/null || true
  printf '  %-34s %10.2f %%     (target < 1%%)\n' "$1" \
    "$(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v s="$idle_s" 'BEGIN{print 100 * d / hz / s}')"
}
echo "Idle with an open /v1/events stream (${idle_s} s, server CPU):"
idle_cpu "1 key"
nkeys=${BENCH_SERVE_KEYS:-20000}
python3 - "$nkeys" >"$data/big.json" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps({"version": 1, "pipeline": "big",
                  "keys": {"big::r%d" % i: {"cursor": i} for i in range(n)}}))
PY
"$build/faucet" -q --state "file:$data/state" state import "$data/big.json"
idle_cpu "$nkeys more keys"
