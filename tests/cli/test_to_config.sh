#!/usr/bin/env bash
# `state copy` and `state import` into a store given as a config file
# (--to-config FILE, e.g. an encrypted one), and the YAML's name as the
# default PIPELINE of `state export` and `state copy` with -c.
. "$(dirname "$0")/lib.sh"

export DST_KEY=to-config-destination-key-0123456789
cat > dst.yaml <<'YAML'
name: orders
state:
  type: file
  config:
    path: dst
    encryption:
      key: ${env:DST_KEY}
YAML
cat > src.yaml <<'YAML'
name: orders
state: {type: file, config: {path: src}}
YAML
run state put --state file:src orders::default '{"c":1}'
run state put --state file:src orders::eu '{"c":2}'
run state put --state file:src shop::default '{"c":3}'

# ---- copy into an encrypted store named by a config ----
run state copy --state file:src orders --to-config dst.yaml
expect_rc 0 "copy --to-config"
plain=""
for f in dst/*.json; do
	[ "$(head -c 4 "$f")" = FCT1 ] || plain="$plain $f"
done
if [ -z "$plain" ] && [ "$(ls dst/*.json | wc -l)" -ge 2 ]; then pass; else fail "every copied file is sealed (plain:$plain)"; fi
run state get -c dst.yaml orders::eu
expect_out '{"c":2}' "the copy reads back through the config"
run state get -c dst.yaml shop::default
expect_out "" "only the pipeline was copied"
expect_err_lacks "$DST_KEY" "no key material in messages"

# ---- import into a store named by a config ----
run state export --state file:src orders -o orders.json
expect_rc 0 "export"
cat > dst2.yaml <<'YAML'
state: {type: sqlite, config: {path: dst2.db}}
YAML
run state import orders.json --to-config dst2.yaml
expect_rc 0 "import --to-config"
run state get --state sqlite:dst2.db orders::default
expect_out '{"c":1}' "the import landed in the config's store"

# ---- bad uses ----
run state copy --state file:src orders --to file:x --to-config dst.yaml
expect_rc 2 "--to and --to-config together"
run state copy --state file:src orders
expect_rc 2 "neither --to nor --to-config"
cat > nostate.yaml <<'YAML'
name: orders
YAML
run state copy --state file:src orders --to-config nostate.yaml
expect_rc 2 "--to-config without a state: block"
expect_err_contains "has no state: block" "says so"
run state import orders.json --to-config missing.yaml
expect_rc 2 "--to-config naming a missing file"
expect_one_error_line "a missing --to-config file"
export DST_KEY=
run state copy --state file:src orders --to-config dst.yaml
expect_rc 2 "a destination config whose key is empty"

# ---- -c: the YAML's name is the default PIPELINE ----
run state export -c src.yaml
expect_rc 0 "export with -c and no PIPELINE"
expect_json 'd["pipeline"] == "orders" and sorted(d["keys"]) == ["orders::default", "orders::eu"]' \
	"exports the YAML's pipeline"
run state copy -c src.yaml --to file:d3
expect_rc 0 "copy with -c and no PIPELINE"
run state list --state file:d3
expect_out "orders::default
orders::eu" "copies the YAML's pipeline"

finish
