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

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# A free loopback port below 32768 (etcd needs two per member).
low_port() {
  python3 -c '
import random, socket
for _ in range(1000):
    p = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
'
}

# etcd_start_cluster DIR: three members with client ports $e1 $e2 $e3 and
# peer ports $p1 $p2 $p3; returns once every member answers /health.
etcd_start_cluster() {
  local d=$1 i names=(m1 m2 m3) cports=("$e1" "$e2" "$e3") pports=("$p1" "$p2" "$p3") initial=""
  for i in 0 1 2; do
    initial+="${initial:+,}${names[$i]}=http://127.0.0.1:${pports[$i]}"
  done
  mkdir -p "$d"
  for i in 0 1 2; do
    "${pin[@]}" etcd --name "${names[$i]}" --data-dir "$d/${names[$i]}" \
      --listen-client-urls "http://127.0.0.1:${cports[$i]}" \
      --advertise-client-urls "http://127.0.0.1:${cports[$i]}" \
      --listen-peer-urls "http://127.0.0.1:${pports[$i]}" \
      --initial-advertise-peer-urls "http://127.0.0.1:${pports[$i]}" \
      --initial-cluster "$initial" --initial-cluster-state new \
      --initial-cluster-token "faucet-$$" --max-request-bytes 33554432 >"$d/${names[$i]}.log" 2>&1 &
    echo $! >"$d/${names[$i]}.pid"
  done
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$e1/health" 2>/dev/null | grep -q '"health":"true"' &&
       curl -sf "http://127.0.0.1:$e2/health" 2>/dev/null | grep -q '"health":"true"' &&
       curl -sf "http://127.0.0.1:$e3/health" 2>/dev/null | grep -q '"health":"true"'; then
      return 0
    fi
    sleep 0.05
  done
  echo "test-servers: the etcd cluster in $d did not become healthy (see $d/m*.log)" >&2
  return 1
}

etcd_stop_cluster() { # dir
  local f pid
  for f in "$1"/m*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
  done
  for f in "$1"/m*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 1 200); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null || true
  done
}

# Run a command as the PostgreSQL owner: `postgres` when we are root.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pg_start_one() { # datadir port
  as_pg "${pin[@]}" "$PG_BIN/pg_ctl" -D "$1" -l "$1.log" -w -t 60 \
    -o "-p $2 -k $1.sock -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
    start >/dev/null
}

pg_stop_one() { # datadir
  [ -f "$1/postmaster.pid" ] || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$1" -m fast -w -t 60 stop >/dev/null 2>&1 || true
}

redis_start_one() { # name port
  local d=$dir/$1
  mkdir -p "$d"
  "${pin[@]}" redis-server --bind 127.0.0.1 --port "$2" --requirepass "$PASSWORD" --save '' \
    --appendonly no --dir "$d" --dbfilename dump.rdb --daemonize yes \
    --pidfile "$d/redis.pid" --logfile "$d/redis.log" >/dev/null
  for _ in $(seq 1 200); do
    if REDISCLI_AUTH=$PASSWORD redis-cli -h 127.0.0.1 -p "$2" ping 2>/dev/null | grep -q PONG; then
      return 0
    fi
    sleep 0.05
  done
  echo "test-servers: redis on port $2 did not start (see $d/redis.log)" >&2
  return 1
}

redis_stop_one() { # name port
  # SHUTDOWN SAVE writes the data set even with saving turned off, so a
  # restarted server comes back with the keys it had.
  REDISCLI_AUTH=$PASSWORD redis-cli -h 127.0.0.1 -p "$2" shutdown save >/dev/null 2>&1 || true
  local pidfile=$dir/$1/redis.pid
  for _ in $(seq 1 200); do
    [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null || return 0
    sleep 0.05
  done
}

start() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/faucet-servers.XXXXXX")
  chmod 755 "$dir"
  local pg1 pg2 r1 r2 locale_opts=()
  pg1=$(free_port); pg2=$(free_port); r1=$(free_port); r2=$(free_port)
  local e1 e2 e3 p1 p2 p3
  e1=$(low_port); e2=$(low_port); e3=$(low_port); p1=$(low_port); p2=$(low_port); p3=$(low_port)
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
  printf '%s\n' "$PASSWORD" >"$dir/pwfile"
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir/pwfile"
  if "$PG_BIN/postgres" --version >/dev/null && ldd "$PG_BIN/postgres" | grep -q libicu; then
    locale_opts=(--locale-provider=icu --icu-locale=en-US --locale=C.UTF-8)
  fi
  as_pg "$PG_BIN/initdb" -D "$dir/pg" -U faucet --pwfile="$dir/pwfile" -E UTF8 \
    --auth-local=trust --auth-host=scram-sha-256 "${locale_opts[@]}" >"$dir/initdb.log" 2>&1 || {
    echo "test-servers: initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1; }
  as_pg cp -a "$dir/pg" "$dir/pg2"
  as_pg mkdir -p "$dir/pg.sock" "$dir/pg2.sock"
  {
    echo "export FAUCET_TEST_SERVERS_DIR=$dir"
    echo "export FAUCET_TEST_SERVERS_CTL=$here/test-servers.sh"
    echo "export FAUCET_TEST_PG_URL=postgres://faucet:$PASSWORD@127.0.0.1:$pg1/postgres"
    echo "export FAUCET_TEST_PG_RESTART_URL=postgres://faucet:$PASSWORD@127.0.0.1:$pg2/postgres"
    echo "export FAUCET_TEST_REDIS_URL=redis://:$PASSWORD@127.0.0.1:$r1/0"
    echo "export FAUCET_TEST_REDIS_RESTART_URL=redis://:$PASSWORD@127.0.0.1:$r2/0"
    echo "export FAUCET_TEST_PASSWORD=$PASSWORD"
    echo "export FAUCET_TEST_ETCD_URL=etcd://127.0.0.1:$e1,127.0.0.1:$e2,127.0.0.1:$e3/faucet"
  } >"$dir/env"
  echo "$pg1 $pg2 $r1 $r2" >"$dir/ports"
  # From here on a failure must not leave servers behind.
  trap 'stop_dir "$dir"; exit 1' ERR
  pg_start_one "$dir/pg" "$pg1"
  pg_start_one "$dir/pg2" "$pg2"
  redis_start_one redis "$r1"
  redis_start_one redis2 "$r2"
  etcd_start_cluster "$dir/etcd"
  trap - ERR
  cat "$dir/env"
}

stop_dir() {
  dir=$1
  [ -d "$dir" ] || return 0
  local pg1=0 pg2=0 r1=0 r2=0
  [ -f "$dir/ports" ] && read -r pg1 pg2 r1 r2 <"$dir/ports"
  pg_stop_one "$dir/pg"
  pg_stop_one "$dir/pg2"
  redis_stop_one redis "$r1"
  redis_stop_one redis2 "$r2"
  etcd_stop_cluster "$dir/etcd"
  rm -rf "$dir"
}

with_dir() {
  dir=${1:-${FAUCET_TEST_SERVERS_DIR:-}}
  if [ -z "$dir" ] || [ ! -f "$dir/ports" ]; then
    echo "test-servers: no server directory (give it or set FAUCET_TEST_SERVERS_DIR)" >&2
    exit 2
  fi
  read -r pg1 pg2 r1 r2 <"$dir/ports"
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
