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

# ---- symlinks inside a store are never followed ----
printf '{"password":"hunter2"}' >secret.json
ln -s "$PWD/secret.json" 'st/p%3A%3Aplanted.json'
run state export --state "$ST" p
expect_rc 0 "export beside a planted symlink"
expect_out_lacks hunter2 "export does not print the link's target"
expect_out_lacks planted "a symlink is not a key (export)"
run state list --state "$ST"
expect_out_lacks planted "a symlink is not a key (list)"
run state get --state "$ST" p::planted
expect_rc 1 "get through a symlink is an error"
expect_err_contains 'p%3A%3Aplanted.json' "the error names the file"
expect_out_lacks hunter2 "get does not print the link's target"
run doctor --state "$ST"
expect_rc 1 "doctor fails on a symlink"
expect_out_contains 'p%3A%3Aplanted.json' "doctor names the symlink"
rm 'st/p%3A%3Aplanted.json'

ln -s "$PWD/made-by-lock" 'st/p%3A%3Ab.json.lock'
run state put --state "$ST" p::b 1 --if-absent
expect_rc 1 "a symlinked lock file is an error"
expect_err_contains "symbolic link" "the error says why"
expect_no_file made-by-lock "the lock symlink's target is not created"
# (A delete of an absent key writes nothing, so give it a key to delete.)
rm 'st/p%3A%3Ab.json.lock'
run state put --state "$ST" p::b 1
expect_rc 0 "put without the lock symlink"
# (The put's first write held the key's lock: its lock file is there.)
rm 'st/p%3A%3Ab.json.lock'
ln -s "$PWD/made-by-lock" 'st/p%3A%3Ab.json.lock'
run state put --state "$ST" p::b 2
expect_rc 1 "a put through a symlinked lock file is an error"
expect_no_file made-by-lock "the lock symlink's target is not created by put"
run state delete --state "$ST" p::b
expect_rc 1 "delete through a symlinked lock file is an error"
expect_no_file made-by-lock "the lock symlink's target is not created by delete"
rm 'st/p%3A%3Ab.json.lock'

# ---- encryption: keyless writes refused, doctor opens the sealed files ----
export K1=first-secret K2=second-secret
E=file:est
run --state "$E" --encryption-key-env K1 state put p::a '{"n":1}'
expect_rc 0 "a sealed put"
run --state "$E" state put p::b 2
expect_rc 2 "a keyless put into an encrypted store"
expect_err_contains "is encrypted; give --encryption-key-env" "the refusal says what to do"
expect_no_file 'est/p%3A%3Ab.json' "nothing written without the key"
run --state "$E" --encryption-key-env K2 doctor
expect_rc 1 "doctor with a wrong key"
# The put recorded a run (doc/design.md §8.7): p::a's bookkeeping files are sealed
# too, and the doctor names whichever of them it read first.
expect_out_contains "state file est/p%3A%3Aa" "doctor names the file the key cannot open"
run --state "$E" --encryption-key-env K1 doctor
expect_rc 0 "doctor with the right key"

# ---- orphaned temp files: a WARN; --repair removes those no writer holds ----
dead='st/p%3A%3Az.0123456789abcdef0123456789abcdef.7.json.tmp'
live='st/p%3A%3Ay.0123456789abcdef0123456789abcdef.8.json.tmp'
head -c 1000 /dev/zero >"$dead"
head -c 10 /dev/zero >"$live"
run doctor --state "$ST"
expect_rc 0 "orphaned temp files are a warning, not a failure"
expect_out_contains WARN "the orphans are reported"
expect_out_contains "2 orphaned temp files (1010 bytes" "count and bytes"
# flock(1) holds the live writer's lock while doctor --repair runs.
LAST_CMD="doctor --repair (with $live locked)"
flock -x "$live" "$FAUCET_BIN" doctor --state "$ST" --repair >"$WORK/.out" 2>"$WORK/.err"
RC=$?
OUT=$(cat "$WORK/.out")
ERR=$(cat "$WORK/.err")
expect_rc 0 "doctor --repair"
expect_out_contains "removed 1 orphaned temp file" "repair says what it removed"
expect_no_file "$dead" "the dead writer's temp file is removed"
expect_file "$live" "a temp file a writer holds is kept"
rm -f "$live"
run doctor --state "$ST"
expect_out_lacks WARN "nothing left to warn about"

# ---- state delete whose lock file cannot be removed: exit 0 with a warning ----
# A preloaded unlinkat() that refuses lock files stands in for the failure
# (the library's own fault tests do the same through its syscall table).
if command -v cc >/dev/null; then
	cat >"$WORK/nolockunlink.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
int unlinkat(int dirfd, const char *name, int flags)
{
	size_t n = strlen(name);
	int (*real)(int, const char *, int) =
		(int (*)(int, const char *, int))dlsym(RTLD_NEXT, "unlinkat");
	if (n > 5 && strcmp(name + n - 5, ".lock") == 0) {
		errno = EPERM;
		return -1;
	}
	return real(dirfd, name, flags);
}
C
	if cc -shared -fPIC -o "$WORK/nolockunlink.so" "$WORK/nolockunlink.c" -ldl 2>/dev/null; then
		run state put --state "$ST" p::gone 1
		LAST_CMD="state delete p::gone (lock unlink fails)"
		ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0" \
			LD_PRELOAD="$WORK/nolockunlink.so" "$FAUCET_BIN" state delete --state "$ST" p::gone \
			>"$WORK/.out" 2>"$WORK/.err" </dev/null
		RC=$?
		OUT=$(cat "$WORK/.out")
		ERR=$(cat "$WORK/.err")
		expect_rc 0 "a delete whose value is gone succeeds"
		expect_err_contains "warning" "the lock file left behind is a warning"
		expect_err_contains 'p%3A%3Agone.json.lock' "the warning names the lock file"
		expect_no_file 'st/p%3A%3Agone.json' "the value is gone"
		rm -f 'st/p%3A%3Agone.json.lock'
	else
		echo "note: cannot build an LD_PRELOAD shim; lock-unlink warning not checked here" >&2
	fi
fi

# ---- 0600 files and 0700 directories whatever the umask ----
for um in 000 277; do
	(umask $um && "$FAUCET_BIN" state put --state file:um$um/deep p::a 1 >/dev/null 2>&1 &&
		"$FAUCET_BIN" state put --state file:um$um/deep p::a 2 --if-equals 1 >/dev/null 2>&1 &&
		"$FAUCET_BIN" --state file:um$um/enc --encryption-key-env K1 state put p::a 1 >/dev/null 2>&1)
	modes=$(find um$um -exec stat -c '%n %a' {} + | sort)
	# Every directory 700, every file (values, locks, the marker) 600.
	bad=$(find um$um \( -type d ! -perm 700 \) -o \( -type f ! -perm 600 \))
	if [ -n "$modes" ] && [ -z "$bad" ]; then pass; else fail "modes under umask $um: $modes"; fi
	if [ -f "um$um/deep/p%3A%3Aa.json.lock" ] && [ -f "um$um/enc/.faucet-encrypted" ]; then
		pass
	else
		fail "umask $um: the lock file and the marker are checked too: $modes"
	fi
done

finish
