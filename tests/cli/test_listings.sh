#!/bin/bash
# test_listings.sh - `state pipelines`, and the terminal form of `state
# runs`, `lock list` and `state pipelines`: a header, aligned columns and
# local times on a terminal (run through a pty), tab-separated lines
# without a header and UTC times when piped, RFC 3339 UTC in --json.
. "$(dirname "$0")/lib.sh"

export FAUCET_STATE="file:$PWD/st"
# on_tty ARGS...: faucet with stdout a terminal (a pty), TZ=Asia/Tokyo;
# sets OUT (what the terminal got, \r removed) and RC.
on_tty() {
	OUT=$(TZ=Asia/Tokyo python3 - "$FAUCET_BIN" "$@" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode().replace("\r", ""))
sys.exit(os.waitstatus_to_exitcode(status))
PY
)
	RC=$?
	LAST_CMD="(on a tty) $*"
	ERR=""
}

run -q state put orders::eu::bm '{"n":1}'
run -q state put orders::us::bm '{"n":2}'
run -q state put orders::__backfill__::h1 '{}'
run -q state put orders_archive::eu::bm 1
run -q state put loose 1
future=4102444800   # 2100-01-01T00:00:00Z
raw_put "$FAUCET_STATE" orders::backfill::h1::u1::__lease__ "{\"holder\":\"elsewhere:1:a\",\"expires_at\":$future,\"run\":null}"
raw_put "$FAUCET_STATE" orders::eu::__lease__ "{\"holder\":\"elsewhere:2:b\",\"expires_at\":$future,\"run\":\"20990101T000000.000Z-abcdef\"}"
raw_put "$FAUCET_STATE" orders::us::__lease__ "{\"holder\":\"elsewhere:3:c\",\"expires_at\":1000,\"run\":\"20000101T000000.000Z-abcdef\"}"

# ---- state pipelines ----
run state pipelines --json
expect_rc 0 "state pipelines --json"
expect_json '[p["pipeline"] for p in d] == ["loose", "orders", "orders_archive"]' "every pipeline, in key order (a key without :: is its own)"
expect_json 'd[0]["keys"] == 1 and d[1]["keys"] == 3 and d[2]["keys"] == 1' "data keys counted, bookkeeping not"
expect_json 'd[1]["leases"] == 2 and d[1]["backfill_running"] is True and d[2]["backfill_running"] is False and d[2]["leases"] == 0' \
	"live leases (an expired one is not) and the running backfill"
last=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[1]["last_run"])' "$OUT")
run state runs orders --json
expect_json "max(r['run'] for s in d for r in s['runs']) == '$last'" "last_run is the pipeline's newest run"
run state pipelines --json
expect_json 'd[1]["last_change"].endswith("+00:00")' "--json times are UTC"
run state pipelines
expect_rc 0 "state pipelines, piped"
expect_out_lacks "PIPELINE" "piped: no header"
line=$(printf '%s\n' "$OUT" | sed -n 2p)
IFS=$'\t' read -r p k r c l b <<<"$line"
if [ "$p" = orders ] && [ "$k" = 3 ] && [ "$r" = "$last" ] && [ "$l" = 2 ] && [ "$b" = running ] &&
	[ "${c%+00:00}" != "$c" ]; then
	pass
else
	fail "piped: tab-separated pipeline, keys, last run, UTC time, leases, backfill: $line"
fi
on_tty state pipelines
expect_rc 0 "state pipelines on a terminal"
expect_out_contains "PIPELINE" "terminal: a header"
expect_out_contains "+0900" "terminal: local times"
case "$OUT" in *$'\t'*) fail "terminal: no tabs" ;; *) pass ;; esac

# ---- state pipelines --tenant ----
# acme::orders::eu::bm reads as tenant acme's pipeline orders or as pipeline
# acme's row orders; without --tenant it is the latter (as its runs are).
tst="file:$PWD/tenants"
FAUCET_STATE=$tst run -q state put acme::orders::eu::bm '{"n":1}'
FAUCET_STATE=$tst run -q state put acme::orders::us::bm '{"n":2}'
FAUCET_STATE=$tst run -q state put acme::billing::x::bm '{"n":3}'
FAUCET_STATE=$tst run -q state put acme::own 1
FAUCET_STATE=$tst run -q state put acmex::orders::eu::bm 1
raw_put "$tst" acme::billing::x::__lease__ "{\"holder\":\"elsewhere:4:d\",\"expires_at\":$future,\"run\":null}"
FAUCET_STATE=$tst run state pipelines --json
expect_json '[p["pipeline"] for p in d] == ["acme", "acmex"] and d[0]["keys"] == 4' \
	"without --tenant the first component is the pipeline"
FAUCET_STATE=$tst run state pipelines --tenant acme --json
expect_rc 0 "state pipelines --tenant acme --json"
# acme::own is no tenant pipeline's key; its put's history (acme::own::__status__)
# is all that shows of it: "own", with no data keys.
expect_json '[(p["tenant"], p["pipeline"], p["keys"]) for p in d] == [("acme", "billing", 1), ("acme", "orders", 2), ("acme", "own", 0)]' \
	"--tenant: the tenant's pipelines by their second component (T::x is not counted; acmex is another)"
expect_json 'd[0]["leases"] == 1 and d[1]["leases"] == 0' "--tenant: each pipeline's live leases"
last=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[1]["last_run"])' "$OUT")
FAUCET_STATE=$tst run state runs orders --tenant acme --json
expect_json "max(r['run'] for s in d for r in s['runs']) == '$last'" \
	"--tenant: last_run is the newest run of the tenant's pipeline (as state runs --tenant sees it)"
FAUCET_STATE=$tst run state pipelines -t acme
expect_rc 0 "state pipelines -t acme, piped"
expect_out_contains $'billing\t1\t' "--tenant, piped: the pipeline's name without the tenant"
FAUCET_STATE=$tst run state pipelines --tenant nobody --json
expect_json 'd == []' "--tenant of no keys: an empty list"
FAUCET_STATE=$tst run state pipelines --tenant 'a::b'
expect_rc 2 "--tenant a::b is refused"
expect_err_contains "is not a tenant name" "--tenant a::b: what is wrong"
FAUCET_STATE=$tst run state pipelines --tenant
expect_rc 2 "--tenant without a value is refused"

# ---- state runs ----
run state runs orders
expect_out_lacks "RUN" "runs piped: no header"
expect_out_contains "+00:00" "runs piped: UTC"
expect_out_contains $'\t' "runs piped: tab-separated"
on_tty state runs orders
expect_rc 0 "state runs on a terminal"
first=$(printf '%s\n' "$OUT" | head -n 1)
case "$first" in *RUN*STARTED*ENDED*OUTCOME*KEYS*ROW*) pass ;; *) fail "runs: header: $first" ;; esac
expect_out_contains "+0900" "runs: local times on a terminal"
expect_out_lacks "+00:00" "runs: no UTC on a terminal"
case "$OUT" in *$'\t'*) fail "runs terminal: no tabs" ;; *) pass ;; esac
# Aligned: the OUTCOME column starts at the same place on every line.
col=$(printf '%s\n' "$OUT" | sed 's/\x1b\[[0-9;]*m//g' | python3 -c '
import sys
lines = [l for l in sys.stdin.read().split("\n") if l]
head = lines[0]
at = head.index("OUTCOME")
ok = all(l[at - 2:at] == "  " and l[at] != " " for l in lines[1:])
print("ok" if ok and len(lines) > 2 else "bad")')
if [ "$col" = ok ]; then pass; else fail "runs: columns aligned under the header"; fi

# ---- lock list ----
run lock list orders
expect_out_lacks "HOLDER" "lock list piped: no header"
expect_out_contains "2100-01-01T00:00:00+00:00" "lock list piped: UTC"
on_tty lock list orders
expect_rc 0 "lock list on a terminal"
first=$(printf '%s\n' "$OUT" | head -n 1)
case "$first" in *KEY*HOLDER*EXPIRES*STATE*RUN*) pass ;; *) fail "lock list: header: $first" ;; esac
expect_out_contains "2100-01-01 09:00:00 +0900" "lock list: local expiry on a terminal"
run lock list orders --json
expect_json 'any(l["expires"] == "2100-01-01T00:00:00+00:00" for l in d)' "lock list --json: UTC"

finish
