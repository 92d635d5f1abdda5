#!/usr/bin/env bash
# `faucet backfill status` at the edges: a range asked for in another time
# zone than its marker records, a backfill killed during its first unit
# (the marker exists from the start, every unit pending), and --tenant
# (tenant T's pipeline P: markers at T::P::__backfill__::{hash}).
. "$(dirname "$0")/lib.sh"

ST=file:st

# ---- the zone asked for differs from the marker's ----
# RFC 3339 boundaries and a calendar window: the descriptor (and so the
# hash) is the same in every zone, but the units are not.
run backfill --state "$ST" --pipeline tz --from 2026-06-01T00:00:00+00:00 \
	--to 2026-06-03T00:00:00+00:00 --window 1d --timezone Europe/Berlin -- true
expect_rc 0 "a backfill in Europe/Berlin"
run backfill status --state "$ST" --pipeline tz --from 2026-06-01T00:00:00+00:00 \
	--to 2026-06-03T00:00:00+00:00 --window 1d
expect_rc 2 "status of that range in UTC: refused"
expect_one_error_line "the zone mismatch (same hash)"
expect_err_contains "'Europe/Berlin'" "the mismatch names the marker's zone"
expect_err_contains "'UTC'" "the mismatch names the zone asked for"
run backfill status --state "$ST" --pipeline tz --from 2026-06-01T00:00:00+00:00 \
	--to 2026-06-03T00:00:00+00:00 --window 1d --timezone Europe/Berlin
expect_rc 0 "status in the marker's zone"
expect_out_contains "2 unit(s): 2 done" "status in the marker's zone counts the units"

# Bare dates mean local midnight: in another zone they are another range
# (another hash), which has no marker, but the one in the marker's zone has.
run backfill --state "$ST" --pipeline dates --from 2026-06-01 --to 2026-06-03 --window 1d \
	--timezone America/New_York -- true
expect_rc 0 "a backfill of bare dates in America/New_York"
run backfill status --state "$ST" --pipeline dates --from 2026-06-01 --to 2026-06-03 --window 1d \
	--timezone Europe/Berlin
expect_rc 2 "status of those dates in Europe/Berlin: refused"
expect_one_error_line "the zone mismatch (another hash)"
expect_err_contains "'America/New_York'" "names the marker's zone"
expect_err_contains "'Europe/Berlin'" "names the zone asked for"
run backfill status --state "$ST" --pipeline dates --from 2026-06-01 --to 2026-06-03 --window 1d
expect_rc 2 "status of those dates in UTC (the default): refused"
expect_err_contains "'America/New_York'" "names the marker's zone (default UTC)"
# A range that never ran in any zone is still just "not run".
run backfill status --state "$ST" --pipeline dates --from 2026-07-01 --to 2026-07-03 --window 1d
expect_rc 0 "status of a range that never ran"
expect_out_contains "(no marker: this range has not run)" "a range that never ran"

# ---- a backfill killed during its first unit ----
mkfifo ready gate
# The first unit tells us it runs (ready), then blocks until released (gate);
# without the FIFOs every unit just succeeds.
UNIT='if [ -p gate ]; then echo running > ready; read x < gate; fi; exit 0'
"$FAUCET_BIN" backfill --state "$ST" --pipeline killed --from 2026-05-01 --to 2026-05-04 \
	--window 1d --lease-ttl 3 -- sh -c "$UNIT" >"$WORK/killed.out" 2>"$WORK/killed.err" </dev/null &
runner=$!
read -r started < ready
[ "$started" = running ] && pass || fail "the first unit started"
kill -KILL "$runner"
wait "$runner" 2>/dev/null
run backfill status --state "$ST" --pipeline killed
expect_rc 0 "status after the runner was killed during its first unit"
expect_out_contains "2026-05-01T00:00:00+00:00/2026-05-04T00:00:00+00:00  window 1d  zone UTC" \
	"the killed backfill is listed"
expect_out_contains "done 0  failed 0" "with nothing done"
expect_out_contains "(of 3)" "with all its units"
run backfill status --state "$ST" --pipeline killed --from 2026-05-01 --to 2026-05-04 --window 1d --json
expect_json 'd["marker"] is True and d["done"] == 0 and d["total"] == 3' "status of the range: marker, 0 done"
# Release the orphaned unit; the next runs find no FIFO and succeed.
echo go > gate
rm -f ready gate
run backfill --state "$ST" --pipeline killed --from 2026-05-01 --to 2026-05-04 --window 1d -- sh -c "$UNIT"
expect_rc 2 "a fresh run of the killed range is refused"
expect_err_contains "already ran (0 done, 0 failed" "and says it already ran"
expect_err_contains "--resume" "and names --resume"
run backfill --state "$ST" --pipeline killed --from 2026-05-01 --to 2026-05-04 --window 1d --resume -- sh -c "$UNIT"
expect_rc 0 "--resume continues the killed backfill"
run backfill status --state "$ST" --pipeline killed --from 2026-05-01 --to 2026-05-04 --window 1d --json
expect_json 'd["done"] == 3' "after --resume every unit is done"

# A dry run still writes nothing.
run backfill --state "$ST" --pipeline dry --from 2026-05-01 --to 2026-05-03 --window 1d --dry-run -- true
expect_rc 0 "a dry run"
run backfill status --state "$ST" --pipeline dry
expect_out_contains "no backfill of 'dry'" "a dry run leaves no marker"

# ---- --tenant: tenant T's pipeline P, markers at T::P::__backfill__::{hash} ----
# No backfill writes a tenant's marker; the original does (the key
# builder's namespace T::P), so one is planted: this store's marker of the
# range, copied under the tenant.
run backfill --state "$ST" --pipeline orders --from 2026-04-01 --to 2026-04-03 --window 1d -- true
expect_rc 0 "a backfill of orders"
run backfill status --state "$ST" --pipeline orders --from 2026-04-01 --to 2026-04-03 --window 1d --json
hash=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["range_hash"])')
marker=$("$FAUCET_BIN" state get --state "$ST" "orders::__backfill__::$hash")
raw_put "$ST" "acme::orders::__backfill__::$hash" "$marker"
run backfill status --state "$ST" --pipeline orders --tenant acme
expect_rc 0 "status of tenant acme's orders"
expect_out_contains "$hash  2026-04-01T00:00:00+00:00/2026-04-03T00:00:00+00:00" "lists the tenant's backfill"
expect_out_contains "done 2" "with its counts"
run backfill status --state "$ST" --pipeline orders --tenant acme --from 2026-04-01 --to 2026-04-03 --window 1d --json
expect_rc 0 "status of one range of the tenant's pipeline"
expect_json 'd["marker"] is True and d["done"] == 2 and d["pipeline"] == "acme::orders"' "read from the tenant's marker"
run backfill status --state "$ST" --pipeline killed --tenant acme
expect_rc 0 "a tenant's pipeline without backfills"
expect_out_contains "no backfill of 'acme::killed'" "is not the untenanted pipeline's"
run backfill status --state "$ST" --pipeline orders --tenant 'a::b'
expect_rc 2 "a bad --tenant value"
run backfill --state "$ST" --pipeline orders --from 2026-05-01 --to 2026-05-04 --tenant acme -- true
expect_rc 2 "--tenant on backfill itself is refused"
expect_one_error_line "--tenant on backfill refused"
expect_err_contains "belongs to 'faucet backfill status'" "saying where it belongs"

finish
