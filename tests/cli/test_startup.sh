#!/usr/bin/env bash
# What starting `faucet` costs: the PostgreSQL and Redis client libraries
# (libpq brings some twenty more: Kerberos, LDAP, GnuTLS, ...) and SQLite
# are loaded when a store that needs them is opened, not at exec -
# neither the command nor libfaucet.so lists them as needed, and a run on a
# plain file store never maps them; nor libmicrohttpd (and its GnuTLS),
# which only `faucet serve` opens; nor libcrypto, which only an encrypted
# store, a key too long to be its own file name and `faucet serve` load;
# nor libyaml, which only reading a config file loads (src/config/yaml_load.c);
# nor json-c, which a value needs only when its tree is built
# (src/values/jsonc_load.c): never for a get.  (The stores themselves are tested
# against real servers by the contract suite.)
. "$(dirname "$0")/lib.sh"

command -v readelf >/dev/null || { echo "readelf (binutils) is needed" >&2; exit 1; }
LIB=$(dirname "$FAUCET_BIN")/libfaucet.so

for f in "$FAUCET_BIN" "$LIB"; do
	needed=$(readelf -d "$f" | grep NEEDED)
	if printf '%s\n' "$needed" | grep -q -E 'libpq|libhiredis|libsqlite3|libcurl|libcrypto|libjson-c|libyaml'; then
		fail "$(basename "$f") does not need libpq, hiredis, SQLite, libcurl, libcrypto, json-c or libyaml at exec: $needed"
	else
		pass
	fi
done

# LD_DEBUG=files names every object the loader maps, dlopen()ed ones too.
LD_DEBUG=files "$FAUCET_BIN" --state "file:$PWD/st" run --pipeline p -- true \
	>/dev/null 2>"$WORK/ld.log"
RC=$?
expect_rc 0 "faucet run on a file store"
if grep -q -E 'file=lib(pq|hiredis|sqlite3|gssapi|ldap|gnutls|microhttpd|crypto)' "$WORK/ld.log"; then
	fail "faucet run on a file store maps no PostgreSQL/Redis/SQLite client library, no libcrypto: $(grep -o -E 'file=[^ ]+' "$WORK/ld.log" | sort -u | tr '\n' ' ')"
else
	pass
fi

# A get of a short key maps no libcrypto; a long key's (hashed file name)
# and an encrypted store's do.
"$FAUCET_BIN" --state "file:$PWD/st" state put p::r::short 1 >/dev/null 2>&1
LD_DEBUG=files "$FAUCET_BIN" --state "file:$PWD/st" state get p::r::short >/dev/null 2>"$WORK/ld.log"
if grep -q 'file=libcrypto' "$WORK/ld.log"; then fail "a short key's get maps libcrypto"; else pass; fi
# ... nor json-c: a value read keeps its text and builds no tree; a merge
# (which must read members) loads it.
if grep -q 'file=libjson-c' "$WORK/ld.log"; then fail "a get maps json-c"; else pass; fi
"$FAUCET_BIN" --state "file:$PWD/st" state put p::r::obj '{"b":2}' >/dev/null 2>&1
LD_DEBUG=files "$FAUCET_BIN" --state "file:$PWD/st" state merge p::r::obj '{"a":1}' >/dev/null 2>"$WORK/ld.log"
if grep -q 'file=libjson-c' "$WORK/ld.log"; then pass; else fail "a merge loads json-c"; fi
run --state "file:$PWD/st" state get p::r::obj
expect_out '{"b":2,"a":1}' "the merge through the loaded json-c"
long="p::r::$(printf 'k%.0s' $(seq 200))"
LD_DEBUG=files "$FAUCET_BIN" --state "file:$PWD/st" state put "$long" 2 >/dev/null 2>"$WORK/ld.log"
if grep -q 'file=libcrypto' "$WORK/ld.log"; then pass; else fail "a long key's put loads libcrypto"; fi
run --state "file:$PWD/st" state get "$long"
expect_rc 0 "the long key reads back"
expect_out_contains 2 "the long key's value"
export TEST_KEY=k0
LD_DEBUG=files "$FAUCET_BIN" --state "file:$PWD/enc" --encryption-key-env TEST_KEY state put p::r::s 3 \
	>/dev/null 2>"$WORK/ld.log"
if grep -q 'file=libcrypto' "$WORK/ld.log"; then pass; else fail "an encrypted store loads libcrypto"; fi

# Where libcrypto cannot be loaded (here: a libcrypto.so.3 without its
# functions first on the library path), a short key still works, and a
# long key, an encrypted store and a listing of a hashed name fail, saying
# what to install - never a wrong name, never a key left out.
mkdir -p "$WORK/nolib"
cc -shared -o "$WORK/nolib/libcrypto.so.3" -x c /dev/null || fail "cc builds an empty library"
export LD_LIBRARY_PATH="$WORK/nolib"
run --state "file:$PWD/st" state get p::r::short
expect_rc 0 "without libcrypto: a short key reads"
run --state "file:$PWD/st" state put "$long" 4
expect_rc 1 "without libcrypto: a long key's put fails"
expect_err_contains "apt-get install libssl3" "without libcrypto: the message names the package"
run --state "file:$PWD/st" state list
expect_rc 1 "without libcrypto: a listing with a hashed name fails (no key left out)"
expect_err_contains "libcrypto.so.3" "without libcrypto: the listing says why"
run --state "file:$PWD/enc" --encryption-key-env TEST_KEY state get p::r::s
expect_rc 1 "without libcrypto: an encrypted store cannot be opened"
expect_err_contains "libssl3" "without libcrypto: the encrypted store's message names the package"
unset LD_LIBRARY_PATH
run --state "file:$PWD/st" state get "$long"
expect_out_contains 2 "the long key's value is as it was"

# Where json-c cannot be loaded, a get still reads; what needs a value's
# tree fails naming the package, and writes nothing.
cc -shared -o "$WORK/nolib/libjson-c.so.5" -x c /dev/null || fail "cc builds an empty library"
LD_LIBRARY_PATH="$WORK/nolib" run --state "file:$PWD/st" state get p::r::obj
expect_rc 0 "without json-c: a get works"
expect_out '{"b":2,"a":1}' "without json-c: the value as stored"
LD_LIBRARY_PATH="$WORK/nolib" run --state "file:$PWD/st" state merge p::r::obj '{"c":3}'
expect_rc 1 "without json-c: a merge fails"
expect_err_contains "apt-get install libjson-c5" "without json-c: the message names the package"
run --state "file:$PWD/st" state get p::r::obj
expect_out '{"b":2,"a":1}' "without json-c: nothing was written"
rm -f "$WORK/nolib/libjson-c.so.5"

# libyaml is opened only to read a --config file.
printf 'state:\n  type: file\n  config:\n    path: %s\n' "$PWD/st" >"$WORK/c.yaml"
LD_DEBUG=files "$FAUCET_BIN" --state "file:$PWD/st" state get p::r::short >/dev/null 2>"$WORK/ld.log"
if grep -q 'file=libyaml' "$WORK/ld.log"; then fail "a get without --config maps libyaml"; else pass; fi
LD_DEBUG=files "$FAUCET_BIN" --config "$WORK/c.yaml" state get p::r::short >/dev/null 2>"$WORK/ld.log"
if grep -q 'file=libyaml' "$WORK/ld.log"; then pass; else fail "--config loads libyaml"; fi
cc -shared -o "$WORK/nolib/libyaml-0.so.2" -x c /dev/null || fail "cc builds an empty library"
LD_LIBRARY_PATH="$WORK/nolib" run --config "$WORK/c.yaml" state get p::r::short
expect_rc 2 "without libyaml: --config fails"
expect_err_contains "needs yaml_parser_initialize() from libyaml-0.so.2, which this copy of libyaml-0.so.2 lacks (too old?); install a current one (Debian/Ubuntu: apt-get install libyaml-0-2)" \
	"without libyaml: the message names the package"
LD_LIBRARY_PATH="$WORK/nolib" run --state "file:$PWD/st" state get p::r::short
expect_rc 0 "without libyaml: a command without --config works"

# Opening a PostgreSQL store loads libpq (the pool connects lazily, so the
# store opens; the first read is what fails, with no server listening).
LD_DEBUG=files "$FAUCET_BIN" --state "postgres://127.0.0.1:1/none?connect_timeout=1" \
	state list >/dev/null 2>"$WORK/ld.log"
if grep -q 'file=libpq.so' "$WORK/ld.log"; then pass; else fail "a postgres:// store loads libpq"; fi
if grep -q 'cannot connect' "$WORK/ld.log"; then pass; else fail "the read fails only when connecting"; fi

finish
