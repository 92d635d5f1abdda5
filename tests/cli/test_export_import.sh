#!/usr/bin/env bash
# export -> import round trips between two file stores, export -o (atomic),
# import from stdin, --replace dropping stale keys, copy to memory: and to a
# second file store, the import report (including a partial import on a
# non-atomic store), and bad documents leaving the store unchanged.
. "$(dirname "$0")/lib.sh"

A=file:a
B=file:b
for kv in 'p::r={"c":1}' 'p::r::__sla__={"holder":"x","expires_at":5}' \
	'p::big=18446744073709551615' 'p::tenth=0.1' 'p::Upper=true' 'q::other=1'; do
	run state put --state $A "${kv%%=*}" "${kv#*=}"
	expect_rc 0 "seed ${kv%%=*}"
done

# ---- export ----
run state export --state $A p
expect_rc 0 "export to stdout"
printf '%s\n' "$OUT" >p.json
expect_json 'd["version"] == 1 and d["pipeline"] == "p" and sorted(d["keys"]) == ["p::Upper", "p::big", "p::r", "p::r::__sla__", "p::tenth"]' "export holds the namespace only"
expect_out_contains "18446744073709551615" "export keeps every digit"
expect_out_contains '"p::tenth": 0.1' "export keeps 0.1"

run state export --state $A p -o out/p.json
expect_rc 1 "export -o into a missing directory fails"
expect_one_error_line "export into a missing directory"
expect_no_file out/p.json "no partial export file"
mkdir out
run state export --state $A p -o out/p.json
expect_rc 0 "export -o"
expect_out_contains "exported 5 keys" "export -o says what it wrote"
expect_file out/p.json "export -o wrote the file"
if [ "$(ls out)" = "p.json" ]; then pass; else fail "export -o leaves no temp file: $(ls out)"; fi
if [ "$(stat -c %a out/p.json)" = 600 ]; then pass; else fail "export file is owner-only"; fi
OUT=$(cat out/p.json)
expect_json 'len(d["keys"]) == 5' "export -o content"
printf 'old content' >out/q.json
run state export --state $A q -o out/q.json --json
expect_json 'd == {"pipeline": "q", "keys": 1, "output": "out/q.json"}' "export -o --json"
OUT=$(cat out/q.json)
expect_json 'd["keys"] == {"q::other": 1}' "export -o replaces an existing file"
run state export --state $A 'bad name'
expect_rc 2 "export with an invalid pipeline name"

# ---- import into a second store, round trip ----
run state import --state $B p.json
expect_rc 0 "import"
expect_out_contains "5 keys written" "import report counts the keys"
run state export --state $B p
printf '%s\n' "$OUT" >p2.json
if python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if a["keys"] == b["keys"] else 1)' p.json p2.json; then
	pass
else
	fail "export -> import -> export round trip differs"
fi
run state get --state $B p::big
expect_out "18446744073709551615" "imported u64 intact"
run state get --state $B p::tenth
expect_out "0.1" "imported 0.1 intact"
run state list --state $B
expect_out_lacks "q::other" "import does not bring other namespaces"

# --replace drops keys the document lacks; without it they stay.
run state put --state $B p::stale '"old"'
run state import --state $B p.json --json
expect_rc 0 "import without --replace"
expect_json 'd["deleted"] == [] and len(d["written"]) == 5 and d["error"] is None and d["pipeline"] == "p"' "import --json report"
expect_json 'isinstance(d["atomic"], bool)' "import report says whether it was atomic"
run state get --state $B p::stale
expect_out '"old"' "without --replace stale keys stay"
run state put --state $B q::keep 1
run state import --state $B p.json --replace
expect_rc 0 "import --replace"
expect_out_contains "deleted: p::stale" "the report names the deleted key"
run state get --state $B p::stale
expect_out "" "--replace dropped the stale key"
run state get --state $B q::keep
expect_out "1" "--replace leaves other namespaces alone"

# From stdin.
run_stdin '{"version":1,"pipeline":"s","keys":{"s::a":{"x":1},"s::b":[true]}}' state import --state $B -
expect_rc 0 "import from stdin"
run state get --state $B s::b
expect_out "[true]" "stdin import wrote"

# ---- copy ----
run state copy --state $A p --to memory: --json
expect_rc 0 "copy to memory:"
expect_json 'sorted(d["written"]) == ["p::Upper", "p::big", "p::r", "p::r::__sla__", "p::tenth"] and d["store"] == "memory:" and d["error"] is None' "copy to memory: imported every key"
run state copy --state $A p --to file:c
expect_rc 0 "copy to a second file store"
run state get --state file:c p::r::__sla__
expect_out '{"holder":"x","expires_at":5}' "copied value"
run state put --state file:c p::stale 1
run state copy --state $A p --to file:c --replace --json
expect_json 'd["deleted"] == ["p::stale"]' "copy --replace drops stale keys"
run state copy --state $A p --to sqlite:c.sqlite --json
expect_rc 0 "copy to sqlite:"
expect_json 'd["atomic"] is True and len(d["written"]) == 5' "sqlite imports in one atomic batch"
run state export --state sqlite:c.sqlite p
printf '%s\n' "$OUT" >p3.json
if python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if a["keys"] == b["keys"] else 1)' p.json p3.json; then
	pass
else
	fail "file -> sqlite copy differs from the source export"
fi
run state copy --state $A p
expect_rc 2 "copy without --to"
before=$(snapshot a)
run state copy --state $A p --to nosuch://x
expect_rc 2 "copy to an unknown URL"
expect_one_error_line "copy to an unknown URL"
expect_err_contains "nosuch://x" "the bad URL is named"
after=$(snapshot a)
expect_same "$before" "$after" "a failed copy leaves the source alone"

# ---- bad documents and files: exit 2, nothing written ----
before=$(snapshot b)
printf '{"version":2,"pipeline":"p","keys":{"p::z":1}}' >v2.json
run state import --state $B v2.json
expect_rc 2 "unsupported version"
expect_one_error_line "unsupported version"
expect_err_contains "version 2" "the version is named"
printf '{"version":1,"pipeline":"p","keys":{"p::ok":1,"other::z":1}}' >outside.json
run state import --state $B outside.json
expect_rc 2 "key outside the namespace"
expect_err_contains "other::z" "the stray key is named"
printf '{"version":1,"pipeline":"p","keys":{"p::bad key":1}}' >badkey.json
run state import --state $B badkey.json
expect_rc 2 "invalid key in a document"
expect_err_contains "p::bad key" "the invalid key is named"
printf '{"version":1,"pipeline":"p","keys":{' >trunc.json
run state import --state $B trunc.json
expect_rc 2 "malformed document"
expect_one_error_line "malformed document"
expect_err_contains "trunc.json" "the file is named"
printf '{"pipeline":"p","keys":{}}' >nover.json
run state import --state $B nover.json
expect_rc 2 "document without a version"
run state import --state $B missing.json
expect_rc 2 "missing input file"
expect_one_error_line "missing input file"
expect_err_contains "missing.json" "the missing file is named"
mkdir adir
run state import --state $B adir
expect_rc 2 "a directory as the input file"
run_stdin 'garbage' state import --state $B -
expect_rc 2 "garbage on stdin"
expect_err_contains "standard input" "stdin is named"
after=$(snapshot b)
expect_same "$before" "$after" "bad documents wrote nothing"

# ---- a partial import on a non-atomic store says exactly what landed ----
# A directory where p::b's file belongs makes that key unreadable.  A chunk
# is written as one batch against what was read (design 8.2): the chunk
# that holds p::b writes nothing, and the error names p::b.
mkdir -p d/'p%3A%3Ab.json'
printf '{"version":1,"pipeline":"p","keys":{"p::a":1,"p::b":2,"p::c":3}}' >abc.json
run state import --state file:d abc.json
expect_rc 1 "a failed read during import"
expect_one_error_line "failed import"
expect_err_contains "reading 'p::b'" "the failing key is named"
expect_err_contains "nothing was written" "the chunk wrote nothing"
run state get --state file:d p::a
expect_out "" "nothing of the failed chunk landed"
# A key a chunk (FAUCET_TEST_IMPORT_CHUNK): the chunks before p::b's land,
# and the report lists exactly those.
FAUCET_TEST_IMPORT_CHUNK=1 run state import --state file:d abc.json
expect_rc 1 "a failed read during a chunked import"
expect_one_error_line "partial import"
expect_err_contains "p::b" "the failing key is named"
expect_out_contains "written: p::a" "the report lists what landed"
expect_out_lacks "written: p::c" "nothing after the failure is listed"
run state delete --state file:d p::a
FAUCET_TEST_IMPORT_CHUNK=1 run state import --state file:d abc.json --json
expect_rc 1 "partial import --json"
expect_json 'd["written"] == ["p::a"] and d["durability_unknown"] == [] and d["atomic"] is False and "p::b" in d["error"]["message"] and d["error"]["exit"] == 1 and d["error"]["code"] == "io"' "partial import report"
run state get --state file:d p::a
expect_out "1" "the key listed as landed is there"
run state get --state file:d p::c
expect_out "" "the key after the failure was not written"

finish
