"""A store opened before multiprocessing forks (its default start method on
Linux) is used by parent and child at once: each must read back its own
values, never the other process's (they would share the parent's sockets
if the child did not reconnect)."""

import multiprocessing

import faucet

ROUNDS = 300


def exercise(store, who):
    for i in range(ROUNDS):
        key = f"fork::{who}::{i % 16}"
        value = {"who": who, "i": i}
        store.put(key, value)
        got = store.get(key)
        if got != value:
            raise AssertionError(f"{who}: {key} read back {got!r}, expected {value!r}")


def child(store, errors):
    try:
        exercise(store, "child")
    except Exception as e:  # reported to the parent, which fails the test
        errors.put(f"{type(e).__name__}: {e}")
        raise SystemExit(1)
    errors.put(None)


def test_parent_and_forked_child_get_their_own_values(url):
    ctx = multiprocessing.get_context("fork")
    with faucet.open(url) as s:
        assert s.get("fork::warm") is None  # a pooled connection exists now
        errors = ctx.Queue()
        p = ctx.Process(target=child, args=(s, errors))
        p.start()
        try:
            exercise(s, "parent")
            reported = errors.get(timeout=300)
        finally:
            p.join(timeout=300)
            if p.exitcode is None:
                p.kill()
                p.join()
        assert reported is None
        assert p.exitcode == 0
        assert s.get("fork::child::0") == {"who": "child", "i": max(range(0, ROUNDS, 16))}
