#!/usr/bin/env bash
# The Redis namespace index from the command line: `index: true` in a
# config (and ?index=true in a URL) is accepted for type redis only;
# doctor warns when the index drifted; `state reindex` repairs it and is
# refused for a store without an index.  Needs the test servers
# (scripts/test-servers.sh); an unset URL is a failure, never a skip.
. "$(dirname "$0")/lib.sh"

if [ -z "${FAUCET_TEST_REDIS_URL:-}" ]; then
	fail "FAUCET_TEST_REDIS_URL is not set: start scripts/test-servers.sh"
	finish
fi
NS="cliidx$$"
rcli() { # redis-cli against the shared server's database 0
	local hostport=${FAUCET_TEST_REDIS_URL##*@}
	hostport=${hostport%%/*}
	REDISCLI_AUTH="$FAUCET_TEST_PASSWORD" redis-cli -h 127.0.0.1 -p "${hostport##*:}" -n 0 "$@"
}

cat >idx.yaml <<YAML
name: orders
state:
  type: redis
  config:
    url: \${env:FAUCET_TEST_REDIS_URL}
    namespace: $NS
    index: true
YAML

run -c idx.yaml state put orders::a '{"n":1}'
expect_rc 0 "put through an indexed config"
run -c idx.yaml state list orders::
expect_out "orders::a" "list reads the index"
# (The put is a run: its bookkeeping keys are in the namespace, and so in
# the index, too.)
rcli ZRANGE "$NS.index" 0 -1 | grep -qx "orders::a" && pass || fail "the put added its key to $NS.index"

# A key written behind the index's back.
rcli SET "$NS:orders::b" 2 >/dev/null
run -c idx.yaml state list orders::
expect_out "orders::a" "a foreign key is not in the index yet"
run -c idx.yaml doctor
expect_rc 0 "a drifted index is a warning, not a failure"
expect_out_contains "WARN" "doctor warns"
expect_out_contains "missing from it (first: 'orders::b')" "doctor names the drift"
expect_out_contains "faucet state reindex" "doctor says how to repair it"
run -c idx.yaml state reindex --json
expect_rc 0 "reindex"
expect_json 'd == {"added": 1, "removed": 0}' "reindex --json report"
run -c idx.yaml state list orders::
expect_out "orders::a
orders::b" "after reindex the foreign key is listed"
run -c idx.yaml doctor --json
expect_json '[p["status"] for p in d["probes"] if p["name"] == "index"] == ["pass"]' "the index probe passes again"

# The same store by URL: ?index=true.
run --state "$FAUCET_TEST_REDIS_URL?namespace=$NS&index=true" state reindex
expect_rc 0 "reindex by URL"
expect_out_contains "0 key(s) added, 0 stale member(s) removed" "nothing left to repair"

# Without an index, or on another backend: refused, exit 2.
run --state "$FAUCET_TEST_REDIS_URL?namespace=$NS" state reindex
expect_rc 2 "reindex without index=true"
expect_err_contains "index=true" "the refusal says how to turn the index on"
mkdir -m 700 st
run --state file:st state reindex
expect_rc 2 "reindex of a file store"
expect_one_error_line "reindex of a file store"
cat >file-idx.yaml <<YAML
state:
  type: file
  config:
    path: st
    index: true
YAML
run -c file-idx.yaml state list
expect_rc 2 "index: is a redis option only"
expect_err_contains "index does not apply to type 'file'" "the config error names the field"

rcli DEL "$NS:orders::a" "$NS:orders::b" "$NS.index" >/dev/null
finish
