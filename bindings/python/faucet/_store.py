"""
_store.py - the Store class: one libfaucet store handle and its calls.

Threads.  libfaucet stores are safe to use from several threads at once,
and cffi releases the GIL for the length of every C call, so threads
sharing one Store really run their store calls in parallel (a slow fsync or
server round trip in one thread does not stop the others).  The library's
last error is per thread; each method reads it right after the call that
failed, on the same thread, before anything else can overwrite it.

Closing.  close() may race with calls on other threads, so the handle is
freed by whoever finishes last: each call counts itself in, and close()
frees at once only when no call is running, else leaves the free to the last
call to leave.  A call made after close() raises Error.

Values.  None stands for "no entry", as in the C API's NULL: get() returns
it for an absent key and compare_and_put(k, None, v) means "only if there is
no entry".  A top-level JSON null would read back as None too, so it is
refused as a value (InvalidValue); nested nulls are fine.
"""

import threading
from collections import namedtuple
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Union

if TYPE_CHECKING:
    from ._run import Run

from ._ffi import ffi, lib, has, CHECK_CONTEXT_VERSION, IMPORT_OPTIONS_VERSION, IMPORT_REPORT_VERSION
from . import _errors as E
from ._json import dumps, loads


def _bad_key(key, what):
    """The InvalidKey for a key or prefix that cannot become a C string."""
    if not isinstance(key, str):
        return E.InvalidKey(f"{what} must be a str, not {type(key).__name__}",
                            E.EINVALID)
    if "\0" in key:
        return E.InvalidKey(f"{what} {key!r} contains a NUL character", E.EINVALID)
    return E.InvalidKey(f"{what} {key!r} is not valid Unicode", E.EINVALID)


def _key_bytes(key, what="key"):
    """A key or prefix as the C string the library takes.  (get and put
    inline this.)"""
    try:
        k = key.encode()
    except (AttributeError, UnicodeEncodeError):
        raise _bad_key(key, what) from None
    if b"\0" in k or type(key) is not str and not isinstance(key, str):
        raise _bad_key(key, what)
    return k


_VALUE_OUT = ffi.typeof("faucet_value **")
# Out-parameter cells for get and put, reused: ffi.new costs as much as the
# C call on the memory store.  Each call pops a cell of its own and pushes
# it back (both atomic), so threads and a signal handler re-entering a call
# never share one.
_cells = []
_INT_OUT = ffi.typeof("int *")
_new = ffi.new
_NULL = ffi.NULL


def _parse_value(obj):
    """A new faucet_value * for obj (caller frees), or InvalidValue."""
    if obj is None:
        raise E.InvalidValue("None cannot be stored: it reads back as "
                             "'no entry' (delete the key instead)", E.EINVALID)
    data = dumps(obj)
    out = _new(_VALUE_OUT)
    rc = lib.faucet_value_parse(out, data, len(data))
    if rc != 0:
        raise E.last_error(rc, E.InvalidValue)
    return out[0]


def _strarray_list(arr):
    """The strings of a faucet_strarray as a list of str."""
    return [ffi.string(arr.strings[i]).decode("utf-8", "surrogateescape")
            for i in range(arr.count)]


MERGE_ATTEMPTS = 8
"""How many times Store.merge() reads, patches and compare-and-puts before
it gives up on a value other writers keep changing (as `faucet state
merge` does): with N writers each merging once, N attempts always do."""


def _need_merge():
    if not (has(lib, "faucet_value_merge_patch") and has(lib, "faucet_value_equal")):
        raise E.Unsupported("this libfaucet has no faucet_value_merge_patch "
                            "(JSON Merge Patch came after 1.0.0); upgrade it",
                            E.EUNSUPPORTED)


def _null_value():
    out = _new(_VALUE_OUT)
    rc = lib.faucet_value_parse(out, b"null", 4)
    if rc != 0:
        raise E.last_error(rc, E.InvalidValue)
    return out[0]


def _value_obj(v):
    """The Python object of a faucet_value * (not freed here)."""
    return loads(ffi.string(lib.faucet_value_json(v)))


def _merged(target, patch):
    """faucet_value_merge_patch(target, patch) as a new faucet_value *."""
    out = _new(_VALUE_OUT)
    rc = lib.faucet_value_merge_patch(target, patch, out)
    if rc != 0:
        raise E.last_error(rc, E.InvalidValue)
    return out[0]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON Merge Patch: `patch` applied to `target`, computed by
    libfaucet (faucet_value_merge_patch), neither argument changed.

    A None member of an object patch removes that member; nested objects
    merge member by member; anything else (arrays included) replaces.  A
    patch that is not an object is the result; an object patch of a target
    that is not an object starts from {} (as the RFC says; Store.merge()
    refuses that instead).  target None is "no value" (merged as null), a
    patch None is JSON null, and a null result is returned as None.
    Members keep the target's order; new ones follow in the patch's."""
    _need_merge()
    t = _NULL if target is None else _parse_value(target)
    try:
        p = _null_value() if patch is None else _parse_value(patch)
        try:
            m = _merged(t, p)
        finally:
            lib.faucet_value_free(p)
    finally:
        lib.faucet_value_free(t)
    try:
        return _value_obj(m)
    finally:
        lib.faucet_value_free(m)


def _kind(json_text):
    return {b"{": "an object", b"[": "an array", b'"': "a string", b"t": "a boolean",
            b"f": "a boolean", b"n": "null"}.get(json_text[:1], "a number")


Probe = namedtuple("Probe", "name status reason elapsed_ms hint")
Probe.__doc__ = """One doctor probe: status is "pass", "fail", "skip" or "warn"."""

_PROBE_STATUS = {0: "pass", 1: "fail", 2: "skip", 3: "warn"}


class CheckReport(tuple):
    """The probes of Store.check(), in order.  `ok` is False when any failed."""

    @property
    def failed(self) -> "List[Probe]":
        return [p for p in self if p.status == "fail"]

    @property
    def ok(self) -> bool:
        return not self.failed


ImportReport = namedtuple("ImportReport",
                          "written durability_unknown deleted atomic dry_run")
ImportReport.__doc__ = """What import_() did: the keys written (in write order;
durability_unknown is the subset whose write may not have landed durably),
the stale keys deleted (replace only), whether the writes were one
all-or-nothing batch, and whether it was a dry run (nothing written)."""

_UNSET = object()


class Store:
    """A handle on one libfaucet store.  Use faucet.open() or
    faucet.open_config(); close it (or use `with`) to release files and
    connections.  Safe to share between threads."""

    backend: str  # the backend name: "file", "sqlite", "postgres", ...

    def __init__(self, ptr, label):
        self._ptr = ptr
        self._handle = [ptr]   # popped exactly once, by whoever frees it
        self._calls = []       # one entry per call in progress
        self._closing = False
        self._label = label
        self.backend = ffi.string(lib.faucet_store_backend_name(ptr)).decode()

    # ---- life ---------------------------------------------------------
    #
    # No lock: list.append/pop are atomic, and the order of the steps makes
    # the free safe.  A call appends itself, then looks at _closing; close()
    # sets _closing, then looks at _calls.  So either the call sees
    # _closing (and never touches the handle), or close() sees the call
    # (and leaves the free to the last call out).  _handle.pop() lets only
    # one of several racing last-ones free it.

    def _enter(self):
        self._calls.append(None)
        if self._closing:
            self._leave()
            raise E.Error(f"store {self._label} is closed")
        return self._ptr

    def _leave(self):
        self._calls.pop()
        if self._closing and not self._calls:
            self._free()

    def _free(self):
        try:
            ptr = self._handle.pop()
        except IndexError:
            return
        lib.faucet_store_free(ptr)

    def close(self) -> None:
        """Release the store.  Calls still running on other threads finish
        first; the handle is freed when the last of them returns."""
        self._closing = True
        if not self._calls:
            self._free()

    @property
    def closed(self) -> bool:
        return self._closing

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self):
        # An interpreter shutting down may have torn down the module
        # globals; a store left open then is the OS's to clean up.
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        state = "closed" if self._closing else "open"
        return f"<faucet.Store {self.backend} {self._label} ({state})>"

    # ---- reads and writes ----------------------------------------------

    # get and put are the calls a connector makes most; they inline the key
    # conversion and the _enter/_leave bookkeeping to keep the binding's own
    # cost near 2 us (bench.py).

    def get(self, key: str) -> Any:
        """The value under `key`, or None when there is no entry."""
        try:
            k = key.encode()
        except (AttributeError, UnicodeEncodeError):
            raise _bad_key(key, "key") from None
        if b"\0" in k or type(key) is not str and not isinstance(key, str):
            raise _bad_key(key, "key")
        out = _cells.pop() if _cells else _new(_VALUE_OUT)
        calls = self._calls
        calls.append(None)
        try:
            if self._closing:
                raise E.Error(f"store {self._label} is closed")
            rc = lib.faucet_store_get(self._ptr, k, out)
            if rc != 0:
                raise E.last_error(rc, E.InvalidKey)
            v = out[0]
        finally:
            _cells.append(out)
            calls.pop()
            if self._closing and not calls:
                self._free()
        if v == _NULL:
            return None
        try:
            return loads(ffi.string(lib.faucet_value_json(v)))
        finally:
            lib.faucet_value_free(v)

    def put(self, key: str, value: Any, *, if_absent: bool = False,
            if_equals: Any = _UNSET) -> None:
        """Store `value` under `key`; durable when this returns.

        With if_absent=True (or if_equals=X) it is a compare-and-put that
        raises ConditionFailed, writing nothing, when the entry is there
        (or does not equal X as a JSON value)."""
        if if_absent or if_equals is not _UNSET:
            return self._put_if(key, value, if_absent, if_equals)
        try:
            k = key.encode()
        except (AttributeError, UnicodeEncodeError):
            raise _bad_key(key, "key") from None
        if b"\0" in k or type(key) is not str and not isinstance(key, str):
            raise _bad_key(key, "key")
        if value is None:
            _parse_value(value)  # raises the "None is no entry" error
        data = dumps(value)
        out = _cells.pop() if _cells else _new(_VALUE_OUT)
        rc = lib.faucet_value_parse(out, data, len(data))
        v = out[0]
        _cells.append(out)
        if rc != 0:
            raise E.last_error(rc, E.InvalidValue)
        calls = self._calls
        calls.append(None)
        try:
            if self._closing:
                raise E.Error(f"store {self._label} is closed")
            rc = lib.faucet_store_put(self._ptr, k, v)
            if rc != 0:
                raise E.last_error(rc, E.InvalidKey)
        finally:
            calls.pop()
            if self._closing and not calls:
                self._free()
            lib.faucet_value_free(v)

    def _put_if(self, key, value, if_absent, if_equals):
        if if_absent and if_equals is not _UNSET:
            raise TypeError("give if_absent or if_equals, not both")
        expected = None if if_absent else if_equals
        if expected is None and not if_absent:
            raise TypeError("if_equals=None is ambiguous; use if_absent=True")
        if not self.compare_and_put(key, expected, value):
            what = "absent" if if_absent else "equal to if_equals"
            raise E.ConditionFailed(f"{key}: the entry is not {what}; "
                                    "nothing was written")

    def delete(self, key: str) -> None:
        """Remove the entry under `key`; an absent key is not an error."""
        k = _key_bytes(key)
        s = self._enter()
        try:
            rc = lib.faucet_store_delete(s, k)
            if rc != 0:
                raise E.last_error(rc, E.InvalidKey)
        finally:
            self._leave()

    def compare_and_put(self, key: str, expected: Any, value: Any) -> bool:
        """Store `value` only when the entry equals `expected` as a JSON
        value (None: only when there is no entry).  True when written."""
        k = _key_bytes(key)
        exp = ffi.NULL if expected is None else _parse_value(expected)
        try:
            v = _parse_value(value)
            try:
                written = ffi.new("int *")
                s = self._enter()
                try:
                    rc = lib.faucet_store_compare_and_put(s, k, exp, v, written)
                    if rc != 0:
                        raise E.last_error(rc, E.InvalidKey)
                finally:
                    self._leave()
                return bool(written[0])
            finally:
                lib.faucet_value_free(v)
        finally:
            lib.faucet_value_free(exp)

    def merge(self, key: str, patch: Any, *, if_equals: Any = _UNSET,
              attempts: int = MERGE_ATTEMPTS) -> Any:
        """Apply the RFC 7396 JSON Merge Patch `patch` to the value under
        `key` and store the result; durable when this returns.  Returns the
        value now stored.

        The merge reads the value, patches it (merge_patch()) and writes the
        result with a compare-and-put against what it read; when another
        writer changed the value in between it starts again from the new
        value, up to `attempts` times, then raises Contention (nothing
        written).  So writers merging different members of one value at
        once all keep their members.  An absent key merges into null (the
        patch with its None members removed is stored); a patch that changes
        nothing writes nothing.

        Like `faucet state merge`, an object patch of a value that is not
        an object (a number, a string, a list) raises InvalidValue rather
        than replacing it by {}: use put() to replace it.  A None patch is
        refused (its result, null, reads back as "no entry": delete the key
        instead).  With if_equals=X the merge is done only while the value
        equals X as a JSON value, else ConditionFailed (nothing written).
        A store without atomic compare-and-put raises Unsupported."""
        k = _key_bytes(key)
        _need_merge()
        if type(attempts) is not int or attempts < 1:
            raise ValueError(f"attempts must be a positive int, not {attempts!r}")
        if patch is None:
            raise E.InvalidValue(f"{key}: a None patch would make the value null, "
                                 "which reads back as 'no entry' (delete the key "
                                 "instead); nothing written", E.EINVALID)
        if if_equals is None:
            raise TypeError("if_equals=None is ambiguous (an absent key merges "
                            "into null; compare with get() first)")
        p = _parse_value(patch)
        exp = _NULL
        current = merged = _NULL
        try:
            if if_equals is not _UNSET:
                exp = _parse_value(if_equals)
            object_patch = ffi.string(lib.faucet_value_json(p))[:1] == b"{"
            if not self.atomic_compare_and_put:
                raise E.Unsupported(f"{key}: the {self.backend} store has no atomic "
                                    "compare-and-put, which a merge beside other "
                                    "writers needs; nothing written", E.EUNSUPPORTED)
            cell = _new(_VALUE_OUT)
            written = _new(_INT_OUT)
            for _ in range(attempts):
                lib.faucet_value_free(current)
                lib.faucet_value_free(merged)
                current = merged = _NULL
                s = self._enter()
                try:
                    rc = lib.faucet_store_get(s, k, cell)
                    if rc != 0:
                        raise E.last_error(rc, E.InvalidKey)
                    current = cell[0]
                finally:
                    self._leave()
                if exp != _NULL and not lib.faucet_value_equal(current, exp):
                    raise E.ConditionFailed(f"{key}: the entry is not equal to "
                                            "if_equals; nothing was written")
                if current != _NULL and object_patch:
                    text = ffi.string(lib.faucet_value_json(current))
                    if text[:1] != b"{":
                        raise E.InvalidValue(
                            f"{key}: the stored value is {_kind(text)}, not an "
                            "object; merging an object patch would replace it by "
                            "{} (RFC 7396); nothing written (use put() to replace "
                            "it)", E.EINVALID)
                merged = _merged(current, p)
                if current != _NULL and lib.faucet_value_equal(current, merged):
                    return _value_obj(merged)   # nothing to change
                s = self._enter()
                try:
                    rc = lib.faucet_store_compare_and_put(s, k, current, merged,
                                                          written)
                    if rc != 0:
                        raise E.last_error(rc, E.InvalidKey)
                finally:
                    self._leave()
                if written[0]:
                    return _value_obj(merged)
            raise E.Contention(f"{key}: the value changed under the merge {attempts} "
                               "times in a row (other writers); nothing written, "
                               "try again", E.ECONTENTION)
        finally:
            lib.faucet_value_free(current)
            lib.faucet_value_free(merged)
            lib.faucet_value_free(exp)
            lib.faucet_value_free(p)

    def compare_and_delete(self, key: str, expected: Any) -> bool:
        """Delete the entry only when it equals `expected` as a JSON value
        (None matches a stored JSON null).  True when deleted."""
        k = _key_bytes(key)
        if expected is None:
            exp = ffi.new("faucet_value **")
            rc = lib.faucet_value_parse(exp, b"null", 4)
            if rc != 0:
                raise E.last_error(rc, E.InvalidValue)
            exp = exp[0]
        else:
            exp = _parse_value(expected)
        try:
            deleted = ffi.new("int *")
            s = self._enter()
            try:
                rc = lib.faucet_store_compare_and_delete(s, k, exp, deleted)
                if rc != 0:
                    raise E.last_error(rc, E.InvalidKey)
            finally:
                self._leave()
            return bool(deleted[0])
        finally:
            lib.faucet_value_free(exp)

    # ---- enumeration -------------------------------------------------------

    def list(self, prefix: str = "") -> "List[str]":
        """Every key starting with `prefix`, in byte order."""
        p = _key_bytes(prefix, "prefix")
        arr = ffi.new("faucet_strarray *")
        s = self._enter()
        try:
            rc = lib.faucet_store_list(s, p, arr)
            if rc != 0:
                raise E.last_error(rc, E.InvalidKey)
        finally:
            self._leave()
        try:
            return _strarray_list(arr)
        finally:
            lib.faucet_strarray_dispose(arr)

    def scan(self, prefix: str = "", *,
             chunk: Optional[int] = None) -> Iterator[str]:
        """An iterator over the keys of list(prefix), in the same order,
        read as they are consumed: memory stays bounded by one page of
        `chunk` keys (None: the library's default, 1000), however many
        there are, on the stores that read a page at a time (SQLite,
        PostgreSQL, etcd, Redis with index=true; the others list once).
        Each key comes once, in increasing order, also while others write.
        Close the iterator (or exhaust it) to end the scan early; a `for`
        loop that breaks out does that when the iterator is collected."""
        p = _key_bytes(prefix, "prefix")
        if not has(lib, "faucet_store_iter_new"):
            # A libfaucet from before the iterator: the keys listed once.
            return iter(self.list(prefix))
        return _Scan(self, p, chunk)

    # ---- documents -------------------------------------------------------

    def export_json(self, pipeline: str, pretty: bool = False) -> str:
        """The version-1 export document of `pipeline`'s namespace, as text."""
        name = _key_bytes(pipeline, "pipeline")
        exp = ffi.new("faucet_export **")
        text = ffi.new("char **")
        s = self._enter()
        try:
            rc = lib.faucet_export_namespace(s, name, exp)
            if rc != 0:
                raise E.last_error(rc, E.InvalidKey)
        finally:
            self._leave()
        try:
            rc = lib.faucet_export_to_json(exp[0], 1 if pretty else 0, text)
            if rc != 0:
                raise E.last_error(rc)
        finally:
            lib.faucet_export_free(exp[0])
        try:
            return ffi.string(text[0]).decode("utf-8")
        finally:
            lib.faucet_free(text[0])

    def export(self, pipeline: str) -> Dict[str, Any]:
        """The export document of `pipeline` as a dict: version, pipeline,
        exported_at and keys ({key: value})."""
        return loads(self.export_json(pipeline).encode("utf-8"))

    def import_(self, document: Union[Dict[str, Any], str, bytes], replace: bool = False, *,
                allow_empty: bool = False, dry_run: bool = False) -> ImportReport:
        """Write an export document (a dict as export() returns, or its JSON
        text) into the store; with replace=True also delete the namespace's
        keys it lacks.  Returns an ImportReport.  A failure part-way raises
        the error with the report of what landed as its `report`."""
        if isinstance(document, str):
            data = document.encode("utf-8")
        elif isinstance(document, (bytes, bytearray)):
            data = bytes(document)
        elif isinstance(document, dict):
            data = dumps(document)
        else:
            raise E.InvalidDocument("an export document is a dict or JSON text, "
                                    f"not {type(document).__name__}", E.EINVALID)
        exp = ffi.new("faucet_export **")
        rc = lib.faucet_export_parse(exp, data, len(data))
        if rc != 0:
            raise E.last_error(rc, E.InvalidDocument)
        try:
            return self._import(exp[0], replace, allow_empty, dry_run)
        finally:
            lib.faucet_export_free(exp[0])

    def _import(self, exp, replace, allow_empty, dry_run):
        report = ffi.new("faucet_import_report *", {"version": IMPORT_REPORT_VERSION})
        opts = ffi.new("faucet_import_options *",
                       {"version": IMPORT_OPTIONS_VERSION,
                        "replace": int(bool(replace)),
                        "allow_empty": int(bool(allow_empty)),
                        "dry_run": int(bool(dry_run))})
        s = self._enter()
        try:
            rc = lib.faucet_import_namespace_ex(s, exp, opts, report)
            err = E.last_error(rc, E.InvalidDocument) if rc != 0 else None
        finally:
            self._leave()
        try:
            if err is not None:
                raise err
            result = ImportReport(
                written=_strarray_list(report.written),
                durability_unknown=_strarray_list(report.durability_unknown),
                deleted=_strarray_list(report.deleted),
                atomic=bool(report.atomic),
                dry_run=bool(report.dry_run))
            if report.error != ffi.NULL:
                failure = E.error_for(report.error_code or E.ERROR, E.decode(report.error))
                failure.report = result
                raise failure
            return result
        finally:
            lib.faucet_import_report_dispose(report)

    # ---- doctor -----------------------------------------------------------------

    def check(self, timeout: Optional[float] = None) -> CheckReport:
        """Run the store's doctor probes (`timeout` in seconds for the whole
        report; None = the library's default of 10 s).  A CheckReport."""
        ctx = ffi.NULL
        if timeout is not None:
            ctx = ffi.new("faucet_check_context *", {"version": CHECK_CONTEXT_VERSION,
                                                     "timeout_ms": int(timeout * 1000)})
        out = ffi.new("faucet_check_report **")
        s = self._enter()
        try:
            rc = lib.faucet_store_check(s, ctx, out)
            if rc != 0:
                raise E.last_error(rc)
        finally:
            self._leave()
        r = out[0]
        try:
            probes = []
            for i in range(lib.faucet_check_report_count(r)):
                p = lib.faucet_check_report_probe(r, i)
                probes.append(Probe(
                    name=E.decode(p.name),
                    status=_PROBE_STATUS.get(p.status, str(p.status)),
                    reason=E.decode(p.reason) if p.reason != ffi.NULL else None,
                    elapsed_ms=int(p.elapsed_ms),
                    hint=E.decode(p.hint) if p.hint != ffi.NULL else None))
            return CheckReport(probes)
        finally:
            lib.faucet_check_report_free(r)

    # ---- capabilities ---------------------------------------------------------

    def _supports(self, fn):
        s = self._enter()
        try:
            return bool(fn(s))
        finally:
            self._leave()

    @property
    def supports_list(self) -> bool:
        return self._supports(lib.faucet_store_supports_list)

    @property
    def atomic_compare_and_put(self) -> bool:
        """Whether compare_and_put is atomic across processes and hosts."""
        return self._supports(lib.faucet_store_supports_compare_and_put)

    @property
    def atomic_compare_and_delete(self) -> bool:
        return self._supports(lib.faucet_store_supports_compare_and_delete)

    # ---- invocation runs (doc/design.md §8) ----------------------------------

    def run(self, pipeline: str, row: str = "default", **options: Any) -> "Run":
        """A run of the invocation {pipeline}::{row} under its lease, as a
        context manager: `with store.run("orders") as run: run.put(k, v)`.
        Every write through the run is fenced by the lease and recorded so
        the run can be undone; leaving the block ends the run (ok, or
        failed when the block raised)."""
        from ._run import begin
        return begin(self, pipeline, row, **options)


class _Scan:
    """The iterator of Store.scan(): a faucet_store_iter, pulled one key at
    a time on the caller's own thread.

    The C iterator borrows the store handle, so from its creation until it
    is freed it counts as a call in progress (_enter/_leave): a close() of
    the store meanwhile leaves the handle's free to the iterator's.  It is
    freed at the end of the keys, on an error, by close() and by __del__.
    A lock keeps two threads from using it at once (the C iterator is one
    thread's at a time) and close() from freeing it under a running
    next()."""

    def __init__(self, store, prefix, chunk):
        self._store = store
        self._it = None
        self._lock = threading.Lock()
        out = ffi.new("faucet_store_iter **")
        ptr = store._enter()
        try:
            rc = lib.faucet_store_iter_new(ptr, prefix, out)
            if rc != 0:
                raise E.last_error(rc, E.InvalidKey)
            if chunk is not None:
                n = max(1, min(int(chunk), 100000))
                rc = lib.faucet_store_iter_set_page_size(out[0], n)
                if rc != 0:
                    lib.faucet_store_iter_free(out[0])
                    raise E.last_error(rc, E.InvalidArgument)
        except BaseException:
            store._leave()
            raise
        self._it = out[0]
        self._key = ffi.new("const char **")

    def __iter__(self):
        return self

    def __next__(self):
        with self._lock:
            if self._it is None:
                raise StopIteration
            rc = lib.faucet_store_iter_next(self._it, self._key)
            if rc == 1:
                return ffi.string(self._key[0]).decode("utf-8", "surrogateescape")
            # Read the last error before the free can touch it.
            error = E.last_error(rc, E.InvalidKey) if rc < 0 else None
            self._release()
        if error is not None:
            raise error
        raise StopIteration

    def _release(self):
        """Free the C iterator and leave the store; under the lock."""
        it, self._it = self._it, None
        if it is not None:
            lib.faucet_store_iter_free(it)
            self._store._leave()

    def close(self):
        """End the scan early; safe to call more than once."""
        with self._lock:
            self._release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # A half-built iterator (its __init__ raised) has nothing to free.
        try:
            if getattr(self, "_it", None) is not None:
                self.close()
        except Exception:
            pass
