# pg_cluster.sh - a PostgreSQL primary and a standby on loopback, for the
# failover test and bench/failover.sh, set up by scripts/servers-lib.sh (as
# the shared test servers are).  Source after lib.sh; then:
#
#   pg_cluster_start sync|async   primary on $PG_P1, standby on $PG_P2
#                                 (streaming replication; with sync the
#                                 standby is the synchronous one)
#   pg_primary_init               initdb only (then pg_start_server)
#   pg_sql PORT SQL               run SQL on one server, print the result
#   pg_cut_standby                stop the standby's streaming (it keeps what
#                                 it has; the primary goes on alone)
#   pg_kill_primary               SIGKILL the primary's whole process tree
#   pg_promote                    promote the standby and wait for it
#
# synchronous_standby_names is given on the primary's command line, never
# in postgresql.conf, so the standby (a copy of the primary's data
# directory) does not inherit it: a promoted standby naming a standby of
# its own that does not exist would hang every commit (SPEC §7).
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_PASSWORD=faucet-cluster-secret

pg_sql() {
	PGPASSWORD=$PG_PASSWORD PGCONNECT_TIMEOUT=2 "$PG_BIN/psql" -X -q -At -h 127.0.0.1 -p "$1" \
		-U faucet -d postgres -c "$2"
}

pg_start_server() { # datadir port extra-options
	sv_pg_start "$@" || cl_fail "PostgreSQL on port $2 did not start"
}

# pg_primary_init: initdb of the primary's data directory ($CL_DIR/pg1).
pg_primary_init() {
	local ports
	mapfile -t ports < <(sv_ports 2)
	PG_P1=${ports[0]} PG_P2=${ports[1]}
	[ "$(id -u)" -eq 0 ] && chown postgres "$CL_DIR"
	printf '%s\n' "$PG_PASSWORD" >"$CL_DIR/pwfile"
	[ "$(id -u)" -eq 0 ] && chown postgres "$CL_DIR/pwfile"
	sv_pg_initdb "$CL_DIR/pg1" "$CL_DIR/pwfile" || cl_fail "initdb failed"
	cl_as_pg mkdir -p "$CL_DIR/pg2.sock"
	CL_CLEANUP+=("pg_stop_all")
}

pg_cluster_start() {
	local mode=$1 names=""
	pg_primary_init
	[ "$mode" = sync ] && names="-c synchronous_standby_names=s1 -c synchronous_commit=on"
	pg_start_server "$CL_DIR/pg1" "$PG_P1" "$names"
	cl_as_pg env PGPASSWORD="$PG_PASSWORD" "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PG_P1" \
		-U faucet -D "$CL_DIR/pg2" -R -X stream >"$CL_DIR/basebackup.log" 2>&1 ||
		{ cat "$CL_DIR/basebackup.log" >&2; cl_fail "pg_basebackup failed"; }
	pg_start_server "$CL_DIR/pg2" "$PG_P2" "-c cluster_name=s1 -c hot_standby=on"
	local want=async
	[ "$mode" = sync ] && want=sync
	cl_wait_for 30 "the standby to stream ($want)" pg_replicating "$want"
}

pg_replicating() {
	[ "$(pg_sql "$PG_P1" "SELECT sync_state FROM pg_stat_replication WHERE application_name = 's1' AND state = 'streaming'")" = "$1" ]
}

pg_stop_all() {
	local d
	for d in "$CL_DIR/pg1" "$CL_DIR/pg2"; do sv_pg_stop "$d" immediate; done
}

# Cut the standby off: no primary_conninfo (reloaded, so its WAL receiver
# stops and none starts again), then wait until the primary sees no
# standby.  Deterministic: from here the standby has exactly what it has.
pg_cut_standby() {
	pg_sql "$PG_P2" "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null &&
		pg_sql "$PG_P2" "SELECT pg_reload_conf()" >/dev/null || cl_fail "could not cut the standby off"
	cl_wait_for 10 "the standby's WAL receiver to stop" pg_no_receiver
	cl_wait_for 10 "the primary to see no standby" pg_no_standby
}
pg_no_receiver() { [ "$(pg_sql "$PG_P2" "SELECT count(*) FROM pg_stat_wal_receiver")" = 0 ]; }
pg_no_standby() { [ "$(pg_sql "$PG_P1" "SELECT count(*) FROM pg_stat_replication")" = 0 ]; }

# The postmaster and every backend it forked: SIGKILL of the postmaster
# alone leaves its backends running (SPEC §7).
pg_kill_primary() {
	local pid children
	pid=$(head -1 "$CL_DIR/pg1/postmaster.pid")
	children=$(pgrep -P "$pid" | tr '\n' ' ')
	# shellcheck disable=SC2086
	kill -9 "$pid" $children
	cl_wait_for 10 "the primary's postmaster $pid to die" sv_gone "$pid"
	for c in $children; do cl_wait_for 10 "backend $c to die" sv_gone "$c"; done
	rm -f "$CL_DIR/pg1/postmaster.pid"
}

pg_promote() {
	cl_as_pg "$PG_BIN/pg_ctl" -D "$CL_DIR/pg2" -w -t 30 promote >/dev/null ||
		cl_fail "pg_ctl promote failed"
	cl_wait_for 30 "the standby to leave recovery" pg_is_primary "$PG_P2"
}

pg_is_primary() { [ "$(pg_sql "$1" "SELECT pg_is_in_recovery()")" = f ]; }
