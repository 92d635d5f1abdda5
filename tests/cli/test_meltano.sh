#!/usr/bin/env bash
# Meltano's state documents: `state export --format meltano` prints
# {"singer_state": BOOKMARK} (what `meltano state set` accepts) and
# `state import --format meltano` stores a document's singer_state - from
# `meltano state get`'s form or a state backend's {"completed", "partial"}
# form - as the invocation's bookmark.  Every malformed document is one
# clear error, exit 2, nothing written.
. "$(dirname "$0")/lib.sh"

BIG='{"bookmarks":{"orders":{"replication_key_value":"2026-01-02T03:04:05+00:00","offset":18446744073709551615,"ratio":1.50}},"currently_syncing":null}'
run --state file:src state put orders::eu "$BIG"
expect_rc 0 "seed the bookmark"

# export: exactly Meltano's document, the bookmark embedded verbatim.
run --state file:src state export --format meltano orders --row eu
expect_rc 0 "export --format meltano"
expect_out "{\"singer_state\":$BIG}" "the document is {\"singer_state\": bookmark}"
expect_json "list(d) == ['singer_state'] and d['singer_state']['bookmarks']['orders']['offset'] == 18446744073709551615" "it is JSON Meltano reads"
DOC=$OUT
run --state file:src state export --format=meltano orders --row eu -o doc.json
expect_rc 0 "export -o"
if [ "$(cat doc.json)" = "$DOC" ]; then pass; else fail "-o writes the same document"; fi

# Round trip into another store: the identical bookmark.
run_stdin "$DOC" --state sqlite:dst.db state import --format meltano --pipeline orders --row eu -
expect_rc 0 "import --format meltano from stdin"
expect_err_contains "undo: faucet state undo orders --row eu" "the import is one run of the invocation"
run --state sqlite:dst.db state get orders::eu
expect_out "$BIG" "the round trip keeps the bookmark byte for byte"

# --tenant: the tenant's invocation key.
run --state file:src state import --format meltano --tenant acme --pipeline orders doc.json --json
expect_rc 0 "import --tenant"
expect_json "d['key'] == 'acme::orders::default' and d['changed']" "the tenant's bookmark key"
run --state file:src state export --format meltano --tenant acme orders
expect_out "$DOC" "export --tenant reads it back"

# A state backend's file: partial {} is no partial state.
printf '{"completed": {"singer_state": {"bookmarks": {"a": {"x": 1}, "b": 2}}}, "partial": {}}' > backend.json
run --state file:f2 state import --format meltano --pipeline p backend.json
expect_rc 0 "a backend file with an empty partial part"
run --state file:f2 state get p::default
expect_out '{"bookmarks":{"a":{"x":1},"b":2}}' "the completed state is stored"

# A non-empty partial part: refused without --merge-partial ...
printf '{"completed": {"singer_state": {"bookmarks": {"a": {"x": 1}, "b": 2}}}, "partial": {"singer_state": {"bookmarks": {"a": {"y": 3}, "c": [1]}}}}' > partial.json
before=$(snapshot f2)
run --state file:f2 state import --format meltano --pipeline p --row r2 partial.json
expect_rc 2 "partial state without --merge-partial"
expect_one_error_line "the refusal is one line"
expect_err_contains "--merge-partial" "the refusal names the flag"
expect_same "$before" "$(snapshot f2)" "the refusal wrote nothing"
# ... merged over completed as Meltano's merge() does with it.
run --state file:f2 state import --format meltano --pipeline p --row r2 partial.json --merge-partial --dry-run
expect_rc 0 "--merge-partial --dry-run"
expect_same "$before" "$(snapshot f2)" "--dry-run wrote nothing"
run --state file:f2 state import --format meltano --pipeline p --row r2 partial.json --merge-partial
expect_rc 0 "--merge-partial"
run --state file:f2 state get p::r2
expect_out '{"bookmarks":{"a":{"x":1,"y":3},"b":2,"c":[1]}}' "partial merged over completed, member by member"

# Malformed documents: one clear error each, exit 2, nothing written.
before=$(snapshot f2)
bad() { # bad DOC WHAT NEEDLE
	run_stdin "$1" --state file:f2 state import --format meltano --pipeline p --row bad -
	expect_rc 2 "$2: exit 2"
	expect_one_error_line "$2: one error line"
	expect_err_contains "$3" "$2: the error says what"
	expect_same "$before" "$(snapshot f2)" "$2: nothing written"
}
bad '[1, 2]' "not an object" "not a JSON object"
bad '"text"' "a string" "not a JSON object"
bad '{"bookmarks": {}}' "no singer_state" 'no "singer_state"'
bad '{"singer_state": [1]}' "singer_state not an object" '"singer_state" is not a JSON object'
bad '{"singer_state": 5}' "singer_state a number" '"singer_state" is not a JSON object'
bad '{"completed": {"bookmarks": {}}, "partial": {}}' "completed without singer_state" 'no "singer_state"'
bad '{"completed": 3}' "completed not an object" '"completed" is not a JSON object'
bad '{"singer_state": {}' "not JSON" "standard input"
run --state file:f2 state import --format meltano --pipeline 'p::x' partial.json
expect_rc 2 "a pipeline with '::'"
run --state file:f2 state import --format meltanoo --pipeline p partial.json
expect_rc 2 "a mistyped format"
expect_err_contains "did you mean 'meltano'" "the format is suggested"
expect_same "$before" "$(snapshot f2)" "the usage errors wrote nothing"

# export of an invocation without a bookmark, or with one that is not Singer state.
run --state file:src state export --format meltano orders --row nowhere
expect_rc 1 "no bookmark"
expect_err_contains "has no bookmark" "the error says so"
run --state file:src state put orders::num '42'
run --state file:src state export --format meltano orders --row num
expect_rc 1 "a bookmark that is not an object"
expect_out "" "nothing printed"

finish
