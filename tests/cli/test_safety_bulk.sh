#!/usr/bin/env bash
# Bulk moves that must not lose data: --replace refusing an empty source
# (a mistyped store or pipeline would otherwise empty the destination's
# namespace), --allow-empty, --dry-run for import and copy (text and
# --json), and the deepest value `put` accepts surviving export -> import.
. "$(dirname "$0")/lib.sh"

SRC=file:src
DST=file:dst
run state put --state $SRC other::x 1
expect_rc 0 "seed the source with another pipeline only"
for k in orders::a orders::b; do
	run state put --state $DST $k '{"kept":true}'
	expect_rc 0 "seed $k"
done

# ---- an empty source with --replace is refused ----
before=$(snapshot dst)
run state copy --state $SRC orders --to $DST --replace
expect_rc 2 "copy --replace from a source without the pipeline's keys"
expect_one_error_line "empty-source refusal"
expect_err_contains "--allow-empty" "the refusal says how to go on"
after=$(snapshot dst)
expect_same "$before" "$after" "the refused copy deleted nothing"
printf '{"version":1,"pipeline":"orders","keys":{}}' >empty.json
run state import --state $DST empty.json --replace --json
expect_rc 2 "import --replace of a document without keys"
expect_err_contains "holds no key" "the refusal is explained"
after=$(snapshot dst)
expect_same "$before" "$after" "the refused import deleted nothing"
run state import --state $DST empty.json
expect_rc 0 "an empty document without --replace is harmless"

# ---- --dry-run prints the plan and writes nothing ----
run state copy --state $SRC orders --to $DST --replace --allow-empty --dry-run --json
expect_rc 0 "copy --dry-run"
expect_json 'd["dry_run"] is True and d["written"] == [] and d["deleted"] == ["orders::a", "orders::b"] and d["error"] is None' "dry-run report of an emptying copy"
after=$(snapshot dst)
expect_same "$before" "$after" "copy --dry-run wrote nothing"
printf '{"version":1,"pipeline":"orders","keys":{"orders::a":1,"orders::c":2}}' >ac.json
run state import --state $DST ac.json --replace --dry-run
expect_rc 0 "import --dry-run"
expect_out_contains "would write: orders::c" "dry run lists the writes"
expect_out_contains "would delete: orders::b" "dry run lists the deletes"
expect_out_contains "nothing was written" "dry run says it wrote nothing"
after=$(snapshot dst)
expect_same "$before" "$after" "import --dry-run wrote nothing"
run state import --state $DST ac.json --replace --json
expect_rc 0 "the real import"
expect_json 'd["dry_run"] is False and d["written"] == ["orders::a", "orders::c"] and d["durability_unknown"] == [] and d["deleted"] == ["orders::b"] and d["error"] is None' "the report of the real import"

# ---- --allow-empty empties on purpose ----
run state copy --state $SRC orders --to $DST --replace --allow-empty
expect_rc 0 "copy --replace --allow-empty"
run state list --state $DST orders
expect_out "" "the namespace was emptied on request"

# ---- the deepest value put accepts survives its backup ----
depth=260
while :; do
	deep=$(python3 -c "import sys; d=int(sys.argv[1]); print('[' * d + '1' + ']' * d)" $depth)
	run state put --state $SRC deep::v "$deep"
	[ "$RC" = 0 ] && break
	depth=$((depth - 1))
	[ $depth -gt 200 ] || { fail "put accepts no nesting"; break; }
done
if [ $depth -ge 255 ]; then pass; else fail "put accepts only $depth levels"; fi
for store in file:deep1 memory:; do
	run state export --state $SRC deep -o deep.json
	expect_rc 0 "export of a value $depth levels deep"
	if [ "$store" = memory: ]; then
		run state copy --state $SRC deep --to memory: --json
		expect_rc 0 "copy of a value $depth levels deep into memory:"
		expect_json 'd["written"] == ["deep::v"]' "copy wrote the deep value"
	else
		run state import --state $store deep.json
		expect_rc 0 "import of the export of a value $depth levels deep"
		run state get --state $store deep::v
		expect_out "$deep" "the deep value came back unchanged"
	fi
done

finish
