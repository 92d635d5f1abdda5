#!/usr/bin/env bash
# bench_singer.sh - what `faucet run --singer` costs on a tap's output.
#
# Usage: bench/bench_singer.sh [BUILD_DIR] [MEGABYTES]   (defaults: build, 200)
#
# Writes MEGABYTES of Singer RECORD lines (the shape singer-python prints,
# a STATE every 50,000 records) to BUILD_DIR/bench-data, then times, five
# times each, alternating, and prints the medians:
#
#   cat FILE > /dev/null                          the file read and dropped
#   cat FILE | cat > /dev/null                    the same through one pipe
#   faucet run --singer -- cat FILE > /dev/null   faucet in the place of the
#                                                 second cat: every line
#                                                 classified, RECORDs passed
#                                                 through, STATEs stored
#
# CPU is user + system time of everything the command ran.  The target is
# faucet's CPU at most 1.1x cat's.  Against `cat FILE > /dev/null` the
# ratio cannot reach that: faucet reads the command's output from a pipe,
# which costs a copy into the pipe and one out of it that cat alone does
# not make, so the same pipe with a second cat at its end is printed as the
# floor too, with the ratio to it.  The output is checked: every byte but
# the STATE lines, and the last STATE stored as the bookmark.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
mb=${2:-200}
faucet="$build/faucet"
[ -x "$faucet" ] || { echo "bench_singer: no faucet binary at $faucet" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench_singer: python3 writes the input" >&2; exit 1; }
data="$build/bench-data/singer"
rm -rf "$data"
mkdir -p "$data"
trap 'rm -rf "$data"' EXIT
lines="$data/records.jsonl"

# The input, and the number of bytes that must come out (all but STATEs).
expect=$(python3 - "$lines" "$mb" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
limit, total, kept, n = mb << 20, 0, 0, 0
with open(path, "w") as f:
    while total < limit:
        n += 1
        line = ('{"type": "RECORD", "stream": "events", "record": {"id": %d, "name": "user %d", '
                '"email": "user%d@example.com", "created_at": "2024-01-01T00:00:00Z", '
                '"score": %d.5, "tags": ["a", "b"]}, "time_extracted": '
                '"2024-01-01T00:00:00.000000Z"}\n' % (n, n, n, n % 100))
        f.write(line)
        total += len(line)
        kept += len(line)
        if n % 50000 == 0:
            state = '{"type": "STATE", "value": {"bookmarks": {"events": {"id": %d}}}}\n' % n
            f.write(state)
            total += len(state)
    state = '{"type": "STATE", "value": {"bookmarks": {"events": {"id": %d}}}}\n' % n
    f.write(state)
print(kept, n)
PY
)
read -r want_bytes records <<<"$expect"
size=$(stat -c %s "$lines")

cat "$lines" > /dev/null # into the page cache

# measure NAME CMD...: run CMD with stdout to /dev/null; append "wall cpu".
TIMEFORMAT='%R %U %S'
measure() {
	local name=$1 t
	shift
	t=$( { time "$@" > /dev/null 2>> "$data/stderr"; } 2>&1 )
	read -r wall user sys <<<"$t"
	awk -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN { printf "%s %.3f\n", w, u + s }' >> "$data/$name"
}
cat_pipe() { cat "$lines" | cat; }
state="file:$data/state"
for _ in 1 2 3 4 5; do
	measure cat cat "$lines"
	measure pipe cat_pipe
	measure faucet "$faucet" --state "$state" run --singer --pipeline bench -- cat "$lines"
done

# The output, once more, to check it.
"$faucet" --state "$state" run --singer --pipeline bench -- cat "$lines" 2>> "$data/stderr" |
	wc -c > "$data/out.bytes"
got_bytes=$(cat "$data/out.bytes")
bookmark=$("$faucet" --state "$state" state get bench::default)
if [ "$got_bytes" != "$want_bytes" ] ||
   [ "$bookmark" != "{\"bookmarks\":{\"events\":{\"id\":$records}}}" ]; then
	echo "bench_singer: wrong output: $got_bytes bytes (want $want_bytes), bookmark $bookmark" >&2
	exit 1
fi

median() { # median FILE COLUMN
	cut -d' ' -f"$2" "$1" | sort -g | sed -n 3p
}
cw=$(median "$data/cat" 1) cc=$(median "$data/cat" 2)
pw=$(median "$data/pipe" 1) pc=$(median "$data/pipe" 2)
fw=$(median "$data/faucet" 1) fc=$(median "$data/faucet" 2)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf 'singer: input %d MiB, %d RECORD lines, a STATE every 50,000 (output checked)\n' \
	$((size >> 20)) "$records"
printf 'singer: cat FILE > /dev/null                          wall %6.3f s  CPU %6.3f s\n' "$cw" "$cc"
printf 'singer: cat FILE | cat > /dev/null                    wall %6.3f s  CPU %6.3f s\n' "$pw" "$pc"
printf 'singer: faucet run --singer -- cat FILE > /dev/null   wall %6.3f s  CPU %6.3f s  (%.0f MB/s)\n' \
	"$fw" "$fc" "$(awk -v s="$size" -v w="$fw" 'BEGIN { print s / w / 1000000 }')"
printf 'singer: CPU ratio vs cat > /dev/null %sx, vs cat | cat %sx (target <= 1.1x); wall vs cat | cat %sx\n' \
	"$(ratio "$fc" "$cc")" "$(ratio "$fc" "$pc")" "$(ratio "$fw" "$pw")"
