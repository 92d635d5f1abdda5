#!/usr/bin/env bash
# "did you mean" beyond commands and flags: backend types, YAML fields, time
# zones and store URLs (a mistyped scheme, or a bare path on any URL
# argument).  Each is one error line, exit 2, and creates nothing.
. "$(dirname "$0")/lib.sh"

# Backend types: in a URL and in a YAML's state.type.
run --state sqllite:$PWD/s.db state list
expect_rc 2 "--state sqllite:"
expect_one_error_line "one line"
expect_err_contains "did you mean sqlite:$PWD/s.db?" "the URL it was meant to be"
run --state redsi://localhost:6379/0 state list
expect_err_contains "did you mean redis://localhost:6379/0?" "redis"
printf 'name: p\nstate:\n  type: sqllite\n  config:\n    path: ./s.db\n' > type.yaml
run -c type.yaml state list
expect_rc 2 "state.type sqllite"
expect_err_contains "did you mean 'sqlite'?" "the type it was meant to be"
expect_err_contains "line 3" "where"

# YAML fields.
printf 'name: p\nstate:\n  type: file\n  config:\n    paht: ./st\n' > field.yaml
run -c field.yaml state list
expect_rc 2 "field paht"
expect_one_error_line "one line"
expect_err_contains "unknown field 'paht' (did you mean 'path'?" "the field it was meant to be"
expect_err_contains "line 5" "where"

# Time zones: flag and YAML.
run --state file:st state put p::default '{"v":1}'
run --state file:st backfill --pipeline p --from 2026-01-01 --to 2026-01-02 --timezone Europe/Berln --dry-run -- true
expect_rc 2 "--timezone Europe/Berln"
expect_one_error_line "one line"
expect_err_contains "unknown time zone 'Europe/Berln' (did you mean 'Europe/Berlin'?)" "the zone it was meant to be"
printf 'name: p\nbackfill:\n  timezone: America/New_Yrok\nstate:\n  type: file\n  config:\n    path: ./st\n' > tz.yaml
run -c tz.yaml backfill --from 2026-01-01 --to 2026-01-02 --dry-run -- true
expect_rc 2 "backfill.timezone America/New_Yrok"
expect_err_contains "did you mean 'America/New_York'?" "from the YAML too"
run --state file:st backfill status --pipeline p --from 2026-01-01 --to 2026-01-02 --timezone Europe/Berln
expect_rc 2 "backfill status --timezone"
expect_err_contains "did you mean 'Europe/Berlin'?" "status too"
run --state file:st backfill --pipeline p --from 2026-01-01 --to 2026-01-02 --timezone Nowhere/Atall --dry-run -- true
expect_rc 2 "a zone nothing is near"
expect_err_lacks "did you mean" "no suggestion when nothing is near"

# The bare-path hint on every URL argument.
run --state "$PWD/s.db" state list
expect_rc 2 "--state PATH.db"
expect_err_contains "did you mean sqlite:$PWD/s.db?" "--state: a .db file is SQLite"
mkdir dir
run --state dir state list
expect_err_contains "did you mean file:dir?" "--state: a directory is a file store"
run --state file:st state copy p --to /x/s.db
expect_rc 2 "copy --to PATH"
expect_one_error_line "one line"
expect_err_contains "did you mean sqlite:/x/s.db?" "--to gets the hint too"
run --state file:st state copy p --to sqllite:$PWD/c.db
expect_rc 2 "copy --to sqllite:"
expect_err_contains "did you mean sqlite:$PWD/c.db?" "--to: the scheme"
FAUCET_STATE=relative/st.sqlite run state list
expect_rc 2 "FAUCET_STATE PATH"
expect_err_contains "did you mean sqlite:relative/st.sqlite?" "FAUCET_STATE too"
expect_no_file s.db "nothing was created"
expect_no_file c.db "nothing was created (--to)"
expect_no_file relative "nothing was created (FAUCET_STATE)"

finish
