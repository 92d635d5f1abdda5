#!/usr/bin/env bash
# Store selection and pipeline YAML configs: -c, FAUCET_CONFIG, FAUCET_STATE
# and their order; ${env:VAR} (set, unset, set-but-empty); bad YAML with its
# line; wrong fields and values; encryption settings and the rule that key
# material never appears in any output.
. "$(dirname "$0")/lib.sh"

cfg() { cat >"$1"; }

# ---- a plain config ----
cfg basic.yaml <<'YAML'
name: orders
source:
  type: postgres
  config:
    password: ${env:SOURCE_PASSWORD_NOT_SET_HERE}
state:
  type: file
  config:
    path: ./cstate
backfill:
  window: 1d
  concurrency: 4
  timezone: Europe/Berlin
  command: ["load", "--from", "${backfill.start}"]
YAML
run state put -c basic.yaml orders::default '{"c":1}'
expect_rc 0 "put through a config"
expect_file "cstate/orders%3A%3Adefault.json" "the config's path is used"
run state get --config basic.yaml orders::default
expect_out '{"c":1}' "get through --config"
run state get --config=basic.yaml orders::default
expect_out '{"c":1}' "--config=FILE"

# A relative path is relative to the current directory, not the config's.
mkdir sub
cfg sub/rel.yaml <<'YAML'
state: {type: file, config: {path: relstate}}
YAML
run state put -c sub/rel.yaml r::k 1
expect_file "relstate/r%3A%3Ak.json" "relative path from the current directory"
expect_no_file "sub/relstate" "not from the config's directory"

# ---- selection order ----
cfg other.yaml <<'YAML'
state: {type: file, config: {path: ostate}}
YAML
FAUCET_CONFIG=other.yaml run state put sel::k '"from FAUCET_CONFIG"'
expect_file "ostate/sel%3A%3Ak.json" "FAUCET_CONFIG selects the config"
FAUCET_CONFIG=other.yaml run state get -c basic.yaml sel::k
expect_out "" "-c wins over FAUCET_CONFIG"
FAUCET_CONFIG=other.yaml run state get --state file:ostate -c basic.yaml sel::k
expect_out '"from FAUCET_CONFIG"' "--state wins over -c"
FAUCET_STATE=file:cstate FAUCET_CONFIG=other.yaml run state get sel::k
expect_out '"from FAUCET_CONFIG"' "FAUCET_CONFIG wins over FAUCET_STATE"
FAUCET_STATE=file:cstate run state get orders::default
expect_out '{"c":1}' "FAUCET_STATE is used when nothing else is given"

# A config without a state block names no store: an error, not a silent
# fall-back to ./.faucet-state.
cfg nostate.yaml <<'YAML'
name: plain
YAML
run state put -c nostate.yaml n::k 1
expect_rc 2 "no state block"
expect_one_error_line "no state block"
expect_err_contains "has no state: block" "no state block: the error says so"
expect_no_file ".faucet-state" "no state block: nothing written to ./.faucet-state"

# A memory store by config.
cfg mem.yaml <<'YAML'
state:
  type: memory
YAML
run state list -c mem.yaml
expect_rc 0 "memory store by config"

# ---- ${env:VAR} ----
cfg env.yaml <<'YAML'
state:
  type: file
  config:
    path: ./${env:STATE_DIR}/x${env:EMPTY_PART}y
YAML
STATE_DIR=envdir EMPTY_PART= run state put -c env.yaml e::k 1
expect_rc 0 "\${env:VAR} substituted"
expect_file "envdir/xy/e%3A%3Ak.json" "set-but-empty variable is the empty string"
EMPTY_PART= run state put -c env.yaml e::k 2
expect_rc 2 "unset variable"
expect_one_error_line "unset variable"
expect_err_contains "STATE_DIR" "the unset variable is named"
expect_err_contains "env.yaml" "the config file is named"
expect_err_contains "line 4" "the line is named"
STATE_DIR=envdir run state put -c env.yaml e::k 3
expect_rc 2 "the second variable unset"
expect_err_contains "EMPTY_PART" "the second unset variable is named"
cfg unterminated.yaml <<'YAML'
state: {type: file, config: {path: "${env:OOPS"}}
YAML
run state list -c unterminated.yaml
expect_rc 2 "unterminated \${env:"
expect_err_contains "unterminated" "unterminated reference is reported"

# ---- bad YAML and bad fields: exit 2, one line, file and line named ----
cfg bad.yaml <<'YAML'
name: x
state:
  type: [file
  config: {}
YAML
run state list -c bad.yaml
expect_rc 2 "bad YAML"
expect_one_error_line "bad YAML"
expect_err_contains "bad.yaml" "bad YAML names the file"
expect_err_contains "line " "bad YAML names a line"
run state list -c does-not-exist.yaml
expect_rc 2 "missing config file"
expect_one_error_line "missing config file"
expect_err_contains "does-not-exist.yaml" "the missing config is named"
FAUCET_CONFIG=does-not-exist.yaml run state list
expect_rc 2 "missing FAUCET_CONFIG file"
expect_err_contains "FAUCET_CONFIG" "the error says where the path came from"
: >empty.yaml
run state list -c empty.yaml
expect_rc 2 "empty config"
cfg unknown-type.yaml <<'YAML'
state:
  type: cassandra
YAML
run state list -c unknown-type.yaml
expect_rc 2 "unknown store type"
expect_one_error_line "unknown store type"
expect_err_contains "cassandra" "the type is named"
expect_err_contains "file" "the known types are listed"
cfg typo.yaml <<'YAML'
state:
  type: file
  config:
    pth: ./oops
YAML
run state list -c typo.yaml
expect_rc 2 "unknown field"
expect_err_contains "pth" "the unknown field is named"
expect_err_contains "line 4" "the unknown field's line"
expect_no_file oops "nothing was created for a bad config"
cfg notype.yaml <<'YAML'
state:
  config: {path: x}
YAML
run state list -c notype.yaml
expect_rc 2 "state without type"
cfg dup.yaml <<'YAML'
state:
  type: file
  type: memory
YAML
run state list -c dup.yaml
expect_rc 2 "duplicate field"
expect_err_contains "twice" "duplicate field is reported"
cfg maxconn.yaml <<'YAML'
state:
  type: postgres
  config:
    url: postgres://localhost/x
    max_connections: 0
YAML
run state list -c maxconn.yaml
expect_rc 2 "max_connections 0"
expect_err_contains "max_connections" "max_connections is named"
cfg ensure.yaml <<'YAML'
state:
  type: postgres
  config: {url: "postgres://localhost/x", ensure_table: maybe}
YAML
run state list -c ensure.yaml
expect_rc 2 "ensure_table not a bool"
cfg conc.yaml <<'YAML'
backfill:
  concurrency: 0
YAML
run state list -c conc.yaml
expect_rc 2 "backfill.concurrency 0"
expect_err_contains "backfill.concurrency" "the backfill field is named"
cfg cmdstr.yaml <<'YAML'
backfill:
  command: "load --all"
YAML
run state list -c cmdstr.yaml
expect_rc 2 "backfill.command as a string"
expect_err_contains "list" "backfill.command must be a list"

# ---- encryption settings; key material never printed ----
SECRET=correct-horse-battery-staple-42
export SECRET
cfg enc-empty.yaml <<'YAML'
state:
  type: file
  config:
    path: encstate
    encryption:
      key: ${env:EMPTY_KEY}
YAML
EMPTY_KEY= run state put -c enc-empty.yaml k::a 1
expect_rc 2 "an empty encryption key"
expect_err_contains "empty" "the empty key is reported"
expect_no_file encstate "nothing written with an empty key"
cfg enc-algo.yaml <<'YAML'
state:
  type: file
  config:
    path: encstate
    encryption: {key: "${env:SECRET}", algorithm: chacha20}
YAML
run state put -c enc-algo.yaml k::a 1
expect_rc 2 "an unknown algorithm"
expect_err_contains "chacha20" "the algorithm is named"
expect_err_lacks "$SECRET" "the key is not in the error"
cfg enc-redis.yaml <<'YAML'
state:
  type: redis
  config:
    url: redis://localhost:6379
    encryption: {key: "${env:SECRET}"}
YAML
run state list -c enc-redis.yaml
expect_rc 2 "encryption on a non-file store"
expect_err_lacks "$SECRET" "the key is not in the error"
cfg enc-keyenv.yaml <<'YAML'
state:
  type: file
  config:
    path: encstate
    encryption: {key_env: NOT_SET_KEY_VAR}
YAML
run state list -c enc-keyenv.yaml
expect_rc 2 "key_env naming an unset variable"
expect_err_contains "NOT_SET_KEY_VAR" "the variable is named"

run state put --state file:encstate --encryption-key-env NO_SUCH_VAR k::a 1
expect_rc 2 "--encryption-key-env with an unset variable"
expect_err_contains "NO_SUCH_VAR" "the variable is named"
EMPTYK= run state put --state file:encstate --encryption-key-env EMPTYK k::a 1
expect_rc 2 "--encryption-key-env with an empty variable"
run state list --state memory: --encryption-key-env SECRET
expect_rc 2 "--encryption-key-env on a non-file store"
expect_err_lacks "$SECRET" "the key is not in the error"
expect_no_file encstate "no store was created by the failures"

# An encrypted round trip: the file on disk is sealed, the key opens it, and
# reading without the key is an error, never "no bookmark".
run state put --state file:encstate --encryption-key-env SECRET k::a '{"cursor":"visible-text"}'
expect_rc 0 "put with --encryption-key-env"
if grep -rq "visible-text" encstate 2>/dev/null; then fail "the value is sealed on disk"; else pass; fi
run state get --state file:encstate --encryption-key-env SECRET k::a --json
expect_json 'd["value"] == {"cursor": "visible-text"}' "get with the key"
expect_out_lacks "$SECRET" "the key is not in the output"
run state get --state file:encstate k::a
expect_rc 1 "reading a sealed file without the key"
expect_one_error_line "sealed file without a key"
run state export --state file:encstate --encryption-key-env SECRET k
expect_json 'd["keys"]["k::a"] == {"cursor": "visible-text"}' "export decrypts (plaintext document)"
cfg enc-ok.yaml <<'YAML'
state:
  type: file
  config:
    path: encstate
    encryption:
      key: ${env:SECRET}
      algorithm: aes-256-gcm
YAML
run state get -c enc-ok.yaml k::a
expect_out '{"cursor":"visible-text"}' "the YAML key opens the same store"
run doctor -c enc-ok.yaml --json
expect_out_lacks "$SECRET" "doctor output has no key"
expect_err_lacks "$SECRET" "doctor errors have no key"

finish
