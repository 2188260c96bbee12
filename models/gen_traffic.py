#!/usr/bin/env python3
"""Labelled synthetic HTTP request traffic for training edgeguard's bot models.

    python3 models/gen_traffic.py --seed 1 --count 40000 > traffic.jsonl

Each line is one request in the input format of `edgeguard features`
({"method", "uri", "version", "client", "headers": [[name, value], ...]}, header
names lower-cased and in arrival order, as nginx hands them over) plus labels:

    "automated": 1 for any scripted client, 0 for a person's browser
    "spoof":     1 for an automated client whose User-Agent claims a regular
                 browser, 0 for a real browser, null for automated clients that
                 do not pretend (curl, declared crawlers, HeadlessChrome)
    "kind":      the generator that made it (browser, crawler, curl, ...)
    "detail":    the variant within the kind (e.g. which spoofing mistake)
    "family":    people only: `generated:<browser>-<platform>`, the family
                 train.py holds out together
    "plain_http": people only: sent to a plain-HTTP hostname (no TLS facts)

Where the headers come from:
  * people: `browserforge` header sets (real Chrome/Firefox/Safari/Edge header
    names, values and User-Agents, desktop and mobile). browserforge 1.2.4 puts
    each sec-fetch-* value under its neighbour's name and sends one
    Accept-Language for every locale, so both are replaced by values a browser
    sends for the kind of request made (navigation, XHR, image, ...); sets
    that combine values no single browser build sends are drawn again
    (`sane`). Visits vary: first visits, returns, referers, cookies,
    languages, HTTP/1.1 and HTTP/2, plain-HTTP origins, proxies that add
    headers, DNT/GPC, in-app browsers.
  * crawlers: User-Agents from `crawler-user-agents`, with the headers crawlers
    send (some declare themselves, some do not).
  * scripted clients: the default headers and order of curl, wget,
    python-requests, aiohttp, httpx, urllib, Go net/http, Java, OkHttp, Node
    fetch, axios, headless Chrome.
  * scrapers that spoof a browser: real browser UAs from browserforge with the
    mistakes such tools make (library header order, Go's sorted headers,
    missing or stale client hints, wrong platform, shuffled sec-fetch values,
    Firefox UA on Chrome headers, ...). Exact impersonations are not made: a
    browser's exact head is no evidence of anything (train.py keeps only the
    automated rows that show something no browser does).

Reproducible: the same --seed and --count give the same bytes.
"""

import argparse
import json
import random
import re
import sys

from browserforge.headers import HeaderGenerator
import crawleruseragents

# ---------------------------------------------------------------- site model

PAGES = [
    "/", "/", "/", "/products", "/products/{id}", "/products/{id}/reviews", "/category/{word}",
    "/blog", "/blog/{year}/{word}-{word}", "/about", "/contact", "/cart", "/checkout", "/account",
    "/search?q={word}", "/search?q={word}+{word}&page={n}", "/login", "/help/{word}",
    "/products?sort=price&page={n}", "/en/{word}/{id}",
]
ASSETS = [
    "/static/app.{hash}.js", "/static/vendor.{hash}.js", "/static/main.{hash}.css",
    "/img/{word}-{id}.webp", "/img/logo.svg", "/fonts/inter-{word}.woff2", "/favicon.ico",
    "/img/{word}.jpg", "/img/{word}.png",
]
API = [
    "/api/v1/products?page={n}", "/api/v1/products/{id}", "/api/v2/search?q={word}&limit={n}",
    "/api/cart", "/api/v1/price?sku={id}&currency=EUR", "/graphql", "/api/v1/stock/{id}",
    "/api/session", "/api/v1/reviews?product={id}&offset={n}0",
]
PROBES = [
    "/wp-login.php", "/xmlrpc.php", "/.env", "/.git/config", "/admin", "/phpmyadmin/index.php",
    "/wp-content/plugins/{word}/readme.txt", "/config.json", "/backup.zip", "/server-status",
    "/cgi-bin/luci", "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php", "/actuator/health",
]
CRAWL = ["/robots.txt", "/sitemap.xml", "/sitemap-products-{n}.xml", "/feed.xml", "/ads.txt"]
WORDS = [
    "shoes", "winter", "sale", "lamp", "coffee", "travel", "garden", "phone", "desk", "jacket",
    "review", "guide", "best", "cheap", "new", "blue", "kids", "sport", "tools", "books",
]

LANGS = {
    # a browser's Accept-Language for a few user locales; Chromium and Safari
    # use q steps of 0.1, Firefox of 0.1/0.2 depending on the list length.
    "en-US": ("en-US,en;q=0.9", "en-US,en;q=0.5"),
    "en-GB": ("en-GB,en-US;q=0.9,en;q=0.8", "en-GB,en;q=0.5"),
    "de-DE": ("de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7", "de,en-US;q=0.7,en;q=0.3"),
    "fr-FR": ("fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7", "fr,fr-FR;q=0.8,en-US;q=0.5,en;q=0.3"),
    "es-ES": ("es-ES,es;q=0.9", "es-ES,es;q=0.8,en-US;q=0.5,en;q=0.3"),
    "pt-BR": ("pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7", "pt-BR,pt;q=0.8,en-US;q=0.5,en;q=0.3"),
    "ja-JP": ("ja,en-US;q=0.9,en;q=0.8", "ja,en-US;q=0.7,en;q=0.3"),
    "zh-CN": ("zh-CN,zh;q=0.9", "zh-CN,zh;q=0.8,zh-TW;q=0.7,zh-HK;q=0.5,en-US;q=0.3,en;q=0.2"),
    "pl-PL": ("pl-PL,pl;q=0.9,en-US;q=0.8,en;q=0.7", "pl,en-US;q=0.7,en;q=0.3"),
    "nl-NL": ("nl-NL,nl;q=0.9,en-US;q=0.8,en;q=0.7", "nl,en-US;q=0.7,en;q=0.3"),
}
LOCALE_WEIGHTS = [40, 8, 10, 8, 7, 6, 5, 5, 5, 6]

CHROME_NAV_ACCEPT = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,"
    "*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
)
FIREFOX_NAV_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
CHROME_IMG_ACCEPT = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
FIREFOX_IMG_ACCEPT = "image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"


def fill(rng, template):
    out = template
    while "{" in out:
        start = out.index("{")
        end = out.index("}", start)
        key = out[start + 1:end]
        value = {
            "id": lambda: str(rng.randint(1, 99999)),
            "word": lambda: rng.choice(WORDS),
            "year": lambda: str(rng.randint(2015, 2026)),
            "n": lambda: str(rng.randint(1, 40)),
            "hash": lambda: "%08x" % rng.getrandbits(32),
        }[key]()
        out = out[:start] + value + out[end + 1:]
    return out


def client_v4(rng, datacenter=False):
    if datacenter:
        first = rng.choice([3, 13, 18, 34, 35, 44, 52, 54, 104, 138, 139, 157, 159, 167, 178, 185, 188, 193, 194, 209])
    else:
        first = rng.choice([24, 31, 37, 46, 62, 71, 73, 76, 77, 79, 81, 82, 84, 86, 88, 89, 90, 92, 93, 94, 98,
                            108, 109, 176, 177, 186, 187, 189, 190, 191, 201, 212, 213, 217])
    return "%d.%d.%d.%d" % (first, rng.randint(0, 255), rng.randint(0, 255), rng.randint(1, 254))


def client_v6(rng):
    return "2%03x:%x:%x:%x::%x" % (rng.randint(0x400, 0xa0f), rng.getrandbits(16), rng.getrandbits(16),
                                   rng.getrandbits(16), rng.getrandbits(16))


def client(rng, v6_share, datacenter=False):
    return client_v6(rng) if rng.random() < v6_share else client_v4(rng, datacenter)


def cookie(rng):
    names = ["_ga", "_gid", "session", "csrftoken", "cart", "consent", "_fbp", "lang", "ab", "theme"]
    chosen = rng.sample(names, rng.randint(1, 7))
    return "; ".join("%s=%x" % (n, rng.getrandbits(rng.choice([16, 32, 64]))) for n in chosen)


# ----------------------------------------------------------- browser headers

class Browsers:
    """Realistic browser header sets from browserforge, cleaned up."""

    def __init__(self):
        self.gen = HeaderGenerator()

    def raw(self, rng, browser, device, http2):
        for _ in range(20):
            version = 2 if http2 else 1
            try:
                h = self.gen.generate(browser=browser, device=device, http_version=version)
            except Exception:  # browserforge cannot satisfy some combinations
                version = 2
                h = self.gen.generate(browser=browser, device=device, http_version=2)
            pairs = [(k.lower(), v) for k, v in h.items()]
            if in_own_order(self.gen, browser, list(h), version) and sane(browser, dict(pairs)):
                return pairs
            device = rng.choice(["desktop", "mobile"])
        raise RuntimeError("browserforge gave no usable %s header set" % browser)


def major(ua, token):
    i = ua.find(token)
    if i < 0:
        return None
    digits = ""
    for ch in ua[i + len(token):]:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits) if digits else None


# Why browserforge's sets were drawn again (gen_traffic.py --stats).
REJECTED = {}


def in_own_order(gen, browser, names, version):
    """browserforge orders a set by its per-browser list (headers-order.json,
    HTTP/1 spellings first, then HTTP/2's); a name spelt the other way
    (`upgrade-insecure-requests` in an HTTP/1 set) lands after every other
    header, an order no browser sends (seen: an HTTP/1 Chrome set ending in
    `upgrade-insecure-requests`). Names are compared without case, in the
    order of their first place in the list."""
    order = [n.lower() for n in gen.headers_order.get(browser, [])]
    places = [order.index(n.lower()) for n in names if n.lower() in order]
    if places == sorted(places):
        return True
    REJECTED["a header out of browserforge's own order"] = \
        REJECTED.get("a header out of browserforge's own order", 0) + 1
    return False


def sane(browser, h):
    """Whether browserforge's set is one a browser sends. Its header network
    is a Bayesian network over values seen in real traffic, and sampling it
    combines values of different builds: impossible UAs (Chrome/45 on an
    iPhone with AppleWebKit/537.36), and sets no single Chromium build sends
    (measured on 6 000 sets: 2 % of Chrome's with some client hints but not
    the three, or none over HTTPS, a few with hints of another version or
    platform than the UA, navigations without Upgrade-Insecure-Requests,
    Safari without Accept-Encoding). Those are drawn again, counted by
    reason in REJECTED (gen_traffic.py --stats; models/metrics.json); every
    reason is a fact about the browser, not a rule of the model: Chromium
    sends the three low-entropy hints together, from the build that wrote
    the UA, to every secure context (none at all with JavaScript off for
    the site, a person the generator does not make: the captured one is in
    tests/e2e/data/behaviour/), and Upgrade-Insecure-Requests on every
    navigation; every browser offers gzip. What middleboxes do to a
    person's head (no `br` behind a TLS-inspecting antivirus) is kept."""
    ua = h.get("user-agent", "")
    reason = artifact(browser, h, ua)
    if reason:
        REJECTED[reason] = REJECTED.get(reason, 0) + 1
        return False
    return True


def ua_os(ua):
    for token, name in (("Windows", "Windows"), ("Android", "Android"), ("iPhone", "iOS"), ("iPad", "iOS"),
                        ("CrOS", "Chrome OS"), ("Macintosh", "macOS"), ("Linux", "Linux")):
        if token in ua:
            return name
    return None


def artifact(browser, h, ua):
    if browser in ("chrome", "edge"):
        v = major(ua, "Chrome/")
        if v is None or v < 100 or ("iPhone" in ua or "iPad" in ua):
            return "old or impossible UA"
        if browser == "edge" and "Edg" not in ua:
            return "Edge without Edg/"
        hints = [n in h for n in ("sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform")]
        if not all(hints):
            return "client hints missing" if not any(hints) else "client hints partly missing"
        ch = h["sec-ch-ua"]
        claimed = re.search(r'"Chromium";\s*v="(\d+)"', ch)
        if not claimed or int(claimed.group(1)) != v:
            return "client hints of another version"
        if h["sec-ch-ua-platform"].strip('"') != ua_os(ua):
            return "client hints of another platform"
        if (h["sec-ch-ua-mobile"] == "?1") != (" Mobile" in ua):
            return "client hints of another device"
        # Chrome's sets include Brave's and unbranded Chromium's brand lists
        # (their UAs are Chrome's): only another product's brand is wrong.
        if ("Microsoft Edge" in ch) != (browser == "edge") or ("Google Chrome" in ch and browser == "edge"):
            return "brand of another browser"
        if "HeadlessChrome" in ch or "Headless" in ua:
            return "headless Chrome (automation in the traffic browserforge learnt from)"
    elif browser == "firefox":
        v = major(ua, "Firefox/")
        if v is None or v < 100:
            return "old or impossible UA"
    elif browser == "safari":
        v = major(ua, "Version/")
        if v is None or v < 15 or "Chrome/" in ua:
            return "old or impossible UA"
    # Without `br` (and with `zstd` but no `br`, or `identity` added) is
    # what people behind TLS-inspecting antivirus and corporate proxies
    # send (browserforge: 15 % of Chrome-on-Windows sets over HTTP/1.1,
    # none on other platforms): kept. Every browser offers gzip.
    if "gzip" not in h.get("accept-encoding", ""):
        return "no Accept-Encoding or no gzip"
    if browser in ("chrome", "edge", "firefox") and "upgrade-insecure-requests" not in h:
        return "navigation without Upgrade-Insecure-Requests"
    return None


def safari_version(ua):
    m = re.search(r"Version/(\d+)(?:\.(\d+))?", ua)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


def fetch_values(request_kind, site):
    """sec-fetch-* values a browser sends for this kind of request."""
    if request_kind == "navigate":
        return {"sec-fetch-site": site, "sec-fetch-mode": "navigate", "sec-fetch-user": "?1",
                "sec-fetch-dest": "document"}
    if request_kind == "xhr":
        return {"sec-fetch-site": "same-origin", "sec-fetch-mode": "cors", "sec-fetch-dest": "empty"}
    if request_kind == "image":
        return {"sec-fetch-site": "same-origin", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image"}
    if request_kind == "script":
        return {"sec-fetch-site": "same-origin", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "script"}
    if request_kind == "style":
        return {"sec-fetch-site": "same-origin", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "style"}
    return {"sec-fetch-site": "same-origin", "sec-fetch-mode": "cors", "sec-fetch-dest": "font"}


def asset_kind(uri):
    if uri.endswith(".js"):
        return "script"
    if uri.endswith(".css"):
        return "style"
    if uri.endswith(".woff2"):
        return "font"
    return "image"


def browser_request(rng, browsers, browser, device, http2, request_kind, uri, locale, firefox_like,
                    with_cookie, referer):
    """One request of a real browser: browserforge's names and order, values
    made right for the request kind."""
    pairs = browsers.raw(rng, browser, device, http2)
    ua = dict(pairs).get("user-agent", "")
    lang = LANGS[locale][1 if firefox_like else 0]
    if referer is None:
        site = "none"
    elif referer.startswith("https://shop.example/"):
        site = "same-origin"
    else:
        site = "cross-site"
    fetch = fetch_values(request_kind, site)
    out = []
    seen = set()
    for name, value in pairs:
        if name in seen:  # browserforge occasionally repeats a header
            continue
        seen.add(name)
        if name.startswith("sec-fetch-"):
            if name not in fetch:
                continue
            value = fetch[name]
        elif name == "accept-language":
            value = lang
        elif name == "accept":
            if request_kind == "xhr":
                value = rng.choice(["application/json, text/plain, */*", "*/*", "application/json"])
            elif request_kind == "image":
                value = FIREFOX_IMG_ACCEPT if firefox_like else CHROME_IMG_ACCEPT
            elif request_kind in ("script", "font"):
                value = "*/*"
            elif request_kind == "style":
                value = "text/css,*/*;q=0.1"
        elif name == "upgrade-insecure-requests" and request_kind != "navigate":
            continue
        elif name == "sec-ch-ua-platform" and '"' not in value:
            value = '"%s"' % value
        out.append((name, value))
    # Safari 16.4+ sends fetch metadata too (curl-impersonate's Safari 17
    # capture; its place varies by version, and the models learn no WebKit
    # order); Safari 15 and 16.0-16.3 send none.
    if browser == "safari" and safari_version(ua) >= (16, 4) and \
            not any(n.startswith("sec-fetch-") for n, _ in out):
        for at, name in enumerate(("sec-fetch-site", "sec-fetch-dest", "sec-fetch-mode"), start=1):
            out.insert(at, (name, fetch[name]))
    # Referer and Cookie go where each engine puts them.
    extra = []
    if referer is not None:
        extra.append(("referer", referer))
    if with_cookie:
        extra.append(("cookie", cookie(rng)))
    for name, value in extra:
        out = insert_in_order(out, name, value, firefox_like, browser == "safari")
    if http2 and not firefox_like and browser != "safari" and (major(ua, "Chrome/") or 0) >= 124:
        out.append(("priority", "u=0, i" if request_kind == "navigate" else "u=1, i"))
    # Firefox sends Priority over both protocols (captured: Firefox 153 over
    # HTTP/1.1 too), per request type; none for scripts and fonts.
    fx_priority = {"navigate": "u=0, i", "style": "u=2", "image": "u=5, i", "xhr": "u=4"}.get(request_kind)
    if firefox_like and fx_priority and (major(ua, "Firefox/") or 0) >= 128 and \
            not any(n == "priority" for n, _ in out):
        te = [p for p in out if p[0] == "te"]
        out = [(n, v) for n, v in out if n != "te"] + [("priority", fx_priority)] + te
    if not http2 and firefox_like:
        out = [(n, v) for n, v in out if n != "te"]  # TE: trailers is HTTP/2 only (captured)
    if http2:
        out = [(n, v) for n, v in out if n != "connection"]
    elif not any(n == "connection" for n, _ in out):
        # Chromium sends it first, Safari last (Firefox: moved below).
        out.insert(len(out) if browser == "safari" else 0, ("connection", "keep-alive"))
    # Firefox over HTTP/1.1 sends Connection right after the accept-* block,
    # before Referer and Cookie, on navigations and sub-resources, but after
    # Referer on fetch() (captured: Firefox ESR 153).
    if not http2 and firefox_like:
        conn = [p for p in out if p[0] == "connection"]
        out = [p for p in out if p[0] != "connection"]
        after = "referer" if request_kind == "xhr" and referer is not None else "accept-encoding"
        out = insert_after(out, after, conn[0])
    return [("host", "shop.example")] + out, ua


def insert_after(pairs, after, pair):
    for i, (n, _) in enumerate(pairs):
        if n == after:
            return pairs[:i + 1] + [pair] + pairs[i + 1:]
    return pairs + [pair]


def insert_in_order(pairs, name, value, firefox_like, safari):
    if firefox_like:
        anchor = {"referer": "accept-encoding", "cookie": "referer"}[name]
        if not any(n == anchor for n, _ in pairs):
            anchor = "accept-encoding"
        return insert_after(pairs, anchor, (name, value))
    if safari:
        anchor = {"referer": "user-agent", "cookie": "accept-language"}[name]
        return insert_after(pairs, anchor, (name, value))
    if name == "referer":
        # Chromium: after sec-fetch-dest (or accept when there is none), before accept-encoding.
        for i, (n, _) in enumerate(pairs):
            if n == "accept-encoding":
                return pairs[:i] + [(name, value)] + pairs[i:]
        return pairs + [(name, value)]
    return insert_after(pairs, "accept-language", (name, value))


# ----------------------------------------------------------------- generators

BROWSER_MIX = [("chrome", 55), ("safari", 18), ("edge", 12), ("firefox", 15)]


def pick(rng, weighted):
    total = sum(w for _, w in weighted)
    x = rng.uniform(0, total)
    for item, w in weighted:
        x -= w
        if x <= 0:
            return item
    return weighted[-1][0]


def human(rng, browsers):
    browser = pick(rng, BROWSER_MIX)
    device = "mobile" if rng.random() < 0.45 else "desktop"
    # A site on a plain-HTTP hostname: HTTP/1.1, and no client hints, no
    # fetch metadata and no br/zstd (browsers send those to secure contexts
    # only; 127.0.0.1 and localhost count as secure).
    plain = rng.random() < 0.06
    http2 = not plain and rng.random() < 0.7
    request_kind = pick(rng, [("navigate", 55), ("xhr", 18), ("image", 12), ("script", 6), ("style", 4),
                              ("font", 3), ("preflight", 2)])
    preflight = request_kind == "preflight"
    if preflight:
        request_kind = "xhr"
    if request_kind == "navigate":
        uri = fill(rng, rng.choice(PAGES))
    elif request_kind == "xhr":
        uri = fill(rng, rng.choice(API))
    else:
        uri = fill(rng, rng.choice([a for a in ASSETS if asset_kind(a) == request_kind] or ASSETS))
    referer = None
    # Every landing page is a first visit: typed URL or bookmark, no Referer,
    # no Cookie, sec-fetch-site: none.
    first_visit = request_kind == "navigate" and rng.random() < 0.3
    # A returning visitor's bookmark, a reload or back: no Referer either,
    # sec-fetch-site: none, but the site's cookies.
    returning = request_kind == "navigate" and not first_visit and rng.random() < 0.2
    if not first_visit and not returning and (request_kind != "navigate" or rng.random() < 0.6):
        referer = ("http" if plain else "https") + "://shop.example" + fill(rng, rng.choice(PAGES))
    if request_kind == "navigate" and not first_visit and not returning and referer is None:
        referer = rng.choice(["https://www.google.com/", "https://www.bing.com/", "https://duckduckgo.com/",
                              "https://t.co/", "https://www.facebook.com/"])
    locale = pick(rng, list(zip(LANGS, LOCALE_WEIGHTS)))
    with_cookie = not preflight and (returning or (not first_visit and rng.random() < 0.65))
    headers, ua = browser_request(rng, browsers, browser, device, http2, request_kind, uri, locale,
                                  browser == "firefox", with_cookie, referer)
    detail = browser + ("-first-visit" if first_visit else "-returning" if returning else "")
    if browser == "chrome" and rng.random() < 0.05:
        # An unbranded Chromium build (Linux distributions): "Chromium" and
        # GREASE only in the brand list.
        headers = [(n, ", ".join(b for b in v.split(", ") if "Google Chrome" not in b) if n == "sec-ch-ua" else v)
                   for n, v in headers]
        detail += "-chromium"
    if browser in ("chrome", "edge") and request_kind != "navigate" and rng.random() < 0.5:
        # Chromium (captured: 156) sends sub-resources and fetch() as
        # sec-ch-ua-platform, User-Agent, sec-ch-ua, sec-ch-ua-mobile, ...
        headers = chromium_subresource_order(headers)
    if plain:
        headers = plain_http(headers)
        detail += "-plain-http"
    if device == "mobile" and rng.random() < 0.15:
        headers, detail = in_app(rng, headers, ua, browser)
    if preflight:
        headers = preflight_headers(headers, browser, http2, plain)
        detail += "-preflight"
    elif browser in ("chrome", "edge") and request_kind == "navigate" and not plain and referer and \
            referer.startswith("https://shop") and rng.random() < 0.05:
        # The navigation a redirect (a form's 303) leads to: Chromium adds
        # the client hints after the fetch metadata, and keeps the form's
        # Cache-Control (captured: Chromium 156, GET /account after POST
        # /login).
        headers = redirected(headers, http2)
        detail += "-redirected"
    # Noise that real traffic has. (No browser build sends fetch metadata
    # with part of the client hints, nor a header moved out of its engine's order:
    # the first generator's "privacy extension strips fetch metadata" and
    # "drift" people were shapes only automation sends, and taught the
    # models that a contradiction can be a person. Its "no hints" people
    # are Chromium with JavaScript off, a head the evidence does not count;
    # not made, as sane() says.)
    noise = 1.0 if plain else rng.random()
    if noise < 0.04:
        # A privacy extension (or a Referrer-Policy) drops the Referer.
        headers = [(n, v) for n, v in headers if n != "referer"]
        detail += "-no-referer"
    elif noise < 0.07:
        # A corporate proxy adds its headers.
        headers = headers + [("via", "1.1 proxy.corp.example"), ("x-forwarded-for", client_v4(rng))]
        detail += "-proxy"
    elif noise < 0.09:
        # Firefox's Sec-GPC follows its accept-* block (captured: private windows).
        headers = headers + [("dnt", "1")] if browser != "firefox" else \
            insert_after(headers, "accept-encoding", ("sec-gpc", "1"))
        detail += "-dnt"
    method = "OPTIONS" if preflight else "POST" if request_kind == "xhr" and rng.random() < 0.3 else "GET"
    if method == "OPTIONS":
        pass
    elif method == "POST":
        headers = post_headers(headers, browser, str(rng.randint(2, 900)),
                               ("http" if plain else "https") + "://shop.example")
    elif request_kind == "navigate" and referer and referer.startswith(("https://shop", "http://shop")) and \
            browser != "safari" and rng.random() < 0.08:
        # A form submitted (sign-in, checkout): a POST navigation.
        method = "POST"
        headers = form_post_headers(headers, browser, str(rng.randint(20, 400)),
                                    ("http" if plain else "https") + "://shop.example")
        detail += "-form-post"
    return dict(method=method, uri=uri, version="2" if http2 else "1.1", client=client(rng, 0.3),
                headers=headers, automated=0, spoof=0, kind="browser", detail=detail,
                family=family_of(browser, ua, detail), plain_http=plain)


def family_of(browser, ua, detail):
    """The family a held-out run leaves out (train.py): browser and
    platform as browserforge made them. `generated:` says the rows come
    from browserforge's networks, not from a browser run here."""
    os_name = ua_os(ua)
    if browser == "safari" or detail == "ios-in-app":
        name = "safari-ios" if os_name == "iOS" else "safari-macos"
    elif browser == "firefox":
        name = "firefox"
    elif browser == "edge":
        name = "edge"
    elif os_name in ("Windows", "macOS", "Android"):
        name = "chrome-" + {"Windows": "windows", "macOS": "macos", "Android": "android"}[os_name]
    else:
        name = "chrome-other"
    return "generated:" + name


def preflight_headers(headers, browser, http2, plain):
    """The CORS preflight (OPTIONS) of a JSON POST, in the engine's order
    (captured: Chromium 156, whose preflight to a plain-HTTP origin still
    says `sec-fetch-mode: cors`, and Firefox 153). Safari's order is a guess:
    no WebKit order is learnt. Preflights carry no cookie and, from
    Chromium, no client hints."""
    h = dict(headers)
    referer = h.get("referer") or ("http" if plain else "https") + "://shop.example/"
    origin = "/".join(referer.split("/")[:3])
    site = h.get("sec-fetch-site", "same-origin")
    secure = not plain and "sec-fetch-mode" in h
    common = [("access-control-request-method", "POST"), ("access-control-request-headers", "content-type")]
    host = [("host", h.get("host", "shop.example"))]
    conn = [] if http2 else [("connection", "keep-alive")]
    ua, lang, enc = h.get("user-agent", ""), h.get("accept-language"), h.get("accept-encoding")
    if browser in ("chrome", "edge"):
        out = host + conn + [("accept", "*/*")] + common + [("origin", origin), ("user-agent", ua),
                                                            ("sec-fetch-mode", "cors")]
        if secure:
            out += [("sec-fetch-site", site), ("sec-fetch-dest", "empty")]
        out += [("referer", referer), ("accept-encoding", enc), ("accept-language", lang)]
        if "priority" in h:
            out.append(("priority", "u=1, i"))
    elif browser == "firefox":
        out = host + [("user-agent", ua), ("accept", "*/*"), ("accept-language", lang), ("accept-encoding", enc)]
        out += common + [("referer", referer), ("origin", origin)] + conn
        if secure:
            out += [("sec-fetch-dest", "empty"), ("sec-fetch-mode", "cors"), ("sec-fetch-site", site)]
        out += [("priority", "u=4")] + ([("te", "trailers")] if http2 else [])
    else:
        out = host + [("accept", "*/*")] + common + [("origin", origin)]
        if secure:
            out += [("sec-fetch-site", site), ("sec-fetch-mode", "cors"), ("sec-fetch-dest", "empty")]
        out += [("user-agent", ua), ("referer", referer), ("accept-language", lang), ("accept-encoding", enc)]
        out += conn
    return [(n, v) for n, v in out if v is not None]


def redirected(headers, http2):
    hints = [p for p in headers if p[0].startswith("sec-ch-ua")]
    rest = [p for p in headers if not p[0].startswith("sec-ch-ua")]
    out = []
    for n, v in rest:
        out.append((n, v))
        if n == ("host" if http2 else "connection"):
            out.append(("cache-control", "max-age=0"))
        if n == "sec-fetch-dest":
            out += hints
    return out


def post_headers(headers, browser, length, origin):
    """A fetch() POST's body headers where engines put them (captured:
    Firefox 153 after the accept-* block; Chromium 156 Content-Length right
    after Connection, Content-Type among the client hints, Origin before
    the fetch metadata); Safari's go last."""
    body = [("content-type", "application/json"), ("content-length", length), ("origin", origin)]
    if browser == "firefox":
        after = "referer" if any(n == "referer" for n, _ in headers) else "accept-encoding"
        for pair in reversed(body):
            headers = insert_after(headers, after, pair)
        return headers
    if browser in ("chrome", "edge"):
        out = []
        after = "connection" if any(n == "connection" for n, _ in headers) else "host"
        for n, v in headers:
            if n == "sec-fetch-site":
                out.append(body[2])
            out.append((n, v))
            if n == after:
                out.append(body[1])
            if n == "sec-ch-ua":
                out.append(body[0])
        for pair in body:
            if pair not in out:
                out.append(pair)
        return out
    return headers + body


def form_post_headers(headers, browser, length, origin):
    """A form's POST navigation where engines put its headers (captured:
    Firefox 153 puts the body headers and Origin after the accept-* block;
    Chromium 156 Content-Length after Connection, then Cache-Control:
    max-age=0, Content-Type after Upgrade-Insecure-Requests, Origin after
    User-Agent)."""
    form = "application/x-www-form-urlencoded"
    if browser == "firefox":
        for pair in reversed([("content-type", form), ("content-length", length), ("origin", origin)]):
            headers = insert_after(headers, "accept-encoding", pair)
        return headers
    after = "connection" if any(n == "connection" for n, _ in headers) else "host"
    out = []
    for n, v in headers:
        out.append((n, v))
        if n == after:
            out += [("content-length", length), ("cache-control", "max-age=0")]
        elif n == "upgrade-insecure-requests":
            out.append(("content-type", form))
        elif n == "user-agent":
            out.append(("origin", origin))
    if not any(n == "content-type" for n, _ in out):
        out.append(("content-type", form))
    return out


def chromium_subresource_order(headers):
    names = ("sec-ch-ua-platform", "user-agent", "sec-ch-ua", "sec-ch-ua-mobile")
    present = [p for p in headers if p[0] in names]
    if len(present) < 4:
        return headers
    at = min(i for i, p in enumerate(headers) if p[0] in names)
    rest = [p for p in headers if p[0] not in names]
    block = sorted(present, key=lambda p: names.index(p[0]))
    return rest[:at] + block + rest[at:]


def plain_http(headers):
    """What a browser sends to a plain-HTTP hostname: no client hints, no
    fetch metadata, `gzip, deflate` (captured: Chromium 156, Firefox 153)."""
    out = []
    for n, val in headers:
        if n.startswith("sec-ch-") or n.startswith("sec-fetch-"):
            continue
        if n == "accept-encoding":
            val = "gzip, deflate"
        elif n == "origin":
            val = val.replace("https://", "http://")
        out.append((n, val))
    return out


APPS = ["com.facebook.katana", "com.instagram.android", "com.linkedin.android", "com.google.android.gm",
        "jp.naver.line.android", "com.reddit.frontpage"]


def in_app(rng, headers, ua, browser):
    """People opening a link inside an app: Android WebView (its own brand,
    `; wv`, the app's package in X-Requested-With) or an iOS in-app browser
    (Safari's headers, the app's tokens appended to a UA without Version/)."""
    if "Android" in ua and browser in ("chrome", "edge"):
        app = rng.choice(APPS)
        out = []
        for n, val in headers:
            if n == "user-agent":
                val = val.replace("; K)", "; K; wv)").replace(" Chrome/", " Version/4.0 Chrome/")
            elif n == "sec-ch-ua":
                val = val.replace("Google Chrome", "Android WebView").replace("Microsoft Edge", "Android WebView")
            out.append((n, val))
            if n == "accept":
                out.append(("x-requested-with", app))
        return out, "android-webview"
    if "iPhone" in ua and browser == "safari":
        app = rng.choice(["[FBAN/FBIOS;FBAV/450.0.0.38.108;FBBV/5000;FBDV/iPhone14,5;FBMD/iPhone;FBSN/iOS]",
                          "Instagram 320.0.2.34.90 (iPhone14,5; iOS 17_5; en_US; en; scale=3.00)",
                          "LinkedInApp/9.29.6"])
        out = [(n, (val.replace(" Version/%s" % val.split("Version/")[1].split(" ")[0], "") + " " + app)
                if n == "user-agent" and "Version/" in val else val) for n, val in headers]
        return out, "ios-in-app"
    return headers, browser


def crawler(rng, crawlers):
    entry = rng.choice(crawlers)
    ua = rng.choice(entry["instances"])
    uri = fill(rng, rng.choice(CRAWL if rng.random() < 0.2 else PAGES))
    style = rng.random()
    http2 = rng.random() < 0.3
    headers = [("host", "shop.example")]
    if style < 0.45:
        headers += [] if http2 else [("connection", "keep-alive")]
        headers += [("accept", FIREFOX_NAV_ACCEPT), ("from", "crawler@example.org"), ("user-agent", ua),
                    ("accept-encoding", "gzip, deflate, br")]
    elif style < 0.75:
        headers += [("user-agent", ua), ("accept", "*/*"), ("accept-encoding", "gzip")]
    elif style < 0.9:
        headers += [("accept-encoding", "gzip, deflate"), ("accept", "text/html,*/*;q=0.8"),
                    ("accept-language", "en-US,en;q=0.5"), ("user-agent", ua)]
    else:
        headers += [("user-agent", ua)]
    return dict(method="HEAD" if rng.random() < 0.05 else "GET", uri=uri, version="2" if http2 else "1.1", client=client(rng, 0.15, datacenter=True),
                headers=headers, automated=1, spoof=None, kind="crawler", detail=entry["pattern"][:40])


def v(rng, lo, hi):
    return rng.randint(lo, hi)


def script_uri(rng):
    r = rng.random()
    if r < 0.45:
        return fill(rng, rng.choice(API))
    if r < 0.8:
        return fill(rng, rng.choice(PAGES))
    if r < 0.92:
        return fill(rng, rng.choice(PROBES))
    return fill(rng, rng.choice(ASSETS))


SCRIPTS = {
    # name: (weight, version, headers after host or complete list) -- the
    # libraries' real defaults, in the order they send them.
    "curl": lambda rng: ("2" if rng.random() < 0.5 else "1.1",
                         [("host", "shop.example"), ("user-agent", "curl/8.%d.%d" % (v(rng, 0, 11), v(rng, 0, 1))),
                          ("accept", "*/*")]),
    "wget": lambda rng: ("1.1", [("user-agent", "Wget/1.21.%d" % v(rng, 1, 4)), ("accept", "*/*"),
                                 ("accept-encoding", "identity"), ("host", "shop.example"),
                                 ("connection", "Keep-Alive")]),
    "python-requests": lambda rng: ("1.1", [("host", "shop.example"),
                                            ("user-agent", "python-requests/2.%d.%d" % (v(rng, 25, 32), v(rng, 0, 3))),
                                            ("accept-encoding", rng.choice(["gzip, deflate", "gzip, deflate, br",
                                                                            "gzip, deflate, br, zstd"])),
                                            ("accept", "*/*"), ("connection", "keep-alive")]),
    "aiohttp": lambda rng: ("1.1", [("host", "shop.example"), ("accept", "*/*"),
                                    ("accept-encoding", "gzip, deflate"),
                                    ("user-agent", "Python/3.%d aiohttp/3.%d.%d" % (v(rng, 9, 12), v(rng, 8, 10),
                                                                                  v(rng, 0, 5)))]),
    "httpx": lambda rng: ("1.1", [("host", "shop.example"), ("accept", "*/*"), ("accept-encoding", "gzip, deflate"),
                                  ("connection", "keep-alive"),
                                  ("user-agent", "python-httpx/0.2%d.%d" % (v(rng, 5, 8), v(rng, 0, 2)))]),
    "urllib": lambda rng: ("1.1", [("accept-encoding", "identity"), ("host", "shop.example"),
                                   ("user-agent", "Python-urllib/3.%d" % v(rng, 8, 12)), ("connection", "close")]),
    "go": lambda rng: (("2", [("host", "shop.example"), ("user-agent", "Go-http-client/2.0"),
                              ("accept-encoding", "gzip")]) if rng.random() < 0.5 else
                       ("1.1", [("host", "shop.example"), ("user-agent", "Go-http-client/1.1"),
                                ("accept-encoding", "gzip")])),
    "java": lambda rng: ("1.1", rng.choice([
        [("user-agent", "Java/%d.0.%d" % (v(rng, 11, 21), v(rng, 1, 12))), ("host", "shop.example"),
         ("accept", "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"), ("connection", "keep-alive")],
        [("host", "shop.example"), ("connection", "Keep-Alive"),
         ("user-agent", "Apache-HttpClient/4.5.%d (Java/17.0.%d)" % (v(rng, 10, 14), v(rng, 1, 9))),
         ("accept-encoding", "gzip,deflate")],
    ])),
    "okhttp": lambda rng: ("2" if rng.random() < 0.5 else "1.1",
                           [("host", "shop.example"), ("connection", "Keep-Alive"), ("accept-encoding", "gzip"),
                            ("user-agent", "okhttp/4.%d.%d" % (v(rng, 9, 12), v(rng, 0, 3)))]),
    # undici (Node's fetch) sends these odd defaults, fetch metadata included.
    "node-fetch": lambda rng: ("1.1", [("host", "shop.example"), ("connection", "keep-alive"), ("accept", "*/*"),
                                       ("accept-language", "*"), ("sec-fetch-mode", "cors"),
                                       ("user-agent", "node"), ("accept-encoding", "gzip, deflate")]),
    "axios": lambda rng: ("1.1", [("accept", "application/json, text/plain, */*"),
                                  ("user-agent", "axios/1.%d.%d" % (v(rng, 4, 7), v(rng, 0, 9))),
                                  ("accept-encoding", "gzip, compress, deflate, br"), ("host", "shop.example"),
                                  ("connection", "keep-alive")]),
}
SCRIPT_WEIGHTS = [("curl", 22), ("wget", 5), ("python-requests", 25), ("aiohttp", 7), ("httpx", 5), ("urllib", 4),
                  ("go", 12), ("java", 7), ("okhttp", 4), ("node-fetch", 5), ("axios", 4)]


def script(rng):
    name = pick(rng, SCRIPT_WEIGHTS)
    version, headers = SCRIPTS[name](rng)
    if rng.random() < 0.15:  # an API token or a JSON body
        headers = headers + [("authorization", "Bearer %x" % rng.getrandbits(64))]
    method = pick(rng, [("GET", 85), ("POST", 8), ("HEAD", 7)])
    if method == "POST":
        headers = headers + [("content-type", "application/json"), ("content-length", str(rng.randint(2, 400)))]
    return dict(method=method, uri=script_uri(rng), version=version, client=client(rng, 0.1, datacenter=True),
                headers=headers, automated=1, spoof=None, kind=name, detail=name)


def headless(rng, browsers):
    """Puppeteer/Playwright defaults: a real Chrome header set that says
    HeadlessChrome in the UA and, for branded Chrome builds, in the brand
    list (an unbranded Chromium, as Debian ships it, lists only "Chromium":
    captured, Chromium 156 --headless=new). Pages and their sub-resources."""
    kind = pick(rng, [("navigate", 60), ("xhr", 15), ("image", 12), ("script", 8), ("style", 5)])
    uri = fill(rng, rng.choice(PAGES)) if kind == "navigate" else (
        fill(rng, rng.choice(API)) if kind == "xhr" else
        fill(rng, rng.choice([a for a in ASSETS if asset_kind(a) == kind] or ASSETS)))
    referer = None if kind == "navigate" and rng.random() < 0.7 else "https://shop.example/"
    headers, ua = browser_request(rng, browsers, "chrome", "desktop", rng.random() < 0.8, kind,
                                  uri, "en-US", False, kind != "navigate" and rng.random() < 0.5, referer)
    if kind != "navigate" and rng.random() < 0.5:
        headers = chromium_subresource_order(headers)
    unbranded = rng.random() < 0.5
    out = []
    for n, val in headers:
        if n == "user-agent":
            val = val.replace("Chrome/", "HeadlessChrome/").replace("Windows NT 10.0; Win64; x64", "X11; Linux x86_64")
            val = val.replace("Macintosh; Intel Mac OS X 10_15_7", "X11; Linux x86_64")
        elif n == "sec-ch-ua":
            if unbranded:
                val = ", ".join(b for b in val.split(", ") if "Google Chrome" not in b)
            else:
                val = val.replace("Google Chrome", "HeadlessChrome")
        elif n == "sec-ch-ua-platform":
            val = '"Linux"'
        elif n == "accept-language" and rng.random() < 0.5:
            continue  # old headless sent no Accept-Language
        out.append((n, val))
    return dict(method="GET", uri=uri, version="2" if not any(n == "connection" for n, _ in out) else "1.1",
                client=client(rng, 0.1, True), headers=out, automated=1, spoof=None, kind="headless-chrome",
                detail="headless-unbranded" if unbranded else "headless")


def spoofer(rng, browsers):
    """A scraper sending a real browser's User-Agent, with the mistakes such
    tools make."""
    browser = pick(rng, [("chrome", 65), ("edge", 10), ("firefox", 15), ("safari", 10)])
    device = "mobile" if rng.random() < 0.2 else "desktop"
    firefox_like = browser == "firefox"
    http2 = rng.random() < 0.6
    # Careful scrapers set a Referer and a locale; most do not bother.
    referer = None
    if rng.random() < 0.3:
        referer = rng.choice(["https://shop.example" + fill(rng, rng.choice(PAGES)), "https://www.google.com/"])
    locale = "en-US" if rng.random() < 0.7 else pick(rng, list(zip(LANGS, LOCALE_WEIGHTS)))
    real, ua = browser_request(rng, browsers, browser, device, http2, "navigate", "/", locale, firefox_like,
                               False, referer)
    uri = script_uri(rng) if rng.random() < 0.6 else fill(rng, rng.choice(PAGES))
    mistake = pick(rng, [("requests-ua-only", 12), ("requests-full-set", 12), ("curl-ua", 8), ("go-sorted", 8),
                         ("no-client-hints", 12), ("stale-client-hints", 10), ("wrong-platform", 8),
                         ("shuffled-fetch", 8), ("firefox-ua-chrome-headers", 6), ("stealth-headless", 6)])
    headers = list(real)
    version = "2" if http2 else "1.1"
    rest = [(n, val) for n, val in real if n != "host"]
    if mistake == "requests-ua-only":
        headers = [("host", "shop.example"), ("user-agent", ua), ("accept-encoding", "gzip, deflate"),
                   ("accept", "*/*"), ("connection", "keep-alive")]
        version = "1.1"
    elif mistake == "requests-full-set":
        # requests merges a headers dict into its defaults: the defaults keep
        # their places (User-Agent, Accept-Encoding, Accept, Connection).
        given = dict(rest)
        defaults = {"user-agent": ua, "accept-encoding": "gzip, deflate", "accept": "*/*", "connection": "keep-alive"}
        headers = [("host", "shop.example")]
        for n, default in defaults.items():
            headers.append((n, given.pop(n, default)))
        headers += list(given.items())
        version = "1.1"
    elif mistake == "curl-ua":
        headers = [("host", "shop.example"), ("user-agent", ua), ("accept", rng.choice(["*/*", FIREFOX_NAV_ACCEPT]))]
        if rng.random() < 0.5:
            headers.append(("accept-language", "en-US,en;q=0.9"))
    elif mistake == "go-sorted":
        # Go writes Host and User-Agent first, then the header map sorted by name.
        given = {n: val for n, val in rest if n not in ("user-agent", "connection", "priority")}
        headers = [("host", "shop.example"), ("user-agent", ua)] + sorted(given.items())
        if "accept-encoding" not in given:
            headers.append(("accept-encoding", "gzip"))
    elif mistake == "no-client-hints":
        headers = [(n, val) for n, val in real if not n.startswith("sec-ch-ua")]
        if rng.random() < 0.5:
            headers = [(n, val) for n, val in headers if not n.startswith("sec-fetch-")]
    elif mistake == "stale-client-hints":
        # The UA was bumped, the copied hints were not (or the reverse).
        old = rng.randint(110, 135)
        headers = [(n, val.replace('v="%d"' % (major(ua, "Chrome/") or 0), 'v="%d"' % old)
                    if n == "sec-ch-ua" else val) for n, val in real]
        if not any(n == "sec-ch-ua" for n, _ in headers):
            headers.insert(1, ("sec-ch-ua", '"Chromium";v="%d", "Not_A Brand";v="24"' % old))
    elif mistake == "wrong-platform":
        fixed = rng.choice(['"Windows"', '"macOS"', '"Linux"', '"Android"'])
        headers = [(n, fixed if n == "sec-ch-ua-platform" else val) for n, val in real]
        if not any(n == "sec-ch-ua-platform" for n, _ in headers):
            headers.insert(1, ("sec-ch-ua-platform", fixed))
    elif mistake == "shuffled-fetch":
        # Header sets replayed from browserforge keep its shifted values.
        shifted = {"sec-fetch-site": "?1", "sec-fetch-mode": "same-site", "sec-fetch-user": "document",
                   "sec-fetch-dest": "navigate"}
        headers = [(n, shifted.get(n, val)) for n, val in real]
    elif mistake == "firefox-ua-chrome-headers":
        chrome, _ = browser_request(rng, browsers, "chrome", "desktop", http2, "navigate", "/", "en-US", False,
                                    False, None)
        fx = browsers.raw(rng, "firefox", "desktop", http2)
        fx_ua = dict(fx)["user-agent"]
        headers = [(n, fx_ua if n == "user-agent" else val) for n, val in chrome]
    elif mistake == "stealth-headless":
        # puppeteer-extra-stealth fixes the UA but not the brand list.
        headers = [(n, val.replace("Google Chrome", "HeadlessChrome") if n == "sec-ch-ua" else val)
                   for n, val in real]
        if not any(n == "sec-ch-ua" for n, _ in headers):
            headers = [(n, val) for n, val in headers if n != "accept-language"]
    # (No "impersonate": a browser's exact head is a browser's, whoever sends
    # it; one request cannot tell, so it is never a positive row.)
    if rng.random() < 0.15:
        headers = headers + [("cookie", cookie(rng))]  # replayed session cookie
    method = "GET" if rng.random() < 0.93 else "POST"
    return dict(method=method, uri=uri, version=version, client=client(rng, 0.12, datacenter=rng.random() < 0.7),
                headers=headers, automated=1, spoof=1, kind="spoofer", detail=mistake)


KINDS = [("browser", 52), ("crawler", 12), ("script", 15), ("headless", 5), ("spoofer", 16)]


def nginx_h2_cookies(headers):
    """nginx joins an HTTP/2 request's cookie headers into one, at the end
    of the header array (captured: every browser over TLS + HTTP/2)."""
    cookies = [v for n, v in headers if n == "cookie"]
    if not cookies:
        return headers
    return [(n, v) for n, v in headers if n != "cookie"] + [("cookie", "; ".join(cookies))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", help="output file (default: stdout)")
    ap.add_argument("--stats", help="write why browserforge's sets were drawn again (JSON) to this file")
    args = ap.parse_args()
    # browserforge draws from the global `random`; everything else from rng.
    random.seed(args.seed)
    rng = random.Random(args.seed)
    browsers = Browsers()
    crawlers = [c for c in crawleruseragents.CRAWLER_USER_AGENTS_DATA if c.get("instances")]
    out = open(args.out, "w") if args.out else sys.stdout
    for _ in range(args.count):
        kind = pick(rng, KINDS)
        if kind == "browser":
            row = human(rng, browsers)
        elif kind == "crawler":
            row = crawler(rng, crawlers)
        elif kind == "script":
            row = script(rng)
        elif kind == "headless":
            row = headless(rng, browsers)
        else:
            row = spoofer(rng, browsers)
        if row["version"] == "2":
            row["headers"] = nginx_h2_cookies(row["headers"])
        row["headers"] = [[n, val] for n, val in row["headers"]]
        out.write(json.dumps(row, separators=(",", ":")) + "\n")
    if out is not sys.stdout:
        out.close()
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({"rejected_browserforge_sets": dict(sorted(REJECTED.items()))}, f, indent=1)


if __name__ == "__main__":
    main()
