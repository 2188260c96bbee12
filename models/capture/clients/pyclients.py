"""The Python HTTP clients of the capture, each used the way a script uses it.

    python3 pyclients.py CLIENT BASE_URL PATH...

CLIENT is requests, httpx, aiohttp, urllib, scrapy, curl_cffi:TARGET (a
curl_cffi impersonation target) or requests-chrome-headers.
requests-chrome-headers is a scraper that copied a Chromium navigation's
request headers (chrome_headers.json, as Chromium 156 sends them to an
HTTPS page over HTTP/1.1, Host aside) and sends them, in that order and
with nothing else, on every request: the heads are a browser's, the TLS
ClientHello is Python's OpenSSL. Every client makes the same requests
against BASE_URL (the script flow of capture.py): a GET of each PATH (the
home page, a product page, a JSON API call and pages of the wider site,
sitemap.SCRIPT_PATHS), then a form POST, with the library's defaults: no
header is set by hand, so what nginx records is what the library sends.
Certificates are not verified (the capture's TLS origins are self-signed).
Prints the library's version on stdout.
"""

import json
import os
import sys

PATHS = ()  # from the command line
FORM = {"user": "ada@example.org", "pass": "correct horse"}


def run_requests(base):
    import requests

    s = requests.Session()
    for p in PATHS:
        s.get(base + p, verify=False)
    s.post(base + "/login", data=FORM, verify=False)
    return requests.__version__


def chrome_headers():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "chrome_headers.json")) as f:
        return json.load(f)


def run_requests_chrome_headers(base):
    import requests

    s = requests.Session()
    # The session's defaults (python-requests UA, Accept */*, ...) go; the
    # copied headers come in their order; http.client puts Host first, as
    # Chromium does over HTTP/1.1.
    s.headers.clear()
    s.headers.update(chrome_headers())
    for p in PATHS:
        s.get(base + p, verify=False)
    s.post(base + "/login", data=FORM, verify=False)
    return requests.__version__


def run_httpx(base):
    import httpx

    with httpx.Client(verify=False) as c:
        for p in PATHS:
            c.get(base + p)
        c.post(base + "/login", data=FORM)
    return httpx.__version__


def run_aiohttp(base):
    import asyncio

    import aiohttp

    async def go():
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as s:
            for p in PATHS:
                async with s.get(base + p) as r:
                    await r.read()
            async with s.post(base + "/login", data=FORM) as r:
                await r.read()

    asyncio.run(go())
    return aiohttp.__version__


def run_urllib(base):
    import ssl
    import urllib.parse
    import urllib.request

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    for p in PATHS:
        urllib.request.urlopen(base + p, context=ctx).read()
    body = urllib.parse.urlencode(FORM).encode()
    urllib.request.urlopen(base + "/login", data=body, context=ctx).read()
    return "%d.%d.%d" % sys.version_info[:3]


def run_scrapy(base):
    import logging

    import scrapy
    from scrapy.crawler import CrawlerProcess

    class Shop(scrapy.Spider):
        name = "shop"

        async def start(self):  # Scrapy >= 2.13 (start_requests before)
            for r in self.start_requests():
                yield r

        def start_requests(self):
            # One after the other, as the other clients do, so that the
            # capture's request order is the same on every run.
            yield scrapy.Request(base + PATHS[0], callback=self.next_page, cb_kwargs={"i": 1})

        def next_page(self, response, i):
            if i < len(PATHS):
                yield scrapy.Request(base + PATHS[i], callback=self.next_page, cb_kwargs={"i": i + 1})
            else:
                yield scrapy.FormRequest(base + "/login", formdata=FORM, callback=self.done)

        def done(self, response):
            return None

    logging.getLogger("scrapy").setLevel(logging.WARNING)
    # ROBOTSTXT_OBEY as `scrapy startproject` writes it: /robots.txt first.
    proc = CrawlerProcess(settings={"LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": True})
    proc.crawl(Shop)
    proc.start()
    return scrapy.__version__


def run_curl_cffi(base, target):
    import curl_cffi
    from curl_cffi import requests as creq

    s = creq.Session(impersonate=target, verify=False)
    for p in PATHS:
        s.get(base + p)
    s.post(base + "/login", data=FORM)
    return curl_cffi.__version__


def main():
    global PATHS
    client, base = sys.argv[1], sys.argv[2]
    PATHS = tuple(sys.argv[3:])
    import warnings

    warnings.filterwarnings("ignore")
    if client.startswith("curl_cffi:"):
        version = run_curl_cffi(base, client.split(":", 1)[1])
    else:
        version = {
            "requests": run_requests,
            "httpx": run_httpx,
            "aiohttp": run_aiohttp,
            "urllib": run_urllib,
            "scrapy": run_scrapy,
            "requests-chrome-headers": run_requests_chrome_headers,
        }[client](base)
    print(version)


if __name__ == "__main__":
    main()
