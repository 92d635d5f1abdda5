#!/usr/bin/env bash
# Bad input deep inside a large import document: a value that is not valid
# JSON past the first megabyte, and a key outside the pipeline at the
# millionth member.  Each is a clear error naming where (exit 2), and the
# report is true: nothing was written, the store holds what it held.
. "$(dirname "$0")/lib.sh"

python3 - <<'PY'
n = 1000000
with open("badkey.json", "w") as f:
    f.write('{"version":1,"pipeline":"scale","exported_at":"2026-11-30T00:00:00+00:00","keys":{')
    for i in range(n):
        k = "scale::k%07d" % i if i != n - 1 else "other::k%07d" % i
        f.write('%s"%s":{"n":%d}' % ("," if i else "", k, i))
    f.write("}}")
with open("badjson.json", "w") as f:
    f.write('{"version":1,"pipeline":"scale","exported_at":"2026-11-30T00:00:00+00:00","keys":{')
    i = size = 0
    while size < 1100000:
        s = '%s"scale::k%07d":{"n":%d}' % ("," if i else "", i, i)
        f.write(s)
        size += len(s)
        i += 1
    f.write(',"scale::bad":{"n":01}}}')
PY

run --state sqlite:s.db state put scale::k0000001 '"before"'
expect_rc 0 "a key that must survive"

run --state sqlite:s.db state import badjson.json
expect_rc 2 "invalid JSON past the first megabyte"
expect_one_error_line "invalid JSON past the first megabyte"
expect_err_contains "'scale::bad' (value at byte 1100" "the error names the key and the byte"
run --state sqlite:s.db state list
expect_out "scale::k0000001" "nothing of the bad document was written"
run --state sqlite:s.db state get scale::k0000001
expect_out '"before"' "the existing value is untouched"

run --state sqlite:s.db --json state import badkey.json --replace
expect_rc 2 "a key outside the pipeline at the millionth member"
expect_err_contains "'other::k0999999' is outside the namespace 'scale::'" "the error names the key"
run --state sqlite:s.db state list
expect_out "scale::k0000001" "nothing was written or deleted"

# A file-store import that fails part-way: the report lists exactly the
# keys that landed, in order, and no temp file is left.  Each chunk (here
# 100 keys, FAUCET_TEST_IMPORT_CHUNK) is written as one batch against the
# values read first (design 8.2), so the chunk holding the unreadable key
# writes nothing and the three before it land whole.
python3 - <<'PY'
with open("doc600.json", "w") as f:
    f.write('{"version":1,"pipeline":"scale","exported_at":"2026-11-30T00:00:00+00:00","keys":{')
    f.write(",".join('"scale::k%07d":{"n":%d}' % (i, i) for i in range(600)))
    f.write("}}")
PY
mkdir -m 700 st && mkdir st/scale%3A%3Ak0000300.json
FAUCET_TEST_IMPORT_CHUNK=100 run --state file:st --json state import doc600.json
expect_rc 1 "an import that fails part-way"
expect_json 'len(d["written"]) == 300 and d["written"][0] == "scale::k0000000" and d["written"][-1] == "scale::k0000299" and d["durability_unknown"] == [] and "scale::k0000300" in d["error"]["message"]' "the report names exactly the 300 keys before the failure"
rmdir st/scale%3A%3Ak0000300.json
run --state file:st state list scale::
if [ "$(printf '%s\n' "$OUT" | wc -l)" = 300 ] && [ "$(printf '%s\n' "$OUT" | tail -1)" = scale::k0000299 ]; then pass; else fail "the store holds exactly the reported keys"; fi
if ls st | grep -q '\.tmp$'; then fail "no temp file is left: $(ls st | grep tmp | head -3)"; else pass; fi

# A read command on a store that does not exist creates nothing either.
run --state sqlite:fresh.db state import badkey.json
expect_rc 2 "into a new store"
expect_no_file fresh.db "a refused import creates no store"
finish
