#!/usr/bin/env bash
# test-servers.sh - throw-away PostgreSQL, Redis and etcd servers for the backend
# tests.
#
#   eval "$(scripts/test-servers.sh start)"   start them, print `export` lines
#   scripts/test-servers.sh stop [DIR]         stop them and remove DIR
#   scripts/test-servers.sh pg-stop|pg-start|redis-stop|redis-start [DIR]
#                                              stop/start the *restart* pair
#
# Two of each run, all on 127.0.0.1 ports picked free at start:
#   - the shared pair (FAUCET_TEST_PG_URL, FAUCET_TEST_REDIS_URL) that every
#     test program may use at once;
#   - the restart pair (FAUCET_TEST_PG_RESTART_URL, FAUCET_TEST_REDIS_RESTART_URL)
#     that only the restart tests stop and start, so restarting a server
#     never breaks a test running in parallel against the shared pair.
# Both PostgreSQL clusters come from one initdb (the second is a copy of the
# first data directory).  initdb refuses to run as root, so as root the
# clusters run as the unprivileged `postgres` user in a directory it owns.
# Every server needs a password over TCP, so the AUTH / wrong-password tests
# have something to fail against.  The shared cluster's default collation is
# ICU English (when available), whose order is not byte order: a backend
# that forgets COLLATE "C" fails the list-order tests.
#
# A sentinel trio (FAUCET_TEST_REDIS_SENTINEL_URL,
# redis-sentinel://:PW@H:P/faucet): a Redis primary, its replica and one
# sentinel monitoring them, for the contract suite's redis-sentinel row (the
# failover tests of tests/cluster/ start their own with three sentinels).
# Every server is set up by scripts/servers-lib.sh, the code tests/cluster/
# uses too.
#
# A 3-member etcd cluster (FAUCET_TEST_ETCD_URL, etcd://H:P,H:P,H:P/faucet)
# runs too, on ports below 32768 (the ones above collide with outgoing
# connections, SPEC §7), its data directories under the servers directory.
# It keeps etcd's fsync on: nothing says the tests may turn it off.  Its
# --max-request-bytes is 32 MiB (default 1.5 MiB): the contract suite writes
# values of megabytes (a big run's rollback marker).
#
# FAUCET_SERVERS_CPUS (a taskset CPU list, e.g. "1") pins every server to
# those CPUs; the benchmark uses it to keep servers and client apart.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PASSWORD=faucet-test-secret
here=$(cd "$(dirname "$0")" && pwd)
pin=()
if [ -n "${FAUCET_SERVERS_CPUS:-}" ]; then
  pin=(taskset -c "$FAUCET_SERVERS_CPUS")
fi

. "$here/servers-lib.sh"
SV_REDIS_PASSWORD=$PASSWORD
SV_PIN=("${pin[@]}")

# etcd_start_cluster DIR: three members with client ports $e1 $e2 $e3 and
# peer ports $p1 $p2 $p3; returns once every member answers /health.
etcd_start_cluster() {
  local d=$1 i names=(m1 m2 m3) cports=("$e1" "$e2" "$e3") pports=("$p1" "$p2" "$p3") initial=""
  for i in 0 1 2; do
    initial+="${initial:+,}${names[$i]}=http://127.0.0.1:${pports[$i]}"
  done
  for i in 0 1 2; do
    sv_etcd_member "$d" "${names[$i]}" "${cports[$i]}" "${pports[$i]}" "$initial" "faucet-$$" \
      --max-request-bytes 33554432
    echo $! >"$d/${names[$i]}.pid"
  done
  sv_wait_for 30 "the etcd cluster in $d to become healthy (see $d/m*.log)" \
    sv_etcd_healthy "$e1" "$e2" "$e3"
}

etcd_stop_cluster() { # dir
  local f pid
  for f in "$1"/m*.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
  done
  for f in "$1"/m*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    sv_wait_for 10 "etcd (pid $pid) to stop" sv_gone "$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
  done
}

as_pg() { sv_as_pg "$@"; }
pg_start_one() { sv_pg_start "$1" "$2"; }
pg_stop_one() { sv_pg_stop "$1"; }

redis_start_one() { sv_redis_start "$dir/$1" "$2" ${3:+"$3"}; }

# SHUTDOWN SAVE writes the data set even with saving turned off, so a
# restarted server comes back with the keys it had.
redis_stop_one() { sv_redis_shutdown "$dir/$1" "$2"; }

# The sentinel trio: a primary, its replica and one sentinel (quorum 1)
# that monitors it as "faucet"; returns once the sentinel sees the replica.
sentinel_start() { # primary replica sentinel
  redis_start_one sentinel-primary "$1"
  redis_start_one sentinel-replica "$2" "$1"
  sv_wait_for 30 "the sentinel trio's replica to sync" sv_redis_synced "$2"
  sv_sentinel_start "$dir/sentinel" "$3" faucet "$1" 1
  sv_wait_for 30 "the sentinel to see the replica" sv_sentinels_ready faucet 1 0 "$3"
}

sentinel_stop() { # primary replica
  sv_redis_kill "$dir/sentinel" || true
  redis_stop_one sentinel-replica "$2"
  redis_stop_one sentinel-primary "$1"
}

start() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/faucet-servers.XXXXXX")
  chmod 755 "$dir"
  local pg1 pg2 r1 r2 locale_opts=() ports
  local e1 e2 e3 p1 p2 p3 sp sr ss
  mapfile -t ports < <(sv_ports 13)
  pg1=${ports[0]} pg2=${ports[1]} r1=${ports[2]} r2=${ports[3]}
  e1=${ports[4]} e2=${ports[5]} e3=${ports[6]} p1=${ports[7]} p2=${ports[8]} p3=${ports[9]}
  sp=${ports[10]} sr=${ports[11]} ss=${ports[12]}
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
  printf '%s\n' "$PASSWORD" >"$dir/pwfile"
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir/pwfile"
  if "$PG_BIN/postgres" --version >/dev/null && ldd "$PG_BIN/postgres" | grep -q libicu; then
    locale_opts=(--locale-provider=icu --icu-locale=en-US --locale=C.UTF-8)
  fi
  sv_pg_initdb "$dir/pg" "$dir/pwfile" "${locale_opts[@]}" || exit 1
  as_pg cp -a "$dir/pg" "$dir/pg2"
  as_pg mkdir -p "$dir/pg2.sock"
  {
    echo "export FAUCET_TEST_SERVERS_DIR=$dir"
    echo "export FAUCET_TEST_SERVERS_CTL=$here/test-servers.sh"
    echo "export FAUCET_TEST_PG_URL=postgres://faucet:$PASSWORD@127.0.0.1:$pg1/postgres"
    echo "export FAUCET_TEST_PG_RESTART_URL=postgres://faucet:$PASSWORD@127.0.0.1:$pg2/postgres"
    echo "export FAUCET_TEST_REDIS_URL=redis://:$PASSWORD@127.0.0.1:$r1/0"
    echo "export FAUCET_TEST_REDIS_RESTART_URL=redis://:$PASSWORD@127.0.0.1:$r2/0"
    echo "export FAUCET_TEST_PASSWORD=$PASSWORD"
    echo "export FAUCET_TEST_ETCD_URL=etcd://127.0.0.1:$e1,127.0.0.1:$e2,127.0.0.1:$e3/faucet"
    echo "export FAUCET_TEST_REDIS_SENTINEL_URL=redis-sentinel://:$PASSWORD@127.0.0.1:$ss/faucet"
  } >"$dir/env"
  echo "$pg1 $pg2 $r1 $r2 $sp $sr" >"$dir/ports"
  # From here on a failure must not leave servers behind.
  trap 'stop_dir "$dir"; exit 1' ERR
  pg_start_one "$dir/pg" "$pg1"
  pg_start_one "$dir/pg2" "$pg2"
  redis_start_one redis "$r1"
  redis_start_one redis2 "$r2"
  etcd_start_cluster "$dir/etcd"
  sentinel_start "$sp" "$sr" "$ss"
  trap - ERR
  cat "$dir/env"
}

stop_dir() {
  dir=$1
  [ -d "$dir" ] || return 0
  local pg1=0 pg2=0 r1=0 r2=0 sp=0 sr=0
  [ -f "$dir/ports" ] && read -r pg1 pg2 r1 r2 sp sr <"$dir/ports"
  pg_stop_one "$dir/pg"
  pg_stop_one "$dir/pg2"
  redis_stop_one redis "$r1"
  redis_stop_one redis2 "$r2"
  etcd_stop_cluster "$dir/etcd"
  sentinel_stop "$sp" "$sr"
  rm -rf "$dir"
}

with_dir() {
  dir=${1:-${FAUCET_TEST_SERVERS_DIR:-}}
  if [ -z "$dir" ] || [ ! -f "$dir/ports" ]; then
    echo "test-servers: no server directory (give it or set FAUCET_TEST_SERVERS_DIR)" >&2
    exit 2
  fi
  read -r pg1 pg2 r1 r2 sp sr <"$dir/ports"
}

cmd=${1:-}
shift || true
case "$cmd" in
  start) start ;;
  stop) with_dir "${1:-}"; stop_dir "$dir" ;;
  pg-stop) with_dir "${1:-}"; pg_stop_one "$dir/pg2" ;;
  pg-start) with_dir "${1:-}"; pg_start_one "$dir/pg2" "$pg2" ;;
  redis-stop) with_dir "${1:-}"; redis_stop_one redis2 "$r2" ;;
  redis-start) with_dir "${1:-}"; redis_start_one redis2 "$r2" ;;
  *)
    echo "usage: $0 start | stop [DIR] | pg-stop | pg-start | redis-stop | redis-start [DIR]" >&2
    exit 2 ;;
esac
