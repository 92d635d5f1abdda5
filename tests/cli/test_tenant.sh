#!/usr/bin/env bash
# --tenant T on the commands that take a PIPELINE: the tenant's namespace
# T::PIPELINE:: and nothing of the untenanted pipeline of the same name.
. "$(dirname "$0")/lib.sh"

run --state file:st state put acme::orders::eu '{"offset":1}'
run --state file:st state put orders::eu '{"offset":9}'

# export / copy --to: the tenant's namespace.
run --state file:st state export orders --tenant acme
expect_rc 0 "export --tenant"
expect_json "d['pipeline'] == 'acme::orders' and list(d['keys']) == ['acme::orders::eu']" "the tenant's keys only"
run --state file:st state copy orders --tenant acme --to file:dst
expect_rc 0 "copy --tenant --to"
expect_err_contains "undo: faucet state undo acme --row orders" "the copy is a run of the tenant's pipeline"
run --state file:dst state list
expect_out "acme::orders::eu" "only the tenant's key was copied"

# runs / undo: the tenant's pipeline's runs.
run --state file:st state put acme::orders::eu '{"offset":2}'
run --state file:st state runs orders --tenant acme --json
expect_rc 0 "runs --tenant"
expect_json "len(d) == 1 and d[0]['scope'] == 'acme::orders' and len(d[0]['runs']) == 2" "the tenant pipeline's two runs"
run --state file:st state runs orders --json
expect_json "all(s['scope'].startswith('orders') for s in d)" "without --tenant: the untenanted pipeline's"
run --state file:st state undo orders --tenant acme
expect_rc 0 "undo --tenant"
run --state file:st state get acme::orders::eu
expect_out '{"offset":1}' "the tenant's newest run was undone"
run --state file:st state get orders::eu
expect_out '{"offset":9}' "the untenanted pipeline is untouched"
run --state file:st state undo orders --tenant acme --row eu
expect_rc 2 "--tenant with --row"
expect_one_error_line "one line"

# A bad tenant is exit 2 wherever --tenant is taken.
for cmd in "state export orders" "state copy orders --to file:x" "state runs orders" \
	"state undo orders" "state list orders" "state move orders o2" "state show orders" \
	"state clear orders --yes"; do
	# shellcheck disable=SC2086
	run --state file:st $cmd --tenant 'a::b'
	expect_rc 2 "$cmd: bad tenant"
	expect_err_contains "not a tenant name" "$cmd: says why"
done

finish
