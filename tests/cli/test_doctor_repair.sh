#!/usr/bin/env bash
# `faucet doctor` checks the shape of every run document and `--repair`
# sets a broken one aside (never deleting it) so its row can be written
# again; on the file store and SQLite.  (The file store's temp files:
# below.)
. "$(dirname "$0")/lib.sh"

# The probe's JSON entry.
probe_json() { # probe_json NAME FIELD
	printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
p = [p for p in d["probes"] if p["name"] == sys.argv[1]]
print(p[0][sys.argv[2]] if p and p[0][sys.argv[2]] is not None else "")' "$1" "$2"
}

for ST in "file:$PWD/fs" "sqlite:$PWD/db.sqlite"; do
	run state put --state "$ST" P::R '{"v":0}'
	expect_rc 0 "$ST: a first bookmark"
	run doctor --state "$ST"
	expect_rc 0 "$ST: a healthy store passes"
	expect_out_contains "PASS  run documents" "$ST: the run documents pass"

	# A foreign status document, planted through the library (the command
	# refuses to write it): every later write of the row fails.
	raw_put "$ST" P::R::__status__ '{"not":"ours","n":18446744073709551615}'
	raw_put "$ST" P::L::__lease__ '[]'
	run state put --state "$ST" P::R '{"v":1}'
	expect_rc 1 "$ST: the row cannot be written"

	run doctor --state "$ST"
	expect_rc 1 "$ST: doctor fails"
	expect_out_contains "FAIL  run documents" "$ST: the run documents probe fails"
	expect_out_contains "P::R::__status__ holds something that is not a faucet run status document" "$ST: the broken status is named with its parse error"
	expect_out_contains "P::L::__lease__ holds something that is not a faucet lease" "$ST: the broken lease is named"
	run doctor --state "$ST" --json
	expect_rc 1 "$ST: doctor --json fails"
	expect_json 'd["ok"] is False and any(p["name"] == "run documents" and p["status"] == "fail" and "P::R::__status__" in p["reason"] for p in d["probes"])' "$ST: the JSON names it"

	run doctor --state "$ST" --repair --json
	expect_rc 0 "$ST: doctor --repair"
	hint=$(probe_json "run documents" hint)
	moved=$(printf '%s' "$hint" | sed -n 's/.*set aside P::R::__status__ as \(P::R::__broken__::status::[0-9]\{8\}T[0-9]\{6\}Z[.0-9]*\).*/\1/p')
	if [ -n "$moved" ]; then pass; else fail "$ST: the hint says where it went: $hint"; fi
	run state get --state "$ST" "$moved"
	expect_out '{"not":"ours","n":18446744073709551615}' "$ST: the moved value is the broken one"
	run state list --state "$ST" --all P::
	expect_out_lacks "P::R::__status__" "$ST: the broken key is gone"
	expect_out_lacks "P::L::__lease__" "$ST: the broken lease is gone"
	expect_out_contains "P::L::__broken__::lease::" "$ST: the lease is set aside too"
	run state list --state "$ST" P::
	expect_out_contains "$moved" "$ST: the set-aside key is a data key (listed without --all)"

	run state put --state "$ST" P::R '{"v":1}'
	expect_rc 0 "$ST: the row can be written again"
	run state get --state "$ST" P::R::__status__
	expect_json "len(d['runs']) == 1" "$ST: a fresh history"
	run doctor --state "$ST"
	expect_rc 0 "$ST: doctor passes after the repair"
	expect_out_contains "PASS  run documents" "$ST: the run documents pass again"
	# The copy is the operator's to examine and remove.
	run state delete --state "$ST" "$moved"
	expect_rc 0 "$ST: the set-aside copy can be deleted"
done

finish
