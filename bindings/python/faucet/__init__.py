"""
faucet - Python bindings of libfaucet, the durable state layer of faucet.

    import faucet

    with faucet.open("file:.faucet-state") as store:
        cursor = store.get("orders::default")          # None on a first run
        store.put("orders::default", {"cursor": 42})   # durable when it returns

A Store keeps JSON values under state keys; see help(faucet.Store).  Every
failure raises a subclass of faucet.Error carrying the library's message,
its code and whether retrying may help (Error.retryable).

The package calls libfaucet.so through cffi's ABI mode: nothing is compiled
at install time.  The library is found from $FAUCET_LIBRARY, else
pkg-config's libdir for `faucet`, else the system library path.
"""

from ._ffi import ffi as _ffi, lib as _lib, library_path
from ._errors import (
    Error, StoreError, InvalidArgument, InvalidKey, InvalidValue,
    InvalidDocument, NotFound, Unsupported, ConfigError, IoError, CryptoError,
    OutOfMemory, Locked, Contention, AuthFailed, Unavailable, Timeout,
    OutcomeUnknown, LeaseLost, ConditionFailed,
)
from . import _errors
from ._store import Store, Probe, CheckReport, ImportReport, merge_patch, MERGE_ATTEMPTS
from ._config import open_yaml as _open_yaml, open_store_config as _open_config
from ._config import DEFAULT_URL as _DEFAULT_URL

import os as _os
from typing import Optional as _Optional, Sequence as _Sequence, Union as _Union

__all__ = [
    "open", "open_config", "Store", "Probe", "CheckReport", "ImportReport",
    "Error", "StoreError", "InvalidArgument", "InvalidKey", "InvalidValue",
    "InvalidDocument", "NotFound", "Unsupported", "ConfigError", "IoError",
    "CryptoError", "OutOfMemory", "Locked", "Contention", "AuthFailed",
    "Unavailable", "Timeout", "OutcomeUnknown", "LeaseLost", "ConditionFailed",
    "library_path", "library_version", "merge_patch", "MERGE_ATTEMPTS",
    "__version__",
]


def library_version() -> _Optional[str]:
    """The loaded libfaucet's version ("1.0.0"), or None when the library
    is too old to say."""
    try:
        fn = _lib.faucet_version
    except AttributeError:
        return None
    return _ffi.string(fn()).decode("ascii", "replace")


# The package is a thin layer over the library it loaded: its version is
# that library's (faucet_version()), so a bug report names the C code that
# ran.  "0+unknown" for a library too old to report one.
__version__: str = library_version() or "0+unknown"


def _redacted(url):
    text = _lib.faucet_url_redact(url.encode("utf-8"))
    if text == _ffi.NULL:
        return "(a store URL)"
    try:
        return _ffi.string(text).decode("utf-8", "backslashreplace")
    finally:
        _lib.faucet_free(text)


def open(url: str, *, encryption_key: _Optional[str] = None,
         previous_keys: _Sequence[str] = ()) -> Store:
    """Open the store a URL names: "memory:", "file:PATH", "sqlite:PATH",
    "postgres://...?table=t", "redis://host:port/0?namespace=ns".

    encryption_key / previous_keys seal a file store at rest
    (doc/design.md §4): writes are sealed with encryption_key, reads try
    it and then each previous key.  They apply to file: URLs only."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    if "\0" in url:
        raise ConfigError("the store URL contains a NUL character", _errors.ECONFIG)
    if encryption_key is None and previous_keys:
        raise ConfigError("previous_keys need an encryption_key (the key to "
                          "write with)", _errors.ECONFIG)
    if encryption_key is not None:
        if not url.startswith("file:"):
            raise ConfigError("encryption_key applies to the file store only "
                              f"(file:PATH), not to {_redacted(url)}", _errors.ECONFIG)
        if not encryption_key:
            raise ConfigError("encryption_key is empty", _errors.ECONFIG)
        ptr = _open_config({"type": "file", "path": url[len("file:"):]},
                           (encryption_key, list(previous_keys)))
        return Store(ptr, _redacted(url))
    out = _ffi.new("faucet_store **")
    rc = _lib.faucet_store_open_url(out, url.encode("utf-8"))
    if rc != 0:
        raise _errors.last_error(rc, ConfigError)
    return Store(out[0], _redacted(url))


def open_config(path: _Union[str, "_os.PathLike[str]"]) -> Store:
    """Open the store a faucet pipeline YAML's `state: {type, config}` block
    describes, read as the `faucet` command reads it (${env:VAR} replaced;
    a relative path is relative to the current directory).  A file without a
    state block opens the default store, file:.faucet-state."""
    ptr, label = _open_yaml(str(path))
    if ptr is None:
        return open(_DEFAULT_URL)
    return Store(ptr, label)
