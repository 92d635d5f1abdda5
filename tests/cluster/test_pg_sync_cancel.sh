#!/usr/bin/env bash
# test_pg_sync_cancel.sh - a commit whose wait for the synchronous standby
# is cancelled is committed on the primary alone, and PostgreSQL answers it
# as a success with a WARNING.  faucet must call that write "outcome
# unknown", never acknowledge it (doc/design.md §3.9): a failover now would
# lose it.
#
# A primary whose synchronous_standby_names names a standby that never
# connects, so every commit waits; the waiting backend is cancelled with
# pg_cancel_backend.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/pg_cluster.sh"
cl_need_raw

pg_primary_init
pg_start_server "$CL_DIR/pg1" "$PG_P1" "-c synchronous_standby_names=nobody -c synchronous_commit=on"
# The table, created without waiting for the standby that never comes.
pg_sql "$PG_P1" "SET synchronous_commit = local; CREATE TABLE cl_sync (key TEXT COLLATE \"C\" PRIMARY KEY, value JSONB NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW())" ||
	cl_fail "cannot create the table"
url="postgres://faucet:$PG_PASSWORD@127.0.0.1:$PG_P1/postgres?table=cl_sync"

waiter() { pg_sql "$PG_P1" "SELECT pid FROM pg_stat_activity WHERE application_name = 'faucet' AND wait_event = 'SyncRep'"; }
has_waiter() { [ -n "$(waiter)" ]; }

"$FAUCET_RAW_BIN" put "$url" cluster/k '{"n":1}' >"$CL_DIR/put.out" 2>"$CL_DIR/put.err" &
put=$!
cl_wait_for 30 "the put to wait for the synchronous standby" has_waiter
[ "$(pg_sql "$PG_P1" "SELECT pg_cancel_backend($(waiter))")" = t ] || cl_fail "pg_cancel_backend failed"
wait "$put"
rc=$?
echo "put exit $rc: $(cat "$CL_DIR/put.err")"
[ "$rc" -ne 0 ] || cl_fail "the put whose synchronous wait was cancelled was acknowledged"
grep -q 'outcome unknown' "$CL_DIR/put.err" || cl_fail "the error does not say the outcome is unknown"
grep -q 'synchronous standby' "$CL_DIR/put.err" || cl_fail "the error does not name the synchronous standby"
# It was committed locally: "not written" would have been wrong too.
[ "$(pg_sql "$PG_P1" "SELECT value->>'n' FROM cl_sync WHERE key = 'cluster/k'")" = 1 ] ||
	cl_fail "the row is not on the primary: the test did not cancel a commit's wait"
echo "ok"
