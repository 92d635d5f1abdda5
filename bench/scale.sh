#!/usr/bin/env bash
# bench/scale.sh - how faucet's CLI scales with the size of a namespace.
#
# Usage: bench/scale.sh [BUILD_DIR] [--sizes "10000 100000 1000000"]
#                       [--backends "file sqlite postgres redis etcd"]
#                       [--max-file N] [--max-etcd N] [--neighbours N]
#
# For each backend and size: import a generated export document of that
# many keys into an empty store, list the namespace, export it, copy it to
# a second empty store of the same backend, then a fresh-process get and
# put of one key, then the import's undo (the put's undone first; `undo`:
# every key restored by one process).  Every cell is one whole `faucet` process, timed with
# /usr/bin/time: wall seconds and peak RSS (MB).  --max-file caps the file
# store's sizes (its import pays two fsyncs per key), --max-etcd etcd's
# (default 100000: etcd's gateway answers a range of 100,000 keys in
# seconds, and its default 2 GB quota holds a few million keys at most).
# For Redis, after each size's row, the import against its floor: the same
# keys and values sent as pipelined SETs (redis-cli --pipe).  Then, for
# Redis, listing a 10-key namespace while the database holds --neighbours
# (default 2,000,000) other keys, without and with the namespace index.
#
# Run by hand, not by CI, on the normal disk (data under
# BUILD_DIR/bench-data).  PostgreSQL and Redis come from
# scripts/test-servers.sh, pinned to CPU 1 with their client on CPU 0 as
# bench/run.sh does, unless FAUCET_TEST_PG_URL is already set; the file
# store and SQLite cells, which have no server, run unpinned (a file-store
# batch writes one group while a second thread commits the one before).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=build
sizes="10000 100000 1000000"
backends="file sqlite postgres redis etcd"
max_file=100000
max_etcd=100000
neighbours=2000000
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --max-file) max_file=$2; shift 2 ;;
    --max-etcd) max_etcd=$2; shift 2 ;;
    --neighbours) neighbours=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) build=$1; shift ;;
  esac
done
build=$(cd "$build" && pwd)
faucet=$build/faucet
data="$build/bench-data/scale"
# Deleted file stores are removed only after the last figure: this disk's
# ext4 has no journal, and then allocating an inode skips those freed in
# the last minutes (recently_deleted), one by one - an import right after
# an `rm -rf` of 100,000 files ran 2-3x slower.  Run the script again only
# some minutes after the last run's end.
trash="$build/bench-data/trash.$$"
mkdir -p "$trash"
if [ -d "$data" ]; then mv "$data" "$trash/previous"; fi
mkdir -p "$data"
. "$here/bench/lib.sh"
refuse_tmpfs "$data" scale
pin=()
if [ -z "${FAUCET_TEST_PG_URL:-}" ]; then
  if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    export FAUCET_SERVERS_CPUS=1
    pin=(taskset -c 0)
  fi
  eval "$("$here/scripts/test-servers.sh" start)"
  trap '"$here/scripts/test-servers.sh" stop "$FAUCET_TEST_SERVERS_DIR"; rm -rf "$trash"' EXIT
else
  trap 'rm -rf "$trash"' EXIT
fi
rcli() {
  local hostport=${FAUCET_TEST_REDIS_URL##*@}
  hostport=${hostport%%/*}
  REDISCLI_AUTH="$FAUCET_TEST_PASSWORD" redis-cli -h 127.0.0.1 -p "${hostport##*:}" -n 0 "$@"
}
psql_() { PGOPTIONS='-c client_min_messages=warning' psql -q -X "${FAUCET_TEST_PG_URL}" "$@"; }

# An export document of N keys, values shaped like bookmarks.
make_doc() { # N FILE
  python3 - "$1" "$2" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write('{"version":1,"pipeline":"scale","exported_at":"2026-11-30T00:00:00+00:00","keys":{')
    for i in range(n):
        f.write('%s"scale::row%07d":{"cursor":%d,"updated_at":"2026-11-30T12:34:56+00:00","shard":%d}'
                % ("," if i else "", i, 1000000000 + i, i % 16))
    f.write('}}')
PY
}

# The floor of a Redis import: the same keys and values as SETs in
# Redis's protocol, for redis-cli --pipe (what redis-benchmark -P does).
make_resp() { # DOC FILE NAMESPACE
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
doc, path, ns = sys.argv[1], sys.argv[2], sys.argv[3]
with open(doc) as f:
    keys = json.load(f)["keys"]
with open(path, "wb") as out:
    for k, v in keys.items():
        key = ("%s:%s" % (ns, k)).encode()
        val = json.dumps(v, separators=(",", ":")).encode()
        out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(val), val))
PY
}

url_of() { # BACKEND N SUFFIX
  case $1 in
    file) echo "file:$data/file-$2$3" ;;
    sqlite) echo "sqlite:$data/sqlite-$2$3.db" ;;
    postgres) echo "${FAUCET_TEST_PG_URL}?table=scale_$2$3" ;;
    redis) echo "${FAUCET_TEST_REDIS_URL}?namespace=scale$2$3" ;;
    etcd) echo "${FAUCET_TEST_ETCD_URL}_scale$2$3" ;;
  esac
}
# etcdctl against the test cluster: its endpoints, as http://H:P,...
ectl() {
  local eps=${FAUCET_TEST_ETCD_URL#etcd://}
  eps=${eps%%/*}
  ETCDCTL_API=3 etcdctl --endpoints="http://${eps//,/,http://}" "$@"
}

drop() { # BACKEND N SUFFIX
  case $1 in
    file) if [ -d "$data/file-$2$3" ]; then mv "$data/file-$2$3" "$trash/file-$2$3.$RANDOM"; fi ;;
    sqlite) rm -f "$data/sqlite-$2$3.db"* ;;
    postgres) psql_ -c "DROP TABLE IF EXISTS scale_$2$3" >/dev/null ;;
    redis) rcli EVAL "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end" 0 "scale$2$3:*" >/dev/null ;;
    etcd) ectl del --prefix "${FAUCET_TEST_ETCD_URL##*/}_scale$2$3/" >/dev/null ;;
  esac
}

# One cell: "seconds/peakMB", or "FAIL" with the error kept in the log.
cell() { # ARGS...
  local t="$data/time.txt"
  if /usr/bin/time -f "%e %M" -o "$t" "${cpin[@]}" "$faucet" "$@" >"$data/out.txt" 2>"$data/err.txt"; then
    awk '{printf "%.2fs/%dMB", $1, $2/1024}' "$t"
  else
    echo "FAIL($(tail -c 200 "$data/err.txt" | tr '\n' ' '))" >&2
    printf 'FAIL'
  fi
}

printf '%-9s %8s  %-14s %-14s %-14s %-14s %-14s %-14s %-14s %s\n' backend keys import list export copy get put undo doc
for b in $backends; do
  for n in $sizes; do
    if [ "$b" = file ] && [ "$n" -gt "$max_file" ]; then
      continue
    fi
    if [ "$b" = etcd ] && [ "$n" -gt "$max_etcd" ]; then
      continue
    fi
    # The client is pinned away from the servers only where there is a
    # server: the file store and SQLite run in the process, on both CPUs.
    cpin=()
    case $b in postgres|redis|etcd) cpin=("${pin[@]}") ;; esac
    doc="$data/doc-$n.json"
    [ -f "$doc" ] || make_doc "$n" "$doc"
    drop "$b" "$n" ""
    drop "$b" "$n" "_copy"
    src=$(url_of "$b" "$n" "")
    dst=$(url_of "$b" "$n" "_copy")
    imp=$(cell --state "$src" state import "$doc")
    lst=$(cell --state "$src" state list scale::)
    exp=$(cell --state "$src" state export scale -o "$data/export.json")
    cpy=$(cell --state "$src" state copy scale --to "$dst")
    get=$(cell --state "$src" state get scale::row0000500)
    put=$(cell --state "$src" state put scale::row0000500 '{"cursor":1}')
    # The import's undo (every key restored, its bookkeeping read and
    # written): the put's undo first, so that the import is the newest run.
    "$faucet" -q --state "$src" state undo scale >/dev/null 2>&1 || true
    und=$(cell --state "$src" state undo scale)
    printf '%-9s %8s  %-14s %-14s %-14s %-14s %-14s %-14s %-14s %sMB\n' "$b" "$n" "$imp" "$lst" "$exp" \
      "$cpy" "$get" "$put" "$und" "$(awk -v b="$(stat -c %s "$doc")" 'BEGIN {printf "%.1f", b / 1048576}')"
    drop "$b" "$n" ""
    drop "$b" "$n" "_copy"
    if [ "$b" = redis ]; then
      resp="$data/resp-$n.txt"
      [ -f "$resp" ] || make_resp "$doc" "$resp" "scale${n}_floor"
      drop redis "$n" "_floor"
      /usr/bin/time -f "%e" -o "$data/time.txt" "${cpin[@]}" bash -c \
        "$(declare -f rcli); rcli --pipe < '$resp' > '$data/out.txt'"
      floor=$(cat "$data/time.txt")
      drop redis "$n" "_floor"
      printf 'redis %s keys: import %s against %ss for the same keys and values as pipelined SETs (redis-cli --pipe): %s (target <= 1.3x)\n' \
        "$n" "${imp%%/*}" "$floor" "$(awk -v a="${imp%%s/*}" -v b="$floor" 'BEGIN {printf "%.2fx", a / b}')"
    fi
  done
done

case " $backends " in *" redis "*)
  cpin=("${pin[@]}")
  # Neighbours: plain string keys of nobody's namespace, made server-side.
  rcli EVAL "for i = 1, tonumber(ARGV[1]) do redis.call('SET', 'neighbour:' .. i, 'x') end" 0 "$neighbours" >/dev/null
  for idx in false true; do
    url="${FAUCET_TEST_REDIS_URL}?namespace=small_$idx&index=$idx"
    for i in 0 1 2 3 4 5 6 7 8 9; do "$faucet" --state "$url" state put "small::k$i" "$i" 2>/dev/null; done
    "$faucet" --state "$url" state list small:: >/dev/null # warm the connection path
    t=$(cell --state "$url" state list small::)
    c=$(wc -l <"$data/out.txt")
    # The listing alone, in milliseconds: the fastest of five whole processes.
    best=
    for i in 1 2 3 4 5; do
      a=$(date +%s%N)
      "${pin[@]}" "$faucet" --state "$url" state list small:: >/dev/null
      b=$(date +%s%N)
      ms=$(( (b - a) / 1000000 ))
      if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
    done
    echo "redis: list of a 10-key namespace ($c listed) among $neighbours other keys, index=$idx: $t, best of 5 processes ${best} ms"
  done
  rcli EVAL "for _, k in ipairs(redis.call('KEYS', 'small_*')) do redis.call('DEL', k) end for i = 1, tonumber(ARGV[1]) do redis.call('DEL', 'neighbour:' .. i) end" 0 "$neighbours" >/dev/null
  ;;
esac
