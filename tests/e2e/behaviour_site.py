"""The crawl harness's site: the capture site (models/capture/: a shop with a
magazine, docs, a forum, localized pages, each page with the stylesheets,
scripts, fonts, images and API calls pages of its kind load) behind real
nginx with four workers running edgeguard with the client memory, the
cookie and `behaviour` on, as nginx-conf/nginx.conf ships them.

The capture site has 25 pages; a crawl of 30 navigations needs more, as a
real shop has: the harness adds CATALOG product pages (copies of the
site's product page, with its sub-resources) and a /sitemap.xml listing
every page, which crawlers read.

Time: `speed` > 1 runs nginx under libfaketime (FAKETIME "+0 xSPEED"), so
the wall clock nginx and the library read runs SPEED times faster than
real time: a crawler sending 10 requests a second at speed 100 is seen as
one every 10 s. The monotonic clock stays real (nginx's timers and
keepalive). docs/behaviour.md's `## Measured` says which cases ran so.

Every answer carries what the gate decided, for the clients to read:
X-Edgeguard-Action, X-Edgeguard-Reasons and the client memory's
variables (a header filter at http{} level, which no location of the site
overrides). The access log holds the same per request, with $msec.
"""

import importlib.util
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile

from conftest import LIB, MODULES, NGINX, ROOT, bad_log_lines, free_port, wait_for_port

CAPTURE = ROOT / "models" / "capture"
BOT_MODEL = ROOT / "models" / "bot.json"
SECRET = ROOT / "tests" / "fixtures" / "challenge" / "secret"
TEST_LIST = ROOT / "tests" / "e2e" / "data" / "internal-headers.txt"
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
CATALOG = 400
FIXED_MTIME = 1767225600  # as the capture: stable ETag / Last-Modified

# The capture's site map, by path: tests/e2e/sitemap.py is another module
# of the same name in the same pytest run.
_spec = importlib.util.spec_from_file_location("capture_sitemap", CAPTURE / "sitemap.py")
sitemap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sitemap)


def _capture_site_conf():
    """capture.py's SITE_CONF (the site's locations: cookies, Cache-Control,
    the API), read from the module with its own `sitemap` in place."""
    saved = {name: sys.modules.get(name) for name in ("sitemap", "browsers", "flows", "scripted")}
    sys.modules["sitemap"] = sitemap
    sys.path.insert(0, str(CAPTURE))
    try:
        spec = importlib.util.spec_from_file_location("capture_capture", CAPTURE / "capture.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.SITE_CONF
    finally:
        sys.path.remove(str(CAPTURE))
        for name, m in saved.items():
            if m is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = m


SITE_CONF = _capture_site_conf()

CLIENT_VARS = ("navigations", "subresources", "paths", "cookie", "rate", "direct")

LOG_FORMAT = (
    "log_format behave escape=json '{"
    '"t":$msec,"addr":"$remote_addr","port":$remote_port,"conn":$connection,"status":$status,'
    '"method":"$request_method","uri":"$request_uri","ua":"$http_user_agent",'
    '"action":"$edgeguard_action","reasons":"$edgeguard_reasons","grade":"$edgeguard_grade",'
    + ",".join(f'"{v}":"$edgeguard_client_{v}"' for v in CLIENT_VARS)
    + ',"set_cookie":"$sent_http_set_cookie","cookie_in":"$http_cookie",'
    '"version":"$server_protocol","headers":"$edgeguard_request_headers"'
    "}';"
)

HEADER_FILTER = """
    header_filter_by_lua_block {
        local v = ngx.var
        ngx.header["X-Edgeguard-Action"] = v.edgeguard_action
        ngx.header["X-Edgeguard-Reasons"] = v.edgeguard_reasons
        ngx.header["X-Edgeguard-Client"] = table.concat({
            v.edgeguard_client_navigations or "", v.edgeguard_client_subresources or "",
            v.edgeguard_client_paths or "", v.edgeguard_client_cookie or "", v.edgeguard_client_rate or ""}, " ")
    }"""

INIT_PAGES = """
        local function read(name)
            local f = assert(io.open("{site}/" .. name))
            local text = f:read("*a")
            f:close()
            return text
        end
        LOGIN_HTML = read("login.html")
        CART_HTML = read("en-us/cart.html")
        function SEARCH_PAGE()
            local q = ngx.unescape_uri(((ngx.var.arg_q or ""):gsub("%+", " ")))
            q = q:gsub("[<>&\\"]", "")
            ngx.print([[<!doctype html><html lang="en"><head><meta charset="utf-8">]],
                [[<title>Search - Corner Shop</title><link rel="stylesheet" href="/static/site.css">]],
                [[<link rel="icon" href="/favicon.ico"><script src="/static/app.js" defer></script></head>]],
                [[<body data-page="search"><main><h1>Results for ]], q, [[</h1>]],
                [[<ul><li><a href="/products/42">Walking shoes</a></li></ul>]],
                [[<p><a id="login" href="/login">Sign in</a> to see your offers.</p></main></body></html>]])
        end"""


def memory_options(behaviour="challenge", extra=""):
    """The configure{} options of issue 39 as the agreed brief names them."""
    return f'client_memory = "64m", client_cookie = true, behaviour = "{behaviour}", {extra}'


def build_site(site):
    """The capture site plus the catalog and the sitemap; returns the page
    paths the sitemap lists."""
    sitemap.build(site, media=bool(sitemap.GST))
    product = (site / "products" / "42.html").read_text()
    pages = [p for p in (sitemap.HOME, sitemap.ARTICLE, sitemap.ARTICLE_2, sitemap.NEWS, sitemap.PRODUCT_QUERY,
                         sitemap.CATEGORY, sitemap.DOCS, sitemap.DOCS_INDEX, sitemap.DOCS_AUTH, sitemap.FORUM,
                         sitemap.FORUM_INDEX, sitemap.LOCALIZED_DE, sitemap.LOCALIZED_FR, "/products/42", "/products/7")]
    for n in range(1000, 1000 + CATALOG):
        (site / "products" / f"{n}.html").write_text(product.replace("42", str(n)))
        shutil.copyfile(site / "img" / "product-42.png", site / "img" / f"product-{n}.png")
        pages.append(f"/products/{n}")
    urls = "".join(f"<url><loc>http://shop.test{p.replace('&', '&amp;')}</loc></url>\n" for p in pages)
    (site / "sitemap.xml").write_text('<?xml version="1.0" encoding="UTF-8"?>\n'
                                      '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                                      + urls + "</urlset>\n")
    sitemap.chmod_tree(site, FIXED_MTIME)
    return pages


def site_locations(site):
    """capture.py's locations for this site, without its `set` lines (the
    server declares the variables it logs)."""
    text = SITE_CONF.format(site=site)
    return "\n".join(line for line in text.splitlines() if not line.startswith("set $edgeguard_"))


def conf(prefix, port, tls_port, site, options, mode="challenge", workers=4, record=False):
    cert = prefix / "cert.pem"
    key = prefix / "key.pem"
    declared = "\n".join(f'        set $edgeguard_{v} "";' for v in (
        "request_headers", "bot", "action", "reasons", "grade", "time", "verified_bot", "rule", "tag", "bot_category",
        *(f"client_{c}" for c in CLIENT_VARS)))
    # As nginx-conf/decision-vars.conf: named, $request_id is kept across
    # an internal redirect, and the memory counts such a page once.
    declared += "\n        set $edgeguard_request_id $request_id;"
    return f"""
load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes {workers};
error_log logs/error.log info;
pid logs/nginx.pid;
events {{ worker_connections 2048; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    client_body_temp_path logs/body;
    proxy_temp_path logs/proxy;
    fastcgi_temp_path logs/fastcgi;
    uwsgi_temp_path logs/uwsgi;
    scgi_temp_path logs/scgi;
    lua_package_path "{ROOT}/lua/?.lua;;";
    lua_shared_dict edgeguard_metrics 1m;
    server_tokens off;
    keepalive_timeout 60s;
    keepalive_requests 100000;
    types {{ font/ttf ttf; text/javascript mjs; }}
    {LOG_FORMAT}
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            internal_headers = "{TEST_LIST}",
            lib_path = "{LIB}",
            models = {{ bot = "{BOT_MODEL}" }},
            mode = "{mode}",
            challenge_secret = "{SECRET}",
            metrics_dict = "edgeguard_metrics",
            rules = {{ "preset:well-known", "preset:feeds" }},
            vars = {{ "reasons" }},
            {options}
        }})
        require("resty.edgeguard.record")
        {INIT_PAGES.replace("{site}", str(site))}
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}
    {HEADER_FILTER}
    server {{
        listen 127.0.0.1:{port};
        listen 127.0.0.1:{tls_port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
        underscores_in_headers on;
        # The site's <video> and <audio> files need GStreamer to be made
        # (models/capture/sitemap.py); without it they are 404s, as they
        # were when the sessions were recorded, and not errors.
        log_not_found off;
{declared}
        access_log logs/access.jsonl behave;
        rewrite_by_lua_block {{
            {'require("resty.edgeguard.record").capture()' if record else ""}
            require("resty.edgeguard").access()
        }}
        location = /edgeguard/metrics {{
            allow 127.0.0.1;
            deny all;
            rewrite_by_lua_block {{ return }}  # the scraper is not scored
            content_by_lua_block {{ ngx.print(require("resty.edgeguard").metrics()) }}
        }}
        {site_locations(site)}
    }}
}}
"""


class Site:
    """The site behind nginx (four workers, edgeguard with the memory).

    speed: how many times faster than real time nginx's wall clock runs
    (libfaketime); 1 is real time."""

    def __init__(self, options=None, speed=1, mode="challenge", workers=4, record=False):
        self.prefix = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-behave-"))
        os.chmod(self.prefix, 0o755)
        (self.prefix / "logs").mkdir()
        self.site = self.prefix / "site"
        self.pages = build_site(self.site)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
                        "-keyout", str(self.prefix / "key.pem"), "-out", str(self.prefix / "cert.pem"),
                        "-subj", "/CN=shop.test", "-addext", "subjectAltName=DNS:shop.test,IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=60)
        os.chmod(self.prefix / "key.pem", 0o644)
        self.port = free_port()
        self.tls_port = free_port()
        self.speed = speed
        text = conf(self.prefix, self.port, self.tls_port, self.site,
                    memory_options() if options is None else options, mode=mode, workers=workers, record=record)
        (self.prefix / "nginx.conf").write_text(text)
        self.proc = None

    def start(self):
        env = dict(os.environ)
        if self.speed != 1:
            if not os.path.exists(FAKETIME_LIB):
                raise AssertionError("libfaketime is needed for slow rates (make deps-test installs faketime)")
            env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME=f"+0 x{self.speed}", FAKETIME_DONT_FAKE_MONOTONIC="1",
                       FAKETIME_NO_CACHE="1")
        self.proc = subprocess.Popen([NGINX, "-p", f"{self.prefix}/", "-c", "nginx.conf", "-g", "daemon off;"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        if not (wait_for_port(self.port, self.proc) and wait_for_port(self.tls_port, self.proc)):
            out = self.proc.stdout.read().decode(errors="replace") if self.proc.poll() is not None else ""
            self.stop()
            raise AssertionError(f"nginx did not start:\n{out}\n{self.error_log}")
        return self

    @property
    def error_log(self):
        path = self.prefix / "logs" / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log(self):
        path = self.prefix / "logs" / "access.jsonl"
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text(errors="replace").splitlines() if line.strip()]
        for row in rows:
            row["headers"] = json.loads(row["headers"]) if row.get("headers") else []
        return rows

    def bad_log_lines(self):
        return bad_log_lines(self.error_log)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()

    def cleanup(self):
        if not os.environ.get("EDGEGUARD_KEEP_NGINX"):
            shutil.rmtree(self.prefix, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()
