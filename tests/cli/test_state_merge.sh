#!/bin/bash
# test_state_merge.sh - `faucet state merge` (RFC 7396, doc/design.md §2.7):
# the merge itself, its refusals, its run and undo, and 8 processes merging
# different members of one value at once on every backend: every member
# is there at the end (compare-and-put with retries, no lost update).
. "$(dirname "$0")/lib.sh"

ID="m$$x$RANDOM"
urls=("file:$PWD/st" "sqlite:$PWD/s.db")
if [ -z "${FAUCET_TEST_PG_URL:-}" ] || [ -z "${FAUCET_TEST_REDIS_URL:-}" ]; then
	fail "FAUCET_TEST_PG_URL / FAUCET_TEST_REDIS_URL are not set: start scripts/test-servers.sh"
else
	urls+=("$FAUCET_TEST_PG_URL?table=merge_$ID&ensure_table=true"
	       "$FAUCET_TEST_REDIS_URL?namespace=merge_$ID")
fi

for url in "${urls[@]}"; do
	S=(--state "$url")
	# An absent key merges into null: the patch with its nulls removed.
	run "${S[@]}" state merge p::r::bm '{"a":1,"gone":null,"n":{"x":null,"y":2}}'
	expect_rc 0 "merge into an absent key ($url)"
	run "${S[@]}" state get p::r::bm
	expect_out '{"a":1,"n":{"y":2}}' "nulls removed from the first merge ($url)"
	# Members replace, null removes, nested objects merge, arrays replace.
	run "${S[@]}" state put p::r::bm '{"a":"b","c":{"d":"e","f":"g"},"l":[1,2],"big":18446744073709551615}'
	run "${S[@]}" state merge p::r::bm '{"a":"z","c":{"f":null,"h":1},"l":[3]}'
	expect_rc 0 "merge ($url)"
	expect_err_contains "undo: faucet state undo p --row r" "the merge is a run ($url)"
	run "${S[@]}" state get p::r::bm
	expect_json 'd == {"a":"z","c":{"d":"e","h":1},"l":[3],"big":18446744073709551615}' \
		"merged value ($url)"
	expect_out_contains '18446744073709551615' "digits kept ($url)"
	# Undo restores the value before the merge.
	run "${S[@]}" state undo p --row r
	expect_rc 0 "undo the merge ($url)"
	run "${S[@]}" state get p::r::bm
	expect_json 'd == {"a":"b","c":{"d":"e","f":"g"},"l":[1,2],"big":18446744073709551615}' \
		"undo restored the value ($url)"
	# --dry-run prints the result and writes nothing.
	run "${S[@]}" state merge p::r::bm '{"a":null}' --dry-run
	expect_rc 0 "dry run ($url)"
	expect_json 'd == {"c":{"d":"e","f":"g"},"l":[1,2],"big":18446744073709551615}' \
		"dry run prints the merged value ($url)"
	run "${S[@]}" state get p::r::bm
	expect_out_contains '"a":"b"' "dry run wrote nothing ($url)"
	# --if-equals: the whole merge is conditional.
	run "${S[@]}" state merge p::r::bm '{"a":1}' --if-equals '{"a":"other"}'
	expect_rc 3 "--if-equals that does not hold ($url)"
	expect_err_contains 'found: {' "--if-equals says what it found ($url)"
	run "${S[@]}" state merge --json p::r::bm '{"a":1}' \
		--if-equals '{"l":[1,2],"big":18446744073709551615,"c":{"f":"g","d":"e"},"a":"b"}'
	expect_rc 0 "--if-equals that holds ($url)"
	expect_json 'd["written"] is True and d["value"]["a"] == 1 and d["previous"]["a"] == "b" and d["run"]' \
		"--json report ($url)"
	# A non-object value patched by an object: refused, exit 2, unchanged.
	run "${S[@]}" state put p::r::num 42
	run "${S[@]}" state merge p::r::num '{"a":1}'
	expect_rc 2 "object patch of a number ($url)"
	expect_one_error_line "one error line ($url)"
	expect_err_contains "not an object" "says why ($url)"
	run "${S[@]}" state get p::r::num
	expect_out 42 "the number is kept ($url)"
	# A non-object patch replaces, as RFC 7396 says.
	run "${S[@]}" state merge p::r::num '[1,2]'
	expect_rc 0 "array patch replaces ($url)"
	run "${S[@]}" state get p::r::num
	expect_out '[1,2]' "replaced by the array ($url)"

	# Eight processes merge different members of one value at once.
	run "${S[@]}" state put p::r::shared '{"base":true}'
	pids=()
	for i in 1 2 3 4 5 6 7 8; do
		"$FAUCET_BIN" "${S[@]}" state merge p::r::shared "{\"m$i\":$i}" \
			>"$WORK/merge$i.out" 2>"$WORK/merge$i.err" </dev/null &
		pids+=($!)
	done
	ok=1
	for i in 1 2 3 4 5 6 7 8; do
		if ! wait "${pids[$((i - 1))]}"; then
			ok=0
			echo "merge $i: $(cat "$WORK/merge$i.err")" >&2
		fi
	done
	if [ "$ok" = 1 ]; then pass; else fail "a concurrent merge failed ($url)"; fi
	run "${S[@]}" state get p::r::shared
	expect_json 'd == {"base":True,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8}' \
		"every concurrent member is there ($url)"
done

# Bad input exits 2 before the store is opened.
run --state "file:$PWD/bad" state merge p::r::k '{"a":'
expect_rc 2 "bad patch JSON"
expect_no_file "$PWD/bad"
run --state "file:$PWD/bad" state merge p::r::__lease__ '{}'
expect_rc 2 "bookkeeping key refused"
run --state "file:$PWD/bad" state merge p::r::k
expect_rc 2 "missing patch"
run_stdin '{"s":1}' --state "file:$PWD/st" state merge p::r::stdin -
expect_rc 0 "patch on stdin"
run --state "file:$PWD/st" state get p::r::stdin
expect_out '{"s":1}' "patch read from stdin"

finish
