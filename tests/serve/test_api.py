#!/usr/bin/env python3
"""Black-box tests of `faucet serve` (doc/design.md §9, doc/openapi.json).

    test_api.py BACKEND [NAME...]   BACKEND: file, sqlite, postgres, redis or etcd;
                                    NAME: only the tests whose id contains it

Every test starts its own server on a free loopback port (--listen
127.0.0.1:0; the port is read from the "listening on" line) and stops it
with SIGTERM, checking that it exits 0.  The store tests run against the
backend named; the tests of the daemon itself (tokens, limits, signals)
run with the file backend only, since they do not depend on the store.
PostgreSQL, Redis and etcd come from scripts/test-servers.sh
(FAUCET_TEST_PG_URL, FAUCET_TEST_REDIS_URL, FAUCET_TEST_ETCD_URL); a missing
one is a failure.  On etcd, /v1/events follows the store's watch instead of
polling (WatchTests).

Standard library only (http.client, urllib, json, unittest).
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import uuid

FAUCET = os.environ.get("FAUCET_BIN", "faucet")
RAW = os.environ.get("FAUCET_RAW_BIN", "faucet_raw")
SOURCE = os.environ.get("FAUCET_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BACKEND = "file"
DEADLINE = 20.0  # seconds any wait for a condition may take before it fails


def wait_for(cond, what, deadline=DEADLINE):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    raise AssertionError("timed out waiting for " + what)


class Server:
    """One `faucet serve` process; its stderr is collected line by line."""

    def __init__(self, store, *args, env=None, expect_start=True):
        self.lines = []
        self.lock = threading.Lock()
        e = dict(os.environ)
        e.pop("FAUCET_RUN_ID", None)
        if env:
            e.update(env)
        self.proc = subprocess.Popen(
            [FAUCET, "--state", store, "serve", "--listen", "127.0.0.1:0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.port = None
        if expect_start:
            line = wait_for(lambda: self._find("listening on") or self._exited(), "the server to start")
            if line is True:
                raise AssertionError("the server exited: " + "".join(self.lines))
            self.port = int(re.search(r":(\d+) \(store", line).group(1))

    def _read(self):
        for line in self.proc.stderr:
            with self.lock:
                self.lines.append(line)

    def _exited(self):
        return self.proc.poll() is not None

    def _find(self, text):
        with self.lock:
            for line in self.lines:
                if text in line:
                    return line
        return None

    def log(self):
        with self.lock:
            return "".join(self.lines)

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE)

    def request(self, method, path, body=None, headers=None, token=None, ctype="application/json"):
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if ctype and (body is not None or method == "POST") and "Content-Type" not in h:
            h["Content-Type"] = ctype
        c = self.conn()
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
        finally:
            c.close()

    def json(self, method, path, body=None, **kw):
        status, headers, data = self.request(method, path, body, **kw)
        doc = json.loads(data) if data else None
        return status, headers, doc

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=DEADLINE)
        self.reader.join(timeout=DEADLINE)
        return rc


def etcd_url():
    url = os.environ.get("FAUCET_TEST_ETCD_URL")
    if not url:
        raise AssertionError("FAUCET_TEST_ETCD_URL is not set (scripts/test-servers.sh start)")
    return url


def metric(s, name):
    """The value of a /metrics line `name VALUE`."""
    st, h, data = s.request("GET", "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), data.decode(), re.M)
    if st != 200 or m is None:
        raise AssertionError("no %s in /metrics (%d)" % (name, st))
    return float(m.group(1))


def read_events(r, want, what):
    """Read the event stream r until want(kind, data) holds for an event
    ("reset" events have kind "reset"); returns the events read."""
    events = []
    end = time.monotonic() + DEADLINE  # keep-alive comments come every 10 s
    kind = None
    while True:
        if time.monotonic() > end:
            raise AssertionError("no %s within %ds: %s" % (what, DEADLINE, events))
        line = r.readline()
        if line == b"":
            raise AssertionError("the stream ended early, waiting for " + what)
        if line.startswith(b"event: "):
            kind = line[7:].strip().decode()
        elif line.startswith(b"data: "):
            data = json.loads(line[6:])
            events.append((kind, data))
            if want(kind, data):
                return events


class Proxy:
    """A TCP forwarder to one etcd member whose connections the test can
    cut (break_all), as a member's restart or a network fault would."""

    def __init__(self, target):
        self.target = target
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.socks = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                a, _ = self.lsock.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(self.target)
            except OSError:
                a.close()
                continue
            with self.lock:
                self.socks += [a, b]
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()
            threading.Thread(target=self._pipe, args=(b, a), daemon=True).start()

    def _pipe(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for x in (src, dst):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def break_all(self):
        with self.lock:
            socks, self.socks = self.socks, []
        for x in socks:
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            x.close()

    def close(self):
        self.lsock.close()
        self.break_all()


def k(key):
    return "/v1/keys/" + urllib.parse.quote(key, safe="")


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="faucet-serve-")
        self.servers = []
        self.store = self.make_store()

    def make_store(self):
        tag = "s" + uuid.uuid4().hex[:12]
        if BACKEND == "file":
            return "file:" + os.path.join(self.tmp, "state")
        if BACKEND == "sqlite":
            return "sqlite:" + os.path.join(self.tmp, "state.db")
        if BACKEND == "postgres":
            url = os.environ.get("FAUCET_TEST_PG_URL")
            if not url:
                self.fail("FAUCET_TEST_PG_URL is not set (scripts/test-servers.sh start)")
            return url + ("&" if "?" in url else "?") + "table=serve_" + tag
        if BACKEND == "redis":
            url = os.environ.get("FAUCET_TEST_REDIS_URL")
            if not url:
                self.fail("FAUCET_TEST_REDIS_URL is not set (scripts/test-servers.sh start)")
            return url + ("&" if "?" in url else "?") + "namespace=serve" + tag
        if BACKEND == "etcd":
            return etcd_url() + "_serve" + tag
        self.fail("unknown backend " + BACKEND)

    def tearDown(self):
        for s in self.servers:
            if s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def serve(self, *args, **kw):
        s = Server(self.store, *args, **kw)
        self.servers.append(s)
        return s

    def stop(self, s):
        rc = s.stop()
        self.assertEqual(rc, 0, "faucet serve exited %d: %s" % (rc, s.log()))
        return rc

    def cli(self, *args, ok=True):
        e = dict(os.environ)
        e.pop("FAUCET_RUN_ID", None)
        p = subprocess.run([FAUCET, "--state", self.store, *args], capture_output=True, text=True, env=e)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def assertError(self, status, doc, want_status, code=None):
        self.assertEqual(status, want_status, doc)
        self.assertIn("error", doc)
        self.assertIsInstance(doc["error"].get("message"), str)
        if code is not None:
            self.assertEqual(doc["error"]["code"], code, doc)


class StoreTests(Base):
    """The API against the backend named on the command line."""

    def test_health(self):
        s = self.serve()
        st, h, doc = s.json("GET", "/v1/health")
        self.assertEqual(st, 200)
        self.assertEqual(doc["status"], "ok")
        self.stop(s)

    def test_key_get_put_delete_etag(self):
        s = self.serve()
        key = "orders::default::Cursor/part"
        st, h, doc = s.json("GET", k(key))
        self.assertError(st, doc, 404, "not-found")
        # create-only
        st, h, doc = s.json("PUT", k(key), {"at": 18446744073709551615, "f": 0.1},
                            headers={"If-None-Match": "*"})
        self.assertEqual(st, 201, doc)
        self.assertEqual(doc["outcome"], "written")
        self.assertTrue(doc["run"])
        self.assertEqual(h["faucet-run"], doc["run"])
        etag1 = h["etag"]
        self.assertRegex(etag1, r'^"[0-9a-f]{64}"$')
        st, h, doc = s.json("PUT", k(key), {"x": 1}, headers={"If-None-Match": "*"})
        self.assertError(st, doc, 412, "condition")
        # the value round-trips digit for digit
        st, h, data = s.request("GET", k(key))
        self.assertEqual(st, 200)
        if BACKEND == "postgres":  # JSONB orders members its way (design §3.7)
            self.assertEqual(json.loads(data), {"at": 18446744073709551615, "f": 0.1})
            self.assertIn(b"18446744073709551615", data)
        else:
            self.assertEqual(data, b'{"at":18446744073709551615,"f":0.1}')
        # the ETag is of the canonical form: the same whatever the member order
        self.assertEqual(h["etag"], etag1)
        self.assertEqual(h["content-type"], "application/json")
        st, h, data = s.request("GET", k(key), headers={"If-None-Match": etag1})
        self.assertEqual(st, 304)
        # compare-and-put
        st, h, doc = s.json("PUT", k(key), {"v": 2}, headers={"If-Match": '"' + "0" * 64 + '"'})
        self.assertError(st, doc, 412, "condition")
        self.assertEqual(h["etag"], etag1)
        st, h, doc = s.json("PUT", k(key), {"v": 2}, headers={"If-Match": etag1})
        self.assertEqual(st, 200, doc)
        etag2 = h["etag"]
        self.assertNotEqual(etag1, etag2)
        # unconditional put, then a put of the same value changes nothing: no run
        st, h, doc = s.json("PUT", k(key), {"v": 3})
        self.assertEqual(st, 200)
        st, h, doc = s.json("PUT", k(key), {"v": 3})
        self.assertEqual(st, 200)
        self.assertIsNone(doc["run"])
        self.assertNotIn("faucet-run", h)
        # the CLI sees what the API wrote
        self.assertEqual(self.cli("state", "get", key).stdout.strip(), '{"v":3}')
        # compare-and-delete
        st, h, doc = s.json("DELETE", k(key), headers={"If-Match": etag2})
        self.assertError(st, doc, 412, "condition")
        st, h, doc = s.json("DELETE", k(key))
        self.assertEqual(st, 200, doc)
        self.assertEqual(doc["outcome"], "deleted")
        self.assertTrue(h.get("faucet-run"))
        st, h, doc = s.json("DELETE", k(key))
        self.assertError(st, doc, 404, "not-found")
        self.stop(s)

    def test_bad_input(self):
        s = self.serve()
        st, h, doc = s.json("PUT", k("p::default::a"), '{"a":1,"a":2}')
        self.assertError(st, doc, 400, "invalid")
        st, h, doc = s.json("PUT", k("p::default::a"), "{nope")
        self.assertError(st, doc, 400, "invalid")
        st, h, doc = s.json("GET", k("bad key!"))
        self.assertError(st, doc, 400, "invalid")
        st, h, doc = s.json("PUT", k("p::default::__lease__"), {"x": 1})
        self.assertError(st, doc, 400, "invalid")
        st, h, doc = s.json("PUT", k("p::default::a"), {"x": 1}, ctype="text/plain")
        self.assertError(st, doc, 415)
        st, h, doc = s.json("PUT", k("p::default::a"), {"x": 1}, ctype=None)
        self.assertError(st, doc, 415)
        st, h, doc = s.json("GET", "/v1/nothing")
        self.assertError(st, doc, 404, "not-found")
        st, h, doc = s.json("POST", "/v1/keys")
        self.assertError(st, doc, 405)
        self.assertEqual(h["allow"], "GET")
        st, h, doc = s.json("GET", "/v1/keys?limit=0")
        self.assertError(st, doc, 400, "invalid")
        st, h, doc = s.json("GET", "/v1/keys/%zz")
        self.assertError(st, doc, 400, "invalid")
        self.stop(s)

    def test_list_paged_byte_order(self):
        s = self.serve()
        keys = ["p::default::" + x for x in ["b", "B", "a_c", "abc", "aZ", "a", "c/d", "_x"]]
        for key in keys:
            st, h, doc = s.json("PUT", k(key), {"k": key})
            self.assertEqual(st, 200, doc)
        want = sorted(keys, key=lambda x: x.encode())
        got, cursor = [], None
        while True:
            path = "/v1/keys?prefix=p::&limit=3" + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
            st, h, doc = s.json("GET", path)
            self.assertEqual(st, 200, doc)
            self.assertLessEqual(len(doc["keys"]), 3)
            got += doc["keys"]
            cursor = doc["next_cursor"]
            if cursor is None:
                break
        self.assertEqual(got, want)
        # a prefix is literal: _ is no wildcard; bookkeeping keys are hidden
        st, h, doc = s.json("GET", "/v1/keys?prefix=p::default::a_")
        self.assertEqual(doc["keys"], ["p::default::a_c"])
        st, h, doc = s.json("GET", "/v1/keys?prefix=p::default::__")
        self.assertEqual(doc["keys"], [])
        self.stop(s)

    def test_patch(self):
        s = self.serve()
        key = "p::default::m"
        mp = "application/merge-patch+json"
        st, h, doc = s.json("PATCH", k(key), {"a": 1, "b": None}, ctype=mp)
        self.assertEqual(st, 200, doc)
        self.assertEqual(doc["outcome"], "merged")
        st, h, doc = s.json("PATCH", k(key), {"b": {"c": 2}, "a": None}, ctype=mp)
        self.assertEqual(st, 200, doc)
        st, h, data = s.request("GET", k(key))
        self.assertEqual(json.loads(data), {"b": {"c": 2}})
        st, h, doc = s.json("PATCH", k(key), {"a": 1}, ctype="application/json")
        self.assertError(st, doc, 415)
        st, h, doc = s.json("PATCH", k(key), {"a": 1}, ctype=mp, headers={"If-Match": '"nope"'})
        self.assertError(st, doc, 412, "condition")
        s.json("PUT", k("p::default::n"), 5)
        st, h, doc = s.json("PATCH", k("p::default::n"), {"a": 1}, ctype=mp)
        self.assertError(st, doc, 400, "invalid")
        self.stop(s)

    def test_pipelines_matches_cli(self):
        s = self.serve()
        self.cli("state", "put", "alpha::default::pos", "1")
        self.cli("state", "put", "beta::r1::pos", "2")
        st, h, doc = s.json("GET", "/v1/pipelines")
        self.assertEqual(st, 200)
        cli = json.loads(self.cli("--json", "state", "pipelines").stdout)
        self.assertEqual(doc, cli)
        self.assertEqual([p["pipeline"] for p in doc], ["alpha", "beta"])
        # ?tenant=T is `state pipelines --tenant T`.
        self.cli("state", "put", "acme::orders::eu::pos", "3")
        st, h, doc = s.json("GET", "/v1/pipelines?tenant=acme")
        self.assertEqual(st, 200, doc)
        cli = json.loads(self.cli("--json", "state", "pipelines", "--tenant", "acme").stdout)
        self.assertEqual(doc, cli)
        self.assertEqual([(p["tenant"], p["pipeline"], p["keys"]) for p in doc],
                         [("acme", "orders", 1)])
        st, h, doc = s.json("GET", "/v1/pipelines?tenant=a::b")
        self.assertError(st, doc, 400, "invalid")
        self.stop(s)

    def test_export_import(self):
        s = self.serve()
        self.cli("state", "put", "exp::default::a", '{"x":1}')
        self.cli("state", "put", "exp::default::b", "2")
        st, h, doc = s.json("GET", "/v1/pipelines/exp/export")
        self.assertEqual(st, 200, doc)
        self.assertEqual(doc["pipeline"], "exp")
        cli = json.loads(self.cli("state", "export", "exp").stdout)
        self.assertEqual(doc["keys"] if "keys" in doc else doc, cli["keys"] if "keys" in cli else cli)
        doc["pipeline"] = "imp"
        entries = doc.get("keys") or doc.get("state")
        newdoc = json.loads(json.dumps(doc).replace("exp::", "imp::"))
        st, h, res = s.json("POST", "/v1/pipelines/imp/import?dry_run=true", newdoc)
        self.assertEqual(st, 200, res)
        self.assertTrue(res["dry_run"])
        self.assertEqual(sorted(res["written"]), ["imp::default::a", "imp::default::b"])
        self.assertIsNone(res["run"])
        st, h, got = s.json("GET", k("imp::default::a"))
        self.assertEqual(st, 404)
        st, h, res = s.json("POST", "/v1/pipelines/imp/import", newdoc)
        self.assertEqual(st, 200, res)
        self.assertTrue(res["run"])
        self.assertEqual(h["faucet-run"], res["run"])
        st, h, got = s.json("GET", k("imp::default::a"))
        self.assertEqual(got, {"x": 1})
        # another pipeline's document is refused before anything is written
        st, h, res = s.json("POST", "/v1/pipelines/other/import", newdoc)
        self.assertError(st, res, 400, "invalid")
        # replace deletes what the document lacks
        self.cli("state", "put", "imp::default::c", "3")
        st, h, res = s.json("POST", "/v1/pipelines/imp/import?replace=true", newdoc)
        self.assertEqual(st, 200, res)
        self.assertEqual(res["deleted"], ["imp::default::c"])
        st, h, res = s.json("POST", "/v1/pipelines/imp/import?replace=maybe", newdoc)
        self.assertError(st, res, 400, "invalid")
        st, h, res = s.json("POST", "/v1/pipelines/imp/import", "[1")
        self.assertError(st, res, 400, "invalid")
        self.assertTrue(entries is not None)
        self.stop(s)

    def test_undo_conflict_lists_every_key(self):
        s = self.serve()
        sh = ('"$0" --state "$1" state put w::default::a 1 && "$0" --state "$1" state put w::default::b 2 '
              '&& "$0" --state "$1" state put w::default::c 3')
        self.cli("run", "--pipeline", "w", "--", "sh", "-c", sh, FAUCET, self.store)
        st, h, hist = s.json("GET", "/v1/pipelines/w/runs")
        self.assertEqual(st, 200)
        runs = [r["run"] for scope in hist for r in scope["runs"]]
        self.assertEqual(len(runs), 1, hist)
        s.json("PUT", k("w::default::a"), 10)
        self.cli("state", "put", "w::default::c", "30")
        st, h, doc = s.json("POST", "/v1/pipelines/w/runs/%s/undo" % runs[0])
        self.assertEqual(st, 409, doc)
        self.assertEqual(doc["error"]["code"], "conflict")
        got = sorted((c["key"], c["current"], c["wrote"]) for c in doc["conflicts"])
        self.assertEqual(got, [("w::default::a", 10, 1), ("w::default::c", 30, 3)])
        self.assertTrue(all(c["changed_by"] for c in doc["conflicts"]), doc)
        self.assertEqual(doc["conflict_total"], 2)
        self.assertFalse(doc["conflicts_truncated"])
        self.assertEqual(s.json("GET", k("w::default::b"))[2], 2)

    def test_runs_and_undo(self):
        s = self.serve()
        key = "u::default::pos"
        s.json("PUT", k(key), 1)
        st, h, doc = s.json("PUT", k(key), 2)
        r2 = doc["run"]
        st, h, hist = s.json("GET", "/v1/pipelines/u/runs")
        self.assertEqual(st, 200)
        runs = [r["run"] for scope in hist for r in scope["runs"]]
        self.assertIn(r2, runs)
        # dry run: what would be restored, nothing written
        st, h, doc = s.json("POST", "/v1/pipelines/u/runs/%s/undo?dry_run=true" % r2)
        self.assertEqual(st, 200, doc)
        self.assertTrue(doc["dry_run"])
        self.assertEqual(doc["restored"], [{"key": key, "from": 2, "to": 1}])
        self.assertIsNone(doc["undo_run"])
        self.assertEqual(s.json("GET", k(key))[2], 2)
        st, h, doc = s.json("POST", "/v1/pipelines/u/runs/%s/undo" % r2)
        self.assertEqual(st, 200, doc)
        self.assertEqual(doc["restored"], [{"key": key, "from": 2, "to": 1}])
        self.assertTrue(doc["undo_run"])
        self.assertEqual(h["faucet-run"], doc["undo_run"])
        self.assertEqual(s.json("GET", k(key))[2], 1)
        # a conflicting undo: the key changed since the run
        st, h, doc = s.json("PUT", k(key), 10)
        r3 = doc["run"]
        self.cli("state", "put", key, "11")
        st, h, doc = s.json("POST", "/v1/pipelines/u/runs/%s/undo" % r3)
        self.assertEqual(st, 409, doc)
        self.assertEqual(doc["error"]["code"], "conflict")
        self.assertEqual(doc["conflicts"][0]["key"], key)
        self.assertEqual(doc["conflicts"][0]["current"], 11)
        self.assertEqual(s.json("GET", k(key))[2], 11)
        st, h, doc = s.json("POST", "/v1/pipelines/u/runs/%s/undo?force=true" % r3)
        self.assertEqual(st, 200, doc)
        self.assertEqual(s.json("GET", k(key))[2], 1)
        st, h, doc = s.json("POST", "/v1/pipelines/u/runs/20200101T000000.000Z-abcdef/undo")
        self.assertError(st, doc, 404, "not-found")
        st, h, doc = s.json("POST", "/v1/pipelines/u/runs/%s/undo" % r2, ctype="text/plain")
        self.assertError(st, doc, 415)
        self.stop(s)

    def test_locks(self):
        s = self.serve()
        lease_key = "lk::default::__lease__"
        lease = {"holder": "otherhost:1:0123456789abcdef", "expires_at": int(time.time()) + 3600,
                 "run": "20260101T000000.000Z-abcdef"}
        p = subprocess.run([RAW, "put", self.store, lease_key, json.dumps(lease)], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        st, h, doc = s.json("GET", "/v1/locks")
        self.assertEqual(st, 200)
        self.assertEqual([l["key"] for l in doc], [lease_key])
        self.assertEqual(doc[0]["state"], "live")
        etag = doc[0]["etag"]
        st, h, res = s.json("DELETE", "/v1/locks/" + urllib.parse.quote(lease_key, safe=""),
                            headers={"If-Match": '"' + "1" * 64 + '"'})
        self.assertError(st, res, 412, "condition")
        st, h, res = s.json("DELETE", "/v1/locks/" + urllib.parse.quote("lk::default::pos", safe=""))
        self.assertError(st, res, 400, "invalid")
        st, h, res = s.json("DELETE", "/v1/locks/" + urllib.parse.quote(lease_key, safe=""),
                            headers={"If-Match": etag})
        self.assertEqual(st, 200, res)
        self.assertEqual(s.json("GET", "/v1/locks")[2], [])
        st, h, res = s.json("DELETE", "/v1/locks/" + urllib.parse.quote(lease_key, safe=""))
        self.assertError(st, res, 404, "not-found")
        self.stop(s)

    def test_backfills(self):
        s = self.serve()
        st, h, doc = s.json("GET", "/v1/pipelines/bf/backfills")
        self.assertEqual(st, 200, doc)
        self.assertEqual(doc["backfills"], [])
        self.cli("backfill", "--pipeline", "bf", "--from", "2026-01-01", "--to", "2026-01-04",
                 "--window", "1d", "--", "true")
        st, h, doc = s.json("GET", "/v1/pipelines/bf/backfills")
        self.assertEqual(st, 200, doc)
        cli = json.loads(self.cli("--json", "backfill", "status", "--pipeline", "bf").stdout)
        self.assertEqual(doc, cli)
        self.assertEqual(doc["backfills"][0]["done"], 3)
        h16 = doc["backfills"][0]["range_hash"]
        st, h, one = s.json("GET", "/v1/pipelines/bf/backfills/" + h16)
        self.assertEqual(st, 200, one)
        cli = json.loads(self.cli("--json", "backfill", "status", "--pipeline", "bf", "--hash", h16).stdout)
        self.assertEqual(one, cli)
        self.assertEqual([u["status"] for u in one["units"]], ["done"] * 3)
        st, h, doc = s.json("GET", "/v1/pipelines/bf/backfills/0123456789abcdef")
        self.assertError(st, doc, 404, "not-found")
        st, h, doc = s.json("GET", "/v1/pipelines/bf/backfills/XYZ")
        self.assertError(st, doc, 400, "invalid")
        self.stop(s)

    def test_events(self):
        s = self.serve()
        if BACKEND == "etcd":  # events from the watch once it is in place
            wait_for(lambda: metric(s, "faucet_serve_watch_active") == 1, "the watch")
        c = s.conn()
        c.request("GET", "/v1/events")
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Content-Type"), "text/event-stream")
        self.assertTrue(r.readline().startswith(b":"))  # connected
        # a run of the CLI shows as an event of the pipeline's status
        polls = metric(s, "faucet_serve_event_polls_total")
        self.cli("state", "put", "ev::default::pos", "1")
        events = []
        end = time.monotonic() + DEADLINE  # keep-alive comments come every 10 s
        while True:
            self.assertLess(time.monotonic(), end, "no run event within %ds: %s" % (DEADLINE, events))
            line = r.readline()
            self.assertNotEqual(line, b"", "the stream ended early")
            if line.startswith(b"data: "):
                events.append(json.loads(line[6:]))
                if any(e["kind"] == "run" and e["pipeline"] == "ev" for e in events):
                    break
        self.assertEqual(events[-1]["key"], "ev::default::__status__")
        # etcd's changes come from its watch, with no poll of the store;
        # every other store is polled
        if BACKEND == "etcd":
            self.assertEqual(metric(s, "faucet_serve_watch_active"), 1)
            self.assertEqual(metric(s, "faucet_serve_event_polls_total"), polls)
        else:
            self.assertEqual(metric(s, "faucet_serve_watch_active"), 0)
            self.assertGreaterEqual(metric(s, "faucet_serve_event_polls_total"), 1)
        # a stop ends the stream and the server exits 0
        self.stop(s)
        while r.readline():
            pass
        c.close()

    def test_concurrent_counter_no_lost_update(self):
        s = self.serve("--threads", "4")
        key = "cnt::default::n"
        self.assertEqual(s.json("PUT", k(key), 0)[0], 200)
        clients, each = 8, 12 if BACKEND == "file" else 15
        errors = []

        def worker():
            c = s.conn()  # one keep-alive connection per client
            try:
                done = 0
                while done < each:
                    c.request("GET", k(key))
                    r = c.getresponse()
                    value = json.loads(r.read())
                    etag = r.getheader("ETag")
                    c.request("PUT", k(key), body=json.dumps(value + 1),
                              headers={"If-Match": etag, "Content-Type": "application/json"})
                    r = c.getresponse()
                    r.read()
                    if r.status == 200:
                        done += 1
                    elif r.status != 412:
                        errors.append(r.status)
                        return
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
            finally:
                c.close()

        threads = [threading.Thread(target=worker) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        self.assertEqual(errors, [])
        self.assertEqual(s.json("GET", k(key))[2], clients * each)
        self.stop(s)


class ServerTests(Base):
    """The daemon: tokens, read-only, CSRF, limits, signals, log, metrics."""

    def token_file(self, text, mode=0o600):
        path = os.path.join(self.tmp, "tokens")
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def test_token_file_rules(self):
        path = self.token_file("write " + "w" * 32 + "\n", 0o644)
        s = self.serve("--token-file", path, expect_start=False)
        self.assertEqual(s.proc.wait(timeout=DEADLINE), 2)
        s.reader.join(DEADLINE)
        self.assertIn("mode 0644", s.log())
        self.assertIn("chmod 600", s.log())
        for bad in ["admin " + "x" * 32, "x" * 32 + " admin", "x" * 32, "write short",
                    "short read", "read write", "write a b", "# only a comment\n"]:
            path = self.token_file(bad + "\n")
            s = self.serve("--token-file", path, expect_start=False)
            self.assertEqual(s.proc.wait(timeout=DEADLINE), 2, bad)
            s.reader.join(DEADLINE)
            self.assertRegex(s.log(), r"token file .*(line 1|no token)")

    def make_cert(self):
        """A self-signed certificate for 127.0.0.1 (openssl req), and its key."""
        cert, key = os.path.join(self.tmp, "cert.pem"), os.path.join(self.tmp, "key.pem")
        p = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                            "-addext", "subjectAltName=IP:127.0.0.1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return cert, key

    def test_tls(self):
        cert, key = self.make_cert()
        wtok = "t" * 24 + "WRITE"
        tokens = self.token_file("%s write\n" % wtok)
        s = self.serve("--tls-cert", cert, "--tls-key", key, "--token-file", tokens)
        self.assertIn("listening on https://127.0.0.1:", s.log())
        ctx = ssl.create_default_context(cafile=cert)
        s.conn = lambda: http.client.HTTPSConnection("127.0.0.1", s.port, timeout=DEADLINE,
                                                     context=ctx)
        st, h, doc = s.json("GET", "/v1/health")
        self.assertEqual(st, 200, doc)
        st, h, doc = s.json("PUT", k("p::default::a"), {"v": 1}, token=wtok)
        self.assertEqual(st, 200, doc)
        st, h, doc = s.json("GET", k("p::default::a"), token=wtok)
        self.assertEqual((st, doc), (200, {"v": 1}))
        self.assertEqual(json.loads(self.cli("state", "get", "p::default::a").stdout), {"v": 1})
        # a client that does not trust the certificate is refused by TLS itself
        strict = ssl.create_default_context()
        c = http.client.HTTPSConnection("127.0.0.1", s.port, timeout=DEADLINE, context=strict)
        with self.assertRaises(ssl.SSLError):
            c.request("GET", "/v1/health")
        c.close()
        # plain HTTP to the TLS port gets no API answer
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=DEADLINE)
        try:
            c.request("GET", "/v1/health")
            status = c.getresponse().status
        except (http.client.HTTPException, OSError):
            status = None
        finally:
            c.close()
        self.assertNotEqual(status, 200)
        self.stop(s)
        self.assertNotIn(wtok, s.log())

    def test_tls_bad_files(self):
        cert, key = self.make_cert()
        other_key = os.path.join(self.tmp, "other-key.pem")
        os.rename(key, other_key)
        cert, key = self.make_cert()  # a second pair: other_key is not its key
        locked = os.path.join(self.tmp, "locked.pem")
        p = subprocess.run(["openssl", "pkey", "-in", key, "-out", locked, "-aes256",
                            "-passout", "pass:secret-pass"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        garbage = os.path.join(self.tmp, "garbage.pem")
        with open(garbage, "w") as f:
            f.write("not a certificate\n")
        for args, want in [(["--tls-cert", cert], "go together"),
                           (["--tls-key", key], "go together"),
                           (["--tls-cert", os.path.join(self.tmp, "missing.pem"), "--tls-key", key],
                            "missing.pem"),
                           (["--tls-cert", garbage, "--tls-key", key], "not a PEM certificate"),
                           (["--tls-cert", cert, "--tls-key", garbage], "not a PEM private key"),
                           (["--tls-cert", key, "--tls-key", cert], "not a PEM certificate"),
                           (["--tls-cert", cert, "--tls-key", other_key], "not the key of"),
                           (["--tls-cert", cert, "--tls-key", locked], "passphrase")]:
            s = self.serve(*args, expect_start=False)
            rc = s.proc.wait(timeout=DEADLINE)
            s.reader.join(DEADLINE)
            self.assertEqual(rc, 2, (args, s.log()))
            self.assertIn(want, s.log(), args)
            self.assertEqual(len(s.log().strip().splitlines()), 1, s.log())

    def test_non_loopback_needs_tokens(self):
        p = subprocess.run([FAUCET, "--state", self.store, "serve", "--listen", "0.0.0.0:0"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(p.returncode, 2)
        self.assertIn("not a loopback address", p.stderr)
        p = subprocess.run([FAUCET, "--state", self.store, "serve", "--listen", "nonsense"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--listen", p.stderr)
        path = self.token_file("read " + "r" * 32 + "\n")
        # with tokens, any address is allowed
        e = dict(os.environ)
        proc = subprocess.Popen([FAUCET, "--state", self.store, "serve", "--listen", "0.0.0.0:0",
                                 "--token-file", path], stderr=subprocess.PIPE, text=True, env=e)
        line = proc.stderr.readline()
        self.assertIn("listening on http://0.0.0.0:", line)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=DEADLINE), 0)
        proc.stderr.close()

    def test_tokens(self):
        rtok, wtok = "r" * 20 + "READ", "w" * 20 + "WRITE"
        # SPEC's order (TOKEN SCOPE) and the older one (SCOPE TOKEN) both read
        path = self.token_file("# tokens\n%s read\n\nwrite %s\n" % (rtok, wtok))
        s = self.serve("--token-file", path)
        st, h, doc = s.json("GET", "/v1/health")
        self.assertEqual(st, 200)  # no token needed
        st, h, doc = s.json("GET", "/v1/keys")
        self.assertError(st, doc, 401, "auth")
        self.assertIn("Bearer", h["www-authenticate"])
        st, h, doc = s.json("GET", "/v1/keys", token="x" * 24)
        self.assertError(st, doc, 401, "auth")
        st, h, doc = s.json("GET", "/v1/keys", token=rtok[:-1])
        self.assertError(st, doc, 401, "auth")
        st, h, doc = s.json("GET", "/v1/keys", token=rtok)
        self.assertEqual(st, 200)
        st, h, doc = s.json("PUT", k("p::default::a"), 1, token=rtok)
        self.assertError(st, doc, 403, "auth")
        st, h, doc = s.json("PUT", k("p::default::a"), 1, token=wtok)
        self.assertEqual(st, 200, doc)
        st, h, doc = s.json("GET", "/v1/keys?access_token=" + wtok)
        self.assertError(st, doc, 400, "invalid")
        st, h, doc = s.json("GET", "/v1/keys?token=" + wtok, token=wtok)
        self.assertError(st, doc, 400, "invalid")
        st, h, doc = s.json("GET", "/metrics")
        self.assertEqual(st, 401)
        self.stop(s)
        self.assertNotIn(wtok, s.log())
        self.assertNotIn(rtok, s.log())

    def test_read_only(self):
        s = self.serve("--read-only")
        st, h, doc = s.json("PUT", k("p::default::a"), 1)
        self.assertError(st, doc, 403, "read-only")
        st, h, doc = s.json("DELETE", k("p::default::a"))
        self.assertError(st, doc, 403, "read-only")
        st, h, doc = s.json("POST", "/v1/pipelines/p/import", {})
        self.assertError(st, doc, 403, "read-only")
        st, h, doc = s.json("GET", "/v1/keys")
        self.assertEqual(st, 200)
        self.stop(s)

    def test_origin_csrf(self):
        s = self.serve()
        st, h, doc = s.json("PUT", k("p::default::a"), 1, headers={"Origin": "https://evil.example"})
        self.assertError(st, doc, 403, "forbidden")
        st, h, doc = s.json("PUT", k("p::default::a"), 1,
                            headers={"Origin": "http://127.0.0.1:%d" % s.port})
        self.assertEqual(st, 200, doc)
        # reads are not writes: an Origin does not matter there
        st, h, doc = s.json("GET", k("p::default::a"), headers={"Origin": "https://evil.example"})
        self.assertEqual(st, 200)
        self.stop(s)

    def test_body_limit(self):
        s = self.serve()
        c = s.conn()
        c.putrequest("PUT", k("p::default::big"))
        c.putheader("Content-Type", "application/json")
        c.putheader("Content-Length", str(64 * 1024 * 1024 + 1))
        c.endheaders()
        r = c.getresponse()
        doc = json.loads(r.read())
        self.assertError(r.status, doc, 413)
        c.close()
        # exactly at the limit is read (and judged on its JSON)
        body = b'"' + b"x" * (64 * 1024 * 1024 - 2) + b'"'
        st, h, doc = s.json("PUT", k("p::default::big"), body)
        self.assertNotEqual(st, 413, doc)
        self.stop(s)

    def test_max_connections(self):
        s = self.serve("--max-connections", "2")
        idle = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(2)]
        # the third connection is answered 503 once the two are counted
        st, h, doc = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(s.json("GET", "/v1/keys")),
                              "the server to count the idle connections")
        self.assertError(st, doc, 503, "unavailable")
        for sock in idle:
            sock.close()
        wait_for(lambda: s.request("GET", "/v1/keys")[0] == 200, "a connection slot")
        self.stop(s)

    def test_slow_client_is_cut(self):
        s = self.serve("--timeout", "1s")
        sock = socket.create_connection(("127.0.0.1", s.port))
        sock.sendall(b"GET /v1/keys HTTP/1.1\r\nHost: x\r\n")  # and never the end
        sock.settimeout(DEADLINE)
        data = sock.recv(4096)  # returns b"" when the server closes it
        self.assertEqual(data, b"")
        sock.close()
        self.assertEqual(s.request("GET", "/v1/health")[0], 200)
        self.stop(s)

    def test_sigterm_finishes_in_flight(self):
        s = self.serve()
        body = json.dumps({"during": "shutdown"}).encode()
        c = s.conn()
        c.putrequest("PUT", k("p::default::sig"))
        c.putheader("Content-Type", "application/json")
        c.putheader("Content-Length", str(len(body)))
        c.endheaders()
        c.send(body[:5])  # the request is in flight
        wait_for(lambda: "faucet_serve_connections" in s.request("GET", "/metrics")[2].decode(), "metrics")
        s.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: s._find("finishing the requests in flight"), "the server to see SIGTERM")
        self.assertIsNone(s.proc.poll())
        c.send(body[5:])
        r = c.getresponse()
        doc = json.loads(r.read())
        self.assertEqual(r.status, 200, doc)
        c.close()
        self.assertEqual(s.proc.wait(timeout=DEADLINE), 0, s.log())
        self.assertEqual(self.cli("state", "get", "p::default::sig").stdout.strip(), '{"during":"shutdown"}')

    def test_access_log_and_metrics(self):
        pw_store = self.store
        s = self.serve()
        s.json("GET", "/v1/keys?prefix=secretprefix")
        s.json("PUT", k("p::default::a"), 1)
        s.json("GET", k("p::default::zz"))
        st, h, data = s.request("GET", "/metrics")
        self.assertEqual(st, 200)
        self.assertTrue(h["content-type"].startswith("text/plain"))
        text = data.decode()
        self.assertIn('faucet_serve_requests_total{method="PUT",route="/v1/keys/{key}",status="200"} 1', text)
        self.assertIn('faucet_serve_requests_total{method="GET",route="/v1/keys/{key}",status="404"} 1', text)
        self.assertIn('faucet_serve_request_duration_seconds_bucket{le="+Inf"}', text)
        self.assertIn("faucet_serve_store_errors_total 0", text)
        self.stop(s)
        log = s.log()
        self.assertRegex(log, r"faucet serve: PUT /v1/keys/p%3A%3Adefault%3A%3Aa 200 \d+ [0-9.]+ms")
        self.assertRegex(log, r"faucet serve: GET /v1/keys 200 \d+ [0-9.]+ms")
        self.assertNotIn("secretprefix", log)  # no query strings in the log
        self.assertIn(pw_store.split(":", 1)[1][:5], log)

    def test_url_password_not_logged(self):
        url = os.environ.get("FAUCET_TEST_REDIS_URL")
        if not url:
            self.fail("FAUCET_TEST_REDIS_URL is not set (scripts/test-servers.sh start)")
        password = os.environ.get("FAUCET_TEST_PASSWORD", "faucet-test-secret")
        s = Server(url + "?namespace=servepw" + uuid.uuid4().hex[:8])
        self.servers.append(s)
        self.assertEqual(s.request("GET", "/v1/health")[0], 200)
        self.stop(s)
        self.assertNotIn(password, s.log())

    def test_health_503_when_store_fails(self):
        s = self.serve()
        self.assertEqual(s.json("PUT", k("p::default::a"), 1)[0], 200)
        self.assertEqual(s.request("GET", "/v1/health")[0], 200)
        root = self.store.split(":", 1)[1]
        shutil.rmtree(root)
        with open(root, "w") as f:
            f.write("not a directory")
        st, h, doc = s.json("GET", "/v1/health")
        self.assertError(st, doc, 503)
        st, h, data = s.request("GET", "/metrics")
        self.assertRegex(data.decode(), r"faucet_serve_store_errors_total [1-9]")
        self.stop(s)

    def test_dashboard_headers(self):
        s = self.serve()
        st, h, body = s.request("GET", "/")
        self.assertEqual(st, 200)
        self.assertTrue(h["content-type"].startswith("text/html"), h)
        csp = h["content-security-policy"]
        self.assertTrue(csp.startswith("default-src 'self'"), csp)
        self.assertNotIn("unsafe-inline", csp)
        self.assertEqual(h["x-content-type-options"], "nosniff")
        # no inline script or style: every <script> has a src
        html = body.decode()
        self.assertEqual(re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html), [])
        self.assertNotIn("<style", html)
        self.assertNotRegex(html, r"\son[a-z]+=")
        for path, ctype in (("/app.js", "text/javascript"), ("/style.css", "text/css")):
            st, h, body = s.request("GET", path)
            self.assertEqual(st, 200, path)
            self.assertTrue(h["content-type"].startswith(ctype), h)
            self.assertIn("content-security-policy", h)
        self.assertEqual(s.request("POST", "/", body="{}")[0], 405)
        self.stop(s)

    def test_openapi_matches_routes(self):
        with open(os.path.join(SOURCE, "doc", "openapi.json")) as f:
            doc = json.load(f)
        documented = set()
        for path, item in doc["paths"].items():
            for method in item:
                if method in ("get", "put", "post", "patch", "delete"):
                    documented.add((method.upper(), path))
        p = subprocess.run([FAUCET, "serve", "--routes"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        served = set(tuple(line.split(" ", 1)) for line in p.stdout.splitlines())
        self.assertEqual(served - documented, set(), "routes missing from doc/openapi.json")
        self.assertEqual(documented - served, set(), "documented routes the server lacks")
        s = self.serve()
        st, h, got = s.json("GET", "/v1/openapi.json")
        self.assertEqual(st, 200)
        self.assertEqual(got, doc)
        # each documented route is answered by a route, not "no route"
        for method, path in sorted(documented):
            if path == "/v1/events":  # a stream: only its status
                c = s.conn()
                c.request("GET", path)
                self.assertEqual(c.getresponse().status, 200)
                c.close()
                continue
            concrete = (path.replace("{key}", "p%3A%3Adefault%3A%3A__lease__" if "locks" in path else "p%3A%3Adefault%3A%3Ax")
                        .replace("{p}", "p").replace("{run}", "20200101T000000.000Z-abcdef")
                        .replace("{hash}", "0123456789abcdef"))
            st, h, data = s.request(method, concrete, body="{}" if method in ("PUT", "PATCH", "POST") else None,
                                    ctype="application/merge-patch+json" if method == "PATCH" else "application/json")
            self.assertFalse(st == 404 and b"no route" in data, (method, path))
            self.assertNotEqual(st, 405, (method, path))
        self.stop(s)


class WatchTests(Base):
    """/v1/events on a store with a watch (etcd): each change is an event
    as it happens, and a broken watch falls back to polling, tells every
    client to reload, and is put in place again."""

    def test_events_of_the_watch_added_changed_removed(self):
        s = self.serve()
        wait_for(lambda: metric(s, "faucet_serve_watch_active") == 1, "the watch")
        c = s.conn()
        c.request("GET", "/v1/events")
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        self.assertTrue(r.readline().startswith(b":"))
        polls = metric(s, "faucet_serve_event_polls_total")
        # a first run creates its status, a second changes it
        self.cli("state", "put", "wa::default::pos", "1")
        read_events(r, lambda kd, d: d["key"] == "wa::default::__status__" and d["change"] == "added",
                    "the first run's status added")
        self.cli("state", "put", "wa::default::pos", "2")
        read_events(r, lambda kd, d: d["key"] == "wa::default::__status__" and d["change"] == "changed",
                    "the second run's status changed")
        # a run's lease: added when it begins, removed when it ends
        self.cli("run", "--pipeline", "wa", "--", "true")
        got = read_events(r, lambda kd, d: d["key"] == "wa::default::__lease__" and d["change"] == "removed",
                          "the run's lease removed")
        self.assertIn(("lease", {"kind": "lease", "key": "wa::default::__lease__", "pipeline": "wa",
                                 "change": "added"}), got)
        # data keys are not events
        self.assertFalse([d for kd, d in got if d["key"] == "wa::default::pos"], got)
        self.assertEqual(metric(s, "faucet_serve_event_polls_total"), polls)
        self.stop(s)
        c.close()

    def test_a_broken_watch_resets_the_clients_and_is_put_back(self):
        url = etcd_url()
        first = url[len("etcd://"):].split("/")[0].split(",")[0]
        host, port = first.rsplit(":", 1)
        proxy = Proxy((host, int(port)))
        self.addCleanup(proxy.close)
        prefix = url.split("/", 3)[3]
        self.store = "etcd://127.0.0.1:%d/%s_serve%s" % (proxy.port, prefix, uuid.uuid4().hex[:12])
        s = self.serve()
        wait_for(lambda: metric(s, "faucet_serve_watch_starts_total") == 1, "the watch")
        c = s.conn()
        c.request("GET", "/v1/events")
        r = c.getresponse()
        self.assertTrue(r.readline().startswith(b":"))
        proxy.break_all()
        read_events(r, lambda kd, d: kd == "reset", "a reset after the watch broke")
        wait_for(lambda: metric(s, "faucet_serve_watch_starts_total") == 2, "the watch put back")
        self.assertEqual(metric(s, "faucet_serve_watch_active"), 1)
        # and it reports changes again
        self.cli("state", "put", "wb::default::pos", "1")
        read_events(r, lambda kd, d: d["key"] == "wb::default::__status__", "a run after the watch came back")
        self.stop(s)
        c.close()


def main():
    global BACKEND
    args = sys.argv[1:]
    if args and args[0] in ("file", "sqlite", "postgres", "redis", "etcd"):
        BACKEND = args.pop(0)
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    suite.addTests(loader.loadTestsFromTestCase(StoreTests))
    if BACKEND == "file":
        suite.addTests(loader.loadTestsFromTestCase(ServerTests))
    if BACKEND == "etcd":
        suite.addTests(loader.loadTestsFromTestCase(WatchTests))
    if args:
        suite = unittest.TestSuite(t for t in _flatten(suite) if any(a in t.id() for a in args))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t


if __name__ == "__main__":
    main()
