"""Debian's Chromium, headless and headful (under Xvfb), through real nginx in
challenge mode.

`/strict/` flags every request (a location with `thresholds = { bot = 0 }`),
so both browsers get the page there: the first navigation is challenged,
the page's script solves the proof of work, the reload lands on the original
URL with the clearance cookie, and later navigations pass without a new
challenge. At `/` the shipped model decides: HeadlessChrome is challenged,
headful Chromium is not. curl, python-requests and a cookie-less replay of
the browser's own request do not pass. One more navigation goes to a
plain-HTTP hostname (not a secure context, so no WebCrypto): the page's own
SHA-256 solves it.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import ROOT, TEST_LIST, Nginx, bad_log_lines, free_port, get_text, metrics_server
from test_challenge import challenge_http, logged_server

sys.path.insert(0, str(ROOT / "models" / "capture"))
import display  # noqa: E402  (the capture's X server)

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
XVFB = shutil.which("Xvfb")
EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
SECRET = ROOT / "tests" / "fixtures" / "challenge" / "secret"
DIFFICULTY = 12

try:
    import selenium  # noqa: F401
    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False

pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and XVFB and HAVE_SELENIUM),
                                reason="needs chromium, chromium-driver, xvfb and selenium (make deps-test)")


def conf(port, metrics_port, log):
    origin = """content_by_lua_block {
                ngx.header.content_type = "text/html"
                ngx.say("<!doctype html><title>origin</title><p id=a>", ngx.var.edgeguard_action, "</p>")
            }"""
    return challenge_http(SECRET, DIFFICULTY) + f"""
    server {{
        listen 127.0.0.1:{port};
        {logged_server(log)}
        location /strict/ {{
            rewrite_by_lua_block {{
                require("resty.edgeguard.record").capture()
                require("resty.edgeguard").access{{ thresholds = {{ bot = 0 }} }}
            }}
            {origin}
        }}
        location / {{
            rewrite_by_lua_block {{
                require("resty.edgeguard.record").capture()
                require("resty.edgeguard").access()
            }}
            {origin}
        }}
    }}
    {metrics_server(metrics_port)}
}}
"""


class Browser:
    def __init__(self, headless, display=None, extra=()):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="edgeguard-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--no-sandbox", "--disable-dev-shm-usage", "--no-first-run", "--disable-gpu",
                  "--disable-extensions", "--disable-background-networking", "--disable-sync",
                  f"--user-data-dir={self.profile}", *extra):
            opts.add_argument(a)
        if headless:
            opts.add_argument("--headless=new")
        env = dict(os.environ)
        if display:
            env["DISPLAY"] = display
        self.wd = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER, env=env), options=opts)
        self.wd.set_page_load_timeout(60)

    def open(self, url, timeout=60):
        """Navigates and waits for the origin's page (the challenge's script
        replaces itself with it when solved)."""
        from selenium.webdriver.support.ui import WebDriverWait

        self.wd.get(url)
        WebDriverWait(self.wd, timeout, poll_frequency=0.1).until(lambda d: d.title == "origin")
        return self.wd.find_element("id", "a").text

    def quit(self):
        try:
            self.wd.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def edge():
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-browser-"))
    os.chmod(tmp, 0o777)
    log = tmp / "access.jsonl"
    port, mport = free_port(), free_port()
    nginx = Nginx(conf(port, mport, log))
    nginx.start(port)
    xvfb = display.Xvfb()
    xvfb.ensure()
    yield port, mport, nginx, log, xvfb
    xvfb.stop()
    nginx.stop()
    bad = bad_log_lines(nginx.error_log)
    nginx.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
    assert not bad, "\n".join(bad)


def served(mport):
    text = get_text(mport, "/metrics")[1]
    for line in text.splitlines():
        if line.startswith('edgeguard_challenges_total{result="served"}'):
            return int(line.split()[-1])
    return 0


def log_lines(log):
    time.sleep(0.3)  # the access log is written after the response
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def replay(tmp_dir, lines):
    cfg = tmp_dir / "replay.json"
    cfg.write_text(json.dumps({"models": {"bot": str(ROOT / "models" / "bot.json")}, "mode": "challenge",
                               "challenge_secret": str(SECRET), "challenge_difficulty": DIFFICULTY,
                               "internal_headers": str(TEST_LIST), "thresholds": {"bot": 0}}))
    src = tmp_dir / "lines.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = subprocess.run([str(EDGEGUARD), "replay", "--config", str(cfg), "--output", "-", "--ordered",
                          "--no-progress", str(src)], capture_output=True, text=True, check=True)
    return [json.loads(line)["action"] for line in out.stdout.splitlines()]


@pytest.mark.parametrize("headless", [True, False], ids=["headless", "headful"])
def test_chromium_solves_the_challenge_and_keeps_its_clearance(edge, headless, tmp_path):
    port, mport, nginx, log, xvfb = edge
    base = f"http://127.0.0.1:{port}"
    first = len(log_lines(log)) if log.exists() else 0
    b = Browser(headless, None if headless else xvfb.display)
    try:
        before = served(mport)
        t0 = time.monotonic()
        assert b.open(base + "/strict/page?x=1") == "cleared"
        solve_seconds = time.monotonic() - t0
        assert b.wd.current_url == base + "/strict/page?x=1"
        assert served(mport) == before + 1
        cookie = next(c for c in b.wd.get_cookies() if c["name"] == "edgeguard_clearance")
        assert cookie["httpOnly"] and cookie.get("sameSite") == "Lax" and not cookie["secure"]
        assert cookie["path"] == "/" and cookie["expiry"] > time.time() + 86_000
        # Reload and later navigations: no new challenge.
        b.wd.refresh()
        assert b.open(base + "/strict/other") == "cleared"
        b.wd.refresh()
        assert served(mport) == before + 1
        # At "/", the shipped model decides: HeadlessChrome is flagged (and
        # cleared by its cookie), headful Chromium is not flagged at all.
        assert b.open(base + "/") == ("cleared" if headless else "pass")
        assert served(mport) == before + 1
    finally:
        b.quit()
    print(f"solved in {solve_seconds:.2f}s")

    lines = log_lines(log)[first:]
    cleared = [l for l in lines if l["edgeguard_action"] == "cleared" and l["uri"].startswith("/strict/")]
    assert cleared, [l["edgeguard_action"] for l in lines]
    # Replayed with the secret, the browser's requests are judged as nginx
    # judged them; without their cookie, they are challenged.
    strict = [l for l in lines if l["uri"].startswith("/strict/") and l["edgeguard_action"]]
    assert replay(tmp_path, strict) == [l["edgeguard_action"] for l in strict]
    no_cookie = [dict(l, headers=json.dumps([h for h in json.loads(l["headers"]) if h[0].lower() != "cookie"]))
                 for l in cleared]
    assert set(replay(tmp_path, no_cookie)) == {"challenge"}


def test_scripts_without_the_page_do_not_pass(edge):
    import requests

    port = edge[0]
    url = f"http://127.0.0.1:{port}/strict/page?x=1"
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and "edgeguard_clearance" not in r.cookies
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
                         capture_output=True, text=True, check=True)
    assert out.stdout == "403"
    # Following the page's answer URL without doing the work fails.
    body = requests.get(url, headers={"Accept": "text/html", "Sec-Fetch-Mode": "navigate"}, timeout=10).text
    nonce = body.split('{"n":"', 1)[1].split('"', 1)[0]
    r = requests.get(f"http://127.0.0.1:{port}/.edgeguard/challenge?n={nonce}&c=1&r=%2F", timeout=10,
                     allow_redirects=False)
    assert r.status_code == 403 and "set-cookie" not in r.headers


def test_a_page_without_webcrypto_solves_with_its_own_sha256(edge):
    """http://challenge.test is not a secure context: crypto.subtle is
    undefined there, and the page falls back to its own SHA-256."""
    port, mport = edge[0], edge[1]
    b = Browser(True, extra=("--host-resolver-rules=MAP challenge.test 127.0.0.1",))
    try:
        before = served(mport)
        assert b.open(f"http://challenge.test:{port}/strict/fallback") == "cleared"
        assert b.wd.execute_script("return window.isSecureContext") is False
        assert served(mport) == before + 1
    finally:
        b.quit()


def test_the_make_run_demo_challenges_headless_chromium(edge, tmp_path):
    """nginx-conf/nginx.conf as `make run` starts it: HeadlessChrome scores
    as a bot and gets the page, solves it and reaches the demo origin (which
    echoes the request head, cookie included); headful Chromium goes straight
    through."""
    from test_startup import shipped, stop_and_check_log

    nginx, port = shipped(tmp_path)
    seen = []
    try:
        for headless in (True, False):
            b = Browser(headless, None if headless else edge[4].display)
            try:
                b.wd.get(f"http://127.0.0.1:{port}/hello")
                # The page first (headless) or the origin's echo at once (headful).
                seen.append("Checking your browser" in b.wd.page_source)
                from selenium.webdriver.support.ui import WebDriverWait

                WebDriverWait(b.wd, 60, poll_frequency=0.1).until(
                    lambda d: "X-Bot-Score: bot=" in d.page_source)
                echoed = b.wd.find_element("tag name", "body").text
                assert ("edgeguard_clearance=" in echoed) == headless, echoed
            finally:
                b.quit()
        text = (nginx.prefix / ".run" / "error.log").read_text()
    finally:
        stop_and_check_log(nginx)
    # The headless one was challenged and solved (seen[0] may miss the page
    # itself when the work finished before the source was read), the
    # headful one never.
    assert text.count("action=challenge") == 1 and text.count("challenge=solved") == 1, text[-2000:]
    assert seen[1] is False
