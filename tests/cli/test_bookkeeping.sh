#!/usr/bin/env bash
# Run bookkeeping keys (doc/design.md §8.9: __lease__, __status__, __rollback__
# and its markers) are written by the run machinery only: `state put`,
# `state delete` and `state import` of one exit 2 naming it and write
# nothing; `import --replace` never deletes one.  On the file store and on
# SQLite.
. "$(dirname "$0")/lib.sh"

BK_KEYS="p::r::__status__ p::r::__lease__ p::r::__rollback__ p::r::__rollback__::20260101T000000.000Z-abcdef p::__status__ p::__rollback__"

for ST in "file:$PWD/fs" "sqlite:$PWD/db.sqlite"; do
	case $ST in file:*) snap() { snapshot fs; } ;; *) snap() { sha256sum db.sqlite* 2>/dev/null; } ;; esac
	run state put --state "$ST" p::r '{"v":0}'
	expect_rc 0 "$ST: a first bookmark"
	# A run's history, so that there is bookkeeping to protect.
	run state get --state "$ST" p::r::__status__
	expect_json "len(d['runs']) == 1" "$ST: the put is recorded"
	status_before=$OUT

	for k in $BK_KEYS; do
		before=$(snap)
		run state put --state "$ST" "$k" '{}'
		expect_rc 2 "$ST: state put $k"
		expect_one_error_line "$ST: state put $k"
		expect_err_contains "'$k' is run bookkeeping" "$ST: state put names $k"
		run_stdin '{"version":1,"runs":[]}' state put --state "$ST" "$k" -
		expect_rc 2 "$ST: state put $k from stdin"
		run state put --state "$ST" "$k" '{}' --if-absent
		expect_rc 2 "$ST: state put --if-absent $k"
		run state delete --state "$ST" "$k"
		expect_rc 2 "$ST: state delete $k"
		expect_err_contains "'$k' is run bookkeeping" "$ST: state delete names $k"
		expect_same "$before" "$(snap)" "$ST: $k: nothing written"
	done
	run state get --state "$ST" p::r::__status__
	expect_out "$status_before" "$ST: the history is untouched"

	# Import: a document holding one is refused whole.
	before=$(snap)
	printf '{"version":1,"pipeline":"p","keys":{"p::r":{"v":9},"p::r::__status__":{"version":1,"runs":[]}}}' > bk.json
	run state import --state "$ST" bk.json
	expect_rc 2 "$ST: import of a document holding p::r::__status__"
	expect_one_error_line "$ST: import refused"
	expect_err_contains "p::r::__status__" "$ST: the import names the key"
	run state import --state "$ST" bk.json --replace --json
	expect_rc 2 "$ST: import --replace of it"
	printf '{"version":1,"pipeline":"p","keys":{"p::r::__lease__":{"holder":"h:1:x","expires_at":1}}}' > bk.json
	run_stdin "$(cat bk.json)" state import --state "$ST" -
	expect_rc 2 "$ST: import of a lease from stdin"
	expect_err_contains "p::r::__lease__" "$ST: the lease is named"
	expect_same "$before" "$(snap)" "$ST: refused imports wrote nothing"
	run state get --state "$ST" p::r
	expect_out '{"v":0}' "$ST: the bookmark is as it was"

	# --replace deletes the namespace's stale data keys, never its bookkeeping.
	raw_put "$ST" p::q::__lease__ '{"holder":"h:1:x","expires_at":1}'
	printf '{"version":1,"pipeline":"p","keys":{"p::other":{"v":1}}}' > other.json
	run state import --state "$ST" other.json --replace --json
	expect_rc 0 "$ST: import --replace"
	expect_json "d['deleted'] == ['p::r'] and d['written'] == ['p::other']" "$ST: only the data key is deleted"
	run state list --state "$ST" --all p::
	expect_out_contains "p::r::__status__" "$ST: the history survives --replace"
	expect_out_contains "p::q::__lease__" "$ST: a lease survives --replace"
	expect_out_contains "p::r::__rollback__" "$ST: the rollback index survives --replace"
done

finish
