#!/usr/bin/env bash
# Every command, subcommand and flag the parser accepts (read from the
# parser's own tables in src/cli) is in every reference text: --help, the
# bash, zsh and fish completion scripts, and the man page doc/faucet.1.
# A flag added to a parser and forgotten in any of them fails here.
set -u
. "$(dirname "$0")/lib.sh"

if [ -z "${FAUCET_SOURCE_DIR:-}" ]; then
	echo "FAUCET_SOURCE_DIR must point at the source tree" >&2
	exit 1
fi
checker="$FAUCET_SOURCE_DIR/tests/cli/reference_texts.py"

# The checker itself can fail: a man page without one flag is caught.
mkdir -p fake/src fake/doc fake/tests/cli
cp -r "$FAUCET_SOURCE_DIR/src/cli" fake/src/
sed 's/repair/rep-air/g' "$FAUCET_SOURCE_DIR/doc/faucet.1" > fake/doc/faucet.1
if python3 "$checker" "$FAUCET_BIN" fake > fake.out 2>&1; then
	fail "the checker missed a flag absent from the man page"
fi
expect_file_contains() { if grep -q -- "$2" "$1"; then pass; else fail "$1 lacks '$2'"; fi; }
expect_file_contains fake.out "doc/faucet.1 lacks --repair"

# The real tree: nothing missing.
if ! python3 "$checker" "$FAUCET_BIN" "$FAUCET_SOURCE_DIR" > real.out 2>&1; then
	cat real.out >&2
	fail "a reference text lacks a command or flag (above)"
else
	pass
fi
expect_file_contains real.out " 0 omissions"
finish
