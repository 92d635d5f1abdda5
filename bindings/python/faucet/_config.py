"""
_config.py - opening the store a faucet pipeline YAML names, and a store
from a faucet_store_config built here.

The YAML is the library's to read (faucet_config_load, faucet/config.h):
the same reader the `faucet` command uses, with the same rules and the
same messages (file, line, field; never a value that came from
${env:...}), and the backend table's fields.  Key material from the file
stays in C memory, which the library wipes when the config is freed.
"""

from ._ffi import ffi, lib, STORE_CONFIG_VERSION, STORE_CONFIG_VERSION_1
from . import _errors as E

DEFAULT_URL = "file:.faucet-state"


def open_yaml(path):
    """Open the store the `state:` block of the pipeline YAML at `path`
    describes: (faucet_store *, label), or (None, None) when the file has
    no state block (the default store then applies)."""
    out = ffi.new("faucet_config **")
    rc = lib.faucet_config_load(out, path.encode("utf-8"))
    if rc != 0:
        raise E.last_error(rc, E.ConfigError)
    cfg = out[0]
    try:
        state = lib.faucet_config_store(cfg)
        if state == ffi.NULL:
            return None, None
        label = f"'{ffi.string(state.type).decode('utf-8', 'replace')}' from config {path}"
        store = ffi.new("faucet_store **")
        rc = lib.faucet_store_open_config(store, state)
        if rc != 0:
            raise E.last_error(rc, E.ConfigError)
        return store[0], label
    finally:
        lib.faucet_config_free(cfg)


class CStrings:
    """C copies of Python strings for the length of one call; wipe() zeroes
    them (the key material among them) once the call has returned."""

    def __init__(self):
        self._bufs = []

    def __call__(self, text):
        if text is None:
            return ffi.NULL
        data = text.encode("utf-8")
        if b"\0" in data:
            raise E.ConfigError("a store setting contains a NUL character", E.ECONFIG)
        buf = ffi.new("char[]", data)
        self._bufs.append(buf)
        return buf

    def wipe(self):
        for buf in self._bufs:
            ffi.memmove(buf, b"\0" * len(buf), len(buf))
        self._bufs = []


def open_store_config(fields, encryption):
    """faucet_store_open_config with `fields` (type, path, url, table,
    ensure_table, max_connections, namespace, index, min_replicas,
    wait_timeout_ms) and encryption (key, previous
    keys) or None.  Returns the faucet_store *."""
    c = CStrings()
    try:
        cfg = ffi.new("faucet_store_config *")
        min_replicas = fields.get("min_replicas", 0)
        wait_timeout_ms = fields.get("wait_timeout_ms", 0)
        # Version 2 only when one of its fields is set: a 1.0 library, which
        # refuses a version newer than itself, still opens everything else.
        cfg.version = (STORE_CONFIG_VERSION if min_replicas or wait_timeout_ms
                       else STORE_CONFIG_VERSION_1)
        cfg.type = c(fields.get("type"))
        cfg.path = c(fields.get("path"))
        cfg.url = c(fields.get("url"))
        cfg.table = c(fields.get("table"))
        cfg.namespace_name = c(fields.get("namespace"))
        cfg.ensure_table = fields.get("ensure_table", 0)
        cfg.max_connections = fields.get("max_connections", 0)
        cfg.redis_index = fields.get("index", 0)
        cfg.redis_min_replicas = min_replicas
        cfg.redis_wait_timeout_ms = wait_timeout_ms
        keep = []
        if encryption is not None:
            key, previous = encryption
            prev = ffi.new("const char *[]", [c(p) for p in previous] or [ffi.NULL])
            enc = ffi.new("faucet_encryption_options *")
            enc.key = c(key)
            enc.previous_keys = prev
            enc.previous_count = len(previous)
            cfg.encryption = enc
            keep += [prev, enc]
        out = ffi.new("faucet_store **")
        rc = lib.faucet_store_open_config(out, cfg)
        if rc != 0:
            raise E.last_error(rc, E.ConfigError)
        return out[0]
    finally:
        c.wipe()
