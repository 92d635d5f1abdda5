#!/usr/bin/env bash
# The etcd store from the command line: the URL and YAML forms, where a key
# lives on the cluster (PREFIX/KEY, compact JSON), doctor's cluster probes,
# and bad input - a URL with no endpoint, a bad port, no prefix, a server
# that is not etcd - each one clear error, exit 2, nothing written.  Needs the
# test servers (scripts/test-servers.sh); an unset URL is a failure, never a
# skip.
. "$(dirname "$0")/lib.sh"

if [ -z "${FAUCET_TEST_ETCD_URL:-}" ] || [ -z "${FAUCET_TEST_REDIS_URL:-}" ]; then
	fail "FAUCET_TEST_ETCD_URL / FAUCET_TEST_REDIS_URL are not set: start scripts/test-servers.sh"
	finish
fi
P="cli_etcd_$$"
URL="${FAUCET_TEST_ETCD_URL%/*}/$P"
hosts=${FAUCET_TEST_ETCD_URL#etcd://}
hosts=${hosts%%/*}
first=${hosts%%,*}
ectl() { ETCDCTL_API=3 etcdctl --endpoints "http://${hosts//,/,http://}" "$@"; }

# ---- the URL form and the layout ----
run --state "$URL" state put orders::a '{"b": 2, "a": [1, 0.1, 18446744073709551615]}'
expect_rc 0 "put through an etcd URL"
run --state "$URL" state get orders::a
expect_out '{"b":2,"a":[1,0.1,18446744073709551615]}' "get returns the value as written, compact"
got=$(ectl get --print-value-only "$P/orders::a")
[ "$got" = '{"b":2,"a":[1,0.1,18446744073709551615]}' ] && pass ||
	fail "the value lives at etcd key $P/orders::a as compact JSON (got '$got')"
run --state "$URL" state list orders::
expect_out "orders::a" "list under the prefix"

# ---- the YAML form ----
cat >etcd.yaml <<YAML
name: orders
state:
  type: etcd
  config:
    endpoints: [${hosts//,/, }]
    prefix: $P
    dial_timeout: 1s
    request_timeout: 5s
YAML
run -c etcd.yaml state get orders::a
expect_out '{"b":2,"a":[1,0.1,18446744073709551615]}' "the YAML form reads the same keys"
cat >noend.yaml <<YAML
state:
  type: etcd
  config:
    prefix: $P
YAML
run -c noend.yaml state get orders::a
expect_rc 2 "a config without endpoints"
expect_err_contains "endpoints" "the message names the missing field"
cat >wrongfield.yaml <<YAML
state:
  type: etcd
  config:
    endpoints: [$first]
    prefix: $P
    namespace: x
YAML
run -c wrongfield.yaml state get orders::a
expect_rc 2 "a redis field under type etcd"
expect_err_contains "does not apply to type 'etcd'" "the message says so"

# ---- doctor ----
run --state "$URL" doctor
expect_rc 0 "doctor passes on a healthy cluster"
expect_out_contains "members" "doctor lists the members"
expect_out_contains "3 of 3 members answer" "doctor counts the quorum"
expect_out_contains "leader" "doctor names the leader"
expect_out_contains "3.4" "doctor shows the servers' version"

# ---- bad input: exit 2, one line, nothing written ----
before=$(ectl get --prefix --keys-only "$P/" | sort)
run --state "etcd:///$P" state put orders::x 1
expect_rc 2 "a URL with no endpoint"
expect_one_error_line "no endpoint"
expect_err_contains "has no endpoint" "the message says there is no endpoint"
run --state "etcd://$first,/$P" state put orders::x 1
expect_rc 2 "an empty endpoint in the list"
expect_err_contains "empty endpoint" "the message says so"
run --state "etcd://127.0.0.1:99999/$P" state put orders::x 1
expect_rc 2 "a port out of range"
expect_err_contains "bad port" "the message says the port is bad"
run --state "etcd://127.0.0.1:x1/$P" state put orders::x 1
expect_rc 2 "a port that is not a number"
expect_err_contains "bad port" "the message says the port is bad"
run --state "etcd://127.0.0.1/$P" state put orders::x 1
expect_rc 2 "an endpoint without a port"
expect_err_contains "HOST:PORT" "the message shows the form"
run --state "etcd://$first" state put orders::x 1
expect_rc 2 "a URL without a prefix"
expect_err_contains "no key prefix" "the message says the prefix is missing"
run --state "etcd://$first/" state put orders::x 1
expect_rc 2 "an empty prefix"
expect_err_contains "no key prefix" "the message says the prefix is missing"
run --state "$URL?request_timeout=soon" state put orders::x 1
expect_rc 2 "a bad duration"
expect_err_contains "request_timeout" "the message names the option"
run --state "$URL?colour=red" state put orders::x 1
expect_rc 2 "an unknown option"
expect_err_contains "unknown option 'colour'" "the message names it"

# A Redis server on the port: not etcd, refused before anything is sent.
rport=${FAUCET_TEST_REDIS_URL##*:}
rport=${rport%%/*}
rkeys() { REDISCLI_AUTH="$FAUCET_TEST_PASSWORD" redis-cli -h 127.0.0.1 -p "$rport" -n 0 dbsize; }
rbefore=$(rkeys)
run --state "etcd://127.0.0.1:$rport/$P" state put orders::x 1
[ "$RC" -ne 0 ] && pass || fail "a Redis server as the endpoint is an error"
expect_one_error_line "not etcd"
expect_err_contains "is not an etcd server" "the message says it is not etcd"
[ "$(rkeys)" = "$rbefore" ] && pass || fail "nothing was written to the Redis server"

# An HTTP server that is not etcd.
hport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
mkdir -p www
python3 -m http.server --bind 127.0.0.1 --directory www "$hport" >/dev/null 2>&1 &
hpid=$!
deadline=$((SECONDS + 20))
until curl -s -o /dev/null "http://127.0.0.1:$hport/" || [ $SECONDS -ge $deadline ]; do :; done
run --state "etcd://127.0.0.1:$hport/$P" state put orders::x 1
[ "$RC" -ne 0 ] && pass || fail "an HTTP server that is not etcd is an error"
expect_err_contains "is not an etcd server" "the message says it is not etcd"
run --state "etcd://$first,127.0.0.1:$hport/$P" doctor
[ "$RC" -ne 0 ] && pass || fail "doctor fails when one endpoint is not etcd"
kill "$hpid" 2>/dev/null
wait "$hpid" 2>/dev/null

after=$(ectl get --prefix --keys-only "$P/" | sort)
[ "$after" = "$before" ] && pass || fail "no bad command wrote under the prefix (before: $before; after: $after)"
run --state "$URL" state get orders::x
expect_out "" "orders::x was never written"

# ---- a cluster that is down: a clear error within the request timeout ----
run --state "etcd://127.0.0.1:1/$P?request_timeout=1s&dial_timeout=200ms" state get orders::a
[ "$RC" -ne 0 ] && [ "$RC" -ne 2 ] && pass || fail "an unreachable cluster is an error, not a usage error"
expect_err_contains "no endpoint answered" "the message says no endpoint answered"

ectl del --prefix "$P/" >/dev/null
# ---- native leases: a frozen holder's lease goes by itself ----
# faucet run's lease key is attached to an etcd lease that ends a second
# after its expires_at: freeze the holder (SIGSTOP, so it neither renews nor
# releases) and etcd deletes the key without anyone's help.  Without native
# leases the key stays for ever (an expired lease for doctor to warn about).
LP="${P}_lease"
"$FAUCET_BIN" --state "${FAUCET_TEST_ETCD_URL%/*}/$LP" run --pipeline p --lease-ttl 2s -- sleep 60 \
	>/dev/null 2>&1 &
holder=$!
lease_key="$LP/p::default::__lease__"
for _ in $(seq 1 200); do # poll: until the run has written its lease
	[ -n "$(ectl get --keys-only "$lease_key")" ] && break
	sleep 0.05
done
lease_id=$(ectl get "$lease_key" -w json | python3 -c \
	'import json,sys; k=json.load(sys.stdin).get("kvs",[]); print(k[0].get("lease",0) if k else "none")')
case $lease_id in none | 0) fail "the run's lease key carries an etcd lease (got '$lease_id')" ;; *) pass ;; esac
kill -STOP "$holder"
gone=0
for _ in $(seq 1 300); do # poll: at most 15 s for etcd to delete the key
	if [ -z "$(ectl get --keys-only "$lease_key")" ]; then gone=1; break; fi
	sleep 0.05
done
[ "$gone" = 1 ] && pass || fail "a frozen holder's lease key was deleted by etcd"
kill -KILL "$holder"
wait "$holder" 2>/dev/null
# A new run of the invocation is not blocked by the frozen one's lease.
run --state "${FAUCET_TEST_ETCD_URL%/*}/$LP" run --pipeline p -- true
expect_rc 0 "a new run starts once etcd has dropped the frozen holder's lease"

finish
