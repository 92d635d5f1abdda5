#!/usr/bin/env python3
"""test_checker_selftest.py - the history checker must be able to fail.

Hand-made histories fed to check_history's checks: correct ones must be
accepted, each kind of violation (a lost write, a stale read, an undo that
clobbers a later run's write, a wrong after-image, a half-done conflicting
undo, a history that disagrees with the store, a value nobody wrote, a
no-op write that records a run, an undo that gives back a stale before-image,
an undo that leaves out a key its run wrote)
must be flagged by its rule.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_history as ch  # noqa: E402

MS = 1_000_000


def v(tag):
    return ch.canon({"w": tag})


def op(kind, key=None, value=None, inv=0, cmp=1, outcome="ok", **kw):
    o = ch.Op(kw.pop("actor", "T"), kind, key=key, value=value, inv=inv * MS,
              cmp=None if cmp is None else cmp * MS, outcome=outcome, **kw)
    return o


def final_read(key, value, at=1000):
    return op("final", key, value, inv=at, cmp=at + 1)


def runs_doc(*entries):
    """[(scope, run, outcome, keys, undoes)] -> a `state runs --json` document."""
    scopes = {}
    for scope, run, outcome, keys, undoes in entries:
        scopes.setdefault(scope, []).append({"run": run, "outcome": outcome, "keys": keys,
                                             "undoes": undoes, "by": {"pid": 1}})
    return [{"scope": s, "runs": r} for s, r in scopes.items()]


R1 = "20260101T000001.000Z-aaaaaa"
R2 = "20260101T000002.000Z-bbbbbb"
R3 = "20260101T000003.000Z-cccccc"
UNDO = "20260101T000004.000Z-dddddd"


def rules(violations):
    return sorted({x.rule for x in violations})


class Linearizability(unittest.TestCase):
    def test_sequential_history_accepted(self):
        ops = [op("put", "P::a", v("1"), 0, 10, run=R1),
               op("get", "P::a", v("1"), 11, 20),
               op("put", "P::a", v("2"), 21, 30, run=R2),
               final_read("P::a", v("2"))]
        self.assertEqual(ch.check_linearizable(ops), [])

    def test_lost_write_flagged(self):
        # put 2 acknowledged after put 1, yet the store ends with 1.
        ops = [op("put", "P::a", v("1"), 0, 10), op("put", "P::a", v("2"), 20, 30),
               final_read("P::a", v("1"))]
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R1"])

    def test_concurrent_writes_either_order(self):
        ops = [op("put", "P::a", v("1"), 0, 30), op("put", "P::a", v("2"), 10, 20),
               final_read("P::a", v("1"))]
        self.assertEqual(ch.check_linearizable(ops), [])

    def test_stale_read_flagged(self):
        ops = [op("put", "P::a", v("1"), 0, 10), op("put", "P::a", v("2"), 20, 30),
               op("get", "P::a", v("1"), 40, 50), final_read("P::a", v("2"))]
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R1"])

    def test_unknown_write_may_land_late(self):
        ops = [op("put", "P::a", v("1"), 0, 10, outcome="unknown"),
               op("put", "P::a", v("2"), 20, 30),
               final_read("P::a", v("1"))]
        self.assertEqual(ch.check_linearizable(ops), [])

    def test_unknown_write_may_not_land(self):
        ops = [op("put", "P::a", v("1"), 0, 10, outcome="unknown"), final_read("P::a", None)]
        self.assertEqual(ch.check_linearizable(ops), [])

    def test_cas_not_held_must_not_write(self):
        ops = [op("cas", "P::a", v("1"), 0, 10, outcome="conflict", expected=v("x"),
                  out={"found": None}),
               final_read("P::a", v("1"))]
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R1"])

    def test_cas_ok_needs_expected(self):
        ops = [op("put", "P::a", v("1"), 0, 10),
               op("cas", "P::a", v("2"), 20, 30, expected=v("other")),
               final_read("P::a", v("2"))]
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R1"])

    def test_undo_steps_are_cas(self):
        undo = op("undo", inv=20, cmp=30, run=UNDO, target=R2,
                  out={"undone": R2, "run": UNDO, "restored": ["P::a"],
                       "steps": [{"key": "P::a", "replaced": {"w": "2"}, "restored_to": {"w": "1"}}]})
        ops = [op("put", "P::a", v("1"), 0, 5, run=R1), op("put", "P::a", v("2"), 6, 10, run=R2),
               undo, final_read("P::a", v("1"))]
        self.assertEqual(ch.check_linearizable(ops), [])
        # ... and a step that replaced a value the key did not hold is flagged.
        undo.out["steps"][0]["replaced"] = {"w": "9"}
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R1"])

    def test_undo_must_give_back_a_put_that_landed_before_the_runs_write(self):
        # R2's put overlaps R3's, which landed first: R2's before-image is
        # R3's value, and undo of R2 gives that back.
        undo = op("undo", inv=30, cmp=40, run=UNDO, target=R2,
                  out={"undone": R2, "run": UNDO, "restored": ["P::a"],
                       "steps": [{"key": "P::a", "replaced": {"w": "2"}, "restored_to": {"w": "3"}}]})
        ops = [op("put", "P::a", v("1"), 0, 5, run=R1), op("put", "P::a", v("2"), 6, 20, run=R2),
               op("put", "P::a", v("3"), 8, 12, run=R3), undo, final_read("P::a", v("3"))]
        self.assertEqual(ch.check_linearizable(ops), [])
        # Restoring the value from before R3's put loses that put: R9.
        undo.out["steps"][0]["restored_to"] = {"w": "1"}
        ops[-1] = final_read("P::a", v("1"))
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R9"])
        # A joined child's first write is held to it as well (§8.2) ...
        for o in ops[1:3]:
            o.kind = "cput"
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R9"])
        # ... an import's is not (its window is still open, §8.2).
        for o in ops[1:3]:
            o.kind, o.values = "import", {"P::a": o.value}
        self.assertEqual(ch.check_linearizable(ops), [])

    def test_undo_without_steps_is_a_wildcard(self):
        undo = op("undo", inv=20, cmp=30, run=UNDO, out={"undone": R2, "run": UNDO, "restored": ["P::a"]})
        ops = [op("put", "P::a", v("1"), 0, 5), op("put", "P::a", v("2"), 6, 10),
               undo, op("get", "P::a", v("1"), 40, 50), final_read("P::a", v("1"))]
        self.assertEqual(ch.check_linearizable(ops), [])
        # The wildcard is one write: two different values after it are not.
        ops.insert(3, op("get", "P::a", v("0"), 35, 38))
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R1"])

    def test_conflicting_undo_that_wrote_is_R4(self):
        undo = op("undo", inv=20, cmp=30, outcome="conflict",
                  out={"key": "P::b", "current": {"w": "b2"}, "run": R1})
        ops = [op("import", inv=0, cmp=5, values={"P::a": v("1"), "P::b": v("b1")}, run=R1),
               op("put", "P::b", v("b2"), 6, 10), undo,
               final_read("P::a", None), final_read("P::b", v("b2"))]
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R4"])

    def test_conflicting_undo_rolled_back_accepted(self):
        # The undo restored P::a (a reader saw it), met the conflict on P::b
        # and rolled P::a back: no net change.
        undo = op("undo", inv=20, cmp=40, outcome="conflict",
                  out={"key": "P::b", "current": {"w": "b2"}, "run": R1})
        ops = [op("put", "P::a", v("0"), 0, 2),
               op("import", inv=3, cmp=5, values={"P::a": v("1"), "P::b": v("b1")}, run=R1),
               op("put", "P::b", v("b2"), 6, 10), undo,
               op("get", "P::a", v("0"), 25, 30),
               op("get", "P::a", v("1"), 45, 50),
               final_read("P::a", v("1")), final_read("P::b", v("b2"))]
        self.assertEqual(ch.check_linearizable(ops), [])
        # ... but a restore still there after the undo ended is a net change.
        ops[5] = op("get", "P::a", v("0"), 45, 50)
        ops[6] = final_read("P::a", v("0"))
        self.assertEqual(rules(ch.check_linearizable(ops)), ["R4"])


class UndoClobber(unittest.TestCase):
    def history(self, later_write_undone=False):
        u_put = op("put", "P::a", v("1"), 0, 10, run=R1)
        later = op("put", "P::a", v("2"), 20, 30, run=R2)
        ops = [u_put, later]
        if later_write_undone:
            ops.append(op("undo", inv=40, cmp=50, run=R3,
                          out={"undone": R2, "run": R3, "restored": ["P::a"]}))
        ops.append(op("undo", inv=60, cmp=70, run=UNDO, out={"undone": R1, "run": UNDO, "restored": ["P::a"]}))
        return ops

    def test_undo_over_later_write_flagged(self):
        vs = ch.check_undo_clobber(self.history(), runs_doc())
        self.assertEqual(rules(vs), ["R2"])
        self.assertIn("restored P::a over the later write", vs[0].message)

    def test_undo_stack_popping_accepted(self):
        self.assertEqual(ch.check_undo_clobber(self.history(later_write_undone=True), runs_doc()), [])

    def test_overlapping_undo_of_later_run_accepted(self):
        # The undo of R2 overlaps the undo of R1 and got the pipeline lease
        # first although its run id is larger (taken before the lease).
        ops = self.history()
        ops.append(op("undo", inv=62, cmp=66, run="20260101T000009.000Z-ffffff",
                      out={"undone": R2, "run": "20260101T000009.000Z-ffffff",
                           "restored": ["P::a"]}))
        self.assertEqual(ch.check_undo_clobber(ops, runs_doc()), [])

    def test_undo_of_later_run_after_the_undo_flagged(self):
        # Undone only after this undo ended: the restore went over R2's write.
        ops = self.history()
        ops.append(op("undo", inv=75, cmp=80, run="20260101T000009.000Z-ffffff",
                      out={"undone": R2, "run": "20260101T000009.000Z-ffffff",
                           "restored": ["P::a"]}))
        self.assertEqual(rules(ch.check_undo_clobber(ops, runs_doc())), ["R2"])

    def test_write_after_undo_started_not_counted(self):
        ops = [op("put", "P::a", v("1"), 0, 10, run=R1),
               op("put", "P::a", v("2"), 55, 80, run=R2),
               op("undo", inv=50, cmp=70, run=UNDO, out={"undone": R1, "run": UNDO, "restored": ["P::a"]})]
        self.assertEqual(ch.check_undo_clobber(ops, runs_doc()), [])


class AfterImage(unittest.TestCase):
    def test_replaced_must_be_last_write(self):
        ops = [op("cput", "P::a", v("1"), 0, 10, run=R1), op("cput", "P::a", v("2"), 11, 20, run=R1),
               op("undo", inv=30, cmp=40, run=UNDO,
                  out={"undone": R1, "run": UNDO,
                       "steps": [{"key": "P::a", "replaced": {"w": "1"}, "restored_to": None}]})]
        self.assertEqual(rules(ch.check_after_images(ops)), ["R3"])
        ops[2].out["steps"][0]["replaced"] = {"w": "2"}
        self.assertEqual(ch.check_after_images(ops), [])


class UndoComplete(unittest.TestCase):
    """R10 (in R1's search): an undo without a step for a key its run wrote
    must have found the key at its before-image."""

    def history(self, stepped, later_delete=False):
        ops = [op("import", inv=0, cmp=10, run=R1, values={"P::a": v("1"), "P::b": v("2")})]
        if later_delete:
            ops.append(op("delete", "P::b", None, 11, 15, run=R2))
        ops.append(op("undo", inv=20, cmp=30, run=UNDO,
                      out={"undone": R1, "run": UNDO,
                           "steps": [{"key": k, "replaced": {"w": "1"}, "restored_to": None}
                                     for k in stepped]}))
        ops += [final_read("P::a", None), final_read("P::b", None if later_delete else v("2"))]
        return ops

    def test_undo_that_leaves_a_key_out_flagged(self):
        self.assertEqual(rules(ch.check_linearizable(self.history(["P::a"]))), ["R1"])

    def test_undo_may_find_a_key_a_later_write_put_back(self):
        self.assertEqual(ch.check_linearizable(self.history(["P::a"], later_delete=True)), [])


class Retries(unittest.TestCase):
    def retry(self, rc, outcome, stderr=""):
        killed = op("undo", inv=0, cmp=5, outcome="unknown", target=R1)
        killed.killed = True
        r = op("undo", inv=100, cmp=110, outcome=outcome, target=R1, rc=rc,
               out={"undone": R1, "run": UNDO} if outcome == "ok" else None)
        r.retry_of, r.killed_run, r.stderr = killed, None, stderr
        return [killed, r]

    def test_retry_that_finishes_accepted(self):
        doc = runs_doc(("P::a", R1, "undone", ["P::a"], None))
        self.assertEqual(ch.check_retries(self.retry(0, "ok"), doc), [])
        self.assertEqual(ch.check_retries(self.retry(2, "rejected", "already undone"), doc), [])

    def test_retry_that_fails_flagged(self):
        doc = runs_doc(("P::a", R1, "ok", ["P::a"], None))
        self.assertEqual(rules(ch.check_retries(self.retry(1, "failed", "boom"), doc)), ["R4"])
        self.assertEqual(rules(ch.check_retries(self.retry(2, "rejected", "nothing to undo"), doc)), ["R4"])


class HistoryAgrees(unittest.TestCase):
    def test_running_after_quiescence_flagged(self):
        ops = [op("put", "P::a", v("1"), 0, 10, run=R1)]
        doc = runs_doc(("P::a", R1, "ok", ["P::a"], None), ("P::b", R2, "running", [], None))
        self.assertEqual(rules(ch.check_history_agrees(ops, doc)), ["R5"])

    def test_consistent_history_accepted(self):
        ops = [op("put", "P::a", v("1"), 0, 10, run=R1),
               op("undo", inv=20, cmp=30, run=UNDO, out={"undone": R1, "run": UNDO, "restored": ["P::a"]})]
        doc = runs_doc(("P::a", R1, "undone", ["P::a"], None), ("P::a", UNDO, "ok", ["P::a"], R1))
        self.assertEqual(ch.check_history_agrees(ops, doc), [])

    def test_ok_replacing_undone_flagged(self):
        ops = [op("put", "P::a", v("1"), 0, 10, run=R1),
               op("undo", inv=20, cmp=30, run=UNDO, out={"undone": R1, "run": UNDO, "restored": ["P::a"]})]
        doc = runs_doc(("P::a", R1, "ok", ["P::a"], None), ("P::a", UNDO, "ok", ["P::a"], R1))
        self.assertEqual(rules(ch.check_history_agrees(ops, doc)), ["R5"])

    def test_undone_without_undo_flagged(self):
        ops = [op("put", "P::a", v("1"), 0, 10, run=R1)]
        doc = runs_doc(("P::a", R1, "undone", ["P::a"], None))
        self.assertEqual(rules(ch.check_history_agrees(ops, doc)), ["R5"])

    def test_missing_run_flagged(self):
        ops = [op("put", "P::a", v("1"), 0, 10, run=R1)]
        self.assertEqual(rules(ch.check_history_agrees(ops, runs_doc())), ["R5"])


class FinalValuesAndNoops(unittest.TestCase):
    def test_value_nobody_wrote_flagged(self):
        ops = [op("put", "P::a", v("1"), 0, 10)]
        final = {"values": {"P::a": v("ghost")}, "list": ["P::a", "P::a::__status__"]}
        self.assertEqual(rules(ch.check_final_values(ops, final)), ["R6"])
        final["values"]["P::a"] = v("1")
        self.assertEqual(ch.check_final_values(ops, final), [])

    def test_noop_write_recording_a_run_flagged(self):
        ops = [op("noop_del", ch.NOOP_DEL_KEY, None, 0, 10, out={"run": R1, "deleted": True})]
        self.assertEqual(rules(ch.check_noop_writes(ops)), ["R7"])
        ops[0].out["run"] = None
        self.assertEqual(ch.check_noop_writes(ops), [])


if __name__ == "__main__":
    unittest.main()
