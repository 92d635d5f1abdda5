#!/bin/bash
# test_quiet_lock.sh - -q/--quiet (nothing printed on success by any write
# command; errors still said), --json keeping stderr for a failure's line
# only, `faucet run --json`'s summary object, and `lock break --pipeline`.
. "$(dirname "$0")/lib.sh"

export FAUCET_STATE="file:$PWD/st"
run state put a::b '{"n":1}'
run state export a -o e.json

# -q: every write command prints nothing on success, stdout and stderr.
quiet_ok() { # quiet_ok WHAT ARGS...
	local what=$1
	shift
	run -q "$@"
	expect_rc 0 "-q $what"
	if [ -z "$OUT" ] && [ -z "$ERR" ]; then pass; else fail "-q $what prints nothing"; fi
}
quiet_ok "state put" state put a::b '{"n":2}'
quiet_ok "state put --if-equals" state put a::b '{"n":3}' --if-equals '{"n":2}'
quiet_ok "state merge" state merge a::b '{"m":1}'
quiet_ok "state delete" state delete a::b
quiet_ok "state import" state import e.json
quiet_ok "state copy" state copy a --to "file:$PWD/other"
quiet_ok "state undo" state undo a
quiet_ok "state export" state export a -o e2.json
quiet_ok "run" run --pipeline a -- true
quiet_ok "state clear" state clear a
run state put a::c 1
quiet_ok "state clear --row" state clear a --row c
echo '{"singer_state":{"bookmarks":{"s":{"x":1}}}}' > m.json
quiet_ok "state import --format meltano" state import --format meltano --pipeline m --row r m.json
quiet_ok "state import --format meltano (unchanged)" state import --format meltano --pipeline m --row r m.json
quiet_ok "state export --format meltano -o" state export --format meltano m --row r -o m2.json
raw_put "$FAUCET_STATE" a::r::__lease__ '{"holder":"elsewhere:1:x","expires_at":4102444800,"run":"20260101T000000.000Z-abcdef"}'
quiet_ok "lock break" lock break --pipeline a --row r
# -q after the command name works too (a global option).
run state put a::d 1 -q
if [ -z "$ERR" ]; then pass; else fail "-q after the command"; fi
# Errors are still said.
run -q state put a::b '{"n":'
expect_rc 2 "-q: bad JSON still fails"
expect_one_error_line "-q: the error is still on stderr"

# --json: stderr holds nothing on success (the run and undo are in the JSON) ...
for cmd in "state put a::j 1" "state merge a::j 2" "state delete a::j" "state clear a --row d" \
	"state undo a"; do
	run --json $cmd
	expect_rc 0 "--json $cmd"
	expect_no_err "--json $cmd: nothing on stderr"
	expect_json 'isinstance(d, dict)' "--json $cmd: one object"
done
# ... and one line, no copy of the JSON error, on failure.
run --json state merge a::b '{"a":1}' --if-equals '{"no":1}'
expect_rc 3 "--json failure"
expect_one_error_line "--json failure: one line on stderr"
expect_err_lacks '{"' "--json failure: no JSON on stderr"

# faucet run --json: one summary object, after the command's own output.
run --json run --pipeline a --row s -- sh -c 'echo from-the-command; "$FAUCET_BIN" -q state put a::s::k 5'
expect_rc 0 "run --json"
expect_no_err "run --json: nothing on stderr"
first=$(printf '%s\n' "$OUT" | head -n 1)
last=$(printf '%s\n' "$OUT" | tail -n 1)
if [ "$first" = from-the-command ]; then pass; else fail "run --json: the command's output first"; fi
OUT=$last
expect_json 'd["outcome"] == "ok" and d["exit_status"] == 0 and d["exit"] == 0 and d["keys_changed"] == 1 and d["state_stored"] is False and d["run"] and d["undo"].startswith("faucet state undo a --row s ")' \
	"run --json summary"
run --json run --pipeline a --row s -- sh -c 'exit 4'
expect_rc 4 "run --json of a failing command"
expect_one_error_line "run --json failure: one line"
OUT=$(printf '%s\n' "$OUT" | tail -n 1)
expect_json 'd["outcome"] == "failed" and d["exit_status"] == 4 and d["keys_changed"] == 0 and d["undo"] is None' \
	"run --json failure summary"

# lock break --pipeline: no need to spell the lease key.
raw_put "$FAUCET_STATE" a::eu::__lease__ '{"holder":"elsewhere:1:x","expires_at":4102444800,"run":"20260101T000000.000Z-abcdef"}'
run lock break --pipeline a --row eu --json
expect_rc 0 "lock break --pipeline --row"
expect_json 'd["key"] == "a::eu::__lease__" and d["broken"] is True and d["holder"] == "elsewhere:1:x"' \
	"lock break --pipeline --row report"
run state get a::eu::__lease__
expect_out "" "the invocation's lease is gone"
# Without --row: the pipeline lease, or the default row's - whichever is held.
raw_put "$FAUCET_STATE" a::default::__lease__ '{"holder":"elsewhere:1:y","expires_at":4102444800,"run":"20260101T000000.000Z-abcdef"}'
run lock break --pipeline a
expect_rc 0 "lock break --pipeline (the default row's lease)"
expect_err_contains "broke a::default::__lease__" "broke the default row's lease"
raw_put "$FAUCET_STATE" a::__lease__ '{"holder":"elsewhere:1:z","expires_at":4102444800,"run":"20260101T000000.000Z-abcdef"}'
raw_put "$FAUCET_STATE" a::default::__lease__ '{"holder":"elsewhere:1:y","expires_at":4102444800,"run":"20260101T000000.000Z-abcdef"}'
run lock break --pipeline a
expect_rc 2 "two leases held: which one?"
expect_err_contains "a::__lease__" "names the pipeline lease"
expect_err_contains "a::default::__lease__" "names the default row's lease"
run state get a::__lease__
expect_out_contains "elsewhere:1:z" "nothing broken when ambiguous"
run lock break --pipeline a --row default
expect_rc 0 "--row default picks one"
run lock break --pipeline a
expect_rc 0 "then the pipeline lease"
expect_err_contains "broke a::__lease__" "broke the pipeline lease"
run lock break --pipeline a
expect_rc 0 "no lease left is not an error"
expect_err_contains "no lease at a::__lease__" "says there is none"
# A key that is not a lease: the error suggests the lease key.
run lock break a::eu
expect_rc 2 "a non-lease key"
expect_err_contains "did you mean 'a::eu::__lease__'" "suggests the lease key"
run lock break a::eu::__status__
expect_err_contains "did you mean 'a::eu::__lease__'" "suggests the invocation's lease for its status key"
run lock break a::eu::__lease__ --pipeline a
expect_rc 2 "KEY and --pipeline exclude each other"
run lock break --row eu
expect_rc 2 "--row needs --pipeline"

finish
