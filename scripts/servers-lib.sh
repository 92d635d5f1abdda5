# servers-lib.sh - sourced: the one copy of the server set-up that
# scripts/test-servers.sh (the shared test servers), tests/cluster/ (the
# failover tests) and bench/ use.  It starts nothing by itself.
#
#   sv_low_port                a free loopback port below 32768 (ports from
#                              32768 up collide with outgoing connections)
#   sv_ports N                 N distinct such ports, one per line
#   sv_wait_for SECS DESC CMD...  poll CMD (every 50 ms) until it succeeds;
#                              1 with a message on stderr after SECS
#   sv_as_pg CMD...            run CMD as the PostgreSQL owner (`postgres`
#                              when we are root)
#   sv_gone PID                the process PID no longer exists
#   sv_pg_initdb DATADIR PWFILE [ARGS...]
#                              initdb as the owner: user faucet with the
#                              password in PWFILE, scram over TCP
#   sv_pg_start DATADIR PORT [OPTIONS]
#                              pg_ctl start on 127.0.0.1:PORT (socket in
#                              DATADIR.sock), fsync off, ready for
#                              streaming replication; OPTIONS go to postgres
#   sv_pg_stop DATADIR [MODE]  pg_ctl stop (fast by default) if it runs
#   sv_redis_cli PORT ARGS...  redis-cli against a data server
#                              (password $SV_REDIS_PASSWORD)
#   sv_redis_start DIR PORT [MASTER_PORT]
#                              a Redis data server in DIR (its redis.conf,
#                              pid, log, dump), replica of MASTER_PORT when
#                              given; returns once it answers PING
#   sv_redis_restart DIR PORT  start it again with its own redis.conf
#   sv_redis_kill DIR          SIGKILL it and wait until it is gone
#   sv_redis_shutdown DIR PORT SHUTDOWN SAVE (a restart finds its keys)
#   sv_redis_synced PORT       the replica on PORT has its link up
#   sv_sentinel_start DIR PORT NAME MASTER_PORT QUORUM
#                              a sentinel monitoring MASTER_PORT as NAME
#   sv_sentinel_cli PORT ARGS...
#   sv_sentinels_ready NAME REPLICAS OTHERS PORT...
#                              every sentinel on PORT... sees REPLICAS
#                              replicas and OTHERS other sentinels
#   sv_etcd_member DIR NAME CLIENT_PORT PEER_PORT INITIAL_CLUSTER TOKEN [ARGS...]
#                              start one etcd member in the background
#                              ($! is its pid), log in DIR/NAME.log
#   sv_etcd_healthy PORT...    every member on PORT... answers /health
#
# SV_PIN (an array, e.g. (taskset -c 1)) prefixes every server command.

SV_REDIS_PASSWORD=${SV_REDIS_PASSWORD:-faucet-test-secret}
if ! declare -p SV_PIN >/dev/null 2>&1; then SV_PIN=(); fi

sv_low_port() { sv_ports 1; }

sv_ports() {
	python3 -c '
import random, socket, sys
got = set()
while len(got) < int(sys.argv[1]):
    p = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    got.add(p)
print("\n".join(map(str, got)))
' "$1"
}

sv_wait_for() {
	local secs=$1 desc=$2 end
	shift 2
	end=$(($(date +%s%N) + secs * 1000000000))
	until "$@" >/dev/null 2>&1; do
		if [ "$(date +%s%N)" -ge "$end" ]; then
			echo "timed out after ${secs}s waiting for $desc" >&2
			return 1
		fi
		sleep 0.05
	done
}

sv_as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

sv_gone() { ! kill -0 "$1" 2>/dev/null; }

SV_PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

sv_pg_initdb() {
	local d=$1 pw=$2
	shift 2
	sv_as_pg "$SV_PG_BIN/initdb" -D "$d" -U faucet --pwfile="$pw" -E UTF8 \
		--auth-local=trust --auth-host=scram-sha-256 "$@" >"$d.initdb.log" 2>&1 ||
		{ echo "initdb failed:" >&2; cat "$d.initdb.log" >&2; return 1; }
	sv_as_pg mkdir -p "$d.sock"
}

sv_pg_start() {
	sv_as_pg "${SV_PIN[@]}" "$SV_PG_BIN/pg_ctl" -D "$1" -l "$1.log" -w -t 60 \
		-o "-p $2 -k $1.sock -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 -c max_wal_senders=5 -c wal_retrieve_retry_interval=200ms ${3:-}" \
		start >/dev/null || { echo "PostgreSQL on port $2 did not start:" >&2; cat "$1.log" >&2; return 1; }
}

sv_pg_stop() {
	[ -f "$1/postmaster.pid" ] || return 0
	sv_as_pg "$SV_PG_BIN/pg_ctl" -D "$1" -m "${2:-fast}" -w -t 60 stop >/dev/null 2>&1 || true
}

sv_redis_cli() {
	local port=$1
	shift
	REDISCLI_AUTH=$SV_REDIS_PASSWORD redis-cli --no-auth-warning -h 127.0.0.1 -p "$port" "$@"
}

sv_redis_ping() { [ "$(sv_redis_cli "$1" ping 2>/dev/null)" = PONG ]; }

sv_redis_start() {
	local d=$1 port=$2
	mkdir -p "$d"
	{
		echo "bind 127.0.0.1"
		echo "port $port"
		echo "requirepass $SV_REDIS_PASSWORD"
		echo "masterauth $SV_REDIS_PASSWORD"
		echo "save \"\""
		echo "appendonly no"
		echo "repl-diskless-sync yes"
		echo "repl-diskless-sync-delay 0"
		echo "dir $d"
		echo "dbfilename dump.rdb"
		echo "pidfile $d/redis.pid"
		echo "logfile $d/redis.log"
		echo "daemonize yes"
		if [ -n "${3:-}" ]; then echo "replicaof 127.0.0.1 $3"; fi
	} >"$d/redis.conf"
	sv_redis_restart "$d" "$port"
}

sv_redis_restart() {
	"${SV_PIN[@]}" redis-server "$1/redis.conf" >/dev/null ||
		{ echo "redis-server on port $2 did not start (see $1/redis.log)" >&2; return 1; }
	sv_wait_for 20 "redis on port $2 (see $1/redis.log)" sv_redis_ping "$2"
}

sv_redis_kill() {
	local f=$1/redis.pid pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	kill -9 "$pid" 2>/dev/null
	sv_wait_for 10 "redis (pid $pid) to die" sv_gone "$pid" || return 1
	rm -f "$f"
}

sv_redis_shutdown() {
	local f=$1/redis.pid pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	sv_redis_cli "$2" shutdown save >/dev/null 2>&1 || true
	sv_wait_for 10 "redis (pid $pid) to stop" sv_gone "$pid" || kill -9 "$pid" 2>/dev/null
	rm -f "$f"
}

sv_redis_synced() { sv_redis_cli "$1" info replication 2>/dev/null | grep -q 'master_link_status:up'; }

sv_sentinel_cli() {
	local port=$1
	shift
	redis-cli -h 127.0.0.1 -p "$port" "$@"
}

sv_sentinel_start() {
	local d=$1 port=$2
	mkdir -p "$d"
	{
		echo "bind 127.0.0.1"
		echo "port $port"
		echo "dir $d"
		echo "pidfile $d/redis.pid"
		echo "logfile $d/sentinel.log"
		echo "daemonize yes"
		echo "sentinel monitor $3 127.0.0.1 $4 $5"
		echo "sentinel auth-pass $3 $SV_REDIS_PASSWORD"
		echo "sentinel down-after-milliseconds $3 1000"
		echo "sentinel failover-timeout $3 10000"
		echo "sentinel parallel-syncs $3 1"
	} >"$d/sentinel.conf"
	# redis-server in sentinel mode: Debian's redis-sentinel package is
	# only a link to it, and install-deps.sh installs redis-server alone.
	"${SV_PIN[@]}" redis-server "$d/sentinel.conf" --sentinel >/dev/null ||
		{ echo "sentinel on port $port did not start (see $d/sentinel.log)" >&2; return 1; }
}

sv_sentinels_ready() {
	local name=$1 replicas=$2 others=$3 s
	shift 3
	for s in "$@"; do
		sv_sentinel_cli "$s" sentinel master "$name" 2>/dev/null | tr '\n' ' ' |
			grep -q "num-slaves $replicas .*num-other-sentinels $others " || return 1
	done
}

sv_etcd_member() {
	local d=$1 name=$2 cport=$3 pport=$4 initial=$5 token=$6
	shift 6
	mkdir -p "$d"
	"${SV_PIN[@]}" etcd --name "$name" --data-dir "$d/$name" \
		--listen-client-urls "http://127.0.0.1:$cport" \
		--advertise-client-urls "http://127.0.0.1:$cport" \
		--listen-peer-urls "http://127.0.0.1:$pport" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
		--initial-cluster "$initial" --initial-cluster-state new \
		--initial-cluster-token "$token" "$@" >>"$d/$name.log" 2>&1 &
}

sv_etcd_healthy() {
	local p
	for p in "$@"; do
		curl -sf -m 1 "http://127.0.0.1:$p/health" 2>/dev/null | grep -q '"health":"true"' || return 1
	done
}
