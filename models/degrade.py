"""Degradations of a person's request head: each makes it less like what a
browser sends, in one of the ways scrapers and spoofing tools do.

Used twice, from this one definition:

- models/train.py: positive rows are degradations of real people's heads
  (captured and generated), kept only when the request then shows
  something no browser does (its schema-4 evidence grows, or its
  User-Agent stops claiming a browser): a head a browser sends byte for
  byte is never a positive row;
- tests/e2e/test_model_properties.py (the metamorphic test in `make test`):
  every single degradation of every person's head must not lower the
  shipped model's score (monotone evidence).

A head is a row in the input format of `edgeguard features` / `edgeguard
replay` ({"method", "uri", "version", "client", "headers": [[name, value],
...]}, optionally "ja4" and "tls_family": the connection's TLS facts).
Degrading one returns a copy; the other fields are kept.

The kinds (KINDS):

  drop              one header removed (every header of the head, one at a
                    time: the engine's own ones are evidence, the visit's
                    must change nothing)
  swap              two neighbouring headers exchanged
  drop-hints        two of the three sec-ch-ua* headers removed (a partial
                    set: Chromium sends the three or none; one removed is
                    a `drop`)
  no-hints          every sec-ch-ua* header removed: not a degradation but
                    Chromium's own head with JavaScript off for the site
                    (tests/e2e/data/behaviour/), so it shows no evidence and
                    train.py reports it as unjudged, never a positive; kept
                    so that the report and the metamorphic test see it
  drop-fetch        every sec-fetch-* header removed
  ua-headless       `HeadlessChrome/` for `Chrome/` in the User-Agent
  brand-headless    `HeadlessChrome` as the sec-ch-ua product brand
  platform          sec-ch-ua-platform naming another OS than the UA
  mobile            sec-ch-ua-mobile flipped
  hint-version      sec-ch-ua claiming another version than the UA
  brand-product     another product's brand (Edge's for Chrome's, ...)
  brand-no-grease   the GREASE brand removed from sec-ch-ua
  brand-no-chromium the Chromium brand removed from sec-ch-ua
  hints-on-other    Chromium's client hints added to a Firefox or Safari head
  ua-other-engine   the User-Agent of another engine's browser
  ua-library        a library's User-Agent (python-requests)
  accept-library    a library's Accept (`*/*`, `application/json`, Java's)
  encoding-library  a library's Accept-Encoding (`identity`)
  connection-library  a library's Connection value (`close`, `Keep-Alive`)
  tls-library       a library's ClientHello (OpenSSL) under the browser UA
  tls-no-h2         a ClientHello that does not offer HTTP/2 first
  tls-12            a ClientHello without TLS 1.3
"""

import random
import re

CHROME_UA = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
             "Chrome/147.0.0.0 Safari/537.36")
FIREFOX_UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:150.0) Gecko/20100101 Firefox/150.0"
LIBRARY_UA = "python-requests/2.32.3"
CHROME_HINTS = [("sec-ch-ua", '"Chromium";v="147", "Google Chrome";v="147", "Not.A/Brand";v="8"'),
                ("sec-ch-ua-mobile", "?0"), ("sec-ch-ua-platform", '"Windows"')]
# Chromium sends these three to every secure context, or none of them.
LOW_ENTROPY_HINTS = ("sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform")
PLATFORMS = ['"Windows"', '"macOS"', '"Linux"', '"Android"', '"Chrome OS"', '"iOS"']
LIBRARY_ACCEPTS = ["*/*", "application/json", "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"]
LIBRARY_ENCODINGS = ["identity"]
LIBRARY_CONNECTIONS = ["close", "Keep-Alive"]
# curl's ClientHello (OpenSSL) as the capture logged it, for "tls-library".
OPENSSL_JA4 = "t13d3112h2_e8f1e7e78f70_b26ce05bbdd6"

KINDS = ["drop", "swap", "drop-hints", "no-hints", "drop-fetch", "ua-headless", "brand-headless", "platform", "mobile",
         "hint-version", "brand-product", "brand-no-grease", "brand-no-chromium", "hints-on-other",
         "ua-other-engine", "ua-library", "accept-library", "encoding-library", "connection-library",
         "tls-library", "tls-no-h2", "tls-12"]


def _get(headers, name):
    for n, v in headers:
        if n.lower() == name:
            return v
    return None


def _set(headers, name, value):
    return [[n, value if n.lower() == name else v] for n, v in headers]


def _without(headers, pred):
    return [[n, v] for n, v in headers if not pred(n.lower())]


def engine(headers):
    """The engine the User-Agent claims, as far as degrading goes:
    chromium, gecko, webkit or None."""
    ua = _get(headers, "user-agent") or ""
    if not ua.startswith("Mozilla/"):
        return None
    if "iPhone" in ua or "iPad" in ua:
        return "webkit"
    if "Firefox/" in ua:
        return "gecko"
    if "Chrome/" in ua or "Chromium/" in ua:
        return "chromium"
    if "Safari/" in ua or "AppleWebKit/" in ua:
        return "webkit"
    return None


def _copy(row, headers=None, **changes):
    out = dict(row)
    out["headers"] = [list(h) for h in (row["headers"] if headers is None else headers)]
    out.update(changes)
    return out


def _brands(value):
    """The entries of a sec-ch-ua value, split on the commas outside quotes."""
    entries, current, quoted, escaped = [], "", False, False
    for ch in value:
        if escaped:
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            entries.append(current.strip())
            current = ""
            continue
        current += ch
    if current.strip():
        entries.append(current.strip())
    return entries


def _brand_name(entry):
    m = re.match(r'"((?:[^"\\]|\\.)*)"', entry)
    return m.group(1) if m else ""


def _is_grease(name):
    return "Brand" in name and "Not" in name


def all_single(row):
    """Every single degradation of the head `row`: [(kind, detail, row)].
    Deterministic; each degraded row differs from `row`."""
    headers = row["headers"]
    names = [n.lower() for n, _ in headers]
    eng = engine(headers)
    out = []

    def add(kind, detail, new):
        if new["headers"] != headers or new.get("ja4") != row.get("ja4") or \
                new.get("tls_family") != row.get("tls_family"):
            out.append((kind, detail, new))

    for i, name in enumerate(names):
        add("drop", name, _copy(row, headers[:i] + headers[i + 1:]))
    for i in range(len(headers) - 1):
        if names[i] != names[i + 1]:
            swapped = headers[:i] + [headers[i + 1], headers[i]] + headers[i + 2:]
            add("swap", "%s/%s" % (names[i], names[i + 1]), _copy(row, swapped))
    present = [h for h in LOW_ENTROPY_HINTS if h in names]
    if len(present) == 3:
        for kept in present:
            add("drop-hints", kept, _copy(row, _without(headers, lambda n, k=kept: n in present and n != k)))
    if any(n.startswith("sec-ch-ua") for n in names):
        add("no-hints", "", _copy(row, _without(headers, lambda n: n.startswith("sec-ch-ua"))))
    if any(n.startswith("sec-fetch-") for n in names):
        add("drop-fetch", "", _copy(row, _without(headers, lambda n: n.startswith("sec-fetch-"))))
    ua = _get(headers, "user-agent")
    ch = _get(headers, "sec-ch-ua")
    if ua and eng == "chromium" and "Chrome/" in ua and "HeadlessChrome/" not in ua:
        add("ua-headless", "", _copy(row, _set(headers, "user-agent", ua.replace("Chrome/", "HeadlessChrome/", 1))))
    if ch is not None:
        entries = _brands(ch)
        product = [e for e in entries if not _is_grease(_brand_name(e)) and _brand_name(e) != "Chromium"]
        version = re.search(r'v="(\d+)', ch)
        v = version.group(1) if version else "147"
        if product:
            headless = ch.replace('"%s"' % _brand_name(product[0]), '"HeadlessChrome"', 1)
        else:
            headless = ch + ', "HeadlessChrome";v="%s"' % v
        if "HeadlessChrome" not in ch:
            add("brand-headless", "", _copy(row, _set(headers, "sec-ch-ua", headless)))
        other = '"Microsoft Edge"' if '"Microsoft Edge"' not in ch else '"Google Chrome"'
        if product:
            swapped = ch.replace('"%s"' % _brand_name(product[0]), other, 1)
        else:
            swapped = ch + ', %s;v="%s"' % (other, v)
        add("brand-product", other.strip('"'), _copy(row, _set(headers, "sec-ch-ua", swapped)))
        for kind, test in (("brand-no-grease", _is_grease), ("brand-no-chromium", lambda b: b == "Chromium")):
            kept = [e for e in entries if not test(_brand_name(e))]
            if len(kept) < len(entries):
                add(kind, "", _copy(row, _set(headers, "sec-ch-ua", ", ".join(kept))))
        for old in sorted(set(re.findall(r'v="(\d+)"', ch))):
            if old not in ("8", "24", "99"):
                for new in (int(old) - 1, int(old) - 20):
                    add("hint-version", str(new),
                        _copy(row, _set(headers, "sec-ch-ua", ch.replace('v="%s"' % old, 'v="%d"' % new))))
    platform = _get(headers, "sec-ch-ua-platform")
    if platform is not None:
        for p in PLATFORMS:
            if p != platform:
                add("platform", p.strip('"'), _copy(row, _set(headers, "sec-ch-ua-platform", p)))
    mobile = _get(headers, "sec-ch-ua-mobile")
    if mobile is not None:
        add("mobile", "", _copy(row, _set(headers, "sec-ch-ua-mobile", "?0" if mobile.strip() == "?1" else "?1")))
    if eng in ("gecko", "webkit") and ch is None and ua:
        at = names.index("user-agent")
        add("hints-on-other", "", _copy(row, headers[:at] + [list(h) for h in CHROME_HINTS] + headers[at:]))
    if ua and eng:
        add("ua-other-engine", "", _copy(row, _set(headers, "user-agent", FIREFOX_UA if eng != "gecko" else CHROME_UA)))
        add("ua-library", "", _copy(row, _set(headers, "user-agent", LIBRARY_UA)))
    if "accept" in names:
        for a in LIBRARY_ACCEPTS:
            add("accept-library", a, _copy(row, _set(headers, "accept", a)))
    if "accept-encoding" in names:
        for e in LIBRARY_ENCODINGS:
            add("encoding-library", e, _copy(row, _set(headers, "accept-encoding", e)))
    if "connection" in names:
        for c in LIBRARY_CONNECTIONS:
            add("connection-library", c, _copy(row, _set(headers, "connection", c)))
    ja4 = row.get("ja4")
    if ja4:
        add("tls-library", "", _copy(row, ja4=OPENSSL_JA4, tls_family="openssl"))
        if ja4[8:10] == "h2":
            add("tls-no-h2", "", _copy(row, ja4=ja4[:8] + "h1" + ja4[10:]))
        if ja4[1:3] == "13":
            add("tls-12", "", _copy(row, ja4=ja4[:1] + "12" + ja4[3:]))
    return out


def sample(row, rng, most=3):
    """One to `most` degradations of `row` chained, drawn with `rng`
    (random.Random): (kinds, row). Scrapers make one mistake or several.
    Kinds are drawn first, so that a head with many headers (many `drop`
    and `swap` choices) does not make the other kinds rare."""
    kinds = []
    current = row
    for _ in range(rng.randint(1, most)):
        choices = all_single(current)
        if not choices:
            break
        by_kind = {}
        for kind, detail, new in choices:
            by_kind.setdefault(kind, []).append((detail, new))
        kind = rng.choice(sorted(by_kind))
        detail, current = rng.choice(by_kind[kind])
        kinds.append(kind if not detail else "%s:%s" % (kind, detail))
    return kinds, current
