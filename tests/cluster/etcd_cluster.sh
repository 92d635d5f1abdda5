# etcd_cluster.sh - sourced: a private 3-member etcd cluster on loopback
# ports below 32768, for the failover test and bench/etcd.sh (never the
# shared cluster of scripts/test-servers.sh: these kill its members).
#
#   ec_start DIR      start it under DIR, wait until every member is healthy;
#                     sets EC_URL (etcd://H:P,H:P,H:P) and EC_PORTS
#   ec_leader_index   0, 1 or 2: the member that is leader now (polls)
#   ec_kill I         SIGKILL member I
#   ec_stop           stop every member (SIGKILL) and wait for them

ec_low_port() {
  python3 -c '
import random, socket
for _ in range(1000):
    p = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
'
}

ec_run_member() { # I: start member I in the background (its data dir may exist)
  local names=(e1 e2 e3)
  etcd --name "${names[$1]}" --data-dir "$EC_DIR/${names[$1]}" \
    --listen-client-urls "http://127.0.0.1:${EC_PORTS[$1]}" \
    --advertise-client-urls "http://127.0.0.1:${EC_PORTS[$1]}" \
    --listen-peer-urls "http://127.0.0.1:${EC_PEERS[$1]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${EC_PEERS[$1]}" \
    --initial-cluster "$EC_INITIAL" --initial-cluster-state new \
    --initial-cluster-token "faucet-failover-$$" \
    --heartbeat-interval 100 --election-timeout 1000 >>"$EC_DIR/${names[$1]}.log" 2>&1 &
}

# ec_restart I: start a killed member again and wait until it is healthy.
ec_restart() {
  ec_run_member "$1"
  EC_PIDS[$1]=$!
  local deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    curl -sf -m 1 "http://127.0.0.1:${EC_PORTS[$1]}/health" 2>/dev/null | grep -q '"health":"true"' &&
      return 0
  done
  echo "etcd_cluster: member $1 did not come back in 30 s" >&2
  return 1
}

ec_start() {
  EC_DIR=$1
  mkdir -p "$EC_DIR"
  local i initial="" names=(e1 e2 e3)
  EC_PORTS=()
  EC_PEERS=()
  EC_PIDS=()
  for i in 0 1 2; do
    EC_PORTS+=("$(ec_low_port)")
    EC_PEERS+=("$(ec_low_port)")
  done
  for i in 0 1 2; do
    initial+="${initial:+,}${names[$i]}=http://127.0.0.1:${EC_PEERS[$i]}"
  done
  EC_INITIAL=$initial
  for i in 0 1 2; do
    ec_run_member "$i"
    EC_PIDS+=($!)
  done
  EC_URL="etcd://127.0.0.1:${EC_PORTS[0]},127.0.0.1:${EC_PORTS[1]},127.0.0.1:${EC_PORTS[2]}"
  local deadline=$((SECONDS + 30)) healthy
  while [ $SECONDS -lt $deadline ]; do
    healthy=0
    for i in 0 1 2; do
      curl -sf "http://127.0.0.1:${EC_PORTS[$i]}/health" 2>/dev/null | grep -q '"health":"true"' &&
        healthy=$((healthy + 1))
    done
    [ $healthy -eq 3 ] && return 0
  done
  echo "etcd_cluster: the cluster in $EC_DIR did not become healthy in 30 s" >&2
  return 1
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
