"""A realistic site map for the page-invariance test: the URLs a person
opens on ordinary sites (news and blogs, shops with filters, documentation,
search, accounts, forums, localized paths, downloads) and the sub-resources
those pages load. Written for the test, independent of the training data's
URLs (models/gen_traffic.py): the shipped model reads no URL, and this says
so end to end, on URLs nobody trained on.

Each kind has at least 50 request targets, as sent on the request line
(percent-encoded where a browser encodes; a few raw UTF-8 paths, which
nginx takes as they are).
"""

PAGES = [
    "/",
    "/index.html",
    "/a/b/c/d",
    "/blog/2024/05/post-title",
    "/blog/2019/11/why-we-moved-to-postgres/",
    "/news/world/2026/12/03/leaders-meet-to-discuss-the-climate-accord-after-talks-stall",
    "/news/sport/football/premier-league-results-week-14?utm_source=twitter&utm_medium=social&utm_campaign=wk14",
    "/en-us/products/shoes/air-max-90?color=red&size=10",
    "/de-de/produkte/schuhe/laufschuhe?farbe=blau&gr%C3%B6%C3%9Fe=42&sortierung=preis-aufsteigend",
    "/fr-fr/femme/robes/robe-longue-fleurie-p-000123456.html?couleur=rouge",
    "/ja/products/%E6%97%A5%E6%9C%AC%E8%8C%B6/sencha-100g",
    "/es/ofertas/electronica/portatiles?page=3&sort=-rating&filter%5Bbrand%5D=lenovo",
    "/p/4G7xqZ2/wireless-noise-cancelling-headphones-black",
    "/shop/category/kitchen/cookware/pans-and-skillets?price_min=20&price_max=80&in_stock=1",
    "/product.php?id=88123&variant=4&ref=homepage_carousel",
    "/catalog/item.aspx?sku=AB-1234-XL&lang=en",
    "/docs/v2/getting-started.html",
    "/docs/v2/api/reference/authentication#oauth2-client-credentials",
    "/docs/latest/configuration/nginx/",
    "/manual/en/function.array-map.php",
    "/wiki/Special:Search?search=edge+computing&go=Go",
    "/wiki/Caf%C3%A9",
    "/search?q=bluetooth+speaker",
    "/search?q=%22exact+phrase%22+-excluded&page=4&per_page=48",
    "/search/?query=r%C3%A9sum%C3%A9%20templates&type=docs",
    "/s?k=usb-c+cable+2m&crid=2M096C61O4MLT&sprefix=usb-c%2Caps%2C183",
    "/forum/thread/88123?page=4",
    "/forum/t/how-do-i-reset-my-router/41827/12",
    "/questions/11227809/why-is-processing-a-sorted-array-faster",
    "/r/homelab/comments/1abcd2/my_new_rack/",
    "/account",
    "/account/orders/12345",
    "/account/settings/notifications",
    "/login?next=%2Fcheckout%2Fpayment",
    "/signin?returnUrl=%2Fen-us%2Faccount%2Fwishlist",
    "/register",
    "/password/reset?token=8f14e45fceea167a5a36dedd4bea2543",
    "/cart",
    "/checkout/shipping",
    "/checkout/payment?step=2",
    "/order/confirmation/ORD-2026-000451",
    "/about-us",
    "/contact.html",
    "/careers/engineering/senior-backend-engineer-berlin",
    "/help/faq#returns",
    "/legal/privacy-policy",
    "/terms",
    "/sitemap",
    "/pt-br/",
    "/zh-cn/guide/quick-start",
    "/ko/%EB%89%B4%EC%8A%A4/%EA%B2%BD%EC%A0%9C",
    "/ar/%D8%A7%D9%84%D8%A3%D8%AE%D8%A8%D8%A7%D8%B1",
    "/it/ricette/pasta-alla-carbonara",
    "/nl/winkel/fietsen/e-bikes?merk=gazelle",
    "/pl/kategoria/ksiazki/fantastyka",
    "/tr/urun/akilli-saat-12345",
    "/en-gb/stores/london-oxford-street",
    "/events/2026/spring-conference/schedule?day=2",
    "/videos/watch?v=dQw4w9WgXcQ&t=42s",
    "/podcast/episode-217-the-one-about-caching",
    "/recipes/vegan/chocolate-cake?servings=8",
    "/user/jane.doe/profile",
    "/@someone/posts/112233445566",
    "/tag/machine-learning/page/3/",
    "/archive/2011/03/",
    "/~alice/papers/thesis.html",
    "/cgi-bin/view.pl?doc=annual-report",
    "/jobs/search?location=Paris&remote=true&salary_min=60000",
    "/compare?ids=101,102,107",
    "/downloads",
    "/status",
    "/%E2%9C%93/check",
    "/en/very/deep/path/with/many/segments/that/keeps/going/on/and/on/final-page",
    "/index.php?route=product/category&path=20_27&limit=100",
]

IMAGES = [
    "/favicon.ico",
    "/apple-touch-icon.png",
    "/img/logo.svg",
    "/images/products/88123/main_large.webp?v=3",
    "/images/products/88123/thumb_01.jpg",
    "/wp-content/uploads/2024/05/hero-image-1920x1080.jpg",
    "/wp-content/uploads/2019/11/diagram.png",
    "/media/catalog/product/cache/1/image/9df78eab33525d08d6e5fb8d27136e95/a/b/ab1234.jpg",
    "/_next/image?url=%2Fimages%2Fhero.jpg&w=1920&q=75",
    "/cdn/shop/files/IMG_4021.jpg?v=1712345678&width=800",
    "/static/img/icons/sprite.svg",
    "/assets/images/avatar/default.png",
    "/uploads/avatars/u/4/48213.jpeg",
    "/news/images/2026/12/03/summit.avif",
    "/blog/2024/05/post-title/cover.webp",
    "/i/flags/de.gif",
    "/img/banners/sale-70-off.png?campaign=winter",
    "/photos/2023/08/IMG_20230812_141055.jpg",
    "/thumbs/video/dQw4w9WgXcQ/hqdefault.jpg",
    "/maps/tile/12/2200/1343.png",
]
IMAGES += ["/images/products/%d/%s.%s" % (1000 + i, name, ext) for i, (name, ext) in enumerate(
    [("front", "jpg"), ("back", "jpg"), ("side", "webp"), ("detail", "avif"), ("box", "png")] * 7)]

STYLES = [
    "/static/css/main.3f9c1b7e.css",
    "/wp-content/themes/twentytwentyfour/style.css?ver=1.2",
    "/_next/static/css/9a1c2e3f4b5d6a7c.css",
    "/assets/application-5e3c0b9a.css",
    "/css/print.css",
    "/dist/styles.min.css?v=20261203",
    "/fonts/fonts.css",
    "/vendor/bootstrap/5.3.3/bootstrap.min.css",
]
STYLES += ["/static/css/chunk-%02d.%08x.css" % (i, 0x9e3779b1 * (i + 1) % (1 << 32)) for i in range(45)]

SCRIPTS = [
    "/static/js/main.8a2b3c4d.js",
    "/_next/static/chunks/pages/_app-1a2b3c4d5e6f7a8b.js",
    "/wp-includes/js/jquery/jquery.min.js?ver=3.7.1",
    "/assets/vendor-3f2e1d0c.js",
    "/js/analytics.js",
    "/dist/bundle.js?v=20261203",
    "/sw.js",
    "/static/js/runtime~main.js",
]
SCRIPTS += ["/_next/static/chunks/%d-%016x.js" % (100 + i, 0x9e3779b97f4a7c15 * (i + 1) % (1 << 64))
            for i in range(45)]

FONTS = [
    "/fonts/inter-var.woff2",
    "/static/fonts/roboto-v30-latin-regular.woff2",
    "/wp-content/themes/site/fonts/OpenSans-Bold.woff",
    "/assets/fonts/icons.ttf?v=4.7.0",
]
FONTS += ["/fonts/family-%d/%s.woff2" % (i, w) for i in range(12) for w in ("regular", "bold", "italic", "light")]

API = [
    "/api/v1/products?page=2&limit=24",
    "/api/v1/products/88123",
    "/api/v2/search?q=shoes&facets=brand,size",
    "/api/cart",
    "/api/session",
    "/graphql",
    "/graphql?operationName=ProductQuery&variables=%7B%22id%22%3A88123%7D",
    "/wp-json/wp/v2/posts?per_page=10&_embed",
    "/_next/data/build-id-123/en-us/products/shoes.json",
    "/search/suggest?q=blu",
    "/api/events",
    "/api/v1/users/me",
    "/api/v1/notifications?unread=true",
    "/rest/V1/carts/mine/items",
    "/ajax/cart/add?sku=AB-1234-XL&qty=1",
    "/comments/load?post=112233&after=cursor_XyZ",
    "/api/v3/recommendations?for=88123&n=12",
    "/metrics/collect",
    "/api/translations/de-DE.json",
    "/api/v1/stock?skus=AB-1,AB-2,AB-3",
]
API += ["/api/v1/orders/%d/items?expand=product" % (500000 + 17 * i) for i in range(40)]

KINDS = {"page": PAGES, "image": IMAGES, "style": STYLES, "script": SCRIPTS, "font": FONTS, "api": API}
assert all(len(set(urls)) >= 50 for urls in KINDS.values()), {k: len(v) for k, v in KINDS.items()}


def kind_of(row):
    """What a person's request was for, from its own head: its fetch
    destination, else its Accept."""
    headers = {n.lower(): v for n, v in row["headers"]}
    if row["method"] in ("OPTIONS", "POST") and headers.get("sec-fetch-mode") != "navigate" \
            and "upgrade-insecure-requests" not in headers:
        return "api"
    dest = headers.get("sec-fetch-dest")
    by_dest = {"document": "page", "iframe": "page", "frame": "page", "image": "image", "style": "style",
               "script": "script", "font": "font", "empty": "api"}
    if dest in by_dest:
        return by_dest[dest]
    accept = headers.get("accept", "")
    if "text/html" in accept or "upgrade-insecure-requests" in headers:
        return "page"
    if accept.startswith("image/"):
        return "image"
    if accept.startswith("text/css"):
        return "style"
    if "font" in accept:
        return "font"
    return "api" if row["method"] != "GET" or "json" in accept else "script"
