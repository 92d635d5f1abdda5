"""Every library error code becomes its own subclass of faucet.Error,
carrying the library's message, the code and whether to retry."""

import os
import re

import pytest

import faucet
from faucet import _errors
from faucet._ffi import lib

CODES = {
    -1: faucet.StoreError, -2: faucet.InvalidArgument, -3: faucet.NotFound,
    -4: faucet.Unsupported, -5: faucet.ConfigError, -6: faucet.IoError,
    -7: faucet.CryptoError, -8: faucet.OutOfMemory, -9: faucet.Locked,
    -10: faucet.Contention, -11: faucet.AuthFailed, -12: faucet.Unavailable,
    -13: faucet.Timeout, -14: faucet.OutcomeUnknown, -15: faucet.LeaseLost,
}


@pytest.mark.parametrize("code", sorted(CODES))
def test_each_code_has_its_class(code):
    e = _errors.error_for(code, "the message")
    assert type(e) is CODES[code]
    assert isinstance(e, faucet.Error)
    assert e.code == code and e.message == "the message" and str(e) == "the message"
    assert e.retryable == bool(lib.faucet_error_retryable(code))


def test_retryable_codes_are_the_librarys():
    retryable = {c for c in CODES if _errors.error_for(c, "m").retryable}
    assert retryable == {c for c in CODES if lib.faucet_error_retryable(c)}
    assert -9 in retryable and -10 in retryable and -12 in retryable and -13 in retryable
    assert -14 not in retryable  # outcome unknown: read back first


def test_einvalid_takes_the_class_that_fits():
    assert type(_errors.error_for(-2, "m", faucet.InvalidKey)) is faucet.InvalidKey
    assert type(_errors.error_for(-2, "m", faucet.InvalidValue)) is faucet.InvalidValue
    assert issubclass(faucet.InvalidDocument, faucet.InvalidValue)
    for cls in (faucet.InvalidKey, faucet.InvalidValue, faucet.InvalidArgument):
        assert issubclass(cls, ValueError) and issubclass(cls, faucet.Error)


def test_an_unknown_code_is_a_plain_error():
    e = _errors.error_for(-99, "from a newer library")
    assert type(e) is faucet.Error and e.code == -99


def test_the_message_is_the_librarys(memory):
    with pytest.raises(faucet.InvalidKey) as e:
        memory.put("bad key", 1)
    assert e.value.message == "state key 'bad key' contains illegal character ' ' at byte 3"
    with pytest.raises(faucet.ConfigError) as e:
        faucet.open("nope:x")
    assert e.value.code == -5 and "unknown state store URL 'nope:x'" in e.value.message


def test_a_wrong_encryption_key_is_a_crypto_error(tmp_path):
    with faucet.open(f"file:{tmp_path}/s", encryption_key="K3y-right-7f1") as s:
        s.put("p::r", {"secret": 1})
    with faucet.open(f"file:{tmp_path}/s", encryption_key="K3y-wrong-2a9") as s:
        with pytest.raises(faucet.CryptoError) as e:
            s.get("p::r")
    assert e.value.code == -7
    assert "K3y-wrong-2a9" not in e.value.message and "K3y-right-7f1" not in e.value.message
    # A previous key still opens it, and the next write seals with the new one.
    with faucet.open(f"file:{tmp_path}/s", encryption_key="K3y-new-55c",
                     previous_keys=["K3y-right-7f1"]) as s:
        assert s.get("p::r") == {"secret": 1}


def test_encryption_applies_to_file_urls_only():
    with pytest.raises(faucet.ConfigError):
        faucet.open("memory:", encryption_key="k")
    with pytest.raises(faucet.ConfigError):
        faucet.open("memory:", previous_keys=["k"])


@pytest.mark.parametrize("var", ["FAUCET_TEST_PG_URL", "FAUCET_TEST_REDIS_URL"])
def test_a_refused_password_is_an_error_that_hides_it(var):
    from conftest import server_url
    url = server_url(var)
    password = os.environ.get("FAUCET_TEST_PASSWORD", "faucet-test-secret")
    wrong = url.replace(password, "not-the-password")
    with pytest.raises(faucet.Error) as e:
        with faucet.open(wrong) as s:
            s.get("p::r")
    assert isinstance(e.value, (faucet.AuthFailed, faucet.StoreError))
    assert re.search("auth", e.value.message, re.I)
    assert "not-the-password" not in e.value.message


def test_an_unreachable_server_is_an_error():
    with pytest.raises(faucet.Error) as e:
        with faucet.open("redis://127.0.0.1:1/0") as s:
            s.get("p::r")
    assert isinstance(e.value, (faucet.Unavailable, faucet.StoreError))
    assert "127.0.0.1:1" in e.value.message


def test_io_errors_are_os_errors_and_timeouts_timeout_errors():
    assert issubclass(faucet.IoError, faucet.Error)
    assert issubclass(faucet.IoError, OSError)
    assert issubclass(faucet.Timeout, faucet.Error)
    assert issubclass(faucet.Timeout, TimeoutError)
    for code, builtin in ((-6, OSError), (-13, TimeoutError)):
        with pytest.raises(builtin) as e:
            raise _errors.error_for(code, "the message")
        assert isinstance(e.value, faucet.Error)
        assert str(e.value) == "the message" and e.value.message == "the message"
        assert e.value.code == code and e.value.errno is None
    # The others stay plain faucet errors.
    assert not issubclass(faucet.Unavailable, OSError)
    assert not issubclass(faucet.ConfigError, OSError)


def test_a_real_io_error_is_caught_as_os_error(tmp_path):
    # A file store whose directory is a regular file: the library's EIO.
    (tmp_path / "f").write_text("not a directory")
    try:
        with faucet.open(f"file:{tmp_path}/f") as s:
            s.put("p::k", 1)
    except faucet.Error as e:
        if e.code != -6:
            pytest.fail(f"expected FAUCET_EIO, got {type(e).__name__}: {e}")
        assert isinstance(e, OSError)
    else:
        pytest.fail("a file store over a regular file opened")
