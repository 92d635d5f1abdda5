#!/usr/bin/env bash
# `faucet backfill`: units run with placeholders and environment, failures
# and their exit codes, --resume / --restart / --dry-run, the YAML's
# backfill block and flags over it, --json, metrics, interruption, two
# runners on one range, lease renewal while a unit runs, and bad input that
# must run and write nothing.
. "$(dirname "$0")/lib.sh"

ST=file:st
BF=(backfill --state "$ST" --pipeline orders)

# ---- a plain run ----
run "${BF[@]}" --from 2026-06-01 --to 2026-06-04 --window 1d -- \
	sh -c 'echo "$1 $2 $FAUCET_BACKFILL_UNIT $FAUCET_BACKFILL_STATE_KEY $FAUCET_STATE" >> log' \
	unit '${backfill.start_date}' '${backfill.end}'
expect_rc 0 "three daily units"
if [ "$(cat log)" = "2026-06-01 2026-06-02T00:00:00+00:00 20260601T000000Z orders::backfill::816002da283beacb::20260601T000000Z file:st
2026-06-02 2026-06-03T00:00:00+00:00 20260602T000000Z orders::backfill::816002da283beacb::20260602T000000Z file:st
2026-06-03 2026-06-04T00:00:00+00:00 20260603T000000Z orders::backfill::816002da283beacb::20260603T000000Z file:st" ]; then
	pass
else
	fail "placeholders and environment: $(cat log)"
fi
expect_out_contains "3 done, 0 failed" "the report"
run state get --state "$ST" orders::__backfill__::816002da283beacb
expect_json 'len(d["units"]) == 3 and all(u["status"] == "done" for u in d["units"].values())' \
	"the marker records every unit"
run state list --state "$ST" orders::backfill::
expect_out "" "no lease is left behind"

# ---- the same range again needs --resume or --restart ----
before=$(snapshot st)
run "${BF[@]}" --from 2026-06-01 --to 2026-06-04 --window 1d -- touch ran-again
expect_rc 2 "an existing marker without --resume/--restart"
expect_one_error_line "existing marker"
expect_err_contains "3 done, 0 failed" "the error names the counts"
expect_no_file ran-again "nothing ran"
expect_same "$before" "$(snapshot st)" "nothing written"

# ---- failures, exit codes, resume, restart ----
rm -f log
FAILING='echo "$1" >> log; if [ "$1" = 20260702T000000Z ]; then echo noise >&2; echo "disk full" >&2; exit 3; fi'
run "${BF[@]}" --from 2026-07-01 --to 2026-07-04 --window 1d -- sh -c "$FAILING" unit '${backfill.unit}'
expect_rc 1 "one failed unit: exit 1"
expect_err_contains "window 2026-07-02T00:00:00+00:00/2026-07-03T00:00:00+00:00 failed: exit status 3: disk full (unit 20260702T000000Z" "the failure line"
run "${BF[@]}" --from 2026-07-01 --to 2026-07-04 --window 1d -- true
expect_rc 2 "marker exists"
expect_err_contains "2 done, 1 failed" "counts in the error"
run "${BF[@]}" --from 2026-07-01 --to 2026-07-04 --window 1d --resume -- \
	sh -c 'echo "resumed $1" >> log' unit '${backfill.unit}'
expect_rc 0 "resume"
if [ "$(tail -n 1 log)" = "resumed 20260702T000000Z" ] && [ "$(wc -l < log)" -eq 4 ]; then
	pass
else
	fail "resume ran only the failed unit: $(cat log)"
fi
run "${BF[@]}" --from 2026-07-01 --to 2026-07-04 --window 1d --restart --json -- true
expect_rc 0 "restart"
expect_json 'd["done"] == 3 and d["skipped"] == 0' "restart runs everything"

# More than 100 failed units: exit 100.
run "${BF[@]}" --from 2026-08-01 --to 2026-08-06 --window 1h --concurrency 4 -- false
expect_rc 100 "the exit code is capped at 100"

# ---- dry run ----
before=$(snapshot st)
run "${BF[@]}" --from 2026-07-01 --to 2026-07-04 --window 1d --resume --dry-run --json
expect_rc 0 "dry run"
expect_json '[u["status"] for u in d["units"]] == ["done", "done", "done"] and d["dry_run"] and d["skipped"] == 3' \
	"dry run shows what is done"
run "${BF[@]}" --from 2026-07-01 --to 2026-07-05 --window 1d --dry-run --json
expect_json '[u["status"] for u in d["units"]] == ["pending"] * 4' "another range is all pending"
expect_same "$before" "$(snapshot st)" "a dry run writes nothing"
run "${BF[@]}" --from 2026-07-01 --to 2026-07-03 --window 1d --dry-run
expect_out_contains "20260701T000000Z  2026-07-01T00:00:00+00:00  2026-07-02T00:00:00+00:00" "plain dry run"

# ---- bad input: one line, exit 2, nothing run, nothing written ----
before=$(snapshot st)
bad() { # bad WHAT NEEDLE ARGS...
	local what=$1 needle=$2
	shift 2
	run "$@"
	expect_rc 2 "$what"
	expect_one_error_line "$what"
	expect_err_contains "$needle" "$what"
}
bad "bad window" "invalid window '5x'" "${BF[@]}" --from 2026-09-01 --to 2026-09-02 --window 5x -- touch ran
bad "zero window" "invalid window '0h'" "${BF[@]}" --from 2026-09-01 --to 2026-09-02 --window 0h -- touch ran
bad "bad boundary" "--from '2026-13-01'" "${BF[@]}" --from 2026-13-01 --to 2026-09-02 -- touch ran
bad "reversed" "must be before" "${BF[@]}" --from 2026-09-02 --to 2026-09-01 -- touch ran
bad "unknown zone" "unknown time zone 'Mars/Base'" "${BF[@]}" --from 2026-09-01 --to 2026-09-02 --timezone Mars/Base -- touch ran
bad "zero concurrency" "--concurrency" "${BF[@]}" --from 2026-09-01 --to 2026-09-02 --concurrency 0 -- touch ran
bad "both modes" "--resume and --restart" "${BF[@]}" --from 2026-09-01 --to 2026-09-02 --resume --restart -- touch ran
bad "unknown placeholder" '${backfill.strat}' "${BF[@]}" --from 2026-09-01 --to 2026-09-02 -- echo '${backfill.strat}'
bad "unterminated placeholder" "unterminated" "${BF[@]}" --from 2026-09-01 --to 2026-09-02 -- echo '${backfill.start'
bad "no command" "no command" "${BF[@]}" --from 2026-09-01 --to 2026-09-02
bad "no pipeline" "pipeline" backfill --state "$ST" --from 2026-09-01 --to 2026-09-02 -- touch ran
bad "short lease" "--lease-ttl" "${BF[@]}" --from 2026-09-01 --to 2026-09-02 --lease-ttl 1s -- touch ran
for v in 18446744073709551615ms 18446744073709551616 5124095576030431h 721h 0 -5s 5x; do
	bad "lease TTL '$v'" "--lease-ttl '$v'" "${BF[@]}" --from 2026-09-01 --to 2026-09-02 --lease-ttl "$v" -- touch ran
done
bad "too many units" "more than 10000 units" "${BF[@]}" --from 2026-01-01 --to 2026-02-01 --window 1m -- touch ran
bad "command not on PATH" "command 'faucet-no-such-command' was not found on PATH" "${BF[@]}" --from 2026-09-01 --to 2026-09-03 --window 1d -- faucet-no-such-command ran
bad "command path missing" "command './no-such-script' does not exist" "${BF[@]}" --from 2026-09-01 --to 2026-09-03 --window 1d -- ./no-such-script ran
expect_no_file ran "no bad input ran the command"
expect_same "$before" "$(snapshot st)" "no bad input wrote anything"

# A corrupt marker is bad input too.
run "${BF[@]}" --from 2026-09-01 --to 2026-09-03 --window 1d --dry-run --json
hash=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["range_hash"])')
run state put --state "$ST" "orders::__backfill__::$hash" '{"units":[]}'
before=$(snapshot st)
bad "corrupt marker" "corrupt backfill marker" "${BF[@]}" --from 2026-09-01 --to 2026-09-03 --window 1d --resume -- touch ran
expect_no_file ran "a corrupt marker runs nothing"
expect_same "$before" "$(snapshot st)" "a corrupt marker is left as it is"

# ---- the YAML's backfill block, and flags over it ----
cat > bf.yaml <<'YAML'
name: shop
state: {type: file, config: {path: cst}}
backfill:
  window: 12h
  concurrency: 2
  timezone: America/New_York
  command: ["sh", "-c", "echo \"$1 $FAUCET_CONFIG\" >> yl", "unit", "${backfill.start}"]
YAML
run backfill -c bf.yaml --from 2026-03-08 --to 2026-03-09
expect_rc 0 "config defaults"
if [ "$(sort yl)" = "2026-03-08T00:00:00-05:00 $PWD/bf.yaml
2026-03-08T13:00:00-04:00 $PWD/bf.yaml" ]; then pass; else fail "12h units in New York, FAUCET_CONFIG absolute: $(cat yl)"; fi
rm -f yl
run backfill -c bf.yaml --from 2026-03-10 --to 2026-03-11 --window 1d --timezone UTC
expect_rc 0 "flags over config"
if [ "$(cat yl)" = "2026-03-10T00:00:00+00:00 $PWD/bf.yaml" ]; then pass; else fail "flags win: $(cat yl)"; fi

# ---- metrics ----
run "${BF[@]}" --from 2026-10-01 --to 2026-10-03 --window 1d --metrics-file m.prom -- true
expect_rc 0 "metrics run"
if grep -q '^faucet_backfill_units_total{pipeline="orders",outcome="ok"} 2$' m.prom &&
	grep -q '^faucet_backfill_progress_ratio{pipeline="orders"} 1$' m.prom; then
	pass
else
	fail "metrics file: $(cat m.prom 2>/dev/null)"
fi

# ---- interruption: running units stay pending, exit 128 + signal ----
run "${BF[@]}" --from 2026-11-01 --to 2026-11-03 --window 1d -- sh -c 'kill -INT $PPID; exec sleep 30'
expect_rc 130 "SIGINT: exit 130"
run state get --state "$ST" "orders::__backfill__::$("$FAUCET_BIN" "${BF[@]}" --from 2026-11-01 --to 2026-11-03 --window 1d --dry-run --resume --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["range_hash"])')"
# The marker exists from the start (so status sees the interrupted run), but
# no unit is recorded in it.
expect_json 'd["units"] == {} and d["timezone"] == "UTC"' "no unit recorded after an interrupt"

# ---- two runners on one range ----
mkdir -p race
pids=()
for i in 1 2; do
	"$FAUCET_BIN" "${BF[@]}" --from 2026-12-01 --to 2026-12-13 --window 1d --resume --concurrency 2 -- \
		sh -c 'echo x >> "race/$1"' unit '${backfill.unit}' >/dev/null 2>"race.$i.err" &
	pids+=($!)
done
ok=1
for p in "${pids[@]}"; do wait "$p" || ok=0; done
if [ $ok -eq 1 ]; then pass; else fail "both racing runners exit 0: $(cat race.*.err)"; fi
for d in $(seq -w 1 12); do
	[ "$(cat "race/202612${d}T000000Z" 2>/dev/null)" = "x" ] || ok=0
done
if [ $ok -eq 1 ]; then pass; else fail "every unit ran exactly once: $(ls race | wc -l) files"; fi

# ---- the lease is renewed while a unit runs ----
# With --lease-ttl 3s the runner renews every second.  The unit watches its
# own lease through the store it was given (FAUCET_STATE) until expires_at
# grows, and fails if that does not happen within about ten seconds - which
# is what a runner that never renews would make it do.
cat > lease.sh <<'SH'
lease() {
	"$FAUCET_BIN" state get "$FAUCET_BACKFILL_STATE_KEY::__lease__" |
		sed -n 's/.*"expires_at": *\([0-9][0-9]*\).*/\1/p'
}
first=$(lease)
[ -n "$first" ] || { echo "no lease at $FAUCET_BACKFILL_STATE_KEY::__lease__" >&2; exit 1; }
echo "$FAUCET_BACKFILL_STATE_KEY" > lease.key
i=0
while [ $i -lt 100 ]; do
	now=$(lease)
	if [ -n "$now" ] && [ "$now" -gt "$first" ]; then
		echo "$first $now" > lease.seen
		exit 0
	fi
	sleep 0.1
	i=$((i + 1))
done
echo "expires_at stayed $first" >&2
exit 1
SH
run "${BF[@]}" --from 2027-01-01 --to 2027-01-02 --lease-ttl 3s --json -- sh lease.sh
expect_rc 0 "the unit saw its lease renewed"
expect_json 'd["done"] == 1 and d["failed"] == 0' "the unit is done"
expect_file lease.seen "the unit recorded the renewal"
run state get --state "$ST" "orders::__backfill__::$("$FAUCET_BIN" "${BF[@]}" --from 2027-01-01 --to 2027-01-02 --dry-run --resume --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["range_hash"])')"
expect_json 'list(d["units"]) == ["20270101T000000Z"] and d["units"]["20270101T000000Z"]["status"] == "done"' "the marker records the unit as done"
# An absent key prints nothing and exits 0 (doc/design.md §5.4).
run state get --state "$ST" "$(cat lease.key)::__lease__"
expect_rc 0 "reading the lease key after the run"
expect_no_err "reading the lease key after the run"
expect_out "" "the lease is gone after the run"

# ---- doctor warns about expired leases (a runner that died leaves them) ----
mkdir dl
raw_put file:dl 'orders::backfill::abc::20260601T000000Z::__lease__' '{"holder":"gone:1:x","expires_at":5}'
raw_put file:dl 'orders::backfill::abc::20260602T000000Z::__lease__' "{\"holder\":\"live:1:x\",\"expires_at\":$(( $(date +%s) + 3600 ))}"
run doctor --state file:dl
expect_rc 0 "an expired lease is a warning, not a failure"
expect_out_contains "WARN  expired leases" "the warning"
expect_out_contains "1 expired lease(s): orders::backfill::abc::20260601T000000Z::__lease__" "it names the expired lease"
expect_out_lacks "20260602T000000Z" "a live lease is not named"
run doctor --state file:dl --json
expect_json '[p["status"] for p in d["probes"] if p["name"] == "expired leases"] == ["warn"] and d["ok"]' "the warning in JSON"

# ---- an encrypted store: units inherit the key by its variable's name ----
# The unit writes its scoped key with a plain `faucet state put`: it must be
# sealed like the rest of the store, and the key must reach the unit only
# through the variable the operator named (nothing else holds its value).
export BF_SEAL_KEY=backfill-cli-test-key
cat > seal.sh <<'SH'
"$FAUCET_BIN" state put "$FAUCET_BACKFILL_STATE_KEY" '{"sealed":true}' || exit 1
echo "$FAUCET_BACKFILL_STATE_KEY" > seal.key
env | grep -c backfill-cli-test-key > seal.count
SH
run backfill --state file:enc --encryption-key-env BF_SEAL_KEY --pipeline vault \
	--from 2026-06-01 --to 2026-06-02 -- sh seal.sh
expect_rc 0 "an encrypted-store backfill"
plain=""
for f in enc/*.json; do
	[ "$(head -c 4 "$f")" = FCT1 ] || plain="$plain $f"
done
if [ -z "$plain" ] && [ "$(ls enc/*.json | wc -l)" -ge 2 ]; then
	pass
else
	fail "every file of the encrypted store is sealed (plain:$plain; files: $(ls enc))"
fi
if [ "$(cat seal.count 2>/dev/null)" = 1 ]; then pass; else fail "the key's value is in one variable only"; fi
run state get --state file:enc --encryption-key-env BF_SEAL_KEY "$(cat seal.key)"
expect_rc 0 "the unit's value reads back with the key"
expect_out '{"sealed":true}' "the unit's value"
run state get --state file:enc "$(cat seal.key)"
expect_rc 1 "the unit's value is sealed: no key, no value"
# FAUCET_ENCRYPTION_KEY_ENV is the default of --encryption-key-env.
FAUCET_ENCRYPTION_KEY_ENV=BF_SEAL_KEY run state get --state file:enc "$(cat seal.key)"
expect_rc 0 "FAUCET_ENCRYPTION_KEY_ENV names the key"
expect_out '{"sealed":true}' "the value read with FAUCET_ENCRYPTION_KEY_ENV"
unset BF_SEAL_KEY

finish
