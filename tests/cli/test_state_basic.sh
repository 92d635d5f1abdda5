#!/usr/bin/env bash
# put / get / list / delete, compare-and-put, --json, stdin, help, version,
# usage errors and bad input - each with its exit code, and bad input leaving
# the store exactly as it was.
. "$(dirname "$0")/lib.sh"

S=file:st

# ---- version and help ----
run --version
expect_rc 0 "--version"
expect_out "faucet 0.1.0" "--version text"
run --version --json
expect_json 'd["version"] == "0.1.0"' "--version --json"
run --help
expect_rc 0 "--help"
expect_out_contains "state list" "--help lists the state commands"
expect_out_contains "--encryption-key-env" "--help documents the key option"
for sub in list show get put delete export import copy; do
	run state $sub --help
	expect_rc 0 "state $sub --help"
	expect_out_contains "usage: faucet state $sub" "state $sub --help text"
done
run state -h
expect_rc 0 "state -h"
run doctor --help
expect_out_contains "--timeout" "doctor --help"
run state export --help
expect_out_contains "plaintext" "export help warns that values are plaintext"

# ---- usage errors ----
run
expect_rc 2 "no command"
run frobnicate
expect_rc 2 "unknown command"
expect_one_error_line "unknown command"
expect_err_contains "frobnicate" "unknown command is named"
run state
expect_rc 2 "state without a subcommand"
run state frob
expect_rc 2 "unknown state subcommand"
run state list --nope
expect_rc 2 "unknown option"
expect_one_error_line "unknown option"
expect_err_contains "--nope" "unknown option is named"
run state list --encryption-key=hunter2secret
expect_rc 2 "a key on the command line is refused"
expect_err_lacks "hunter2secret" "the refused key is not echoed"
run state get
expect_rc 2 "get without a key"
run state put only-key
expect_rc 2 "put without a value"
run state get a b
expect_rc 2 "get with two keys"
run state put --state $S k 1 --if-absent --if-equals 1
expect_rc 2 "--if-absent with --if-equals"
run state list --state
expect_rc 2 "--state without a value"
expect_err_contains "needs a value" "--state without a value says so"

# ---- put / get / list / delete ----
run state put --state $S orders::default '{"cursor":"abc","n":1}'
expect_rc 0 "put"
expect_err_contains "undo: faucet state undo orders --row default" "put is recorded as a run (SPEC section 8)"
run state get --state $S orders::default
expect_rc 0 "get"
expect_out '{"cursor":"abc","n":1}' "get prints compact JSON"
run --state $S state put orders::big 18446744073709551615
expect_rc 0 "put a u64 (global option before the command)"
run state get orders::big --state=$S
expect_out "18446744073709551615" "every digit of a u64 survives"
run state put --state $S orders::neg -9223372036854775808
expect_rc 0 "a negative number is a value, not an option"
run state get --state $S orders::neg
expect_out "-9223372036854775808" "i64 min survives"
run state put --state $S orders::tenth 0.1
run state get --state $S orders::tenth
expect_out "0.1" "0.1 stays 0.1"
run state put --state $S orders::spaced ' { "b" : [1, 2] , "a" : null } '
run state get --state $S orders::spaced
expect_out '{"b":[1,2],"a":null}' "values are stored compact, members in order"
run_stdin '{"from":"stdin"}' state put --state $S orders::stdin -
expect_rc 0 "put from stdin"
run state get --state $S orders::stdin
expect_out '{"from":"stdin"}' "stdin value stored"
run state put --state $S other::x '"s"'
run state put --state $S Users::x true

run state list --state $S
expect_rc 0 "list"
expect_out "$(printf 'Users::x\norders::big\norders::default\norders::neg\norders::spaced\norders::stdin\norders::tenth\nother::x')" "list is in byte order"
run state list --state $S orders::
expect_out "$(printf 'orders::big\norders::default\norders::neg\norders::spaced\norders::stdin\norders::tenth')" "list PREFIX"
run state list --state $S nothing-here
expect_rc 0 "list of an empty prefix"
expect_out "" "list of an empty prefix prints nothing"
run state list --state $S --json
expect_json 'd == sorted(d) and len(d) == 8 and "Users::x" in d' "list --json"

run state get --state $S orders::absent
expect_rc 0 "get of an absent key"
expect_out "" "absent key prints nothing"
run state get --state $S orders::absent --json
expect_json 'd == {"key": "orders::absent", "found": False, "value": None}' "get --json absent"
run state get --state $S orders::big --json
expect_json 'd["found"] is True and d["value"] == 18446744073709551615' "get --json present"
expect_out_contains '"value":18446744073709551615' "get --json keeps the digits"

run state delete --state $S orders::stdin
expect_rc 0 "delete"
run state get --state $S orders::stdin
expect_out "" "deleted key is gone"
run state delete --state $S orders::stdin
expect_rc 0 "deleting an absent key is not an error"
run state delete --state $S orders::tenth --json
expect_json 'd["key"] == "orders::tenth" and d["deleted"] is True and d["run"] and d["undo"].startswith("faucet state undo orders")' "delete --json"
run state put --state $S orders::j '[1]' --json
expect_json 'd["key"] == "orders::j" and d["written"] is True and d["run"] and d["undo"]' "put --json"

# ---- compare-and-put ----
run state put --state $S cas::k '{"v":1}' --if-absent
expect_rc 0 "--if-absent on an absent key writes"
run state put --state $S cas::k '{"v":2}' --if-absent
expect_rc 3 "--if-absent on a present key"
expect_one_error_line "--if-absent failure"
expect_err_contains "cas::k" "condition failure names the key"
run state get --state $S cas::k
expect_out '{"v":1}' "nothing written when --if-absent does not hold"
run state put --state $S cas::k '{"v":3}' --if-equals '{"v":9}'
expect_rc 3 "--if-equals with a different value"
run state get --state $S cas::k
expect_out '{"v":1}' "nothing written when --if-equals does not hold"
run state put --state $S cas::k '{"v":3}' --if-equals ' { "v" : 1 } '
expect_rc 0 "--if-equals with the stored value writes"
run state get --state $S cas::k
expect_out '{"v":3}' "--if-equals wrote"
run state put --state $S cas::o '{"a":1,"b":2}'
run state put --state $S cas::o '"next"' --if-equals '{"b":2,"a":1}'
expect_rc 0 "--if-equals compares JSON values, not text"
run state put --state $S cas::o '"x"' --if-equals '"other"' --json
expect_rc 3 "--if-equals failure with --json"
expect_json 'd["written"] is False and d["key"] == "cas::o"' "--json reports written=false"
run_stdin '{"v":4}' state put --state $S cas::k - --if-equals '{"v":3}'
expect_rc 0 "compare-and-put with the value on stdin"
run state get --state $S cas::k
expect_out '{"v":4}' "stdin compare-and-put wrote"
# put --help: "number spelling does not matter" - numbers compare by value.
run state put --state $S cas::n 1200
run state put --state $S cas::n '"spelt"' --if-equals 1200.0
expect_rc 0 "--if-equals 1200.0 matches a stored 1200"
run state get --state $S cas::n
expect_out '"spelt"' "--if-equals by number value wrote"
run state put --state $S cas::n 9007199254740992
run state put --state $S cas::n '"x"' --if-equals 9007199254740993
expect_rc 3 "--if-equals compares big integers by every digit"

# ---- bad input leaves the store unchanged ----
before=$(snapshot st)
run state put --state $S 'bad key' 1
expect_rc 2 "invalid key"
expect_one_error_line "invalid key"
expect_err_contains "'bad key'" "invalid key is named"
expect_err_contains "' '" "invalid character is named"
expect_err_contains "byte 3" "invalid key byte offset"
run state put --state $S '.hidden' 1
expect_rc 2 "leading dot"
run state put --state $S 'a/../b' 1
expect_rc 2 "path traversal"
run state get --state $S 'x%y'
expect_rc 2 "invalid key on get"
expect_err_contains "byte 1" "get names the offset"
run state delete --state $S 'x y'
expect_rc 2 "invalid key on delete"
run state put --state $S orders::default '{"cursor":'
expect_rc 2 "malformed JSON"
expect_one_error_line "malformed JSON"
expect_err_contains "orders::default" "malformed JSON names the key"
expect_err_contains "byte" "malformed JSON names the offset"
run state put --state $S orders::default '{"a":1,"a":2}'
expect_rc 2 "duplicate member"
run state put --state $S orders::default 'NaN'
expect_rc 2 "NaN"
run state put --state $S orders::default '99999999999999999999999'
expect_rc 2 "an integer beyond u64 is refused, not rounded"
run state put --state $S orders::default '1' --if-equals '{oops'
expect_rc 2 "malformed --if-equals"
expect_err_contains "--if-equals" "malformed --if-equals is named"
run_stdin '' state put --state $S orders::default -
expect_rc 2 "empty stdin is not a value"
expect_one_error_line "empty stdin"
run_stdin 'not json' state put --state $S orders::default -
expect_rc 2 "malformed stdin"
expect_err_contains "standard input" "malformed stdin says where"
after=$(snapshot st)
expect_same "$before" "$after" "bad input wrote nothing"
run state get --state $S orders::default
expect_out '{"cursor":"abc","n":1}' "the bookmark is intact"

# ---- the default store and FAUCET_STATE ----
run state put d::k 1
expect_rc 0 "put into the default store"
expect_file ".faucet-state/d%3A%3Ak.json" "default store is ./.faucet-state"
FAUCET_STATE=file:envstore run state put e::k 2
expect_file "envstore/e%3A%3Ak.json" "FAUCET_STATE picks the store"
FAUCET_STATE=file:envstore run state get e::k --state file:.faucet-state
expect_out "" "--state wins over FAUCET_STATE"

# ---- unknown URL, memory, piped output has no color ----
run state list --state bogus://x
expect_rc 2 "unknown store URL"
expect_one_error_line "unknown store URL"
expect_err_contains "memory:" "the error lists the known schemes"
expect_err_contains "file:" "the error lists file:"
run state put --state memory: m::k 1
expect_rc 0 "memory: store works within one process"
run state list --state $S
case "$OUT" in *$'\033'*) fail "piped output has no escape codes" ;; *) pass ;; esac

# ---- an unreadable state directory ----
printf 'not a directory' >regular
before=$(snapshot .)
run state list --state file:regular
expect_rc 1 "a regular file where the state directory should be"
expect_one_error_line "state dir is a file"
expect_err_contains "regular" "the error names the path"
run state put --state file:regular k::x 1
expect_rc 1 "put into a file where the directory should be"
expect_one_error_line "put into a file"
after=$(snapshot .)
expect_same "$before" "$after" "nothing changed"

finish
