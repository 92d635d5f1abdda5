#!/usr/bin/env bash
# failover.sh - what a failover costs, safe and deliberately unsafe.
#
#   bench/failover.sh [BUILD_DIR]      (default: build)
#
# Runs each failover test of tests/cluster/ twice: as the test runs it
# (PostgreSQL with a synchronous standby; Sentinel with min_replicas=1) and
# once with the unsafe setting (asynchronous PostgreSQL replication; Redis
# without WAIT), which may lose acknowledged writes - the runs show that the
# harness sees such a loss when there is one.  Prints, per run, the
# counter's figures (final, acknowledged, unknown, lost) and the time from
# the kill to the first acknowledged write.  A loss in an unsafe run is
# reported, not fatal; one in a safe run fails the script.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
export FAUCET_BIN=$build/faucet FAUCET_COUNTER_BIN=$build/tests/faucet_counter
export FAUCET_RAW_BIN=$build/tests/faucet_raw
for tool in "$FAUCET_BIN" "$FAUCET_COUNTER_BIN" "$FAUCET_RAW_BIN"; do
	[ -x "$tool" ] || { echo "failover.sh: $tool is not built (cmake --build $build)" >&2; exit 2; }
done
status=0
# (test_pg_sync_cancel.sh has no unsafe variant: it is a test, not a figure.)
for test in pg redis; do
	for mode in safe unsafe; do
		echo "== $test, $mode"
		if ! out=$(CL_MODE=$mode bash "$here/tests/cluster/test_${test}_failover.sh" 2>&1); then
			status=1
			printf '%s\n' "$out" | tail -5
			continue
		fi
		printf '%s\n' "$out" | grep -E '^(counter|replication|wait)='
		printf '%s\n' "$out" | grep -E '^counter:'
	done
done
exit $status
