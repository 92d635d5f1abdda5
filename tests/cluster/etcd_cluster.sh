# etcd_cluster.sh - sourced: a private 3-member etcd cluster on loopback
# ports below 32768, for the failover test and bench/etcd.sh (never the
# shared cluster of scripts/test-servers.sh: these kill its members).  Its
# members are started by scripts/servers-lib.sh, as the shared ones are.
#
#   ec_start DIR      start it under DIR, wait until every member is healthy;
#                     sets EC_URL (etcd://H:P,H:P,H:P) and EC_PORTS
#   ec_leader_index   0, 1 or 2: the member that is leader now (polls)
#   ec_make_leader I  hand leadership to member I (etcdctl move-leader)
#   ec_kill I         SIGKILL member I
#   ec_stop           stop every member (SIGKILL) and wait for them

. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)/servers-lib.sh"

ec_run_member() { # I: start member I in the background (its data dir may exist)
  local names=(e1 e2 e3)
  sv_etcd_member "$EC_DIR" "${names[$1]}" "${EC_PORTS[$1]}" "${EC_PEERS[$1]}" "$EC_INITIAL" \
    "faucet-failover-$$" --heartbeat-interval 100 --election-timeout 1000
}

# ec_restart I: start a killed member again and wait until it is healthy.
ec_restart() {
  ec_run_member "$1"
  EC_PIDS[$1]=$!
  sv_wait_for 30 "etcd member $1 to come back" sv_etcd_healthy "${EC_PORTS[$1]}"
}

ec_start() {
  EC_DIR=$1
  local i initial="" names=(e1 e2 e3) ports
  mapfile -t ports < <(sv_ports 6)
  EC_PORTS=("${ports[@]:0:3}")
  EC_PEERS=("${ports[@]:3:3}")
  EC_PIDS=()
  for i in 0 1 2; do
    initial+="${initial:+,}${names[$i]}=http://127.0.0.1:${EC_PEERS[$i]}"
  done
  EC_INITIAL=$initial
  for i in 0 1 2; do
    ec_run_member "$i"
    EC_PIDS+=($!)
  done
  EC_URL="etcd://127.0.0.1:${EC_PORTS[0]},127.0.0.1:${EC_PORTS[1]},127.0.0.1:${EC_PORTS[2]}"
  sv_wait_for 30 "the etcd cluster in $EC_DIR to become healthy" sv_etcd_healthy "${EC_PORTS[@]}"
}

# The index of the member every live member names as leader.
ec_leader_index() {
  local deadline=$((SECONDS + 20)) i j id leader
  while [ $SECONDS -lt $deadline ]; do
    for i in 0 1 2; do
      kill -0 "${EC_PIDS[$i]}" 2>/dev/null || continue
      leader=$(curl -sf -m 1 -X POST -d '{}' "http://127.0.0.1:${EC_PORTS[$i]}/v3/maintenance/status" |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("leader",""))' 2>/dev/null)
      [ -n "$leader" ] || continue
      for j in 0 1 2; do
        kill -0 "${EC_PIDS[$j]}" 2>/dev/null || continue
        id=$(curl -sf -m 1 -X POST -d '{}' "http://127.0.0.1:${EC_PORTS[$j]}/v3/maintenance/status" |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["member_id"])' 2>/dev/null)
        if [ "$id" = "$leader" ]; then
          echo "$j"
          return 0
        fi
      done
    done
  done
  return 1
}

# The member id of member I, in hex (what etcdctl takes).
ec_member_hex() {
  curl -sf -m 1 -X POST -d '{}' "http://127.0.0.1:${EC_PORTS[$1]}/v3/maintenance/status" |
    python3 -c 'import json,sys; print("%x" % int(json.load(sys.stdin)["header"]["member_id"]))'
}

# ec_make_leader I: move leadership to member I and wait until every live
# member names it.
ec_make_leader() {
  local leader target
  leader=$(ec_leader_index) || return 1
  [ "$leader" = "$1" ] && return 0
  target=$(ec_member_hex "$1") || return 1
  ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:${EC_PORTS[$leader]}" move-leader "$target" \
    >/dev/null || return 1
  sv_wait_for 20 "member $1 to lead" ec_leads "$1"
}

ec_leads() { [ "$(ec_leader_index)" = "$1" ]; }

ec_kill() {
  kill -9 "${EC_PIDS[$1]}" 2>/dev/null || true
  wait "${EC_PIDS[$1]}" 2>/dev/null || true
}

ec_stop() {
  local p
  for p in "${EC_PIDS[@]}"; do
    kill -9 "$p" 2>/dev/null || true
  done
  for p in "${EC_PIDS[@]}"; do
    wait "$p" 2>/dev/null || true
  done
}
