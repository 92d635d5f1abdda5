#!/usr/bin/env bash
# test_ha_urls.sh - the addresses of replicated stores: a malformed
# redis-sentinel:// or multi-host postgres:// URL, or a bad Sentinel
# option, is one clear error naming what is wrong, exit 2, and nothing is
# written (doc/design.md §3.9).  No server is needed: each is refused
# before any connection.
. "$(dirname "$0")/lib.sh"

bad_url() { # URL TEXT WHAT
	run --state "$1" state put pipe/k 1
	expect_rc 2 "$3"
	expect_one_error_line "$3"
	expect_err_contains "$2" "$3"
	expect_no_file .faucet-state "$3: nothing written"
}

bad_url 'redis-sentinel://127.0.0.1:26379' 'no master name' 'sentinel URL without a master'
bad_url 'redis-sentinel://127.0.0.1:26379/' 'no master name' 'sentinel URL with an empty master'
bad_url 'redis-sentinel://127.0.0.1:26379,127.0.0.1:99999/m' "sentinel 2 has a bad port '99999'" 'sentinel port out of range'
bad_url 'redis-sentinel://127.0.0.1:2x/m' "sentinel 1 has a bad port '2x'" 'sentinel port not a number'
bad_url 'redis-sentinel://127.0.0.1:1,,127.0.0.1:2/m' 'sentinel 2 of the list has no host' 'sentinel list with an empty host'
bad_url 'redis-sentinel://:sekrit@127.0.0.1:1/m/x' 'must be a database number' 'sentinel URL with a bad database'
bad_url 'redis-sentinel://127.0.0.1:1/m?min_replicas=0' "option 'min_replicas' must be a whole number" 'min_replicas 0'
bad_url 'redis-sentinel://127.0.0.1:1/m?wait_timeout=0s' "option 'wait_timeout' must be a duration" 'wait_timeout 0 (WAIT N 0 blocks for ever)'
bad_url 'redis-sentinel://127.0.0.1:1/m?wait_timeout=5' "option 'wait_timeout' must be a duration" 'wait_timeout without a unit'
bad_url 'redis://127.0.0.1:1/0?min_replicas=1' "unknown option 'min_replicas'" 'min_replicas on plain redis'
bad_url 'postgres://u@127.0.0.1:5432,,127.0.0.1:5433/db' 'host 2 of the host list is empty' 'multi-host URL with an empty host'
bad_url 'postgres://u@127.0.0.1:5432,/db?target_session_attrs=read-write' 'host 2 of the host list is empty' 'multi-host URL with a trailing comma'
bad_url 'postgres://u@,127.0.0.1:5433/db' 'host 1 of the host list is empty' 'multi-host URL with a leading comma'
bad_url 'postgres://u@127.0.0.1:5432,127.0.0.1:70000/db' "host 2 has a bad port '70000'" 'multi-host URL with a bad port'

# A password in a refused URL is never shown.
run --state 'redis-sentinel://:sekrit@127.0.0.1:1' state get pipe/k
expect_rc 2 'sentinel URL with a password and no master'
expect_err_lacks sekrit 'the password is redacted'
run --state 'redis-sentinel://sekrit@127.0.0.1:1/m' state get pipe/k
expect_rc 2 'sentinel URL with a password but no colon'
expect_err_lacks sekrit 'the password without a colon is redacted'

# The YAML form: type redis-sentinel with its fields.
cat >bad1.yml <<'YML'
name: p
state:
  type: redis-sentinel
  config:
    url: redis-sentinel://127.0.0.1:1/m
    min_replicas: 0
YML
run -c bad1.yml state get pipe/k
expect_rc 2 'YAML min_replicas 0'
expect_err_contains 'state.config.min_replicas must be a whole number from 1' 'YAML min_replicas 0'
cat >bad2.yml <<'YML'
name: p
state:
  type: redis-sentinel
  config:
    url: redis-sentinel://127.0.0.1:1/m
    wait_timeout: forever
YML
run -c bad2.yml state get pipe/k
expect_rc 2 'YAML wait_timeout'
expect_err_contains 'state.config.wait_timeout must be a duration' 'YAML wait_timeout'
cat >bad3.yml <<'YML'
name: p
state:
  type: redis
  config:
    url: redis://127.0.0.1:1/0
    min_replicas: 1
YML
run -c bad3.yml state get pipe/k
expect_rc 2 'YAML min_replicas on type redis'
expect_err_contains "state.config.min_replicas does not apply to type 'redis'" 'YAML min_replicas on type redis'
cat >bad4.yml <<'YML'
name: p
state:
  type: redis-sentinel
  config:
    url: redis-sentinel://127.0.0.1:1
YML
run -c bad4.yml state put pipe/k 1
expect_rc 2 'YAML sentinel URL without a master'
expect_err_contains 'no master name' 'YAML sentinel URL without a master'
cat >bad5.yml <<'YML'
name: p
state:
  type: redis-sentinel
  config:
    url: redis-sentinel://127.0.0.1:1/m?min_replicas=1
    min_replicas: 2
YML
run -c bad5.yml state get pipe/k
expect_rc 2 'min_replicas in the URL and the YAML'
expect_err_contains "option 'min_replicas' is given both" 'min_replicas in the URL and the YAML'
expect_no_file .faucet-state 'nothing written by the YAML cases'

finish
