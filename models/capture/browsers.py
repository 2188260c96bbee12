"""Browser sessions of the capture: Debian's Chromium through chromium-driver
(Selenium) and Debian's Firefox ESR through Marionette, headful under Xvfb
and headless, on fresh profiles, making the flows a person makes.

The flows are WebDriver actions (navigate, click, type, back, refresh); the
requests are the browser's own: page loads, their sub-resources, the page
script's fetch() calls (site/static/app.js), favicons, redirects.
"""

import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time

from marionette import Marionette

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox") or "/usr/bin/firefox-esr"
XVFB = shutil.which("Xvfb") or "/usr/bin/Xvfb"

GERMAN = "de-DE,de,en-US,en"
USER = "ada@example.org"
PASSWORD = "correct horse"


def full_flow(base):
    """What a person does on a first visit and after, in order."""
    return [
        ("typed", lambda d: d.get(base + "/")),  # typed URL / bookmark: no cookie, no referrer
        ("reload", lambda d: d.refresh()),
        ("link", lambda d: d.click("#product")),
        ("back", lambda d: d.back()),
        ("form-get", lambda d: (d.type("#q", "walking shoes"), d.click("#go"))),
        ("link", lambda d: d.click("#login")),
        ("form-post", lambda d: (d.type("#user", USER), d.type("#pass", PASSWORD), d.click("#submit"))),
        ("second-visit", lambda d: d.get(base + "/")),  # typed again, with the site's cookies
        # The browser closed and opened again on the same profile: stored
        # cookies, a warm cache, new connections.
        ("return-visit", lambda d: (d.restart(), d.get(base + "/"))),
    ]


def private_flow(base):
    return [
        ("typed", lambda d: d.get(base + "/")),
        ("link", lambda d: d.click("#product")),
        ("form-get", lambda d: (d.get(base + "/"), d.type("#q", "rain jacket"), d.click("#go"))),
    ]


def scrape_flow(base):
    """A Selenium scraper: every page by URL, one after the other."""
    return [("scrape", (lambda p: lambda d: d.get(base + p))(p))
            for p in ("/", "/products/42", "/products/7", "/search?q=shoes", "/login")]


class Xvfb:
    """One X server for every headful browser of the capture."""

    def __init__(self):
        self.proc = None
        self.display = None

    def ensure(self):
        if self.proc and self.proc.poll() is None:
            return self.display
        n = 90
        while os.path.exists(f"/tmp/.X11-unix/X{n}") or os.path.exists(f"/tmp/.X{n}-lock"):
            n += 1
        self.proc = subprocess.Popen([XVFB, f":{n}", "-screen", "0", "1366x768x24", "-nolisten", "tcp"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while not os.path.exists(f"/tmp/.X11-unix/X{n}"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("Xvfb did not start")
            time.sleep(0.1)
        self.display = f":{n}"
        return self.display

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


XSERVER = Xvfb()


class ChromiumDriver:
    def __init__(self, headless, private, user_agent=None, languages=None):
        self.profile = tempfile.mkdtemp(prefix="edgeguard-chromium-")
        self.args = (headless, private, user_agent, languages)
        try:
            self._start()
        except BaseException:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise

    def _start(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        headless, private, user_agent, languages = self.args
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in chromium_flags(self.profile):
            opts.add_argument(a)
        if headless:
            opts.add_argument("--headless=new")
        if private:
            opts.add_argument("--incognito")
        if user_agent:
            opts.add_argument("--user-agent=" + user_agent)
        if languages:  # the languages a person picked in the settings
            opts.add_experimental_option("prefs", {"intl.accept_languages": languages})
        opts.accept_insecure_certs = True
        env = dict(os.environ)
        if not headless:
            env["DISPLAY"] = XSERVER.ensure()
        service = Service(executable_path=CHROMEDRIVER, env=env)
        self.wd = webdriver.Chrome(service=service, options=opts)
        self.wd.set_page_load_timeout(60)
        self.version = self.wd.capabilities.get("browserVersion", "unknown")

    def get(self, url):
        self.wd.get(url)

    def click(self, css):
        from selenium.webdriver.common.by import By

        self.wd.find_element(By.CSS_SELECTOR, css).click()

    def type(self, css, text):
        from selenium.webdriver.common.by import By

        self.wd.find_element(By.CSS_SELECTOR, css).send_keys(text)

    def back(self):
        self.wd.back()

    def refresh(self):
        self.wd.refresh()

    def user_agent(self):
        return self.wd.execute_script("return navigator.userAgent")

    def restart(self):
        """Closes the browser and opens it again on the same profile."""
        self.wd.quit()
        self._start()

    def quit(self):
        try:
            self.wd.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


def chromium_flags(profile):
    return [
        "--no-sandbox",  # root
        "--disable-dev-shm-usage",
        # A closed network: nothing but the test origins.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--password-store=basic",
        "--ignore-certificate-errors",  # the self-signed test certificate
        "--host-resolver-rules=MAP shop.test 127.0.0.1, MAP api.test 127.0.0.1, "
        "MAP shop-h1.test 127.0.0.2, MAP api-h1.test 127.0.0.2",
        "--window-size=1280,800",
        "--user-data-dir=" + profile,
    ]


FIREFOX_PREFS = {
    # A fresh profile that talks to nobody but the test origins.
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "browser.startup.homepage": "about:blank",
    "startup.homepage_welcome_url": "",
    "startup.homepage_welcome_url.additional": "",
    "browser.aboutwelcome.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.unified": False,
    "toolkit.telemetry.server": "",
    "app.update.enabled": False,
    "app.update.auto": False,
    "app.normandy.enabled": False,
    "app.shield.optoutstudies.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.safebrowsing.provider.google4.updateURL": "",
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "extensions.systemAddon.update.enabled": False,
    "browser.newtabpage.enabled": False,
    "browser.newtabpage.activity-stream.feeds.topsites": False,
    "browser.topsites.contile.enabled": False,
    "browser.discovery.enabled": False,
    "browser.region.network.url": "",
    "browser.region.update.enabled": False,
    "services.settings.server": "http://127.0.0.1:9/",
    "media.gmp-manager.url": "",
    "media.gmp-gmpopenh264.enabled": False,
    "network.trr.mode": 5,
    "browser.ping-centre.telemetry": False,
    "browser.contentblocking.report.lockwise.enabled": False,
    "identity.fxaccounts.enabled": False,
    "signon.rememberSignons": False,  # no password-save doorhanger over the flow
    "dom.disable_open_during_load": True,
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class FirefoxDriver:
    def __init__(self, headless, private, have_hosts, languages=None):
        self.profile = tempfile.mkdtemp(prefix="edgeguard-firefox-")
        self.args = (headless, private, have_hosts, languages)
        self.proc = None
        try:
            self._start()
        except BaseException:
            # A browser that started but could not be driven is ended here:
            # the session's cleanup only knows drivers that were made.
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
            raise

    def _start(self):
        headless, private, have_hosts, languages = self.args
        port = free_port()
        prefs = dict(FIREFOX_PREFS, **{"marionette.port": port})
        if languages:  # the languages a person picked in the settings
            prefs["intl.accept_languages"] = languages
        if private:
            prefs["browser.privatebrowsing.autostart"] = True
        if not have_hosts:
            prefs["network.dns.localDomains"] = "shop.test,api.test"
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            for k, v in prefs.items():
                val = ("true" if v else "false") if isinstance(v, bool) else (str(v) if isinstance(v, int) else '"%s"' % v)
                f.write(f'user_pref("{k}", {val});\n')
        env = dict(os.environ, MOZ_CRASHREPORTER_DISABLE="1")
        args = [FIREFOX, "--marionette", "--no-remote", "--profile", self.profile]
        if headless:
            args.append("--headless")
        else:
            env["DISPLAY"] = XSERVER.ensure()
        args.append("about:blank")
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.m = Marionette(port)
        # Marionette takes the capabilities as the parameters themselves
        # (geckodriver unwraps W3C's alwaysMatch before it calls Firefox).
        caps = self.m.call("WebDriver:NewSession", {"acceptInsecureCerts": True, "pageLoadStrategy": "normal"})
        caps = caps.get("capabilities", caps)
        if not caps.get("acceptInsecureCerts"):
            raise RuntimeError("Marionette session does not accept the self-signed certificate")
        self.version = caps.get("browserVersion", "unknown")
        self.m.call("WebDriver:SetTimeouts", {"pageLoad": 60000, "implicit": 5000, "script": 30000})

    def get(self, url):
        self.m.call("WebDriver:Navigate", {"url": url})

    def _find(self, css):
        el = self.m.call("WebDriver:FindElement", {"using": "css selector", "value": css})
        return el[ELEMENT] if isinstance(el, dict) else el

    def click(self, css):
        self.m.call("WebDriver:ElementClick", {"id": self._find(css)})

    def type(self, css, text):
        self.m.call("WebDriver:ElementSendKeys", {"id": self._find(css), "text": text})

    def back(self):
        self.m.call("WebDriver:Back")

    def refresh(self):
        self.m.call("WebDriver:Refresh")

    def user_agent(self):
        return self.m.call("WebDriver:ExecuteScript", {"script": "return navigator.userAgent", "args": []})

    def _stop(self):
        try:
            # eAttemptQuit: a normal quit, which writes cookies and cache.
            self.m.call("Marionette:Quit", {"flags": ["eAttemptQuit"]})
        except Exception:
            pass
        self.m.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def restart(self):
        """Closes the browser and opens it again on the same profile."""
        self._stop()
        self._start()

    def quit(self):
        try:
            self._stop()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


class BrowserSession:
    def __init__(self, sid, labels, make_driver, flow, base):
        self.id = sid
        self.labels = dict(labels, session=sid)
        self.make_driver = make_driver
        self.flow = flow
        self.base = base
        self.driver = None

    def run(self, rec):
        rec.begin(self.labels)
        self.driver = self.make_driver()
        # Whatever the browser fetches at start-up on its own (nothing, if
        # the profile is quiet) belongs to no flow: say so in the corpus.
        rec.take("startup", rec.mark, rec.server.settle(rec.quiet))
        for flow, action in self.flow(self.base):
            rec.step(flow, lambda: action(self.driver))
        return self.driver.version

    def cleanup(self):
        if self.driver is not None:
            self.driver.quit()
            self.driver = None


def desktop_ua(version):
    """The User-Agent headful Chromium on Linux sends (Chromium reduces it
    to the major version)."""
    major = version.split(".")[0]
    return f"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"


def chromium_version():
    try:
        out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=60).stdout
        return out.split()[1]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "0"


def sessions(server, have_hosts):
    out = []
    origins = ("ip", "http-host", "tls-h1", "tls-h2")
    for browser in ("chromium", "firefox"):
        for mode in ("headful", "headless"):
            for origin in origins:
                headless = mode == "headless"
                if browser == "chromium":
                    # Headless Chromium says so in its User-Agent
                    # (HeadlessChrome): automation whose bytes differ.
                    label, cls = ("automated", "headless") if headless else ("human", "human")
                    make = (lambda h: lambda: ChromiumDriver(h, False))(headless)
                    driver = "chromedriver"
                else:
                    # Headless Firefox sends what headful Firefox sends
                    # (checked in the corpus README): automation that a
                    # head cannot tell apart, a row of its own.
                    label, cls = ("automated", "byte-identical") if headless else ("human", "human")
                    make = (lambda h: lambda: FirefoxDriver(h, False, have_hosts))(headless)
                    driver = "marionette"
                sid = f"{browser}-{mode}-{origin}"
                labels = {"label": label, "class": cls, "client_name": browser, "mode": mode,
                          "window": "normal", "driver": driver, "origin": origin}
                out.append(BrowserSession(sid, labels, make, full_flow, server.base(origin)))
    for origin in ("ip", "tls-h2"):
        out.append(BrowserSession(
            f"chromium-headful-private-{origin}",
            {"label": "human", "class": "human", "client_name": "chromium", "mode": "headful", "window": "private",
             "driver": "chromedriver", "origin": origin},
            lambda: ChromiumDriver(False, True), private_flow, server.base(origin)))
        out.append(BrowserSession(
            f"firefox-headful-private-{origin}",
            {"label": "human", "class": "human", "client_name": "firefox", "mode": "headful", "window": "private",
             "driver": "marionette", "origin": origin},
            lambda: FirefoxDriver(False, True, have_hosts), private_flow, server.base(origin)))
    # People who read German first: the same browsers with the languages
    # set in their settings (Accept-Language is theirs, not en-US).
    for origin in ("http-host", "tls-h2"):
        out.append(BrowserSession(
            f"chromium-headful-de-{origin}",
            {"label": "human", "class": "human", "client_name": "chromium", "mode": "headful", "window": "normal",
             "driver": "chromedriver", "origin": origin},
            lambda: ChromiumDriver(False, False, languages=GERMAN), full_flow, server.base(origin)))
        out.append(BrowserSession(
            f"firefox-headful-de-{origin}",
            {"label": "human", "class": "human", "client_name": "firefox", "mode": "headful", "window": "normal",
             "driver": "marionette", "origin": origin},
            lambda: FirefoxDriver(False, False, have_hosts, languages=GERMAN), full_flow, server.base(origin)))
    ua = desktop_ua(chromium_version())
    for origin in ("ip", "http-host", "tls-h2"):
        out.append(BrowserSession(
            f"chromium-headless-desktop-ua-{origin}",
            {"label": "automated", "class": "byte-identical", "client_name": "chromium-headless-desktop-ua",
             "mode": "headless", "window": "normal", "driver": "chromedriver", "origin": origin},
            lambda: ChromiumDriver(True, False, user_agent=ua), full_flow, server.base(origin)))
        out.append(BrowserSession(
            f"selenium-chromium-headful-{origin}",
            {"label": "automated", "class": "byte-identical", "client_name": "selenium-chromium",
             "mode": "headful", "window": "normal", "driver": "chromedriver", "origin": origin},
            lambda: ChromiumDriver(False, False), scrape_flow, server.base(origin)))
    return out


def stop():
    XSERVER.stop()
