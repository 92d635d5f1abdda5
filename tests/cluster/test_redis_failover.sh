#!/usr/bin/env bash
# test_redis_failover.sh - no acknowledged write lost across a Sentinel
# failover with min_replicas=1 (doc/design.md §3.9).
#
# Master + replica + three sentinels; two faucet_counter processes
# increment one counter by compare-and-put through
# redis-sentinel://S1,S2,S3/cl?min_replicas=1; mid-run the master is
# SIGKILLed, the sentinels promote the replica, the old master is started
# again and becomes a replica.  Then acknowledged <= final <= acknowledged
# + unknown, and the increments go on on the new master.  Before the kill
# the replica is cut off (wrong masterauth), so the master's last
# increments exist nowhere else.  CL_MODE=unsafe (the test
# cluster_test_redis_failover_unsafe and bench/failover.sh) runs the same
# schedule without min_replicas (no WAIT) and fails unless acknowledged
# increments were lost: the harness can see a loss.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/redis_cluster.sh"
cl_need_raw

redis_cluster_start
opts="namespace=cl&min_replicas=1&wait_timeout=1s"
[ "$CL_MODE" = unsafe ] && opts="namespace=cl"
url="redis-sentinel://:$RD_PASSWORD@127.0.0.1:$RD_S1,127.0.0.1:$RD_S2,127.0.0.1:$RD_S3/cl?$opts"
key=cluster/counter
counter() { local v; v=$(rd_cli "$1" get "cl:$key") || return 1; echo "${v:-0}"; }
counter_at_least() { local v; v=$(counter "$1") && [ -n "$v" ] && [ "$v" -ge "$2" ]; }
master_is_not() { local m; m=$(rd_master_port) && [ -n "$m" ] && [ "$m" != "$1" ]; }
is_replica_of() { rd_cli "$1" info replication 2>/dev/null | grep -q "master_port:$2" && rd_replica_synced "$1"; }

# doctor: the master as the sentinels see it, the replica, the quorum;
# replication is asynchronous unless min_replicas is set.
cl_expect_probe "$url" sentinels pass "master 'cl' at 127.0.0.1:$RD_M (flags master)"
cl_expect_probe "$url" sentinels pass "replicas: 127.0.0.1:$RD_R (slave); quorum 2, 2 other sentinel(s)"
if [ "$CL_MODE" = safe ]; then
	cl_expect_probe "$url" replication pass "min_replicas=1, wait_timeout=1000ms"
fi
cl_expect_probe "${url%%\?*}?namespace=cl" replication warn "Redis replication is asynchronous"

cl_start_writers "$url" "$key"
cl_wait_for 30 "the counter to reach 100" counter_at_least "$RD_M" 100

# Cut the replica off before the kill, the same way in both modes: a wrong
# masterauth and its link to the master killed, so it cannot sync again
# (deterministic: no timing decides what it has).  The master goes on
# alone for at least 3 increments - acknowledged without WAIT, unknown
# with it - which the promoted replica will not have.
rd_cli "$RD_R" config set masterauth not-the-password >/dev/null || cl_fail "config set masterauth"
rd_cli "$RD_R" client kill type master >/dev/null || cl_fail "client kill type master"
cl_wait_for 10 "the replica to lose its link to the master" rd_replica_cut_off "$RD_R"
held=$(counter "$RD_R")
cl_wait_for 30 "the master to move 3 increments past the replica" counter_at_least "$RD_M" $((held + 3))
old=$RD_M
kill_ns=$(date +%s%N)
rd_kill "$old"
echo "replica cut off at $held; master killed at $(cat "$CL_DIR"/log* | awk '$1 != "error" { if ($2 > m) m = $2 } END { print m + 0 }')"
rd_cli "$RD_R" config set masterauth "$RD_PASSWORD" >/dev/null || cl_fail "config set masterauth back"
cl_wait_for 40 "the sentinels to promote the replica" master_is_not "$old"
new=$(rd_master_port)
[ "$new" = "$RD_R" ] || cl_fail "the sentinels name port $new as master, not the replica $RD_R"
# The new master has no replica until the old one comes back: with
# min_replicas=1 a write now is not acknowledged ("outcome unknown",
# WAIT 1 answered 0); without WAIT it would be.
if [ "$CL_MODE" = safe ]; then
	"$FAUCET_RAW_BIN" put "$url" cluster/alone 1 >"$CL_DIR/alone.out" 2>"$CL_DIR/alone.err"
	rc=$?
	echo "write without a replica: exit $rc: $(cat "$CL_DIR/alone.err")"
	[ "$rc" -ne 0 ] || cl_fail "a write the master alone had was acknowledged with min_replicas=1"
	grep -q 'only 0 of 1 replica(s) confirmed' "$CL_DIR/alone.err" ||
		cl_fail "the error does not say that no replica confirmed the write"
	[ "$(rd_cli "$new" get cl:cluster/alone)" = 1 ] || cl_fail "the unconfirmed write is not on the master"
	# reindex changes the index and WAITs like every other write: with
	# no replica it is not acknowledged either.
	"$FAUCET_BIN" --state "$url&index=true" state reindex >"$CL_DIR/reindex.out" 2>"$CL_DIR/reindex.err"
	rc=$?
	echo "reindex without a replica: exit $rc: $(cat "$CL_DIR/reindex.err")"
	[ "$rc" -ne 0 ] || cl_fail "a reindex the master alone had was acknowledged with min_replicas=1"
	grep -q 'only 0 of 1 replica(s) confirmed' "$CL_DIR/reindex.err" ||
		cl_fail "the reindex error does not say that no replica confirmed it"
fi
rd_restart "$old"
# Sentinel re-points a returning master only after it has reported its role
# for 4 publish periods (8 s) and an INFO round (up to 10 s), and the sync
# waits out repl-diskless-sync-delay (5 s): ~25 s idle, longer under load.
t0=$(date +%s)
if ! sv_wait_for 90 "the old master to follow the new one" is_replica_of "$old" "$new"; then
	rd_cli "$old" info replication >&2
	tail -n 20 "$CL_DIR"/sentinel-*/sentinel.log "$CL_DIR/redis-$old/redis.log" >&2
	cl_fail "timed out waiting for the old master to follow the new one"
fi
echo "the old master followed the new one after $(($(date +%s) - t0)) s"
promoted=$(counter "$new")
cl_wait_for 30 "increments on the new master" counter_at_least "$new" $((promoted + 50))

cl_stop_writers
final=$(counter "$new")
cl_expect_probe "$url" sentinels pass "master 'cl' at 127.0.0.1:$new (flags master)"
cl_report "wait=$([ "$CL_MODE" = unsafe ] && echo none || echo 'WAIT 1 1000')" "$final" "$kill_ns"
# The unsafe run must lose the increments acknowledged while the replica
# was cut off, or this harness could not see a loss at all.
if [ "$CL_MODE" = unsafe ]; then
	[ "$CL_LOST" -gt 0 ] || cl_fail "the unsafe run (no WAIT) lost nothing: the harness shows no loss"
	echo "unsafe: $CL_LOST acknowledged increment(s) lost, as expected without WAIT"
fi
echo "ok"
