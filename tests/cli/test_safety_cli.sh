#!/usr/bin/env bash
# What the command must never do with what it is given: print a password
# or a ${env:...} value, print control characters raw, create a store on a
# read, store a value it cannot hold exactly; and what a failed condition
# and a --json failure tell the caller.
. "$(dirname "$0")/lib.sh"

SECRET=s3cretPW

# expect_no_secret WHAT: neither stream shows $SECRET.
expect_no_secret() {
	expect_out_lacks "$SECRET" "$1 (stdout)"
	expect_err_lacks "$SECRET" "$1 (stderr)"
}

# ---- passwords in store URLs, in every spelling ----
for url in "postgres://u:$SECRET@127.0.0.1:1/db" \
	"postgres://u@127.0.0.1:1/db?password=$SECRET" \
	"postgres://u@127.0.0.1:1/db?sslmode=disable&password=$SECRET&table=t" \
	"redis://:$SECRET@127.0.0.1:1/0" \
	"redis://$SECRET@127.0.0.1:1/0" \
	"redis://127.0.0.1:1/0?password=$SECRET"; do
	run --state "$url" doctor --timeout 2s
	expect_rc_not0=$RC
	if [ "$expect_rc_not0" -ne 0 ]; then pass; else fail "doctor of $url should fail"; fi
	expect_no_secret "doctor $url"
	run --json --state "$url" doctor --timeout 2s
	expect_no_secret "doctor --json $url"
	run --state "$url" state get a::b
	expect_no_secret "get $url"
	run --json --state "$url" state put a::b 1
	expect_no_secret "put --json $url"
done
run --state "memory:?password=$SECRET" state get a
expect_rc 2 "memory: with options is a bad URL"
expect_no_secret "memory: URL"
expect_err_contains "password=***" "the option is named, its value hidden"

# The same URL in a config's url: field.
cat >pg.yaml <<YAML
state: {type: postgres, config: {url: "postgres://u@127.0.0.1:1/db?password=$SECRET"}}
YAML
run -c pg.yaml doctor --timeout 2s
expect_no_secret "doctor of a config with a password in its url"

finish
