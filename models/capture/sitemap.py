"""The capture site: a shop with a magazine, docs, a forum, localized
sections and files, as a real site's URLs look, and two other sites that
link to it (a search engine and a blog).

`build(site_dir)` writes every page and file the nginx handlers of
capture.py serve (the hand-written pages of site/ are copied first);
`url_kind(uri)` and `dest_of(...)` say what a request was for, from the
site's own paths, the same way for every client; the URL constants are the
pages the flows (flows.py) and the scripted clients (scripted.py) open.

Every page loads what pages of its kind load on real sites: stylesheets,
fonts, images (PNG and SVG), a classic script and, on product pages, a
module script (fetched in CORS mode) that imports another; articles play
audio and news video (<audio>/<video>: Range requests); docs fetch a JSON
search index with XMLHttpRequest; pages fetch() the site's JSON API.
"""

import html
import os
import pathlib
import shutil
import struct
import subprocess
import zipfile
import zlib

HERE = pathlib.Path(__file__).resolve().parent

# The pages people and scripts open (paths on the shop's origin).
HOME = "/"
INDEX_HTML = "/index.html"
ARTICLE = "/blog/2024/05/post-title"
ARTICLE_2 = "/blog/2024/06/rain-gear-that-lasts"
ARTICLE_3 = "/blog/2023/11/how-we-test-shoes"  # reached from the blog only: not in the browser's cache
NEWS = "/news/world/2026/12/03/storm-closes-alpine-passes-as-snow-arrives-early"
PRODUCT_QUERY = "/en-us/products/shoes/air-max-90?color=red&size=10"
CATEGORY = "/en-us/products/shoes/"
CART = "/en-us/cart"
DOCS = "/docs/v2/getting-started.html"
DOCS_INDEX = "/docs/v2/"
DOCS_AUTH = "/docs/v2/api/authentication.html"
FORUM = "/forum/thread/88123?page=4"
FORUM_INDEX = "/forum/"
LOCALIZED_DE = "/de-de/produkte/schuhe/air-max-90?farbe=rot&groesse=44"
LOCALIZED_DE_ABOUT = "/de-de/%C3%BCber-uns"  # /de-de/über-uns
LOCALIZED_FR = "/fr/actualites/2026/12/03/tempete-dans-les-alpes"
ACCOUNT_ORDERS = "/account/orders?status=open"
DEEP = "/a/b/c/d"
PDF = "/files/catalog-2026.pdf"
ZIP = "/downloads/corner-shop-app-2.4.1.zip"
VIDEO = "/media/news/2026/12/storm-alps.webm"
AUDIO = "/media/podcast/episode-12.ogg"

# The other sites (their requests are not recorded: the corpus is what the
# shop's nginx saw). The search engine's results page sets Google's
# referrer policy (`origin`); the blog keeps the browser's default.
SEARCH_HOST = "search.test"
BLOG_HOST = "blog.test"
SEARCH_PAGE = "/search?q=corner+shop+air+max+90&hl=en"
BLOG_PAGE = "/2026/12/gift-ideas-for-walkers"

# What the scripted clients fetch besides their old three paths.
SCRIPT_PATHS = ("/", "/products/42", "/api/cart", ARTICLE, PRODUCT_QUERY, DOCS)

HEAD = """<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
{links}<link rel="icon" href="/favicon.ico">
{scripts}</head>
<body data-page="{kind}"{attrs}>
<header><a id="logo" href="/"><img src="/img/logo.png" alt="Corner Shop" width="120" height="40"></a>
<nav><a id="nav-blog" href="{article}">Magazine</a> <a id="nav-news" href="{news}">News</a>
<a id="nav-shoes" href="{category}">Shoes</a> <a id="nav-docs" href="{docs}">App docs</a>
<a id="nav-forum" href="{forum}">Forum</a> <a id="nav-de" href="/de-de/">Deutsch</a> <a id="nav-fr" href="/fr/">Français</a></nav>
<img src="/img/icons/cart.svg" alt="Cart" width="24" height="24"></header>
<main>
"""

TAIL = """</main>
<footer><a href="/account/orders?status=open">Orders</a> <a href="/login">Sign in</a></footer>
</body>
</html>
"""


def page(title, body, kind, *, lang="en", styles=("/static/site.css",), scripts=("/static/app.js",),
         modules=(), preload_fonts=(), attrs=None):
    links = "".join(f'<link rel="stylesheet" href="{s}">\n' for s in styles)
    links += "".join(f'<link rel="preload" href="{f}" as="font" type="font/ttf" crossorigin>\n' for f in preload_fonts)
    tags = "".join(f'<script src="{s}" defer></script>\n' for s in scripts)
    tags += "".join(f'<script type="module" src="{m}"></script>\n' for m in modules)
    extra = "".join(f' data-{k}="{html.escape(v)}"' for k, v in (attrs or {}).items())
    return HEAD.format(lang=lang, title=html.escape(title), links=links, scripts=tags, kind=kind, attrs=extra,
                       article=ARTICLE, news=NEWS, category=CATEGORY, docs=DOCS, forum=FORUM) + body + TAIL


def path_only(url):
    return url.split("?", 1)[0]


ARTICLE_STYLES = ("/static/site.css", "/static/article.css")
DOCS_STYLES = ("/static/site.css", "/static/docs.css")

PAGES = {
    # path of the file under the site root: html
    "blog/2024/05/post-title.html": page(
        "Ten trails for a long weekend - Corner Shop Magazine",
        f"""<article>
<h1>Ten trails for a long weekend</h1>
<img src="/img/blog/2024/05/trail-hero.png" alt="A trail" width="320" height="120">
<p>Pack light, start early.</p>
<audio id="podcast" controls preload="auto" src="{AUDIO}"></audio>
<p><a id="next-post" href="{ARTICLE_2}">Next: rain gear that lasts</a></p>
<p><a id="to-news" href="{NEWS}">Storm closes alpine passes</a> &middot;
<a id="to-shoes" href="{PRODUCT_QUERY}">The shoes we wore</a></p>
<section id="comments">Loading comments&hellip;</section>
</article>
""", "article", styles=ARTICLE_STYLES, preload_fonts=("/static/fonts/serif.ttf",), attrs={"post": "post-title"}),
    "blog/2024/06/rain-gear-that-lasts.html": page(
        "Rain gear that lasts - Corner Shop Magazine",
        f"""<article>
<h1>Rain gear that lasts</h1>
<img src="/img/blog/2024/06/rain.png" alt="Rain" width="320" height="120">
<p>Seams fail first.</p>
<p><a id="prev-post" href="{ARTICLE}">Previous: ten trails</a></p>
<section id="comments">Loading comments&hellip;</section>
</article>
""", "article", styles=ARTICLE_STYLES, attrs={"post": "rain-gear-that-lasts"}),
    "blog/2023/11/how-we-test-shoes.html": page(
        "How we test shoes - Corner Shop Magazine",
        f"""<article>
<h1>How we test shoes</h1>
<img src="/img/blog/2024/05/trail-hero.png" alt="" width="320" height="120">
<p>Two hundred kilometres each.</p>
<p><a id="to-shoes" href="{PRODUCT_QUERY}">The shoes we tested</a></p>
<section id="comments">Loading comments&hellip;</section>
</article>
""", "article", styles=ARTICLE_STYLES, attrs={"post": "how-we-test-shoes"}),
    "news/world/2026/12/03/storm-closes-alpine-passes-as-snow-arrives-early.html": page(
        "Storm closes alpine passes as snow arrives early",
        f"""<article>
<h1>Storm closes alpine passes as snow arrives early</h1>
<video id="clip" src="{VIDEO}" width="320" height="180" preload="auto" autoplay muted playsinline></video>
<img src="/img/news/2026/12/storm-alps.png" alt="Snow on a pass" width="320" height="120">
<p><a id="to-article" href="{ARTICLE}">Ten trails for a long weekend</a> &middot;
<a id="to-forum" href="{FORUM}">Discuss in the forum</a></p>
</article>
""", "news", styles=ARTICLE_STYLES),
    "en-us/products/shoes/air-max-90.html": page(
        "Air Max 90 - Shoes - Corner Shop",
        """<h1>Air Max 90</h1>
<div id="gallery"><img src="/img/products/air-max-90/red-1.png" alt="Air Max 90, red" width="200" height="200">
<img src="/img/products/air-max-90/red-2.png" alt="Air Max 90, red, side" width="200" height="200"></div>
<img src="/img/icons/truck.svg" alt="" width="24" height="24"> Free delivery
<form id="size-form" action="/en-us/products/shoes/air-max-90" method="get">
<input type="hidden" name="color" value="red">
<label for="size-input">Size</label> <input id="size-input" name="size" inputmode="numeric">
<button id="update" type="submit">Update</button>
</form>
<form id="cart-form" action="/en-us/cart" method="post">
<input type="hidden" name="sku" value="am90-red"><input type="hidden" name="qty" value="1">
<button id="add-to-cart" type="submit">Add to cart</button>
</form>
<p id="stock">Checking stock&hellip;</p>
<p><a id="to-category" href="/en-us/products/shoes/">All shoes</a></p>
""", "product-page", modules=("/static/js/gallery.mjs",), attrs={"sku": "am90-red"}),
    "en-us/products/shoes/index.html": page(
        "Shoes - Corner Shop",
        f"""<h1>Shoes</h1>
<ul><li><a id="p-air-max-90" href="{PRODUCT_QUERY}">Air Max 90</a></li>
<li><a href="/products/42">Walking shoes</a></li></ul>
<p><a id="next-page" href="/en-us/products/shoes/?page=2&amp;sort=price">Next page</a></p>
""", "category"),
    "docs/v2/getting-started.html": page(
        "Getting started - Corner Shop app docs v2",
        f"""<h1>Getting started</h1>
<pre><code>corner-shop login --token $TOKEN</code></pre>
<p><a id="docs-home" href="/docs/v2/">Docs home</a> &middot; <a id="api-auth" href="{DOCS_AUTH}">Authentication</a></p>
<p><a id="download-app" href="{ZIP}">Download the app (zip)</a> &middot; <a id="catalog" href="{PDF}">Catalog (PDF)</a></p>
<form id="docs-search" action="/docs/v2/search" method="get">
<input id="docs-q" name="q" type="search"> <button id="docs-go" type="submit">Search docs</button></form>
""", "docs", styles=DOCS_STYLES, scripts=("/static/app.js", "/static/js/docs.js")),
    "docs/v2/index.html": page(
        "Corner Shop app docs v2",
        f"""<h1>App docs</h1>
<ul><li><a id="start" href="{DOCS}">Getting started</a></li><li><a href="{DOCS_AUTH}">Authentication</a></li></ul>
""", "docs", styles=DOCS_STYLES, scripts=("/static/app.js", "/static/js/docs.js")),
    "docs/v2/api/authentication.html": page(
        "Authentication - Corner Shop app docs v2",
        f"""<h1>Authentication</h1><p>Tokens expire after 30 days.</p><p><a id="back-start" href="{DOCS}">Getting started</a></p>
""", "docs", styles=DOCS_STYLES, scripts=("/static/app.js", "/static/js/docs.js")),
    "forum/thread/88123.html": page(
        "How do I clean suede shoes? - Page 4 - Corner Shop Forum",
        """<h1>How do I clean suede shoes?</h1>
<ol start="31"><li><img src="/img/avatars/u17.png" alt="" width="32" height="32"> A brush, dry.</li>
<li><img src="/img/avatars/u42.png" alt="" width="32" height="32"> Never water.</li></ol>
<p><a id="prev-page" href="/forum/thread/88123?page=3">Previous</a> <a id="next-page" href="/forum/thread/88123?page=5">Next</a></p>
<form id="reply" action="/forum/thread/88123/reply" method="post">
<textarea id="reply-text" name="body"></textarea> <button id="reply-go" type="submit">Reply</button></form>
""", "forum"),
    "forum/index.html": page(
        "Corner Shop Forum",
        f"""<h1>Forum</h1><ul><li><a id="thread" href="{FORUM}">How do I clean suede shoes?</a></li></ul>
""", "forum"),
    "de-de/index.html": page(
        "Corner Shop - Deutschland",
        f"""<h1>Willkommen</h1><p><a id="de-product" href="{LOCALIZED_DE}">Air Max 90</a>
<a id="de-about" href="{LOCALIZED_DE_ABOUT}">Über uns</a></p>
""", "localized", lang="de"),
    "de-de/produkte/schuhe/air-max-90.html": page(
        "Air Max 90 - Schuhe - Corner Shop",
        f"""<h1>Air Max 90</h1>
<img src="/img/products/air-max-90/red-1.png" alt="Air Max 90, rot" width="200" height="200">
<p><a id="de-about" href="{LOCALIZED_DE_ABOUT}">Über uns</a> &middot; <a id="to-fr" href="{LOCALIZED_FR}">Français</a></p>
<form id="de-search" action="/de-de/suche" method="get"><input id="de-q" name="q" type="search">
<button id="de-go" type="submit">Suchen</button></form>
""", "localized", lang="de", attrs={"sku": "am90-red"}),
    "de-de/über-uns.html": page(
        "Über uns - Corner Shop", """<h1>Über uns</h1><p>Seit 1998.</p>
""", "localized", lang="de"),
    "fr/index.html": page(
        "Corner Shop - France", f"""<h1>Bienvenue</h1><p><a id="fr-news" href="{LOCALIZED_FR}">Tempête</a></p>
""", "localized", lang="fr"),
    "fr/actualites/2026/12/03/tempete-dans-les-alpes.html": page(
        "Tempête dans les Alpes - Corner Shop",
        """<article><h1>Tempête dans les Alpes</h1>
<img src="/img/news/2026/12/storm-alps.png" alt="" width="320" height="120">
<form id="fr-search" action="/fr/recherche" method="get"><input id="fr-q" name="q" type="search">
<button id="fr-go" type="submit">Rechercher</button></form></article>
""", "localized", lang="fr", styles=ARTICLE_STYLES),
    "en-us/cart.html": page(
        "Your cart - Corner Shop", f"""<h1>Your cart</h1><p>Air Max 90, red</p>
<p><a id="keep-shopping" href="{CATEGORY}">Keep shopping</a></p>
""", "cart"),
    "account/orders.html": page(
        "Your orders - Corner Shop", """<h1>Open orders</h1><p>None.</p>
""", "account"),
    "a/b/c/d.html": page(
        "An old page - Corner Shop", """<h1>This page moved long ago</h1><p><a id="home-link" href="/">Home</a></p>
""", "deep"),
}

STATIC = {
    "static/article.css": """@font-face { font-family: "Shop Serif"; src: url("/static/fonts/serif.ttf") format("truetype"); }
article { font-family: "Shop Serif", serif; line-height: 1.5; }
""",
    "static/docs.css": """@font-face { font-family: "Shop Mono"; src: url("/static/fonts/mono.ttf") format("truetype"); }
pre, code { font-family: "Shop Mono", monospace; background: #f4f4f4; }
""",
    # A module script imports another module: both are fetched in CORS mode.
    "static/js/gallery.mjs": """import { sku } from "./product-data.mjs";
document.getElementById("gallery").setAttribute("data-sku", sku());
""",
    "static/js/product-data.mjs": """export function sku() { return document.body.getAttribute("data-sku") || ""; }
""",
    # The docs' search index, over XMLHttpRequest (not fetch()).
    "static/js/docs.js": """(function () {
  "use strict";
  var x = new XMLHttpRequest();
  x.open("GET", "/docs/v2/search-index.json");
  x.responseType = "json";
  x.send();
})();
""",
    "docs/v2/search-index.json": '{"pages":["getting-started","api/authentication"]}\n',
    "img/icons/cart.svg": """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24">
<path d="M3 4h2l3 10h10l2-7H7" fill="none" stroke="#333" stroke-width="2"/></svg>
""",
    "img/icons/truck.svg": """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24">
<rect x="2" y="7" width="12" height="8" fill="#666"/><rect x="14" y="10" width="6" height="5" fill="#999"/></svg>
""",
}

IMAGES = {  # path: (width, height, rgb)
    "img/logo.png": (120, 40, (200, 60, 40)),
    "img/header-bg.png": (4, 40, (245, 245, 245)),
    "img/product-42.png": (200, 200, (40, 90, 160)),
    "img/product-7.png": (200, 200, (60, 140, 60)),
    "img/deal.png": (60, 30, (250, 200, 0)),
    "favicon.ico": (16, 16, (200, 60, 40)),
    "img/blog/2024/05/trail-hero.png": (320, 120, (90, 120, 70)),
    "img/blog/2024/06/rain.png": (320, 120, (70, 90, 130)),
    "img/news/2026/12/storm-alps.png": (320, 120, (220, 225, 235)),
    "img/products/air-max-90/red-1.png": (200, 200, (200, 30, 30)),
    "img/products/air-max-90/red-2.png": (200, 200, (180, 40, 40)),
    "img/avatars/u17.png": (32, 32, (120, 80, 160)),
    "img/avatars/u42.png": (32, 32, (40, 160, 160)),
}

FONTS = {  # served path: Debian's fonts-dejavu-core file
    "static/shop-sans.ttf": "DejaVuSans.ttf",
    "static/fonts/serif.ttf": "DejaVuSerif.ttf",
    "static/fonts/mono.ttf": "DejaVuSansMono.ttf",
}

# The other sites' pages: {base} is the shop origin of the session.
SEARCH_HTML = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="referrer" content="origin"><title>corner shop air max 90 - Search</title></head>
<body><h1>Results</h1><ol>
<li><a id="result-1" href="{base}{product}">Air Max 90 - Shoes - Corner Shop</a></li>
<li><a id="result-2" href="{base}{article}">Ten trails for a long weekend - Corner Shop Magazine</a></li>
</ol></body></html>
"""
BLOG_HTML = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Gift ideas for walkers</title></head>
<body><h1>Gift ideas for walkers</h1><p>How <a id="shop-link" href="{base}{article3}">a shop tests its shoes</a>.</p>
</body></html>
"""


def png(width, height, rgb):
    """A small valid PNG of one colour (no image library needed)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def pdf():
    """A one-page PDF with a line of text, its cross-reference table
    computed (browsers' viewers open it)."""
    text = b"BT /F1 18 Tf 72 720 Td (Corner Shop catalog 2026) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def write_zip(path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in (("corner-shop/README.txt", "Corner Shop app 2.4.1\n"),
                           ("corner-shop/bin/corner-shop", "#!/bin/sh\necho corner-shop 2.4.1\n")):
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)


GST = shutil.which("gst-launch-1.0")
MEDIA = {  # what <video> and <audio> play: made by GStreamer (gstreamer1.0-tools)
    VIDEO: ["videotestsrc", "num-buffers=250", "pattern=ball", "!", "video/x-raw,width=320,height=180,framerate=25/1",
            "!", "vp8enc", "deadline=1", "target-bitrate=400000", "!", "webmmux"],
    AUDIO: ["audiotestsrc", "num-buffers=400", "wave=sine", "!", "audioconvert", "!", "opusenc", "!", "oggmux"],
}


def write_media(site):
    """The video and audio files. Without GStreamer the browsers' media
    requests cannot be captured: say so rather than serve something else."""
    if not GST:
        raise RuntimeError("gst-launch-1.0 is missing (Debian: gstreamer1.0-tools, gstreamer1.0-plugins-good): "
                           "the site's <video> and <audio> need it")
    for url, pipeline in MEDIA.items():
        target = site / url.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([GST, "-q", *pipeline, "!", "filesink", f"location={target}"], check=True,
                       capture_output=True, timeout=120)


def build(site, media=True):
    """Writes the whole site under `site` (a fresh directory): site/'s
    hand-written pages, the pages above, images, fonts, files, media."""
    site = pathlib.Path(site)
    shutil.copytree(HERE / "site", site)
    for rel, text in {**PAGES, **STATIC}.items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for rel, (w, h, rgb) in IMAGES.items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(png(w, h, rgb))
    for rel, name in FONTS.items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        font = pathlib.Path("/usr/share/fonts/truetype/dejavu") / name
        if font.exists():
            shutil.copyfile(font, target)
        else:  # the request is what matters; the browser may reject the file
            target.write_bytes(b"\x00\x01\x00\x00" + b"\x00" * 60)
    (site / "files").mkdir(exist_ok=True)
    (site / PDF.lstrip("/")).write_bytes(pdf())
    (site / "downloads").mkdir(exist_ok=True)
    write_zip(site / ZIP.lstrip("/"))
    if media:
        write_media(site)


def external_pages(root, bases):
    """The search engine's and the blog's pages, one per shop origin kind
    (`?shop=<origin>` picks it; the shop never sees that query: the
    search page sends only its origin as Referer, the blog's default
    policy only its origin to another site)."""
    root = pathlib.Path(root)
    for origin, base in bases.items():
        for name, text in (("search", SEARCH_HTML), ("blog", BLOG_HTML)):
            target = root / name / f"{origin}.html"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text.format(base=base, product=PRODUCT_QUERY, article=ARTICLE, article3=ARTICLE_3),
                              encoding="utf-8")


def chmod_tree(root, mtime):
    for path in [pathlib.Path(root), *pathlib.Path(root).rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
        os.utime(path, (mtime, mtime))


# --- what a request was for -------------------------------------------------

# The URLs of the capture before issue 29 (7c385ea): the shop's first pages
# and their sub-resources (paths; /search with any query). A request to any
# other URL is one of the wider site's.
BASE_PATHS = frozenset((
    "/", "/products/42", "/products/7", "/search", "/login", "/account", "/embed/widget", "/robots.txt",
    "/favicon.ico", "/static/site.css", "/static/app.js", "/static/shop-sans.ttf", "/static/widget.css",
    "/img/logo.png", "/img/header-bg.png", "/img/product-42.png", "/img/product-7.png", "/img/deal.png",
    "/api/cart", "/api/reviews", "/api/events",
))


def base_url(uri):
    return uri.split("?", 1)[0] in BASE_PATHS


def url_kind(uri):
    """The kind of site URL a request went to, from its path (and query)."""
    path, _, query = uri.partition("?")
    if path == "/":
        return "home"
    if path == "/index.html":
        return "index-html"
    first = path.split("/")[1]
    if first in ("de-de", "fr"):
        return "localized"
    if path.startswith("/products/"):
        return "product"
    if path.startswith("/en-us/products/"):
        if path.endswith("/"):
            return "category"
        return "product-query" if query else "product"
    if path.startswith("/en-us/cart"):
        return "cart"
    if path in ("/search",) or path.endswith("/search"):
        return "search"
    if path == "/login":
        return "login"
    if path == "/account":
        return "account"
    if path.startswith("/account/"):
        return "account-deep"
    if path.startswith("/blog/"):
        return "article"
    if path.startswith("/news/"):
        return "news"
    if path.endswith(".json") and not path.startswith("/api/"):
        return "data"
    if path.startswith("/docs/"):
        return "docs"
    if path.startswith("/forum/"):
        return "forum"
    if path.startswith("/files/"):
        return "file"
    if path.startswith("/downloads/"):
        return "download"
    if path.startswith("/media/"):
        return "media"
    if path.startswith("/embed/"):
        return "embed"
    if path.startswith("/api/"):
        return "api"
    if path == "/favicon.ico":
        return "favicon"
    if path == "/robots.txt":
        return "robots"
    if path.startswith(("/static/", "/img/")):
        return "asset"
    if path.startswith("/a/"):
        return "deep"
    return "other"


def dest_of(method, uri, headers):
    """What a request was for, from the site's own paths (the same for every
    client; Sec-Fetch-Dest is absent on plain-HTTP hostnames and in scripts)."""
    path = uri.split("?", 1)[0]
    host = next((v for k, v in headers if k.lower() in ("host", ":authority")), "")
    cross = host.startswith(("api", "localhost"))
    if method == "OPTIONS":
        return "preflight"
    if path.startswith("/api/"):
        return "api-cross" if cross else "api"
    if method == "POST":
        return "form-post"
    if path.startswith("/static/"):
        ext = path.rsplit(".", 1)[-1]
        return {"js": "script", "mjs": "script", "css": "style", "ttf": "font"}.get(ext, "static")
    if path.startswith("/img/"):
        return "img"
    if path.startswith("/media/"):
        return "media"
    if path.endswith(".json"):
        return "api"
    if path == "/favicon.ico":
        return "favicon"
    if path == "/robots.txt":
        return "robots"
    if path == "/embed/widget":
        return "iframe"
    return "document"
