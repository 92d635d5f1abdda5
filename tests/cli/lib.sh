# lib.sh - assertion helpers for the black-box tests of `faucet`.
#
# Source it first thing.  It moves into a fresh temp directory (removed on
# exit), runs $FAUCET_BIN through `run`, and counts assertions.  Every failed
# assertion prints what was expected and what came out; `finish` prints
# "N passed, M failed" and exits non-zero when anything failed.

set -u
if [ -z "${FAUCET_BIN:-}" ] || [ ! -x "$FAUCET_BIN" ]; then
	echo "FAUCET_BIN must point at the built faucet binary (got '${FAUCET_BIN:-}')" >&2
	exit 1
fi
command -v python3 >/dev/null || { echo "python3 is needed for the JSON checks" >&2; exit 1; }

PASSED=0
FAILED=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/faucet-cli-test.XXXXXX") || exit 1
trap 'chmod -R u+rwx "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
# Captured output lives beside, not inside, the directory the tests use.
mkdir "$WORK/t" && cd "$WORK/t" || exit 1
# The environment must not pick a store for us.
unset FAUCET_CONFIG FAUCET_STATE NO_COLOR

pass() { PASSED=$((PASSED + 1)); }
fail() {
	FAILED=$((FAILED + 1))
	echo "FAIL: $*" >&2
	echo "  command: faucet ${LAST_CMD:-}" >&2
	echo "  exit: ${RC:-} stdout: $(printf '%s' "${OUT:-}" | head -c 600)" >&2
	echo "  stderr: $(printf '%s' "${ERR:-}" | head -c 600)" >&2
}

# run ARGS...: run faucet with stdin from /dev/null; sets OUT, ERR, RC.
run() {
	LAST_CMD="$*"
	"$FAUCET_BIN" "$@" >"$WORK/.out" 2>"$WORK/.err" </dev/null
	RC=$?
	OUT=$(cat "$WORK/.out")
	ERR=$(cat "$WORK/.err")
}

# run_stdin TEXT ARGS...: as run, with TEXT on stdin.
run_stdin() {
	local input=$1
	shift
	LAST_CMD="$* <<< $input"
	printf '%s' "$input" | "$FAUCET_BIN" "$@" >"$WORK/.out" 2>"$WORK/.err"
	RC=$?
	OUT=$(cat "$WORK/.out")
	ERR=$(cat "$WORK/.err")
}

# raw_put URL KEY JSON: write KEY through the library, past the command's
# rules - run bookkeeping keys (doc/design.md §8.9), which `state put` refuses,
# for the tests that need a stale lease or a foreign document.
raw_put() {
	if [ -z "${FAUCET_RAW_BIN:-}" ] || [ ! -x "$FAUCET_RAW_BIN" ]; then
		echo "FAUCET_RAW_BIN must point at the built faucet_raw tool (tests/tools/)" >&2
		exit 1
	fi
	"$FAUCET_RAW_BIN" put "$@"
}

expect_rc() { # expect_rc CODE WHAT
	if [ "$RC" -eq "$1" ]; then pass; else fail "$2: expected exit $1"; fi
}

expect_out() { # expect_out TEXT WHAT
	if [ "$OUT" = "$1" ]; then pass; else fail "$2: expected stdout '$1'"; fi
}

expect_out_contains() {
	case "$OUT" in *"$1"*) pass ;; *) fail "$2: stdout should contain '$1'" ;; esac
}

expect_out_lacks() {
	case "$OUT" in *"$1"*) fail "$2: stdout must not contain '$1'" ;; *) pass ;; esac
}

expect_err_contains() {
	case "$ERR" in *"$1"*) pass ;; *) fail "$2: stderr should contain '$1'" ;; esac
}

expect_err_lacks() {
	case "$ERR" in *"$1"*) fail "$2: stderr must not contain '$1'" ;; *) pass ;; esac
}

expect_no_err() {
	if [ -z "$ERR" ]; then pass; else fail "$1: stderr should be empty"; fi
}

# The error contract: exactly one line, starting "faucet: ".
expect_one_error_line() {
	local lines
	lines=$(printf '%s\n' "$ERR" | wc -l)
	if [ -n "$ERR" ] && [ "$lines" -eq 1 ] && [ "${ERR#faucet: }" != "$ERR" ]; then
		pass
	else
		fail "$1: stderr should be one line starting 'faucet: '"
	fi
}

# expect_json PYTHON_EXPR WHAT: stdout parses as JSON and EXPR (over `d`)
# is true.
expect_json() {
	if printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" 2>"$WORK/.pyerr"; then
		pass
	else
		fail "$2: JSON check failed: $1 ($(head -c 300 "$WORK/.pyerr"))"
	fi
}

# snapshot DIR: a listing of every file under DIR with its content hash, to
# compare before and after a command that must not write.
snapshot() {
	if [ -d "$1" ]; then
		(cd "$1" && find . -type f -print0 | sort -z | xargs -0r sha256sum)
	else
		echo "(no directory $1)"
	fi
}

expect_same() { # expect_same BEFORE AFTER WHAT
	if [ "$1" = "$2" ]; then pass; else fail "$3: the store changed"; fi
}

expect_file() { # expect_file PATH WHAT
	if [ -e "$1" ]; then pass; else fail "$2: $1 should exist"; fi
}

expect_no_file() {
	if [ -e "$1" ]; then fail "$2: $1 should not exist"; else pass; fi
}

finish() {
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
	exit $?
}
