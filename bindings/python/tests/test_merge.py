"""RFC 7396 JSON Merge Patch: faucet.merge_patch() (the library's
faucet_value_merge_patch) and Store.merge(), its compare-and-put loop
beside other writers, as `faucet state merge` does it."""

import json
import os
import subprocess
import sys
import threading

import pytest

import faucet

HERE = os.path.dirname(os.path.abspath(__file__))

# RFC 7396 appendix A: (target, patch, result), JSON text as in the RFC.
APPENDIX_A = [
    ('{"a":"b"}', '{"a":"c"}', '{"a":"c"}'),
    ('{"a":"b"}', '{"b":"c"}', '{"a":"b","b":"c"}'),
    ('{"a":"b"}', '{"a":null}', '{}'),
    ('{"a":"b","b":"c"}', '{"a":null}', '{"b":"c"}'),
    ('{"a":["b"]}', '{"a":"c"}', '{"a":"c"}'),
    ('{"a":"c"}', '{"a":["b"]}', '{"a":["b"]}'),
    ('{"a":{"b":"c"}}', '{"a":{"b":"d","c":null}}', '{"a":{"b":"d"}}'),
    ('{"a":[{"b":"c"}]}', '{"a":[1]}', '{"a":[1]}'),
    ('["a","b"]', '["c","d"]', '["c","d"]'),
    ('{"a":"b"}', '["c"]', '["c"]'),
    ('{"a":"foo"}', 'null', 'null'),
    ('{"a":"foo"}', '"bar"', '"bar"'),
    ('{"e":null}', '{"a":1}', '{"e":null,"a":1}'),
    ('[1,2]', '{"a":"b","c":null}', '{"a":"b"}'),
    ('{}', '{"a":{"bb":{"ccc":null}}}', '{"a":{"bb":{}}}'),
]


@pytest.mark.parametrize("target, patch, result", APPENDIX_A)
def test_merge_patch_does_rfc_7396_appendix_a(target, patch, result):
    t, p = json.loads(target), json.loads(patch)
    t_before, p_before = json.loads(target), json.loads(patch)
    got = faucet.merge_patch(t, p)
    # Same value, same member order (json.dumps keeps dict order).
    assert json.dumps(got) == json.dumps(json.loads(result))
    assert t == t_before and p == p_before  # neither input changed


def test_merge_patch_of_no_target_drops_the_patchs_nulls():
    assert faucet.merge_patch(None, {"a": 1, "b": None, "c": {"d": None}}) == \
        {"a": 1, "c": {}}


def test_merge_patch_refuses_what_is_not_json():
    with pytest.raises(faucet.InvalidValue):
        faucet.merge_patch({"a": 1}, {"b": object()})


# Store.merge: the appendix cases whose patch is an object over an object
# target, or a non-object patch (which replaces the value).
STORE_CASES = [c for c in APPENDIX_A
               if c[1] != "null" and not (c[1].startswith("{") and
                                          not c[0].startswith("{"))]


@pytest.mark.parametrize("target, patch, result", STORE_CASES)
def test_store_merge_stores_the_merged_value(store, target, patch, result):
    store.put("p::doc", json.loads(target))
    got = store.merge("p::doc", json.loads(patch))
    assert json.dumps(got) == json.dumps(json.loads(result))
    # A store may keep JSON in its own member order (PostgreSQL's jsonb).
    assert store.get("p::doc") == json.loads(result)


def test_store_merge_into_an_absent_key(store):
    assert store.merge("p::new", {"a": {"b": 1, "c": None}}) == {"a": {"b": 1}}
    assert store.get("p::new") == {"a": {"b": 1}}


def test_store_merge_refuses_an_object_patch_of_a_non_object(store):
    store.put("p::n", [1, 2])
    with pytest.raises(faucet.InvalidValue, match="is an array, not an object"):
        store.merge("p::n", {"a": "b"})
    assert store.get("p::n") == [1, 2]


def test_store_merge_refuses_a_none_patch(store):
    store.put("p::n", {"a": 1})
    with pytest.raises(faucet.InvalidValue, match="delete the key"):
        store.merge("p::n", None)
    assert store.get("p::n") == {"a": 1}


def test_store_merge_if_equals(store):
    store.put("p::c", {"a": 1})
    with pytest.raises(faucet.ConditionFailed):
        store.merge("p::c", {"b": 2}, if_equals={"a": 2})
    assert store.get("p::c") == {"a": 1}
    assert store.merge("p::c", {"b": 2}, if_equals={"a": 1}) == {"a": 1, "b": 2}
    with pytest.raises(TypeError):
        store.merge("p::c", {"b": 3}, if_equals=None)


def test_store_merge_keeps_number_spelling(memory):
    memory.put("p::x", {"big": 18446744073709551615, "f": 0.1})
    assert memory.merge("p::x", {"g": 1}) == {"big": 18446744073709551615,
                                             "f": 0.1, "g": 1}


def test_store_merge_bad_key_and_attempts(memory):
    with pytest.raises(faucet.InvalidKey):
        memory.merge("no separator\0", {"a": 1})
    with pytest.raises(ValueError):
        memory.merge("p::k", {"a": 1}, attempts=0)


WRITERS = 8


def test_threads_merging_different_members_keep_them_all(store):
    store.put("p::shared", {"base": True})
    start = threading.Barrier(WRITERS)
    errors = []

    def merge(i):
        try:
            start.wait()
            store.merge("p::shared", {f"m{i}": {"by": i}})
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=merge, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    want = {"base": True, **{f"m{i}": {"by": i} for i in range(WRITERS)}}
    assert store.get("p::shared") == want


def test_processes_merging_different_members_keep_them_all(url, backend):
    with faucet.open(url) as s:
        s.put("p::shared", {"base": True})
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "merge.py"), url,
                               "p::shared", f"m{i}", str(i)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for i in range(WRITERS)]
    try:
        for p in procs:  # every worker has opened the store
            assert p.stdout.readline() == "ready\n"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            p.communicate(timeout=300)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0] * WRITERS
    with faucet.open(url) as s:
        assert s.get("p::shared") == {"base": True,
                                      **{f"m{i}": i for i in range(WRITERS)}}
