"""What a person meets at the challenge, in real browsers through real nginx.

- Firefox ESR (headless and headful under Xvfb, driven over Marionette:
  Debian ships no geckodriver) solves the page and stays cleared
  (Chromium: test_challenge_browser.py);
- Chromium with cookies blocked is told that cookies are needed after two
  solves, instead of solving forever;
- a challenged fetch() from a page gets application/problem+json it can
  read, never the HTML page;
- a cleared person arriving by a cross-site form POST over TLS (an OAuth
  form_post, a payment's return) keeps the clearance (SameSite=None;
  Secure) and the body reaches the origin;
- lynx, a text browser without JavaScript, passes through the no-JS
  fallback (challenge_nojs): it waits, follows the link, is cleared.

Locations: /strict/ flags every request (thresholds bot = 0); /open/ only
logs (the page a fetch() or a form comes from).
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import ROOT, Nginx, bad_log_lines, free_port
from test_challenge import challenge_http, logged_server
from test_challenge_browser import CHROMIUM, CHROMEDRIVER, HAVE_SELENIUM, XVFB, display

sys.path.insert(0, str(ROOT / "models" / "capture"))
from marionette import Marionette  # noqa: E402

FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")
LYNX = shutil.which("lynx")
SECRET = ROOT / "tests" / "fixtures" / "challenge" / "secret"
DIFFICULTY = 12
NOJS_WAIT = 2


def conf(port, tls_port, cert_dir, log):
    origin = """content_by_lua_block {
                ngx.req.read_body()
                ngx.header.content_type = "text/html"
                ngx.say("<!doctype html><title>origin</title><p id=a>", ngx.var.edgeguard_action,
                        "</p><p id=m>", ngx.req.get_method(), "</p><p id=b>",
                        ngx.req.get_body_data() or "", "</p>")
            }"""
    form = """content_by_lua_block {
                ngx.header.content_type = "text/html"
                ngx.say('<!doctype html><title>form</title><form id=f method=post action="',
                        ngx.var.arg_to, '"><input name=code value=xyz></form>')
            }"""
    strict = """rewrite_by_lua_block {
                require("resty.edgeguard").access{ thresholds = { bot = 0 } }
            }"""
    open_ = """rewrite_by_lua_block { require("resty.edgeguard").access{ mode = "log" } }"""
    extra = f"challenge_nojs = {{ wait = {NOJS_WAIT} }},"
    return challenge_http(SECRET, DIFFICULTY, extra) + f"""
    server {{
        listen 127.0.0.1:{port};
        listen 127.0.0.1:{tls_port} ssl;
        ssl_certificate {cert_dir}/cert.pem;
        ssl_certificate_key {cert_dir}/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
        {logged_server(log)}
        location /strict/ {{
            {strict}
            {origin}
        }}
        location /open/form {{
            {open_}
            {form}
        }}
        location / {{
            {open_}
            {origin}
        }}
    }}
}}
"""


@pytest.fixture(scope="module")
def edge():
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-people-"))
    os.chmod(tmp, 0o755)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=shop.test", "-keyout", tmp / "key.pem",
                    "-out", tmp / "cert.pem"], check=True, capture_output=True, timeout=60)
    os.chmod(tmp / "key.pem", 0o644)
    port, tls_port = free_port(), free_port()
    nginx = Nginx(conf(port, tls_port, tmp, tmp / "access.jsonl"))
    nginx.start(port)
    yield port, tls_port, nginx
    nginx.stop()
    bad = bad_log_lines(nginx.error_log)
    nginx.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
    assert not bad, "\n".join(bad)


needs_chromium = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and HAVE_SELENIUM),
                                    reason="needs chromium, chromium-driver and selenium (make deps-test)")


class Firefox:
    """Firefox over Marionette (models/capture/marionette.py), headless or
    on an X display (Xvfb)."""

    def __init__(self, display=None):
        self.profile = tempfile.mkdtemp(prefix="edgeguard-firefox-")
        self.port = free_port()
        prefs = {"marionette.port": self.port, "browser.shell.checkDefaultBrowser": False,
                 "datareporting.policy.dataSubmissionEnabled": False, "app.update.enabled": False,
                 "browser.startup.homepage_override.mstone": "ignore", "toolkit.telemetry.enabled": False,
                 "network.captive-portal-service.enabled": False}
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            for k, v in prefs.items():
                val = ("true" if v else "false") if isinstance(v, bool) else (str(v) if isinstance(v, int) else f'"{v}"')
                f.write(f'user_pref("{k}", {val});\n')
        env = dict(os.environ, MOZ_CRASHREPORTER_DISABLE="1")
        mode = []
        if display:
            env["DISPLAY"] = display
        else:
            mode = ["--headless"]
        self.proc = subprocess.Popen([FIREFOX, "--marionette", "--no-remote", *mode, "--profile",
                                      self.profile, "about:blank"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.m = Marionette(self.port)
            self.m.call("WebDriver:NewSession", {"acceptInsecureCerts": True, "pageLoadStrategy": "normal"})
            self.m.call("WebDriver:SetTimeouts", {"pageLoad": 60000, "script": 30000})
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            raise

    def script(self, js):
        return self.m.call("WebDriver:ExecuteScript", {"script": js, "args": []})

    def open(self, url, timeout=60):
        self.m.call("WebDriver:Navigate", {"url": url})
        deadline = time.monotonic() + timeout
        while self.script("return document.title") != "origin":
            assert time.monotonic() < deadline, self.script("return document.body.innerText")
            time.sleep(0.1)
        return self.script("return document.getElementById('a').textContent")

    def quit(self):
        try:
            self.m.call("Marionette:Quit", {"flags": ["eForceQuit"]})
        except Exception:
            pass
        self.m.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.mark.skipif(not (FIREFOX and XVFB), reason="needs firefox-esr and xvfb")
@pytest.mark.parametrize("headless", [True, False], ids=["headless", "headful"])
def test_firefox_solves_the_page_and_stays_cleared(edge, headless):
    port = edge[0]
    xvfb = None if headless else display.Xvfb()
    b = None
    try:
        b = Firefox(None if headless else xvfb.ensure())
        t0 = time.monotonic()
        assert b.open(f"http://127.0.0.1:{port}/strict/page?x=1") == "cleared"
        print(f"firefox solved in {time.monotonic() - t0:.2f}s")
        assert b.script("return location.pathname + location.search") == "/strict/page?x=1"
        assert b.open(f"http://127.0.0.1:{port}/strict/other") == "cleared"
    finally:
        if b:
            b.quit()
        if xvfb:
            xvfb.stop()
    assert "edgeguard challenge=solved" in edge[2].error_log


def chromium(prefs=None, extra=()):
    """Headless Chromium with profile preferences `prefs` (a fresh profile)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="edgeguard-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--no-sandbox", "--disable-dev-shm-usage", "--no-first-run", "--disable-gpu", "--headless=new",
              "--disable-extensions", "--disable-background-networking", "--disable-sync",
              f"--user-data-dir={profile}", *extra):
        opts.add_argument(a)
    if prefs:
        opts.add_experimental_option("prefs", prefs)
    wd = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    wd.set_page_load_timeout(60)
    wd.set_script_timeout(30)
    return wd, profile


def wait_for(wd, check, timeout=60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(wd, timeout, poll_frequency=0.1).until(lambda d: check(d))


def body_text(wd):
    # By script: the page replaces itself while it is read.
    return wd.execute_script("return document.body ? document.body.innerText : ''")


@needs_chromium
def test_chromium_without_cookies_is_told_they_are_needed(edge):
    """Cookies blocked (the settings' "Block all cookies"): the page is
    solved twice, the return hop sees no cookie either time, and the person
    reads that cookies are needed; no third solve, no loop."""
    port, nginx = edge[0], edge[2]
    before = nginx.error_log.count("edgeguard challenge=solved")
    wd, profile = chromium({"profile.default_content_setting_values.cookies": 2})
    try:
        wd.get(f"http://127.0.0.1:{port}/strict/nocookies")
        wait_for(wd, lambda d: "Cookies are needed" in body_text(d))
        text = body_text(wd)
        assert "Allow cookies" in text, text
        time.sleep(1)  # nothing more happens: the page asks no more work
        assert "Cookies are needed" in body_text(wd)
    finally:
        wd.quit()
        shutil.rmtree(profile, ignore_errors=True)
    log = nginx.error_log
    assert log.count("edgeguard challenge=solved") - before == 2
    assert "edgeguard challenge=cookies_needed" in log


@needs_chromium
def test_a_challenged_fetch_gets_problem_json(edge):
    """A page that is not challenged calls fetch() on a challenged URL: the
    script gets a 403 with application/problem+json it can read (reason,
    reference, where to clear), not the HTML page."""
    port = edge[0]
    wd, profile = chromium()
    try:
        wd.get(f"http://127.0.0.1:{port}/open/app")
        assert wd.title == "origin"
        got = wd.execute_async_script("""
            const done = arguments[arguments.length - 1];
            fetch('/strict/api/cart', {headers: {'Accept': 'application/json'}})
              .then(r => r.text().then(t => done([r.status, r.headers.get('content-type'), t])))
              .catch(e => done(['error', String(e), '']));
        """)
    finally:
        wd.quit()
        shutil.rmtree(profile, ignore_errors=True)
    status, ctype, text = got
    assert (status, ctype) == (403, "application/problem+json"), got
    doc = __import__("json").loads(text)
    assert doc["reason"] == "challenge_required" and re.fullmatch(r"[0-9a-f]{32}", doc["reference"])
    # Back to the page the call came from once cleared.
    assert doc["clear"] == "/.edgeguard/challenge?r=%2Fopen%2Fapp"


@needs_chromium
def test_a_cleared_persons_cross_site_form_post_passes_over_tls(edge):
    """Cleared on https://shop.test, then a form on https://pay.test posts
    back to shop.test (a payment's return): the clearance cookie
    (SameSite=None; Secure on TLS) goes along, the POST is cleared and its
    body reaches the origin."""
    tls_port = edge[1]
    shop, pay = f"https://shop.test:{tls_port}", f"https://pay.test:{tls_port}"
    wd, profile = chromium(extra=("--host-resolver-rules=MAP shop.test 127.0.0.1, MAP pay.test 127.0.0.1",
                                  "--ignore-certificate-errors"))
    try:
        wd.get(shop + "/strict/cart")
        wait_for(wd, lambda d: d.title == "origin")
        assert wd.find_element("id", "a").text == "cleared"
        cookie = next(c for c in wd.get_cookies() if c["name"] == "edgeguard_clearance")
        assert cookie["secure"] and cookie.get("sameSite") == "None", cookie
        wd.get(pay + "/open/form?to=" + shop + "/strict/return")
        assert wd.title == "form"
        wd.execute_script("document.getElementById('f').submit()")
        wait_for(wd, lambda d: d.title == "origin" and "/strict/return" in d.current_url)
        assert wd.find_element("id", "a").text == "cleared"
        assert wd.find_element("id", "m").text == "POST"
        assert wd.find_element("id", "b").text == "code=xyz"
    finally:
        wd.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.skipif(not LYNX, reason="needs lynx (make deps-test)")
def test_lynx_passes_through_the_no_javascript_fallback(edge, tmp_path):
    """lynx runs no JavaScript: it shows the <noscript> text and its link;
    followed after the wait, the link gives the weaker clearance, with
    which lynx reaches the origin."""
    port, nginx = edge[0], edge[2]
    jar = tmp_path / "cookies"
    jar.touch()
    # Debian's lynx keeps cookies only for a session unless told otherwise.
    cfg = tmp_path / "lynx.cfg"
    cfg.write_text("INCLUDE:/etc/lynx/lynx.cfg\nPERSISTENT_COOKIES:TRUE\n")
    lynx = [LYNX, f"-cfg={cfg}", "-dump", "-width=4096", "-accept_all_cookies", f"-cookie_file={jar}",
            f"-cookie_save_file={jar}",
            "-useragent=Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9"]
    url = f"http://127.0.0.1:{port}/strict/text"
    page = subprocess.run(lynx + [url], capture_output=True, text=True, timeout=60).stdout
    assert "JavaScript is off" in page, page
    m = re.search(r"(http://127\.0\.0\.1:\d+/\.edgeguard/challenge\?t=\S+)", page)
    assert m, page
    time.sleep(NOJS_WAIT + 0.5)
    out = subprocess.run(lynx + [m.group(1)], capture_output=True, text=True, timeout=60).stdout
    assert "cleared" in out, out
    assert "edgeguard_clearance" in jar.read_text()
    out = subprocess.run(lynx + [url], capture_output=True, text=True, timeout=60).stdout
    assert "cleared" in out and "GET" in out, out
    assert "edgeguard challenge=waited" in nginx.error_log
