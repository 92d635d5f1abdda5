# lib.sh - shared helpers of the failover tests (tests/cluster/test_*.sh) and
# of bench/failover.sh, on top of scripts/servers-lib.sh (which it sources:
# the server set-up has one copy).  Source it first; it makes a work directory
# ($CL_DIR, removed on exit after every command in CL_CLEANUP - each server
# a script starts registers its kill there), and offers:
#
#   sv_*                  everything of scripts/servers-lib.sh (ports below
#                         32768, bounded waits, the servers themselves)
#   cl_wait_for SECS DESC CMD...   poll CMD until it succeeds or SECS pass
#   cl_as_pg CMD...       run CMD as the PostgreSQL owner (`postgres` as root)
#   cl_fail MSG           print MSG and exit 1
#   cl_start_writers URL KEY   two tests/tools/faucet_counter writers on KEY
#   cl_stop_writers       stop them; fail if one failed or saw no error at all
#   cl_check_counter FINAL RESULTS...  the inequality over the drivers' lines
#   cl_report WHAT FINAL KILL_NS        cl_check_counter and the figures' line
#
# CL_MODE=safe (default) makes a lost acknowledged write fatal; CL_MODE=unsafe
# (the deliberately unsafe runs) reports it instead - and
# test_redis_failover.sh then fails unless there was one.
set -u
CL_MODE=${CL_MODE:-safe}
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)/servers-lib.sh"
for tool in "${FAUCET_BIN:-}" "${FAUCET_COUNTER_BIN:-}"; do
	if [ -z "$tool" ] || [ ! -x "$tool" ]; then
		echo "FAUCET_BIN and FAUCET_COUNTER_BIN must point at the built faucet and" \
			"tests/tools/faucet_counter (got '${FAUCET_BIN:-}', '${FAUCET_COUNTER_BIN:-}')" >&2
		exit 1
	fi
done
CL_DIR=$(mktemp -d "${TMPDIR:-/tmp}/faucet-cluster.XXXXXX") || exit 1
chmod 755 "$CL_DIR"
CL_CLEANUP=()
cl_cleanup() {
	local i
	for ((i = ${#CL_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${CL_CLEANUP[$i]}" >/dev/null 2>&1 || true
	done
	rm -rf "$CL_DIR"
}
trap cl_cleanup EXIT
trap 'exit 1' INT TERM

cl_fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# cl_need_raw: fail unless FAUCET_RAW_BIN is the built tests/tools/faucet_raw.
cl_need_raw() {
	[ -n "${FAUCET_RAW_BIN:-}" ] && [ -x "$FAUCET_RAW_BIN" ] ||
		cl_fail "FAUCET_RAW_BIN must point at the built tests/tools/faucet_raw"
}

cl_as_pg() { sv_as_pg "$@"; }

# cl_wait_for SECS DESC CMD...: poll (every 50 ms) until CMD succeeds.
cl_wait_for() { sv_wait_for "$@" || cl_fail "timed out waiting for $2"; }

# cl_start_writers URL KEY: two faucet_counter processes increment KEY
# (logs $CL_DIR/log1 and log2, summaries $CL_DIR/driver1.out and
# driver2.out) until cl_stop_writers.
cl_start_writers() {
	local i
	CL_WRITERS=()
	for i in 1 2; do
		"$FAUCET_COUNTER_BIN" "$1" "$2" "$CL_DIR/log$i" "$CL_DIR/stop" 80 \
			>"$CL_DIR/driver$i.out" 2>"$CL_DIR/driver$i.err" &
		CL_WRITERS+=($!)
	done
}

# cl_stop_writers: stop the writers and wait for them; each must have
# finished cleanly, and between them seen an error (else the kill never
# reached them and the run proves nothing).
cl_stop_writers() {
	local i
	touch "$CL_DIR/stop"
	for i in 0 1; do
		wait "${CL_WRITERS[$i]}" || { cat "$CL_DIR"/driver*.err >&2; cl_fail "writer $((i + 1)) failed"; }
	done
	[ "$(cat "$CL_DIR"/driver*.err | wc -l)" -gt 0 ] ||
		cl_fail "the writers saw no error at all: the kill did not reach them"
}

# cl_sum FIELD RESULTFILES...: the sum of FIELD=N over the drivers' lines.
cl_sum() {
	local field=$1 total=0 n
	shift
	for f in "$@"; do
		n=$(sed -n "s/.*\b$field=\([0-9]*\).*/\1/p" "$f")
		[ -n "$n" ] || cl_fail "driver output $f has no $field= ($(cat "$f"))"
		total=$((total + n))
	done
	echo "$total"
}

# cl_check_counter FINAL RESULTFILES...: acknowledged <= FINAL <=
# acknowledged + unknown.  Prints the figures; sets CL_LOST (acknowledged
# increments missing from FINAL).
cl_check_counter() {
	local final=$1 acked unknown dup max
	shift
	acked=$(cl_sum acked "$@")
	unknown=$(cl_sum unknown "$@")
	CL_LOST=$((acked > final ? acked - final : 0))
	echo "counter: final=$final acknowledged=$acked unknown=$unknown lost=$CL_LOST"
	if [ "$CL_MODE" = safe ]; then
		[ "$final" -ge "$acked" ] || cl_fail "lost acknowledged increments: final $final < acknowledged $acked"
		[ "$final" -le $((acked + unknown)) ] ||
			cl_fail "counter $final exceeds acknowledged + unknown = $((acked + unknown)): an increment reported as not written was applied"
		# Two writers never both won one step: each acknowledged value
		# is distinct (a value acknowledged twice means a lost write
		# and the counter went back), and none is above the final.
		dup=$(cat "$CL_DIR"/log[12] | awk '$1 == "ack" { print $2 }' | sort | uniq -d | head -1)
		[ -z "$dup" ] || cl_fail "the value $dup was acknowledged to both writers"
		max=$(cat "$CL_DIR"/log[12] | awk '$1 == "ack" { if ($2 > m) m = $2 } END { print m + 0 }')
		[ "$max" -le "$final" ] || cl_fail "the increment to $max was acknowledged, the final value is $final"
	fi
}

# cl_first_ack_ms KILL_NS: ms from the kill to the earliest first
# acknowledged write after an error of the writers (or "none").
cl_first_ack_ms() {
	sed -n 's/.*first_ack_after_error_ns=\([0-9]*\).*/\1/p' "$CL_DIR"/driver*.out |
		awk -v k="$1" '$1 > 0 && (b == 0 || $1 < b) { b = $1 }
			END { if (b == 0) print "none"; else printf "%d\n", (b - k) / 1000000 }'
}

# cl_report WHAT: after cl_stop_writers, with the counter's FINAL value and
# the kill's time in KILL_NS: check the counter (cl_check_counter) and
# print one line of figures.
cl_report() { # what final kill_ns
	cl_check_counter "$2" "$CL_DIR/driver1.out" "$CL_DIR/driver2.out"
	echo "$1 lost_acknowledged=$CL_LOST first_ack_after_kill_ms=$(cl_first_ack_ms "$3")"
}

# cl_probe URL NAME: "STATUS REASON" of doctor's probe NAME for the store.
cl_probe() {
	"$FAUCET_BIN" --state "$1" doctor --json 2>"$CL_DIR/doctor.err" | python3 -c '
import json, sys
d = json.load(sys.stdin)
p = [p for p in d["probes"] if p["name"] == sys.argv[1]]
print(p[0]["status"], p[0]["reason"] or "") if p else print("missing")
' "$2"
}

# cl_expect_probe URL NAME STATUS TEXT: the probe has STATUS and its reason
# contains TEXT.
cl_expect_probe() {
	local got
	got=$(cl_probe "$1" "$2")
	case "$got" in
	"$3 "*"$4"*) echo "doctor $2: $got" ;;
	*) cl_fail "doctor probe $2: expected $3 with '$4', got: $got $(cat "$CL_DIR/doctor.err")" ;;
	esac
}
