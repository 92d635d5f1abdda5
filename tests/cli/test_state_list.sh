#!/usr/bin/env bash
# `state list PIPELINE` lists that pipeline's keys (PIPELINE::..., never
# PIPELINE_archive::...); a byte prefix is `state list --prefix P`; an
# argument with '::' in it is still a prefix, as it always was.
. "$(dirname "$0")/lib.sh"

for k in P::default P::eu::bookmark P_archive::default Px::default T::P::default; do
	run --state file:st state put "$k" '{"v":1}'
done

run --state file:st state list P
expect_rc 0 "list PIPELINE"
expect_out "$(printf 'P::default\nP::eu::bookmark')" "only the pipeline's keys, not P_archive's or Px's"
run --state file:st state list P --json
expect_json "d == ['P::default', 'P::eu::bookmark']" "--json too"
run --state file:st state list --prefix P
expect_out "$(printf 'P::default\nP::eu::bookmark\nP_archive::default\nPx::default')" "--prefix is a byte prefix"
run --state file:st state list --prefix=P_
expect_out "P_archive::default" "--prefix=VALUE"
run --state file:st state list P::e
expect_out "P::eu::bookmark" "an argument with '::' is a prefix, as before"
run --state file:st state list P --tenant T
expect_out "T::P::default" "--tenant T: the tenant's pipeline"
run --state file:st state list
expect_rc 0 "list without an argument"
expect_out_contains "Px::default" "every key"
run --state file:st state list P --prefix P
expect_rc 2 "PIPELINE and --prefix together"
run --state file:st state list --tenant T
expect_rc 2 "--tenant without a PIPELINE"
run --state file:st state list P --tenant 'a::b'
expect_rc 2 "a bad tenant"

finish
