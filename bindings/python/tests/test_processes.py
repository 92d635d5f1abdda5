"""Eight processes incrementing one counter through Python: compare-and-put
is atomic across processes, so the final count is every increment made."""

import os
import subprocess
import sys

import faucet

PROCESSES = 8
TIMES = 25
HERE = os.path.dirname(os.path.abspath(__file__))


def test_eight_processes_lose_no_increment(url, backend):
    with faucet.open(url) as s:
        s.put("p::count", {"n": 0})
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "incr.py"), url,
                               "p::count", str(TIMES)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(PROCESSES)]
    try:
        for p in procs:  # every worker has opened the store
            assert p.stdout.readline() == "ready\n"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        lost = [int(p.communicate(timeout=300)[0]) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0] * PROCESSES
    with faucet.open(url) as s:
        assert s.get("p::count") == {"n": PROCESSES * TIMES}
    # Not a requirement, but a sign the processes really overlapped.
    print(f"{backend}: {sum(lost)} compare-and-puts lost to another process")
