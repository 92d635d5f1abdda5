"""How the package finds libfaucet, and what it says when the library it
finds is not one it can use.  Each case imports the package afresh in a
child interpreter with its own environment."""

import os
import shutil
import subprocess
import sys

import pytest

import faucet

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY = os.path.abspath(faucet.library_path)


def child(code, **env):
    full = {k: v for k, v in os.environ.items() if k != "FAUCET_LIBRARY"}
    full["PYTHONPATH"] = PACKAGE_DIR
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full,
                          capture_output=True, text=True, timeout=120)


def test_faucet_library_names_the_library():
    r = child("import faucet; print(faucet.library_path)", FAUCET_LIBRARY=LIBRARY)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == LIBRARY


def test_a_library_that_is_not_there_is_an_import_error():
    r = child("import faucet", FAUCET_LIBRARY="/nonexistent/libfaucet.so")
    assert r.returncode != 0
    assert "ImportError: faucet: cannot load the library FAUCET_LIBRARY names" in r.stderr


def test_a_library_without_the_calls_is_an_import_error_naming_them():
    r = child("import faucet", FAUCET_LIBRARY="libc.so.6")
    assert "ImportError" in r.stderr and "lacks faucet_error_retryable" in r.stderr
    assert "faucet_store_get" in r.stderr


def test_pkg_config_finds_an_installed_library(tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.fail("pkg-config is not installed (scripts/install-deps.sh installs it)")
    pc = tmp_path / "faucet.pc"
    pc.write_text(f"libdir={os.path.dirname(LIBRARY)}\nName: faucet\n"
                  "Description: test\nVersion: 0.1.0\nLibs: -L${libdir} -lfaucet\n")
    r = child("import faucet; print(faucet.library_path)", PKG_CONFIG_PATH=str(tmp_path),
              PKG_CONFIG_LIBDIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == os.path.join(os.path.dirname(LIBRARY), "libfaucet.so.0")


def test_nothing_found_says_where_it_looked(tmp_path):
    r = child("import faucet", PKG_CONFIG_LIBDIR=str(tmp_path), PKG_CONFIG_PATH="",
              LD_LIBRARY_PATH="")
    if r.returncode == 0:
        pytest.skip("a libfaucet is installed on the system library path")
    assert "libfaucet not found" in r.stderr and "FAUCET_LIBRARY" in r.stderr


def test_another_library_version_is_an_import_error(tmp_path):
    """A library that reports another version through faucet_version() is
    refused before anything else is looked at."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler to build the stand-in library")
    src = tmp_path / "v.c"
    src.write_text('const char *faucet_version(void) { return "7.3.0"; }\n')
    lib = tmp_path / "libfaucet.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    r = child("import faucet", FAUCET_LIBRARY=str(lib))
    assert "ImportError" in r.stderr
    assert "is libfaucet 7.3.0, but this package was built for libfaucet 0.1" in r.stderr


def test_the_package_imports_without_pytest_or_yaml():
    """What the package needs at import time is cffi alone."""
    r = child("import sys; sys.modules['yaml'] = None; import faucet; "
              "s = faucet.open('memory:'); s.put('p::r', 1); print(s.get('p::r'))",
              FAUCET_LIBRARY=LIBRARY)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1"
