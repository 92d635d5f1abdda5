#!/usr/bin/env bash
# What starting `faucet` costs: the PostgreSQL and Redis client libraries
# (libpq brings some twenty more: Kerberos, LDAP, GnuTLS, ...) and SQLite
# are loaded when a store that needs them is opened, not at exec -
# neither the command nor libfaucet.so lists them as needed, and a run on a
# plain file store never maps them; nor libmicrohttpd (and its GnuTLS),
# which only `faucet serve` opens.  (The stores themselves are tested
# against real servers by the contract suite.)
. "$(dirname "$0")/lib.sh"

command -v readelf >/dev/null || { echo "readelf (binutils) is needed" >&2; exit 1; }
LIB=$(dirname "$FAUCET_BIN")/libfaucet.so

for f in "$FAUCET_BIN" "$LIB"; do
	needed=$(readelf -d "$f" | grep NEEDED)
	if printf '%s\n' "$needed" | grep -q -E 'libpq|libhiredis|libsqlite3'; then
		fail "$(basename "$f") does not need libpq, hiredis or SQLite at exec: $needed"
	else
		pass
	fi
done

# LD_DEBUG=files names every object the loader maps, dlopen()ed ones too.
LD_DEBUG=files "$FAUCET_BIN" --state "file:$PWD/st" run --pipeline p -- true \
	>/dev/null 2>"$WORK/ld.log"
RC=$?
expect_rc 0 "faucet run on a file store"
if grep -q -E 'file=lib(pq|hiredis|sqlite3|gssapi|ldap|gnutls|microhttpd)' "$WORK/ld.log"; then
	fail "faucet run on a file store maps no PostgreSQL/Redis/SQLite client library: $(grep -o -E 'file=[^ ]+' "$WORK/ld.log" | sort -u | tr '\n' ' ')"
else
	pass
fi

# Opening a PostgreSQL store loads libpq (the pool connects lazily, so the
# store opens; the first read is what fails, with no server listening).
LD_DEBUG=files "$FAUCET_BIN" --state "postgres://127.0.0.1:1/none?connect_timeout=1" \
	state list >/dev/null 2>"$WORK/ld.log"
if grep -q 'file=libpq.so' "$WORK/ld.log"; then pass; else fail "a postgres:// store loads libpq"; fi
if grep -q 'cannot connect' "$WORK/ld.log"; then pass; else fail "the read fails only when connecting"; fi

finish
