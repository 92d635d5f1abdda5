"""A worker process of test_merge.py: `merge.py URL KEY MEMBER N` merges
{MEMBER: N} into KEY's value with Store.merge once, when told to start."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import faucet  # noqa: E402


def main():
    url, key, member, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with faucet.open(url) as store:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.readline()  # start together
        store.merge(key, {member: n})


if __name__ == "__main__":
    main()
