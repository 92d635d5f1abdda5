"""
_json.py - Python objects to and from the JSON text libfaucet stores.

The library holds a value as JSON text and keeps every digit of an integer
from -2**63 to 2**64-1 and the source text of every other number.  We keep
that promise on the Python side with the standard json module:

  out  json.loads gives ints of any size exactly and floats by the shortest
       repr that reads back as the same double, so "0.1" comes back as 0.1.
  in   the encoder prints ints in full and floats by repr (which
       round-trips); we never convert a number ourselves.  An int beyond the
       library's range therefore reaches faucet_value_parse as it is and is
       refused there, with the library's own message - never clamped.

What json.dumps would silently change is refused here instead, as
InvalidValue: bytes (no JSON form), NaN and infinities (not JSON), object
keys that are not strings ({1: "a"} would come back as {"1": "a"}), and
strings holding lone surrogates (not UTF-8).  Tuples are written as arrays.
"""

import json

from ._errors import InvalidValue

# The C encoder and scanner the json module itself uses, built once: going
# through json.dumps/json.loads would rebuild the encoder on every call and
# run two regular expressions per load, which is most of a call's cost on
# the memory store.  With no C accelerator we fall back to the module.
try:
    from json.encoder import c_make_encoder as _c_make_encoder
    from json.scanner import c_make_scanner as _c_make_scanner
except ImportError:  # pragma: no cover - CPython always has them
    _c_make_encoder = _c_make_scanner = None


def _no_default(o):
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


_encode = _c_encode = None
if _c_make_encoder is not None:
    try:
        # markers=None: no circular-reference table; _check_keys refuses a
        # cycle first.  allow_nan=False: NaN and infinities are ValueError.
        _c_encode = _c_make_encoder(None, _no_default, json.encoder.encode_basestring,
                                    None, ":", ",", False, False, False)
        _c_encode(0, 0)

        def _encode(obj):
            return "".join(_c_encode(obj, 0))
    except TypeError:  # another CPython's signature: use the module
        _encode = _c_encode = None
if _encode is None:
    _encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False,
                               separators=(",", ":")).encode

_scan = None
if _c_make_scanner is not None:
    _scan = _c_make_scanner(json.JSONDecoder())
_decode = json.JSONDecoder().decode


_SCALARS = (str, int, float, bool, type(None))


_SCALAR_TYPES = frozenset(_SCALARS)


def _check_keys(obj, depth=0):
    """Refuse a dict key that is not a str anywhere inside obj.  Only the
    containers are walked (one set lookup per member tells a plain scalar
    from one); the encoder refuses every other foreign type."""
    if depth > 512:
        raise InvalidValue("value nests more than 512 levels deep (or contains "
                           "itself); it cannot be stored")
    if isinstance(obj, dict):
        for k in obj:
            if type(k) is not str and not isinstance(k, str):
                raise InvalidValue(f"object key {k!r} is not a string; JSON "
                                   "would store it as text and give back "
                                   "another value")
        for v in obj.values():
            if type(v) not in _SCALAR_TYPES:
                _check_keys(v, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            if type(v) not in _SCALAR_TYPES:
                _check_keys(v, depth + 1)


_BYTES = (bytes, bytearray, memoryview)


def dumps(obj):
    """obj as UTF-8 JSON bytes, or InvalidValue.  (On every put's path: the
    common exact types are told apart with `is` before any isinstance.)"""
    t = type(obj)
    if t is dict or t is list or t is tuple:
        _check_keys(obj)
    elif not (t is str or t is int or t is float or t is bool or obj is None):
        if isinstance(obj, _BYTES):
            raise InvalidValue("bytes cannot be stored: JSON has no binary type "
                               "(decode it to str, or encode it as base64 text)")
        if not isinstance(obj, _SCALARS):
            _check_keys(obj)
    try:
        if _c_encode is not None:
            return "".join(_c_encode(obj, 0)).encode()
        return _encode(obj).encode()
    except UnicodeEncodeError:
        raise InvalidValue("value holds a string that is not valid Unicode "
                           "(a lone surrogate)") from None
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidValue(f"value cannot be stored as JSON: {e}") from None


def loads(data):
    """JSON bytes from the library as a Python object.  The library's text is
    one compact, validated document, so the scanner reads all of it."""
    text = data.decode("utf-8")
    if _scan is not None:
        obj, end = _scan(text, 0)
        if end == len(text):
            return obj
    return _decode(text)
