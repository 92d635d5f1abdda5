# redis_cluster.sh - a Redis master, one replica and three sentinels on
# loopback, for the failover test and bench/failover.sh.  Source after
# lib.sh; then:
#
#   redis_cluster_start   master on $RD_M, replica on $RD_R, sentinels on
#                         $RD_S1 $RD_S2 $RD_S3 (quorum 2), master name
#                         "cl"; returns once every sentinel sees the
#                         replica and the two other sentinels
#   rd_cli PORT ARGS...   redis-cli against a data server (with the password)
#   rd_master_port        the master's port as sentinel 1 sees it
#   rd_kill PORT          SIGKILL the data server on PORT
#   rd_restart PORT       start it again with its own configuration
#
# The data servers need a password; the sentinels have none (the store
# sends them the URL's password and accepts their "no password is set").
RD_PASSWORD=faucet-cluster-secret

rd_cli() {
	local port=$1
	shift
	REDISCLI_AUTH=$RD_PASSWORD redis-cli --no-auth-warning -h 127.0.0.1 -p "$port" "$@"
}

sentinel_cli() {
	local port=$1
	shift
	redis-cli -h 127.0.0.1 -p "$port" "$@"
}

rd_start_data() { # port [replicaof-port]
	local d=$CL_DIR/redis-$1
	mkdir -p "$d"
	{
		echo "bind 127.0.0.1"
		echo "port $1"
		echo "requirepass $RD_PASSWORD"
		echo "masterauth $RD_PASSWORD"
		echo "save \"\""
		echo "appendonly no"
		echo "repl-diskless-sync yes"
		echo "repl-diskless-sync-delay 0"
		echo "dir $d"
		echo "pidfile $d/redis.pid"
		echo "logfile $d/redis.log"
		echo "daemonize yes"
		[ -n "${2:-}" ] && echo "replicaof 127.0.0.1 $2"
	} >"$d/redis.conf"
	redis-server "$d/redis.conf" >/dev/null || cl_fail "redis-server on port $1 did not start"
	CL_CLEANUP+=("rd_kill $1")
	cl_wait_for 20 "redis on port $1" rd_ping "$1"
}

rd_ping() { [ "$(rd_cli "$1" ping 2>/dev/null)" = PONG ]; }

rd_start_sentinel() { # port
	local d=$CL_DIR/sentinel-$1
	mkdir -p "$d"
	{
		echo "bind 127.0.0.1"
		echo "port $1"
		echo "dir $d"
		echo "pidfile $d/sentinel.pid"
		echo "logfile $d/sentinel.log"
		echo "daemonize yes"
		echo "sentinel monitor cl 127.0.0.1 $RD_M 2"
		echo "sentinel auth-pass cl $RD_PASSWORD"
		echo "sentinel down-after-milliseconds cl 1000"
		echo "sentinel failover-timeout cl 10000"
		echo "sentinel parallel-syncs cl 1"
	} >"$d/sentinel.conf"
	redis-sentinel "$d/sentinel.conf" >/dev/null || cl_fail "sentinel on port $1 did not start"
	CL_CLEANUP+=("rd_kill_pidfile $d/sentinel.pid")
}

rd_kill_pidfile() { [ -f "$1" ] && kill -9 "$(cat "$1")"; }

rd_kill() {
	local f=$CL_DIR/redis-$1/redis.pid pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	kill -9 "$pid" 2>/dev/null
	cl_wait_for 10 "redis $1 (pid $pid) to die" pg_gone_pid "$pid"
	rm -f "$f"
}

pg_gone_pid() { ! kill -0 "$1" 2>/dev/null; }

rd_restart() { redis-server "$CL_DIR/redis-$1/redis.conf" >/dev/null && cl_wait_for 20 "redis $1 back" rd_ping "$1"; }

rd_master_port() { sentinel_cli "$RD_S1" sentinel get-master-addr-by-name cl 2>/dev/null | sed -n 2p; }

# Every sentinel knows the replica and both other sentinels.
rd_sentinels_ready() {
	local s
	for s in "$RD_S1" "$RD_S2" "$RD_S3"; do
		sentinel_cli "$s" sentinel master cl 2>/dev/null | tr '\n' ' ' |
			grep -q 'num-slaves 1 .*num-other-sentinels 2 ' || return 1
	done
}

rd_replica_synced() { rd_cli "$1" info replication 2>/dev/null | grep -q 'master_link_status:up'; }

redis_cluster_start() {
	local p used=" "
	for v in RD_M RD_R RD_S1 RD_S2 RD_S3; do
		p=$(cl_port)
		while [[ "$used" == *" $p "* ]]; do p=$(cl_port); done
		used="$used$p "
		printf -v "$v" '%s' "$p"
	done
	rd_start_data "$RD_M"
	rd_start_data "$RD_R" "$RD_M"
	cl_wait_for 30 "the replica to sync" rd_replica_synced "$RD_R"
	rd_start_sentinel "$RD_S1"
	rd_start_sentinel "$RD_S2"
	rd_start_sentinel "$RD_S3"
	cl_wait_for 40 "every sentinel to see the replica and the others" rd_sentinels_ready
}
