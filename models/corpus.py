"""The captured real-client corpus (tests/fixtures/real_clients/), as rows
that `edgeguard features` and `edgeguard replay` read, with their labels.

Shared by models/train.py, models/eval_real.py and tests/e2e/test_real_clients.py
so that "human", "scripted" and "byte-identical" mean one thing everywhere.

Each corpus line is an access-log record of nginx-conf/log-format.conf (its
`headers` a JSON array of [name, value] pairs, as nginx saw them) plus the
capture's labels: `label` (human or automated), `class` (human, scripted,
headless, impersonation, byte-identical, copied-headers), `client` (the client's name),
`client_version`, `mode`, `origin` (ip, http-host, tls-h1, tls-h2),
`protocol`, `flow`, and `family` (the browser family a held-out run leaves
out together: `chromium-linux`, `chromium-mobile-emulated`, `firefox`,
`firefox-rfp`, `webkitgtk`, `qtwebengine`, ...; lines of captures made
before the field existed get theirs from the client name, FAMILY_OF_CLIENT);
over TLS also `edgeguard_ja4` and `edgeguard_tls_family` as nginx logged
them (rows: `ja4`, `tls_family`; None on plain HTTP).

Lines of the wider capture (issue 29) also say `engine_version`,
`webdriver` (driven through WebDriver or Marionette), `lang` (the
Accept-Language profile), `device` (Chromium's emulated phone), `window`,
`driver`, `dest`, `url_kind` (what kind of site URL) and `scope` (`base`:
the kind of request the capture before it made; `wider`: new). Older lines
have none of them: the rows then say what the old capture was (`base`).
"""

import ipaddress
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "fixtures", "real_clients", "corpus.jsonl")
# The corpus' people as real front proxies delivered them to the edge
# (scripts/deployment-measure.py --record): one file per front, each row's
# family "<family>+<front>", its `peer` and the `profile` the edge judged it
# with. Never trained on: held out by family by construction.
THROUGH = os.path.join(ROOT, "tests", "fixtures", "real_clients", "through")

# Classes a head can be judged on. Byte-identical automation (Selenium driving
# a headful browser, headless Firefox) and exact impersonation (curl_cffi)
# send what a person's browser sends: reported as their own rows, counted
# neither way, never trained on.
HUMAN = "human"
SCRIPTED = "scripted"
HEADLESS = "headless"
BYTE_IDENTICAL = "byte-identical"
IMPERSONATION = "impersonation"
# Scripts sending a browser's copied headers (capture/scripted.py): over
# TLS their ClientHello is a library's and they are judged; over plain HTTP
# their head is the browser's and they are not.
COPIED = "copied-headers"
UNJUDGED = (BYTE_IDENTICAL, IMPERSONATION)

# The family of a line without a `family` field, by its client name:
# Chromium's captures (headful, headless, Selenium) are one family, the
# Python libraries (which share urllib3/asyncio defaults) one, every other
# client its own.
PYTHON = {"python-requests", "python-httpx", "python-aiohttp", "python-urllib", "scrapy"}
PYTHON_FAMILY = "python"
FAMILY_OF_CLIENT = {
    "chromium": "chromium-linux", "chromium-headless-desktop-ua": "chromium-linux",
    "selenium-chromium": "chromium-linux", "firefox": "firefox",
    **{name: PYTHON_FAMILY for name in PYTHON},
}


def _is_ip(text):
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def load(path=CORPUS):
    """The corpus rows, or [] if there is no corpus file."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            rec = json.loads(line)
            headers = rec.get("headers") or []
            if isinstance(headers, str):
                headers = json.loads(headers) if headers not in ("", "-") else []
            client = rec.get("client", "")
            # The capture's client *name* may share the `client` key with
            # the address; the address is then the loopback it came from.
            addr = rec.get("addr") or rec.get("remote_addr") or (client if _is_ip(client) else "127.0.0.1")
            name = rec.get("client_name") or (client if not _is_ip(client) else rec.get("name", "unknown"))
            cls = rec.get("class") or (HUMAN if rec.get("label") == "human" else "scripted")
            rows.append({
                "method": rec["method"],
                "uri": rec["uri"],
                "version": rec["version"],
                "client": addr,
                "headers": [[h[0], h[1]] for h in headers],
                "line": n,
                "name": name,
                "client_version": str(rec.get("client_version", "")),
                "class": cls,
                "human": cls == HUMAN,
                "mode": rec.get("mode", ""),
                "origin": rec.get("origin", ""),
                "protocol": rec.get("protocol", rec["version"]),
                "flow": rec.get("flow", ""),
                "session": rec.get("session", ""),
                "ja4": rec.get("edgeguard_ja4") or None,
                "tls_family": rec.get("edgeguard_tls_family") or None,
                # The wider capture's labels (defaults: what an older line was).
                # The Python libraries share urllib3/asyncio defaults: one
                # family, whatever the line says.
                "family": (PYTHON_FAMILY if name in PYTHON else rec.get("family")) or FAMILY_OF_CLIENT.get(name, name),
                "engine_version": str(rec.get("engine_version", "")),
                "webdriver": bool(rec.get("webdriver", rec.get("driver") in ("chromedriver", "marionette"))),
                "lang": rec.get("lang", ""),
                "device": rec.get("device", "-"),
                "window": rec.get("window", ""),
                "driver": rec.get("driver", ""),
                "dest": rec.get("dest", ""),
                "url_kind": rec.get("url_kind", ""),
                "scope": rec.get("scope", "base"),
                # Behind a front (THROUGH): the connection's address and the
                # edge's proxy_profile; the corpus itself came direct.
                "peer": rec.get("peer") or None,
                "profile": rec.get("profile", "direct"),
                "front": rec.get("front", "direct"),
            })
    return rows


def judged(row):
    """Whether the row counts towards the targets (not byte-identical, not
    a copied-headers script over plain HTTP)."""
    if row["class"] == COPIED:
        return bool(row.get("ja4"))
    return row["class"] not in UNJUDGED


def family(row):
    """The family held out together in validation: every capture of one
    client, person or automated (Chromium headful and headless are one
    family: the same bytes but for the User-Agent)."""
    return row["family"]


def request_line(row):
    """The row as an `edgeguard features` / `edgeguard replay` input line,
    with its TLS facts when it has some."""
    line = {k: row[k] for k in ("method", "uri", "version", "client", "headers")}
    if row.get("peer"):
        line["peer"] = row["peer"]
    if row.get("ja4"):
        line["edgeguard_ja4"] = row["ja4"]
        line["edgeguard_tls_family"] = row.get("tls_family") or ""
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def load_through(directory=THROUGH):
    """The rows of every front's file in `directory` ([] without one)."""
    if not os.path.isdir(directory):
        return []
    return [r for name in sorted(os.listdir(directory)) if name.endswith(".jsonl")
            for r in load(os.path.join(directory, name))]
