"""A worker process of test_processes.py: `incr.py URL KEY TIMES` adds one
to KEY's {"n": ...} TIMES times, each with a compare-and-put retried until
it wins, then prints how many attempts lost."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import faucet  # noqa: E402


def main():
    url, key, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lost = 0
    with faucet.open(url) as store:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.readline()  # start together
        for _ in range(times):
            while True:
                current = store.get(key)
                if store.compare_and_put(key, current, {"n": current["n"] + 1}):
                    break
                lost += 1
    print(lost)


if __name__ == "__main__":
    main()
