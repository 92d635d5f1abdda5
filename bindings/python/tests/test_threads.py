"""Several Python threads share one store; C calls run without the GIL."""

import faulthandler
import socket
import threading
import urllib.parse

import pytest

import faucet
from conftest import server_url, unique

THREADS = 8
INCREMENTS = 25


def increment(store, key, times):
    for _ in range(times):
        while True:
            current = store.get(key)
            if store.compare_and_put(key, current, {"n": (current or {"n": 0})["n"] + 1}):
                break


def run_threads(target, *args):
    errors = []

    def body():
        try:
            target(*args)
        except BaseException as e:  # reported below, with its traceback
            errors.append(e)

    threads = [threading.Thread(target=body) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_threads_sharing_a_store_lose_no_increment(store):
    store.put("p::count", {"n": 0})
    run_threads(increment, store, "p::count", INCREMENTS)
    assert store.get("p::count") == {"n": THREADS * INCREMENTS}


def test_each_thread_reads_its_own_error(memory):
    """The library's last error is per thread: a failure raised in one
    thread carries that thread's message, whatever the others do meanwhile."""
    mismatches = []
    barrier = threading.Barrier(THREADS)

    def body(n):
        barrier.wait()
        for i in range(300):
            bad = f"bad key {n} {i}"
            try:
                if n % 2:
                    memory.put(bad, 1)
                else:
                    memory.put(f"p::t{n}", 2**64 + i)
            except faucet.InvalidArgument as e:
                expected = bad if n % 2 else str(2**64 + i)
                if expected not in e.message:
                    mismatches.append((n, i, e.message))
            else:
                mismatches.append((n, i, "no error"))
            memory.put(f"p::t{n}", i)  # a successful call in between

    threads = [threading.Thread(target=body, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mismatches == []


class Proxy:
    """A TCP relay written in Python: every byte between the store and the
    Redis server passes through Python threads of this process."""

    def __init__(self, host, port):
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.relayed = 0
        self.closing = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    def pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self.relayed += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


def test_store_calls_release_the_gil():
    """A store call that waits on the network must let other Python threads
    run: here its requests and replies are relayed by Python threads, so if
    cffi held the GIL for the length of the C call, no reply could ever
    reach it.  (faulthandler's watchdog is a C thread: it ends a hung run.)"""
    base = urllib.parse.urlsplit(server_url("FAUCET_TEST_REDIS_URL"))
    proxy = Proxy(base.hostname, base.port)
    netloc = base.netloc.rsplit("@", 1)
    netloc = f"{netloc[0]}@127.0.0.1:{proxy.port}" if len(netloc) == 2 else f"127.0.0.1:{proxy.port}"
    url = urllib.parse.urlunsplit((base.scheme, netloc, base.path,
                                   f"namespace={unique('py')}", ""))
    faulthandler.dump_traceback_later(120, exit=True)
    try:
        with faucet.open(url) as s:
            s.put("p::r", {"through": "python"})
            assert s.get("p::r") == {"through": "python"}
            run_threads(increment, s, "p::count", 5)
            assert s.get("p::count") == {"n": THREADS * 5}
    finally:
        faulthandler.cancel_dump_traceback_later()
        proxy.close()
    assert proxy.relayed > 0


def test_close_while_other_threads_call(tmp_path):
    """close() racing calls on other threads never frees the handle under
    them: each call either completes or raises 'closed'."""
    s = faucet.open(f"file:{tmp_path}/s")
    s.put("p::r", 0)
    outcomes = []
    started = threading.Barrier(THREADS + 1)

    def body():
        started.wait()
        for _ in range(200):
            try:
                s.get("p::r")
                outcomes.append("ok")
            except faucet.Error as e:
                assert "closed" in e.message
                outcomes.append("closed")
                return

    threads = [threading.Thread(target=body) for _ in range(THREADS)]
    for t in threads:
        t.start()
    started.wait()
    s.close()
    for t in threads:
        t.join()
    assert outcomes.count("closed") + outcomes.count("ok") == len(outcomes)
    with pytest.raises(faucet.Error, match="closed"):
        s.get("p::r")
