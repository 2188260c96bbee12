"""TLS facts for generated requests, drawn from the captured ones.

The generator (gen_traffic.py) makes heads only. Over HTTPS every one of
those clients would also have sent a ClientHello, and the schema-3 models
read what nginx saw of it (`edgeguard_ja4`, `edgeguard_tls_family`). This
module gives each generated row the TLS facts of the library that would
have made it, picked from the JA4s the capture recorded for that library
(tests/fixtures/real_clients/, `make capture`):

- people's browsers: Chromium's for every Chromium-engine UA (Chrome, Edge,
  Opera, Samsung: one BoringSSL), Firefox's for Firefox off iOS, and for
  Safari and every iOS browser the ClientHello curl_cffi copies from Safari
  (Apple's stack; its GREASE makes the family guess `boringssl`);
- scripts: their own library's (okhttp: Java's; axios: Node's);
- headless Chrome and the "impersonate" spoofers: the claimed browser's;
- spoofers built on a library (requests-*, curl-ua, go-sorted): that
  library's; the other spoofing mistakes are made with headless browsers and
  with libraries alike: half each;
- crawlers: Chromium's (rendering crawlers) or a library's.

Plain-HTTP hostnames get none, and 10 % of the rest get none either (TLS
ended in front of nginx, no ssl_client_hello_by_lua): the models must
score a request without TLS facts too.

25 % of the rows given TLS facts, people's and automation's alike, get a
JA4 no capture has (`drift`, as the header orders have theirs): one of 8
variants of their client's, with the same cipher list, another extension
hash, and for half of the variants one extension more or less. A browser's next release, or a library's other build, sends such a
JA4; without drift every JA4 in training is one seen thousands of times and
the models would learn "an unseen JA4" as a signal of its own, which it is
not (measured: held out, the captured Chromium's JA4 pushed 8 of its 423
requests over the threshold). The family and the checks stay the client's.

A pool of a family held out of a run (train.py's held-out families) is not
used in that run, so "held out" also means "its captured JA4s never seen":
a browser's pool is replaced by the JA4s FoxIO's public test captures show
for that engine, older releases' (tests/fixtures/tls/foxio-clienthellos.txt:
Chrome's two, Firefox's one), which is what an operator knows of a browser
before its new release arrives; a library's pool is dropped (its rows get no
TLS facts).
"""

import random

# Pool name -> the corpus family (corpus.family) whose captures fill it.
POOL_FAMILY = {
    "chromium": "chromium-linux", "firefox": "firefox", "safari": "curl_cffi-safari",
    "curl": "curl", "wget": "wget", "python-requests": "python", "python-httpx": "python",
    "python-aiohttp": "python", "python-urllib": "python", "go": "go-net-http",
    "java": "java-httpclient", "node": "node-fetch",
}

# Captured client name -> pool.
CLIENT_POOL = {
    "chromium": "chromium", "chromium-headless-desktop-ua": "chromium", "selenium-chromium": "chromium",
    "firefox": "firefox", "curl_cffi-safari270": "safari", "curl_cffi-safari270_ios": "safari",
    "curl": "curl", "wget": "wget", "python-requests": "python-requests", "python-httpx": "python-httpx",
    "python-aiohttp": "python-aiohttp", "python-urllib": "python-urllib", "scrapy": "python-urllib",
    "go-net-http": "go", "java-httpclient": "java", "node-fetch": "node",
}

SCRIPT_POOL = {
    "curl": "curl", "wget": "wget", "python-requests": "python-requests", "aiohttp": "python-aiohttp",
    "httpx": "python-httpx", "urllib": "python-urllib", "go": "go", "java": "java", "okhttp": "java",
    "node-fetch": "node", "axios": "node",
}

LIBRARIES = ["python-requests", "python-httpx", "python-aiohttp", "node", "go", "curl"]
SPOOF_LIBRARY = {"requests-ua-only": "python-requests", "requests-full-set": "python-requests",
                 "curl-ua": "curl", "go-sorted": "go"}
NO_TLS_SHARE = 0.10
DRIFT_SHARE = 0.25
# Drifted JA4s per captured one: few, so that the models' CTR tables (one
# entry per value seen in training) stay small.
DRIFT_VARIANTS = 8

# Published JA4s (FoxIO-LLC/ja4's pcap/ captures) by engine, for held-out runs.
PUBLISHED = {
    "chromium": [("t13d1516h2_8daaf6152771_e5627efa2ab1", "boringssl"),
                 ("t13d1516h2_8daaf6152771_9b887d9acb53", "boringssl")],
    "firefox": [("t13d1715h2_5b57614c22b0_3d5424432f57", "nss")],
}


def pools(captured_rows):
    """{pool: sorted distinct [(ja4, family)]} from the captured rows that
    came over TLS."""
    out = {}
    for r in captured_rows:
        pool = CLIENT_POOL.get(r["name"])
        if pool and r.get("ja4"):
            out.setdefault(pool, set()).add((r["ja4"], r["tls_family"]))
    return {k: sorted(v) for k, v in out.items()}


def without(pool_map, family):
    """The pools, less those a held-out corpus family filled (a browser's
    replaced by its published JA4s)."""
    out = {}
    for k, v in pool_map.items():
        if POOL_FAMILY.get(k) != family:
            out[k] = v
        elif k in PUBLISHED:
            out[k] = PUBLISHED[k]
    return out


def browser_pool(ua):
    ios = "iPhone" in ua or "iPad" in ua
    if ios or ("Safari/" in ua and "Chrome/" not in ua and "Chromium/" not in ua and "Firefox/" not in ua):
        return "safari"
    if "Firefox/" in ua:
        return "firefox"
    if "Chrome/" in ua or "Chromium/" in ua:
        return "chromium"
    return None


def pool_for(row, rng):
    ua = next((v for n, v in row["headers"] if n.lower() == "user-agent"), "")
    kind, detail = row["kind"], row["detail"]
    if kind == "browser":
        return None if row.get("plain_http") else browser_pool(ua)
    if kind == "headless-chrome":
        return "chromium"
    if kind == "crawler":
        return "chromium" if rng.random() < 0.4 else rng.choice(LIBRARIES)
    if kind == "spoofer":
        if detail in SPOOF_LIBRARY:
            return SPOOF_LIBRARY[detail]
        if detail == "impersonate":
            return browser_pool(ua)
        return "chromium" if rng.random() < 0.5 else rng.choice(LIBRARIES)
    return SCRIPT_POOL.get(kind)


def drifted(ja4, variant):
    """Variant `variant` of `ja4`: another extension hash and, for odd
    variants, one extension more or less (counts stay within 1..99)."""
    r = random.Random("%s/%d" % (ja4, variant))
    exts = int(ja4[6:8])
    if variant % 2:
        exts = min(99, max(1, exts + r.choice((-1, 1))))
    c = "%012x" % r.getrandbits(48)
    return "%s%02d%s_%s_%s" % (ja4[:6], exts, ja4[8:10], ja4[11:23], c)


def assign(gen_rows, pool_map, seed, no_tls_share=NO_TLS_SHARE):
    """Copies of the generated rows with `ja4` and `tls_family` (None for
    none), deterministic per seed; `no_tls_share` of the rows that could
    have TLS facts get none."""
    rng = random.Random("tls-%d" % seed)
    out = []
    for row in gen_rows:
        pool = pool_for(row, rng)
        choices = pool_map.get(pool) if pool else None
        ja4 = family = None
        if choices and rng.random() >= no_tls_share:
            ja4, family = rng.choice(choices)
            if rng.random() < DRIFT_SHARE:
                ja4 = drifted(ja4, rng.randrange(DRIFT_VARIANTS))
        out.append(dict(row, ja4=ja4, tls_family=family))
    return out
