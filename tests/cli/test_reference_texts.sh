#!/usr/bin/env bash
# The texts are generated from src/cli/reference.c; this checks what the
# generation cannot: every command, subcommand and flag the parser accepts (read from the
# parser's own tables in src/cli) is in every reference text: --help, the
# bash, zsh and fish completion scripts, and the man page doc/faucet.1.
# A flag added to a parser and forgotten in any of them fails here.  Each
# command's --help starts with its row's synopsis, names its row's flags,
# and its prose is the man page's; no help is written by hand.
set -u
. "$(dirname "$0")/lib.sh"

if [ -z "${FAUCET_SOURCE_DIR:-}" ]; then
	echo "FAUCET_SOURCE_DIR must point at the source tree" >&2
	exit 1
fi
checker="$FAUCET_SOURCE_DIR/tests/cli/reference_texts.py"

# The checker itself can fail: a man page without one flag, or whose prose
# of a command is not its --help's, and a help written by hand are caught.
mkdir -p fake/src fake/doc fake/tests/cli
cp -r "$FAUCET_SOURCE_DIR/src/cli" fake/src/
sed -e 's/repair/rep-air/g' -e 's/An absent key is not an error/An absent key is an error/' \
	"$FAUCET_SOURCE_DIR/doc/faucet.1" > fake/doc/faucet.1
printf 'static const char x_help[] = "usage: faucet state x\\n";\n' >> fake/src/cli/state.c
if python3 "$checker" "$FAUCET_BIN" fake > fake.out 2>&1; then
	fail "the checker missed a flag absent from the man page"
fi
expect_file_contains() { if grep -q -- "$2" "$1"; then pass; else fail "$1 lacks '$2'"; fi; }
expect_file_contains fake.out "doc/faucet.1 lacks --repair"
expect_file_contains fake.out "doc/faucet.1 lacks the prose of 'state delete'"
expect_file_contains fake.out "src/cli/state.c:[0-9]*: a hand-written help"

# ... and each command's own --help is checked, not only all of them
# together: a faucet whose `state put --help` lacks --if-absent (which
# `state --help` still names) and whose `state get --help` lacks its
# synopsis is caught.
cat > fake-faucet <<EOF
#!/usr/bin/env bash
case "\$*" in
"state put --help") "$FAUCET_BIN" "\$@" | sed 's/--if-absent/--if-ab-sent/' ;;
"state get --help") "$FAUCET_BIN" "\$@" | sed 's/^usage: faucet state get KEY/usage: faucet state get/' ;;
*) exec "$FAUCET_BIN" "\$@" ;;
esac
EOF
chmod +x fake-faucet
if python3 "$checker" ./fake-faucet "$FAUCET_SOURCE_DIR" > fake2.out 2>&1; then
	fail "the checker missed a flag absent from one command's --help"
fi
expect_file_contains fake2.out "'faucet state put --help' lacks --if-absent"
expect_file_contains fake2.out "'faucet state get --help' does not start with 'usage: faucet state get KEY'"

# The real tree: nothing missing.
if ! python3 "$checker" "$FAUCET_BIN" "$FAUCET_SOURCE_DIR" > real.out 2>&1; then
	cat real.out >&2
	fail "a reference text lacks a command or flag (above)"
else
	pass
fi
expect_file_contains real.out " 0 omissions"

# The man page is generated from the table (faucet help --man): the
# committed doc/faucet.1 is exactly what the table gives.
"$FAUCET_BIN" help --man > man.1 || fail "faucet help --man failed"
if cmp -s man.1 "$FAUCET_SOURCE_DIR/doc/faucet.1"; then
	pass
else
	diff -u "$FAUCET_SOURCE_DIR/doc/faucet.1" man.1 | head -20 >&2
	fail "doc/faucet.1 differs from 'faucet help --man' (run: build/faucet help --man > doc/faucet.1)"
fi

# Every flag of the table is accepted by its command's parser: `faucet
# CMD [WITH] --FLAG [VALUE] --help` never says "unknown option" (a value
# may be refused: it is checked before --help is seen).
"$FAUCET_BIN" help --reference > table.txt || fail "faucet help --reference failed"
n=0
while IFS=$'\t' read -r kind cmd flag arg with; do
	[ "$kind" = flag ] || continue
	value=()
	[ "$with" = - ] && with=""
	case $arg in
	-) ;;
	=) flag="$flag=1s" ;;
	*) value=(x) ;;
	esac
	# shellcheck disable=SC2086
	"$FAUCET_BIN" $cmd $with "$flag" "${value[@]}" --help > /dev/null 2> flag.err
	if grep -q "unknown option" flag.err; then
		fail "the table gives '$cmd' $flag, which its parser refuses: $(head -1 flag.err)"
	fi
	n=$((n + 1))
done < table.txt
if [ "$n" -gt 60 ]; then pass; else fail "only $n flags in the table"; fi

# ... and every --help checks its parser against its row: a row without
# a flag its parser takes is an internal error.  Each command's --help:
# (cut, not read: read would join the empty name of faucet's own row with
# the synopsis after it.)
while IFS= read -r line; do
	[ "${line%%$'\t'*}" = command ] || continue
	cmd=$(printf '%s\n' "$line" | cut -f2)
	# shellcheck disable=SC2086
	if ! "$FAUCET_BIN" $cmd --help > /dev/null 2> help.err || [ -s help.err ]; then
		fail "faucet $cmd --help: $(head -1 help.err)"
	fi
done < table.txt
pass
finish
