#!/usr/bin/env bash
# mutate.sh - prove the durability tests can fail: break each line that keeps
# the durability promise, one at a time, and check that a test goes red.
#
#   scripts/mutate.sh            every mutant; prints "N killed, M survived"
#   scripts/mutate.sh --list     only list the mutants
#   scripts/mutate.sh --only K   only the mutants whose kind starts with K (run-, skip-)
#
# The mutants:
#   - every fsync()/fdatasync()/syncfs() call in src/ (through the
#     system-call seam or direct) replaced by "0": the call is skipped and
#     reports success;
#   - the durable-write helper's sync of its temp file moved after the rename;
#   - every directory sync (the helpers that fsync a directory) skipped;
#   - SQLite opened with synchronous=OFF, and with synchronous=NORMAL;
#   - a guarded write's follow-up file (a CLI put's end) renamed before
#     the key instead of after it.
# Each is applied to a scratch copy of the tree, which is rebuilt (only what
# changed) and whose durability tests then run (ctest -L durability).  A
# mutant is killed when a test fails, and that test passes on the unmutated
# tree (checked once, at the end, for every test that killed); a mutant that
# does not build is an error of this script, not a kill.  Exit status: 0 when
# every mutant is killed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
list_only=0
only=
[ "${1:-}" = "--list" ] && list_only=1
if [ "${1:-}" = "--only" ]; then
  only=${2:-}
fi

# The functions whose only job is to fsync a directory; each call is a mutant.
dir_syncs='sync_root|sync_parent_of|sync_dir'

# Mutants of the run and undo machinery (doc/design.md §8.10), each breaking one
# line that keeps "undo never loses a write"; the contract suite's run tests
# and the randomized history checker (ctest label `runs`) must go red:
#   run-after-at-end     after-images read back from the store at the run's
#                        end instead of recorded as the run wrote them
#   run-later-one-scope  undo's later-run check limited to the pipeline-level
#                        scope (an invocation's later writes go unseen)
#   run-undo-no-lease    undo without the pipeline lease
#   run-status-no-cas    the status document written with a plain put
#   run-after-not-ahead  a CLI write's (unleased run's) after-image left to
#                        the run's end instead of going with the marker write
#                        that records its before-image (a killed write then
#                        has none, and undo restores over a later put)
#   run-no-read-again    an import's keys recorded a window ahead not read
#                        again before they are written (undo then restores
#                        over a put that landed in the window)
#   run-no-watchdog      `faucet run` starts no watchdog (a killed run's
#                        command dies by its parent-death signal, what the
#                        command started lives on)
#   run-first-put-blind  a run's first put of a key no longer conditional on
#                        the before-image it recorded (a put that landed
#                        after the read is overwritten unseen, undo loses it)
#   run-first-del-blind  the same for a run's first delete of a key
#   run-batch-del-blind  a run's batch delete (`state clear`) deletes each key
#                        plainly, not against the value its marker write read
#   run-batch-put-blind  a run's batch put (a small import's) writes plainly,
#                        not only while every key holds what its marker write
#                        read
#   run-batch-put-unsliced  a run's batch put bigger than the backend's
#                        compare-and-put batch written plainly, not in slices
#                        of it, each against what the marker write read
#   run-part-blind       an import chunk's marker part written first, then the
#                        chunk plainly, instead of both in one compare-and-put
#                        batch against the before-images the part records
#   run-part-guess-blind  an import chunk built as if its keys were absent
#                        (not read) written plainly, not only while every key
#                        is absent
#   run-joined-first-blind  a joined handle's (a `faucet run` command's)
#                        first write of a key no longer conditional on the
#                        before-image it recorded in the run's marker
#   run-parts-unread     a marker read without its parts (a big import's
#                        chunks after the first: undo would leave them)
#   run-undo-per-key     an undo's keys recorded one at a time with their
#                        writes (its marker rewritten once a key: O(N^2))
#   run-file-put-ungated a file store put no longer takes the writers' lock
#                        (it lands inside a compare-and-put batch, between
#                        its compare and its write, and is overwritten)
#   run-file-guarded-ungated  the same for a guarded put (a run's write with
#                        its marker)
#   run-file-batch-shared  the file store's compare-and-put batch takes the
#                        writers' lock shared, not exclusive
#   run-file-put-unlocked  a file store put of a key with a lock file no
#                        longer holds the key's lock (it lands between a
#                        compare-and-put's compare and its rename)
#   run-file-guarded-key-unlocked  the same for a guarded put without a
#                        condition (a run's later write of a key)
#   run-file-lock-made-shared  a key's lock file made in the writers' lock
#                        shared, not exclusive (a first compare of the key
#                        meets an unlocked put of it in flight)
#   run-file-batch-key-unlocked  a plain batch writes a key with a lock file
#                        without taking its lock
#   file-batch-first-not-alone  the file store's compare-and-put batch writes
#                        its first entry (a run's marker part) in the same
#                        group as the rest, not durably before them (a
#                        durability mutant: the power-loss test must kill it)
# The run mutants that change one line: kind, file, which occurrence of the
# line (first or last), the line's text (found with grep -F), and the
# regular expression in it replaced by the replacement - one row each, read
# both to find the line and to apply the mutant.
RUN_MUTANTS=$(cat <<'TABLE'
run-later-one-scope	src/run/undo.c	last	int rc = status_scopes(s, pipeline, &rows);	status_scopes\(s, pipeline, &rows\)	faucet__strarray_push(&rows, "")
run-undo-no-lease	src/run/undo.c	first	ro.exclusive = 1;	ro\.exclusive = 1;	ro.exclusive = 0;
run-status-no-cas	src/run/run.c	first	rc = faucet_store_compare_and_put(r->s, r->status_key, cur, next, &written);	faucet_store_compare_and_put\(r->s, r->status_key, cur, next, &written\)	((void)cur, written = 1, faucet_store_put(r->s, r->status_key, next))
run-after-not-ahead	src/run/run.c	first	!(q->after_ahead && added)	!\(q->after_ahead && added\)	1
run-no-read-again	src/run/run.c	first	if (rc == 0 && q->vals != NULL && (!r->joined || q->moved))	q->vals != NULL && \(!r->joined \|\| q->moved\)	q->vals != NULL && (!r->joined || q->moved) && 0
run-no-watchdog	src/cli/run.c	first	if (faucet_proc_spawn_watched(&po, &st->pid, &exec_errno, &st->watchdog) != 0 ||	faucet_proc_spawn_watched\(&po, &st->pid, &exec_errno, &st->watchdog\)	faucet_proc_spawn(&po, &st->pid, &exec_errno)
run-first-put-blind	src/run/run.c	first	kp->expected = first_write_expects(q, &kp->cond);	first_write_expects\(q, &kp->cond\);	first_write_expects(q, &kp->cond), kp->cond = 0;
run-first-del-blind	src/run/run.c	first	rc = faucet_store_compare_and_delete(r->s, key, expected, &deleted);	faucet_store_compare_and_delete\(r->s, key, expected, &deleted\)	(deleted = 1, faucet_store_delete(r->s, key))
run-batch-del-blind	src/run/run.c	first	rc = faucet_store_compare_and_delete(r->s, key, now, &deleted);	faucet_store_compare_and_delete\(r->s, key, now, &deleted\)	(deleted = 1, faucet_store_delete(r->s, key))
run-batch-put-blind	src/run/run.c	first	rc = faucet__store_compare_and_put_batch(r->s, g, n, &written);	faucet__store_compare_and_put_batch\(r->s, g, n, &written\)	(written = 1, faucet_store_put_batch(r->s, entries, n))
run-batch-put-unsliced	src/run/run.c	first	if (r != NULL && !r->joined && entries != NULL && batch_distinct(entries, count) &&	batch_distinct\(entries, count\) &&	batch_can_hold(r, entries, count, 0) &&
run-part-blind	src/run/run.c	first	rc = faucet__store_compare_and_put_batch(r->s, g, count + 1, landed);	faucet__store_compare_and_put_batch\(r->s, g, count \+ 1, landed\)	(*landed = 1, faucet_store_put(r->s, pk, pv) != 0 ? FAUCET_ERROR : faucet_store_put_batch(r->s, entries, count))
run-part-guess-blind	src/run/run.c	first	rc = faucet__store_compare_and_put_batch(r->s, g, count + 1, landed);	faucet__store_compare_and_put_batch\(r->s, g, count \+ 1, landed\)	(guess ? (*landed = 1, faucet_store_put(r->s, pk, pv) != 0 ? FAUCET_ERROR : faucet_store_put_batch(r->s, entries, count)) : faucet__store_compare_and_put_batch(r->s, g, count + 1, landed))
run-joined-first-blind	src/run/run.c	first	return q->todo == 1 ? !q->had_image : q->moved;	return q->todo == 1 \? !q->had_image : q->moved;	return 0;
run-parts-unread	src/run/docs.c	first	rc = faucet_store_get(s, pk, &pv);	rc = faucet_store_get\(s, pk, &pv\);	rc = 0, pv = NULL;
run-undo-per-key	src/run/undo.c	first	int rc = record_restores(u, steps, n, force), batched = !force;	record_restores\(u, steps, n, force\)	((void)record_restores, 0)
run-file-put-ungated	src/stores/file.c	first	int gate, rc = enter_shared(fs, 1, &gate);	int gate, rc = enter_shared\(fs, 1, &gate\);	int gate = -1, rc = 0;
run-file-guarded-ungated	src/stores/file.c	last	rc = enter_shared(fs, 1, &gate);	enter_shared\(fs, 1, &gate\)	((void)enter_shared, gate = -1, 0)
run-file-lock-made-shared	src/stores/file.c	first	rc = faucet_file__writers_enter(fs, &dfd, 1, 1, &gate);	faucet_file__writers_enter\(fs, &dfd, 1, 1, &gate\)	faucet_file__writers_enter(fs, &dfd, 1, 0, &gate)
run-file-batch-key-unlocked	src/stores/file_batch.c	first	while (to < count && !faucet_file__has_lock_file(dfd, entries[to].key))	!faucet_file__has_lock_file\(dfd, entries\[to\]\.key\)	((void)faucet_file__has_lock_file, 1)
run-file-batch-shared	src/stores/file_batch.c	first	rc = faucet_file__writers_enter(fs, &dfd, 1, 1, &gate);	faucet_file__writers_enter\(fs, &dfd, 1, 1, &gate\)	faucet_file__writers_enter(fs, &dfd, 1, 0, &gate)
run-file-put-unlocked	src/stores/file.c	first	rc = lock_if_managed(fs, key, &lock_fd);	rc = lock_if_managed\(fs, key, &lock_fd\);	rc = ((void)lock_if_managed, 0);
run-file-guarded-key-unlocked	src/stores/file.c	first	slots[nslots++].lock_fd = -1;	slots\[nslots\+\+\].lock_fd = -1;	slots[nslots].lock_fd = -1, nslots += cond != NULL;
file-batch-first-not-alone	src/stores/file_batch.c	first	size_t alone = 1;	size_t alone = 1;	size_t alone = 0;
TABLE
)
export RUN_MUTANTS

run_mutants() {
  # A line 0 (a pattern no longer in the source) fails when applied, so a
  # renamed line is an ERROR, never a mutant silently left out.
  local f kind file which text
  f=$(grep -n 'static int edit_final' src/run/run.c | cut -d: -f1) || true
  printf 'src/run/run.c\t%s\trun-after-at-end\n' "${f:-0}"
  while IFS=$'\t' read -r kind file which text _; do
    if [ "$which" = last ]; then
      f=$(grep -n -F -- "$text" "$file" | tail -1 | cut -d: -f1) || true
    else
      f=$(grep -n -F -- "$text" "$file" | head -1 | cut -d: -f1) || true
    fi
    printf '%s\t%s\t%s\n' "$file" "${f:-0}" "$kind"
  done <<<"$RUN_MUTANTS"
}

# Mutants as "file<TAB>line<TAB>kind"; the line is 1-based.
mutants() {
  # Calls of fsync/fdatasync (not their declarations, table entries or
  # comments): a "(" follows the name.
  grep -n -E '(->|\b)(f(data)?sync|syncfs)\(' -r src --include=*.c |
    grep -v -E '^\S+:[0-9]+:\s*(/\*|\*)' |
    grep -v -E 'static (int|ssize_t)' |
    awk -F: '{printf "%s\t%s\tskip-fsync\n", $1, $2}' || true
  # Calls of a helper that syncs a directory (sync_root, sync_parent_of, ...).
  grep -n -E "\\b($dir_syncs)\\(" -r src --include=*.c |
    grep -v -E '^\S+:[0-9]+:\s*(/\*|\*)' |
    grep -v -E '^\S+:[0-9]+:(static |int |void )' |
    awk -F: '{printf "%s\t%s\tskip-dir-sync\n", $1, $2}' || true
  # The temp file's sync moved after the rename (the durable-write helper).
  if grep -q -E 'renameat' src/common/durable.c 2>/dev/null; then
    printf 'src/common/durable.c\t0\tsync-after-rename\n'
  fi
  f=$(grep -n 'then->done = sys->renameat(t->dirfd, ttmp, t->dirfd, t->name) == 0;' src/common/durable.c | cut -d: -f1)
  [ -n "$f" ] && printf 'src/common/durable.c\t%s\tthen-before-key\n' "$f"
  grep -n -E 'synchronous *= *FULL' -r src --include=*.c |
    grep -v -E '^\S+:[0-9]+:\s*(/\*|\*)' |
    awk -F: '{printf "%s\t%s\tsqlite-sync-off\n%s\t%s\tsqlite-sync-normal\n", $1, $2, $1, $2}' || true
}

# Apply mutant (file, line, kind) to the tree under $1.
apply() {
  local tree=$1 file=$2 line=$3 kind=$4
  python3 - "$tree/$file" "$line" "$kind" "$dir_syncs" <<'PY'
import re, sys
path, line, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
src = open(path).read().split('\n')
def sub_line(pattern, repl):
    new, n = re.subn(pattern, repl, src[line - 1], count=1)
    if n == 0:
        sys.exit("mutate: no match at %s:%d" % (path, line))
    src[line - 1] = new
def skipped(m):
    # The call becomes "success" while its arguments stay used, so the
    # mutant still compiles under -Werror (no unused parameter).
    args = [a.strip() for a in m.group('args').split(',') if a.strip()]
    if kind == 'skip-dir-sync':
        args.insert(0, m.group(1))  # the helper stays referenced, not "unused"
    return '(' + ''.join('(void)(%s), ' % a for a in args) + '0)'
ARGS = r'\((?P<args>[^()]*(\([^()]*\))?[^()]*)\)'
import os
# The one-line run mutants: kind -> (regular expression, replacement).
TABLE = {row[0]: (row[4], row[5]) for row in
         (r.split('\t') for r in os.environ.get('RUN_MUTANTS', '').split('\n') if r)}
if kind == 'skip-fsync':
    # The call with its receiver: faucet__sys()->fsync(fd), sys->fsync(fd), fsync(fd).
    sub_line(r'([A-Za-z_]\w*(\(\))?\s*->\s*|\b)(f(data)?sync|syncfs)' + ARGS, skipped)
elif kind == 'skip-dir-sync':
    sub_line(r'\b(' + sys.argv[4] + r')' + ARGS, skipped)
elif kind == 'sqlite-sync-off':
    sub_line(r'synchronous *= *FULL', 'synchronous=OFF')
elif kind == 'sqlite-sync-normal':
    sub_line(r'synchronous *= *FULL', 'synchronous=NORMAL')
elif kind == 'run-after-at-end':
    # Insert, at the top of edit_final's body, a read-back of every key.
    for i in range(line - 1, len(src)):
        if src[i].strip() == '*changed = 0;':
            src[i] += ('\n\tfor (size_t k = 0; k < m->count; k++) {\n'
                       '\t\tfaucet_value *now = NULL;\n'
                       '\t\tif (faucet_store_get(r->s, m->items[k].key, &now) != 0)\n'
                       '\t\t\treturn faucet_error_last()->code;\n'
                       '\t\tfaucet_value_free(m->items[k].after);\n'
                       '\t\tm->items[k].after = now;\n'
                       '\t\tm->items[k].after_known = 1;\n'
                       '\t}\n\t*changed = 1;\n\treturn 0;')
            break
    else:
        sys.exit("mutate: no edit_final body at %s:%d" % (path, line))
elif kind in TABLE:
    sub_line(*TABLE[kind])
elif kind == 'then-before-key':
    # The follow-up's rename moved above the key's.
    moved = src.pop(line - 1)
    for i in range(line - 2, -1, -1):
        if 'sys->renameat(last->dirfd, tmp, last->dirfd, last->name)' in src[i]:
            src.insert(i, moved)
            break
    else:
        sys.exit("mutate: no key rename before %s:%d" % (path, line))
elif kind == 'sync-after-rename':
    # Take out the first statement that fsyncs the temp file's descriptor
    # (fd), and sync fd instead just after the first rename that follows it
    # (a failure of that sync reported as before, as a failed write).
    text = '\n'.join(src)
    m_sync = re.search(r'\n([^\n]*->fsync\(fd\)[^\n]*\n(?:[^\n]*\n)*?[^\n]*\}\n)', text)
    m_ren = m_sync and re.compile(r'\n([^\n]*->renameat\([^\n]*\n(?:[^\n]*\n)*?[^\n]*\}\n)').search(text, m_sync.end())
    if not m_sync or not m_ren:
        sys.exit("mutate: cannot find fsync-then-rename in %s" % path)
    sync_block, ren_block = m_sync.group(1), m_ren.group(1)
    late_sync = ('\tif (sys->fsync(fd) != 0) {\n\t\t(void)sys->close(fd);\n'
                 '\t\treturn faucet__error_os(FAUCET_EIO, errno, "failed to fsync temp");\n\t}\n')
    text = text.replace(ren_block, ren_block + late_sync, 1)
    text = text.replace(sync_block, '', 1)
    src = text.split('\n')
open(path, 'w').write('\n'.join(src))
PY
}

mapfile -t all < <({ mutants; run_mutants; } | awk -F'\t' -v k="$only" 'index($3, k) == 1')
if [ "$list_only" = 1 ]; then
  printf '%s\n' "${all[@]}"
  exit 0
fi

scratch=$(mktemp -d /tmp/faucet-mutate.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
git ls-files -z | (cd "$top" && xargs -0 cp --parents -t "$scratch")
build="$scratch/build"
cmake -S "$scratch" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAUCET_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

# A kill means something only when the test that made it passes on the
# unmutated tree.  Each kill's tests are noted in $scratch/all-killers and
# run once, unmutated, at the end (fewer tests than the whole labels, which a
# survivor never needs: it passed them mutated).
: >"$scratch/all-killers"

# The tests that must kill a mutant of this kind.
label_of() {
  case $1 in
    run-*) echo runs ;;
    *) echo durability ;;
  esac
}

# Whether the tests kill the mutant now built, the failing tests' names in
# $scratch/killers.  A run mutant breaks the run module, which sits above
# every backend, so the contract suite on the in-memory and SQLite stores
# (seconds) is tried first; only a mutant those do not kill runs the whole
# label set (the contract suite on every backend: minutes), which alone
# can call it a survivor.  ctest stops at the first failing test.
mutant_killed() {
  local kind=$1 b
  : >"$scratch/killers"
  # A file store mutant: its own tests first (seconds; the contract suite
  # on memory and SQLite never touches the file store).
  if [ "${kind#run-file-}" != "$kind" ]; then
    if ! (cd "$build" && ./tests/test_file_store >"$scratch/test.log" 2>&1) 2>/dev/null; then
      echo "test_file_store" >"$scratch/killers"
      return 0
    fi
  fi
  if [ "${kind#run-}" != "$kind" ]; then
    for b in memory sqlite; do
      if ! (cd "$build" && ./tests/test_contract "$b" >"$scratch/test.log" 2>&1); then
        echo "test_contract($b)" >"$scratch/killers"
        return 0
      fi
    done
    # Then the history checker on the file store (seconds), before the
    # contract suite on every server backend.
    if ! (cd "$build" && ctest -R '^history_file$' >"$scratch/test.log" 2>&1); then
      echo "history_file" >"$scratch/killers"
      return 0
    fi
  fi
  if (cd "$build" && ctest -L "$(label_of "$kind")" -j"$(nproc)" --stop-on-failure \
      >"$scratch/test.log" 2>&1); then
    return 1
  fi
  grep -E '^\s+[0-9]+ - ' "$scratch/test.log" | awk '{print $3}' | paste -sd, - >"$scratch/killers"
  return 0
}

killed=0 survived=0 broken=0
# A cmocka test binary stops at its first failure (abort): a killed
# mutant then costs a fraction of a second, not the whole binary's run
# (test_durability's power-loss images take over a minute).
export CMOCKA_TEST_ABORT=1
for m in "${all[@]}"; do
  IFS=$'\t' read -r file line kind <<<"$m"
  cp "$top/$file" "$scratch/$file"
  if ! apply "$scratch" "$file" "$line" "$kind" 2>"$scratch/apply.log"; then
    echo "ERROR     $kind $file:$line ($(cat "$scratch/apply.log"))"
    broken=$((broken + 1))
    continue
  fi
  if ! cmake --build "$build" -j"$(nproc)" >"$scratch/build.log" 2>&1; then
    echo "ERROR     $kind $file:$line (does not build: $(grep -m1 -E 'error|Error' "$scratch/build.log"))"
    broken=$((broken + 1))
  elif ! mutant_killed "$kind"; then
    echo "SURVIVED  $kind $file:$line"
    survived=$((survived + 1))
  else
    echo "killed    $kind $file:$line (by $(cat "$scratch/killers"))"
    tr ',' '\n' <"$scratch/killers" >>"$scratch/all-killers"
    killed=$((killed + 1))
  fi
  cp "$top/$file" "$scratch/$file"
done
if ! cmake --build "$build" -j"$(nproc)" >"$scratch/build.log" 2>&1; then
  cat "$scratch/build.log" >&2
  echo "mutate: the unmutated tree does not build" >&2
  exit 1
fi

unset CMOCKA_TEST_ABORT
# Every test that killed a mutant must pass on the unmutated tree.
baseline_bad=0
while read -r t; do
  case $t in
    '') continue ;;
    'test_contract('*')')
      b=${t#test_contract(}; b=${b%)}
      ok=0; (cd "$build" && ./tests/test_contract "$b" >"$scratch/base.log" 2>&1) && ok=1 ;;
    *)
      ok=0; (cd "$build" && ctest -R "^$t\$" --output-on-failure >"$scratch/base.log" 2>&1) && ok=1 ;;
  esac
  if [ "$ok" = 1 ]; then
    echo "baseline  $t passes unmutated"
  else
    cat "$scratch/base.log" >&2
    echo "mutate: $t fails without any mutation, so its kills mean nothing" >&2
    baseline_bad=1
  fi
done < <(sort -u "$scratch/all-killers")

echo "$killed killed, $survived survived${broken:+, $broken not applied}"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ] && [ "$baseline_bad" -eq 0 ]
