#!/usr/bin/env bash
# `faucet doctor`: probes with status, time and hint; --json; --timeout
# forms; exit 1 when a probe fails, 2 for a bad store URL or duration.
. "$(dirname "$0")/lib.sh"

# doctor reads: it never creates the store it checks (test_safety_cli.sh).
mkdir -m 700 st
run doctor --state file:st
expect_rc 0 "doctor on a writable file store"
expect_out_contains "PASS" "a passing probe is shown"
expect_out_contains "ms" "probe times are shown"
expect_out_contains "file:st" "the store is named"
run doctor --state file:st --json
expect_rc 0 "doctor --json"
expect_json 'd["ok"] is True and d["backend"] == "file" and len(d["probes"]) >= 1' "doctor --json report"
expect_json 'all(p["status"] in ("pass", "fail", "skip") and isinstance(p["elapsed_ms"], int) and "hint" in p and "reason" in p for p in d["probes"])' "every probe has status, time, reason and hint"
# (but the writers' lock and its gate, made by the sentinel's write and
# kept by every file store: doc/design.md §3.3)
left=$(ls -A st 2>/dev/null | grep -v -x -e .faucet-writers.lock -e .faucet-writers.gate || true)
if [ -z "$left" ]; then pass; else fail "doctor leaves no residue: $left"; fi

for t in 500ms 10s 2m 1h 30; do
	run doctor --state file:st --timeout $t
	expect_rc 0 "--timeout $t"
done
run doctor --state file:st --timeout=250ms --json
expect_rc 0 "--timeout=VALUE"
for t in 0 10x -5s abc '' 18446744073709551615ms 18446744073709551616 25h 5124095576030431h; do
	run doctor --state file:st --timeout "$t"
	expect_rc 2 "--timeout '$t' is refused"
	expect_one_error_line "--timeout '$t'"
	expect_err_contains "--timeout '$t'" "the message names --timeout '$t'"
done

run doctor --state memory:
expect_rc 0 "doctor on memory:"

# A regular file where the state directory should be: the probe fails.
printf 'x' >notadir
run doctor --state file:notadir
expect_rc 1 "a failing probe exits 1"
expect_out_contains "FAIL" "the failed probe is shown"
run doctor --state file:notadir --json
expect_rc 1 "a failing probe exits 1 with --json"
expect_json 'd["ok"] is False and any(p["status"] == "fail" and p["reason"] for p in d["probes"])' "the failure and its reason are in the JSON"
if [ "$(cat notadir)" = x ]; then pass; else fail "doctor did not touch the file"; fi

run doctor --state nosuch:
expect_rc 2 "doctor with an unknown store URL"
expect_one_error_line "unknown store URL"
run doctor extra
expect_rc 2 "doctor takes no arguments"

finish
