# redis_cluster.sh - a Redis master, one replica and three sentinels on
# loopback, for the failover test and bench/failover.sh; the servers are
# set up by scripts/servers-lib.sh (the same code as the shared test
# servers of scripts/test-servers.sh).  Source after lib.sh; then:
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
SV_REDIS_PASSWORD=$RD_PASSWORD

rd_cli() { sv_redis_cli "$@"; }

rd_start_data() { # port [replicaof-port]
	sv_redis_start "$CL_DIR/redis-$1" "$@" || cl_fail "redis-server on port $1 did not start"
	CL_CLEANUP+=("sv_redis_kill $CL_DIR/redis-$1")
}

rd_kill() { sv_redis_kill "$CL_DIR/redis-$1" || cl_fail "redis $1 did not die"; }

rd_restart() { sv_redis_restart "$CL_DIR/redis-$1" "$1"; }

rd_master_port() { sv_sentinel_cli "$RD_S1" sentinel get-master-addr-by-name cl 2>/dev/null | sed -n 2p; }

rd_replica_cut_off() { rd_cli "$1" info replication 2>/dev/null | grep -q 'master_link_status:down'; }
rd_replica_synced() { sv_redis_synced "$1"; }

redis_cluster_start() {
	local ports s
	mapfile -t ports < <(sv_ports 5)
	RD_M=${ports[0]} RD_R=${ports[1]} RD_S1=${ports[2]} RD_S2=${ports[3]} RD_S3=${ports[4]}
	rd_start_data "$RD_M"
	rd_start_data "$RD_R" "$RD_M"
	cl_wait_for 30 "the replica to sync" rd_replica_synced "$RD_R"
	for s in "$RD_S1" "$RD_S2" "$RD_S3"; do
		sv_sentinel_start "$CL_DIR/sentinel-$s" "$s" cl "$RD_M" 2 || cl_fail "sentinel on port $s did not start"
		CL_CLEANUP+=("sv_redis_kill $CL_DIR/sentinel-$s")
	done
	cl_wait_for 40 "every sentinel to see the replica and the others" \
		sv_sentinels_ready cl 1 2 "$RD_S1" "$RD_S2" "$RD_S3"
}
