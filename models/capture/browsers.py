"""Browser sessions of the capture: every engine Debian ships that a person
uses, on fresh profiles, making the flows a person makes (flows.py).

- Chromium (desktop, and with Chromium's mobile device emulation) through
  chromium-driver (Selenium);
- Firefox ESR (as installed, and with privacy.resistFingerprinting)
  through Marionette;
- Epiphany (WebKitGTK), Falkon and qutebrowser (QtWebEngine): desktop.py.

Headful browsers run under Xvfb (display.py); the automated sessions
(headless Chromium and Firefox, Selenium scraping) run beside them. The
flows are a driver's actions (navigate, click, type, back, reload); the
requests are the browser's own: page loads, their sub-resources, the page
scripts' fetch() and XHR calls, media ranges, downloads, favicons,
redirects.
"""

import os
import shutil
import socket
import subprocess
import tempfile

import desktop
import display
import flows
from marionette import Marionette

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox") or "/usr/bin/firefox-esr"

# Accept-Language profiles: the languages a person picked in the browser's
# settings (Chromium, Firefox, qutebrowser) or the desktop's language
# (Epiphany and Falkon take theirs from LANG/LANGUAGE).
LANGUAGES = {
    "en-US": {"prefs": None, "lang": "en_US.UTF-8", "language": None},
    "de-DE": {"prefs": "de-DE,de,en-US,en", "lang": "de_DE.UTF-8", "language": "de_DE:de:en_US:en"},
    "fr-FR": {"prefs": "fr-FR,fr,en-US,en", "lang": "fr_FR.UTF-8", "language": "fr_FR:fr:en_US:en"},
}
USER = "ada@example.org"
PASSWORD = "correct horse"
# Chromium's emulation of a real phone (chromedriver's device list: the
# Pixel 7's screen, its User-Agent and the client hints Chromium's emulation
# sets for it: "Android", mobile).
MOBILE_DEVICE = "Pixel 7"

XSERVER = display.XSERVER


class ChromiumDriver:
    persistent = True
    retry_missed = False

    def __init__(self, headless, private, user_agent=None, languages=None, mobile=None, hosts=None):
        self.profile = tempfile.mkdtemp(prefix="edgeguard-chromium-")
        self.args = (headless, private, user_agent, languages, mobile, hosts)
        try:
            self._start()
        except BaseException:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise

    def _start(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        headless, private, user_agent, languages, mobile, hosts = self.args
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in chromium_flags(self.profile, hosts):
            opts.add_argument(a)
        if headless:
            opts.add_argument("--headless=new")
        if private:
            opts.add_argument("--incognito")
        if user_agent:
            opts.add_argument("--user-agent=" + user_agent)
        prefs = {"download.default_directory": os.path.join(self.profile, "Downloads"),
                 "download.prompt_for_download": False}
        if languages:  # the languages a person picked in the settings
            prefs["intl.accept_languages"] = languages
        opts.add_experimental_option("prefs", prefs)
        if mobile:  # DevTools' device emulation, as chromedriver sets it up
            opts.add_experimental_option("mobileEmulation", {"deviceName": mobile})
        opts.accept_insecure_certs = True
        env = dict(os.environ)
        if not headless:
            env["DISPLAY"] = XSERVER.ensure()
        service = Service(executable_path=CHROMEDRIVER, env=env)
        self.wd = webdriver.Chrome(service=service, options=opts)
        self.wd.set_page_load_timeout(60)
        self.version = self.wd.capabilities.get("browserVersion", "unknown")
        self.engine_version = "Chromium " + self.version

    def get(self, url):
        self.wd.get(url)

    def click(self, eid):
        from selenium.webdriver.common.by import By

        self.wd.find_element(By.ID, eid).click()

    def type(self, eid, text):
        from selenium.webdriver.common.by import By

        self.wd.find_element(By.ID, eid).send_keys(text)

    def back(self):
        self.wd.back()

    def forward(self):
        self.wd.forward()

    def refresh(self):
        self.wd.refresh()

    def hard_refresh(self):
        # What Ctrl+Shift+R runs: a reload that bypasses the cache.
        self.wd.execute_cdp_cmd("Page.reload", {"ignoreCache": True})

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


def chromium_flags(profile, hosts=None):
    rules = ", ".join(f"MAP {h} {a}" for h, a in (hosts or {}).items())
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
        *(["--host-resolver-rules=" + rules] if rules else []),
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
    persistent = True
    retry_missed = False

    def __init__(self, headless, private, hosts, languages=None, rfp=False):
        self.profile = tempfile.mkdtemp(prefix="edgeguard-firefox-")
        self.args = (headless, private, hosts, languages, rfp)
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
        headless, private, hosts, languages, rfp = self.args
        port = free_port()
        downloads = os.path.join(self.profile, "Downloads")
        prefs = dict(FIREFOX_PREFS, **{
            "marionette.port": port,
            # Downloads saved where the capture can remove them, no dialog.
            "browser.download.dir": downloads,
            "browser.download.folderList": 2,
            "browser.download.useDownloadDir": True,
            "browser.download.always_ask_before_handling_new_types": False,
        })
        if languages:  # the languages a person picked in the settings
            prefs["intl.accept_languages"] = languages
        if private:
            prefs["browser.privatebrowsing.autostart"] = True
        if rfp:  # Settings: resist fingerprinting (what Tor Browser ships on)
            prefs["privacy.resistFingerprinting"] = True
        if hosts:  # no /etc/hosts mapping: Firefox resolves the names itself
            prefs["network.dns.localDomains"] = ",".join(hosts)
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            for k, v in prefs.items():
                val = ("true" if v else "false") if isinstance(v, bool) else (str(v) if isinstance(v, int) else '"%s"' % v)
                f.write(f'user_pref("{k}", {val});\n')
        env = dict(os.environ, MOZ_CRASHREPORTER_DISABLE="1")
        # --remote-allow-system-access: the browser's own commands (a hard
        # reload) run in Marionette's chrome context.
        args = [FIREFOX, "--marionette", "--remote-allow-system-access", "--no-remote", "--profile", self.profile]
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
        self.engine_version = "Gecko " + self.version
        self.m.call("WebDriver:SetTimeouts", {"pageLoad": 60000, "implicit": 5000, "script": 30000})
        if rfp:
            self.evidence = self.rfp_evidence()

    def rfp_evidence(self):
        """What resistFingerprinting changes where a page can see it (not in
        the request heads: the corpus shows that): the letterboxed screen
        and the spoofed processor count, against the machine's."""
        self.get("about:blank")
        got = self.m.call("WebDriver:ExecuteScript", {
            "script": "return [screen.width, screen.height, navigator.hardwareConcurrency]", "args": []})
        return f"screen {got[0]}x{got[1]}, hardwareConcurrency {got[2]} (machine: {os.cpu_count()} CPUs)"

    def get(self, url):
        self.m.call("WebDriver:Navigate", {"url": url})

    def _find(self, eid):
        el = self.m.call("WebDriver:FindElement", {"using": "css selector", "value": "#" + eid})
        return el[ELEMENT] if isinstance(el, dict) else el

    def click(self, eid):
        self.m.call("WebDriver:ElementClick", {"id": self._find(eid)})

    def type(self, eid, text):
        self.m.call("WebDriver:ElementSendKeys", {"id": self._find(eid), "text": text})

    def back(self):
        self.m.call("WebDriver:Back")

    def forward(self):
        self.m.call("WebDriver:Forward")

    def refresh(self):
        self.m.call("WebDriver:Refresh")

    def hard_refresh(self):
        """What Ctrl+Shift+R runs (the browser window's reload command that
        skips the cache), in Marionette's chrome context."""
        self.m.call("Marionette:SetContext", {"value": "chrome"})
        try:
            self.m.call("WebDriver:ExecuteScript", {"script": "BrowserCommands.reloadSkipCache();", "args": []})
        finally:
            self.m.call("Marionette:SetContext", {"value": "content"})

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
    def __init__(self, sid, labels, make_driver, flow, site):
        self.id = sid
        self.labels = dict(labels, session=sid)
        self.make_driver = make_driver
        self.flow = flow
        self.site = site
        self.driver = None
        self.info = {}

    def run(self, rec):
        rec.begin(self.labels)
        self.driver = self.make_driver()
        self.info = {"client_version": self.driver.version, "engine_version": self.driver.engine_version}
        for key in ("evidence", "session_attempts"):
            if getattr(self.driver, key, None) is not None:
                self.info[key] = getattr(self.driver, key)
        # Whatever the browser fetches at start-up on its own (nothing, if
        # the profile is quiet) belongs to no flow: say so in the corpus.
        rec.take("startup", rec.mark, rec.server.settle(rec.quiet))
        for step in self.flow(self.site, self.driver):
            rec.step(step.flow, lambda: step.action(self.driver), expect=step.expect,
                     retry=getattr(self.driver, "retry_missed", False))
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


def person_flow(site, driver):
    return flows.person(site, persistent=driver.persistent)


def automation_flow(site, driver):
    return flows.automation(site, persistent=driver.persistent)


def arrivals_flow(site, driver):
    return flows.arrivals(site)


def private_flow(site, driver):
    return flows.private(site)


def scrape_flow(site, driver):
    return flows.scrape(site)


ORIGINS = ("ip", "http-host", "tls-h1", "tls-h2")


def sessions(server, have_hosts):
    """Every browser session of the capture, in order. Labels: `label`
    and `class` (human for a person's browser making a person's flow, as
    before; automated kinds below), `client_name`, `family` (the engine
    family), `mode`, `window`, `driver` and `webdriver` (driven through
    WebDriver or Marionette), `lang` (the Accept-Language profile),
    `device` (Chromium's emulated phone), `origin`."""
    hosts = None if have_hosts else server.hosts

    def session(sid, flow, origin, make, **labels):
        labels = {"label": "human", "class": "human", "mode": "headful", "window": "normal", "lang": "en-US", "device": "-",
                  **labels, "origin": origin}
        return BrowserSession(sid, labels, make, flow, server.site(origin))

    def chromium(**kw):
        return lambda: ChromiumDriver(kw.get("headless", False), kw.get("private", False),
                                      user_agent=kw.get("user_agent"), languages=kw.get("languages"),
                                      mobile=kw.get("mobile"), hosts=server.hosts)

    def firefox(**kw):
        return lambda: FirefoxDriver(kw.get("headless", False), kw.get("private", False), hosts,
                                     languages=kw.get("languages"), rfp=kw.get("rfp", False))

    chrome = {"client_name": "chromium", "family": "chromium-linux", "driver": "chromedriver", "webdriver": True}
    mobile = dict(chrome, family="chromium-mobile-emulated", device=MOBILE_DEVICE)
    fox = {"client_name": "firefox", "family": "firefox", "driver": "marionette", "webdriver": True}
    rfp = dict(fox, family="firefox-rfp")
    web_wd = {"client_name": "epiphany", "family": "webkitgtk", "driver": "webkitwebdriver", "webdriver": True}
    web_keys = {"client_name": "epiphany", "family": "webkitgtk", "driver": "xdotool", "webdriver": False}
    falkon = {"client_name": "falkon", "family": "qtwebengine", "driver": "xdotool", "webdriver": False}
    qute = {"client_name": "qutebrowser", "family": "qtwebengine", "driver": "qutebrowser-ipc", "webdriver": False}

    out = []
    # People: every engine on every origin, the whole visit.
    for origin in ORIGINS:
        out += [
            session(f"chromium-headful-{origin}", person_flow, origin, chromium(), **chrome),
            session(f"chromium-mobile-{origin}", person_flow, origin, chromium(mobile=MOBILE_DEVICE), **mobile),
            session(f"firefox-headful-{origin}", person_flow, origin, firefox(), **fox),
            session(f"firefox-rfp-{origin}", person_flow, origin, firefox(rfp=True), **rfp),
            session(f"epiphany-webdriver-{origin}", person_flow, origin, lambda: desktop.WebKitDriver(), **web_wd),
            session(f"epiphany-keys-{origin}", person_flow, origin, lambda: desktop.EpiphanyKeysDriver(), **web_keys),
            session(f"falkon-{origin}", person_flow, origin, lambda: desktop.FalkonDriver(), **falkon),
            session(f"qutebrowser-{origin}", person_flow, origin, lambda: desktop.QuteDriver(), **qute),
        ]
    # Private windows.
    for origin in ("ip", "tls-h2"):
        out += [
            session(f"chromium-headful-private-{origin}", private_flow, origin, chromium(private=True),
                    **dict(chrome, window="private")),
            session(f"firefox-headful-private-{origin}", private_flow, origin, firefox(private=True),
                    **dict(fox, window="private")),
        ]
    # People who read German or French first: the languages set in the
    # browser's settings, or the desktop's language.
    de, fr = LANGUAGES["de-DE"], LANGUAGES["fr-FR"]
    for origin in ("http-host", "tls-h2"):
        out += [
            session(f"chromium-headful-de-{origin}", arrivals_flow, origin, chromium(languages=de["prefs"]),
                    **dict(chrome, lang="de-DE")),
            session(f"firefox-headful-de-{origin}", arrivals_flow, origin, firefox(languages=de["prefs"]),
                    **dict(fox, lang="de-DE")),
        ]
    out += [
        session("chromium-headful-fr-tls-h1", arrivals_flow, "tls-h1", chromium(languages=fr["prefs"]),
                **dict(chrome, lang="fr-FR")),
        session("chromium-mobile-de-tls-h2", arrivals_flow, "tls-h2",
                chromium(mobile=MOBILE_DEVICE, languages=de["prefs"]), **dict(mobile, lang="de-DE")),
        session("firefox-headful-fr-ip", arrivals_flow, "ip", firefox(languages=fr["prefs"]),
                **dict(fox, lang="fr-FR")),
        session("epiphany-webdriver-de-tls-h2", arrivals_flow, "tls-h2",
                lambda: desktop.WebKitDriver(language=de["language"]), **dict(web_wd, lang="de-DE")),
        session("falkon-de-ip", arrivals_flow, "ip", lambda: desktop.FalkonDriver(lang=de["lang"]),
                **dict(falkon, lang="de-DE")),
        session("qutebrowser-fr-tls-h2", arrivals_flow, "tls-h2",
                lambda: desktop.QuteDriver(accept_language="fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7"),
                **dict(qute, lang="fr-FR")),
    ]
    # Automation. Headless Chromium says so in its User-Agent
    # (HeadlessChrome): automation whose bytes differ. Headless Firefox
    # sends what headful Firefox sends (the corpus README): automation a
    # head cannot tell apart, a row of its own.
    for origin in ORIGINS:
        out += [
            session(f"chromium-headless-{origin}", automation_flow, origin, chromium(headless=True),
                    **dict(chrome, label="automated", **{"class": "headless"}, mode="headless")),
            session(f"firefox-headless-{origin}", automation_flow, origin, firefox(headless=True),
                    **dict(fox, label="automated", **{"class": "byte-identical"}, mode="headless")),
        ]
    ua = desktop_ua(chromium_version())
    for origin in ("ip", "http-host", "tls-h2"):
        out += [
            session(f"chromium-headless-desktop-ua-{origin}", automation_flow, origin,
                    chromium(headless=True, user_agent=ua),
                    **dict(chrome, client_name="chromium-headless-desktop-ua", label="automated",
                           **{"class": "byte-identical"}, mode="headless")),
            session(f"selenium-chromium-headful-{origin}", scrape_flow, origin, chromium(),
                    **dict(chrome, client_name="selenium-chromium", label="automated",
                           **{"class": "byte-identical"})),
        ]
    return out


def stop():
    display.stop()
