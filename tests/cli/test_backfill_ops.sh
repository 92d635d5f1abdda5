#!/usr/bin/env bash
# What an operator sees of a backfill: `backfill status` (every range, one
# range's units, by hash, --json, read-only), windows shown in the
# backfill's zone, the summary's failed windows and resume command (which
# is then run as printed), the status line on a real terminal (a pty from
# `script`), --json's outcome object, and the metrics file.
. "$(dirname "$0")/lib.sh"

ST=file:st
BF=(backfill --state "$ST" --pipeline orders)
ZONE=Europe/Berlin
# Fails the unit whose id is $FAIL_UNITS-listed (space-separated).
FAILING='echo "out $1"; echo "err $1" >&2; case " $FAIL_UNITS " in *" $1 "*) echo "disk full" >&2; exit 3;; esac'

# ---- windows in the operator's zone, the failed windows, the resume command ----
export FAIL_UNITS="20260602T220000Z 20260603T220000Z"
run "${BF[@]}" --from 2026-06-01 --to 2026-06-06 --window 1d --timezone "$ZONE" -- \
	sh -c "$FAILING" unit '${backfill.unit}'
expect_rc 2 "two failed units: exit 2"
expect_err_contains "window 2026-06-03T00:00:00+02:00/2026-06-04T00:00:00+02:00 failed: exit status 3: disk full" \
	"a failure line shows the window in the backfill's zone"
expect_err_contains "[2026-06-01T00:00:00+02:00/2026-06-02T00:00:00+02:00] err 20260531T220000Z" \
	"a unit's stderr line is prefixed with its window"
expect_out_contains "[2026-06-01T00:00:00+02:00/2026-06-02T00:00:00+02:00] out 20260531T220000Z" \
	"a unit's stdout line is prefixed with its window"
expect_out_contains "failed windows (Europe/Berlin zone):
  2026-06-03T00:00:00+02:00/2026-06-04T00:00:00+02:00  exit status 3: disk full
  2026-06-04T00:00:00+02:00/2026-06-05T00:00:00+02:00  exit status 3: disk full" "the summary lists the failed windows"
resume=$(printf '%s\n' "$OUT" | sed -n 's/^to retry the failed windows: //p')
case "$resume" in
"faucet backfill --state file:st --pipeline orders --from 2026-06-01T00:00:00+02:00 --to 2026-06-06T00:00:00+02:00 --window 1d --timezone Europe/Berlin --resume -- sh -c "*) pass ;;
*) fail "the resume command: '$resume'" ;;
esac
# Non-terminal stderr: plain lines, no status line and no escape sequences.
case "$ERR" in *$'\r'* | *$'\033'*) fail "plain lines off a terminal" ;; *) pass ;; esac

# With -c, the resume command keeps the config (its command and defaults).
cat > r.yaml <<'YAML'
name: shop
state: {type: file, config: {path: rst}}
backfill:
  window: 1d
  command: ["sh", "-c", "[ \"$1\" != 20260602T000000Z ]", "unit", "${backfill.unit}"]
YAML
run backfill -c r.yaml --from 2026-06-01 --to 2026-06-04
expect_rc 1 "a config's backfill with one failure"
resume_c=$(printf '%s\n' "$OUT" | sed -n 's/^to retry the failed windows: //p')
if [ "$resume_c" = "faucet backfill -c r.yaml --pipeline shop --from 2026-06-01T00:00:00+00:00 --to 2026-06-04T00:00:00+00:00 --window 1d --timezone UTC --resume" ]; then
	pass
else
	fail "the resume command of a config's backfill: '$resume_c'"
fi

# A unit leased by another runner: the notice names its window and when the
# lease runs out; the runner comes back to it once it has expired (in 3 s).
LB=(backfill --state "$ST" --pipeline leased)
run "${LB[@]}" --from 2027-02-01 --to 2027-02-02 --dry-run --json
h=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["range_hash"])')
raw_put "$ST" "leased::backfill::$h::20270201T000000Z::__lease__" \
	"{\"holder\":\"other:1:x\",\"expires_at\":$(( $(date +%s) + 3 ))}"
run "${LB[@]}" --from 2027-02-01 --to 2027-02-02 -- true
expect_rc 0 "the leased unit runs once the lease has expired"
if printf '%s\n' "$ERR" | grep -q '^backfill: window 2027-02-01T00:00:00+00:00/2027-02-02T00:00:00+00:00 (unit 20270201T000000Z) is leased by another runner until 20[0-9-]*T[0-9:]*+00:00; coming back to it later$'; then
	pass
else
	fail "the lease notice names the window and the expiry as a time"
fi

# ---- status: one range, by its boundaries ----
run backfill status --state "$ST" --pipeline orders --from 2026-06-01 --to 2026-06-06 --window 1d --timezone "$ZONE"
expect_rc 0 "status of one range"
expect_out_contains "3 done, 2 failed, 0 running, 0 pending" "the range's counts"
if printf '%s\n' "$OUT" | grep -q '^2026-06-04T00:00:00+02:00/2026-06-05T00:00:00+02:00  failed   attempts 1  started 20[0-9-]*T[0-9:]*+00:00  ended 20[0-9-]*T[0-9:]*+00:00  exit status 3: disk full$'; then
	pass
else
	fail "a failed unit's line: window in the zone, status, attempts, times, error"
fi
run backfill status --state "$ST" --pipeline orders --from 2026-06-01 --to 2026-06-06 --window 1d --timezone "$ZONE" --json
expect_json 'd["timezone"] == "Europe/Berlin" and [u["status"] for u in d["units"]] == ["done", "done", "failed", "failed", "done"] and d["units"][2]["attempts"] == 1 and d["units"][2]["error"] == "exit status 3: disk full" and d["units"][0]["start"] == "2026-06-01T00:00:00+02:00"' \
	"status --json of one range"
hash=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["range_hash"])')

# The marker keeps the original's fields as they were, beside ours.
run state get --state "$ST" "orders::__backfill__::$hash"
expect_json 'd["units"]["20260602T220000Z"]["status"] == "failed" and d["units"]["20260602T220000Z"]["error"] == "exit status 3: disk full" and d["units"]["20260531T220000Z"]["status"] == "done" and d["timezone"] == "Europe/Berlin" and d["descriptor"].startswith("time|2026-06-01T00:00:00+02:00|")' \
	"the marker: the original's fields unchanged, ours added"

# ---- the printed resume command, run as printed, retries only the failures ----
export FAIL_UNITS="20260603T220000Z"
eval "${resume/faucet/\"\$FAUCET_BIN\"}" >resume.out 2>resume.err
rc=$?
if [ $rc -eq 1 ] && grep -q "1 done, 1 failed, 3 skipped" resume.out; then pass; else fail "the resume command ran: rc $rc $(cat resume.out resume.err)"; fi
run backfill status --state "$ST" --pipeline orders --hash "$hash" --json
expect_rc 0 "status by hash"
expect_json '[u["attempts"] for u in d["units"]] == [1, 1, 2, 2, 1] and d["done"] == 4 and d["failed"] == 1' \
	"attempts counted across runs (by hash)"

# ---- status: every backfill of the pipeline, with a running unit ----
run "${BF[@]}" --from 2026-07-01 --to 2026-07-03 --window 1d -- true
future=$(( $(date +%s) + 3600 ))
run backfill --state "$ST" --pipeline orders --from 2026-08-01 --to 2026-08-03 --window 1d --dry-run --json
hash2=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["range_hash"])')
run "${BF[@]}" --from 2026-08-01 --to 2026-08-03 --window 1d -- sh -c 'exit 1'
raw_put "$ST" "orders::backfill::$hash2::20260801T000000Z::__lease__" "{\"holder\":\"host-a:42:abc\",\"expires_at\":$future}"
run backfill status --state "$ST" --pipeline orders
expect_rc 0 "status of every backfill"
if [ "$(printf '%s\n' "$OUT" | wc -l)" -eq 3 ]; then pass; else fail "one line per marker"; fi
expect_out_contains "$hash2  2026-08-01T00:00:00+00:00/2026-08-03T00:00:00+00:00  window 1d  zone UTC  row default  done 0  failed 1  running 1  pending 0  (of 2)  held by host-a:42:abc" \
	"a running unit is counted and its holder shown"
run backfill status --state "$ST" --pipeline orders --json
expect_json 'len(d["backfills"]) == 3 and [b for b in d["backfills"] if b["range_hash"] == "'"$hash2"'"][0]["holders"] == ["host-a:42:abc"]' \
	"status --json of every backfill"
run backfill status --state "$ST" --pipeline orders --hash "$hash2"
expect_out_contains "2026-08-01T00:00:00+00:00/2026-08-02T00:00:00+00:00  running  attempts 1" "the running unit's line"
expect_out_contains "held by host-a:42:abc until" "its holder and lease expiry"
run backfill status --state "$ST" --pipeline nobody
expect_rc 0 "a pipeline without backfills"
expect_out_contains "no backfill of 'nobody'" "says so"

# A marker the original wrote: no zone, no attempts.  The units are cut in
# UTC (the same units for an elapsed window) and the zone is said unknown.
run state put --state file:orig 'legacy::__backfill__::00000000000000aa' \
	'{"descriptor":"time|2026-03-01T00:00:00-05:00|2026-03-01T12:00:00-05:00|21600|default","units":{"20260301T050000Z":{"status":"failed","error":"boom"}}}'
run backfill status --state file:orig --pipeline legacy
expect_rc 0 "status of the original's marker"
expect_out_contains "window 6h  zone UTC (not recorded)  row default  done 0  failed 1  running 0  pending 1  (of 2)" \
	"the original's marker: counts, window, zone unknown"
run backfill status --state file:orig --pipeline legacy --hash 00000000000000aa --json
expect_json '[u["status"] for u in d["units"]] == ["failed", "pending"] and d["units"][0]["attempts"] == 0 and d["units"][0]["error"] == "boom" and d["units"][0]["start"] == "2026-03-01T05:00:00+00:00"' \
	"the original's marker unit by unit"

# ---- status is a read command ----
run backfill status --state file:missing --pipeline orders
expect_rc 1 "status of a missing store"
expect_err_contains "no state store at missing" "names the missing store"
expect_no_file missing "status does not create a store"
run backfill status --state "$ST" --pipeline orders --hash 0123456789abcdef
expect_rc 1 "an unknown hash"
run backfill status --state "$ST" --pipeline orders --hash nothex
expect_rc 2 "a malformed hash"
run backfill status --state "$ST" --pipeline orders --resume
expect_rc 2 "run options are not status options"
run backfill status --help
expect_out_contains "usage: faucet backfill status" "status --help"

# ---- the first 10 failed windows and a count ----
run "${BF[@]}" --from 2026-09-01 --to 2026-09-13 --window 1d -- false
expect_rc 12 "twelve failed units"
if [ "$(printf '%s\n' "$OUT" | grep -c '^  2026-09-')" -eq 10 ]; then pass; else fail "ten failed windows listed"; fi
expect_out_contains "... and 2 more" "and a count of the rest"

# ---- --json: one summary object whose outcome tells errors from counts ----
run "${BF[@]}" --from 2026-10-01 --to 2026-10-02 --json -- false
expect_rc 1 "one failed unit"
expect_json 'd["outcome"] == "units_failed" and d["failed"] == 1 and d["exit"] == 1 and d["failed_windows"][0]["start"] == "2026-10-01T00:00:00+00:00" and d["resume_command"].endswith("--resume -- false")' \
	"--json: units_failed"
run "${BF[@]}" --from 2026-10-05 --to 2026-10-06 --json -- echo 'unit output on stdout'
expect_err_contains "] unit output on stdout" "with --json a unit's stdout goes to stderr"
expect_json 'd["outcome"] == "ok" and d["exit"] == 0 and d["failed_windows"] == [] and d["resume_command"] is None' "--json: ok"
run backfill --state file:st --pipeline orders --from 2026-10-01 --to 2026-10-02 --window 5x --json -- true
expect_rc 2 "a usage error"
expect_json 'd["outcome"] == "error" and d["error"]["exit"] == 2 and "failed" not in d and "done" not in d' \
	"--json: a usage error is outcome error, with no unit counts"
mkdir ro && touch ro/x && chmod 500 ro
if [ ! -w ro ]; then
	run backfill --state file:ro --pipeline orders --from 2026-10-01 --to 2026-10-02 --json -- true
	expect_rc 1 "a store error"
	expect_json 'd["outcome"] == "error" and d["error"]["exit"] == 1 and "failed" not in d' \
		"--json: a store error is outcome error, with no unit counts"
fi
chmod 700 ro
run backfill --help
expect_out_contains '"outcome"' "--help explains the --json outcome"
expect_out_contains "1 or 2 failed units" "--help says where the exit codes collide"

# ---- metrics ----
run "${BF[@]}" --from 2026-11-01 --to 2026-11-04 --window 1d --metrics-file m.prom -- \
	sh -c '[ "$1" = 20261101T000000Z ]' unit '${backfill.unit}'
expect_rc 2 "two of three failed"
m=$(cat m.prom)
for line in '# HELP faucet_backfill_progress_ratio ' '# TYPE faucet_backfill_progress_ratio gauge' \
	'# TYPE faucet_backfill_units_total counter' '# TYPE faucet_backfill_units gauge' \
	'faucet_backfill_progress_ratio{pipeline="orders"} 0.333333333333333' \
	'faucet_backfill_units{pipeline="orders",status="done"} 1' \
	'faucet_backfill_units{pipeline="orders",status="failed"} 2' \
	'faucet_backfill_units{pipeline="orders",status="pending"} 0' \
	'faucet_backfill_units{pipeline="orders",status="running"} 0' \
	'# TYPE faucet_backfill_unit_duration_seconds summary' \
	'faucet_backfill_unit_duration_seconds_count{pipeline="orders"} 3' \
	'faucet_backfill_unit_duration_seconds_sum{pipeline="orders"} ' \
	'# TYPE faucet_backfill_last_update_timestamp_seconds gauge' \
	'faucet_backfill_last_update_timestamp_seconds{pipeline="orders"} 1'; do
	case "$m" in *"$line"*) pass ;; *) fail "metrics file should hold '$line': $m" ;; esac
done
# A metrics file that cannot be written: said once mid-run, an error at the end.
touch notadir
# (each unit takes over a second, so the rewrites are not throttled away)
run "${BF[@]}" --from 2026-11-20 --to 2026-11-23 --window 1d --metrics-file notadir/m.prom -- sleep 1.1
expect_rc 1 "an unwritable metrics file fails the run at its end"
if [ "$(printf '%s\n' "$ERR" | grep -c '^backfill: .*metrics')" -eq 1 ]; then pass; else fail "the mid-run failure is said once"; fi
# Interrupted: the file is written again, with the interrupted unit pending.
run "${BF[@]}" --from 2026-11-10 --to 2026-11-12 --window 1d --metrics-file mi.prom -- sh -c 'kill -INT $PPID; exec sleep 30'
expect_rc 130 "interrupted"
if grep -q '^faucet_backfill_units{pipeline="orders",status="pending"} 2$' mi.prom &&
	grep -q '^faucet_backfill_progress_ratio{pipeline="orders"} 0$' mi.prom; then
	pass
else
	fail "metrics of an interrupted run: $(cat mi.prom 2>/dev/null)"
fi
run "${BF[@]}" --from 2026-11-10 --to 2026-11-12 --window 1d --resume --json -- sh -c 'kill -INT $PPID; exec sleep 30'
expect_json 'd["outcome"] == "interrupted" and d["signal"] == 2 and d["resume_command"] is not None' "--json: interrupted"

# ---- the status line on a real terminal ----
# `script` gives the command a pseudo-terminal; screen.py replays what it
# wrote the way a terminal would (\r, \n, ESC[K) and prints the screen.
cat > screen.py <<'PY'
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
raw = re.sub(r"\x1b\[[0-9;]*m", "", raw)  # colours take no room
lines, cur, col, i = [], [], 0, 0
while i < len(raw):
    c = raw[i]
    if raw.startswith("\x1b[K", i):
        del cur[col:]; i += 3; continue
    if c == "\r":
        col = 0
    elif c == "\n":
        lines.append("".join(cur)); cur, col = [], 0
    else:
        if col < len(cur): cur[col] = c
        else: cur.append(c)
        col += 1
    i += 1
if cur: lines.append("".join(cur))
print("\n".join(lines))
PY
pty_run() { # pty_run OUTFILE ARGS... (NO_COLOR, COLS from the environment)
	local out=$1
	shift
	local cmd="stty cols ${COLS:-100}; \"$FAUCET_BIN\""
	for a in "$@"; do cmd="$cmd $(printf '%q' "$a")"; done
	script -qfec "$cmd" /dev/null </dev/null >"$out" 2>&1
}
export FAIL_UNITS="20261202T000000Z"
pty_run tty.raw "${BF[@]}" --from 2026-12-01 --to 2026-12-05 --window 1d --concurrency 2 -- \
	sh -c "$FAILING" unit '${backfill.unit}'
python3 screen.py tty.raw > tty.screen
if grep -q 'running [12]  pending' tty.raw && grep -q 'ETA' tty.raw && grep -q 'elapsed' tty.raw; then
	pass
else
	fail "a status line with counts, elapsed time and an ETA is drawn: $(cat -v tty.raw | head -c 600)"
fi
if grep -q 'ETA' tty.screen; then
	fail "no status line is left behind on the screen: $(cat tty.screen)"
else
	pass
fi
if grep -q '^window 2026-12-02T00:00:00+00:00/2026-12-03T00:00:00+00:00 failed: exit status 3: disk full' tty.screen; then
	pass
else
	fail "the failure line stands on a line of its own: $(cat tty.screen)"
fi
bad_lines=$(grep -E '(out|err) 2026' tty.screen | grep -cv '^\[2026-12-0[1-4]T00:00:00+00:00/2026-12-0[2-5]T00:00:00+00:00\] ')
if [ "$bad_lines" -eq 0 ] && [ "$(grep -cE '(out|err) 2026' tty.screen)" -eq 8 ]; then
	pass
else
	fail "every unit output line is whole and prefixed with its window: $(cat tty.screen)"
fi
if grep -q $'\033\\[31m' tty.raw; then pass; else fail "colours on a terminal"; fi
NO_COLOR=1 pty_run tty2.raw "${BF[@]}" --from 2026-12-10 --to 2026-12-12 --window 1d -- false
if grep -q $'\033\\[3' tty2.raw; then fail "NO_COLOR turns colours off"; else pass; fi
if grep -q 'failed 2' tty2.raw; then pass; else fail "the status line without colours"; fi
# The clock moves while a unit runs, with no unit starting or ending (the
# unit's own work is the 2.5 s sleep).
pty_run tty4.raw "${BF[@]}" --from 2026-12-25 --to 2026-12-26 -- sleep 2.5
if grep -q 'running 1  pending 0  elapsed 2s' tty4.raw; then pass; else fail "the elapsed time is redrawn while a unit runs: $(cat -v tty4.raw | tail -c 300)"; fi
# A terminal narrower than the status line: it is cut, never wrapped (an
# erase would then clear only its last row and leave the rest behind).
COLS=30 pty_run tty3.raw "${BF[@]}" --from 2026-12-20 --to 2026-12-22 --window 1d -- false
python3 screen.py tty3.raw > tty3.screen
if grep -q 'running [0-9]' tty3.raw; then fail "the line is cut to the width"; else pass; fi
if grep -q '^\[' tty3.screen; then fail "nothing of the cut status line is left: $(cat tty3.screen)"; else pass; fi

finish
