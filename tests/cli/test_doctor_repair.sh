#!/usr/bin/env bash
# `faucet doctor` checks the shape of every run document and `--repair`
# sets a broken one aside (never deleting it) so its row can be written
# again; on the file store and SQLite.  In a file store, --repair removes
# only faucet's own orphaned temp files, never through a symlink, and only
# in a directory it recognises as a faucet store.
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

# ---- temp files: only faucet's own names, only in a faucet store ----
TOK=0123456789abcdef0123456789abcdef
run state put --state file:ts p::a '{"x":1}'
expect_rc 0 "a store"
orphan="ts/p%3A%3Az.$TOK.7.json.tmp"
head -c 100 /dev/zero >"$orphan"
printf 'keep' >ts/foo.tmp
printf 'keep' >ts/x.json.tmp
printf 'keep' >"ts/p%3A%3Ay.ABCDEF0123456789abcdef0123456789.1.json.tmp" # capitals: not our token
printf 'keep' >"ts/p%3A%3Ay.$TOK.01.json.tmp"                           # a counter we never write
printf 'keep' >"ts/notakey%.$TOK.1.json.tmp"                            # not a stem of a key
printf 'outside' >outside
ln -s "$PWD/outside" "ts/p%3A%3Aw.$TOK.8.json.tmp"                    # a symlink under our name
run doctor --state file:ts
expect_out_contains "found 1 orphaned temp file (100 bytes" "only the faucet temp name is an orphan"
run doctor --state file:ts --repair
expect_out_contains "removed 1 orphaned temp file (100 bytes" "repair removes it"
expect_no_file "$orphan" "the orphaned faucet temp file is gone"
for f in foo.tmp x.json.tmp "p%3A%3Ay.ABCDEF0123456789abcdef0123456789.1.json.tmp" \
	"p%3A%3Ay.$TOK.01.json.tmp" "notakey%.$TOK.1.json.tmp"; do
	expect_file "ts/$f" "a name faucet does not write is kept: $f"
done
if [ -L "ts/p%3A%3Aw.$TOK.8.json.tmp" ] && [ "$(cat outside)" = outside ]; then pass; else fail "the symlink and its target are left alone"; fi
expect_out_contains "FAIL  symlinks" "the symlink is reported"

# A sidecar's and the encrypted marker's temp names are faucet's too.
hashed="ts/$(printf 'a%.0s' $(seq 1 20))~$(printf '%064d' 0 | tr 0 a)"
printf 'x' >"$hashed.$TOK.3.key.tmp"
printf 'x' >"ts/.faucet-encrypted.$TOK.4.marker.tmp"
run doctor --state file:ts --repair
expect_out_contains "removed 2 orphaned temp files" "sidecar and marker temp files are removed"
expect_no_file "$hashed.$TOK.3.key.tmp" "the sidecar's temp file is gone"
expect_no_file "ts/.faucet-encrypted.$TOK.4.marker.tmp" "the marker's temp file is gone"

# A directory that is not a faucet store: nothing is removed, and doctor says why.
mkdir -m 700 plain
printf '{"name":"x"}' >plain/package.json # a .json, but not owner-only: not ours
head -c 10 /dev/zero >"plain/p%3A%3Az.$TOK.7.json.tmp"
run doctor --state file:plain --repair
expect_out_contains "found 1 orphaned temp file" "the orphan is reported"
expect_out_contains "not removed: plain is not recognised as a faucet store: it holds no file faucet writes" "doctor says why it removes nothing"
expect_file "plain/p%3A%3Az.$TOK.7.json.tmp" "nothing is removed from a non-store directory"
# A shared directory (like /tmp) is never a store, even holding faucet files.
mkdir shared && chmod 1777 shared
run state put --state file:shared p::a '{"x":1}'
head -c 10 /dev/zero >"shared/p%3A%3Az.$TOK.7.json.tmp"
chmod 1777 shared
run doctor --state file:shared --repair
expect_out_contains "not removed: shared is not recognised as a faucet store: every user may write to it (mode 1777)" "a world-writable directory is not a store"
expect_file "shared/p%3A%3Az.$TOK.7.json.tmp" "nothing is removed from a shared directory"
run doctor --state file:shared
expect_out_contains "--repair removes temp files only from a faucet store" "the hint says --repair would not remove them"

finish
