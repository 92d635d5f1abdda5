#!/usr/bin/env bash
# `faucet state copy PIPELINE --to-pipeline NEW` and `faucet state move
# PIPELINE NEW` on every backend: keys re-keyed by the key builder (rows
# renamed by --row-map, tenants kept), a move is one run whose undo puts
# both pipelines back, a destination with data is refused without
# --replace, --dry-run writes nothing, and a pipeline sharing the name's
# prefix (P vs P_archive) is never touched.  The server-backed rows fail,
# never skip, when their server is not given.
. "$(dirname "$0")/lib.sh"

: "${FAUCET_TEST_PG_URL:?FAUCET_TEST_PG_URL must name the test PostgreSQL (scripts/test-servers.sh start)}"
: "${FAUCET_TEST_REDIS_URL:?FAUCET_TEST_REDIS_URL must name the test Redis (scripts/test-servers.sh start)}"

# Every value of KEYS... in store URL, one "key=value" a line (absent: "key=").
dump() {
	local url=$1 k
	shift
	for k in "$@"; do
		printf '%s=%s\n' "$k" "$("$FAUCET_BIN" --state "$url" state get "$k")"
	done
}

# Every key of the store under the test's names, bookkeeping included.
all_keys() {
	"$FAUCET_BIN" --state "$1" state list --all | grep -E "^(t$U::)?(p|q|r|p_archive)$U(::|$)"
}

backend_case() {
	local name=$1 url=$2
	# Names unique to this run: the servers may hold other tests' data.
	U="_${name}_$$_$RANDOM"
	local P="p$U" Q="q$U" R="r$U" A="p_archive$U" T="t$U"

	run --state "$url" state put "$P::default" '{"offset":1}'
	expect_rc 0 "$name: put"
	run --state "$url" state put "$P::eu::bookmark" '{"offset":2}'
	run --state "$url" state put "$P::eu::orders::shard-1" '{"offset":3}'
	run --state "$url" state put "$A::default" '{"archived":true}'
	run --state "$url" state put "$T::$P::default" '{"tenant":1}'

	# --dry-run: the plan, and nothing written (not even a lease).
	local before after
	before=$(all_keys "$url"; dump "$url" $(all_keys "$url"))
	run --state "$url" state copy "$P" --to-pipeline "$Q" --row-map eu=emea --dry-run
	expect_rc 0 "$name: copy --dry-run"
	expect_out_contains "would write: $P::eu::bookmark -> $Q::emea::bookmark" "$name: the plan names the re-keyed key"
	run --state "$url" state move "$P" "$R" --dry-run --json
	expect_rc 0 "$name: move --dry-run"
	expect_json "d['dry_run'] and d['run'] is None and len(d['deleted']) == 3" "$name: move's plan deletes the source"
	after=$(all_keys "$url"; dump "$url" $(all_keys "$url"))
	expect_same "$before" "$after" "$name: --dry-run wrote nothing"

	# copy with --row-map: the rows renamed, the source and P_archive kept.
	run --state "$url" state copy "$P" --to-pipeline "$Q" --row-map eu=emea --json
	expect_rc 0 "$name: copy"
	expect_json "sorted(d['written']) == sorted(['$Q::default', '$Q::emea::bookmark', '$Q::emea::orders::shard-1']) and d['deleted'] == [] and d['run']" "$name: copy's report"
	run --state "$url" state get "$Q::emea::orders::shard-1"
	expect_out '{"offset":3}' "$name: the copied value"
	run --state "$url" state get "$P::eu::bookmark"
	expect_out '{"offset":2}' "$name: copy keeps the source"

	# A destination with data keys is refused without --replace.
	run --state "$url" state put "$Q::extra" '{"x":1}'
	before=$(all_keys "$url"; dump "$url" $(all_keys "$url"))
	run --state "$url" state copy "$P" --to-pipeline "$Q"
	expect_rc 2 "$name: copy onto data is refused"
	expect_one_error_line "$name: the refusal is one line"
	expect_err_contains "--replace" "$name: the refusal names --replace"
	after=$(all_keys "$url"; dump "$url" $(all_keys "$url"))
	expect_same "$before" "$after" "$name: the refusal wrote nothing"
	# --replace: overwritten, and the destination's other keys deleted.
	run --state "$url" state copy "$P" --to-pipeline "$Q" --replace --json
	expect_rc 0 "$name: copy --replace"
	expect_json "'$Q::extra' in d['deleted'] and '$Q::emea::bookmark' in d['deleted']" "$name: --replace deletes what the copy does not write"
	run --state "$url" state get "$Q::eu::bookmark"
	expect_out '{"offset":2}' "$name: --replace wrote the source's keys"

	# move: the source gone, the destination there, P_archive untouched.
	run --state "$url" state move "$P" "$R" --json
	expect_rc 0 "$name: move"
	expect_json "len(d['written']) == 3 and len(d['deleted']) == 3 and d['undo']" "$name: move's report"
	local undo
	undo=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["undo"])')
	run --state "$url" state list "$P::"
	expect_out "" "$name: the source pipeline has no keys left"
	run --state "$url" state get "$R::eu::orders::shard-1"
	expect_out '{"offset":3}' "$name: moved value"
	run --state "$url" state get "$A::default"
	expect_out '{"archived":true}' "$name: the prefix-sharing pipeline is untouched"
	run --state "$url" state get "$T::$P::default"
	expect_out '{"tenant":1}' "$name: the tenant's pipeline of the same name is untouched"

	# One undo restores both pipelines.
	# shellcheck disable=SC2086
	run --state "$url" ${undo#faucet }
	expect_rc 0 "$name: undo of the move"
	run --state "$url" state get "$P::eu::bookmark"
	expect_out '{"offset":2}' "$name: undo restored the source"
	run --state "$url" state get "$R::default"
	expect_out "" "$name: undo removed the destination"

	# --tenant: the tenant's pipeline moves, the tenant kept.
	run --state "$url" state move "$P" "$Q" --tenant "$T"
	expect_rc 0 "$name: move --tenant"
	run --state "$url" state get "$T::$Q::default"
	expect_out '{"tenant":1}' "$name: moved within the tenant"
	run --state "$url" state get "$T::$P::default"
	expect_out "" "$name: the tenant's source is gone"
	run --state "$url" state get "$P::default"
	expect_out '{"offset":1}' "$name: the untenanted pipeline is untouched"
}

backend_case file "file:$PWD/fs"
backend_case sqlite "sqlite:$PWD/s.db"
backend_case postgres "$FAUCET_TEST_PG_URL"
backend_case redis "$FAUCET_TEST_REDIS_URL"

# Usage errors: exit 2, one line, nothing written.
run --state file:fs state move "p_file" "p_file"
expect_rc 2 "move onto itself"
run --state file:fs state copy p --to-pipeline 'a::b'
expect_rc 2 "a NEW with '::' is refused"
run --state file:fs state move p q --row-map nothing
expect_rc 2 "a --row-map without '='"
expect_err_contains "OLD=NEW" "the row-map error says the form"
run --state file:fs state move p q --tenant 'a::b'
expect_rc 2 "a bad tenant"
run --state file:fs state move no_such_pipeline q
expect_rc 2 "a source without keys"
expect_err_contains "has no keys" "the error says why"

# Both leases: a held lease of either pipeline stops the move (exit 75).
run --state file:fs state put "a1::default" '{"v":1}'
raw_put file:fs "b1::__lease__" "{\"holder\":\"otherhost:1:abcdef0123456789\",\"expires_at\":$(($(date +%s) + 3600)),\"run\":\"20260101T000000.000Z-abcdef\"}"
run --state file:fs state move a1 b1
expect_rc 75 "the destination's lease is held"
run --state file:fs state get a1::default
expect_out '{"v":1}' "nothing moved while a lease was held"

finish
