#!/usr/bin/env bash
# test_pg_failover.sh - no acknowledged write lost across a PostgreSQL
# failover (doc/design.md §3.9).
#
# A primary with a synchronous standby; two faucet_counter processes
# increment one counter by compare-and-put through the multi-host URL
# (target_session_attrs=read-write); mid-run the primary's whole process
# tree is SIGKILLed and the standby promoted.  Then acknowledged <= final
# <= acknowledged + unknown, and the increments go on on the new primary.
# The standby is cut off before the kill (both modes), so what it has is
# decided by no timing.  CL_MODE=unsafe (cluster_test_pg_failover_unsafe
# and bench/failover.sh) runs it with asynchronous replication and fails
# unless acknowledged increments were lost: the harness can see a loss.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/pg_cluster.sh"

repl=sync
[ "$CL_MODE" = unsafe ] && repl=async
pg_cluster_start "$repl"
url="postgres://faucet:$PG_PASSWORD@127.0.0.1:$PG_P1,127.0.0.1:$PG_P2/postgres?target_session_attrs=read-write&connect_timeout=2&table=cl_counter"
key=cluster/counter
counter() { pg_sql "$1" "SELECT coalesce((SELECT value::text FROM cl_counter WHERE key = '$key'), '0')"; }
counter_at_least() { local v; v=$(counter "$1") && [ "$v" -ge "$2" ]; }
pg_commit_waits() { [ "$(pg_sql "$PG_P1" "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'SyncRep'")" = t ]; }

# The table exists before the drivers start, so neither races to create it.
"$FAUCET_BIN" --state "$url" state put "$key" 0 >/dev/null || cl_fail "first put failed"
cl_wait_for 30 "the standby to have the table" pg_sql "$PG_P2" "SELECT 1 FROM cl_counter"

# doctor: the role and the synchronous standby, or the warning that a
# failover can lose acknowledged writes.
if [ "$repl" = sync ]; then
	cl_expect_probe "$url" replication pass "s1 at 127.0.0.1 (sync, streaming)"
else
	cl_expect_probe "$url" replication warn "primary without a synchronous standby"
fi

cl_start_writers "$url" "$key"
cl_wait_for 30 "the counter to reach 100" counter_at_least "$PG_P1" 100

# Cut the standby off before the kill, the same way in both modes, so that
# no timing decides what it has.  Asynchronous: the primary acknowledges at
# least 3 increments alone, which the promoted standby will not have (the
# loss the unsafe run must show).  Synchronous: every commit now waits for
# a standby, so the writers hang unacknowledged (unknown after the kill).
pg_cut_standby
held=$(counter "$PG_P2")
if [ "$repl" = async ]; then
	cl_wait_for 30 "the primary to move 3 increments past the standby" counter_at_least "$PG_P1" $((held + 3))
else
	cl_wait_for 30 "a commit to wait for the standby" pg_commit_waits
fi
kill_ns=$(date +%s%N)
pg_kill_primary
echo "standby cut off at $held"
pg_promote
promoted=$(counter "$PG_P2")
cl_wait_for 30 "increments on the new primary" counter_at_least "$PG_P2" $((promoted + 50))

cl_stop_writers
final=$(counter "$PG_P2")
# The new primary has no standby: doctor says what that costs.
cl_expect_probe "$url" replication warn "primary without a synchronous standby (standbys: none"
cl_report "replication=$repl" "$final" "$kill_ns"
# The unsafe run must lose what the primary acknowledged alone, or this
# harness could not see a loss at all.
if [ "$CL_MODE" = unsafe ]; then
	[ "$CL_LOST" -gt 0 ] || cl_fail "the unsafe run (asynchronous) lost nothing: the harness shows no loss"
	echo "unsafe: $CL_LOST acknowledged increment(s) lost, as expected with asynchronous replication"
fi
echo "ok"
