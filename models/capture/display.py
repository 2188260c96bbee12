"""The desktop the headful browsers of the capture run in: one X server
(Xvfb), one D-Bus session bus (GTK and Qt browsers expect one: Epiphany's
web process will not start without it), and xdotool, which types and
presses keys into a browser's window as a person's keyboard does (the
X server delivers them as real input events: the page sees trusted,
user-activated events, and the browser's own shortcuts work).
"""

import os
import shutil
import subprocess
import tempfile
import time

XVFB = shutil.which("Xvfb") or "/usr/bin/Xvfb"
DBUS_DAEMON = shutil.which("dbus-daemon") or "/usr/bin/dbus-daemon"
XDOTOOL = shutil.which("xdotool") or "/usr/bin/xdotool"


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


class SessionBus:
    """A private D-Bus session bus (dbus-daemon --session) for the GTK and
    Qt browsers; gone with the capture."""

    def __init__(self):
        self.proc = None
        self.address = None

    def ensure(self):
        if self.proc and self.proc.poll() is None:
            return self.address
        if not os.path.exists(DBUS_DAEMON):
            raise RuntimeError("dbus-daemon is missing (Debian: dbus)")
        self.proc = subprocess.Popen([DBUS_DAEMON, "--session", "--nofork", "--print-address=1"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            raise RuntimeError("dbus-daemon printed no address")
        return self.address

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


XSERVER = Xvfb()
BUS = SessionBus()


def desktop_env(home, lang="en_US.UTF-8", language=None):
    """The environment of a person's desktop session for a GTK or Qt
    browser: the X display, the session bus, and a home of its own (the
    browser's profile, cache and downloads live there), in `lang`."""
    runtime = os.path.join(home, "runtime")
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    env = dict(os.environ, DISPLAY=XSERVER.ensure(), DBUS_SESSION_BUS_ADDRESS=BUS.ensure(), HOME=home,
               XDG_CONFIG_HOME=os.path.join(home, ".config"), XDG_DATA_HOME=os.path.join(home, ".local", "share"),
               XDG_CACHE_HOME=os.path.join(home, ".cache"), XDG_RUNTIME_DIR=runtime,
               XDG_DOWNLOAD_DIR=os.path.join(home, "Downloads"), LANG=lang, NO_AT_BRIDGE="1")
    # LANG (and LANGUAGE) say the person's languages; GLib and Qt read them
    # even where the C library has no such locale installed.
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        env.pop(name, None)
    if language:
        env["LANGUAGE"] = language
    os.makedirs(env["XDG_DOWNLOAD_DIR"], exist_ok=True)
    return env


def xdotool(*args, timeout=30):
    p = subprocess.run([XDOTOOL, *args], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, DISPLAY=XSERVER.ensure()))
    if p.returncode != 0:
        raise RuntimeError(f"xdotool {' '.join(args[:3])}: {(p.stderr or p.stdout).strip()[:200]}")
    return p.stdout


def main_window(pid=None, cls=None, timeout=60):
    """The largest visible window of a process (or of a window class): the
    browser's main window, not its hidden leader or a tooltip."""
    deadline = time.monotonic() + timeout
    query = ["--pid", str(pid)] if pid else ["--class", cls]
    while True:
        try:
            ids = xdotool("search", "--onlyvisible", *query).split()
        except RuntimeError:  # none yet
            ids = []
        best = None
        for wid in ids:
            try:
                geo = xdotool("getwindowgeometry", "--shell", wid)
            except RuntimeError:
                continue
            vals = dict(line.split("=", 1) for line in geo.split() if "=" in line)
            area = int(vals.get("WIDTH", 0)) * int(vals.get("HEIGHT", 0))
            if area > 200 * 200 and (best is None or area > best[0]):
                best = (area, wid)
        if best:
            return best[1]
        if time.monotonic() > deadline:
            raise RuntimeError(f"no window of {query} appeared in {timeout} s")
        time.sleep(0.3)


def keys(wid, *commands):
    """Focuses the window and runs xdotool commands on it (key, type)."""
    xdotool("windowfocus", "--sync", wid, *commands)


def type_text(text, delay=12):
    """xdotool's type command: every word after it is text, so it comes
    last in a chain."""
    return ["type", "--delay", str(delay), "--", text]


def stop():
    XSERVER.stop()
    BUS.stop()


def profile_dir(prefix):
    return tempfile.mkdtemp(prefix=prefix)
