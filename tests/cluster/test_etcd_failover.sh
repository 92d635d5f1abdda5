#!/usr/bin/env bash
# test_etcd_failover.sh - no acknowledged write lost across etcd leader
# deaths (doc/design.md §3.8, §3.9).
#
# A private 3-member cluster; the two faucet_counter writers of lib.sh
# increment one counter by compare-and-put through all three endpoints; the
# leader is SIGKILLed three times mid-run, and up to six while no writer has
# seen an error yet (the dead member restarted in between).  Then, as in
# every failover test (cl_check_counter),
#   acknowledged <= final <= acknowledged + unknown
# and no value was acknowledged to both writers; increments go on after
# each new leader is elected.  Last, with two of three members dead, an
# operation fails within its request timeout with a clear message.  Every
# wait polls for its condition with a deadline.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/etcd_cluster.sh"

ec_start "$CL_DIR/cluster" || cl_fail "the etcd cluster did not start"
CL_CLEANUP+=("ec_stop")
url="$EC_URL/failover?request_timeout=8s&dial_timeout=300ms"
key=test::counter

acks() { cat "$CL_DIR"/log[12] 2>/dev/null | grep -c '^ack ' || true; }
acks_at_least() { [ "$(acks)" -ge "$1" ]; }

cl_start_writers "$url" "$key"
cl_wait_for 40 "20 acknowledged increments on a healthy cluster" acks_at_least 20
echo "ok: the writers make progress on a healthy cluster"

# Leader deaths, the killed member brought back after each, so that the
# window where a request was sent and its reply lost is likely hit.  The
# first death is of the member the writers talk to (the first endpoint: a
# client stays with the endpoint that last answered); later rounds kill
# whichever member leads.  A kill reaches the writers as an error only when
# one of their requests is in flight to the dead member (a request that
# finds it gone moves to the next endpoint unseen), and a writer may have
# moved off member 0 while leadership moved there: so three rounds at
# least, then more - six at most - until a writer has seen an error
# (cl_stop_writers requires one: else the kills proved nothing).
errors_seen() { [ "$(cat "$CL_DIR"/driver*.err 2>/dev/null | wc -l)" -gt 0 ]; }
kill_ns=0
for round in 1 2 3 4 5 6; do
  if [ $round = 1 ]; then
    ec_make_leader 0 || cl_fail "leadership did not move to member 0"
  fi
  leader=$(ec_leader_index) || cl_fail "round $round: no leader found"
  before=$(acks)
  [ $round = 1 ] && kill_ns=$(date +%s%N)
  ec_kill "$leader"
  echo "round $round: killed member $leader (leader) after $before acknowledged increments"
  cl_wait_for 40 "round $round: increments to go on after the leader's death" \
    acks_at_least $((before + 20))
  # The last killed member stays dead: the survivors answer below.
  if [ $round = 6 ] || { [ $round -ge 3 ] && errors_seen; }; then
    break
  fi
  ec_restart "$leader" || cl_fail "round $round: the killed member did not rejoin"
done
cl_stop_writers

# The survivors read the final value.
live=""
for i in 0 1 2; do
  [ "$i" = "$leader" ] || live+="${live:+,}127.0.0.1:${EC_PORTS[$i]}"
done
final=$("$FAUCET_BIN" --state "etcd://$live/failover" state get "$key") ||
  cl_fail "the final value is not readable from the survivors"
cl_report "etcd" "$final" "$kill_ns"

# No quorum: with two of three members dead, an operation fails within its
# request timeout with a clear message (`timeout` is only a backstop that
# turns a hang into a failure).
other=""
for i in 0 1 2; do
  if [ "$i" != "$leader" ] && [ -z "$other" ]; then other=$i; fi
done
ec_kill "$other"
out=$(timeout 20 "$FAUCET_BIN" --state "$EC_URL/failover?request_timeout=2s&dial_timeout=200ms" \
  state get "$key" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 2 ] ||
  cl_fail "without a quorum a read must fail, not hang or call it bad input (exit $rc: $out)"
case "$out" in
  *"no endpoint answered within the request timeout"*) echo "ok: without a quorum: $out" ;;
  *) cl_fail "without a quorum the message must say no endpoint answered (got: $out)" ;;
esac
echo "ok: etcd failover"
