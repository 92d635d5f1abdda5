"""
_run.py - invocation runs (doc/design.md §8): Store.run().

    with store.run("orders", "default") as run:
        run.put("orders::default", {"cursor": 42})

A run holds the invocation's lease ({p}::{r}::__lease__) while the block
runs; every write through it is fenced by that lease (LeaseLost, nothing
written, once another run took it over) and its before-image is stored
durably first, so `faucet state undo` can take the run back.  Leaving the
block ends the run: "ok", or "failed" with the exception's text when the
block raised.  A second run of the same invocation meanwhile is Locked
(after waiting up to `wait` seconds).

Inside `faucet run ... -- python connector.py` the command's environment
names the run faucet began (FAUCET_RUN_ID, FAUCET_RUN_PIPELINE,
FAUCET_RUN_ROW); store.run() of that same invocation joins it instead of
beginning another (which would find the lease taken), and leaving the block
then leaves ending the run to faucet.

A faucet_run handle is not safe for concurrent use, so each Run serialises
its calls with a lock; the lease is renewed by a background thread every
third of its TTL (the same rhythm as `faucet run`) under that lock.  The C
side (include/faucet/run.h) arrived after the first libfaucet release:
until the loaded library has it, Store.run() raises Unsupported.
"""

import threading
from typing import Any, List

from ._ffi import ffi, lib, has, RUN_CALLS, RUN_OPTIONS_VERSION
from . import _errors as E
from ._store import _key_bytes, _parse_value, _strarray_list

_OK, _FAILED = 0, 1


def available():
    """Whether the loaded libfaucet has invocation runs."""
    return all(has(lib, name) for name in RUN_CALLS)


def begin(store, pipeline, row="default", *, ttl=None, wait=None, command=None,
          renew=True):
    """The Run context manager of Store.run()."""
    if not available():
        raise E.Unsupported("this libfaucet has no invocation runs "
                            "(faucet_run_begin); upgrade libfaucet to use "
                            "Store.run()", E.EUNSUPPORTED)
    return Run(store, pipeline, row, ttl, wait, command, renew)


class Run:
    """One run of an invocation; use it as `with store.run(p, r) as run:`.

    id, scope, row   the run id (YYYYMMDDTHHMMSS.mmmZ-xxxxxx), "{p}::{r}", r
    joined           True when this joined the run of an enclosing
                     `faucet run` (FAUCET_RUN_ID) rather than beginning one
    keys             the keys this run has changed so far"""

    def __init__(self, store, pipeline, row, ttl, wait, command, renew):
        self._store = store
        self._pipeline = _key_bytes(pipeline, "pipeline")
        self._row = _key_bytes(row, "row")
        self._ttl = ttl
        self._wait = wait
        self._command = command
        self._renew = renew
        self._lock = threading.Lock()
        self._run = None
        self._stop = threading.Event()
        self._renewer = None
        self.joined = False
        self.renew_error = None

    # ---- begin and end -----------------------------------------------------

    def _options(self):
        """The options struct, and the C strings it points to (keep them
        alive for the call)."""
        opts = ffi.new("faucet_run_options *")
        keep = [ffi.new("char[]", self._row)]
        opts.version = RUN_OPTIONS_VERSION
        opts.row = keep[0]
        if self._ttl is not None:
            opts.lease_ttl_ms = int(self._ttl * 1000)
        if self._wait is not None:
            opts.wait_ms = int(self._wait * 1000)
        if self._command is not None:
            keep.append(ffi.new("char[]", self._command.encode()))
            opts.command = keep[-1]
        return opts, keep

    def __enter__(self) -> "Run":
        out = ffi.new("faucet_run **")
        s = self._store._enter()
        try:
            # Inside `faucet run`, the run it began for this pipeline and
            # row is joined: the library's rule, the command's too.
            rc = lib.faucet_run_join_env(out, s, self._pipeline, self._row)
            self.joined = rc == 0
            if rc == E.ENOTFOUND:
                opts, keep = self._options()
                rc = lib.faucet_run_begin(out, s, self._pipeline, opts)
            if rc != 0:
                raise E.last_error(rc, E.InvalidKey)
        except BaseException:
            self._store._leave()
            raise
        # The store stays entered (cannot be freed) until the run is freed.
        self._run = out[0]
        self.id = ffi.string(lib.faucet_run_id(self._run)).decode()
        self.scope = ffi.string(lib.faucet_run_scope(self._run)).decode()
        row = lib.faucet_run_row(self._run)
        self.row = ffi.string(row).decode() if row != ffi.NULL else None
        if self._renew and not self.joined:
            interval = lib.faucet_run_renew_interval_ms(self._run) / 1000.0
            self._renewer = threading.Thread(target=_renew_loop,
                                             args=(self, interval),
                                             name="faucet-run-renew", daemon=True)
            self._renewer.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        try:
            if not self.joined:
                if exc_type is None:
                    rc = self._end(_OK, None)
                else:
                    rc = self._end(_FAILED, f"{exc_type.__name__}: {exc}")
                if rc is not None and exc_type is None:
                    raise rc
        finally:
            with self._lock:
                r, self._run = self._run, None
            lib.faucet_run_free(r)
            self._store._leave()
        return False

    def _end(self, outcome, message):
        msg = message.encode("utf-8", "backslashreplace")[:4000] if message else ffi.NULL
        with self._lock:
            rc = lib.faucet_run_end(self._run, outcome, -1, msg)
            return E.last_error(rc) if rc != 0 else None

    # ---- writes ------------------------------------------------------------

    def _handle(self):
        if self._run is None:
            raise E.Error("the run is not active (use it inside its `with` block)")
        return self._run

    def put(self, key: str, value: Any) -> None:
        """Store `value` under `key` as part of this run."""
        k = _key_bytes(key)
        v = _parse_value(value)
        try:
            with self._lock:
                rc = lib.faucet_run_put(self._handle(), k, v)
                if rc != 0:
                    raise E.last_error(rc, E.InvalidKey)
        finally:
            lib.faucet_value_free(v)

    def delete(self, key: str) -> None:
        k = _key_bytes(key)
        with self._lock:
            rc = lib.faucet_run_delete(self._handle(), k)
            if rc != 0:
                raise E.last_error(rc, E.InvalidKey)

    def compare_and_put(self, key: str, expected: Any, value: Any) -> bool:
        k = _key_bytes(key)
        exp = ffi.NULL if expected is None else _parse_value(expected)
        try:
            v = _parse_value(value)
            try:
                written = ffi.new("int *")
                with self._lock:
                    rc = lib.faucet_run_compare_and_put(self._handle(), k, exp, v, written)
                    if rc != 0:
                        raise E.last_error(rc, E.InvalidKey)
                return bool(written[0])
            finally:
                lib.faucet_value_free(v)
        finally:
            lib.faucet_value_free(exp)

    def compare_and_delete(self, key: str, expected: Any) -> bool:
        k = _key_bytes(key)
        exp = _parse_value(expected) if expected is not None else None
        if exp is None:
            out = ffi.new("faucet_value **")
            rc = lib.faucet_value_parse(out, b"null", 4)
            if rc != 0:
                raise E.last_error(rc, E.InvalidValue)
            exp = out[0]
        try:
            deleted = ffi.new("int *")
            with self._lock:
                rc = lib.faucet_run_compare_and_delete(self._handle(), k, exp, deleted)
                if rc != 0:
                    raise E.last_error(rc, E.InvalidKey)
            return bool(deleted[0])
        finally:
            lib.faucet_value_free(exp)

    def get(self, key: str) -> Any:
        """The store's value under `key` (reads are not part of the run)."""
        return self._store.get(key)

    def renew(self) -> None:
        """Extend the lease now; LeaseLost when another run took it over."""
        with self._lock:
            rc = lib.faucet_run_renew(self._handle())
            if rc != 0:
                raise E.last_error(rc)

    @property
    def keys(self) -> List[str]:
        with self._lock:
            return _strarray_list(lib.faucet_run_keys(self._handle()))


def _renew_loop(run, interval):
    """Renew the lease every `interval` seconds until the run ends.  A
    failure is kept in run.renew_error; the next write then fails too,
    since every write checks the lease."""
    while not run._stop.wait(interval):
        try:
            run.renew()
        except E.Error as e:
            run.renew_error = e
            return
