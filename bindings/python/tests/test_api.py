"""The package's face: its version is the loaded library's, and its
public API carries type hints (PEP 561, py.typed)."""

import inspect
import os
import re
import typing

import pytest

import faucet
from faucet._ffi import ffi, lib
from faucet._run import Run

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(PACKAGE))


def test_version_is_the_librarys():
    text = ffi.string(lib.faucet_version()).decode()
    assert faucet.__version__ == text == faucet.library_version()
    assert "__version__" in faucet.__all__


def test_version_is_the_projects_and_the_packages():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        project = re.search(r"project\(faucet VERSION ([0-9.]+)", f.read()).group(1)
    with open(os.path.join(PACKAGE, "pyproject.toml")) as f:
        package = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert faucet.__version__ == project == package


def test_the_package_has_a_py_typed_marker():
    assert os.path.isfile(os.path.join(os.path.dirname(faucet.__file__), "py.typed"))


def _public_callables():
    for name in faucet.__all__:
        obj = getattr(faucet, name)
        if inspect.isfunction(obj):
            yield name, obj
    for cls in (faucet.Store, Run, faucet.CheckReport):
        for name, member in vars(cls).items():
            if name.startswith("_") and name not in ("__enter__", "__exit__"):
                continue
            if isinstance(member, property):
                member = member.fget
            if inspect.isfunction(member):
                yield f"{cls.__name__}.{name}", member


@pytest.mark.parametrize("name, fn", list(_public_callables()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_the_public_api_has_type_hints(name, fn):
    # "Run" is imported for type checkers only (TYPE_CHECKING) in _store.py.
    hints = typing.get_type_hints(fn, localns={"Run": Run})
    assert "return" in hints, f"{name} has no return annotation"
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.name not in ("self", "cls")]
    missing = [p.name for p in params if p.name not in hints]
    assert not missing, f"{name}: parameters without a type hint: {missing}"
