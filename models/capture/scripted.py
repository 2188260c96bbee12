"""Scripted-client sessions of the capture: command-line tools, HTTP
libraries and curl_cffi's browser impersonations, each making the script
flow (home page, product page, JSON API, an article, a product with a
query, a docs page, then a form POST) with its defaults.
"""

import json
import os
import shutil
import subprocess
import sys

from browsers import USER, PASSWORD
from sitemap import SCRIPT_PATHS

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(HERE, "clients")
PATHS = SCRIPT_PATHS
FORM = "user=ada%40example.org&pass=correct+horse"

# curl_cffi targets: the exact-impersonation class (TLS and HTTP/2
# fingerprints and header sets copied from the real browsers).
IMPERSONATE = ("chrome152", "chrome152_macos", "chrome131_android", "edge101",
               "firefox153", "safari270", "safari270_ios", "tor145")

assert USER and PASSWORD  # the form values of pyclients.py and the Go/Java/node clients


def run(cmd, env=None, timeout=180):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
    return p.stdout.strip()


def first_line(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


class ScriptSession:
    def __init__(self, sid, labels, go):
        self.id = sid
        # Scripts: the engine family is the client itself; no browser, no
        # WebDriver, no language profile.
        self.labels = dict(labels, family=labels["client_name"], webdriver=False, lang="-", device="-", session=sid)
        self.go = go

    def run(self, rec):
        rec.begin(self.labels)
        out = {}
        got = rec.step("script", lambda: out.setdefault("version", self.go()), quiet=0.6, expect="/login")
        if not got:
            raise RuntimeError("the client exited but no request reached nginx")
        return out.get("version", "unknown")

    def cleanup(self):
        pass


def curl(base, tls):
    k = ["-k"] if tls else []
    for p in PATHS:
        run(["curl", "-s", "-o", "/dev/null", *k, base + p])
    run(["curl", "-s", "-o", "/dev/null", *k, "-d", FORM, base + "/login"])
    return first_line(["curl", "--version"]).split()[1]


def curl_chrome_headers(base, tls):
    """curl given a Chromium navigation's headers (clients/chrome_headers.json)
    with -H, as a scraper copies them from the browser: curl puts Host first
    and drops its own User-Agent and Accept for the given ones, so the head
    is Chromium's over HTTP/1.1 (over HTTP/2 on the h2 origin); the
    ClientHello is curl's OpenSSL."""
    with open(os.path.join(CLIENTS, "chrome_headers.json")) as f:
        hs = [a for name, value in json.load(f) for a in ("-H", f"{name}: {value}")]
    k = ["-k"] if tls else []
    for p in PATHS:
        run(["curl", "-s", "-o", "/dev/null", *k, *hs, base + p])
    run(["curl", "-s", "-o", "/dev/null", *k, *hs, "-d", FORM, base + "/login"])
    return first_line(["curl", "--version"]).split()[1]


def wget(base, tls):
    k = ["--no-check-certificate"] if tls else []
    for p in PATHS:
        run(["wget", "-q", "-O", "/dev/null", *k, base + p])
    run(["wget", "-q", "-O", "/dev/null", *k, "--post-data", FORM, base + "/login"])
    return first_line(["wget", "--version"]).split()[2]


def python_client(name):
    return lambda base, tls: run([sys.executable, os.path.join(CLIENTS, "pyclients.py"), name, base,
                                  *PATHS]).splitlines()[-1]


class GoBinary:
    """Built once per capture from clients/goclient.go."""

    def __init__(self, prefix):
        self.path = os.path.join(prefix, "goclient")
        self.error = None

    def __call__(self, base, tls):
        if not os.path.exists(self.path):
            if self.error:
                raise RuntimeError(self.error)
            env = dict(os.environ, GO111MODULE="off", GOFLAGS="")
            try:
                run(["go", "build", "-o", self.path, os.path.join(CLIENTS, "goclient.go")], env=env, timeout=600)
            except Exception as e:
                self.error = f"go build failed: {e}"
                raise
        return run([self.path, base, *PATHS])


def node(base, tls):
    env = dict(os.environ, NODE_TLS_REJECT_UNAUTHORIZED="0", NODE_NO_WARNINGS="1")
    return run(["node", os.path.join(CLIENTS, "nodeclient.mjs"), base, *PATHS], env=env)


def java(base, tls):
    return run(["java", "-Djdk.internal.httpclient.disableHostnameVerification=true",
                os.path.join(CLIENTS, "JavaClient.java"), base, *PATHS], timeout=300).splitlines()[-1]


def sessions(server, have_hosts, prefix):
    tls_host = None if have_hosts else "127.0.0.1"  # None: the origin's own name
    origins = [("ip", None)]
    if have_hosts:
        origins.append(("http-host", None))
    origins += [("tls-h1", tls_host), ("tls-h2", tls_host)]
    clients = [
        ("curl", curl, shutil.which("curl")),
        ("wget", wget, shutil.which("wget")),
        ("python-requests", python_client("requests"), True),
        ("python-httpx", python_client("httpx"), True),
        ("python-aiohttp", python_client("aiohttp"), True),
        ("python-urllib", python_client("urllib"), True),
        ("go-net-http", GoBinary(prefix), shutil.which("go")),
        ("node-fetch", node, shutil.which("node")),
        ("java-httpclient", java, shutil.which("java")),
        ("scrapy", python_client("scrapy"), True),
    ]
    out = []
    for name, fn, available in clients:
        if not available:
            fn = (lambda n: lambda base, tls: (_ for _ in ()).throw(RuntimeError(f"{n}: not installed")))(name)
        for origin, host in origins:
            labels = {"label": "automated", "class": "scripted", "client_name": name, "mode": "script",
                      "window": "-", "driver": "-", "origin": origin}
            base = server.base(origin, host)
            tls = origin.startswith("tls")
            out.append(ScriptSession(f"{name}-{origin}", labels,
                                     (lambda f, b, t: lambda: f(b, t))(fn, base, tls)))
    # Scripts that copied a browser's headers: a browser's head, a library's
    # TLS. Their own class: on plain HTTP nothing tells them from the
    # browser but what they send to each URL.
    copied = [("curl-chrome-headers", curl_chrome_headers, shutil.which("curl")),
              ("python-requests-chrome-headers", python_client("requests-chrome-headers"), True)]
    for name, fn, available in copied:
        if not available:
            fn = (lambda n: lambda base, tls: (_ for _ in ()).throw(RuntimeError(f"{n}: not installed")))(name)
        for origin, host in origins:
            labels = {"label": "automated", "class": "copied-headers", "client_name": name, "mode": "script",
                      "window": "-", "driver": "-", "origin": origin}
            base = server.base(origin, host)
            tls = origin.startswith("tls")
            out.append(ScriptSession(f"{name}-{origin}", labels,
                                     (lambda f, b, t: lambda: f(b, t))(fn, base, tls)))
    for target in IMPERSONATE:
        for origin, host in origins:
            labels = {"label": "automated", "class": "impersonation", "client_name": f"curl_cffi-{target}",
                      "mode": "script", "window": "-", "driver": "-", "origin": origin}
            base = server.base(origin, host)
            out.append(ScriptSession(f"curl_cffi-{target}-{origin}", labels,
                                     (lambda b, t: lambda: python_client("curl_cffi:" + t)(b, True))(base, target)))
    return out
