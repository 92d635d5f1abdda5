"""`pip install --no-build-isolation` of the package works offline with
Debian's pip, setuptools and wheel, and the installed package works."""

import os
import shutil
import subprocess
import sys

import faucet

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pip_installs_the_package_into_a_venv(tmp_path):
    # A copy: pip builds in the source tree and would leave build/ there.
    src = tmp_path / "src"
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns(
        "tests", "__pycache__", "build", "*.egg-info", ".pytest_cache"))
    venv = tmp_path / "venv"
    # --system-site-packages: cffi comes from Debian (python3-cffi).
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = str(venv / "bin" / "python")
    r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                        "--disable-pip-version-check", str(src)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    env = dict(os.environ, FAUCET_LIBRARY=os.path.abspath(faucet.library_path))
    env.pop("PYTHONPATH", None)
    # PEP 561: the type hints' marker is installed with the package.
    r = subprocess.run([py, "-c", "import faucet, os; print(os.path.isfile(os.path.join("
                        "os.path.dirname(faucet.__file__), 'py.typed')))"],
                       cwd=tmp_path, env=dict(os.environ, FAUCET_LIBRARY=os.path.abspath(
                           faucet.library_path), PYTHONPATH=""),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "True\n", r.stdout + r.stderr
    r = subprocess.run([py, "-c", "import faucet; print(faucet.__file__); "
                        "s = faucet.open('memory:'); s.put('p::r', 0.1); print(s.get('p::r'))"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    where, value = r.stdout.split()
    assert where.startswith(str(venv)) and value == "0.1"
