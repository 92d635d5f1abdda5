#!/usr/bin/env bash
# `faucet run`, `state runs`, `state undo` and `lock list/break`
# (doc/design.md §8): the lease (exit 75, --wait), the recorded outcome and exit
# status, the child's environment, signals, Singer state capture, undo with
# and without conflicts, and bad input that must write nothing.
. "$(dirname "$0")/lib.sh"

export FAUCET_STATE=file:$PWD/st
J() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# ---- a run and its record ----
run state put p::default '{"n":1}'
run run --pipeline p -- sh -c 'echo hello; printf "%s\n" "$FAUCET_RUN_ID" > id; env | grep ^FAUCET_ | sort > env'
expect_rc 0 "a run of a command that succeeds"
expect_out "hello" "stdout belongs to the command"
ID=$(cat id)
expect_err_contains "run $ID" "the run id is on stderr"
expect_err_contains "it changed nothing" "a run that changed nothing says so (no undo hint)"
expect_err_lacks "faucet state undo" "and prints no undo command"
for v in "FAUCET_RUN_ID=$ID" FAUCET_RUN_PIPELINE=p FAUCET_RUN_ROW=default \
	 FAUCET_STATE_KEY=p::default "FAUCET_STATE=file:$PWD/st"; do
	if grep -qx "$v" env; then pass; else fail "the command's environment has $v"; fi
done
run state get p::default::__status__
expect_json "d['runs'][0]['run'] == '$ID' and d['runs'][0]['outcome'] == 'ok' and d['runs'][0]['exit_status'] == 0" "status entry"
expect_json "d['runs'][0]['ended_at'].endswith('+00:00') and d['runs'][0]['by']['command'].startswith('sh -c')" "status times and by"
run state get p::default::__lease__
expect_out "" "the lease is released at the end"

run run --pipeline p --row r2 -- sh -c 'exit 3'
expect_rc 3 "the command's exit status is faucet's"
run state get p::r2::__status__
expect_json "d['runs'][0]['outcome'] == 'failed' and d['runs'][0]['exit_status'] == 3 and d['runs'][0]['message'] == 'exit status 3'" "a failed run is recorded"

# ---- -c FILE: the pipeline's name and store come from the config ----
cat > pipe.yaml <<'YAML'
name: cfgpipe
state:
  type: file
  config:
    path: cfgstate
YAML
(unset FAUCET_STATE; "$FAUCET_BIN" run -c pipe.yaml -- sh -c 'printf "%s\n" "$FAUCET_CONFIG" "$FAUCET_STATE_KEY" "${FAUCET_STATE:-none}" > cfgenv') 2>/dev/null
RC=$?; expect_rc 0 "a run from a config"
if [ "$(sed -n 1p cfgenv)" = "$PWD/pipe.yaml" ]; then pass; else fail "the command gets the config's absolute path: $(sed -n 1p cfgenv)"; fi
if [ "$(sed -n 2p cfgenv)" = "cfgpipe::default" ]; then pass; else fail "the pipeline comes from the config's name"; fi
if [ "$(sed -n 3p cfgenv)" = "none" ]; then pass; else fail "FAUCET_STATE is not set beside FAUCET_CONFIG"; fi
run --state file:cfgstate state get cfgpipe::default::__status__
expect_json "d['runs'][0]['outcome'] == 'ok'" "the run is recorded in the config's store"

# ---- bad input writes nothing ----
before=$(snapshot st)
run run --pipeline p -- no-such-command-here
expect_rc 2 "a command that does not exist"
expect_err_contains "no-such-command-here" "the missing command is named"
expect_same "$before" "$(snapshot st)" "a missing command takes no lease and writes nothing"
run run --pipeline p
expect_rc 2 "no command"
run run --pipeline 'bad key' -- true
expect_rc 2 "a bad pipeline name"
run run --pipeline p --lease-ttl 0s -- true
expect_rc 2 "a lease TTL under 1s"
# Durations that do not fit are refused, never wrapped (a huge TTL used to
# wrap to 0: a lease written already expired): exit 2 naming flag and value.
for v in 18446744073709551615ms 18446744073709551616ms 18446744073709551615 \
	 5124095576030431h 721h 2592000001ms 0 -5s 5x 10d 1.5s '' ' 5s'; do
	run run --pipeline p --lease-ttl "$v" -- true
	expect_rc 2 "--lease-ttl '$v' is refused"
	expect_err_contains "--lease-ttl '$v'" "the message names --lease-ttl '$v'"
	run run --pipeline p --wait="$v" -- true
	expect_rc 2 "--wait='$v' is refused"
	if [ -n "$v" ]; then
		expect_err_contains "--wait '$v'" "the message names --wait '$v'"
	else
		expect_err_contains "--wait= needs a duration" "an empty --wait= is a usage error"
	fi
done
expect_same "$before" "$(snapshot st)" "usage errors write nothing"
run run --pipeline p --row long --lease-ttl 720h --wait=720h -- true
expect_rc 0 "the longest lease TTL and wait (30 days) are taken"
raw_put "$FAUCET_STATE" p::bad::__status__ '{"not":"ours"}'
before=$(snapshot st)
run run --pipeline p --row bad -- true
expect_rc 1 "foreign JSON in __status__"
expect_err_contains "p::bad::__status__" "the foreign key is named"
expect_same "$before" "$(snapshot st)" "foreign JSON: nothing written"

# ---- the lease: busy (75) and --wait ----
mkfifo ready hold
"$FAUCET_BIN" run --pipeline p -- sh -c 'echo up > ready; read x < hold' >/dev/null 2>holder.err &
HOLDER=$!
read -r _ < ready
run run --pipeline p -- true
expect_rc 75 "another run holds the lease"
expect_one_error_line "busy"
expect_err_contains "held by run" "the holder's run is named"
expect_err_contains "until 20" "the expiry is given"
run run --pipeline p --json -- true
expect_rc 75 "busy with --json"
expect_json "d['error']['exit'] == 75" "busy --json error object"
run lock list
expect_out_contains "p::default::__lease__" "lock list shows the run's lease"
expect_out_contains "live" "the lease is live"
run lock list p --json
expect_json "d[0]['key'] == 'p::default::__lease__' and d[0]['state'] == 'live' and d[0]['run']" "lock list --json"
"$FAUCET_BIN" run --pipeline p --wait=20s -- sh -c 'echo waited' >waited.out 2>waited.err &
WAITER=$!
echo go > hold
wait $HOLDER
RC=$?; expect_rc 0 "the holder finished"
wait $WAITER
RC=$?; expect_rc 0 "--wait took the lease once it was released"
if [ "$(cat waited.out)" = waited ]; then pass; else fail "the waiting run ran its command"; fi

# ---- the lease is renewed while the command runs ----
"$FAUCET_BIN" run --pipeline p --row renew --lease-ttl 1s -- sh -c 'echo up > ready; read x < hold' >/dev/null 2>renew.err &
HOLDER=$!
read -r _ < ready
exp() { "$FAUCET_BIN" lock list p --json | J "[l['expires_at'] for l in d if l['key']=='p::renew::__lease__'][0]"; }
first=$(exp)
renewed=0
for _ in $(seq 500); do
	[ "$(exp)" -gt "$first" ] && { renewed=1; break; }
done
if [ $renewed = 1 ]; then pass; else fail "the lease's expiry moves forward while the command runs"; fi
echo go > hold
wait $HOLDER
RC=$?; expect_rc 0 "a run longer than its TTL keeps its lease and ends ok"

# ---- signals: SIGTERM sent to faucet reaches the command, exit 128+15 ----
"$FAUCET_BIN" run --pipeline p --row sig -- sh -c 'trap "exit 7" TERM; echo up > ready; while :; do read x < hold; done' >/dev/null 2>sig.err &
PID=$!
read -r _ < ready
kill -TERM $PID
wait $PID
RC=$?; expect_rc 143 "interrupted by SIGTERM"
run state get p::sig::__status__
expect_json "d['runs'][0]['outcome'] == 'failed' and d['runs'][0]['exit_status'] == 7" "the interrupted run is recorded with the command's status"
run state get p::sig::__lease__
expect_out "" "an interrupted run releases its lease"

# ---- the command never outlives faucet ----
# gone PID...: every PID has ended (a zombie nobody reaped has ended, too).
gone() {
	local p
	for p in "$@"; do
		[ -e "/proc/$p" ] && [ "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)" != Z ] && return 1
	done
	return 0
}
# wait_gone WHAT PID...: poll until they have all ended, for at most 10 s.
wait_gone() {
	local what=$1 deadline=$(( $(date +%s) + 10 ))
	shift
	until gone "$@"; do
		[ "$(date +%s)" -ge "$deadline" ] && { fail "$what (still running: $*)"; kill -KILL "$@" 2>/dev/null; return; }
		sleep 0.05
	done
	pass
}

# faucet killed outright (SIGKILL: nothing of faucet runs): the command dies with it.
"$FAUCET_BIN" run --pipeline p --row killed -- sh -c 'echo $$ > cmd.pid; echo up > ready; exec sleep 1000' >/dev/null 2>killed.err &
FPID=$!
read -r _ < ready
CMD=$(cat cmd.pid)
kill -KILL $FPID
wait $FPID 2>/dev/null
wait_gone "the command dies with a faucet that was killed" "$CMD"

# SIGTERM to faucet reaches the command's whole process group: a process
# the command started ends too, and faucet exits 128+15.
"$FAUCET_BIN" run --pipeline p --row group -- sh -c 'sleep 1000 & echo $! > bg.pid; echo up > ready; wait' >/dev/null 2>group.err &
FPID=$!
read -r _ < ready
BG=$(cat bg.pid)
kill -TERM $FPID
wait $FPID
RC=$?; expect_rc 143 "SIGTERM: faucet exits 128+15"
wait_gone "SIGTERM reaches the processes the command started" "$BG"
run state get p::group::__lease__
expect_out "" "the interrupted run released its lease"

# A command that ends leaving a process behind in its group: the run ends
# and takes it along.
run run --pipeline p --row leftover -- sh -c 'sleep 1000 > /dev/null 2>&1 & echo $! > left.pid'
expect_rc 0 "a command that leaves a process behind"
wait_gone "what the command left running ends with the run" "$(cat left.pid)"

# ---- lock break ----
"$FAUCET_BIN" run --pipeline p --row lk -- sh -c 'echo up > ready; read x < hold' >/dev/null 2>lk.err &
HOLDER=$!
read -r _ < ready
run lock break p::lk::__lease__ --if-holder someone-else
expect_rc 3 "--if-holder names another holder"
H=$("$FAUCET_BIN" lock list p --json | J "[l['holder'] for l in d if l['key']=='p::lk::__lease__'][0]")
run lock break p::lk::__lease__ --if-holder "$H"
expect_rc 0 "lock break of the holder's lease"
run state get p::lk::__lease__
expect_out "" "the lease is gone"
run lock break p::lk
expect_rc 2 "lock break of a key that is not a lease"
echo go > hold
wait $HOLDER
RC=$?; expect_rc 1 "a run whose lease was broken cannot record its end"

# ---- --singer ----
run state put s::default '{"pos":1}'
printf '%s\n' 'log line one' '{"pos":2}' '  not state' '{"type":"STATE","value":{"pos":3}}' 'last' > lines
run run --singer --pipeline s -- sh -c 'cat "$FAUCET_STATE_FILE" > seen; echo "${state.file}" > arg; ls -l "$FAUCET_STATE_FILE" > mode; cat lines'
expect_rc 0 "a singer run"
expect_out "$(printf 'log line one\n  not state\nlast')" "non-state lines pass through in order"
if [ "$(cat seen)" = '{"pos":1}' ]; then pass; else fail "the bookmark is handed to the command"; fi
case "$(cat mode)" in -rw-------*) pass ;; *) fail "the state file is 0600: $(cat mode)" ;; esac
if [ ! -e "$(cat arg)" ]; then pass; else fail "the state file is removed afterwards"; fi
run state get s::default
expect_out '{"pos":3}' "the last state line is stored"
run run --singer --pipeline fresh -- sh -c 'cat "$FAUCET_STATE_FILE" > fresh.env; cat "${state.file}" > fresh.arg; ls -l "${state.file}" > fresh.mode; echo "{\"pos\":9}"; exit 4'
expect_rc 4 "a singer run that fails"
expect_out "" "only the state line was printed"
if [ "$(cat fresh.env)" = '{}' ]; then pass; else fail "no bookmark yet: FAUCET_STATE_FILE holds {} ($(cat fresh.env))"; fi
if [ "$(cat fresh.arg)" = '{}' ]; then pass; else fail "no bookmark yet: \${state.file} holds {} ($(cat fresh.arg))"; fi
case "$(cat fresh.mode)" in -rw-------*) pass ;; *) fail "the first run's state file is 0600: $(cat fresh.mode)" ;; esac
run state get fresh::default
expect_out '{"pos":9}' "the last state is stored whatever the exit status"
printf '%s\n' '{"type":"STATE","value":[1]}' '{broken' > bad
run run --singer --pipeline s -- cat bad
expect_rc 1 "bad state lines fail the run"
run state get s::default
expect_out '{"pos":3}' "bad state lines are not stored"
run state get s::default::__status__
expect_json "'not a JSON object' in d['runs'][0]['message'] and d['runs'][0]['outcome'] == 'failed'" "the bad state is recorded in the status"

# A state line over 64 MiB is not held: it streams through, and since it
# is a state line that could not be stored, the run fails; a long line that
# is not state streams through whole.
python3 -c 'import sys; sys.stdout.write("{\"big\":\"" + "x" * (65 << 20) + "\"}\n" + "y" * (65 << 20) + "\nend\n")' > huge
"$FAUCET_BIN" run --singer --pipeline s -- cat huge > huge.out 2> huge.err
RC=$?; expect_rc 1 "a state line over 64 MiB fails the run"
if cmp -s huge huge.out; then pass; else fail "the long lines pass through whole ($(wc -c < huge.out) bytes)"; fi
run state get s::default
expect_out '{"pos":3}' "the oversized state is not stored"
run state get s::default::__status__
expect_json "'64 MiB' in d['runs'][0]['message']" "the oversized state line is recorded"
rm -f huge huge.out

# A tap's stream: only the STATE messages are taken out; SCHEMA, RECORD,
# ACTIVATE_VERSION, BATCH and unknown messages, lines that are not JSON,
# trailing blanks, a long line and a last line without a newline come out
# exactly as they went in.  The bookmark is the last STATE's value.
run state put tap::default '{"bookmarks":{"users":{"id":0}}}'
python3 - <<'PY'
blob = "v" * (3 << 20)
lines = [
    (0, '{"type": "SCHEMA", "stream": "users", "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}, "key_properties": ["id"]}\n'),
    (0, '{"type": "RECORD", "stream": "users", "record": {"id": 1, "type": "STATE", "value": {}}, "time_extracted": "2024-01-01T00:00:00Z"}\n'),
    (0, '{"type":"RECORD","stream":"users","record":{"id":2}}\n'),
    (0, 'INFO tap-users: 2 records\n'),
    (1, '{"type": "STATE", "value": {"bookmarks": {"users": {"id": 2}}}}\n'),
    (0, '{"type": "RECORD", "stream": "users", "record": {"id": 3}}\n'),
    (0, '{"type": "ACTIVATE_VERSION", "stream": "users", "version": 1700000000}\n'),
    (0, '{"type": "BATCH", "stream": "users", "encoding": {"format": "jsonl"}, "manifest": ["file:///tmp/b1.jsonl"]}\n'),
    (0, '{"stream": "users", "type": "SOMETHING_NEWER"}\n'),
    (0, 'not json {"type": "STATE", "value": {}}\n'),
    (0, '{"type": "RECORD", "stream": "users", "record": {"id": 4}}   \n'),
    (0, '{"type": "RECORD", "stream": "users", "record": {"id": 5, "blob": "' + blob + '"}}\n'),
    (0, '\n'),
    (1, '  {"type":"STATE","value":{"bookmarks":{"users":{"id":5}}}}\r\n'),
    (0, '{"type": "RECORD", "stream": "users", "record": {"id": 6}}'),
]
open("tap.stream", "w").write("".join(l for _, l in lines))
open("tap.want", "w").write("".join(l for state, l in lines if not state))
PY
"$FAUCET_BIN" run --singer --pipeline tap -- cat tap.stream > tap.got 2> tap.err
RC=$?; expect_rc 0 "a singer run of a tap's stream"
if cmp -s tap.want tap.got; then pass; else fail "stdout is the stream minus its STATE lines, byte for byte ($(cmp tap.want tap.got 2>&1 | head -c 200))"; fi
run state get tap::default
expect_out '{"bookmarks":{"users":{"id":5}}}' "the bookmark is the last STATE's value"
rm -f tap.stream tap.want tap.got

# A STATE without a "value" object fails the run, and the run stores
# nothing: a STATE stored before it came is taken back.
export F="$FAUCET_BIN"
run run --singer --pipeline tap -- sh -c '
	echo "{\"type\":\"STATE\",\"value\":{\"p\":1}}"
	for _ in $(seq 500); do [ "$("$F" state get tap::default)" = "{\"p\":1}" ] && break; done
	"$F" state get tap::default > stored-mid-run
	echo "{\"type\":\"RECORD\",\"record\":{}}"
	echo "{\"type\":\"STATE\"}"
	echo "{\"type\":\"STATE\",\"value\":{\"p\":2}}"'
expect_rc 1 "a STATE without a value fails the run"
expect_out '{"type":"RECORD","record":{}}' "the RECORD still passes through"
if [ "$(cat stored-mid-run)" = '{"p":1}' ]; then pass; else fail "the first STATE was stored while the command ran ($(cat stored-mid-run))"; fi
expect_err_contains 'without a "value"' "the message says what is wrong"
run state get tap::default
expect_out '{"bookmarks":{"users":{"id":5}}}' "the bookmark is as it was before the run"
run state get tap::default::__status__
expect_json "d['runs'][0]['outcome'] == 'failed' and 'value' in d['runs'][0]['message']" "the failed run is recorded"
run run --singer --pipeline tap -- sh -c 'echo "{\"type\":\"STATE\",\"value\":\"v1\"}"'
expect_rc 1 "a STATE whose value is not an object fails the run"
expect_err_contains "not a JSON object" "and says so"
run state get tap::default
expect_out '{"bookmarks":{"users":{"id":5}}}' "nothing stored"

# A reader that goes away does not cut the run short: the state is still stored.
"$FAUCET_BIN" run --singer --pipeline pipe -- sh -c 'yes log | head -100000; echo "{\"pos\":42}"' 2>pipe.err | head -1 >/dev/null
run state get pipe::default
expect_out '{"pos":42}' "the state is stored after stdout's reader left"
run state get pipe::default::__status__
expect_json "d['runs'][0]['outcome'] == 'ok'" "the run is recorded as ok"

# ---- state runs and undo ----
run state runs s
expect_rc 0 "state runs"
n=$(printf '%s\n' "$OUT" | wc -l)
if [ "$n" -eq 4 ]; then pass; else fail "the four runs of s listed, the put's among them (got $n)"; fi
run state runs s --json
expect_json "d[0]['scope'] == 's::default' and len(d[0]['runs']) == 4" "state runs --json"
run state undo s --dry-run
expect_rc 0 "undo --dry-run"
expect_out "would restore s::default" "dry run lists the key"
run state get s::default
expect_out '{"pos":3}' "a dry run writes nothing"
run state undo s
expect_rc 0 "undo the newest run that changed something"
expect_out "restored s::default" "undo prints the key restored"
UNDO=$(printf '%s' "$ERR" | sed -n 's/.* as run \([^;]*\);.*/\1/p')
run state get s::default
expect_out '{"pos":1}' "undo restored the bookmark"
run state put s::default '{"pos":5}'
run state undo s "$UNDO"
expect_rc 3 "undoing the undo conflicts with a later change"
expect_err_contains "s::default" "the conflict names the key"
expect_err_contains '{"pos":5}' "and its current value"
expect_err_contains '{"pos":1}' "and what the run wrote"
run state get s::default
expect_out '{"pos":5}' "a conflict writes nothing"
run state undo s "$UNDO" --force
expect_rc 0 "--force restores anyway"
run state get s::default
expect_out '{"pos":3}' "forced undo of the undo"
run state undo s 20200101T000000.000Z-000000
expect_rc 2 "an unknown run id"
run state undo s nonsense
expect_rc 2 "not a run id"
run state undo s "$UNDO"
expect_rc 2 "a run already undone"
expect_err_contains "already undone" "already undone is said"
run state undo nothing-here
expect_rc 2 "a pipeline without runs"

# ---- CLI writes are runs; inside `faucet run` they join its run ----
run state put w::default '{"v":1}'
expect_rc 0 "a put"
expect_err_contains "undo: faucet state undo w --row default" "the put prints its undo command"
run state delete w::default --json
expect_json "d['run'] and d['undo'].startswith('faucet state undo w --row default')" "delete --json names its run"
run state undo w
expect_rc 0 "undo the delete"
run state get w::default
expect_out '{"v":1}' "the delete is undone"
export F="$FAUCET_BIN"
run run --pipeline w -- sh -c '"$F" state put w::default "{\"v\":2}" && "$F" state put w::default::side 7 && "$F" state put other::x 1'
expect_rc 0 "a run whose command writes with faucet state put"
expect_err_contains "recorded in run" "the child's writes join the run"
run state get w::default::__status__
expect_json "d['runs'][0]['outcome'] == 'ok' and sorted(d['runs'][0]['keys']) == ['other::x', 'w::default', 'w::default::side']" "the run lists every key its command wrote"
run state undo w --row default
expect_rc 0 "undo the run"
run state get w::default
expect_out '{"v":1}' "undo restores what the child wrote"
run state get other::x
expect_out "" "even outside the invocation"
# Fencing: the lease is broken while the command runs; its next write fails.
run run --pipeline w -- sh -c '"$F" lock break w::default::__lease__ 2>/dev/null; "$F" state put w::default "{\"v\":3}"'
expect_rc 1 "a write after the lease was lost fails"
expect_err_contains "lost" "the failure says the lease is lost"
run state get w::default
expect_out '{"v":1}' "and nothing was written"
FAUCET_RUN_ID=20200101T000000.000Z-abcdef FAUCET_RUN_PIPELINE=w run state put w::default 5
expect_rc 1 "a write naming a run that holds no lease"
run state get w::default
expect_out '{"v":1}' "nothing written for a stale FAUCET_RUN_ID"

FAUCET_RUN_ID=20200101T000000.000Z-abcdef run state put w::default 6
expect_rc 2 "an id without its pipeline is refused, not joined to a guess"
expect_err_contains "FAUCET_RUN_PIPELINE is not" "the message names what is missing"
run state get w::default
expect_out '{"v":1}' "nothing written for an id without its pipeline"

# ---- an encrypted store: the command inherits the key's variable name ----
export RUNKEY=correct-horse-battery-staple
run --state file:$PWD/enc --encryption-key-env RUNKEY run --pipeline e -- sh -c 'printf "%s\n" "$FAUCET_ENCRYPTION_KEY_ENV" > keyenv; "$F" state put e::default 1'
expect_rc 0 "a run on an encrypted store whose command writes"
if [ "$(cat keyenv)" = RUNKEY ]; then pass; else fail "FAUCET_ENCRYPTION_KEY_ENV names the key's variable"; fi
if [ "$(head -c 4 enc/e%3A%3Adefault.json)" = FCT1 ]; then pass; else fail "the command's write is sealed"; fi
expect_err_lacks "$RUNKEY" "the key never appears"

# A key rotation: a key sealed with the old key A is read by the run's
# child, whose store has B as its key and A as a previous one.
export KEY_A=old-key-aaaaaaaaaaaaaaaa KEY_B=new-key-bbbbbbbbbbbbbbbb
run --state file:$PWD/rot --encryption-key-env KEY_A state put rot::old '{"sealed":"with A"}'
expect_rc 0 "a key sealed with A"
run --state file:$PWD/rot --encryption-key-env KEY_B --previous-key-env KEY_A run --pipeline rot -- sh -c 'printf "%s\n" "$FAUCET_PREVIOUS_KEY_ENV" > prevenv; "$F" state get rot::old'
expect_rc 0 "during a rotation the child reads a key still sealed with the previous key"
expect_out '{"sealed":"with A"}' "the child's read of the old key"
if [ "$(cat prevenv)" = KEY_A ]; then pass; else fail "FAUCET_PREVIOUS_KEY_ENV names the previous key's variable ($(cat prevenv))"; fi
expect_err_lacks "old-key-aaaa" "the previous key never appears"

# ---- FAUCET_BIN: the children can run the very faucet that runs them ----
SELF=$(readlink -f "$FAUCET_BIN")
FAUCET_BIN=/nowhere/faucet "$SELF" run --pipeline p --row bin -- sh -c 'printf "%s\n" "$FAUCET_BIN" > bin; "$FAUCET_BIN" version > binver' 2>/dev/null
RC=$?; expect_rc 0 "a run whose command calls \$FAUCET_BIN"
if [ "$(cat bin)" = "$SELF" ]; then pass; else fail "FAUCET_BIN is faucet's absolute path: '$(cat bin)', not '$SELF'"; fi
if [ -s binver ]; then pass; else fail "the command ran faucet through FAUCET_BIN"; fi

# ---- bookkeeping is hidden from list/show unless --all ----
run state list
expect_out_lacks "__status__" "state list hides __status__"
expect_out_lacks "__rollback__" "state list hides __rollback__"
expect_out_contains "s::default" "state list still lists bookmarks"
run state list --all
expect_out_contains "s::default::__status__" "state list --all shows __status__"
expect_out_contains "s::default::__rollback__::" "state list --all shows markers"
run state show s
expect_out_lacks "__status__" "state show hides bookkeeping"
expect_out_contains "s::default" "state show shows the bookmark"
run state show s --all --json
expect_out_contains "s::default::__rollback__" "state show --all shows bookkeeping"

# ---- reading commands never create a store ----
for cmd in "state runs p" "state undo p" "lock list" "lock break p::default::__lease__"; do
	run --state file:$PWD/nowhere $cmd
	expect_rc 1 "$cmd on a store that does not exist"
	expect_no_file nowhere "$cmd created no store"
done

# ---- bookkeeping is never exported, copied, imported or replaced away ----
run state export s
expect_rc 0 "export of a pipeline with runs"
expect_json "list(d['keys']) == ['s::default']" "the export holds the bookmark only"
printf '%s\n' "$OUT" > s.json
run state copy s --to file:$PWD/copy --json
expect_json "d['written'] == ['s::default']" "copy writes the bookmark only"
run state list --all --state file:$PWD/copy
expect_out_lacks "__lease__" "no lease is copied"
expect_out_contains "s::default::__status__" "the copy (of one invocation's key) is that invocation's run in the destination"
run state import s.json --replace --json
expect_json "d['deleted'] == [] and d['written'] == ['s::default']" "import --replace deletes no bookkeeping"
run state get s::default::__status__
expect_json "len(d['runs']) >= 4" "the history survives import --replace"
printf '{"version":1,"pipeline":"s","keys":{"s::default":{"pos":8},"s::default::__status__":{"version":1,"runs":[]}}}' > withbk.json
before_bk=$(snapshot st)
run state import withbk.json
expect_rc 2 "a document holding a bookkeeping key is refused (SPEC section 8)"
expect_err_contains "s::default::__status__" "the bookkeeping key is named"
expect_same "$before_bk" "$(snapshot st)" "the refused import wrote nothing"
run state get s::default::__status__
expect_json "len(d['runs']) >= 4" "the history was not overwritten"
printf '{"version":1,"pipeline":"s","keys":{"s::default":{"pos":8}}}' > withbk.json
run state import withbk.json --json
expect_json "d['written'] == ['s::default']" "the document without it imports"
run state get s::default
expect_out '{"pos":8}' "the import wrote the bookmark"
run state undo s
expect_rc 0 "undo the import (a run of s::default)"
expect_out "restored s::default" "the import's key is restored"
run state get s::default
expect_out '{"pos":3}' "the bookmark is back"

finish
