#!/bin/bash
# test_state_ops_completion.sh - the completion scripts and help texts know
# state merge/clear, lock break --pipeline/--row and -q/--quiet.
. "$(dirname "$0")/lib.sh"

run completion bash
printf '%s\n' "$OUT" > faucet.bash
mkdir -p bin && ln -sf "$FAUCET_BIN" bin/faucet
complete_line() { # complete_line LINE: COMPREPLY, one a line
	PATH="$PWD/bin:$PATH" bash -c '. ./faucet.bash; COMP_LINE=$1; COMP_POINT=${#1}; _faucet; printf "%s\n" "${COMPREPLY[@]}"' _ "$1"
}
check() { # check LINE WANT
	local got
	got=$(complete_line "$1")
	if [ "$got" = "$2" ]; then pass; else fail "bash: '$1' completes to '$got', want '$2'"; fi
}
check 'faucet state mer' merge
check 'faucet state cle' clear
check 'faucet state pip' pipelines
check 'faucet state merge k {} --dr' --dry-run
check 'faucet state clear p --ye' --yes
check 'faucet state clear p --te' --tenant
check 'faucet lock break --pip' --pipeline
check 'faucet --qu' --quiet
run state put --state file:ks orders::eu 1
check 'faucet --state file:ks state merge ord' 'orders::eu'

run completion zsh
for w in "merge clear" "(--if-equals --dry-run)" "(--row --tenant --yes --dry-run)" "--quiet" \
	"(--if-holder --pipeline --row)"; do
	expect_out_contains "$w" "zsh: $w"
done
if command -v fish >/dev/null; then
	run completion fish
	printf '%s\n' "$OUT" > faucet.fish
	got=$(fish -c "source faucet.fish; complete -C'faucet state cl'" 2>&1 | cut -f1)
	if [ "$got" = clear ]; then pass; else fail "fish: state clear: $got"; fi
	got=$(fish -c "source faucet.fish; complete -C'faucet lock break --pi'" 2>&1 | cut -f1)
	if [ "$got" = --pipeline ]; then pass; else fail "fish: lock break --pipeline: $got"; fi
	got=$(fish -c "source faucet.fish; complete -C'faucet state clear p --y'" 2>&1 | cut -f1)
	if [ "$got" = --yes ]; then pass; else fail "fish: state clear --yes: $got"; fi
else
	fail "fish is not installed (scripts/install-deps.sh installs it)"
fi

# --help of each new command and flag.
run state --help
expect_out_contains "merge KEY JSON" "state --help lists merge"
expect_out_contains "clear PIPELINE" "state --help lists clear"
expect_out_contains "pipelines" "state --help lists pipelines"
run state merge --help
expect_out_contains "RFC 7396" "state merge --help"
run state clear --help
expect_out_contains "--yes" "state clear --help"
run lock --help
expect_out_contains "--pipeline P" "lock --help: --pipeline"
run --help
expect_out_contains "-q, --quiet" "faucet --help: -q"
if [ -n "${FAUCET_SOURCE_DIR:-}" ] && command -v groff >/dev/null; then
	for entry in "state merge" "state clear" "state pipelines" "quiet"; do
		if groff -man -Tutf8 "$FAUCET_SOURCE_DIR/doc/faucet.1" 2>/dev/null | sed "s/.\x08//g" | grep -q -- "$entry"; then
			pass
		else
			fail "the man page documents '$entry'"
		fi
	done
fi

finish
