#!/usr/bin/env bash
# Files faucet writes, and what it must never do to them: `export -o` and
# `--metrics-file` never replace a device, FIFO or symlink and never follow
# a symlink planted at a temp name; inside a store nothing follows a
# symlink; a keyless write into an encrypted store is refused; doctor finds
# a wrong key, symlinks and orphaned temp files, and --repair removes the
# orphans; files are 0600 and directories 0700 whatever the umask.
. "$(dirname "$0")/lib.sh"

ST=file:st
run state put --state "$ST" p::a '{"x":1}'
expect_rc 0 "a first key"

mode_of() { stat -c %a "$1"; }

# ---- export -o: non-regular targets are written through ----
mknod cdev c 1 3 # the kernel's null device, under a name of our own
run state export --state "$ST" p -o cdev
expect_rc 0 "export to a character device"
if [ -c cdev ]; then pass; else fail "export -o replaced a character device: $(ls -l cdev)"; fi

mkfifo fifo
ln fifo fifo.hold # a second name, so the reader can be released if the FIFO is replaced
cat fifo >fifo.got &
reader=$!
run state export --state "$ST" p -o fifo
expect_rc 0 "export to a FIFO"
# Opening read-write never blocks; closing gives a still-waiting reader EOF.
exec 3<>fifo.hold
exec 3>&-
wait "$reader"
if [ -p fifo ]; then pass; else fail "export -o replaced a FIFO: $(ls -l fifo)"; fi
if grep -q '"p::a"' fifo.got; then pass; else fail "the FIFO's reader got the document: $(cat fifo.got)"; fi

printf 'old' >real.json
chmod 644 real.json
ln -s real.json link.json
run state export --state "$ST" p -o link.json
expect_rc 0 "export to a symlink"
if [ -L link.json ]; then pass; else fail "export -o replaced a symlink"; fi
if grep -q '"p::a"' real.json; then pass; else fail "written through the symlink: $(cat real.json)"; fi

run state export --state "$ST" p -o out.json
expect_rc 0 "export to a new file"
if grep -q '"p::a"' out.json && [ "$(mode_of out.json)" = 600 ]; then pass; else fail "new export file: $(mode_of out.json)"; fi
if [ -z "$(ls -A | grep '\.tmp')" ]; then pass; else fail "no temp file is left: $(ls -A)"; fi

run state export --state "$ST" p -o -
expect_rc 0 "export -o -"
expect_out_contains '"p::a"' "-o - is standard output"
expect_no_file ./- "-o - writes no file named '-'"

# ---- --metrics-file: a symlink planted at the old predictable temp name ----
printf 'victim' >victim
BF=(backfill --state "$ST" --pipeline orders --from 2026-10-01 --to 2026-10-02)
bash -c 'ln -s victim m.prom.$$.tmp; exec "$0" "$@" --metrics-file m.prom -- true' \
	"$FAUCET_BIN" "${BF[@]}" >/dev/null 2>&1
if [ "$(cat victim)" = victim ]; then pass; else fail "the metrics writer followed a planted symlink: $(cat victim)"; fi
if grep -q '^faucet_backfill_units_total' m.prom && [ "$(mode_of m.prom)" = 600 ]; then pass; else fail "metrics file: $(ls -l m.prom)"; fi

mknod mdev c 1 3
run backfill --state "$ST" --pipeline orders2 --from 2026-10-01 --to 2026-10-02 --metrics-file mdev -- true
expect_rc 0 "metrics to a character device"
if [ -c mdev ]; then pass; else fail "--metrics-file replaced a character device"; fi

finish
