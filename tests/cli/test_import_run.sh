#!/usr/bin/env bash
# `state import` and `state copy` recorded as one run (doc/design.md §8.7):
# when every key they change (written, or deleted by --replace) belongs to
# one invocation {p}::{row}, the run is that invocation's - listed in
# {p}::{row}::__status__ and undone with `state undo p --row row`; keys of
# several invocations make a pipeline-level run ({p}::__status__).
. "$(dirname "$0")/lib.sh"

export FAUCET_STATE=file:$PWD/st
J() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# ---- import: every key of one invocation ----
run state put p::orders '{"pos":1}'
run state put p::orders::shard1 '{"pos":10}'
run state put p::orders::shard2 '{"pos":20}'
printf '{"version":1,"pipeline":"p","keys":{"p::orders":{"pos":2},"p::orders::shard1":{"pos":11}}}' > one.json
run state import one.json --json
expect_rc 0 "import of one invocation's keys"
expect_json "d['run'] and d['undo'].startswith('faucet state undo p --row orders ')" "the import is a run of p::orders"
expect_no_err "--json: the undo command is in the JSON, stderr stays empty"
ID=$(printf '%s\n' "$OUT" | J "d['run']")
run state get p::orders::__status__
expect_json "d['runs'][0]['run'] == '$ID' and sorted(d['runs'][0]['keys']) == ['p::orders', 'p::orders::shard1']" "the run is in p::orders::__status__"
run state get p::__status__
expect_out "" "no pipeline-level run"
run state get "p::orders::__rollback__::$ID"
expect_json "sorted(d['before']) == ['p::orders', 'p::orders::shard1']" "the invocation's marker holds the images"
run state undo p --row orders
expect_rc 0 "undo the import with --row orders"
expect_out_contains "restored p::orders" "the import's keys are restored"
run state get p::orders
expect_out '{"pos":1}' "p::orders is back"
run state get p::orders::shard1
expect_out '{"pos":10}' "p::orders::shard1 is back"

# ---- import --replace: the stale deletes count too ----
printf '{"version":1,"pipeline":"p","keys":{"p::orders":{"pos":3},"p::orders::shard1":{"pos":12},"p::orders::shard2":{"pos":21}}}' > all.json
run state import all.json --replace --json
expect_json "d['undo'].startswith('faucet state undo p --row orders ')" "a replace within one invocation is its run"
run state put p::users '{"pos":5}'
run state import one.json --replace --json
expect_json "d['deleted'] == ['p::orders::shard2', 'p::users']" "the replace deletes a key of another invocation"
expect_json "d['undo'].startswith('faucet state undo p ') and '--row' not in d['undo']" "so it is a pipeline-level run"
run state get p::__status__
expect_json "len(d['runs']) == 1 and sorted(d['runs'][0]['keys']) == ['p::orders', 'p::orders::shard1', 'p::orders::shard2', 'p::users']" "recorded in p::__status__"
run state undo p
expect_rc 0 "undo the pipeline-level import"
run state get p::users
expect_out '{"pos":5}' "the deleted key of the other invocation is back"

# ---- import spanning two invocations: pipeline level ----
printf '{"version":1,"pipeline":"p","keys":{"p::orders":{"pos":4},"p::users":{"pos":6}}}' > two.json
run state import two.json --json
expect_json "'--row' not in d['undo']" "keys of two invocations make a pipeline-level run"
ID2=$(printf '%s\n' "$OUT" | J "d['run']")
run state get p::__status__
expect_json "d['runs'][0]['run'] == '$ID2'" "listed in p::__status__"
run state get p::orders::__status__
expect_json "'$ID2' not in [r['run'] for r in d['runs']]" "not in p::orders::__status__"

# ---- a key of no invocation (a pipeline-level marker) ----
printf '{"version":1,"pipeline":"p","keys":{"p::__backfill__::0123456789abcdef":{"descriptor":"x","units":{}}}}' > bf.json
run state import bf.json --json
expect_json "'--row' not in d['undo']" "a key of no invocation makes a pipeline-level run"

# ---- copy: the same rule in the destination ----
run state copy p --to file:$PWD/dst --json
expect_json "'--row' not in d['undo']" "a copy of several invocations is pipeline-level"
run state list --all --state file:$PWD/dst
expect_out_contains "p::__status__" "recorded at p::__status__ of the destination"
run state put q::default '{"n":1}'
run state put q::default::a '{"n":2}'
run state copy q --to file:$PWD/dst --json
expect_json "d['undo'].startswith('faucet state undo q --row default ')" "a copy of one invocation is its run"
CID=$(printf '%s\n' "$OUT" | J "d['run']")
run state get q::default::__status__ --state file:$PWD/dst
expect_json "d['runs'][0]['run'] == '$CID'" "recorded in the destination's q::default::__status__"
run state get q::__status__ --state file:$PWD/dst
expect_out "" "no pipeline-level run of q in the destination"
run state undo q --row default --state file:$PWD/dst
expect_rc 0 "undo the copy with --row default"
run state list q --state file:$PWD/dst
expect_out "" "the copied keys are gone again"

run state import --help
expect_out_contains "faucet state undo PIPELINE --row ROW" "import --help says which run it is"

finish
