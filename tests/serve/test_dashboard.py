#!/usr/bin/env python3
"""The dashboard of `faucet serve` (/, /app.js, /style.css) in headless
Chromium through Selenium, against a live server on a temp file store.

A missing browser, driver or selenium module is a failure, never a skip.
Every wait is an explicit WebDriverWait condition.  Screenshots go to
$FAUCET_ARTIFACTS (default build/artifacts)/dashboard-*.png.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_api  # noqa: E402  (the Server helper and the binaries' paths)

from selenium import webdriver  # noqa: E402  (ImportError: a failure)
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = os.environ.get("FAUCET_CHROMIUM", "/usr/bin/chromium")
DRIVER = os.environ.get("FAUCET_CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = os.environ.get("FAUCET_ARTIFACTS", os.path.join(os.getcwd(), "artifacts"))
WAIT = 15


class Dashboard(unittest.TestCase):
    def setUp(self):
        for f in (CHROMIUM, DRIVER):
            self.assertTrue(os.access(f, os.X_OK), "%s is missing (apt-get install chromium chromium-driver)" % f)
        self.tmp = tempfile.mkdtemp(prefix="faucet-dash-")
        self.store = "file:" + os.path.join(self.tmp, "state")
        self.servers = []
        self.procs = []
        o = Options()
        o.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1200,900", "--user-data-dir=" + os.path.join(self.tmp, "chrome")):
            o.add_argument(a)
        self.browser = webdriver.Chrome(service=Service(DRIVER), options=o)
        self.wait = WebDriverWait(self.browser, WAIT)

    def tearDown(self):
        self.browser.quit()
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for s in self.servers:
            self.assertEqual(s.stop(), 0, s.log())

    def serve(self, *args):
        s = test_api.Server(self.store, *args)
        self.servers.append(s)
        return s

    def cli(self, *args, ok=True):
        p = subprocess.run([test_api.FAUCET, "--state", self.store, *args], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "FAUCET_RUN_ID"})
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def get(self, key):
        return self.cli("state", "get", key).stdout.strip()

    def shot(self, name, css=None):
        if css:
            self.browser.execute_script("arguments[0].scrollIntoView()",
                                        self.browser.find_element(By.CSS_SELECTOR, css))
        os.makedirs(ARTIFACTS, exist_ok=True)
        self.assertTrue(self.browser.save_screenshot(os.path.join(ARTIFACTS, "dashboard-%s.png" % name)))

    def open(self, s, frag=""):
        self.browser.get("http://127.0.0.1:%d/%s" % (s.port, frag))

    def text_in(self, css, text):
        return self.wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))

    # ---- cases ----------------------------------------------------------

    def test_headers(self):
        s = self.serve()
        for path, ctype in (("/", "text/html"), ("/app.js", "text/javascript"), ("/style.css", "text/css")):
            st, h, body = s.request("GET", path)
            self.assertEqual(st, 200, path)
            self.assertTrue(h["content-type"].startswith(ctype), h)
            self.assertTrue(h["content-security-policy"].startswith("default-src 'self'"), h)
            self.assertEqual(h["x-content-type-options"], "nosniff")
        js = s.request("GET", "/app.js")[2]
        self.assertFalse(b".innerHTML" in js or b"insertAdjacentHTML" in js, "HTML built from strings")

    def test_pipelines_table(self):
        self.cli("state", "put", "alpha::default::pos", "1")
        doc = '{"version":1,"pipeline":"beta","keys":{"beta::default::a":1,"beta::default::b":2}}'
        p = subprocess.run([test_api.FAUCET, "--state", self.store, "state", "import", "-"], input=doc,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = self.serve()
        self.open(s)
        self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '#pipelines tr[data-pipeline="beta"]')))
        rows = self.browser.find_elements(By.CSS_SELECTOR, "#pipelines tbody tr")
        self.assertEqual([r.get_attribute("data-pipeline") for r in rows], ["alpha", "beta"])
        self.text_in('#pipelines tr[data-pipeline="beta"] td[data-label="Keys"]', "2")
        # a pipeline the CLI writes while the page is open appears (live)
        self.cli("state", "put", "gamma::default::pos", "7")
        self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '#pipelines tr[data-pipeline="gamma"]')))
        f = self.browser.find_element(By.ID, "filter")
        f.send_keys("bet")
        self.wait.until(EC.invisibility_of_element_located((By.CSS_SELECTOR, 'tr[data-pipeline="alpha"]')))
        self.assertTrue(self.browser.find_element(By.CSS_SELECTOR, 'tr[data-pipeline="beta"]').is_displayed())
        self.shot("pipelines")

    def undo_page(self, s, pipeline, run):
        self.open(s, "#/p/" + pipeline)
        btn = self.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, 'button.undo[data-run="%s"]' % run)))
        btn.click()

    def test_undo_restores(self):
        key = "u::default::pos"
        self.cli("state", "put", key, "1")
        r2 = self.cli("state", "put", key, "2").stderr.split("run ")[1].split(";")[0]
        s = self.serve()
        self.undo_page(s, "u", r2)
        self.text_in("#undo-restore li", "u::default::pos: 2 → 1")
        self.shot("undo-confirm")
        self.assertEqual(self.get(key), "2")  # a dry run wrote nothing
        self.browser.find_element(By.ID, "undo-confirm").click()
        self.text_in("#undo-done", "Restored 1 key(s)")
        self.assertEqual(self.get(key), "1")
        # the undo run shows in the history
        self.wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#runs tbody tr")) == 3)
        self.shot("undo-done")

    def test_undo_cancel(self):
        key = "c::default::pos"
        r1 = self.cli("state", "put", key, "5").stderr.split("run ")[1].split(";")[0]
        s = self.serve()
        self.undo_page(s, "c", r1)
        self.text_in("#undo-restore li", "c::default::pos: 5 → (absent)")
        self.browser.find_element(By.ID, "undo-cancel").click()
        self.wait.until(EC.invisibility_of_element_located((By.ID, "undo-panel")))
        self.assertEqual(self.get(key), "5")

    def test_undo_conflict(self):
        key = "v::default::pos"
        self.cli("state", "put", key, "1")
        r2 = self.cli("state", "put", key, "2").stderr.split("run ")[1].split(";")[0]
        r3 = self.cli("state", "put", key, "3").stderr.split("run ")[1].split(";")[0]
        s = self.serve()
        self.undo_page(s, "v", r2)
        self.text_in("#undo-conflicts li", "v::default::pos: now 3")
        # the run that changed the key, when the server names it
        # (changed_by; null until the library tracks it)
        self.assertIsNotNone(r3)
        self.shot("undo-conflict")
        self.assertEqual(self.get(key), "3")

    def test_token(self):
        self.cli("state", "put", "tok::default::pos", "1")
        tf = os.path.join(self.tmp, "tokens")
        with open(os.open(tf, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("read dashboard-token-0123456789\n")
        s = self.serve("--token-file", tf)
        self.open(s)
        field = self.wait.until(EC.visibility_of_element_located((By.ID, "token")))
        label = self.browser.find_element(By.CSS_SELECTOR, 'label[for="token"]')
        self.assertTrue(label.text)
        self.shot("token")
        field.send_keys("wrong-token-0123456789")
        self.browser.find_element(By.CSS_SELECTOR, '#token-form button[type="submit"]').click()
        self.text_in("#auth-error", "refused")
        field.send_keys("dashboard-token-0123456789")
        self.browser.find_element(By.CSS_SELECTOR, '#token-form button[type="submit"]').click()
        self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-pipeline="tok"]')))
        self.assertEqual(self.browser.execute_script("return sessionStorage.getItem('faucet-token')"),
                         "dashboard-token-0123456789")
        self.assertNotIn("dashboard-token", self.browser.current_url)
        self.assertNotIn("dashboard-token", s.log())

    def test_backfill_grid_live(self):
        go = os.path.join(self.tmp, "go")
        s = self.serve()
        # a backfill whose units wait for a file: one running, the rest pending
        p = subprocess.Popen([test_api.FAUCET, "--state", self.store, "backfill", "--pipeline", "bf",
                              "--from", "2026-01-01", "--to", "2026-01-05", "--window", "1d", "--",
                              "sh", "-c", 'while [ ! -e "$0" ]; do sleep 0.05; done', go],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        self.open(s, "#/p/bf")
        self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '.unit.status-running[data-status="running"]')))
        self.wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".unit.status-pending")) == 3)
        self.shot("backfill-running", "#backfills")
        open(go, "w").close()
        self.wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".unit.status-done")) == 4)
        self.assertEqual(p.wait(timeout=WAIT), 0, p.stderr.read())
        u = self.browser.find_element(By.CSS_SELECTOR, ".unit.status-done")
        self.assertIn("attempts 1", u.get_attribute("title"))
        self.shot("backfill-done", "#backfills")

    def test_break_lock(self):
        lease_key = "lk::default::__lease__"
        lease = {"holder": "otherhost:1:0123456789abcdef", "expires_at": int(time.time()) + 3600,
                 "run": "20260101T000000.000Z-abcdef"}
        p = subprocess.run([test_api.RAW, "put", self.store, lease_key, json.dumps(lease)],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = self.serve()
        self.open(s, "#/p/lk")
        self.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, 'tr[data-lock="%s"] button.break' % lease_key))).click()
        self.wait.until(EC.alert_is_present()).accept()
        self.text_in("#locks", "No lease held.")
        st, h, doc = s.json("GET", "/v1/locks")
        self.assertEqual(doc, [])

    def test_polling_fallback(self):
        # With the event stream unreachable the page says it polls, and a
        # write still shows up: remove startPolling() and nothing updates.
        self.cli("state", "put", "pa::default::pos", "1")
        s = self.serve()
        self.browser.execute_cdp_cmd("Network.enable", {})
        self.browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/v1/events*"]})
        self.open(s)
        self.text_in("#live", "polling")
        self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-pipeline="pa"]')))
        self.cli("state", "put", "pb::default::pos", "2")
        self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-pipeline="pb"]')))
        self.assertIn("polling", self.browser.find_element(By.ID, "live").text)

    def test_copy_bookmarks(self):
        self.cli("state", "put", "cp::default::pos", '{"offset":42}')
        self.cli("state", "put", "cp::eu::pos", '"x"')
        s = self.serve()
        origin = "http://127.0.0.1:%d" % s.port
        self.browser.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": origin, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        self.open(s, "#/p/cp")
        pre = self.wait.until(EC.presence_of_element_located((By.ID, "bookmarks")))
        shown = json.loads(pre.text)
        self.assertEqual(shown, {"cp::default::pos": {"offset": 42}, "cp::eu::pos": "x"})
        btn = self.browser.find_element(By.XPATH, "//button[normalize-space()='Copy bookmarks']")
        btn.click()
        self.wait.until(lambda b: "copied" in btn.find_element(By.XPATH, "following-sibling::span[1]").text)
        got = self.browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "navigator.clipboard.readText().then(done, e => done('ERROR ' + e));")
        self.assertEqual(json.loads(got), shown, got)

    def test_phone_width(self):
        self.cli("state", "put", "ph::default::pos", "1")
        s = self.serve()
        self.browser.set_window_size(390, 844)
        self.open(s)
        self.wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, 'tr[data-pipeline="ph"]')))
        width = self.browser.execute_script("return document.documentElement.scrollWidth")
        self.assertLessEqual(width, self.browser.execute_script("return window.innerWidth"))
        self.shot("phone")


if __name__ == "__main__":
    unittest.main(verbosity=2)
