"""
conftest.py - the stores every test runs against, and the environment.

Run with the interpreter that has pytest (Debian's /usr/bin/python3):

    FAUCET_LIBRARY=build/libfaucet.so /usr/bin/python3 -m pytest -q bindings/python/tests

The PostgreSQL and Redis stores need the test servers (scripts/test-servers.sh
sets FAUCET_TEST_PG_URL and FAUCET_TEST_REDIS_URL).  A missing server is a
failure, never a skip: a suite that quietly stopped testing two backends
would still pass.  Each test gets a table / namespace of its own.
"""

import os
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package, when not installed

import faucet  # noqa: E402

BACKENDS = ("file", "sqlite", "postgres", "redis")


def server_url(var):
    url = os.environ.get(var)
    if not url:
        pytest.fail(f"{var} is not set: start the test servers "
                    "(eval \"$(scripts/test-servers.sh start)\")", pytrace=False)
    return url


def unique(prefix):
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def store_url(backend, tmp_path):
    """A URL of a fresh, empty store of `backend`."""
    if backend == "memory":
        return "memory:"
    if backend == "file":
        return f"file:{tmp_path}/state"
    if backend == "sqlite":
        return f"sqlite:{tmp_path}/state.db"
    if backend == "postgres":
        return f"{server_url('FAUCET_TEST_PG_URL')}?table={unique('py_')}"
    if backend == "redis":
        return f"{server_url('FAUCET_TEST_REDIS_URL')}?namespace={unique('py')}"
    raise ValueError(backend)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def url(backend, tmp_path):
    return store_url(backend, tmp_path)


@pytest.fixture
def store(url):
    s = faucet.open(url)
    yield s
    s.close()


@pytest.fixture
def memory():
    s = faucet.open("memory:")
    yield s
    s.close()
