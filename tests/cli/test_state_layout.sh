#!/usr/bin/env bash
# A state directory written in the ORIGINAL faucet's layout, by plain shell:
# escaped uppercase (%55sers), hub names with '/', a long key hashed as
# prefix~sha256 with a .key sidecar, a legacy unescaped name - listed, shown
# and exported as the keys they stand for.  Also `show` on a terminal.
. "$(dirname "$0")/lib.sh"

mkdir st
put_file() { printf '%s' "$2" >"st/$1"; }

# Escape a key the way the original names its files (no uppercase here
# except where written by hand below).
escape() { printf '%s' "$1" | sed -e 's/:/%3A/g' -e 's#/#%2F#g'; }

put_file '%55sers%3A%3Ax.json' '{"u":1}'
put_file 'acme%2Ferp%3A%3Ainvoices.json' '{"cursor":"2026-01-01"}'
put_file 'Users%3Ax.json' '{"legacy":true}'
put_file 'pipe%3A%3Arow.json' '{"c":18446744073709551615}'
put_file 'pipe%3A%3Arow%3A%3A__lease__.json' '{"holder":"h:1:x","expires_at":1}'
put_file 'pipe%3A%3A__backfill__%3A%3Aabc123.json' '{"units":{}}'
put_file 'pipe%3A%3Abackfill%3A%3Ah1%3A%3A20260101T000000Z.json' '0.1'
put_file 'pipe%3A%3Arow%3A%3A7%3A%3A__status__.json' '"ok"'
put_file 't1%3A%3Apipe%3A%3Ar.json' '[1,2]'
# Files the store must not report as keys.
put_file 'pipe%3A%3Arow.0123456789abcdef0123456789abcdef.3.json.tmp' '{"torn'
put_file 'pipe%3A%3Arow.json.lock' ''
put_file 'README' 'not state'

# A key whose escaped name is over 160 bytes: readable prefix + ~ + sha256.
long_key="pipe::row::$(printf 'parent:%.0s' $(seq 34))"
esc=$(escape "$long_key")
cut=95 # 160 - 64 (hex) - 1 ('~')
while [ $cut -gt 0 ] && case "${esc:cut-2:2}" in *%*) true ;; *) false ;; esac; do
	cut=$((cut - 1))
done
hash=$(printf '%s' "$long_key" | sha256sum | cut -c1-64)
stem="${esc:0:cut}~$hash"
put_file "$stem.json" '{"long":true}'
put_file "$stem.key" "$long_key"
if [ ${#stem} -le 160 ]; then pass; else fail "test setup: the hashed stem is ${#stem} bytes"; fi

S=file:st
run state list --state $S --all
expect_rc 0 "list the original layout"
expected=$(printf '%s\n' 'Users::x' 'Users:x' 'acme/erp::invoices' "$long_key" 'pipe::__backfill__::abc123' \
	'pipe::backfill::h1::20260101T000000Z' 'pipe::row' 'pipe::row::7::__status__' 'pipe::row::__lease__' \
	't1::pipe::r' | LC_ALL=C sort)
expect_out "$expected" "every original file name lists as its key, in byte order"
expect_out_lacks "README" "foreign files are not keys"

run state get --state $S Users::x
expect_out '{"u":1}' "escaped uppercase name"
run state get --state $S users::x
expect_out "" "a lowercase key does not read the uppercase key's file"
run state get --state $S acme/erp::invoices
expect_out '{"cursor":"2026-01-01"}' "hub name with /"
run state get --state $S "$long_key"
expect_out '{"long":true}' "hashed long key"
run state get --state $S Users:x
expect_out '{"legacy":true}' "legacy unescaped name"

# show decodes each key of the namespace (piped: tab-separated, full values).
run state show --state $S pipe --all
expect_rc 0 "show"
expect_out_contains "$(printf 'pipe::row\trow\t\t\t{"c":18446744073709551615}')" "plain invocation key"
expect_out_contains "$(printf 'pipe::row::__lease__\trow\t\t__lease__\t')" "lease suffix"
expect_out_contains "$(printf 'pipe::row::7::__status__\trow\t7\t__status__\t"ok"')" "sub + status suffix"
expect_out_contains "$(printf 'pipe::__backfill__::abc123\t\t\t__backfill__::abc123\t{"units":{}}')" "pipeline-level backfill marker"
expect_out_contains "$(printf 'pipe::backfill::h1::20260101T000000Z\tbackfill::h1::20260101T000000Z\t\t\t0.1')" "backfill unit row"
expect_out_contains "$(printf '%s\trow\tparent:' "$long_key")" "the long key's sub"
expect_out_lacks "t1::pipe" "another tenant's keys are not shown"
run state show --state $S pipe --all --json
expect_rc 0 "show --json"
expect_json 'len(d["keys"]) == 6 and d["prefix"] == "pipe::" and d["tenant"] is None' "show --json lists the namespace"
expect_json '[k for k in d["keys"] if k["key"] == "pipe::row::__lease__"][0]["suffix"] == "__lease__"' "show --json suffix"
expect_json '[k for k in d["keys"] if k["key"] == "pipe::row::7::__status__"][0]["sub"] == "7"' "show --json sub"
expect_json '[k for k in d["keys"] if k["key"] == "pipe::row"][0]["value"] == {"c": 18446744073709551615}' "show --json value"
expect_out_contains '{"c":18446744073709551615}' "show --json keeps every digit"
run state show --state $S pipe --tenant t1 --json
expect_json '[k["key"] for k in d["keys"]] == ["t1::pipe::r"] and d["keys"][0]["row"] == "r" and d["keys"][0]["value"] == [1, 2]' "show --tenant"
run state show --state $S 'bad pipe'
expect_rc 2 "show with an invalid pipeline name"
expect_one_error_line "invalid pipeline name"
run state show --state $S nobody
expect_rc 0 "show of an empty namespace"
expect_out "" "empty namespace shows nothing when piped"

# export: the version-1 document with exactly the namespace's keys.
run state export --state $S pipe
expect_rc 0 "export of the original layout"
expect_json 'd["version"] == 1 and d["pipeline"] == "pipe" and len(d["keys"]) == 4' "export document"
expect_json 'not [k for k in d["keys"] if "__lease__" in k or "__status__" in k]' "run bookkeeping is never exported (SPEC section 8)"
expect_json 'd["keys"]["'"$long_key"'"] == {"long": True}' "export includes the hashed long key"
expect_json 'd["keys"]["pipe::backfill::h1::20260101T000000Z"] == 0.1' "export value"
expect_json 'd["exported_at"].endswith("+00:00") and d["exported_at"][10] == "T"' "exported_at is RFC 3339 UTC"
expect_out_contains "18446744073709551615" "export keeps every digit"
run state export --state $S acme/erp
expect_json 'd["keys"] == {"acme/erp::invoices": {"cursor": "2026-01-01"}}' "export of a hub pipeline"

# show on a terminal: a table with a header, values cut to the width, color
# unless NO_COLOR is set.  `script` gives the command a pseudo-terminal.
if command -v script >/dev/null; then
	tty_out=$(COLUMNS=60 script -qec "$FAUCET_BIN state show --state $S pipe" /dev/null)
	case "$tty_out" in *KEY*ROW*SUB/SHARD*SUFFIX*VALUE*) pass ;; *) fail "tty show has a header: $tty_out" ;; esac
	case "$tty_out" in *'...'*) pass ;; *) fail "tty show truncates long values: $tty_out" ;; esac
	case "$tty_out" in *18446744073709551615*) fail "tty show should cut the long value: $tty_out" ;; *) pass ;; esac
	case "$tty_out" in *$'\033['*) pass ;; *) fail "tty show uses color" ;; esac
	tty_out=$(NO_COLOR=1 COLUMNS=60 script -qec "$FAUCET_BIN state show --state $S pipe" /dev/null)
	case "$tty_out" in *$'\033'*) fail "NO_COLOR turns color off" ;; *) pass ;; esac
	tty_out=$(COLUMNS=60 script -qec "$FAUCET_BIN state show --state $S pipe --json" /dev/null)
	case "$tty_out" in *18446744073709551615*) pass ;; *) fail "--json on a terminal prints full values" ;; esac
else
	fail "script(1) from util-linux is needed for the terminal checks"
fi

finish
