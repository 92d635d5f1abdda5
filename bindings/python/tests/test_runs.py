"""Invocation runs through Python (include/faucet/run.h).  They run only
against a libfaucet that has the run calls; with an older one,
test_store.py checks that Store.run() says Unsupported."""

import re

import pytest

import faucet
from faucet import _run

pytestmark = pytest.mark.skipif(not _run.available(),
                                reason="this libfaucet has no invocation runs")

RUN_ID = re.compile(r"\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{6}\Z")


def status(store, scope="orders::default"):
    return store.get(f"{scope}::__status__")["runs"]


def test_a_run_records_its_writes_and_its_outcome(store):
    store.put("orders::default", {"cursor": 0})
    with store.run("orders", "default") as run:
        assert RUN_ID.match(run.id) and run.scope == "orders::default"
        assert run.row == "default" and not run.joined
        assert store.get("orders::default::__lease__")["run"] == run.id
        run.put("orders::default", {"cursor": 1})
        assert run.compare_and_put("orders::default", {"cursor": 1}, {"cursor": 2})
        assert not run.compare_and_put("orders::default", {"cursor": 1}, {"cursor": 3})
        assert run.keys == ["orders::default"]
    assert store.get("orders::default") == {"cursor": 2}
    assert store.get("orders::default::__lease__") is None
    newest = status(store)[0]
    assert newest["run"] == run.id and newest["outcome"] == "ok"
    assert newest["keys"] == ["orders::default"]
    marker = store.get(f"orders::default::__rollback__::{run.id}")
    assert marker["before"] == {"orders::default": {"cursor": 0}}


def test_a_block_that_raises_ends_the_run_failed(store):
    with pytest.raises(RuntimeError, match="source went away"):
        with store.run("orders") as run:
            run.put("orders::default", 1)
            raise RuntimeError("source went away")
    newest = status(store)[0]
    assert newest["outcome"] == "failed" and "source went away" in newest["message"]
    assert store.get("orders::default::__lease__") is None


def test_a_second_run_of_the_invocation_is_locked(store):
    with store.run("orders") as first:
        with pytest.raises(faucet.Locked) as e:
            with store.run("orders", wait=0):
                pass
        assert e.value.retryable and e.value.code == -9
        first.put("orders::default", 1)
    with store.run("orders"):  # free again
        pass


def test_a_run_that_lost_its_lease_writes_nothing(store):
    with pytest.raises(faucet.LeaseLost):
        with store.run("orders", renew=False) as run:
            run.put("orders::default", 1)
            store.delete("orders::default::__lease__")  # `faucet lock break`
            with pytest.raises(faucet.LeaseLost) as e:
                run.put("orders::default", 2)
            assert e.value.code == -15 and not e.value.retryable
    assert store.get("orders::default") == 1


def test_inside_faucet_run_the_enclosing_run_is_joined(store, monkeypatch):
    with store.run("orders") as outer:
        monkeypatch.setenv("FAUCET_RUN_ID", outer.id)
        monkeypatch.setenv("FAUCET_RUN_PIPELINE", "orders")
        monkeypatch.setenv("FAUCET_RUN_ROW", "default")
        with store.run("orders") as inner:
            assert inner.joined and inner.id == outer.id
            inner.put("orders::default", {"from": "child"})
        # Leaving the joined block did not end the run.
        assert store.get("orders::default::__lease__")["run"] == outer.id
    assert status(store)[0]["outcome"] == "ok"
    assert store.get("orders::default") == {"from": "child"}


def test_a_run_id_without_its_pipeline_is_refused_not_guessed(store, monkeypatch):
    # The library's rule (faucet_run_join_env), the command's as well: an
    # id alone names no run; beginning a run of one's own beside it would
    # leave the job's writes out of the run an operator undoes.
    monkeypatch.setenv("FAUCET_RUN_ID", "20260101T000000.000Z-abcdef")
    monkeypatch.delenv("FAUCET_RUN_PIPELINE", raising=False)
    with pytest.raises(faucet.InvalidArgument, match="FAUCET_RUN_PIPELINE is not"):
        with store.run("orders"):
            pass
    assert store.get("orders::default::__lease__") is None


def test_another_pipelines_run_is_not_joined(store, monkeypatch):
    with store.run("orders") as outer:
        monkeypatch.setenv("FAUCET_RUN_ID", outer.id)
        monkeypatch.setenv("FAUCET_RUN_PIPELINE", "orders")
        monkeypatch.delenv("FAUCET_RUN_ROW", raising=False)
        with store.run("orders") as same:  # an unset row is "default"
            assert same.joined and same.id == outer.id
        with store.run("users") as other:
            assert not other.joined and other.id != outer.id


def test_a_run_outside_its_block_refuses_writes(memory):
    run = memory.run("orders")
    with pytest.raises(faucet.Error, match="not active"):
        run.put("orders::default", 1)


def test_the_lease_is_renewed_while_the_block_runs(tmp_path):
    """With a 1 s lease, a run still holds it after its first expiry has
    passed: the background renewal extended it.  (This waits for the clock
    to pass the lease's expiry - the thing under test - not for a thread.)"""
    import time
    with faucet.open(f"file:{tmp_path}/s") as store:
        with store.run("orders", ttl=1) as run:
            first = store.get("orders::default::__lease__")["expires_at"]
            while time.time() < first + 1.5:
                time.sleep(0.05)
            assert run.renew_error is None
            assert store.get("orders::default::__lease__")["expires_at"] > first
            with pytest.raises(faucet.Locked):
                with store.run("orders", wait=0):
                    pass
            run.put("orders::default", 1)
