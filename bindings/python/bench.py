#!/usr/bin/env python3
"""
bench.py - what the Python binding adds to a libfaucet call: get and put on
the memory store, timed from Python and from C, and the difference.

    FAUCET_LIBRARY=build/libfaucet.so python3 bindings/python/bench.py [BENCH_MEMORY]

The C figures come from bench/bench_memory.c (built with the library as
build/bench_memory; give its path as the argument, or it is looked for next
to FAUCET_LIBRARY), which times the same loop: 1,000 keys used in turn, the
same value, best of several rounds (short rounds, so that on a busy machine
some land in a quiet moment).  The Python loop's own cost (range, indexing
the key list) is measured with an empty body and taken off, so the
overhead figure is the binding's: key and value conversion, JSON encoding
or decoding and parsing, the cffi call, error checks.  Target: at most 3 us
per call for each.
"""

import os
import subprocess
import sys
import time

import faucet

KEYS = 1000
CALLS = 50_000
ROUNDS = 21
TARGET_US = 3.0
VALUE = {"cursor": 18446744073709551615, "ts": "2026-01-01T00:00:00Z"}


def best_ns(body):
    best = None
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        body()
        t = (time.perf_counter() - t0) / CALLS * 1e9
        best = t if best is None or t < best else best
    return best


def python_figures():
    keys = [f"bench::m{i:04d}" for i in range(KEYS)]
    store = faucet.open("memory:")
    put, get = store.put, store.get

    def empty():
        for i in range(CALLS):
            keys[i % KEYS]

    def puts():
        for i in range(CALLS):
            put(keys[i % KEYS], VALUE)

    def gets():
        for i in range(CALLS):
            get(keys[i % KEYS])

    loop = best_ns(empty)
    puts()  # every key present before the gets are timed
    figures = {"put": best_ns(puts) - loop, "get": best_ns(gets) - loop}
    if get(keys[0]) != VALUE:
        sys.exit("bench: the value read back differs from the one written")
    store.close()
    return figures


def c_figures(program):
    out = subprocess.run([program], capture_output=True, text=True, check=True).stdout
    figures = {}
    for line in out.splitlines():
        parts = line.split()  # "memory put 71.0 ns"
        if len(parts) == 4 and parts[0] == "memory" and parts[3] == "ns":
            figures[parts[1]] = float(parts[2])
    if not {"put", "get"} <= set(figures):
        sys.exit(f"bench: cannot read {program}'s output:\n{out}")
    return figures


def find_c_program():
    if len(sys.argv) > 1:
        return sys.argv[1]
    lib = os.environ.get("FAUCET_LIBRARY", "")
    candidate = os.path.join(os.path.dirname(os.path.abspath(lib)), "bench_memory")
    if lib and os.access(candidate, os.X_OK):
        return candidate
    sys.exit("bench: give the path of bench_memory (built with the library, "
             "e.g. build/bench_memory)")


def main():
    c = c_figures(find_c_program())
    py = python_figures()
    status = 0
    print(f"libfaucet {faucet.library_path}, Python {sys.version.split()[0]}")
    print(f"{'memory store':14} {'C':>10} {'Python':>10} {'overhead':>10}  target")
    for op in ("get", "put"):
        over_us = (py[op] - c[op]) / 1000
        ok = over_us <= TARGET_US
        status |= not ok
        print(f"{op:14} {c[op]:8.0f}ns {py[op]:8.0f}ns {over_us:8.2f}us  "
              f"<= {TARGET_US:.0f} us {'ok' if ok else 'MISSED'}")
    if "parse+put" in c:
        # For reference: a C caller holding only JSON text parses it too.
        print(f"{'(parse+put)':14} {c['parse+put']:8.0f}ns {py['put']:8.0f}ns "
              f"{(py['put'] - c['parse+put']) / 1000:8.2f}us")
    return status


if __name__ == "__main__":
    sys.exit(main())
