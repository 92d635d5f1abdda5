#!/usr/bin/env python3
"""check_history.py - a randomized, Jepsen/Elle-style history checker for
faucet's state writes, invocation runs and undo (doc/design.md §2, §5 and §8).

What it does, for each (backend, seed):

1. Opens one fresh store (file dir, SQLite file, PostgreSQL table, Redis
   namespace) and runs a seeded random schedule: 3-4 actor threads, each
   launching `faucet --json ...` subprocesses one after another - put,
   compare-and-put, delete, get, import, `faucet run` whose child script
   writes with `faucet state put` (joining the run through FAUCET_RUN_ID),
   undo (newest / named run / --row), `lock break`, and puts/deletes that
   change nothing.  A nemesis thread SIGKILLs random in-flight faucet
   processes.  Every written value is unique in the schedule, so a value
   names its write.
2. Records every operation: actor, kind, arguments, invocation and
   completion time (time.time_ns(); the child scripts log with
   `date +%s%N`, the same clock), outcome, exit status, JSON output, run id.
3. After quiescence (every process of the schedule dead), retries every
   killed undo, reads the final state (`state list --all`, `state get`,
   `state runs --json`) and checks these rules (one check_* function each):

   R1 per-key linearizability: a register per key; a WGL search with
      memoisation finds an order of every op on the key consistent with
      real time.  Acknowledged writes take effect; failed/unknown ones may or
      may not, any time after their invocation; a compare-and-put that did
      not hold saw its `found`; gets and the final read are reads; an undo's
      `steps` (when printed) are compare-and-puts from `replaced` to
      `restored_to`, without steps a successful undo is an optional write of
      an unknown value (a wildcard) on each restored key, a killed/failed
      one on every key.
   R2 an undo of U restores no key K that a later run V > U changed (an
      acknowledged write finished before the undo started), unless V was
      undone before; exempt: retries of the same undo, undos of runs later
      than U (undoing in stack order).
   R3 with steps: `replaced` is the value U last wrote to K.
   R4 a conflicting undo leaves no net change (it may restore a key and roll
      it back: a transient value); a killed undo is finished by the same
      undo run again (the retry pass).
   R5 the run history agrees: nothing still `running` once every process is
      dead, acknowledged writes' runs are there (ok/undone, listing the key),
      `undone` only by an undo, a successful undo's target reads `undone`.
   R6 every final value was written by some op; no stray key.
   R7 a write that changes nothing records no run (`"run": null`).
   R8 a SIGKILLed `faucet run` leaves nothing of its command alive 3 s later.
   R9 (within R1's search) an undo step of run U restores what the key held
      just before U's write - for U a `state put`/`delete`/compare-and-put
      or a `faucet run` whose command writes the key, whose first write
      holds against its before-image (§8.2); a put that
      landed between U's read of the key and its write is given back, not
      the value from before it.
   R10 (within R1's search) an undo of U that succeeded without a step for
      a key U's acknowledged writes changed found it holding U's
      before-image (done), so not U's value: a key it leaves out while it
      still holds what U wrote (a big import's key in a marker part, §8.6,
      the undo never read) is flagged.

The seed schedule is deterministic given the seed; the interleaving (and
so the nemesis' victims) is not - a failing seed is worth re-running a few
times, but every violation printed is a real one: the checks only accept
what doc/design.md allows and never assume an outcome they did not observe.

Usage:
  check_history.py --faucet build/faucet --backend file --seeds 1,2,3
  check_history.py --faucet build/faucet --backend all --minutes 10   (random seeds)
Backends postgres/redis/etcd take FAUCET_TEST_PG_URL / FAUCET_TEST_REDIS_URL /
FAUCET_TEST_ETCD_URL; a
missing URL is a failure.  Exit 0 when no violation, 1 otherwise.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PIPELINE = "P"
KEYS = ["P::a", "P::b", "P::default", "P::a::s1"]
ROWS = ["a", "b", "default"]
# Keys only the "changes nothing" operations touch (R7); no undo ever
# reaches pipeline Q, so those writes are certainly no-ops.
NOOP_PUT_KEY = "Q::fixed"
NOOP_PUT_VALUE = '{"w":"fixed"}'
NOOP_DEL_KEY = "Q::gone"
ALL_KEYS = KEYS + [NOOP_PUT_KEY, NOOP_DEL_KEY]
BOOKKEEPING = ("__lease__", "__status__", "__rollback__")
RUN_ID_RE = re.compile(r"\b(\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{6})\b")
INF = float("inf")
PROCESS_TIMEOUT = 120  # seconds a single faucet command may take
CHILD_GRACE_NS = 3_000_000_000  # a killed run's command must be gone by then


def canon(value):
    """Canonical text of a JSON value (None = absent)."""
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def is_bookkeeping(key):
    return any(part in BOOKKEEPING for part in key.split("::"))


class Op:
    """One operation of the history (a faucet process, a child's put, or a
    final read).  Times are nanoseconds; cmp None = never completed."""

    _next = 0
    _lock = threading.Lock()

    def __init__(self, actor, kind, **kw):
        with Op._lock:
            Op._next += 1
            self.id = Op._next
        self.actor = actor
        self.kind = kind  # put cas delete get import run cput undo lockbreak noop_put noop_del final
        self.key = kw.get("key")
        self.value = kw.get("value")  # canonical text or None (delete)
        self.expected = kw.get("expected")  # cas: canonical text or None (absent)
        self.values = kw.get("values")  # import: {key: canonical text}
        self.target = kw.get("target")  # undo: run id named, or None (newest)
        self.row = kw.get("row")
        self.argv = kw.get("argv")
        self.parent = kw.get("parent")  # cput: the run op's id
        self.inv = kw.get("inv")
        self.cmp = kw.get("cmp")
        self.rc = kw.get("rc")
        self.outcome = kw.get("outcome")  # ok failed unknown conflict busy rejected
        self.out = kw.get("out")  # parsed JSON stdout
        self.run = kw.get("run")  # the run id this op wrote as
        self.pid = kw.get("pid")
        self.killed = False
        self.held_first = kw.get("held_first", False)  # an import whose window is closed
        self.note = kw.get("note", "")

    # The run an undo undid (ok undo), from its JSON.
    @property
    def undone(self):
        if isinstance(self.out, dict) and self.kind == "undo" and self.outcome == "ok":
            return self.out.get("undone")
        return None

    def describe(self, t0=0):
        def ms(t):
            return "inf" if t is None else "%.1f" % ((t - t0) / 1e6)

        parts = ["#%d" % self.id, self.actor, self.kind]
        if self.key:
            parts.append(self.key)
        if self.kind == "cas":
            parts.append("if=%s" % self.expected)
        if self.value is not None or self.kind in ("put", "cput", "cas"):
            parts.append("v=%s" % self.value)
        if self.values:
            parts.append("values=%s" % json.dumps(self.values))
        if self.kind == "undo":
            parts.append("target=%s row=%s" % (self.target or "newest", self.row))
        parts.append("[%s..%s]ms" % (ms(self.inv), ms(self.cmp)))
        parts.append("%s rc=%s" % (self.outcome, self.rc))
        if self.run:
            parts.append("run=%s" % self.run)
        if self.out is not None:
            parts.append("out=%s" % json.dumps(self.out, sort_keys=True)[:300])
        if self.killed:
            parts.append("KILLED")
        if self.note:
            parts.append(self.note)
        return " ".join(parts)


class Violation:
    def __init__(self, rule, message, ops=(), key=None):
        self.rule = rule
        self.message = message
        self.ops = list(ops)
        self.key = key  # the key involved, when there is one

    def __str__(self):
        return "%s: %s" % (self.rule, self.message)


# ---------------------------------------------------------------------------
# Running a schedule
# ---------------------------------------------------------------------------


def store_url(backend, seed, n, workdir):
    if backend == "file":
        return "file:%s/st" % workdir
    if backend == "sqlite":
        return "sqlite:%s/s.db" % workdir
    if backend == "postgres":
        base = os.environ.get("FAUCET_TEST_PG_URL")
        if not base:
            raise SystemExit("FAUCET_TEST_PG_URL is not set: start scripts/test-servers.sh "
                             "(a missing PostgreSQL server is a failure, not a skip)")
        sep = "&" if "?" in base else "?"
        return "%s%stable=hist_%d_%d&ensure_table=true" % (base, sep, seed, n)
    if backend == "redis":
        base = os.environ.get("FAUCET_TEST_REDIS_URL")
        if not base:
            raise SystemExit("FAUCET_TEST_REDIS_URL is not set: start scripts/test-servers.sh "
                             "(a missing Redis server is a failure, not a skip)")
        sep = "&" if "?" in base else "?"
        return "%s%snamespace=hist%dx%d" % (base, sep, seed, n)
    if backend == "etcd":
        base = os.environ.get("FAUCET_TEST_ETCD_URL")
        if not base:
            raise SystemExit("FAUCET_TEST_ETCD_URL is not set: start scripts/test-servers.sh "
                             "(a missing etcd cluster is a failure, not a skip)")
        return "%s_hist%dx%d" % (base, seed, n)
    raise SystemExit("unknown backend %r" % backend)


CLK_TCK = os.sysconf("SC_CLK_TCK")


def boot_ticks():
    """Now, in the clock ticks since boot that /proc/PID/stat's starttime
    counts."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLK_TCK)


def process_group_alive(pgid, born_by=None):
    """Pids of live (non-zombie) processes in process group pgid; with
    born_by (boot ticks), only those started by then.  A group whose
    processes all died is a number the kernel may give to a new process
    (pids wrap at pid_max, 32768 here): a process of someone else's that
    started later is never taken for ours, nor killed."""
    alive = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat.rsplit(")", 1)[-1].split()
        # rest[0] = state, rest[2] = pgrp, rest[19] = starttime
        if len(rest) > 19 and rest[0] != "Z" and int(rest[2]) == pgid and \
                (born_by is None or int(rest[19]) <= born_by):
            alive.append(int(name))
    return alive


class Schedule:
    """One seeded schedule against one fresh store."""

    def __init__(self, faucet, backend, seed, n=0, actors=None, ops_per_actor=None,
                 kills=None, faults=0.0, shim=None, only=None, verbose=False):
        self.faucet = os.path.abspath(faucet)
        self.backend = backend
        self.seed = seed
        self.rng = random.Random(seed)
        self.n_actors = actors or self.rng.choice([3, 4])
        self.ops_per_actor = ops_per_actor or self.rng.randint(20, 30)
        self.max_kills = kills if kills is not None else self.rng.randint(2, 6)
        # Injected I/O faults (the LD_PRELOAD shim) reach local stores only.
        self.faults = faults if backend in ("file", "sqlite") else 0.0
        self.shim = os.path.abspath(shim) if shim else None
        if self.faults and not (self.shim and os.path.exists(self.shim)):
            raise SystemExit("--faults needs --shim PATH (tests/history/faultshim.c, built by CMake)")
        self.verbose = verbose
        self.only = only  # a subset of the op kinds (debugging a model), or None
        self.workdir = tempfile.mkdtemp(prefix="faucet-history-%d-" % seed)
        self.url = store_url(backend, seed, n, self.workdir)
        self.ops = []
        self.ops_lock = threading.Lock()
        self.inflight = {}  # pid -> (Popen, Op)
        self.inflight_lock = threading.Lock()
        self.known_runs = []  # (run id, row or None)
        self.live_violations = []  # found while running (R8: children of a killed run)
        # Every process group we started (faucet's, and the command groups of
        # its runs), with when the last process that could join it ended
        # (boot ticks; None while it runs).
        self.groups = {}
        self.stop = threading.Event()
        self.counter = 0
        self.long_tails = 0  # runs whose command works on for 4 s (at most 2)

    # -- helpers ------------------------------------------------------------

    def env(self, faults_seed=None):
        e = dict(os.environ)
        for var in ("FAUCET_CONFIG", "FAUCET_RUN_ID", "FAUCET_RUN_PIPELINE", "FAUCET_RUN_ROW"):
            e.pop(var, None)
        e["FAUCET_STATE"] = self.url
        e["FAUCET_BIN"] = self.faucet
        if self.faults and self.shim and faults_seed is not None:
            e["LD_PRELOAD"] = self.shim
            e["FAULTSHIM_P"] = str(self.faults)
            e["FAULTSHIM_SEED"] = str(faults_seed)
        return e

    def unique(self, actor):
        with self.ops_lock:
            self.counter += 1
            return canon({"w": "%s-%d" % (actor, self.counter)})

    def record(self, op):
        with self.ops_lock:
            self.ops.append(op)

    def remember_run(self, run, row):
        if run:
            with self.ops_lock:
                self.known_runs.append((run, row))

    def launch(self, op, argv, rng, faults=True, extra_env=None):
        """Run one faucet command to completion (or death); fill op."""
        op.argv = argv
        env = self.env(rng.randrange(1 << 30) if faults else None)
        env.update(extra_env or {})
        # Output goes to files, not pipes: a killed `faucet run` may leave its
        # command holding them, and its death must be seen when it dies.
        out_path = os.path.join(self.workdir, "op-%d.out" % op.id)
        err_path = os.path.join(self.workdir, "op-%d.err" % op.id)
        with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
            op.inv = time.time_ns()
            p = subprocess.Popen([self.faucet, "--json"] + argv, stdin=subprocess.DEVNULL,
                                 stdout=out_f, stderr=err_f, env=env,
                                 start_new_session=True, cwd=self.workdir)
        op.pid = p.pid
        with self.inflight_lock:
            self.inflight[p.pid] = (p, op)
            self.groups[p.pid] = None
        try:
            p.wait(timeout=PROCESS_TIMEOUT)
        except subprocess.TimeoutExpired:
            op.note += " HUNG(killed after %ds)" % PROCESS_TIMEOUT
            op.killed = True
            p.kill()
            p.wait()
        op.cmp = time.time_ns()
        op.end_ticks = boot_ticks() + 1  # + 1: starttime is rounded to ticks
        with self.inflight_lock:
            self.inflight.pop(p.pid, None)
            self.groups[p.pid] = op.end_ticks
        with open(out_path, "rb") as f:
            out = f.read()
        with open(err_path, "rb") as f:
            err = f.read()
        op.rc = p.returncode
        op.stderr = err.decode(errors="replace")
        text = out.decode(errors="replace").strip()
        try:
            op.out = json.loads(text) if text else None
        except ValueError:
            op.out = {"unparsed": text[:500]}
        if op.killed or op.rc < 0:
            op.outcome = "unknown"
        return op

    # -- the actors' operations ---------------------------------------------

    def op_put(self, actor, rng, last_read):
        key = rng.choice(KEYS)
        value = self.unique(actor)
        op = Op(actor, "put", key=key, value=value)
        self.launch(op, ["state", "put", key, value], rng)
        self.finish_write(op, ok_codes=(0,))
        return op

    def op_cas(self, actor, rng, last_read):
        key = rng.choice(KEYS)
        value = self.unique(actor)
        if key in last_read and rng.random() < 0.8:
            expected = last_read[key]
        elif rng.random() < 0.5:
            expected = None
        else:
            expected = canon({"w": "never-written"})
        op = Op(actor, "cas", key=key, value=value, expected=expected)
        cond = ["--if-absent"] if expected is None else ["--if-equals", expected]
        self.launch(op, ["state", "put", key, value] + cond, rng)
        self.finish_write(op, ok_codes=(0,))
        return op

    def op_delete(self, actor, rng, last_read):
        key = rng.choice(KEYS)
        op = Op(actor, "delete", key=key, value=None)
        self.launch(op, ["state", "delete", key], rng)
        self.finish_write(op, ok_codes=(0,))
        return op

    def op_get(self, actor, rng, last_read):
        key = rng.choice(KEYS)
        op = Op(actor, "get", key=key)
        self.launch(op, ["state", "get", key], rng)
        if op.outcome is None:
            if op.rc == 0 and isinstance(op.out, dict) and "value" in op.out:
                op.outcome = "ok"
                op.value = canon(op.out["value"]) if op.out.get("found") else None
                last_read[key] = op.value
            else:
                op.outcome = "failed"
        return op

    def op_import(self, actor, rng, last_read):
        keys = rng.sample(KEYS, rng.choice([2, 3]))
        values = {k: self.unique(actor) for k in keys}
        doc = {"version": 1, "pipeline": PIPELINE,
               "keys": {k: json.loads(v) for k, v in values.items()}}
        path = os.path.join(self.workdir, "import-%s-%d.json" % (actor, self.counter))
        with open(path, "w") as f:
            json.dump(doc, f)
        op = Op(actor, "import", values=values, held_first=True)
        # Half the imports are written a key per chunk, so that each key
        # after the first is recorded in a marker part of its own (a big
        # import's layout, doc/design.md §8.6), killed and faulted as any.
        extra = {"FAUCET_TEST_IMPORT_CHUNK": "1"} if rng.random() < 0.5 else None
        op.chunked = extra is not None
        if extra:
            op.note += " (a key per chunk)"
        self.launch(op, ["state", "import", path], rng, extra_env=extra)
        self.finish_write(op, ok_codes=(0,))
        return op

    def op_clear(self, actor, rng, last_read):
        """`state clear` of the pipeline or of one row: a batch delete whose
        keys are each deleted against the value its marker write read."""
        row = rng.choice(ROWS + [None])
        scope = [k for k in KEYS
                 if row is None or k == "%s::%s" % (PIPELINE, row)
                 or k.startswith("%s::%s::" % (PIPELINE, row))]
        op = Op(actor, "clear", values={k: None for k in scope})
        argv = ["state", "clear", PIPELINE, "--yes"] + (["--row", row] if row else [])
        self.launch(op, argv, rng)
        if op.outcome is None and op.rc == 75:
            op.outcome = "rejected"  # the pipeline lease was held: nothing deleted
        self.finish_write(op, ok_codes=(0,))
        return op

    def op_noop(self, actor, rng, last_read):
        if rng.random() < 0.5:
            op = Op(actor, "noop_put", key=NOOP_PUT_KEY, value=NOOP_PUT_VALUE)
            self.launch(op, ["state", "put", NOOP_PUT_KEY, NOOP_PUT_VALUE], rng)
        else:
            op = Op(actor, "noop_del", key=NOOP_DEL_KEY, value=None)
            self.launch(op, ["state", "delete", NOOP_DEL_KEY], rng)
        self.finish_write(op, ok_codes=(0,), remember=False)
        return op

    def finish_write(self, op, ok_codes, remember=True):
        """Outcome and run id of a put/cas/delete/import."""
        if op.outcome is None:
            if op.rc in ok_codes:
                op.outcome = "ok"
            elif op.rc == 3:
                op.outcome = "conflict"
            elif op.rc == 2:
                op.outcome = "rejected"
            else:
                op.outcome = "unknown"
        if isinstance(op.out, dict) and op.outcome == "ok":
            op.run = op.out.get("run")
            if remember:
                self.remember_run(op.run, row_of_undo_hint(op.out.get("undo")))

    def op_run(self, actor, rng, last_read):
        row = rng.choice(ROWS)
        tag = "%s-%d" % (actor, rng.randrange(1 << 30))
        log = os.path.join(self.workdir, "child-%s.jsonl" % tag)
        script = os.path.join(self.workdir, "child-%s.sh" % tag)
        pidfile = os.path.join(self.workdir, "child-%s.pid" % tag)
        puts = [(rng.choice(KEYS), self.unique(actor)) for _ in range(rng.randint(1, 3))]
        lines = ["#!/bin/sh", "echo $$ > '%s'" % pidfile, "F='%s'" % self.faucet, "LOG='%s'" % log]
        for i, (key, value) in enumerate(puts):
            lines.append("t=$(date +%%s%%N); printf '{\"ev\":\"inv\",\"i\":%d,\"key\":\"%s\",\"value\":%%s,"
                         "\"t\":%%s,\"run\":\"%%s\"}\\n' '%s' \"$t\" \"$FAUCET_RUN_ID\" >> \"$LOG\""
                         % (i, key, value))
            lines.append("out=$(\"$F\" --json state put '%s' '%s' 2>/dev/null); rc=$?" % (key, value))
            lines.append("t=$(date +%%s%%N); printf '{\"ev\":\"done\",\"i\":%d,\"rc\":%%s,\"t\":%%s,"
                         "\"out\":%%s}\\n' \"$rc\" \"$t\" \"${out:-null}\" >> \"$LOG\"" % i)
            # The command's own work between its writes: widens the windows in
            # which undos, lock breaks and the nemesis meet a live run.
            if rng.random() < 0.5:
                lines.append("sleep 0.%d" % rng.randint(1, 4))
        # Now and then a long tail of work: a run the nemesis kills then still
        # has its command alive, which must die with it (R8).
        with self.ops_lock:
            long_tail = self.long_tails < 2 and rng.random() < 0.25
            self.long_tails += long_tail
        if long_tail:
            lines.append("sleep 4")
        lines.append("exit 0")
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        op = Op(actor, "run", row=row, note="child=%s" % os.path.basename(script))
        op.long_tail = long_tail
        op.pidfile = pidfile
        self.launch(op, ["run", "--pipeline", PIPELINE, "--row", row, "--lease-ttl", "1s",
                         "--", "sh", script], rng, faults=True)
        m = re.search(r"run (\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{6}) of \S+ started", op.stderr or "")
        if m:
            op.run = m.group(1)
        if op.outcome is None:
            op.outcome = {0: "ok", 75: "busy", 2: "rejected"}.get(op.rc, "failed")
        if op.killed:
            self.check_children_gone(op)
        self.record_child_puts(op, log, puts)
        if op.run and op.outcome in ("ok", "failed", "unknown"):
            self.remember_run(op.run, row)
        return op

    def command_group(self, op):
        """The process group of a run's command: the script, which faucet
        starts as the leader of a group of its own, wrote its pid."""
        try:
            with open(op.pidfile) as f:
                return int(f.read().strip())
        except (OSError, ValueError, AttributeError):
            return None

    def check_children_gone(self, op):
        """After SIGKILL of `faucet run`, its command must die too, and
        everything the command started (doc/design.md §8.8: children of a
        run die with it): the command's group and faucet's own.  Seconds
        after faucet died their numbers cannot have been given out again, so
        every member counts (one the command started late as well).
        Bounded poll, then clean up; from then on the groups are only
        watched for processes started before they were emptied."""
        deadline = op.cmp + CHILD_GRACE_NS
        groups = [g for g in (op.pid, self.command_group(op)) if g is not None]

        def alive_now():
            return [p for g in groups for p in process_group_alive(g)]
        alive = alive_now()
        while alive and time.time_ns() < deadline:
            time.sleep(0.05)
            alive = alive_now()
        if alive:
            self.live_violations.append(Violation(
                "R8", "killed run left its command running: faucet run pid %d (run %s) was "
                "SIGKILLed and %d process(es) of its groups (%s) were still alive %.1fs later"
                % (op.pid, op.run, len(alive), ",".join(map(str, alive)), CHILD_GRACE_NS / 1e9), [op]))
        for g in groups:
            self.kill_group(g, None)
        emptied = boot_ticks() + 1
        with self.inflight_lock:
            for g in groups:
                self.groups[g] = emptied

    def kill_group(self, pgid, born_by):
        """Kill what is left of one of our groups, one process at a time:
        killpg() of a number the kernel gave to someone else since would
        kill them."""
        deadline = time.time() + 10
        alive = process_group_alive(pgid, born_by)
        while alive and time.time() < deadline:
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)
            alive = process_group_alive(pgid, born_by)

    def record_child_puts(self, run_op, log, puts):
        """The child script's puts, from its log: writes as run_op's run."""
        entries = {}
        try:
            with open(log) as f:
                for line in f:
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        m = re.search(r'"i":(\d+),"rc":(\d+),"t":(\d+)', line)
                        if m:
                            ev = {"ev": "done", "i": int(m.group(1)), "rc": int(m.group(2)),
                                  "t": int(m.group(3)), "out": {"unparsed": line[:300]}}
                        else:
                            continue
                    entries.setdefault(ev["i"], {})[ev["ev"]] = ev
        except OSError:
            pass
        for i, (key, value) in enumerate(puts):
            e = entries.get(i, {})
            if "inv" not in e:
                continue  # never started
            inv = e["inv"]
            op = Op(run_op.actor + "/run", "cput", key=key, value=value, parent=run_op.id,
                    inv=inv["t"], run=inv.get("run") or run_op.run)
            done = e.get("done")
            if done is None:
                op.outcome = "unknown"
                op.note = "no completion logged"
            else:
                op.cmp = done["t"]
                op.rc = done["rc"]
                op.out = done.get("out")
                op.outcome = "ok" if op.rc == 0 else "unknown"
                if isinstance(op.out, dict) and op.out.get("run"):
                    op.run = op.out["run"]
            self.record(op)

    def op_undo(self, actor, rng, last_read, named=None):
        with self.ops_lock:
            known = list(self.known_runs)
        argv = ["state", "undo", PIPELINE]
        target, row = None, None
        if named is not None:
            target = named
            argv.append(target)
        elif known and rng.random() < 0.65:
            target, row = rng.choice(known)
            if row is not None and rng.random() < 0.6:
                argv += ["--row", row]
            else:
                row = None
            argv.append(target)
        elif rng.random() < 0.3:
            row = rng.choice(ROWS)
            argv += ["--row", row]
        op = Op(actor, "undo", target=target, row=row)
        self.launch(op, argv, rng)
        self.finish_undo(op)
        return op

    def finish_undo(self, op):
        if op.outcome is None:
            op.outcome = {0: "ok", 3: "conflict", 75: "busy", 2: "rejected"}.get(op.rc, "failed")
        if op.outcome == "ok" and isinstance(op.out, dict):
            op.run = op.out.get("run")
            self.remember_run(op.run, row_of_undo_hint(op.out.get("undo")))

    def op_lockbreak(self, actor, rng, last_read):
        key = "%s::%s::__lease__" % (PIPELINE, rng.choice(ROWS))
        op = Op(actor, "lockbreak", key=key)
        self.launch(op, ["lock", "break", key], rng)
        op.outcome = op.outcome or ("ok" if op.rc == 0 else "failed")
        return op

    OPS = [("put", 18), ("cas", 12), ("delete", 7), ("get", 14), ("import", 6), ("run", 12),
           ("undo", 16), ("lockbreak", 3), ("noop", 5), ("clear", 3)]

    def actor_main(self, actor, rng):
        last_read = {}
        mix = [(n, w) for n, w in self.OPS if not self.only or n in self.only]
        names = [n for n, _ in mix]
        weights = [w for _, w in mix]
        for _ in range(self.ops_per_actor):
            kind = rng.choices(names, weights)[0]
            op = getattr(self, "op_" + kind)(actor, rng, last_read)
            self.record(op)
            # An import written a key per chunk is often undone right away
            # (by name), so that undos of imports whose keys sit in marker
            # parts are many, not the odd one a random target finds.
            if getattr(op, "chunked", False) and op.outcome == "ok" and op.run and rng.random() < 0.7:
                self.record(self.op_undo(actor, rng, last_read, named=op.run))
            if op.kind in ("put", "cas") and op.outcome == "ok":
                last_read[op.key] = op.value

    def nemesis_main(self, rng):
        """SIGKILL random in-flight faucet processes (at most max_kills), and
        every long-tail run once its command is up (R8 needs one)."""
        kills = 0
        while not self.stop.wait(rng.uniform(0.05, 0.5)):
            with self.inflight_lock:
                victims = [(p, op) for p, op in self.inflight.values() if not op.killed]
            if not victims:
                continue
            long_runs = [v for v in victims if getattr(v[1], "long_tail", False)
                         and os.path.exists(v[1].pidfile)]
            if long_runs and rng.random() < 0.5:
                self.kill(*rng.choice(long_runs))
                continue
            if kills >= self.max_kills or rng.random() < 0.5:
                continue
            # Favour the interesting victims: runs, undos, imports.
            favoured = [v for v in victims if v[1].kind in ("run", "undo", "import")]
            if self.kill(*rng.choice(favoured if favoured and rng.random() < 0.7 else victims)):
                kills += 1

    def kill(self, p, op):
        op.killed = True
        try:
            p.send_signal(signal.SIGKILL)
            return True
        except OSError:
            op.killed = False
            return False

    # -- the whole schedule ---------------------------------------------------

    def setup(self):
        """The Q::fixed value the no-op puts repeat."""
        rng = random.Random(0)
        op = Op("setup", "put", key=NOOP_PUT_KEY, value=NOOP_PUT_VALUE)
        self.launch(op, ["state", "put", NOOP_PUT_KEY, NOOP_PUT_VALUE], rng, faults=False)
        self.finish_write(op, ok_codes=(0,), remember=False)
        self.record(op)
        if op.outcome != "ok":
            raise RuntimeError("setup put failed (rc %s): %s" % (op.rc, getattr(op, "stderr", "")))

    def run(self):
        self.setup()
        threads = []
        for i in range(self.n_actors):
            arng = random.Random("%d-actor-%d" % (self.seed, i))
            threads.append(threading.Thread(target=self.actor_main, args=("A%d" % i, arng)))
        nemesis = threading.Thread(target=self.nemesis_main,
                                   args=(random.Random("%d-nemesis" % self.seed),))
        for t in threads:
            t.start()
        nemesis.start()
        for t in threads:
            t.join()
        self.stop.set()
        nemesis.join()
        # Quiescence: nothing of the schedule may still run.
        for pgid, born_by in list(self.groups.items()):
            self.kill_group(pgid, born_by if born_by is not None else boot_ticks())
        self.retry_killed_undos()
        self.final = self.read_final()
        return self.ops, self.final

    def retry_killed_undos(self):
        """R4: a killed undo is finished by running the same undo again."""
        runs_doc = self.read_runs()
        by_pid = {}
        for scope in runs_doc:
            for entry in scope.get("runs", []):
                pid = (entry.get("by") or {}).get("pid")
                if entry.get("undoes"):
                    by_pid.setdefault(pid, []).append(entry)
        rng = random.Random(1)
        for op in list(self.ops):
            if op.kind != "undo" or not op.killed:
                continue
            entries = by_pid.get(op.pid, [])
            target = op.target or (entries[0]["undoes"] if entries else None)
            if target is None:
                continue
            argv = ["state", "undo", PIPELINE] + (["--row", op.row] if op.row else []) + [target]
            retry = Op("retry", "undo", target=target, row=op.row, note="retry of #%d" % op.id)
            retry.retry_of = op
            retry.killed_run = entries[0]["run"] if entries else None
            self.launch(retry, argv, rng, faults=False)
            self.finish_undo(retry)
            self.record(retry)

    def read_runs(self, pipeline=PIPELINE):
        rng = random.Random(2)
        op = Op("final", "runs")
        self.launch(op, ["state", "runs", pipeline], rng, faults=False)
        if op.rc != 0 or not isinstance(op.out, list):
            raise RuntimeError("state runs failed (rc %s): %s" % (op.rc, getattr(op, "stderr", "")))
        return op.out

    def read_final(self):
        rng = random.Random(3)
        final = {"values": {}, "list": None}
        op = Op("final", "list")
        self.launch(op, ["state", "list", "--all"], rng, faults=False)
        final["list"] = op.out if isinstance(op.out, list) else None
        for key in ALL_KEYS:
            g = Op("final", "final", key=key)
            self.launch(g, ["state", "get", key], rng, faults=False)
            if g.rc != 0 or not isinstance(g.out, dict):
                raise RuntimeError("final get %s failed (rc %s)" % (key, g.rc))
            g.value = canon(g.out["value"]) if g.out.get("found") else None
            g.outcome = "ok"
            final["values"][key] = g.value
            self.record(g)
        # Both pipelines' histories (Q holds the no-op writes' runs).
        final["runs"] = self.read_runs() + self.read_runs("Q")
        return final

    def cleanup(self):
        shutil.rmtree(self.workdir, ignore_errors=True)


def row_of_undo_hint(hint):
    """The row of `faucet state undo P --row R ID` (None: pipeline-level)."""
    if not hint:
        return None
    m = re.search(r"--row (\S+)", hint)
    return m.group(1) if m else None


# ---------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------


def undo_steps(op):
    """The per-key steps an undo printed (after the fix), or None."""
    if isinstance(op.out, dict) and isinstance(op.out.get("steps"), list):
        return op.out["steps"]
    return None


def undo_restored(op):
    """The keys an undo said it restored (its JSON's `restored`)."""
    out = op.out if isinstance(op.out, dict) else {}
    return out.get("restored") or []


def register_events(ops, key):
    """The ops touching key as register events for the linearizability search:
    (inv, cmp, kind, a, b, required, op) with kind
      w     set a                       ncas  requires cur != a
      cas   requires cur == a, set b    r     requires cur == a
      wild  set an unknown value (an undo whose value we were not told)."""
    ev = []
    for op in ops:
        ok = op.outcome == "ok"
        optional_cmp = INF
        if op.kind in ("put", "cput", "delete", "noop_put", "noop_del") and op.key == key:
            if ok:
                ev.append((op.inv, op.cmp, "w", op.value, None, True, op))
            elif op.outcome in ("unknown", "failed"):
                ev.append((op.inv, optional_cmp, "w", op.value, None, False, op))
        elif op.kind == "cas" and op.key == key:
            if ok:
                ev.append((op.inv, op.cmp, "cas", op.expected, op.value, True, op))
            elif op.outcome == "conflict":
                found = op.out.get("found", "missing") if isinstance(op.out, dict) else "missing"
                if found != "missing":
                    ev.append((op.inv, op.cmp, "r", canon(found), None, True, op))
                else:
                    ev.append((op.inv, op.cmp, "ncas", op.expected, None, True, op))
            elif op.outcome in ("unknown", "failed"):
                ev.append((op.inv, optional_cmp, "cas", op.expected, op.value, False, op))
        elif op.kind in ("get", "final") and op.key == key and ok:
            cmp = op.cmp if op.kind == "get" else INF
            ev.append((op.inv, cmp, "r", op.value, None, True, op))
        elif op.kind in ("import", "clear") and op.values and key in op.values:
            if ok:
                ev.append((op.inv, op.cmp, "w", op.values[key], None, True, op))
            elif op.outcome in ("unknown", "failed"):
                ev.append((op.inv, optional_cmp, "w", op.values[key], None, False, op))
        elif op.kind == "undo" and key in KEYS:
            steps = undo_steps(op)
            if ok and steps is not None:
                for s in steps:
                    if s.get("key") == key:
                        ev.append((op.inv, op.cmp, "cas", canon(s.get("replaced")),
                                   canon(s.get("restored_to")), True, op))
                # R10: no step for a key the undone run wrote means the undo
                # found it done - at its before-image, which is not the
                # value the run wrote (every value is unique).
                if op.undone and not any(s.get("key") == key for s in steps):
                    last = last_writes_of_run(ops, op.undone).get(key)
                    if last is not None and last[1]:
                        ev.append((op.inv, op.cmp, "ncas", last[0], None, True, op))
            elif ok:
                restored = op.out.get("restored") if isinstance(op.out, dict) else None
                if restored is None or key in restored:  # no JSON: any key
                    ev.append((op.inv, optional_cmp, "wild", None, None, False, op))
            elif op.outcome == "conflict":
                # A conflict leaves no net change (R4): it may restore a key
                # and roll it back (a transient value), nothing more.  What
                # it saw on the conflicting key is a read.
                out = op.out if isinstance(op.out, dict) else {}
                if out.get("key") == key and "current" in out:
                    ev.append((op.inv, op.cmp, "r", canon(out["current"]), None, True, op))
                ev.append((op.inv, INF, "open", None, None, False, op))
                ev.append((op.inv, op.cmp, "close", None, None, True, op))
            elif op.outcome in ("unknown", "failed"):
                # Killed or failed: any key may hold a restored value.
                ev.append((op.inv, optional_cmp, "wild", None, None, False, op))
    ev.sort(key=lambda e: (e[0], e[1]))
    return ev


WILD = object()

# The op kinds whose write is a run's first write of its key that holds
# against the before-image it records: what the key held just before the
# write (doc/design.md §8.2) - a `state put`/`delete`/compare-and-put, and a
# command of a `faucet run` ("cput", a joined handle: its run's first write
# of the key), a `state clear` (each key deleted against what it read).
# An import's is too: its chunks (and their marker parts) are written
# against what was read, in one compare-and-put batch, on every store (for
# the few keys the schedule imports; Op.held_first).
BEFORE_KINDS = ("put", "delete", "cas", "cput", "clear")


def before_of(befores, run):
    """The before-image run recorded for the key, or the `befores` miss."""
    for r, val in befores:
        if r == run:
            return val
    return befores


def apply_event(e, state, track=True):
    """(allowed, new state) of event e applied to the register state
    (value, transient, befores): value is a JSON text, None (absent) or WILD
    (unknown); transient is None or (undo op id, value before it) while a
    conflicting undo's restore is visible and not yet rolled back; befores
    is a frozenset of (run, value the key held just before the run wrote
    it).  With `track`, an undo step of run U must restore U's before-image
    (R9)."""
    kind, a, b, op = e[2], e[3], e[4], e[6]
    cur, transient, befores = state
    if track and op.run and kind in ("w", "cas") and (
            op.kind in BEFORE_KINDS or op.held_first or (op.kind == "undo" and kind == "cas")):
        if before_of(befores, op.run) is befores:
            befores = befores | {(op.run, cur)}
    if track and op.kind == "undo" and kind == "cas" and op.undone:
        want = before_of(befores, op.undone)
        if want is not befores and want is not WILD and cur is not WILD and cur == a and b != want:
            return False, state
    if kind == "w":
        return True, (a, None, befores)  # a write ends a transient: the roll-back finds it changed
    if kind == "wild":
        return True, (WILD, None, befores)
    if kind == "r":
        return (cur is WILD or cur == a), (a, transient, befores)
    if kind == "cas":
        return (cur is WILD or cur == a), (b, None, befores)
    if kind == "ncas":
        return (cur is WILD or cur != a), state
    if kind == "open":
        return transient is None, (WILD, (op.id, cur), befores)
    if kind == "close":
        if transient is not None and transient[0] == op.id:
            return True, (transient[1], None, befores)
        return True, state  # never opened, or overwritten since: nothing to roll back
    raise ValueError(kind)


INITIAL = (None, None, frozenset())


def linearize(events, budget=1_000_000, track=True):
    """WGL-style search over (linearized set, register state) with
    memoisation; `track` as in apply_event.  Returns (True, order), (False,
    best partial order), or (None, ...) when the budget ran out
    (inconclusive)."""
    n = len(events)
    required = 0
    closes = {}  # undo op id -> index of its close event
    for i, e in enumerate(events):
        if e[5]:
            required |= 1 << i
        if e[2] == "close":
            closes[e[6].id] = i
    seen = set()
    best = [[]]
    steps = [0]
    sys.setrecursionlimit(max(10000, 4 * n + 100))

    def search(mask, state, order):
        if mask & required == required and state[1] is None:
            return True
        key = (mask, state)
        if key in seen:
            return False
        seen.add(key)
        steps[0] += 1
        if steps[0] > budget:
            raise TimeoutError
        if len(order) > len(best[0]):
            best[0] = list(order)
        limit = INF
        for i in range(n):
            if not mask & (1 << i) and events[i][5] and events[i][1] < limit:
                limit = events[i][1]
        for i in range(n):
            if mask & (1 << i):
                continue
            e = events[i]
            if e[0] > limit:
                break
            if e[2] == "open" and mask & (1 << closes[e[6].id]):
                continue  # an undo cannot restore after it has ended
            ok, new = apply_event(e, state, track)
            if ok:
                order.append(i)
                if search(mask | (1 << i), new, order):
                    return True
                order.pop()
        return False

    try:
        ok = search(0, INITIAL, [])
    except TimeoutError:
        return None, best[0]
    return ok, best[0]


def check_linearizable(ops):
    """R1: per key, a linearization of every op touching it exists.  When
    there is none, but there is one once a conflicting undo may have written
    (a wildcard), the culprit is that undo: R4, it left part of itself.  R9:
    the linearization also has every undo step of a run restore what the key
    held just before that run's write; one that exists only without that
    rule is an undo that restored a stale before-image (a write that landed
    between the run's read of the key and its write, given back as the
    value from before it - that write is lost)."""
    out = []
    for key in ALL_KEYS:
        events = register_events(ops, key)
        ok, order = linearize(events)
        if ok:
            continue
        if ok is None:
            print("warning: linearizability search for %s ran out of budget (inconclusive)" % key)
            continue
        if linearize(events, track=False)[0]:
            stale = [e[6] for e in events if e[6].kind == "undo" and e[2] == "cas"]
            out.append(Violation(
                "R9", "%s: every order of its ops has an undo restore a value the key did not hold "
                "just before the undone run wrote it (undos: %s) - a write that landed before the "
                "run's write is lost" % (key, ", ".join("#%d of %s" % (o.id, o.undone) for o in stale)),
                [e[6] for e in events], key=key))
            continue
        culprit = find_partial_undo(ops, key, events)
        if culprit is not None:
            out.append(Violation(
                "R4", "undo #%d reported a conflict (exit 3, on %s) yet changed %s: the history of %s "
                "has no linearization unless that undo wrote it - a conflict must leave no net change"
                % (culprit.id, (culprit.out or {}).get("key"), key, key), [e[6] for e in events], key=key))
            continue
        state = INITIAL
        for i in order:
            state = apply_event(events[i], state)[1]
        cur = state[0]
        stuck = [e[6] for i, e in enumerate(events) if i not in order and e[5]]
        msg = ("no linearization of the %d ops on %s: at most %d could be ordered (value then %s); "
               "the next required ops cannot follow: %s"
               % (len(events), key, len(order), "unknown" if cur is WILD else cur,
                  "; ".join("#%d %s" % (o.id, o.kind) for o in stuck[:4])))
        out.append(Violation("R1", msg, [e[6] for e in events], key=key))
    return out


def find_partial_undo(ops, key, events):
    """A conflicting undo whose optional wildcard write to key makes the
    history of key linearizable, or None."""
    for x in ops:
        if x.kind != "undo" or x.outcome != "conflict":
            continue
        relaxed = events + [(x.inv, INF, "wild", None, None, False, x)]
        relaxed.sort(key=lambda e: (e[0], e[1]))
        if linearize(relaxed, budget=300_000)[0]:
            return x
    return None


def acknowledged_writes(ops):
    """(key, run id, op) of every acknowledged change of a user key."""
    writes = []
    for op in ops:
        if op.outcome != "ok":
            continue
        if op.kind in ("put", "cput", "delete", "cas") and op.key in KEYS:
            writes.append((op.key, op.run, op))
        elif op.kind in ("import", "clear") and op.values:
            for k in op.values:
                writes.append((k, op.run, op))
        elif op.kind == "undo":
            steps = undo_steps(op)
            keys = [s.get("key") for s in steps] if steps is not None else undo_restored(op)
            for k in keys:
                writes.append((k, op.run, op))
    return writes


def status_index(runs_doc):
    """run id -> list of (scope, entry)."""
    index = {}
    sizes = {}
    for scope in runs_doc or []:
        sizes[scope.get("scope")] = len(scope.get("runs", []))
        for entry in scope.get("runs", []):
            index.setdefault(entry.get("run"), []).append((scope.get("scope"), entry))
    return index, sizes


def changed_key_per_history(index, run, key):
    """True/False when the history says whether run changed key, None if unknown."""
    entries = index.get(run)
    if not entries:
        return None
    return any(key in (e.get("keys") or []) for _, e in entries)


def undo_printed(op):
    """The run an undo printed as undone: an ok undo's, or a killed one's
    that got as far as printing its result (printed after its commit)."""
    if op.kind != "undo" or not isinstance(op.out, dict) or op.outcome not in ("ok", "unknown"):
        return None
    if op.outcome == "unknown" and not ("restored" in op.out and "error" not in op.out):
        return None
    return op.out.get("undone")


def check_undo_clobber(ops, runs_doc):
    """R2: a successful undo of U restored no key K that a later run V
    (V > U, acknowledged before the undo started) had changed, unless V was
    undone before the undo started.  Writes exempt: retries of the same undo
    (undone == U) and undos of runs later than U (popping the undo stack:
    the undo of a later run V puts back what V overwrote)."""
    out = []
    index, _ = status_index(runs_doc)
    writes = acknowledged_writes(ops)
    ok_undos = [o for o in ops if o.kind == "undo" and o.outcome == "ok" and o.undone]
    for x in ok_undos:
        u = x.undone
        steps = undo_steps(x)
        restored = [s.get("key") for s in steps] if steps is not None else undo_restored(x)
        for key in restored:
            for wkey, v, w in writes:
                if wkey != key or not v or v == u or v <= u or w is x:
                    continue
                if w.cmp is None or w.cmp >= x.inv:
                    continue  # not finished before the undo started
                if w.kind == "undo" and w.undone and (w.undone == u or w.undone > u):
                    continue
                # V was undone first: by an undo that finished before this
                # one started, or that overlapped it.  Two undos of one
                # pipeline exclude each other (the pipeline lease), and of
                # two overlapping ones either may have held it first - not
                # always the one with the smaller run id: the id is taken
                # before the lease is claimed, and a process can be
                # descheduled in between (seen: sqlite seed 2103898511 on a
                # loaded machine).  Had this undo gone first and restored K
                # over V's write, the undo of V would have met K changed
                # since V and refused (every value is unique), so a
                # successful undo of V that overlapped this one went first.
                # R1 still checks that the values agree with that order.
                # An undo killed after it printed its result had committed
                # (the result is printed after the commit) and counts too.
                undone_before = any(
                    undo_printed(y) == v and y is not x and y.inv < x.cmp for y in ops)
                if undone_before:
                    continue
                if w.kind in ("delete", "clear") and changed_key_per_history(index, v, key) is not True:
                    continue  # a delete may have changed nothing
                out.append(Violation(
                    "R2", "undo of %s (op #%d, run %s) restored %s over the later write %s of run %s "
                    "(op #%d, acknowledged %.1f ms before the undo started)"
                    % (u, x.id, x.run, key, written_value(w, key), v, w.id, (x.inv - w.cmp) / 1e6),
                    [w, x], key=key))
                break
    return out


def written_value(op, key):
    """What op wrote to key, as text for a report."""
    if op.kind == "undo":
        return "(a restore by undo of %s)" % op.undone
    if op.kind == "import":
        return (op.values or {}).get(key)
    if op.kind == "clear":
        return "(a delete by state clear)"
    return op.value if op.value is not None else "(delete)"


def last_writes_of_run(ops, run):
    """key -> (value, acknowledged) of the last write run made to each key."""
    last = {}
    mine = sorted((o for o in ops if o.run == run and o.kind in ("put", "cput", "cas", "delete", "import",
                                                                  "clear")),
                  key=lambda o: o.inv)
    for o in mine:
        if o.kind == "import":
            for k, v in (o.values or {}).items():
                last[k] = (v, o.outcome == "ok")
        elif o.kind == "clear":
            # A key absent when the clear read it is not its change (no
            # step, no image): never taken as a known last write.
            for k in o.values or {}:
                last[k] = (None, False)
        else:
            last[o.key] = (o.value, o.outcome == "ok")
    return last


def check_after_images(ops):
    """R3: a step's `replaced` is the value run U last wrote to the key."""
    out = []
    for x in ops:
        steps = undo_steps(x)
        if x.kind != "undo" or x.outcome != "ok" or steps is None or not x.undone:
            continue
        last = last_writes_of_run(ops, x.undone)
        for s in steps:
            k = s.get("key")
            if k in last and last[k][1] and canon(s.get("replaced")) != last[k][0]:
                out.append(Violation("R3", "undo #%d of %s: step for %s replaced %s, but the run last "
                                     "wrote %s" % (x.id, x.undone, k, canon(s.get("replaced")),
                                                   last[k][0]), [x], key=k))
    return out


def positions_in_scope(runs_doc, run):
    """How many newer runs precede run in each scope listing it."""
    return [[e.get("run") for e in scope.get("runs", [])].index(run)
            for scope in runs_doc or [] if any(e.get("run") == run for e in scope.get("runs", []))]


def check_retries(ops, runs_doc):
    """R4: the retry of a killed undo completes or conflicts (or finds the
    run already undone, or a run that changed nothing), and never undoes the
    killed undo itself."""
    out = []
    index, _ = status_index(runs_doc)
    for r in ops:
        orig = getattr(r, "retry_of", None)
        if orig is None:
            continue
        entries = index.get(r.target, [])
        changed_nothing = bool(entries) and not any(e.get("keys") for _, e in entries)
        undone = any(e.get("outcome") == "undone" for _, e in entries)
        stderr = getattr(r, "stderr", "") or ""
        # Only the last 20 rollback markers of a scope are kept
        # (doc/design.md §8.6).
        retired = any(pos >= 20 for pos in positions_in_scope(runs_doc, r.target))
        settled = r.rc == 2 and ("already undone" in stderr or undone or changed_nothing or retired)
        if r.outcome not in ("ok", "conflict") and not settled:
            out.append(Violation("R4", "retry #%d of the killed undo #%d (target %s) neither completed "
                                 "nor conflicted: rc %s %s" % (r.id, orig.id, r.target, r.rc,
                                                               (getattr(r, "stderr", "") or "").strip()[:200]),
                                 [orig, r]))
        if r.outcome == "ok" and r.undone != r.target:
            out.append(Violation("R4", "retry #%d of the killed undo #%d undid %s instead of %s"
                                 % (r.id, orig.id, r.undone, r.target), [orig, r]))
        if r.outcome == "ok" and r.undone and r.undone == getattr(r, "killed_run", None):
            out.append(Violation("R4", "retry #%d undid the killed undo's own run %s" % (r.id, r.undone),
                                 [orig, r]))
    return out


def check_history_agrees(ops, runs_doc):
    """R5: the run history after quiescence agrees with what happened."""
    out = []
    index, sizes = status_index(runs_doc)
    for run, entries in index.items():
        for scope, e in entries:
            if e.get("outcome") == "running":
                out.append(Violation("R5", "run %s of %s still reads 'running' after every process is "
                                     "dead (must read 'abandoned')" % (run, scope),
                                     [o for o in ops if o.run == run]))
    for op in ops:
        if op.outcome != "ok" or op.kind not in ("put", "cas", "delete", "import", "clear", "undo") or not op.run:
            continue
        if op.kind == "noop_put" or op.kind == "noop_del":
            continue
        entries = index.get(op.run)
        if not entries:
            full = any(n >= 50 for n in sizes.values())
            if not full:
                out.append(Violation("R5", "acknowledged %s #%d recorded run %s, which the history does "
                                     "not hold" % (op.kind, op.id, op.run), [op]))
            continue
        for scope, e in entries:
            if e.get("outcome") not in ("ok", "undone"):
                out.append(Violation("R5", "acknowledged %s #%d: its run %s reads '%s' in %s"
                                     % (op.kind, op.id, op.run, e.get("outcome"), scope), [op]))
            if op.kind in ("put", "cas") and op.key not in (e.get("keys") or []):
                out.append(Violation("R5", "acknowledged %s #%d of %s: its run %s does not list the key "
                                     "(keys %s)" % (op.kind, op.id, op.key, op.run, e.get("keys")), [op]))
    undo_ops = [o for o in ops if o.kind == "undo"]
    unknown_target = any(o.outcome in ("unknown", "failed") and not o.target for o in undo_ops)
    for run, entries in index.items():
        if not any(e.get("outcome") == "undone" for _, e in entries):
            continue
        named = [o for o in undo_ops if (o.undone == run) or
                 (o.outcome in ("unknown", "failed") and o.target == run)]
        if not named and not unknown_target:
            out.append(Violation("R5", "run %s reads 'undone' but no successful or unknown undo names it"
                                 % run, [o for o in ops if o.run == run]))
    for x in undo_ops:
        if x.outcome != "ok" or not x.undone:
            continue
        entries = index.get(x.undone)
        if entries and not any(e.get("outcome") == "undone" for _, e in entries):
            out.append(Violation("R5", "undo #%d of %s succeeded but the run reads %s"
                                 % (x.id, x.undone, [e.get("outcome") for _, e in entries]),
                                 [x] + [o for o in ops if o.run == x.undone]))
    return out


def check_final_values(ops, final):
    """R6: every final value was written by someone; no stray key appeared."""
    out = []
    written = {None}
    for op in ops:
        if op.value is not None and op.kind not in ("get", "final"):
            written.add(op.value)
        for v in (op.values or {}).values():
            written.add(v)
    for key, value in final["values"].items():
        if value not in written:
            out.append(Violation("R6", "final value of %s is %s, which no operation wrote" % (key, value)))
    for key in final.get("list") or []:
        if not is_bookkeeping(key) and key not in ALL_KEYS:
            out.append(Violation("R6", "stray key %s in the final store" % key))
    return out


def check_noop_writes(ops):
    """R7: a write that changes nothing records no run."""
    out = []
    for op in ops:
        if op.kind in ("noop_put", "noop_del") and op.outcome == "ok" and isinstance(op.out, dict):
            if op.out.get("run") is not None:
                out.append(Violation("R7", "%s #%d changed nothing but recorded run %s (want \"run\": null)"
                                     % ("put of the identical value" if op.kind == "noop_put"
                                        else "delete of an absent key", op.id, op.out.get("run")), [op]))
    return out


def check_all(ops, final, live_violations=()):
    v = list(live_violations)
    v += check_linearizable(ops)
    v += check_undo_clobber(ops, final.get("runs"))
    v += check_after_images(ops)
    v += check_retries(ops, final.get("runs"))
    v += check_history_agrees(ops, final.get("runs"))
    v += check_final_values(ops, final)
    v += check_noop_writes(ops)
    return v


# ---------------------------------------------------------------------------
# Reporting and the command line
# ---------------------------------------------------------------------------


def touches(op, keys):
    """Whether op may have read or changed one of keys."""
    if op.key in keys or (op.values and keys & set(op.values)):
        return True
    if op.kind == "undo" and isinstance(op.out, dict):
        steps = undo_steps(op) or []
        mentioned = set(op.out.get("restored") or []) | {s.get("key") for s in steps} | {op.out.get("key")}
        return bool(keys & mentioned) or op.outcome in ("unknown", "failed")
    return False


def report(backend, seed, violations, ops, max_each=3):
    """The violations, by rule, each with its ops; for an undo that clobbered
    a write (R2) also the sub-history of the key."""
    t0 = min((o.inv for o in ops if o.inv), default=0)
    print("HISTORY VIOLATIONS backend=%s seed=%d: %d" % (backend, seed, len(violations)))
    print("  reproduce: %s --backend %s --seeds %d" % (sys.argv[0], backend, seed))
    by_rule = {}
    for v in violations:
        by_rule.setdefault(v.rule, []).append(v)
    for rule in sorted(by_rule):
        vs = by_rule[rule]
        print("  %s: %d violation(s)%s" % (rule, len(vs), " (first %d shown)" % max_each if len(vs) > max_each else ""))
        for v in vs[:max_each]:
            print("    - %s" % v.message)
            printed = set()
            for o in v.ops:
                if o.id not in printed:
                    printed.add(o.id)
                    print("        %s" % o.describe(t0))
            keys = {v.key} if v.key else set()
            if rule in ("R2", "R3") and keys:
                shown = {o.id for o in v.ops}
                print("      sub-history of %s:" % ", ".join(sorted(keys)))
                for o in sorted(ops, key=lambda o: o.inv or 0):
                    if o.id not in shown and touches(o, keys):
                        print("        %s" % o.describe(t0))


def run_one(faucet, backend, seed, n, args):
    s = Schedule(faucet, backend, seed, n, actors=args.actors, ops_per_actor=args.ops,
                 kills=args.kills, faults=args.faults, shim=args.shim,
                 only=args.only.split(",") if args.only else None, verbose=args.verbose)
    started = time.time()
    try:
        ops, final = s.run()
        violations = check_all(ops, final, s.live_violations)
    finally:
        if not args.keep:
            s.cleanup()
    took = time.time() - started
    if args.dump:
        with open("%s.%s.%d.txt" % (args.dump, backend, seed), "w") as f:
            t0 = min((o.inv for o in ops if o.inv), default=0)
            for o in sorted(ops, key=lambda o: o.inv or 0):
                f.write(o.describe(t0) + "\n")
    kinds = {}
    for o in ops:
        kinds[o.kind] = kinds.get(o.kind, 0) + 1
    print("backend=%s seed=%d actors=%d ops=%d killed=%d took=%.1fs -> %s"
          % (backend, seed, s.n_actors, len(ops), sum(o.killed for o in ops), took,
             "ok" if not violations else "%d violation(s)" % len(violations)))
    sys.stdout.flush()
    if violations:
        report(backend, seed, violations, ops)
    return violations


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--faucet", default=os.environ.get("FAUCET_BIN", "build/faucet"))
    ap.add_argument("--backend", default="file",
                    help="file, sqlite, postgres, redis, etcd, or a comma list, or all")
    ap.add_argument("--seeds", default="1", help="comma list of seeds")
    ap.add_argument("--minutes", type=float, default=0,
                    help="instead of --seeds: random seeds for this long")
    ap.add_argument("--actors", type=int)
    ap.add_argument("--ops", type=int, help="ops per actor")
    ap.add_argument("--kills", type=int, help="nemesis kills per schedule")
    ap.add_argument("--faults", type=float, default=0.0,
                    help="EIO probability of fsync/rename in faucet processes (file/sqlite; needs --shim)")
    ap.add_argument("--shim", help="the fault shim library (libfaucet_faultshim.so)")
    ap.add_argument("--only", help="only these op kinds (comma list of %s)"
                    % ",".join(n for n, _ in Schedule.OPS))
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--dump", help="write every schedule's ops to DUMP.BACKEND.SEED.txt")
    args = ap.parse_args()
    backends = ["file", "sqlite", "postgres", "redis", "etcd"] if args.backend == "all" else args.backend.split(",")
    if not os.access(args.faucet, os.X_OK):
        print("faucet binary %r is not executable" % args.faucet)
        return 2
    for b in backends:
        store_url(b, 0, 0, "/nonexistent")  # a missing server URL fails here
    failed = []
    n = int(time.time()) % 100000
    if args.minutes:
        deadline = time.time() + args.minutes * 60
        rng = random.Random()
        while time.time() < deadline:
            seed = rng.randrange(1, 1 << 31)
            for b in backends:
                print("seed %d backend %s" % (seed, b))
                if run_one(args.faucet, b, seed, n, args):
                    failed.append((b, seed))
    else:
        for seed in [int(x) for x in args.seeds.split(",") if x]:
            for b in backends:
                if run_one(args.faucet, b, seed, n, args):
                    failed.append((b, seed))
    if failed:
        print("FAILED: %s" % ", ".join("%s seed %d" % f for f in failed))
        return 1
    print("all schedules passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
