#!/usr/bin/env bash
# Errors that suggest the fix, help that documents the store, -c and the
# YAML's name, completion scripts, the man page, `version`/-V, and the
# encryption-key options (--previous-key-env, the short-key warning).
. "$(dirname "$0")/lib.sh"

# ---- did you mean ----
run stat list
expect_rc 2 "an unknown command"
expect_err_contains "unknown command 'stat' (did you mean 'state'?)" "names the nearest command"
run --json
expect_rc 2 "--json without a command"
expect_json 'd["error"]["code"] == "invalid" and "no command given" in d["error"]["message"]' \
	"--json without a command prints its error object"
run
expect_rc 2 "no command"
expect_err_contains "usage: faucet" "no command prints the usage"
run state lsit
expect_rc 2 "an unknown subcommand"
expect_err_contains "unknown subcommand 'lsit' (did you mean 'list'?)" "names the nearest subcommand"
run backfill --pipeline p --from 2026-01-01 --to 2026-01-02 --windw 1d -- true
expect_rc 2 "an unknown flag"
expect_err_contains "unknown option '--windw' (did you mean --window?)" "names the nearest flag"
run backfill statsu --pipeline p
expect_rc 2 "a mistyped backfill subcommand"
expect_err_contains "(did you mean 'status'?)" "names backfill status"
run state list --jsn
expect_err_contains "(did you mean --json?)" "global flags are candidates too"
run state list --zzzzzz
expect_err_lacks "did you mean" "no suggestion when nothing is near"
run frobnicate
expect_err_lacks "did you mean" "no suggestion for an unrelated word"

# ---- a bare path given as a store ----
run state list --state ./mystore
expect_rc 2 "a bare path to --state"
expect_one_error_line "a bare path"
expect_err_contains "did you mean file:./mystore (a directory of JSON files) or sqlite:./mystore" "suggests file: and sqlite:"
FAUCET_STATE=mystore run state list
expect_rc 2 "a bare path in FAUCET_STATE"
expect_err_contains "FAUCET_STATE 'mystore' is not a store URL" "names FAUCET_STATE"

# ---- a sealed store read without a key ----
export UX_KEY=ux-test-key-long-enough-1
run state put --state file:sealed --encryption-key-env UX_KEY p::k '{"a":1}'
expect_rc 0 "a sealed write"
run state get --state file:sealed p::k
expect_rc 1 "a sealed read without a key"
expect_err_contains "--encryption-key-env VAR" "the no-key error names --encryption-key-env"

# ---- an invalid key says what a key may be ----
run state get 'bad key'
expect_rc 2 "an invalid key"
expect_one_error_line "an invalid key"
expect_err_contains "a key is 1 to 256 bytes of A-Z a-z 0-9 _ . : / -" "lists the allowed characters"
expect_err_contains "does not begin with '.'" "and shapes"

# ---- state show: a pipeline with no keys, a name with :: ----
run state put --state file:s orders::default '{"c":1}'
run state show --state file:s nobody
expect_rc 0 "show of a pipeline with no keys"
expect_out "" "prints no rows"
expect_err_contains "pipeline 'nobody' has no keys" "says so"
run state show --state file:s orders::default
expect_rc 2 "show of a name with ::"
expect_one_error_line "a name with ::"
expect_err_contains "contains '::'" "says why"

# ---- -c: a state block is required, and name: is the default pipeline ----
cat > c.yaml <<'YAML'
name: orders
state: {type: file, config: {path: s}}
YAML
run state show -c c.yaml
expect_rc 0 "show with -c and no PIPELINE"
expect_out_contains "orders::default" "the YAML's name is the pipeline"
cat > unnamed.yaml <<'YAML'
state: {type: file, config: {path: s}}
YAML
run state show -c unnamed.yaml
expect_rc 2 "show with a config without name"
expect_err_contains "has no name:" "says the config has no name"
run state show --state file:s
expect_rc 2 "show without PIPELINE or config"
cat > nostate.yaml <<'YAML'
name: orders
YAML
run state list -c nostate.yaml
expect_rc 2 "-c without a state: block"
expect_err_contains "has no state: block" "says so"
expect_no_file .faucet-state "and does not fall back to ./.faucet-state"
FAUCET_CONFIG=nostate.yaml run state list
expect_rc 2 "FAUCET_CONFIG without a state: block"

# ---- --help documents the store: YAML fields, URL parameters, defaults ----
for cmd in "" "state" "state list" "state show" "state put" "doctor" "backfill" "backfill status"; do
	# shellcheck disable=SC2086
	run $cmd --help
	expect_rc 0 "faucet $cmd --help"
	for needle in "table (default" "faucet_state" "ensure_table (default" "max_connections (default 5)" \
		"namespace (default faucet" "?namespace=NS" "?table=T&ensure_table=B&max_connections=N" \
		"{window, concurrency (default 1), timezone (default" "the default PIPELINE of state show" \
		"--previous-key-env VAR" "SHA-256 of its" "shorter than 16 bytes"; do
		expect_out_contains "$needle" "faucet $cmd --help: $needle"
	done
done

# ---- version ----
run version
expect_rc 0 "faucet version"
version_text=$OUT
run -V
expect_out "$version_text" "-V prints the version"
run --version
expect_out "$version_text" "--version prints the version"
case "$version_text" in "faucet "[0-9]*) pass ;; *) fail "version text: $version_text" ;; esac
run version --json
expect_json '"version" in d' "version --json"

# ---- completion ----
run completion bash
expect_rc 0 "completion bash"
printf '%s\n' "$OUT" > faucet.bash
if bash -n faucet.bash; then pass; else fail "the bash script parses"; fi
run state put --state file:ks orders::default 1
run state put --state file:ks orders::eu 2
run state put --state file:ks shop::x 3
mkdir -p bin && ln -sf "$FAUCET_BIN" bin/faucet
complete_line() { # complete_line LINE: COMPREPLY, one a line
	PATH="$PWD/bin:$PATH" bash -c '. ./faucet.bash; COMP_LINE=$1; COMP_POINT=${#1}; _faucet; printf "%s\n" "${COMPREPLY[@]}"' _ "$1"
}
if [ "$(complete_line 'faucet st')" = state ]; then pass; else fail "bash: commands: $(complete_line 'faucet st')"; fi
if [ "$(complete_line 'faucet state g')" = get ]; then pass; else fail "bash: subcommands"; fi
if [ "$(complete_line 'faucet backfill --win')" = --window ]; then pass; else fail "bash: flags"; fi
if [ "$(complete_line 'faucet lo')" = lock ]; then pass; else fail "bash: the lock command"; fi
if [ "$(complete_line 'faucet lock b')" = break ]; then pass; else fail "bash: lock break"; fi
if [ "$(complete_line 'faucet state un')" = undo ]; then pass; else fail "bash: state undo"; fi
if [ "$(complete_line 'faucet run --sin')" = --singer ]; then pass; else fail "bash: run flags"; fi
if [ "$(complete_line 'faucet doctor --rep')" = --repair ]; then pass; else fail "bash: doctor --repair"; fi
got=$(complete_line 'faucet --state file:ks state get ord')
if [ "$got" = "orders::default
orders::eu" ]; then pass; else fail "bash: keys from the store: $got"; fi
# After "orders:" bash replaces only what follows the last ':'.
got=$(complete_line 'faucet state get --state file:ks orders::e')
if [ "$got" = "eu" ]; then pass; else fail "bash: keys after a colon: $got"; fi
if [ "$(complete_line 'faucet completion z')" = zsh ]; then pass; else fail "bash: completion shells"; fi
run completion zsh
expect_rc 0 "completion zsh"
expect_out_contains "#compdef faucet" "a zsh completion function"
expect_out_contains "state list" "zsh: keys from the store"
# zsh and fish come from scripts/install-deps.sh: missing is a failure.
if command -v zsh >/dev/null; then
	printf '%s\n' "$OUT" > _faucet
	if zsh -n _faucet; then pass; else fail "the zsh script parses"; fi
else
	fail "zsh is not installed (scripts/install-deps.sh installs it)"
fi
run completion fish
expect_rc 0 "completion fish"
expect_out_contains "complete -c faucet" "fish completions"
if command -v fish >/dev/null; then
	printf '%s\n' "$OUT" > faucet.fish
	got=$(PATH="$PWD/bin:$PATH" fish -c "source faucet.fish; complete -C'faucet --state file:ks state get ord'" 2>&1)
	if [ "$got" = "orders::default
orders::eu" ]; then pass; else fail "fish: keys from the store: $got"; fi
else
	fail "fish is not installed (scripts/install-deps.sh installs it)"
fi
run completion tcsh
expect_rc 2 "an unknown shell"

# ---- the man page is installed ----
src=${FAUCET_SOURCE_DIR:-}
build=$(dirname "$FAUCET_BIN")
if cmake --install "$build" --prefix "$PWD/prefix" >install.log 2>&1 &&
	[ -f prefix/share/man/man1/faucet.1 ] && [ -x prefix/bin/faucet ]; then
	pass
else
	fail "cmake --install puts faucet(1) and the binary under the prefix: $(tail -3 install.log)"
fi
if [ -n "$src" ] && command -v groff >/dev/null; then
	if groff -man -Tutf8 "$src/doc/faucet.1" 2>/dev/null | grep -q "backfill status"; then pass; else fail "the man page renders"; fi
	# Every command has its entry: runs, their history and undo, leases.
	for entry in "state undo" "state runs" "lock list" "FAUCET_RUN_ID"; do
		if groff -man -Tutf8 "$src/doc/faucet.1" 2>/dev/null | sed "s/.\x08//g" | grep -q "$entry"; then
			pass
		else
			fail "the man page documents '$entry'"
		fi
	done
fi

# ---- encryption keys ----
# --previous-key-env: a rotation without YAML.
export OLD_KEY=ux-old-key-0123456789 NEW_KEY=ux-new-key-0123456789
run state put --state file:rot --encryption-key-env OLD_KEY p::k '{"v":1}'
run state get --state file:rot --encryption-key-env NEW_KEY p::k
expect_rc 1 "the new key alone cannot read the old file"
run state get --state file:rot --encryption-key-env NEW_KEY --previous-key-env OLD_KEY p::k
expect_rc 0 "--previous-key-env reads with the old key"
expect_out '{"v":1}' "the value through the previous key"
FAUCET_PREVIOUS_KEY_ENV=NOPE,OLD_KEY run state get --state file:rot --encryption-key-env NEW_KEY p::k
expect_rc 2 "FAUCET_PREVIOUS_KEY_ENV naming an unset variable"
expect_err_contains "NOPE" "names the unset variable"
FAUCET_PREVIOUS_KEY_ENV=OLD_KEY run state rekey --state file:rot --encryption-key-env NEW_KEY
expect_rc 0 "rekey with FAUCET_PREVIOUS_KEY_ENV"
run state get --state file:rot --encryption-key-env NEW_KEY p::k
expect_rc 0 "after the rekey the new key alone reads it"
run state get --state file:rot --previous-key-env OLD_KEY p::k
expect_rc 2 "--previous-key-env without a current key"
run state get --state file:rot --encryption-key-env NEW_KEY --previous-key-env OLD_KEY p::k
expect_err_lacks "warning" "no warning for keys of 16 bytes or more"
# The key itself never shows, not even in the error naming its variable.
expect_err_lacks "ux-old-key" "no key material in messages"
# Backfill units inherit the previous keys' variable names, not their values.
run backfill --state file:rot --encryption-key-env NEW_KEY --previous-key-env OLD_KEY \
	--previous-key-env NEW_KEY --pipeline p --from 2026-01-01 --to 2026-01-02 -- \
	sh -c 'echo "$FAUCET_ENCRYPTION_KEY_ENV $FAUCET_PREVIOUS_KEY_ENV" > pk'
expect_rc 0 "a backfill with previous keys"
if [ "$(cat pk 2>/dev/null)" = "NEW_KEY OLD_KEY,NEW_KEY" ]; then pass; else fail "units get the key variables' names: $(cat pk 2>/dev/null)"; fi
# A short passphrase gets a warning.
export SHORT_KEY=abc
run state put --state file:short --encryption-key-env SHORT_KEY p::k 1
expect_rc 0 "a short key still works"
expect_err_contains "warning: the encryption key in SHORT_KEY is only 3 bytes" "a short key draws a warning"
expect_err_lacks "abc" "the warning does not show the key"

finish
