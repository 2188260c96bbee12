"""Drivers for the capture's WebKitGTK and QtWebEngine browsers, each
driven the way it can be driven here:

- Epiphany (GNOME Web, WebKitGTK) through WebKitWebDriver (Debian's
  webkit2gtk-driver) and Selenium, in Epiphany's `--automation-mode` (the
  mode WebDriver needs: an ephemeral profile, nothing kept between runs);
- Epiphany again without WebDriver, on a profile of its own, driven from
  the keyboard (xdotool), so that a WebKitGTK person's head is captured
  with no automation attached at all, return visit included;
- Falkon (QtWebEngine), which has no WebDriver: from the keyboard (xdotool);
- qutebrowser (QtWebEngine) through its own command interface: the
  commands its key bindings run (`:open`, `:click-element`,
  `:insert-text`, `:back`, `:reload -f`), sent over its IPC socket the way
  `qutebrowser ':open URL'` sends them to a running instance.

Every driver has the interface the flows use (flows.py): get(url),
click(id), type(id, text), back(), forward(), refresh(), hard_refresh(),
restart(), quit(), and `version` / `engine_version`.

Keyboard driving: a URL is typed into the location bar (Ctrl+L, the URL,
Return). To click an element, it is given the focus (a `javascript:`
URL typed into the location bar calls its focus(), as Tab would; void():
Epiphany replaces the page with a javascript: URL's value otherwise) and
Return is pressed: the browser follows a focused link or presses a focused
button on Return, as for a person who tabbed there. Text is typed into a
focused field. Back, forward, reload and hard reload are the browser's own
shortcuts (Alt+Left, Alt+Right, F5, Ctrl+Shift+R).
"""

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import time

import display

EPIPHANY = shutil.which("epiphany") or "/usr/bin/epiphany"
WEBKIT_DRIVER = shutil.which("WebKitWebDriver") or "/usr/bin/WebKitWebDriver"
FALKON = shutil.which("falkon") or "/usr/bin/falkon"
QUTEBROWSER = shutil.which("qutebrowser") or "/usr/bin/qutebrowser"

# WebKitGTK's web process runs in a bubblewrap sandbox that cannot be made
# as root in a container; the network stack and its headers are the same
# without it.
WEBKIT_ENV = {"WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS": "1"}


def deb_version(package):
    """The upstream version of a Debian package (2.50.6 of 2.50.6-1~deb12u2)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    out = out.split(":", 1)[-1]
    return re.split(r"[-+~]", out, maxsplit=1)[0] or "unknown"


_QT = {}


def qtwebengine_versions():
    """qutebrowser's and QtWebEngine's versions and the Chromium version
    QtWebEngine is based on, as `qutebrowser --version` reports them."""
    if not _QT:
        env = display.desktop_env(display.profile_dir("edgeguard-qute-version-"))
        try:
            out = subprocess.run([QUTEBROWSER, "--basedir", env["HOME"], "--qt-flag", "no-sandbox", "--version"],
                                 capture_output=True, text=True, timeout=120, env=env).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        finally:
            shutil.rmtree(env["HOME"], ignore_errors=True)
        qute = re.search(r"^qutebrowser v(\S+)", out, re.M)
        backend = re.search(r"^Backend: QtWebEngine (\S+), based on Chromium (\S+)", out, re.M)
        _QT["qutebrowser"] = qute.group(1) if qute else deb_version("qutebrowser")
        _QT["engine"] = (f"QtWebEngine {backend.group(1).rstrip(',')} (Chromium {backend.group(2)})" if backend
                         else f"QtWebEngine {deb_version('libqt5webenginecore5')}")
    return _QT


def webkitgtk_version():
    return f"WebKitGTK {deb_version('libwebkit2gtk-4.1-0')}"


def epiphany_version():
    try:
        out = subprocess.run([EPIPHANY, "--version"], capture_output=True, text=True, timeout=60).stdout
        return out.split()[-1]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return deb_version("epiphany-browser")


def epiphany_settings(env, user_js):
    """Epiphany's settings, in a keyfile under the session's home (no dconf
    service here): its defaults, but for the "Set Web as your default
    browser?" bar (a person answers it once), and with `user_js` the
    custom JavaScript of FOCUS_BY_KEYS."""
    env["GSETTINGS_BACKEND"] = "keyfile"
    keyfile = os.path.join(env["XDG_CONFIG_HOME"], "glib-2.0", "settings", "keyfile")
    os.makedirs(os.path.dirname(keyfile), exist_ok=True)
    with open(keyfile, "w") as f:
        f.write("[org/gnome/epiphany]\nask-for-default=false\n")
        if user_js:
            f.write("\n[org/gnome/epiphany/web]\nenable-user-js=true\n")
    if user_js:
        # Epiphany's "custom JavaScript" (Preferences, Appearance): F8, an
        # element id typed, F8 gives that element the focus. Epiphany takes
        # a javascript: URL typed in its location bar for a search, so this
        # is how the keyboard reaches an element here; the key that follows
        # (Return) is a real key press on a focused element.
        for base in (env["XDG_CONFIG_HOME"], env["XDG_DATA_HOME"]):
            os.makedirs(os.path.join(base, "epiphany"), exist_ok=True)
            with open(os.path.join(base, "epiphany", "user-javascript.js"), "w") as f:
                f.write(FOCUS_BY_KEYS)


class WebKitDriver:
    """Epiphany through WebKitWebDriver (Selenium's WebKitGTK driver)."""

    persistent = False  # automation mode keeps no cookies between runs
    retry_missed = False

    def __init__(self, language=None):
        self.home = display.profile_dir("edgeguard-epiphany-wd-")
        self.language = language
        try:
            self._start()
        except BaseException:
            shutil.rmtree(self.home, ignore_errors=True)
            raise

    def _start(self):
        from selenium import webdriver
        from selenium.common.exceptions import SessionNotCreatedException
        from selenium.webdriver.webkitgtk.options import Options
        from selenium.webdriver.webkitgtk.service import Service

        opts = Options()
        opts.binary_location = EPIPHANY
        opts.add_argument("--automation-mode")
        # WebKitWebDriver matches browserName against the browser it runs.
        opts.set_capability("browserName", "Epiphany")
        opts.accept_insecure_certs = True
        env = dict(display.desktop_env(self.home, language=self.language), **WEBKIT_ENV)
        epiphany_settings(env, user_js=False)
        # Epiphany 43 in automation mode sometimes aborts while WebDriver asks
        # for its first browsing context (an assertion in
        # ephy_embed_container_get_active_child): a new session then.
        for attempt in range(4):
            service = Service(executable_path=WEBKIT_DRIVER, env=env)
            try:
                self.wd = webdriver.WebKitGTK(options=opts, service=service)
                break
            except SessionNotCreatedException:
                if attempt == 3:
                    raise
                time.sleep(1)
        self.session_attempts = attempt + 1
        self.wd.set_page_load_timeout(60)
        self.version = self.wd.capabilities.get("browserVersion", "unknown")
        self.engine_version = webkitgtk_version()

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
        # WebDriver has no reload that bypasses the cache: the shortcut.
        wid = display.main_window(cls="epiphany")
        display.keys(wid, "key", "--clearmodifiers", "ctrl+shift+r")

    def restart(self):
        self.wd.quit()
        self._start()

    def quit(self):
        try:
            self.wd.quit()
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


class KeyboardDriver:
    """A GTK or Qt browser driven from the keyboard (xdotool), on a profile
    of its own under a home of its own."""

    persistent = True
    retry_missed = True  # a key press lost to a busy window: the step again
    quit_keys = "ctrl+q"
    hard_reload_keys = "ctrl+shift+r"
    # ms between key presses: faster, a location bar that updates its
    # suggestions on every key loses or reorders characters
    type_delay = 30

    def __init__(self, lang="en_US.UTF-8", language=None):
        self.home = display.profile_dir(f"edgeguard-{self.name}-")
        self.env = display.desktop_env(self.home, lang=lang, language=language)
        self.proc = None
        self.wid = None
        try:
            self.prepare()
            self._start()
        except BaseException:
            self._kill()
            shutil.rmtree(self.home, ignore_errors=True)
            raise

    def prepare(self):
        """Writes the profile's settings before the first start."""

    def command(self):
        raise NotImplementedError

    def _start(self):
        self.proc = subprocess.Popen(self.command(), env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, cwd=self.home)
        self.wid = display.main_window(pid=self.proc.pid)
        time.sleep(1.0)  # the window is mapped before its location bar takes keys

    def _keys(self, *commands):
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited ({self.proc.returncode})")
        display.keys(self.wid, *commands)

    def _type(self, text):
        # xdotool's `type` takes every word after it as text: its own call.
        self._keys(*display.type_text(text, self.type_delay))

    def get(self, url):
        self._keys("key", "--clearmodifiers", "ctrl+l")
        time.sleep(0.4)
        self._type(url)
        time.sleep(0.3)
        self._keys("key", "Return")

    def focus(self, eid):
        """Gives the page's element the focus, as tabbing to it would: a
        javascript: URL typed into the location bar (no request)."""
        self._keys("key", "--clearmodifiers", "ctrl+l")
        time.sleep(0.4)
        self._type(f"javascript:void(document.getElementById('{eid}').focus())")
        time.sleep(0.3)
        self._keys("key", "Return")
        time.sleep(0.5)

    def click(self, eid):
        self.focus(eid)
        self._keys("key", "Return")

    def type(self, eid, text):
        self.focus(eid)
        self._type(text)

    def back(self):
        self._keys("key", "--clearmodifiers", "alt+Left")

    def forward(self):
        self._keys("key", "--clearmodifiers", "alt+Right")

    def refresh(self):
        self._keys("key", "--clearmodifiers", "F5")

    def hard_refresh(self):
        self._keys("key", "--clearmodifiers", self.hard_reload_keys)

    def _stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self._keys("key", "--clearmodifiers", self.quit_keys)
            self.proc.wait(timeout=20)
        except (RuntimeError, subprocess.TimeoutExpired):
            self._kill()

    def _kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self):
        """Quits the browser (its own shortcut: it writes cookies and cache)
        and starts it again on the same profile."""
        self._stop()
        self._start()

    def quit(self):
        try:
            self._stop()
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


class FalkonDriver(KeyboardDriver):
    name = "falkon"

    def prepare(self):
        self.version = deb_version("falkon")
        self.engine_version = qtwebengine_versions()["engine"]
        profile = os.path.join(self.env["XDG_CONFIG_HOME"], "falkon", "profiles", "default")
        os.makedirs(profile, exist_ok=True)
        with open(os.path.join(self.env["XDG_CONFIG_HOME"], "falkon", "profiles", "profiles.ini"), "w") as f:
            f.write("[Profiles]\nstartProfile=default\n")
        # A fresh profile as a person leaves it, but: a blank page at start
        # (not the speed dial or a restored session), no inline completion
        # in the location bar (it would complete a typed URL from history),
        # downloads saved without a dialog.
        with open(os.path.join(profile, "settings.ini"), "w") as f:
            f.write("[Web-URL-Settings]\nafterLaunch=0\nhomepage=about:blank\nnewTabUrl=about:blank\n\n"
                    "[AddressBar]\nuseInlineCompletion=false\n\n"
                    f"[DownloadManager]\ndefaultDownloadPath={self.env['XDG_DOWNLOAD_DIR']}\n"
                    "CloseManagerOnFinish=true\nuseNativeDialog=false\n")
        # Root in a container: Chromium's sandbox cannot start; the
        # self-signed test certificate (QtWebEngine reads Chromium's flags
        # from this variable).
        self.env["QTWEBENGINE_CHROMIUM_FLAGS"] = "--no-sandbox --ignore-certificate-errors"

    def command(self):
        return [FALKON, "--no-remote", "about:blank"]


FOCUS_BY_KEYS = """(function () {
  "use strict";
  var typed = null;
  document.addEventListener("keydown", function (e) {
    if (e.key === "F8") {
      if (typed === null) {
        typed = "";
      } else {
        var el = document.getElementById(typed);
        typed = null;
        if (el) { el.focus(); }
      }
    } else if (typed !== null && e.key.length === 1) {
      typed += e.key;
    } else {
      return;
    }
    e.preventDefault();
    e.stopImmediatePropagation();
  }, true);
})();
"""


class EpiphanyKeysDriver(KeyboardDriver):
    """Epiphany as a person runs it (no automation mode, a profile of its
    own), from the keyboard."""

    name = "epiphany"
    type_delay = 45  # Epiphany's location entry reorders characters typed faster

    def prepare(self):
        self.version = epiphany_version()
        self.engine_version = webkitgtk_version()
        self.env.update(WEBKIT_ENV)
        epiphany_settings(self.env, user_js=True)

    def command(self):
        return [EPIPHANY, "about:blank"]

    def focus(self, eid):
        self._keys("key", "F8")
        self._type(eid)
        self._keys("key", "F8")
        time.sleep(0.3)


class QuteDriver:
    """qutebrowser driven through its command interface over its IPC socket."""

    persistent = True
    retry_missed = False

    def __init__(self, accept_language=None, language=None):
        self.home = display.profile_dir("edgeguard-qutebrowser-")
        self.env = display.desktop_env(self.home, language=language)
        self.accept_language = accept_language
        self.proc = None
        versions = qtwebengine_versions()
        self.version = versions["qutebrowser"]
        self.engine_version = versions["engine"]
        try:
            self._start()
        except BaseException:
            self._kill()
            shutil.rmtree(self.home, ignore_errors=True)
            raise

    def _start(self):
        basedir = self.home
        settings = [
            # The self-signed test certificate, and downloads without a prompt.
            ("content.tls.certificate_errors", "load-insecurely"),
            ("downloads.location.prompt", "false"),
            ("downloads.location.directory", self.env["XDG_DOWNLOAD_DIR"]),
        ]
        if self.accept_language:  # a person who set the languages in the settings
            settings.append(("content.headers.accept_language", self.accept_language))
        args = [QUTEBROWSER, "--basedir", basedir, "--qt-flag", "no-sandbox"]
        for k, v in settings:
            args += ["--set", k, v]
        self.proc = subprocess.Popen(args + ["about:blank"], env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, cwd=self.home)
        deadline = time.monotonic() + 90
        while True:
            sockets = glob.glob(os.path.join(basedir, "runtime", "ipc-*"))
            if sockets:
                self.socket = sockets[0]
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("qutebrowser did not open its IPC socket")
            time.sleep(0.2)
        display.main_window(pid=self.proc.pid)

    def run(self, *commands):
        """Sends commands as `qutebrowser ':cmd'` does to a running instance."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"qutebrowser exited ({self.proc.returncode})")
        msg = {"args": list(commands), "target_arg": None, "version": self.version, "protocol_version": 1,
               "cwd": self.home}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.socket)
            s.sendall((json.dumps(msg) + "\n").encode())
        time.sleep(0.3)

    def get(self, url):
        self.run(":open " + url)

    def click(self, eid):
        # What following a hint runs (a link is followed through the page's
        # click(); a button gets a real mouse event).
        self.run(":click-element id " + eid)

    def type(self, eid, text):
        self.run(":click-element id " + eid)
        self.run(":insert-text " + text)
        self.run(":mode-leave")

    def back(self):
        self.run(":back")

    def forward(self):
        self.run(":forward")

    def refresh(self):
        self.run(":reload")

    def hard_refresh(self):
        self.run(":reload --force")

    def _kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.run(":quit")
            self.proc.wait(timeout=20)
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            self._kill()

    def restart(self):
        self._stop()
        for stale in glob.glob(os.path.join(self.home, "runtime", "ipc-*")):
            os.unlink(stale)
        self._start()

    def quit(self):
        try:
            self._stop()
        finally:
            shutil.rmtree(self.home, ignore_errors=True)
