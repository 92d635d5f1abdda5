"""
_run.py - invocation runs (SPEC section 8): Store.run().

A run writes through the invocation's lease and records before-images so
that `faucet state undo` can take it back.  The C side (include/faucet/run.h)
arrives in a later libfaucet; until the loaded library has it, Store.run()
raises Unsupported.
"""

from ._ffi import lib, has
from . import _errors as E


def available():
    """Whether the loaded libfaucet has invocation runs."""
    return has(lib, "faucet_run_begin")


def begin(store, pipeline, row="default", **options):
    if not available():
        raise E.Unsupported("this libfaucet has no invocation runs "
                            "(faucet_run_begin); upgrade libfaucet to use "
                            "Store.run()", E.EUNSUPPORTED)
    raise E.Unsupported("invocation runs are not wired up in this version of "
                        "the Python package", E.EUNSUPPORTED)
