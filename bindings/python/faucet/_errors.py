"""
_errors.py - libfaucet's error codes as Python exceptions.

Every failing libfaucet call returns a negative FAUCET_E* code and leaves
its reason in a thread-local slot (faucet_error_last()).  raise_last() must
therefore run on the thread that made the failing call, before that thread
makes another libfaucet call; the Store methods call it straight after the
call that failed.  The code picks the exception class; the message is the
library's own, which already names the key, file or server and never holds
a secret.
"""

from typing import Optional

from ._ffi import ffi, lib

# Codes of include/faucet/common.h.
ERROR = -1
EINVALID = -2
ENOTFOUND = -3
EUNSUPPORTED = -4
ECONFIG = -5
EIO = -6
ECRYPTO = -7
ENOMEM = -8
EBUSY = -9
ECONTENTION = -10
EAUTH = -11
EUNAVAILABLE = -12
ETIMEOUT = -13
EUNKNOWN = -14
ELEASELOST = -15


class Error(Exception):
    """A libfaucet call failed.

    code       the FAUCET_E* code (a negative int), or None for a failure
               this package found itself (a condition that did not hold)
    message    the library's reason
    retryable  whether simply trying again later may succeed (busy,
               contention, unavailable, timeout); an OutcomeUnknown is not
               retryable as such: read the state back first
    """

    message: str
    code: Optional[int]
    retryable: bool

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.retryable = bool(code is not None and lib.faucet_error_retryable(code))


class StoreError(Error):
    """The operation failed (FAUCET_ERROR): a state or store error."""


class InvalidArgument(Error, ValueError):
    """Bad input (FAUCET_EINVALID)."""


class InvalidKey(InvalidArgument):
    """A key (or prefix) that breaks the key rules."""


class InvalidValue(InvalidArgument):
    """A value that cannot be stored exactly: not JSON, bytes, an integer
    beyond -2**63 .. 2**64-1, NaN, a non-string object key, a top-level
    None (which reads back as "no entry")."""


class InvalidDocument(InvalidValue):
    """An export document that does not parse or validate."""


class NotFound(Error):
    """The thing asked for does not exist (FAUCET_ENOTFOUND)."""


class Unsupported(Error):
    """The backend (or this libfaucet) cannot do this (FAUCET_EUNSUPPORTED)."""


class ConfigError(Error):
    """Bad configuration: a store URL, a config file, an option (FAUCET_ECONFIG)."""


class IoError(Error, OSError):
    """An operating-system I/O call failed (FAUCET_EIO).  Also an OSError,
    so `except OSError` catches it; its errno and filename are None (the
    library's message names the file and the system's reason)."""


class CryptoError(Error):
    """A sealed file could not be opened: wrong key, tampered (FAUCET_ECRYPTO)."""


class OutOfMemory(Error):
    """The library ran out of memory (FAUCET_ENOMEM)."""


class Locked(Error):
    """A lock was not had in time (FAUCET_EBUSY); retryable."""


class Contention(Error):
    """Compare-and-put kept losing to other writers (FAUCET_ECONTENTION); retryable."""


class AuthFailed(Error):
    """The server refused our credentials (FAUCET_EAUTH)."""


class Unavailable(Error):
    """The server could not be reached (FAUCET_EUNAVAILABLE); retryable."""


class Timeout(Error, TimeoutError):
    """The operation ran out of time (FAUCET_ETIMEOUT); retryable.  Also a
    TimeoutError (and so an OSError; errno None)."""


class OutcomeUnknown(Error):
    """The request may have been applied; its reply was lost (FAUCET_EUNKNOWN).
    Read the state back before retrying."""


class LeaseLost(Error):
    """The lease this write depends on was lost or taken over (FAUCET_ELEASELOST)."""


class ConditionFailed(Error):
    """A conditional put found another value than the one it expected."""


_BY_CODE = {
    ERROR: StoreError,
    EINVALID: InvalidArgument,
    ENOTFOUND: NotFound,
    EUNSUPPORTED: Unsupported,
    ECONFIG: ConfigError,
    EIO: IoError,
    ECRYPTO: CryptoError,
    ENOMEM: OutOfMemory,
    EBUSY: Locked,
    ECONTENTION: Contention,
    EAUTH: AuthFailed,
    EUNAVAILABLE: Unavailable,
    ETIMEOUT: Timeout,
    EUNKNOWN: OutcomeUnknown,
    ELEASELOST: LeaseLost,
}


def error_for(code, message, invalid=InvalidArgument):
    """The exception for `code`; `invalid` is the class an EINVALID takes
    (InvalidKey for a key, InvalidValue for a value, ...)."""
    cls = invalid if code == EINVALID else _BY_CODE.get(code, Error)
    return cls(message, code)


def decode(cstr):
    """A C string from the library as text; bytes that are not UTF-8 (a bad
    key echoed in a message) are kept as escapes rather than lost."""
    return ffi.string(cstr).decode("utf-8", "backslashreplace")


def last_error(rc, invalid=InvalidArgument):
    """The exception for a call on this thread that just returned `rc`."""
    err = lib.faucet_error_last()
    message = decode(err.message) if err.message != ffi.NULL else ""
    if not message:
        message = decode(lib.faucet_error_name(rc)) or f"error {rc}"
    return error_for(rc, message, invalid)
