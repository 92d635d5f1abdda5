#!/usr/bin/env bash
# mutate.sh - prove the durability tests can fail: break each line that keeps
# the durability promise, one at a time, and check that a test goes red.
#
#   scripts/mutate.sh            every mutant; prints "N killed, M survived"
#   scripts/mutate.sh --list     only list the mutants
#
# The mutants:
#   - every fsync()/fdatasync()/syncfs() call in src/ (through the
#     system-call seam or direct) replaced by "0": the call is skipped and
#     reports success;
#   - the durable-write helper's sync of its temp file moved after the rename;
#   - every directory sync (the helpers that fsync a directory) skipped;
#   - SQLite opened with synchronous=OFF, and with synchronous=NORMAL.
# Each is applied to a scratch copy of the tree, which is rebuilt (only what
# changed) and whose durability tests then run (ctest -L durability).  A
# mutant is killed when a test fails; a mutant that does not build is an
# error of this script, not a kill.  Exit status: 0 when every mutant is
# killed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
list_only=0
[ "${1:-}" = "--list" ] && list_only=1

# The functions whose only job is to fsync a directory; each call is a mutant.
dir_syncs='sync_root|sync_parent_of|sync_dir'

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
if kind == 'skip-fsync':
    # The call with its receiver: faucet__sys()->fsync(fd), sys->fsync(fd), fsync(fd).
    sub_line(r'([A-Za-z_]\w*(\(\))?\s*->\s*|\b)(f(data)?sync|syncfs)' + ARGS, skipped)
elif kind == 'skip-dir-sync':
    sub_line(r'\b(' + sys.argv[4] + r')' + ARGS, skipped)
elif kind == 'sqlite-sync-off':
    sub_line(r'synchronous *= *FULL', 'synchronous=OFF')
elif kind == 'sqlite-sync-normal':
    sub_line(r'synchronous *= *FULL', 'synchronous=NORMAL')
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

mapfile -t all < <(mutants)
if [ "$list_only" = 1 ]; then
  printf '%s\n' "${all[@]}"
  exit 0
fi

scratch=$(mktemp -d /tmp/faucet-mutate.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
git ls-files -z | (cd "$top" && xargs -0 cp --parents -t "$scratch")
build="$scratch/build"
cmake -S "$scratch" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

# The unmutated tree must pass, or no kill means anything.
if ! (cd "$build" && ctest -L durability --output-on-failure >"$scratch/base.log" 2>&1); then
  cat "$scratch/base.log" >&2
  echo "mutate: the durability tests fail without any mutation" >&2
  exit 1
fi

killed=0 survived=0 broken=0
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
  elif (cd "$build" && ctest -L durability >"$scratch/test.log" 2>&1); then
    echo "SURVIVED  $kind $file:$line"
    survived=$((survived + 1))
  else
    failed=$(grep -E '^\s+[0-9]+ - ' "$scratch/test.log" | awk '{print $3}' | paste -sd, -)
    echo "killed    $kind $file:$line (by $failed)"
    killed=$((killed + 1))
  fi
  cp "$top/$file" "$scratch/$file"
done
cmake --build "$build" -j"$(nproc)" >/dev/null 2>&1 || true

echo "$killed killed, $survived survived${broken:+, $broken not applied}"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
