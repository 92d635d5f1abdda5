#!/bin/bash
# test_state_clear.sh - `faucet state clear`: one undoable run that deletes
# a pipeline's (or one invocation's) data keys and keeps the bookkeeping;
# --dry-run changes nothing; a prefix-sharing pipeline is untouched; --yes
# is needed on a terminal.  On file, SQLite, PostgreSQL and Redis.
. "$(dirname "$0")/lib.sh"

ID="c$$x$RANDOM"
urls=("file:$PWD/st" "sqlite:$PWD/s.db")
if [ -z "${FAUCET_TEST_PG_URL:-}" ] || [ -z "${FAUCET_TEST_REDIS_URL:-}" ]; then
	fail "FAUCET_TEST_PG_URL / FAUCET_TEST_REDIS_URL are not set: start scripts/test-servers.sh"
else
	urls+=("$FAUCET_TEST_PG_URL?table=clear_$ID&ensure_table=true"
	       "$FAUCET_TEST_REDIS_URL?namespace=clear_$ID")
fi

data_keys="orders::eu orders::eu::bm orders::eu2::bm orders::us::bm orders::__backfill__::h"
for url in "${urls[@]}"; do
	S=(--state "$url")
	for k in $data_keys orders_archive::eu::bm ordersx acme::orders::eu::bm; do
		run "${S[@]}" -q state put "$k" "{\"k\":\"$k\",\"n\":18446744073709551615}"
	done
	run "${S[@]}" state list --all
	all_before=$OUT
	run "${S[@]}" state list
	data_before=$OUT

	# --dry-run lists what would go and changes nothing.
	run "${S[@]}" state clear orders --dry-run
	expect_rc 0 "dry run ($url)"
	expect_out "$(printf '%s\n' $data_keys | sort)" "dry run lists the pipeline's data keys ($url)"
	run "${S[@]}" state list --all
	expect_out "$all_before" "dry run changed nothing ($url)"

	# One invocation: PIPELINE::R and what is under it, not row eu2.
	run "${S[@]}" state clear orders --row eu --json
	expect_rc 0 "clear --row ($url)"
	expect_json 'd["count"] == 2 and d["keys"] == ["orders::eu", "orders::eu::bm"] and d["run"]' \
		"clear --row report ($url)"
	run "${S[@]}" state get orders::eu2::bm
	expect_out_contains '"k"' "row eu2 is untouched by --row eu ($url)"
	run "${S[@]}" state undo orders --row eu
	expect_rc 0 "undo clear --row ($url)"
	run "${S[@]}" state list
	expect_out "$data_before" "undo of clear --row restored its keys ($url)"

	# The whole pipeline.
	run "${S[@]}" state clear orders
	expect_rc 0 "clear ($url)"
	expect_err_contains "undo: faucet state undo orders" "clear prints its run and undo ($url)"
	run "${S[@]}" state list
	expect_out "$(printf '%s\n' acme::orders::eu::bm orders_archive::eu::bm ordersx)" \
		"only the pipeline's keys went; orders_archive, ordersx and the tenant's stay ($url)"
	run "${S[@]}" state list --all orders::
	expect_out_contains "orders::__status__" "the history survives the clear ($url)"
	expect_out_contains "orders::eu::__status__" "the invocation's history survives ($url)"
	run "${S[@]}" state runs orders
	expect_out_contains "undone" "the history is readable after the clear ($url)"
	# Undo restores every key, values exactly.
	run "${S[@]}" state undo orders
	expect_rc 0 "undo the clear ($url)"
	run "${S[@]}" state list
	expect_out "$data_before" "undo restored every key ($url)"
	run "${S[@]}" state get orders::__backfill__::h
	expect_out '{"k":"orders::__backfill__::h","n":18446744073709551615}' "value restored exactly ($url)"

	# A tenant's pipeline.
	run "${S[@]}" state clear orders --tenant acme
	expect_rc 0 "clear --tenant ($url)"
	run "${S[@]}" state get acme::orders::eu::bm
	expect_out "" "the tenant's key went ($url)"
	run "${S[@]}" state get orders::eu::bm
	expect_out_contains '"k"' "the untenanted pipeline is untouched ($url)"

	# Nothing to clear: exit 0, no run.
	run "${S[@]}" state clear nosuch --json
	expect_rc 0 "clear of an empty pipeline ($url)"
	expect_json 'd["count"] == 0 and d["run"] is None' "nothing cleared, no run ($url)"
done

# On a terminal more than one key needs --yes (no prompt): exit 2, nothing deleted.
S=(--state "file:$PWD/st")
tty_run() { # tty_run ARGS...: faucet with stdin a terminal; sets RC, OUT (stdout+stderr)
	OUT=$(python3 - "$FAUCET_BIN" "$@" <<'PY'
import os, subprocess, sys
master, slave = os.openpty()
p = subprocess.run(sys.argv[1:], stdin=slave, capture_output=True, text=True)
os.close(slave); os.close(master)
sys.stdout.write(p.stdout + p.stderr)
sys.exit(p.returncode)
PY
)
	RC=$?
	LAST_CMD="(stdin a tty) $*"
	ERR=$OUT
}
tty_run "${S[@]}" state clear orders
expect_rc 2 "more than one key on a terminal without --yes"
expect_err_contains "--yes" "says --yes is needed"
run "${S[@]}" state list orders::
expect_out_contains "orders::eu::bm" "nothing deleted without --yes"
tty_run "${S[@]}" state clear orders --row us
expect_rc 0 "one key on a terminal needs no --yes"
tty_run "${S[@]}" state clear orders --yes
expect_rc 0 "--yes on a terminal"
run "${S[@]}" state list orders::
expect_out "" "cleared with --yes"

# Usage errors exit 2 before the store is opened.
run --state "file:$PWD/none" state clear orders::eu
expect_rc 2 "a PIPELINE with ::"
run --state "file:$PWD/none" state clear orders --row __status__
expect_rc 2 "a bookkeeping --row"
run --state "file:$PWD/none" state clear
expect_rc 2 "no PIPELINE"
expect_no_file "$PWD/none"

finish
