"""People: real browser sessions on the crawl harness's site, recorded once
into tests/e2e/data/behaviour/, replayed at scale over raw sockets.

Recording (`python tests/e2e/behaviour_people.py record`): Chromium
(Selenium, headful under Xvfb) and Firefox ESR (Marionette, headful) on
fresh profiles walk the site in the SESSIONS below, against the harness's
nginx with the gate in log mode and resty.edgeguard.record capturing each
request's header array as it arrived. Every request is kept with its
step (what the person did), the time since the step began, and its head
(method, target, header array in order and letter case). Epiphany
(GNOME Web, WebKitGTK) through WebKitWebDriver, in its default settings
only (`record epiphany` records it alone).

Replay (`replay_people`): each simulated person takes a recorded session
and a head variant (browser version and Accept-Language, as a population
of real browsers differs), and sends the session's requests over its own
keep-alive connection, from one address (127.0.0.1: everyone behind one
NAT), in the recorded order, with the recorded delays inside a step. The
gap between a person's steps (reading) is not in the recording (a driver
does not read): it is drawn from a log-normal (median READ_MEDIAN s,
sigma READ_SIGMA, clipped to 2 s .. 300 s; tabs are opened 0.5 to 3 s
apart, an app's API calls come at most 10 s apart), on nginx's clock (the
site's speed). Cookies follow the recorded browser: a session whose browser sent
cookies sends its jar (everything the site set in this replay, the memory's
cookie included); one recorded with cookies blocked sends none.
"""

import hashlib
import json
import math
import os
import pathlib
import random
import re
import socket
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = HERE / "data" / "behaviour"
READ_MEDIAN = 20.0
READ_SIGMA = 1.0

# Versions a population of one engine spans, and languages people pick.
CHROME_VERSIONS = tuple(range(148, 157))
FIREFOX_VERSIONS = (128, 140, 145, 146, 147)
LANGUAGES = ("en-US,en;q=0.9", "de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7", "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7",
             "en-GB,en;q=0.9", "es-ES,es;q=0.9", "pl-PL,pl;q=0.9,en-US;q=0.8,en;q=0.7")
FIREFOX_LANGUAGES = ("en-US,en;q=0.5", "de,en-US;q=0.7,en;q=0.3", "fr,fr-FR;q=0.8,en-US;q=0.5,en;q=0.3",
                     "en-GB,en;q=0.5", "es-ES,es;q=0.8,en-US;q=0.5,en;q=0.3")


# --- recording -----------------------------------------------------------

def _steps(name):
    """A session's steps: (what, argument). `get` types a URL, `click`
    follows the link of that id, `back`/`forward` use history, `tab` opens
    a URL in a new tab, `api` runs fetch() calls from the page (a
    single-page app after its one navigation)."""
    s = {
        "cold": [("get", "/"), ("click", "nav-blog"), ("click", "next-post"), ("click", "nav-shoes"),
                 ("click", "nav-docs"), ("click", "nav-forum"), ("click", "nav-news"), ("click", "logo")],
        "backforward": [("get", "/"), ("click", "nav-blog"), ("click", "to-shoes"), ("back", ""), ("back", ""),
                        ("forward", ""), ("click", "nav-docs"), ("back", "")],
        "tabs": [("get", "/"), ("tab", "/blog/2024/05/post-title"), ("tab", "/en-us/products/shoes/"),
                 ("tab", "/docs/v2/getting-started.html"), ("tab", "/forum/thread/88123?page=4"),
                 ("tab", "/news/world/2026/12/03/storm-closes-alpine-passes-as-snow-arrives-early"),
                 ("tab", "/products/1007"), ("tab", "/products/1123")],
        "spa": [("get", "/en-us/products/shoes/air-max-90?color=red&size=10")] + [("api", str(i)) for i in range(12)],
    }
    return s[name]


SPA_CALLS = ("/api/stock", "/api/reviews", "/api/cart", "/api/stock?size=9", "/api/reviews?page=2", "/api/cart")


class Recorder:
    def __init__(self, site, driver, browser):
        self.site = site
        self.driver = driver
        self.browser = browser
        self.base = f"http://127.0.0.1:{site.port}"

    def step(self, what, arg):
        d = self.driver
        if what == "get":
            d.get(self.base + arg)
        elif what == "click":
            d.click(arg)
        elif what == "back":
            d.back()
        elif what == "forward":
            d.forward()
        elif what == "tab":
            self.new_tab(self.base + arg)
        elif what == "api":
            path = SPA_CALLS[int(arg) % len(SPA_CALLS)]
            self.script(f"fetch('{path}', {{headers: {{'Content-Type': 'application/json'}}}}).then(r => r.text());"
                        " return 1;")
        time.sleep(1.5)  # the page's requests land (and its fetch() calls) before the next step

    def script(self, js):
        d = self.driver
        if hasattr(d, "wd"):
            return d.wd.execute_script(js)
        return d.m.call("WebDriver:ExecuteScript", {"script": js, "args": []})

    def new_tab(self, url):
        d = self.driver
        if hasattr(d, "wd"):
            d.wd.switch_to.new_window("tab")
            d.wd.get(url)
        else:
            got = d.m.call("WebDriver:NewWindow", {"type": "tab"})
            d.m.call("WebDriver:SwitchToWindow", {"handle": got["handle"], "name": got["handle"]})
            d.get(url)

    def run(self, name, steps):
        marks = []
        for what, arg in steps:
            marks.append((time.time(), what, arg))
            self.step(what, arg)
        time.sleep(1.0)
        marks.append((time.time(), "end", ""))
        return marks


def session_of(log_rows, marks, name, browser, variant):
    """The recorded session: each step's requests, times relative to the
    step's start; heads as nginx saw them."""
    steps = []
    for (t0, what, arg), (t1, _, _) in zip(marks, marks[1:]):
        reqs = []
        for r in log_rows:
            if t0 <= r["t"] < t1:
                reqs.append({"dt": round(r["t"] - t0, 3), "method": r["method"], "target": r["uri"],
                             "version": r["version"], "headers": r["headers"], "status": r["status"]})
        steps.append({"what": what, "arg": arg, "requests": reqs})
    cookies = "blocked" if variant == "cookies-blocked" else "allowed"
    return {"name": name, "browser": browser, "variant": variant, "cookies": cookies, "steps": steps}


def record(out=DATA, browsers_wanted=("chromium", "firefox", "epiphany")):
    sys.path.insert(0, str(HERE))
    import behaviour_site

    sys.path.insert(0, str(ROOT / "models" / "capture"))
    saved = sys.modules.get("sitemap")
    sys.modules["sitemap"] = behaviour_site.sitemap
    import browsers
    if saved is not None:
        sys.modules["sitemap"] = saved

    out.mkdir(parents=True, exist_ok=True)
    plans = []
    for browser in browsers_wanted:
        for name in ("cold", "backforward", "tabs", "spa"):
            plans.append((browser, name, "default"))
        # Epiphany's settings are GSettings keys WebKitWebDriver's
        # automation mode does not take: its default settings only.
        for variant in VARIANTS if browser != "epiphany" else ():
            if variant != "default":
                plans.append((browser, "cold", variant))
    for browser, name, variant in plans:
        site = behaviour_site.Site(options="", mode="log", record=True, workers=1).start()
        try:
            driver = _driver(browsers, browser, variant)
            rec = Recorder(site, driver, browser)
            try:
                marks = rec.run(name, _steps(name))
                if (name, variant) == ("cold", "default"):
                    # The same person comes back: the same profile, its
                    # cache and cookies warm.
                    time.sleep(0.5)
                    warm = rec.run("warm", _steps("cold"))
                else:
                    warm = None
            finally:
                driver.quit()
        finally:
            site.stop()
        rows = site.log()
        site.cleanup()
        sessions = [session_of(rows, marks, name, browser, variant)]
        if warm:
            sessions.append(session_of(rows, warm, "warm", browser, variant))
        for s in sessions:
            tag = f"{browser}-{s['name']}" + ("" if variant == "default" else f"-{variant}")
            base = f"127.0.0.1:{site.port}"
            text = json.dumps(s, indent=None).replace(base, "{host}")
            (out / f"{tag}.json").write_text(text + "\n")
            n = sum(len(st["requests"]) for st in s["steps"])
            print(f"{tag}: {len(s['steps'])} steps, {n} requests")


# A person's settings: cookies blocked (all, or third-party only: the same
# for this first-party site, recorded to show it), or a reader's browser
# that loads neither images nor scripts (documents, stylesheets, fonts).
VARIANTS = {
    "default": ({}, {}),
    "cookies-blocked": ({"profile.default_content_setting_values.cookies": 2},
                        {"network.cookie.cookieBehavior": 2}),
    "third-party-blocked": ({"profile.block_third_party_cookies": True},
                            {"network.cookie.cookieBehavior": 1}),
    "no-images-no-js": ({"profile.managed_default_content_settings.images": 2,
                         "profile.managed_default_content_settings.javascript": 2},
                        {"permissions.default.image": 2, "javascript.enabled": False}),
}


def _driver(browsers, browser, variant):
    chromium_prefs, firefox_prefs = VARIANTS[variant]
    if browser == "epiphany":
        import desktop  # models/capture: Epiphany through WebKitWebDriver

        return desktop.WebKitDriver()
    if browser == "firefox":
        saved = dict(browsers.FIREFOX_PREFS)
        browsers.FIREFOX_PREFS.update(firefox_prefs)
        try:
            return browsers.FirefoxDriver(headless=False, private=False, hosts=None)
        finally:
            browsers.FIREFOX_PREFS.clear()
            browsers.FIREFOX_PREFS.update(saved)
    if not chromium_prefs:
        return browsers.ChromiumDriver(headless=False, private=False)
    # ChromiumDriver's start with these settings in the profile's prefs.
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    d = browsers.ChromiumDriver.__new__(browsers.ChromiumDriver)
    d.profile = tempfile.mkdtemp(prefix="edgeguard-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browsers.CHROMIUM
    for a in browsers.chromium_flags(d.profile):
        opts.add_argument(a)
    opts.add_experimental_option("prefs", chromium_prefs)
    opts.accept_insecure_certs = True
    env = dict(os.environ, DISPLAY=browsers.XSERVER.ensure())
    d.wd = webdriver.Chrome(service=Service(executable_path=browsers.CHROMEDRIVER, env=env), options=opts)
    d.wd.set_page_load_timeout(60)
    return d


# --- replay --------------------------------------------------------------

NONCE = re.compile(rb'\{"n":"([A-Za-z0-9_-]{104})","d":(\d+)')


def leading_zero_bits(data):
    n = 0
    for b in hashlib.sha256(data).digest():
        if b == 0:
            n += 8
            continue
        return n + 8 - b.bit_length()
    return n


def load_sessions(data=DATA):
    return [json.loads(p.read_text()) for p in sorted(data.glob("*.json"))]


def variant(session, i, rng):
    """Person i's head edits: a browser version and a language, as real
    browsers of one engine differ. Returns a function of a header array."""
    if session["browser"] == "chromium":
        v = rng.choice(CHROME_VERSIONS)
        lang = rng.choice(LANGUAGES)

        def edit(name, value):
            low = name.lower()
            if low == "user-agent":
                return value.replace("Chrome/156.", f"Chrome/{v}.")
            if low == "sec-ch-ua":
                return value.replace('v="156"', f'v="{v}"')
            if low == "accept-language":
                return lang
            return value
    elif session["browser"] == "epiphany":
        # One recording, one WebKitGTK build: its head as it was (its
        # version token follows the engine, its languages their own
        # format).
        def edit(name, value):
            return value
    else:
        v = rng.choice(FIREFOX_VERSIONS)
        lang = rng.choice(FIREFOX_LANGUAGES)

        def edit(name, value):
            low = name.lower()
            if low == "user-agent":
                return re.sub(r"(rv:|Firefox/)\d+\.0", lambda m: f"{m.group(1)}{v}.0", value)
            if low == "accept-language":
                return lang
            return value
    return edit


class Person:
    """One simulated person replaying one recorded session."""

    def __init__(self, site, session, index, rng, source="127.0.0.1"):
        self.site = site
        self.session = session
        self.index = index
        self.rng = rng
        self.edit = variant(session, index, rng)
        self.jar = {}
        self.sock = None
        self.source = source
        self.host = f"127.0.0.1:{site.port}"
        self.answers = []  # (step, target, status, action, reasons)
        self.solved = []  # (target, the status after solving)
        self.set_cookies = []  # every Set-Cookie the person was sent, as sent
        self.client = []  # X-Edgeguard-Client of each answer (the memory's variables)

    def connect(self):
        self.sock = socket.create_connection(("127.0.0.1", self.site.port), timeout=20,
                                             source_address=(self.source, 0))
        self.buf = b""

    def head(self, req):
        lines = [f"{req['method']} {req['target'].replace('{host}', self.host)} {req['version'] or 'HTTP/1.1'}"]
        had_cookie = False
        for name, value in req["headers"]:
            value = value.replace("{host}", self.host)
            if name.lower() == "cookie":
                had_cookie = True
                if self.session["cookies"] == "blocked" or not self.jar:
                    continue
                value = "; ".join(f"{k}={v}" for k, v in self.jar.items())
            elif name.lower() in ("content-length",):
                continue
            lines.append(f"{name}: {self.edit(name, value)}")
        if not had_cookie and self.jar and self.session["cookies"] != "blocked":
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.jar.items()))
        body = b""
        if req["method"] == "POST":
            lines.append("Content-Length: 0")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def exchange(self, req):
        for attempt in range(2):
            if self.sock is None:
                self.connect()
            try:
                self.sock.sendall(self.head(req))
                return self.read(req["method"])
            except (OSError, ConnectionError):
                self.sock.close()
                self.sock = None
                if attempt:
                    raise

    def read(self, method):
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = []
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.append((k.strip().lower(), v.strip()))
        h = dict(headers)
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            body, self.buf = b"", rest
        elif "content-length" in h:
            n = int(h["content-length"])
            while len(rest) < n:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed mid-body")
                rest += chunk
            body, self.buf = rest[:n], rest[n:]
        elif h.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                while b"\r\n" not in rest:
                    rest += self.sock.recv(65536)
                size_line, _, rest = rest.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                while len(rest) < size + 2:
                    rest += self.sock.recv(65536)
                body += rest[:size]
                rest = rest[size + 2:]
                if size == 0:
                    break
            self.buf = rest
        else:
            body = rest
            while chunk := self.sock.recv(65536):
                body += chunk
            self.sock.close()
            self.sock = None
            self.buf = b""
        for k, v in headers:
            if k == "set-cookie":
                self.set_cookies.append(v)
            if k == "set-cookie" and self.session["cookies"] != "blocked":
                name, _, value = v.split(";", 1)[0].partition("=")
                self.jar[name.strip()] = value.strip()
        if h.get("connection", "").lower() == "close" and self.sock is not None:
            self.sock.close()
            self.sock = None
        return status, h, body

    def solve(self, req, body):
        """What the challenge page's script does in the browser: the work,
        the answer, the hops back to the page (tests/e2e/test_challenge.py's
        flow). Adds (target, final status) to self.solved."""
        m = NONCE.search(body)
        nonce, difficulty = m.group(1).decode(), int(m.group(2))
        counter = 0
        while leading_zero_bits(f"{nonce}:{counter}".encode()) < difficulty:
            counter += 1
        target = "/.edgeguard/challenge?n=%s&c=%d&r=%s" % (nonce, counter,
                                                           urllib.parse.quote(req["target"], safe=""))
        status = None
        for _ in range(4):
            status, h, _ = self.exchange(dict(req, target=target, method="GET"))
            if status not in (301, 302, 303, 307) or "location" not in h:
                break
            target = h["location"]
            if target.startswith("http"):
                target = "/" + target.split("/", 3)[3]
        self.solved.append((req["target"], status))

    def run(self, start_delay):
        speed = self.site.speed
        time.sleep(start_delay / speed)
        for n, step in enumerate(self.session["steps"]):
            if step["what"] == "end":
                break
            if n:
                gap = min(300.0, max(2.0, math.exp(math.log(READ_MEDIAN) + READ_SIGMA * self.rng.gauss(0, 1))))
                if step["what"] == "api":
                    gap = min(gap, 10.0)  # an app's calls follow the person's clicks in it
                elif step["what"] == "tab":
                    gap = self.rng.uniform(0.5, 3.0)  # links opened in tabs in a burst, read later
                time.sleep(gap / speed)
            t0 = time.monotonic()
            for req in step["requests"]:
                delay = t0 + req["dt"] / speed - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                status, h, body = self.exchange(req)
                self.answers.append((n, req["target"], status, h.get("x-edgeguard-action", ""),
                                     h.get("x-edgeguard-reasons", "")))
                self.client.append(h.get("x-edgeguard-client", ""))
                # The page's script solves it; a browser with JavaScript off
                # cannot (the no-JS fallback is not configured here).
                if (status == 403 and h.get("x-edgeguard-action") == "challenge" and NONCE.search(body)
                        and self.session["variant"] != "no-images-no-js"):
                    self.solve(req, body)
        if self.sock is not None:
            self.sock.close()


def replay_people(site, count=200, seed=39, arrivals=120.0, source="127.0.0.1", sessions=None):
    """`count` people, round robin over the recorded sessions, arriving over
    `arrivals` seconds (nginx's clock), all from `source`. Returns the
    people (their answers)."""
    sessions = sessions or load_sessions()
    if not sessions:
        raise AssertionError(f"no recorded sessions in {DATA}")
    rng = random.Random(seed)
    people = [Person(site, sessions[i % len(sessions)], i, random.Random(rng.random()), source)
              for i in range(count)]
    errors = []

    def run(p, delay):
        try:
            p.run(delay)
        except Exception as e:  # reported: the caller asserts there is none
            errors.append(f"person {p.index} ({p.session['browser']}-{p.session['name']}): {e!r}")

    threads = [threading.Thread(target=run, args=(p, rng.uniform(0, arrivals))) for p in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise AssertionError("people sessions failed:\n" + "\n".join(errors[:10]))
    return people


def outcome(person):
    """'blocked', 'challenged' (solved or not) or 'passed': the worst
    answer a person got."""
    actions = {a for _, _, _, a, _ in person.answers}
    if "block" in actions:
        return "blocked"
    # challenge_required: a challenge served as a problem document (a
    # stylesheet, a fetch()), not a block.
    if actions & {"challenge", "challenge_required"}:
        return "challenged"
    return "passed"


def solved_all(person):
    """Every challenge the person met was solved (the page came back)."""
    challenged = [a for a in person.answers if a[3] == "challenge"]
    return len(person.solved) == len(challenged) and all(st in (200, 304) for _, st in person.solved)


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        record(**({"browsers_wanted": tuple(sys.argv[2:])} if sys.argv[2:] else {}))
    else:
        sys.exit("usage: behaviour_people.py record [chromium|firefox|epiphany ...]")
