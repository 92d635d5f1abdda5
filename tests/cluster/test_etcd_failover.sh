#!/usr/bin/env bash
# Failover of the etcd store (doc/design.md §3): two processes do
# compare-and-put increments of one counter through faucet across all three
# endpoints of a private cluster; the leader is SIGKILLed mid-run (three
# times, the dead member restarted in between).  Then
#   acknowledged <= final <= acknowledged + unknown
# (no acknowledged increment lost, none counted twice, an unknown one at most
# once), and increments go on after the new leader is elected.  Every wait
# polls for its condition with a deadline.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/etcd_cluster.sh"
COUNTER=${FAUCET_COUNTER_BIN:?FAUCET_COUNTER_BIN must point at the built faucet_counter}
FAUCET=${FAUCET_BIN:?FAUCET_BIN must point at the built faucet}
work=$(mktemp -d "${TMPDIR:-/tmp}/faucet-failover.XXXXXX")
pids=()
cleanup() {
  touch "$work/stop"
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  ec_stop
  rm -rf "$work"
}
trap cleanup EXIT
failed=0
check() { # check CONDITION-STATUS WHAT
  if [ "$1" -eq 0 ]; then echo "ok: $2"; else echo "FAIL: $2" >&2; failed=1; fi
}
acks() { cat "$work"/log.* 2>/dev/null | grep -c '^ack ' || true; }
wait_acks() { # wait_acks N SECONDS: until at least N acknowledged increments
  local deadline=$((SECONDS + $2))
  while [ "$(acks)" -lt "$1" ]; do
    [ $SECONDS -lt $deadline ] || return 1
  done
}

ec_start "$work/cluster" || exit 1
URL="$EC_URL/failover?request_timeout=8s&dial_timeout=300ms"
for w in 1 2; do
  "$COUNTER" "$URL" "test::counter" "$work/log.$w" "$work/stop" 2>"$work/err.$w" &
  pids+=($!)
done
wait_acks 20 40
check $? "the writers make progress on a healthy cluster"

# Three leader deaths, the killed member brought back after each, so the
# window where a request was sent and its reply lost is likely to be hit.
for round in 1 2 3; do
  leader=$(ec_leader_index)
  check $? "round $round: a leader is found"
  before=$(acks)
  ec_kill "$leader"
  echo "round $round: killed member $leader (leader) after $before acknowledged increments"
  wait_acks $((before + 20)) 40
  check $? "round $round: increments go on after the leader's death (new leader elected)"
  if [ $round -lt 3 ]; then
    ec_restart "$leader"
    check $? "round $round: the killed member rejoins"
  fi
done

touch "$work/stop"
for p in "${pids[@]}"; do wait "$p"; done
pids=()
# A live endpoint reads the final value.
live=""
for i in 0 1 2; do
  [ "$i" = "$leader" ] || live+="${live:+,}127.0.0.1:${EC_PORTS[$i]}"
done
final=$("$FAUCET" --state "etcd://$live/failover" state get test::counter)
check $? "the final value is readable from the survivors"
acked=$(acks)
unknown=$(cat "$work"/log.* | grep -c '^unknown ' || true)
max_ack=$(cat "$work"/log.* | awk '$1 == "ack" { if ($2 > m) m = $2 } END { print m + 0 }')
echo "acknowledged $acked, unknown $unknown, final $final"
[ "$acked" -le "$final" ] 2>/dev/null
check $? "acknowledged ($acked) <= final ($final): no acknowledged increment lost"
[ "$final" -le $((acked + unknown)) ] 2>/dev/null
check $? "final ($final) <= acknowledged + unknown ($((acked + unknown))): nothing applied twice or invented"
[ "$max_ack" -le "$final" ] 2>/dev/null
check $? "the highest acknowledged value ($max_ack) is <= final"
# Every acknowledged value is distinct: two writers never both won one step.
dups=$(cat "$work"/log.* | awk '$1 == "ack" { print $2 }' | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ]
check $? "no value was acknowledged to two writers"

# No quorum: with two of three members dead, an operation fails within its
# request timeout with a clear message (`timeout` is only a backstop that
# turns a hang into a failure).
other=""
for i in 0 1 2; do
  if [ "$i" != "$leader" ] && [ -z "$other" ]; then other=$i; fi
done
ec_kill "$other"
out=$(timeout 20 "$FAUCET" --state "$EC_URL/failover?request_timeout=2s&dial_timeout=200ms" \
  state get test::counter 2>&1)
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 2 ]
check $? "without a quorum a read fails (exit $rc), and does not hang"
case "$out" in
  *"no endpoint answered within the request timeout"*) check 0 "the message says no endpoint answered" ;;
  *) check 1 "the message says no endpoint answered (got: $out)" ;;
esac
exit $failed
