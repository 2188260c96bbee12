#!/usr/bin/env python3
"""Fleet signals measured through real nginx (issue 33, part 2 item 3).

One nginx in challenge mode over TLS (JA4 from the ClientHello) and plain
HTTP, configured from one JSON file that `edgeguard signals --config` reads
too, with a site rule that challenges /login (as a site protects its login
page). Clients come from many client prefixes on loopback: nginx takes the
client address from `X-Real-IP` (`set_real_ip_from 127.0.0.1`), a header
the header-order fingerprint does not read (x-forwarded-for would be one of
its codes).

- a script: Python `requests` (one fingerprint), over --bot-prefixes /24s,
  a few requests from each (/login, /, /products); it never solves a
  challenge;
- people: Debian's Chromium, headful under Xvfb (Selenium), one person per
  /24 (cookies cleared, a new X-Real-IP through the DevTools protocol):
  /login gets the real challenge page, the page's script solves it, the
  browser lands on the origin with the clearance cookie, then / and
  /products.

Then `edgeguard signals` over nginx's access log, and a table per key.
With --check it exits 1 unless the script's keys stand out (many /24s, no
solve, no clearance) and the browser's do not (every challenge solved,
most requests cleared).

    python3 scripts/signals-measure.py [--people 40] [--bot-prefixes 300] [--check]

Needs `make build` (release library and binary), chromium, chromium-driver,
xvfb, selenium, requests (make deps-test).
"""

import argparse
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
E2E = ROOT / "tests" / "e2e"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


e2e = _load("e2e_conftest", E2E / "conftest.py")
EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
SECRET = ROOT / "tests" / "fixtures" / "challenge" / "secret"
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
XVFB = shutil.which("Xvfb")


def config(path, difficulty):
    """The one configuration nginx and `edgeguard signals` read."""
    path.write_text(json.dumps({
        "internal_headers": str(e2e.TEST_LIST),
        "models": {"bot": str(ROOT / "models" / "bot.json")},
        "mode": "challenge",
        "challenge_secret": str(SECRET),
        "challenge_difficulty": difficulty,
        "vars": True,
        "rules": [{"name": "login", "when": {"path": {"prefix": "/login"}}, "action": "challenge"}],
    }, indent=1))


def nginx_conf(cfg, port, tls_port, cert_dir, log):
    return e2e.nginx_preamble() + f"""
    include {ROOT}/nginx-conf/log-format-challenge.conf;
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            config = "{cfg}",
            lib_path = "{e2e.LIB}",
        }})
        require("resty.edgeguard.record")
        require("resty.edgeguard.tls")
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}
    server {{
        listen 127.0.0.1:{port};
        listen 127.0.0.1:{tls_port} ssl;
        ssl_certificate {cert_dir}/cert.pem;
        ssl_certificate_key {cert_dir}/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Real-IP;
        set $edgeguard_request_headers "";
        set $edgeguard_bot "";
        set $edgeguard_spoof "";
        set $edgeguard_action "";
        set_by_lua_block $edgeguard_ja4 {{ return require("resty.edgeguard.tls").ja4() or "" }}
        set_by_lua_block $edgeguard_tls_family {{ return require("resty.edgeguard.tls").family() or "" }}
        set $edgeguard_time "";
        set $edgeguard_verified_bot "";
        # With site rules, vars = true sets these too.
        set $edgeguard_rule "";
        set $edgeguard_tag "";
        set $edgeguard_bot_category "";
        access_log {log} edgeguard_json_challenge;
        rewrite_by_lua_block {{
            require("resty.edgeguard.record").capture()
            require("resty.edgeguard").access{{ vars = true }}
        }}
        location / {{
            content_by_lua_block {{
                ngx.header.content_type = "text/html"
                ngx.say("<!doctype html><title>origin</title><p id=a>", ngx.var.edgeguard_action, "</p>")
            }}
        }}
    }}
}}
"""


def run_script(tls_port, prefixes):
    """The scripted client: python-requests, never solving."""
    import requests
    import urllib3

    warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
    statuses = {}
    for i in range(prefixes):
        addr = f"10.{20 + i // 250}.{i % 250}.{7 + i % 200}"
        with requests.Session() as s:
            s.verify = False
            s.headers["X-Real-IP"] = addr
            for path in ("/login", "/", "/products"):
                r = s.get(f"https://127.0.0.1:{tls_port}{path}", timeout=10, verify=False)
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
    return statuses


class Browser:
    """Headful Chromium under Xvfb; one profile, each person a fresh
    cookie jar and address."""

    def __init__(self, display, profile):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--no-sandbox", "--disable-dev-shm-usage", "--no-first-run", "--disable-gpu",
                  "--disable-extensions", "--disable-background-networking", "--disable-sync",
                  "--ignore-certificate-errors", f"--user-data-dir={profile}"):
            opts.add_argument(a)
        env = dict(os.environ, DISPLAY=display)
        self.wd = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER, env=env), options=opts)
        self.wd.set_page_load_timeout(60)
        self.wd.execute_cdp_cmd("Network.enable", {})

    def person(self, base, addr):
        from selenium.webdriver.support.ui import WebDriverWait

        self.wd.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.wd.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"X-Real-IP": addr}})
        seen = []
        for path in ("/login", "/", "/products"):
            self.wd.get(base + path)
            WebDriverWait(self.wd, 60, poll_frequency=0.1).until(lambda d: d.title == "origin")
            seen.append(self.wd.find_element("id", "a").text)
        return seen

    def quit(self):
        self.wd.quit()


def run_people(tls_port, people, tmp):
    n = 120
    while os.path.exists(f"/tmp/.X11-unix/X{n}") or os.path.exists(f"/tmp/.X{n}-lock"):
        n += 1
    xvfb = subprocess.Popen([XVFB, f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while not os.path.exists(f"/tmp/.X11-unix/X{n}"):
            if xvfb.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("Xvfb did not start")
            time.sleep(0.1)
        b = Browser(f":{n}", tmp / "profile")
        outcomes = {}
        try:
            for p in range(people):
                addr = f"172.{16 + p // 250}.{p % 250}.{10 + p % 200}"
                for o in b.person(f"https://127.0.0.1:{tls_port}", addr):
                    outcomes[o] = outcomes.get(o, 0) + 1
        finally:
            b.quit()
        return outcomes
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=10)


def table(snapshot):
    rows = []
    for e in snapshot["entries"]:
        req = e["requests"]
        solved = f"{e['solved'] / e['challenges']:.2f}" if e["challenges"] else "-"
        rows.append((e["kind"], e["key"], req, e["prefixes24"], e["user_agents"],
                     f"{e['flagged'] / req:.2f}", e["challenges"], solved, f"{e['cleared'] / req:.2f}"))
    rows.sort(key=lambda r: (r[0], -r[2]))
    head = ("kind", "key", "requests", "/24s", "UAs", "flagged", "challenges", "solved/chall.", "cleared")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join(f"`{c}`" if i == 1 else str(c) for i, c in enumerate(r)) + " |")
    return "\n".join(out)


def check(snapshot, people, prefixes):
    """The script's keys stand out, the browser's do not. A browser's
    challenge and its answer are requests of different header orders (a
    navigation, then the page's own hop), so on `headers` keys the solves
    are summed over the browser's keys; its JA4 sees both."""
    problems = []
    entries = snapshot["entries"]
    script = [e for e in entries if e["requests"] >= prefixes and e["prefixes24"] >= 0.9 * prefixes
              and e["user_agents"] == 1 and e["solved"] == 0 and e["cleared"] == 0
              and e["challenges"] >= prefixes]
    if sorted(e["kind"] for e in script) != ["headers", "ja4"]:
        problems.append(f"the script's two keys do not stand out: {script}")
    b_ja4 = [e for e in entries if e["kind"] == "ja4" and e["solved"] > 0]
    if len(b_ja4) != 1:
        problems.append(f"not one browser JA4 with solves: {b_ja4}")
    for e in b_ja4:
        if e["solved"] < 0.9 * e["challenges"] or e["cleared"] < e["requests"] / 2 or e["prefixes24"] < 0.9 * people:
            problems.append(f"browser JA4: {e}")
    chrome = [e for e in entries if e["key"].startswith("chrome:")]
    challenged = sum(e["challenges"] for e in chrome)
    if not chrome or sum(e["solved"] for e in chrome) < 0.9 * challenged or challenged < people:
        problems.append(f"the browser's headers keys: {chrome}")
    return problems


def measure(people, prefixes, difficulty, tmp, out=print):
    """Runs the traffic through nginx and `edgeguard signals` in `tmp`;
    returns the snapshot (a dict) and the problems `check` finds (and
    what nginx's error log says)."""
    cfg, log = tmp / "config.json", tmp / "access.jsonl"
    config(cfg, difficulty)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", tmp / "key.pem",
                    "-out", tmp / "cert.pem"], check=True, capture_output=True, timeout=60)
    os.chmod(tmp / "key.pem", 0o644)
    port, tls_port = e2e.free_port(), e2e.free_port()
    nginx = e2e.Nginx(nginx_conf(cfg, port, tls_port, tmp, log))
    nginx.start(port)
    t0 = time.monotonic()
    try:
        script = run_script(tls_port, prefixes)
        t1 = time.monotonic()
        seen = run_people(tls_port, people, tmp)
        t2 = time.monotonic()
        time.sleep(0.5)  # the access log is written after the response
    finally:
        nginx.stop()
        bad = e2e.bad_log_lines(nginx.error_log)
        nginx.cleanup()
    out(f"script: {sum(script.values())} requests from {prefixes} /24s, statuses {script} ({t1 - t0:.1f} s)")
    out(f"people: {people} from {people} /24s, origin saw {seen} ({t2 - t1:.1f} s)")
    snap = tmp / "snapshot.json"
    r = subprocess.run([EDGEGUARD, "signals", "--config", cfg, "--out", snap, log],
                       capture_output=True, text=True)
    out(r.stderr.strip())
    if r.returncode != 0:
        raise RuntimeError(f"edgeguard signals failed: {r.stderr}")
    snapshot = json.loads(snap.read_text())
    return snapshot, check(snapshot, people, prefixes) + [f"nginx error log: {b}" for b in bad]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--people", type=int, default=40)
    ap.add_argument("--bot-prefixes", type=int, default=300)
    ap.add_argument("--difficulty", type=int, default=12)
    ap.add_argument("--check", action="store_true", help="exit 1 unless the keys separate")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    for need, what in ((EDGEGUARD.exists() and e2e.LIB.exists(), "make build"),
                       (CHROMIUM and CHROMEDRIVER and XVFB, "chromium, chromium-driver, xvfb")):
        if not need:
            sys.exit(f"signals-measure: needs {what}")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-signals-"))
    os.chmod(tmp, 0o777)
    try:
        snapshot, problems = measure(args.people, args.bot_prefixes, args.difficulty, tmp)
        print()
        print(table(snapshot))
    finally:
        if args.keep:
            print(f"\nkept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if problems:
        print("\n" + "\n".join(problems))
        if args.check:
            sys.exit(1)


if __name__ == "__main__":
    main()
