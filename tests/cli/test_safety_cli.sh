#!/usr/bin/env bash
# What the command must never do with what it is given: print a password
# or a ${env:...} value, print control characters raw, create a store on a
# read, store a value it cannot hold exactly; and what a failed condition
# and a --json failure tell the caller.
. "$(dirname "$0")/lib.sh"

SECRET=s3cretPW

# expect_no_secret WHAT: neither stream shows $SECRET.
expect_no_secret() {
	expect_out_lacks "$SECRET" "$1 (stdout)"
	expect_err_lacks "$SECRET" "$1 (stderr)"
}

# ---- passwords in store URLs, in every spelling ----
# (A bad %-escape makes libpq quote the password in its own message.)
for url in "postgres://u:$SECRET@127.0.0.1:1/db" \
	"postgres://u@127.0.0.1:1/db?password=$SECRET" \
	"postgres://u@127.0.0.1:1/db?sslmode=disable&password=$SECRET&table=t" \
	"postgres://u@127.0.0.1:1/db?password=$SECRET%zz" \
	"postgres://u:$SECRET%zz@127.0.0.1:1/db" \
	"redis://:$SECRET@127.0.0.1:1/0" \
	"redis://$SECRET@127.0.0.1:1/0" \
	"redis://127.0.0.1:1/0?password=$SECRET"; do
	run --state "$url" doctor --timeout 2s
	expect_rc_not0=$RC
	if [ "$expect_rc_not0" -ne 0 ]; then pass; else fail "doctor of $url should fail"; fi
	expect_no_secret "doctor $url"
	run --json --state "$url" doctor --timeout 2s
	expect_no_secret "doctor --json $url"
	run --state "$url" state get a::b
	expect_no_secret "get $url"
	run --json --state "$url" state put a::b 1
	expect_no_secret "put --json $url"
done
# A short password is masked where libpq quotes a piece of the URL, and
# nowhere else: masking each "p" of a password "p" would turn "port 1
# failed" into "***ort 1 failed" and show the password by what it masked.
for url in "postgres://u:p%zz@127.0.0.1:1/db" "postgres://u@127.0.0.1:1/db?password=p%zz"; do
	run --state "$url" state get a::b
	expect_err_lacks "p%zz" "a short password quoted by libpq is masked ($url)"
	expect_err_contains 'token: "***"' "the quoted piece is masked ($url)"
done
run --state "postgres://u:p@127.0.0.1:1/db" state get a::b
expect_err_contains "port 1 failed" "a short password does not mangle the message"
expect_err_lacks "***ort" "no letter of the message is taken for the password"
run --state "memory:?password=$SECRET" state get a
expect_rc 2 "memory: with options is a bad URL"
expect_no_secret "memory: URL"
expect_err_contains "password=***" "the option is named, its value hidden"

# The same URL in a config's url: field.
cat >pg.yaml <<YAML
state: {type: postgres, config: {url: "postgres://u@127.0.0.1:1/db?password=$SECRET"}}
YAML
run -c pg.yaml doctor --timeout 2s
expect_no_secret "doctor of a config with a password in its url"

# ---- control characters in echoed input are escaped, never raw ----
ESC=$(printf '\033')
expect_no_raw_controls() {
	case "$ERR$OUT" in
	*"$ESC"* | *$'\a'* | *$'\r'*) fail "$1: a raw control character was printed" ;;
	*) pass ;;
	esac
}
run --state memory: state get "bad${ESC}[31mkey"
expect_rc 2 "a key with an escape sequence is refused"
expect_one_error_line "rejected key: one line"
expect_no_raw_controls "rejected key"
expect_err_contains 'bad\x1b[31mkey' "the key is shown escaped"
run --state memory: state get "two$(printf '\nlines')"
expect_one_error_line "a key with a newline stays on one line"
expect_err_contains 'two\nlines' "the newline is shown as \\n"
run --state memory: state put k::a "{\"a\":1}$ESC]0;title$(printf '\a')"
expect_rc 2 "a bad value"
expect_no_raw_controls "bad value"
run --state memory: state list "--x${ESC}[2J"
expect_rc 2 "a bad flag"
expect_no_raw_controls "bad flag"
expect_err_contains '\x1b[2J' "the flag is shown escaped"
run --state "file:st${ESC}[1m/$(printf '\a')" state put a::b 1 --json
expect_no_raw_controls "a path with controls in a message"

# ---- --json: every failure is one JSON object on stdout ----
run --json --state memory: state get 'bad key'
expect_rc 2 "--json: bad key"
expect_json 'd["error"]["code"] == "invalid" and d["error"]["exit"] == 2 and "bad key" in d["error"]["message"]' "--json error object for a bad key"
expect_one_error_line "--json keeps the stderr line"
run --json --state memory: state put a::b '{"x":'
expect_json 'd["error"]["exit"] == 2 and d["error"]["code"] == "invalid"' "--json error object for bad JSON"
run --json --state 'nosuch://x' state list
expect_json 'd["error"]["code"] == "config" and d["error"]["exit"] == 2' "--json error object for a bad URL"
run --json --state memory: state frobnicate
expect_json 'd["error"]["exit"] == 2' "--json error object for an unknown subcommand"
run state get --state memory: 'bad key'
expect_out "" "without --json stdout stays empty"

# ---- a failed condition prints what it found ----
S=file:cstore
run --state $S state put c::k '{"v":1}'
expect_rc 0 "put"
run --state $S state put c::k '{"v":2}' --if-absent
expect_rc 3 "--if-absent on a present key"
expect_one_error_line "--if-absent failure"
expect_err_contains 'found: {"v":1}' "--if-absent failure shows the value found"
run --state $S state put c::k '{"v":2}' --if-equals '{"v":0}'
expect_rc 3 "--if-equals mismatch"
expect_err_contains 'found: {"v":1}' "--if-equals failure shows the value found"
run --state $S state put c::gone '{"v":2}' --if-equals '{"v":0}'
expect_rc 3 "--if-equals on an absent key"
expect_err_contains 'found: absent' "an absent key is reported as absent"
run --json --state $S state put c::k '{"v":2}' --if-equals '{"v":0}'
expect_rc 3 "--if-equals mismatch with --json"
expect_json 'd["written"] is False and d["found"] == {"v": 1} and d["error"]["exit"] == 3 and "found" in d["error"]["message"]' "--json carries found and the error"
run --json --state $S state put c::gone '{"v":2}' --if-equals '{"v":0}'
expect_json 'd["found"] is None and d["error"]["exit"] == 3' "--json: found is null for an absent key"
run --state $S state get c::k
expect_out '{"v":1}' "nothing written by the failed conditions"

# ---- \u0000: refused with its offset, never stored altered ----
run --state $S state put c::nul '{"a\u0000b":1}'
expect_rc 2 "a NUL in a member name is refused"
expect_err_contains 'byte 3' "the refusal names the byte offset"
run --state $S state get c::nul
expect_out "" "nothing stored"
run --state $S state put c::nul '"x\u0000"'
expect_rc 2 "a NUL in a string is refused"
run --state $S state put c::k '{"a":1}'
run --state $S state put c::k '2' --if-equals '{"a\u0000b":1}'
expect_rc 2 "a NUL in --if-equals is refused, not matched against {\"a\":1}"
run --state $S state get c::k
expect_out '{"a":1}' "the value stays"
# A file holding one (written by another tool) is refused on read, not cut.
printf '{"a\\u0000b":1}' >cstore/c%3A%3Araw.json
run --state $S state get c::raw
expect_rc 1 "reading a stored NUL is an error"
expect_err_contains '\u0000 at byte 3' "the read error names the offset"
run --state $S state put c::raw 2 --if-equals '{"a":1}'
if [ "$RC" -ne 0 ] && [ "$RC" -ne 3 ]; then pass; else fail "--if-equals must not match a cut name (rc $RC)"; fi
if [ "$(cat 'cstore/c%3A%3Araw.json')" = '{"a\u0000b":1}' ]; then pass; else fail "the raw file must stay untouched"; fi

# ---- read commands never create a store ----
for cmd in "state list" "state show p" "state get p::k" "state export p" "doctor"; do
	# shellcheck disable=SC2086
	run --state file:missing-dir $cmd
	expect_rc 1 "$cmd on a missing file store"
	expect_one_error_line "$cmd on a missing file store"
	expect_err_contains "no state store at missing-dir (write commands create it)" "$cmd names the path"
	expect_no_file missing-dir "$cmd created no directory"
	# shellcheck disable=SC2086
	run --state sqlite:missing.db $cmd
	expect_rc 1 "$cmd on a missing sqlite database"
	expect_err_contains "no state store at missing.db" "$cmd names the database"
	expect_no_file missing.db "$cmd created no database"
done
# A backfill's dry run only reads and creates nothing: on a store that does
# not exist yet it prints the whole plan, saying that there is no store at
# that path (a mistyped path shows), and the store is not created.  Status
# is a read command: a missing store is an error.
run backfill --state file:missing-dir --pipeline p --from 2026-06-01 --to 2026-06-03 \
	--window 1d --dry-run -- true
expect_rc 0 "backfill --dry-run on a missing file store prints the plan"
expect_out_contains "20260602T000000Z" "the plan's units"
expect_err_contains "no state store at file:missing-dir yet" "backfill --dry-run names the path"
expect_no_file missing-dir "backfill --dry-run created no directory"
run backfill --state sqlite:missing.db --pipeline p --from 2026-06-01 --to 2026-06-03 \
	--window 1d --dry-run --json -- true
expect_rc 0 "backfill --dry-run on a missing sqlite database"
expect_json "d['dry_run'] and d['pending'] == 2 and d['done'] == 0" "every unit would run"
expect_no_file missing.db "backfill --dry-run created no database"
run backfill status --state file:missing-dir --pipeline p
expect_rc 1 "backfill status on a missing file store"
expect_no_file missing-dir "backfill status created no directory"
run --state sqlite:missing.db state copy p --to memory:
expect_rc 1 "copy from a missing store"
expect_no_file missing.db "copy created no source database"
run --json --state sqlite:///nowhere/x.db state get p::k
expect_json 'd["error"]["code"] == "not-found" and d["error"]["exit"] == 1' "--json: a missing store is not-found, exit 1"
# The default store and a config's store follow the same rule.
run state list
expect_rc 1 "list of the default store when .faucet-state is missing"
expect_no_file .faucet-state "the default store is not created by a read"
printf 'state: {type: sqlite, config: {path: cfg.db}}\n' >sq.yaml
run -c sq.yaml state get p::k
expect_rc 1 "get through a config naming a missing database"
expect_no_file cfg.db "no database created through the config"
# A write creates the store; reads then work.
run --state sqlite:made.db state put p::k 1
expect_rc 0 "a write creates the database"
run --state sqlite:made.db state get p::k
expect_out "1" "and a read finds it"
run --state file:made-dir state put p::k 1
run --state file:made-dir doctor
expect_rc 0 "doctor of an existing file store"

# ---- a value from ${env:...} is never echoed, whatever field it lands in ----
export KEYMAT="k3y-Mat3rial/xyz"
expect_no_keymat() {
	expect_out_lacks "$KEYMAT" "$1 (stdout)"
	expect_err_lacks "$KEYMAT" "$1 (stderr)"
}
conf_case() { # conf_case WHAT YAML: load it through get and doctor, --json too
	printf '%s\n' "$2" >envcase.yaml
	run -c envcase.yaml state get p::k
	if [ "$RC" -ne 0 ]; then pass; else fail "$1: should fail"; fi
	expect_no_keymat "$1"
	expect_err_contains '${env:KEYMAT}' "$1: the reference is shown instead"
	run --json -c envcase.yaml doctor
	expect_no_keymat "$1 (--json doctor)"
}
conf_case "key in algorithm" 'state: {type: file, config: {path: es, encryption: {key: x, algorithm: "${env:KEYMAT}"}}}'
conf_case "key in ensure_table" 'state: {type: postgres, config: {url: "postgres://127.0.0.1:1/x", ensure_table: "${env:KEYMAT}"}}'
conf_case "key in max_connections" 'state: {type: redis, config: {url: "redis://127.0.0.1:1/0", max_connections: "${env:KEYMAT}"}}'
conf_case "key in type" 'state: {type: "${env:KEYMAT}", config: {path: es}}'
conf_case "key in table" 'state: {type: postgres, config: {url: "postgres://127.0.0.1:1/x", table: "${env:KEYMAT}"}}'
conf_case "key in namespace" 'state: {type: redis, config: {url: "redis://127.0.0.1:1/0", namespace: "a:${env:KEYMAT}"}}'
conf_case "key in backfill.concurrency" 'backfill: {concurrency: "${env:KEYMAT}"}'
conf_case "key in a missing path" 'state: {type: sqlite, config: {path: "${env:KEYMAT}"}}'
# doctor's report (text and --json) names paths in its probes: same rule.
mkdir -p "$KEYMAT"
printf '%s\n' 'state: {type: sqlite, config: {path: "${env:KEYMAT}"}}' >envcase.yaml
run -c envcase.yaml doctor
expect_rc 1 "doctor of a sqlite path that is a directory"
expect_no_keymat "doctor report"
expect_out_contains '${env:KEYMAT}' "doctor shows the reference"
run --json -c envcase.yaml doctor
expect_no_keymat "doctor --json report"
expect_json 'd["ok"] is False' "doctor --json report of it"

# ---- a process holding an encryption key turns core dumps off ----
# The core size limit is inherited by the commands backfill starts, so a
# unit can report the limit it was given.  (The other half, the process no
# longer being dumpable, is reset by exec and not visible from outside.)
# A sanitizer build lowers the limit itself (ASan's disable_coredump), so
# the check needs a run without a key that keeps it first.
ulimit -c 4096 2>/dev/null
run --state file:dk3 backfill --pipeline p --from 2026-01-01 --to 2026-01-02 -- sh -c 'ulimit -c >limit-without'
if [ "$(cat limit-without 2>&1)" = "0" ]; then
	echo "skipped: the core size limit is 0 even without a key (sanitizer build or a hard limit of 0)"
else
	export DUMPKEY=not-a-real-key
	run --state file:dk --encryption-key-env DUMPKEY backfill --pipeline p --from 2026-01-01 --to 2026-01-02 -- sh -c 'ulimit -c >limit-with-flag'
	expect_rc 0 "backfill with --encryption-key-env"
	limit=$(cat limit-with-flag 2>&1)
	if [ "$limit" = 0 ]; then pass; else fail "no core dumps once the key (flag) is held: limit $limit"; fi
	printf 'state: {type: file, config: {path: dk2, encryption: {key_env: DUMPKEY}}}\n' >dk.yaml
	run -c dk.yaml backfill --pipeline p --from 2026-01-01 --to 2026-01-02 -- sh -c 'ulimit -c >limit-with-config'
	expect_rc 0 "backfill with a config's encryption"
	limit=$(cat limit-with-config 2>&1)
	if [ "$limit" = 0 ]; then pass; else fail "no core dumps once the key (config) is held: limit $limit"; fi
fi

# ---- config strictness ----
printf 'state: {type: file, config: {path: one}}\n---\nstate: {type: file, config: {path: two}}\n' >multi.yaml
run -c multi.yaml state put p::k 1
expect_rc 2 "a config with two YAML documents"
expect_one_error_line "two documents"
expect_err_contains "line 3" "the second document's line is named"
expect_err_contains "second YAML document" "the reason is named"
expect_no_file one "nothing written through the first document"
printf -- '---\nstate: {type: file, config: {path: one}}\n...\n' >single.yaml
run -c single.yaml state put p::k 1
expect_rc 0 "one document with explicit markers is fine"
for c in "file:table: t" "file:url: postgres://x/y" "sqlite:encryption: {key: k}" "postgres:path: p" \
	"redis:table: t" "postgres:namespace: n" "memory:path: p"; do
	type=${c%%:*} field=${c#*:}
	case $type in
	file | sqlite) base="path: bs" ;;
	postgres) base='url: "postgres://127.0.0.1:1/x"' ;;
	redis) base='url: "redis://127.0.0.1:1/0"' ;;
	memory) base="" ;;
	esac
	printf 'state:\n  type: %s\n  config:\n    %s\n    %s\n' "$type" "$base" "$field" | grep -v '^    $' >other.yaml
	run -c other.yaml state put p::k 1
	expect_rc 2 "type $type with $field"
	expect_err_contains "state.config.${field%%:*} does not apply to type '$type'" "type $type names ${field%%:*}"
done
expect_no_file bs "nothing written with another backend's field"

# An option in the config's URL query and in the config: both named.
printf 'state: {type: postgres, config: {url: "postgres://127.0.0.1:1/x?table=a", table: b}}\n' >both.yaml
run -c both.yaml state get p::k
expect_rc 2 "table given in the URL and the config"
expect_err_contains "'table' is given both in the URL (?table=) and in the config (table:)" "both places named"
printf 'state: {type: redis, config: {url: "redis://127.0.0.1:1/0?namespace=a&max_connections=2", max_connections: 3}}\n' >both.yaml
run -c both.yaml state get p::k
expect_rc 2 "max_connections given twice"
expect_err_contains "'max_connections' is given both" "max_connections named"
# Given once, in the URL, it is taken from there (here: refused by name).
printf 'state: {type: postgres, config: {url: "postgres://127.0.0.1:1/x?table=no-dash"}}\n' >once.yaml
run -c once.yaml state get p::k
expect_rc 2 "a config URL's table option is read"
expect_err_contains "table name 'no-dash' is not allowed" "the URL's table reaches the store"

# doctor's report shows an echoed path escaped too.
mkdir "dd${ESC}[31m"
run --state "file:dd${ESC}[31m" doctor
expect_rc 0 "doctor of a store whose path holds an escape sequence"
expect_no_raw_controls "doctor report"
expect_out_contains 'dd\x1b[31m' "the store is shown escaped"

# copy's destination is redacted like any store address.
run --state file:made-dir state copy p --to "postgres://u@127.0.0.1:1/x?password=$SECRET"
expect_no_secret "copy --to with a password"
run --json --state file:made-dir state copy p --to "redis://:$SECRET@127.0.0.1:1/0"
expect_no_secret "copy --json --to with a password"

finish
