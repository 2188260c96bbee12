"""The challenge page in real headless Chromium, outside nginx: every
bundled locale renders in its language, axe-core finds no serious or
critical violation in any state (working, error, cookies needed, no-JS
wait), the page solves under its own strict Content-Security-Policy (in
workers, and in the main thread where workers are refused), shows the
cookies state where cookies are off, and the screenshots of
docs/challenge.md are taken (written to docs/img/ with
EDGEGUARD_UPDATE_SCREENSHOTS=1).

The page is rendered by the library (examples/challenge_page.rs) and its
answers checked by it, so a page the browser solves is one nginx accepts.
"""

import os
import shutil
import time

import pytest

from challenge_pages import AXE, ROOT, Chromium, PageServer, build_renderer, have_browser

LOCALES = ["en", "de", "fr", "es", "pt", "it", "pl", "ja", "zh", "ru"]
HEADINGS = {
    "en": "Checking your browser", "de": "Ihr Browser wird überprüft", "fr": "Vérification de votre navigateur",
    "es": "Comprobando su navegador", "pt": "Verificando seu navegador", "it": "Verifica del browser in corso",
    "pl": "Sprawdzanie przeglądarki", "ja": "ブラウザを確認しています", "zh": "正在检查您的浏览器", "ru": "Проверка браузера",
}
# What a browser sends for each: a region first, as people's browsers do.
ACCEPT = {"en": "en-GB", "de": "de-AT", "fr": "fr-CA", "es": "es-MX", "pt": "pt-BR", "it": "it-IT",
          "pl": "pl-PL", "ja": "ja-JP", "zh": "zh-CN", "ru": "ru-RU"}
RID = "5f3ca1b2c3d4e5f60718293a4b5c6d7e"

pytestmark = pytest.mark.skipif(not have_browser(), reason="needs chromium, chromium-driver and selenium (make deps-test)")


@pytest.fixture(scope="module")
def server():
    build_renderer()
    s = PageServer()
    yield s
    s.stop()


def wait_for(wd, check, timeout=30, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    state = wd.execute_script("var s = document.getElementById('edgeguard-status');"
                              "return [document.title, s && s.textContent]")
    raise AssertionError(f"timed out: {what} {state}")


def axe_clean(b, what):
    assert AXE.exists(), "axe-core is not installed (make deps-test)"
    bad, result = b.axe()
    assert not bad, (what, [(v["id"], v["impact"], v["help"], [n["html"] for n in v["nodes"]]) for v in bad])
    return result


@pytest.mark.parametrize("lang", LOCALES)
def test_each_locale_renders_and_passes_axe(server, lang):
    b = Chromium(lang=ACCEPT[lang])
    try:
        # 24 bits: the work is still going on while axe looks.
        b.wd.get(server.url(d=24, nojs=5, hold=1, tag=lang, **{"request-id": RID}))
        html = b.wd.find_element("tag name", "html")
        assert (html.get_attribute("lang"), html.get_attribute("dir")) == (lang, "ltr")
        assert b.wd.find_element("id", "edgeguard-heading").text == HEADINGS[lang]
        status = b.wd.find_element("id", "edgeguard-status")
        wait_for(b.wd, lambda: status.text)
        assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
        # Shown while working; hidden again once solved (a lucky draw at
        # 24 bits can end within the second: then an answer arrived).
        answered = any(f"tag%3D{lang}" in a[2] for a in server.answers)
        assert b.wd.find_element("id", "edgeguard-progress").is_displayed() or answered
        assert RID in b.wd.find_element("tag name", "main").text
        axe_clean(b, f"{lang} challenge")
        # The cookies page, served after solves that came back without one.
        b.wd.get(server.url(state="cookies", **{"request-id": RID}))
        assert b.wd.find_element("tag name", "html").get_attribute("lang") == lang
        axe_clean(b, f"{lang} cookies")
    finally:
        b.quit()


def test_error_and_wait_states_pass_axe(server):
    b = Chromium()
    try:
        # A browser without typed arrays cannot run the hash: the page says
        # so and offers a retry and the no-JavaScript way.
        b.before_load("window.edgeguardKept = window.Int32Array; delete window.Int32Array;")
        b.wd.get(server.url(d=16, nojs=5))
        heading = b.wd.find_element("id", "edgeguard-heading")
        wait_for(b.wd, lambda: heading.text == "The check could not finish")
        links = [a.text for a in b.wd.find_elements("css selector", "#edgeguard-actions a")]
        assert links == ["Try again", "Continue without JavaScript (takes 5 seconds)"], links
        href = b.wd.find_elements("css selector", "#edgeguard-actions a")[1].get_attribute("href")
        assert "/.edgeguard/challenge?t=" in href and href.endswith("&r=%2Fpage%3Fd%3D16%26nojs%3D5"), href
        b.wd.execute_script("window.Int32Array = window.edgeguardKept;")  # axe needs it
        axe_clean(b, "error")
    finally:
        b.quit()
    b = Chromium()
    try:
        b.wd.get(server.url(state="wait", nojs=5, ticket="T" * 104, seconds=3))
        assert "Please wait 3 more seconds" in b.wd.page_source
        axe_clean(b, "wait")
    finally:
        b.quit()


@pytest.mark.parametrize("mode", ["workers", "main"])
def test_the_page_solves_under_its_csp(server, mode):
    """The page's answer is one the library accepts, with the CSP on, in
    workers or (where they are refused) in the page's own thread."""
    b = Chromium()
    try:
        if mode == "main":
            b.before_load("window.edgeguardSolver = {main: true};")
        before = len(server.answers)
        b.wd.get(server.url(d=12, tag=mode))
        wait_for(b.wd, lambda: len(server.answers) > before, timeout=60)
        assert server.answers[-1][1] == "solved work", server.answers[-1]
        assert "&r=%2Fpage%3Fd%3D12%26tag%3D" in server.answers[-1][2]
        logs = [l for l in b.wd.get_log("browser") if "Content Security Policy" in l.get("message", "")]
        assert not logs, logs
    finally:
        b.quit()


def test_a_policy_that_refuses_workers_falls_back(server):
    """Under a stricter policy of the site's own (no worker-src), the
    workers are refused and the page still solves in its own thread."""
    b = Chromium()
    try:
        b.before_load("window.Worker = function () { throw new Error('refused'); };")
        before = len(server.answers)
        b.wd.get(server.url(d=10))
        wait_for(b.wd, lambda: len(server.answers) > before, timeout=60)
        assert server.answers[-1][1] == "solved work"
    finally:
        b.quit()


def test_cookies_off_shows_the_cookies_state_without_solving(server):
    b = Chromium(extra=("--blink-settings=cookieEnabled=false",))
    try:
        b.before_load("Object.defineProperty(navigator, 'cookieEnabled', {get: function () { return false; }});")
        before = len(server.answers)
        b.wd.get(server.url(d=12))
        heading = b.wd.find_element("id", "edgeguard-heading")
        wait_for(b.wd, lambda: heading.text == "Cookies are needed")
        assert "Allow cookies for 127.0.0.1:" in b.wd.find_element("id", "edgeguard-status").text
        time.sleep(1)
        assert len(server.answers) == before, "no work done for nothing"
        axe_clean(b, "cookies (script)")
    finally:
        b.quit()


def test_screenshots(server, tmp_path):
    """Desktop, mobile and dark mode, mid-work; and the cookies state."""
    shots = {}
    for name, kwargs, dark, query in [
        ("challenge-desktop", {}, False, dict(d=24, nojs=5, hold=1, **{"request-id": RID})),
        ("challenge-mobile", {"size": (390, 844), "mobile": True}, False, dict(d=24, hold=1, **{"request-id": RID})),
        ("challenge-dark", {}, True, dict(d=24, hold=1, **{"request-id": RID})),
        ("challenge-cookies-de", {"lang": "de-DE"}, False, dict(state="cookies", **{"request-id": RID})),
    ]:
        b = Chromium(**kwargs)
        try:
            if dark:
                b.dark()
            b.wd.get(server.url(**query))
            if query.get("state") != "cookies":
                # Mid-work, or done: the answer is found before 5 % of the
                # expected work about one time in twenty (1 - e^-0.05), and
                # the held answer then leaves the page at "Done".
                progress = ("return document.getElementById('edgeguard-progress').value >= 5"
                            " || document.getElementById('edgeguard-status').textContent.indexOf('Done') === 0")
                wait_for(b.wd, lambda: b.wd.execute_script(progress), timeout=60, what=name)
            path = tmp_path / f"{name}.png"
            b.wd.save_screenshot(str(path))
            assert path.stat().st_size > 10_000, name
            shots[name] = path
            if dark:
                bg = b.wd.execute_script("return getComputedStyle(document.querySelector('main')).backgroundColor")
                assert bg == "rgb(34, 35, 38)", bg
        finally:
            b.quit()
    if os.environ.get("EDGEGUARD_UPDATE_SCREENSHOTS") == "1":
        out = ROOT / "docs" / "img"
        out.mkdir(parents=True, exist_ok=True)
        for name, path in shots.items():
            shutil.copy(path, out / f"{name}.png")
