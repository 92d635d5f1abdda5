#!/usr/bin/env bash
# The completion scripts know the state operations of issue 23: state move,
# copy --to-pipeline/--row-map, --tenant, export/import --format meltano
# (--row, --pipeline, --merge-partial), list --prefix; and keys are still
# completed from the store (now asked with `state list --prefix=`, since
# `state list P` means pipeline P).
. "$(dirname "$0")/lib.sh"

run state put --state file:ks orders::default 1
run state put --state file:ks orders_archive::x 2
mkdir -p bin && ln -sf "$FAUCET_BIN" bin/faucet

run completion bash
printf '%s\n' "$OUT" > faucet.bash
complete_line() { # complete_line LINE: COMPREPLY, one a line
	PATH="$PWD/bin:$PATH" bash -c '. ./faucet.bash; COMP_LINE=$1; COMP_POINT=${#1}; _faucet; printf "%s\n" "${COMPREPLY[@]}"' _ "$1"
}
check() { # check LINE EXPECTED
	local got
	got=$(complete_line "$1")
	if [ "$got" = "$2" ]; then pass; else fail "bash: '$1' -> '$got', expected '$2'"; fi
}
check 'faucet state mo' move
check 'faucet state copy p --to-p' --to-pipeline
check 'faucet state copy p --row-' --row-map
check 'faucet state move p q --row-' --row-map
check 'faucet state import --merge' --merge-partial
check 'faucet state export --form' --format
check 'faucet state export --format m' meltano
check 'faucet state list --prefi' --prefix
check 'faucet state runs p --ten' --tenant
check 'faucet state undo p --ten' --tenant
check 'faucet --state file:ks state get orders' "$(printf 'orders::default\norders_archive::x')"

run completion zsh
for flag in move --to-pipeline --row-map --merge-partial --format --prefix "list --prefix="; do
	expect_out_contains "$flag" "zsh: $flag"
done
if command -v zsh >/dev/null; then
	printf '%s\n' "$OUT" > _faucet
	if zsh -n _faucet; then pass; else fail "the zsh script parses"; fi
else
	fail "zsh is not installed (scripts/install-deps.sh installs it)"
fi

run completion fish
printf '%s\n' "$OUT" > faucet.fish
if command -v fish >/dev/null; then
	fish_complete() { PATH="$PWD/bin:$PATH" fish -c "source faucet.fish; complete -C'$1'" 2>&1 | cut -f1; }
	got=$(fish_complete 'faucet state mo')
	case "$got" in *move*) pass ;; *) fail "fish: state move: $got" ;; esac
	got=$(fish_complete 'faucet state copy p --to-p')
	case "$got" in *--to-pipeline*) pass ;; *) fail "fish: --to-pipeline: $got" ;; esac
	got=$(fish_complete 'faucet state import --merge')
	case "$got" in *--merge-partial*) pass ;; *) fail "fish: --merge-partial: $got" ;; esac
	got=$(fish_complete 'faucet --state file:ks state get orders')
	if [ "$got" = "$(printf 'orders::default\norders_archive::x')" ]; then pass; else fail "fish: keys: $got"; fi
else
	fail "fish is not installed (scripts/install-deps.sh installs it)"
fi

finish
