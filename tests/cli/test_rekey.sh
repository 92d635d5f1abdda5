#!/usr/bin/env bash
# `faucet state rekey`: rotate the file store's encryption key with the
# command line alone - old files stay readable through previous_keys, rekey
# re-seals them, and afterwards a store that knows only the new key reads
# everything.  The key never appears in any output.
. "$(dirname "$0")/lib.sh"

export OLD_KEY='old-s3cret-1d2e3f' NEW_KEY='new-s3cret-4a5b6c'
cat > old.yaml <<'YAML'
name: orders
state:
  type: file
  config:
    path: ./state
    encryption:
      key: ${env:OLD_KEY}
YAML
cat > rotated.yaml <<'YAML'
name: orders
state:
  type: file
  config:
    path: ./state
    encryption:
      key: ${env:NEW_KEY}
      previous_keys: ["${env:OLD_KEY}"]
      algorithm: aes-256-gcm
YAML

run -c old.yaml state put orders::a '{"offset":1}'
expect_rc 0 "put with the old key"
run -c old.yaml state put orders::b '{"offset":18446744073709551615}'
expect_rc 0 "second put with the old key"
if [ "$(head -c 4 state/orders%3A%3Aa.json)" = "FCT1" ]; then pass; else fail "state files are sealed"; fi

# A store that knows only the new key cannot read the old files: an error, not "absent".
run --state file:./state --encryption-key-env NEW_KEY state get orders::a
expect_rc 1 "new key alone fails before rekey"
expect_err_contains "could not be decrypted" "the failure says why"

# Every file is re-sealed: the two bookmarks and the run bookkeeping their
# puts recorded (which holds before-images: data too).
nfiles=$("$FAUCET_BIN" -c rotated.yaml state list --all | wc -l)
run -c rotated.yaml state rekey
expect_rc 0 "rekey succeeds"
expect_out_contains "re-sealed $nfiles files" "rekey reports what it did"

run --state file:./state --encryption-key-env NEW_KEY state get orders::b
expect_rc 0 "new key alone reads after rekey"
expect_out '{"offset":18446744073709551615}' "value unchanged by rekey"
run --state file:./state --encryption-key-env OLD_KEY state get orders::a
expect_rc 1 "the old key no longer opens re-sealed files"

run -c rotated.yaml --json state rekey
expect_rc 0 "rekey --json"
expect_json "d['rewritten'] == $nfiles and d['skipped'] == 0" "rekey --json counts"

# Without encryption there is nothing to rekey: a usage error, nothing written.
run --state file:./plain state rekey
expect_rc 2 "rekey needs an encrypted store"
expect_err_contains "needs an encrypted file store" "rekey explains"

run -c rotated.yaml state rekey --help
expect_rc 0 "rekey --help"
expect_out_contains "previous_keys" "help mentions previous keys"

# Key material never appears in anything printed above.
if grep -r -q -e "$OLD_KEY" -e "$NEW_KEY" "$WORK/.out" "$WORK/.err" state 2>/dev/null; then
	fail "key material leaked into output or state files"
else
	pass
fi
finish
