"""The store calls on every backend: the same contract as the C API."""

import gc
import threading

import pytest

import faucet


def test_put_get_delete(store):
    store.put("orders::default", {"cursor": 1})
    assert store.get("orders::default") == {"cursor": 1}
    store.put("orders::default", {"cursor": 2})
    assert store.get("orders::default") == {"cursor": 2}
    store.delete("orders::default")
    assert store.get("orders::default") is None
    store.delete("orders::default")  # absent: not an error


def test_compare_and_put_compares_json_values(store):
    assert store.compare_and_put("p::r", None, {"a": 1, "b": 2}) is True
    assert store.compare_and_put("p::r", None, {"a": 9}) is False
    assert store.compare_and_put("p::r", {"b": 2, "a": 1}, {"n": 2**64 - 1}) is True
    assert store.compare_and_put("p::r", {"n": 2**64 - 2}, 0) is False
    assert store.get("p::r") == {"n": 2**64 - 1}


def test_compare_and_put_compares_numbers_by_value(store):
    # doc/design.md §2.5: the int 1200 and the double 1200.0 are one value.
    store.put("p::r", {"n": 1200})
    assert store.compare_and_put("p::r", {"n": 1200.0}, {"n": 1}) is True


def test_compare_and_delete(store):
    store.put("p::r", [1, 2])
    assert store.compare_and_delete("p::r", [2, 1]) is False
    assert store.compare_and_delete("p::r", [1, 2]) is True
    assert store.get("p::r") is None
    assert store.compare_and_delete("p::r", [1, 2]) is False


def test_put_if_absent_and_if_equals(store):
    store.put("p::r", 1, if_absent=True)
    with pytest.raises(faucet.ConditionFailed) as e:
        store.put("p::r", 2, if_absent=True)
    assert isinstance(e.value, faucet.Error) and not e.value.retryable
    store.put("p::r", 3, if_equals=1)
    with pytest.raises(faucet.ConditionFailed):
        store.put("p::r", 4, if_equals=1)
    assert store.get("p::r") == 3


def test_list_is_in_byte_order_and_prefixes_are_literal(store):
    keys = ["p::b", "p::B", "p::a_", "p::a-", "p::ab", "p::a", "q::x", "p::a/b", "p::Z"]
    for k in keys:
        store.put(k, 1)
    assert store.list() == sorted(keys, key=lambda k: k.encode())
    assert store.list("p::a_") == ["p::a_"]  # `_` is no LIKE wildcard here
    assert store.list("p::a") == ["p::a", "p::a-", "p::a/b", "p::a_", "p::ab"]
    assert store.list("nothing") == []


def test_scan_gives_the_keys_of_list(store):
    for i in range(30):
        store.put(f"p::k{i:03d}", i)
    store.put("q::other", 0)
    assert list(store.scan("p::", chunk=4)) == store.list("p::")
    assert list(store.scan()) == store.list()


def test_scan_can_stop_early_and_the_store_stays_usable(store):
    for i in range(50):
        store.put(f"p::k{i:03d}", i)
    it = store.scan("p::", chunk=1)
    first = [next(it) for _ in range(3)]
    assert len(store._calls) == 1  # the open iterator holds the handle
    it.close()
    it.close()
    assert first == ["p::k000", "p::k001", "p::k002"]
    with pytest.raises(StopIteration):
        next(it)
    # Breaking out of a loop and dropping the iterator ends the scan too.
    for key in store.scan("p::", chunk=1):
        break
    del key
    gc.collect()
    assert store._calls == []
    with store.scan("p::") as it:
        assert next(it) == "p::k000"
    assert store._calls == []
    store.put("p::after", 1)
    assert store.get("p::after") == 1


def test_scan_pulls_on_the_callers_thread(store):
    for i in range(20):
        store.put(f"p::k{i:02d}", i)
    before = threading.active_count()
    it = store.scan("p::", chunk=3)
    assert next(it) == "p::k00"
    assert threading.active_count() == before  # no helper thread
    assert list(it) == [f"p::k{i:02d}" for i in range(1, 20)]
    assert store._calls == []  # exhausted: freed


def test_scan_of_many_keys_in_pages(store):
    keys = {f"m::{i:05d}": i for i in range(1500)}
    store.import_({"version": 1, "pipeline": "m", "keys": keys})
    store.put("n::other", 0)
    want = sorted(keys)
    assert list(store.scan("m::")) == want
    assert list(store.scan("m::", chunk=7)) == want
    assert list(store.scan("m::", chunk=1500)) == want
    assert list(store.scan("m::", chunk=10**9)) == want  # clamped, not refused
    assert list(store.scan("m::", chunk=0)) == want  # as before: at least 1
    assert list(store.scan("")) == store.list()


def test_scan_keeps_a_closed_store_alive_until_it_ends(store):
    for i in range(5):
        store.put(f"p::k{i}", i)
    it = store.scan("p::", chunk=2)
    assert next(it) == "p::k0"
    store.close()
    assert store._handle  # not freed under the iterator
    assert list(it) == ["p::k1", "p::k2", "p::k3", "p::k4"]
    assert store._handle == []  # the iterator's end freed it
    with pytest.raises(faucet.Error, match="closed"):
        store.scan("p::")


def test_scan_raises_a_listing_failure(tmp_path):
    root = tmp_path / "state"
    s = faucet.open(f"file:{root}")
    try:
        s.put("p::a", 1)
        it = s.scan("p::")
        for f in root.iterdir():
            f.unlink()
        root.rmdir()
        root.write_text("not a directory")
        with pytest.raises(faucet.Error) as e:
            next(it)
        assert str(root) in str(e.value)
        with pytest.raises(StopIteration):  # the failure ended it
            next(it)
        assert s._calls == []
    finally:
        s.close()


def test_scan_lists_once_with_a_library_without_the_iterator(memory, monkeypatch):
    from faucet import _store
    memory.put("p::a", 1)
    memory.put("p::b", 2)
    real = _store.has
    monkeypatch.setattr(_store, "has",
                        lambda lib, name: name != "faucet_store_iter_new" and real(lib, name))
    assert list(memory.scan("p::")) == ["p::a", "p::b"]


def test_scan_may_use_the_store_while_it_runs(store):
    for i in range(10):
        store.put(f"p::k{i}", i)
    seen = {key: store.get(key) for key in store.scan("p::", chunk=2)}
    assert seen == {f"p::k{i}": i for i in range(10)}


def test_scan_reports_a_bad_prefix(memory):
    with pytest.raises(faucet.InvalidKey):
        list(memory.scan("a\0b"))


def test_export_and_import_round_trip(store, tmp_path):
    store.put("orders::default", {"cursor": 18446744073709551615, "f": 0.1})
    store.put("orders::eu", [1, 2])
    store.put("other::default", 1)
    doc = store.export("orders")
    assert doc["version"] == 1 and doc["pipeline"] == "orders"
    assert doc["keys"] == {"orders::default": {"cursor": 18446744073709551615, "f": 0.1},
                           "orders::eu": [1, 2]}

    target = faucet.open(f"file:{tmp_path}/copy")
    try:
        target.put("orders::stale", 1)
        report = target.import_(doc, replace=True)
        assert report.written == ["orders::default", "orders::eu"]
        assert report.deleted == ["orders::stale"]
        assert report.durability_unknown == []
        assert target.list() == ["orders::default", "orders::eu"]
        assert target.export("orders")["keys"] == doc["keys"]
        # The JSON text works as well as the dict.
        again = target.import_(store.export_json("orders"))
        assert again.written == ["orders::default", "orders::eu"]
    finally:
        target.close()


def test_import_refuses_a_bad_document(memory):
    memory.put("orders::default", 1)
    for doc in ('{"version": 9, "pipeline": "orders", "keys": {}}',
                {"version": 1, "pipeline": "orders", "keys": {"other::x": 1}},
                "not json", 42):
        with pytest.raises(faucet.InvalidDocument):
            memory.import_(doc)
    assert memory.list() == ["orders::default"]


def test_check_runs_the_doctor_probes(store):
    report = store.check(timeout=10)
    assert isinstance(report, faucet.CheckReport) and len(report) >= 1
    assert report.ok, report
    for probe in report:
        assert probe.status in ("pass", "skip", "warn")
        assert isinstance(probe.name, str) and probe.elapsed_ms >= 0


def test_atomic_capabilities(store, backend):
    assert store.atomic_compare_and_put is True
    assert store.supports_list is True


def test_a_closed_store_refuses_calls(url):
    s = faucet.open(url)
    s.put("p::r", 1)
    s.close()
    s.close()
    assert s.closed
    with pytest.raises(faucet.Error, match="closed"):
        s.get("p::r")
    with pytest.raises(faucet.Error, match="closed"):
        s.put("p::r", 2)


def test_the_store_is_a_context_manager(tmp_path):
    with faucet.open(f"file:{tmp_path}/s") as s:
        s.put("p::r", 1)
    assert s.closed
    with faucet.open(f"file:{tmp_path}/s") as s:
        assert s.get("p::r") == 1


def test_bad_keys_are_invalid_key(memory):
    for key in ("", "has space", ".hidden", "a//b", "x" * 257, "a\0b", b"p::r", 7):
        with pytest.raises(faucet.InvalidKey):
            memory.put(key, 1)
        with pytest.raises(faucet.InvalidKey):
            memory.get(key)
    with pytest.raises(faucet.InvalidKey) as e:
        memory.get("has space")
    assert "has space" in e.value.message and e.value.code == -2


def test_run_is_unsupported_without_the_library_calls(memory, monkeypatch):
    # An older libfaucet lacks faucet_run_begin: as if RUN_CALLS named a
    # call no library has.
    from faucet import _run
    monkeypatch.setattr(_run, "RUN_CALLS", _run.RUN_CALLS + ("faucet_no_such_call",))
    assert not _run.available()
    with pytest.raises(faucet.Unsupported):
        memory.run("orders", "default")


def test_import_dry_run_and_allow_empty(memory):
    from faucet._ffi import lib, has
    if not has(lib, "faucet_import_namespace_ex"):
        with pytest.raises(faucet.Unsupported):
            memory.import_({"version": 1, "pipeline": "orders", "keys": {}}, dry_run=True)
        return
    memory.put("orders::default", 1)
    doc = {"version": 1, "pipeline": "orders", "keys": {"orders::eu": 2}}
    report = memory.import_(doc, replace=True, dry_run=True)
    assert report.dry_run and report.written == ["orders::eu"]
    assert report.deleted == ["orders::default"]
    assert memory.list() == ["orders::default"]  # nothing written
    empty = {"version": 1, "pipeline": "orders", "keys": {}}
    with pytest.raises(faucet.InvalidArgument):
        memory.import_(empty, replace=True)
    assert memory.list() == ["orders::default"]
    assert memory.import_(empty, replace=True, allow_empty=True).deleted == ["orders::default"]
    assert memory.list() == []


def test_a_failure_inside_the_scan_is_raised_not_a_short_list(memory, monkeypatch):
    from faucet import _store
    for i in range(5):
        memory.put(f"p::k{i}", i)
    real = _store.ffi.string
    calls = []

    def failing_string(cdata, *args):
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError("simulated")
        return real(cdata, *args)

    monkeypatch.setattr(_store.ffi, "string", failing_string)
    with pytest.raises(MemoryError, match="simulated"):
        list(memory.scan("p::", chunk=1))
