#!/usr/bin/env bash
# history.sh - soak runs of the randomized history checker
# (tests/history/check_history.py): new random seeds, each printed, for a
# given time, against one backend or all of them.
#
#   scripts/history.sh [--minutes N] [--backend file|sqlite|postgres|redis|etcd|all]
#                      [--faults P] [--build DIR]
#
# Defaults: 10 minutes, all backends, the build in ./build.  PostgreSQL and
# Redis come from FAUCET_TEST_PG_URL / FAUCET_TEST_REDIS_URL; when neither
# is set and a server backend is asked for, throw-away servers are started
# (scripts/test-servers.sh) and stopped at the end.  --faults P injects EIO
# into fsync/rename with probability P on the file and SQLite stores (needs
# the shim CMake builds: DIR/tests/libfaucet_faultshim.so).  Exit 1 when
# any schedule found a violation; each failure prints its seed and backend.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=10 backend=all faults=0 build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --minutes=*) minutes=${1#*=}; shift ;;
    --backend) backend=$2; shift 2 ;;
    --backend=*) backend=${1#*=}; shift ;;
    --faults) faults=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "history.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

[ -x "$build/faucet" ] || { echo "history.sh: no $build/faucet - build first" >&2; exit 2; }

needs_servers=0
case "$backend" in all|*postgres*|*redis*|*etcd*) needs_servers=1 ;; esac
if [ $needs_servers = 1 ] && [ -z "${FAUCET_TEST_PG_URL:-}${FAUCET_TEST_REDIS_URL:-}" ]; then
  eval "$(scripts/test-servers.sh start)"
  trap 'scripts/test-servers.sh stop "$FAUCET_TEST_SERVERS_DIR"' EXIT
fi

args=(--faucet "$build/faucet" --backend "$backend" --minutes "$minutes")
if [ "$faults" != 0 ]; then
  args+=(--faults "$faults" --shim "$build/tests/libfaucet_faultshim.so")
fi
/usr/bin/python3 tests/history/check_history.py "${args[@]}"
