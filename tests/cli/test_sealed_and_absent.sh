#!/usr/bin/env bash
# A keyless write into an encrypted store is refused with "this store is
# encrypted; give --encryption-key-env" (exit 2, nothing written) whatever
# the write meets first - the store's marker or a sealed value its run has
# to read - and no message names one of the store's internal files.  A
# backfill --dry-run on a store that does not exist yet prints the plan and
# creates nothing.
. "$(dirname "$0")/lib.sh"

# Every file of the store with its bytes, lock files too: a refused write
# leaves none behind (it is refused before the key's lock is taken).
values() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0r sha256sum); }

export K=sealed-test-key-0123456789
run --state file:enc --encryption-key-env K state put p::a '{"v":1}'
expect_rc 0 "a sealed write"
run --state file:enc --encryption-key-env K state put p::a '{"v":2}'
expect_rc 0 "a second one: the invocation now has sealed run records"

for cmd in "state put p::a {\"v\":3}" "state put p::a {\"v\":3} --if-absent" "state delete p::a" \
	"state undo p" "state move p q" "state copy p --to-pipeline q" "state put p::new {\"v\":1}"; do
	before=$(values enc)
	# shellcheck disable=SC2086
	run --state file:enc $cmd
	expect_rc 2 "$cmd without the key"
	expect_one_error_line "$cmd: one line"
	expect_err_contains "is encrypted; give --encryption-key-env" "$cmd: says what to do"
	expect_err_lacks "%3A" "$cmd: no internal file named"
	expect_err_lacks ".json" "$cmd: no internal file named (.json)"
	expect_same "$before" "$(values enc)" "$cmd: nothing written"
done
run --state file:enc state get p::a
expect_rc 1 "a keyless read"
expect_err_contains "this store is encrypted; give --encryption-key-env" "a read says the same"
expect_err_lacks ".json" "a read names no internal file"
run --state file:enc --encryption-key-env K state get p::a
expect_out '{"v":2}' "the value is as it was"

# backfill --dry-run on a store nothing has written yet.
run --state file:nothing-yet backfill --pipeline p --from 2026-06-01 --to 2026-06-04 --window 1d --dry-run -- true
expect_rc 0 "dry run on an absent store"
expect_out_contains "20260603T000000Z" "the plan is printed"
expect_err_contains "no state store at file:nothing-yet yet" "it says there is no store yet"
expect_no_file nothing-yet "nothing was created"
printf 'name: p\nstate:\n  type: sqlite\n  config:\n    path: ./absent.db\n' > p.yaml
run -c p.yaml backfill --from 2026-06-01 --to 2026-06-03 --window 1d --dry-run --json -- true
expect_rc 0 "dry run on an absent store named by a YAML"
expect_json "d['dry_run'] and d['pending'] == 2" "the whole plan would run"
expect_no_file absent.db "no database was created"

finish
