"""The challenge's pages served outside nginx, for real browsers.

A small HTTP server renders each page with `examples/challenge_page.rs`
(the library's own renderer and checker, under the test fixture's keys):
`GET /page?...` serves the page the query asks for (state, difficulty,
no-JS wait, request id; the locale from the browser's own
Accept-Language), with the pages' Content-Security-Policy, and
`GET /.edgeguard/challenge?...` checks the browser's answer as nginx
would and records it with the time it arrived. Used by
tests/e2e/test_challenge_page.py (axe-core, locales, screenshots) and
scripts/pow-measure.py (solve times).
"""

import http.server
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[2]
RENDER = ROOT / "target" / "debug" / "examples" / "challenge_page"
AXE = ROOT / "target" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


def build_renderer():
    subprocess.run(["cargo", "build", "--locked", "--quiet", "--example", "challenge_page"], cwd=ROOT, check=True)


def render(*args):
    return subprocess.run([str(RENDER), *args], capture_output=True, check=True).stdout


class PageServer:
    """Serves pages and records answers: self.answers is a list of
    (monotonic arrival time, verdict line, path)."""

    def __init__(self):
        self.answers = []
        self.served = {}
        self.csp = render("csp").decode().strip()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(url.query))
                if url.path == "/page":
                    args = ["page", "--state", q.get("state", "challenge"),
                            "--difficulty", q.get("d", "16"),
                            "--accept-language", self.headers.get("Accept-Language", ""),
                            "--host", self.headers.get("Host", ""),
                            "--ua", self.headers.get("User-Agent", ""),
                            "--return", "/page?" + url.query]
                    for name in ("nojs", "request-id", "ticket", "seconds"):
                        if name in q:
                            args += ["--" + name, q[name]]
                    body = render(*args)
                    server.served[q.get("tag", "")] = time.monotonic()
                    self.send_response(403)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Cache-Control", "no-store")
                    if q.get("csp", "1") == "1":
                        self.send_header("Content-Security-Policy", server.csp)
                elif url.path == "/.edgeguard/challenge":
                    verdict = render("answer", "--uri", self.path, "--ua", self.headers.get("User-Agent", ""),
                                     *(["--nojs", q["nojs"]] if "nojs" in q else [])).decode().strip()
                    server.answers.append((time.monotonic(), verdict, self.path))
                    if "hold%3D1" in self.path:
                        # A page served with hold=1 stays where it is
                        # (204): the tests look at it while it works.
                        self.send_response(204)
                        self.end_headers()
                        return
                    body = f"<!doctype html><html lang=en><title>origin</title><p id=a>{verdict}</p>".encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                else:
                    body = b"not here"
                    self.send_response(404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, **query):
        return f"http://127.0.0.1:{self.port}/page?" + urllib.parse.urlencode(query)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Chromium:
    """Headless Chromium through chromedriver, with a language, a window
    size, optional mobile emulation and CDP for media emulation."""

    def __init__(self, lang="en-US", size=(1280, 800), mobile=False, extra=()):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="edgeguard-page-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--no-first-run",
                  "--disable-gpu", "--disable-extensions", "--disable-background-networking",
                  "--disable-sync", f"--user-data-dir={self.profile}", f"--lang={lang}",
                  f"--window-size={size[0]},{size[1]}", *extra):
            opts.add_argument(a)
        opts.add_experimental_option("prefs", {"intl.accept_languages": lang})
        if mobile:
            opts.add_experimental_option("mobileEmulation", {
                "deviceMetrics": {"width": size[0], "height": size[1], "pixelRatio": 2},
                "userAgent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 "
                             "(KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36"})
        self.wd = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
        self.wd.set_page_load_timeout(60)

    def before_load(self, script):
        self.wd.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})

    def dark(self):
        self.wd.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})

    def axe(self):
        """axe-core's violations on the current page, serious and critical."""
        self.wd.execute_script(AXE.read_text())
        result = self.wd.execute_async_script(
            "var done = arguments[arguments.length - 1];"
            "axe.run(document, {resultTypes: ['violations']}).then(function (r) { done(r); },"
            " function (e) { done({error: String(e)}); });")
        assert "error" not in result, result
        return [v for v in result["violations"] if v["impact"] in ("serious", "critical")], result

    def quit(self):
        try:
            self.wd.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


def have_browser():
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return bool(CHROMIUM and CHROMEDRIVER)


def cpu_count():
    return os.cpu_count() or 1
