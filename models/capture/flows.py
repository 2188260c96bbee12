"""What the browsers of the capture do: the flows a person makes on a site,
as steps of a driver (browsers.py, desktop.py), each named by its flow.

A step is (flow, action, expect): `action(driver)` makes the browser do
one thing a person does (type a URL, click, press back, reload, submit a
form); `expect` is the URI (or its start) that a request of that step must
have reached, or None when the browser may answer from its cache (back,
forward). The recorder checks `expect` and lists the steps that missed it
in the manifest, so that a flow that silently did nothing is seen.

Flows (the corpus's `flow` column):

    typed         a URL typed on a fresh profile: first visit, no cookie, no referrer
    bookmark      a URL typed or opened from a bookmark later in the visit (cookies, no referrer)
    reload        the reload button (deep pages too)
    hard-reload   reload bypassing the cache (Ctrl+Shift+R: Cache-Control/Pragma no-cache)
    link          a click on a link of the site
    back, forward the history buttons
    form-get      a search or options form (GET with a query)
    form-post     sign-in, add to cart, forum reply (POST, 303, the page after it)
    download      a file the browser saves (zip, Content-Disposition: attachment) or shows (PDF)
    from-search   a click on a search engine's result (https://search.test, referrer policy `origin`)
    from-link     a click on another site's link (http://blog.test, the browser's default policy)
    second-visit  the site's home typed again, with the site's cookies
    return-visit  the browser closed and opened again on the same profile, the home typed
    external      the other site's page itself (not recorded: only the shop's nginx records)
"""

import collections

import sitemap

Step = collections.namedtuple("Step", "flow action expect")


class Site:
    """The URLs of one session: the shop's origin and the other sites'
    pages that link to it."""

    def __init__(self, base, origin, search_base, blog_base):
        self.base = base
        self.origin = origin
        self.search = f"{search_base}{sitemap.SEARCH_PAGE}&shop={origin}"
        self.blog = f"{blog_base}{sitemap.BLOG_PAGE}?shop={origin}"


def get(url):
    return lambda d: d.get(url)


def click(eid):
    return lambda d: d.click(eid)


def fill_and_click(fields, button):
    def act(d):
        for eid, text in fields:
            d.type(eid, text)
        d.click(button)
    return act


def restart_and_get(url):
    def act(d):
        d.restart()
        d.get(url)
    return act


def first_visit(s):
    """The steps of the capture before issue 29 (home, product, search,
    sign-in), kept first so that every session still makes them."""
    b = s.base
    return [
        Step("typed", get(b + "/"), "/"),
        Step("reload", lambda d: d.refresh(), "/"),
        Step("link", click("product"), "/products/42"),
        Step("back", lambda d: d.back(), None),
        Step("form-get", fill_and_click([("q", "walking shoes")], "go"), "/search?q=walking"),
        Step("link", click("login"), "/login"),
        Step("form-post", fill_and_click([("user", "ada@example.org"), ("pass", "correct horse")], "submit"),
             "/login"),
        Step("second-visit", get(b + "/"), "/"),
    ]


def site_tour(s):
    """The wider site, after the first visit: articles with audio and
    video, a product with a query, its options form and cart, a category
    (a directory's index.html) and its next page, docs with a hard reload,
    their index, a download and a PDF, a forum's pages, localized pages,
    old deep URLs, index.html, and arrivals from two other sites."""
    b = s.base
    return [
        Step("link", click("nav-blog"), sitemap.ARTICLE),
        Step("link", click("next-post"), sitemap.ARTICLE_2),
        Step("back", lambda d: d.back(), None),
        Step("forward", lambda d: d.forward(), None),
        Step("back", lambda d: d.back(), None),
        Step("link", click("to-news"), sitemap.NEWS),
        Step("bookmark", get(b + sitemap.PRODUCT_QUERY), sitemap.PRODUCT_QUERY),
        Step("reload", lambda d: d.refresh(), sitemap.PRODUCT_QUERY),
        Step("form-get", fill_and_click([("size-input", "11")], "update"),
             sitemap.path_only(sitemap.PRODUCT_QUERY) + "?color=red&size=11"),
        Step("form-post", click("add-to-cart"), sitemap.CART),
        Step("link", click("keep-shopping"), sitemap.CATEGORY),
        Step("link", click("next-page"), sitemap.CATEGORY + "?page=2&sort=price"),
        Step("bookmark", get(b + sitemap.DOCS), sitemap.DOCS),
        Step("hard-reload", lambda d: d.hard_refresh(), sitemap.DOCS),
        Step("link", click("docs-home"), sitemap.DOCS_INDEX),
        Step("back", lambda d: d.back(), None),
        Step("download", click("download-app"), sitemap.ZIP),
        Step("download", click("catalog"), sitemap.PDF),
        Step("bookmark", get(b + sitemap.FORUM), sitemap.FORUM),
        Step("link", click("next-page"), "/forum/thread/88123?page=5"),
        Step("form-post", fill_and_click([("reply-text", "A suede brush works.")], "reply-go"),
             "/forum/thread/88123/reply"),
        Step("bookmark", get(b + sitemap.LOCALIZED_DE), sitemap.LOCALIZED_DE),
        Step("link", click("de-about"), sitemap.LOCALIZED_DE_ABOUT),
        Step("bookmark", get(b + sitemap.LOCALIZED_FR), sitemap.LOCALIZED_FR),
        Step("form-get", fill_and_click([("fr-q", "chaussures imperméables")], "fr-go"), "/fr/recherche?q="),
        Step("bookmark", get(b + sitemap.DEEP), sitemap.DEEP),
        Step("reload", lambda d: d.refresh(), sitemap.DEEP),
        Step("bookmark", get(b + sitemap.INDEX_HTML), sitemap.INDEX_HTML),
        Step("bookmark", get(b + sitemap.ACCOUNT_ORDERS), sitemap.ACCOUNT_ORDERS),
        Step("external", get(s.search), None),
        Step("from-search", click("result-1"), sitemap.PRODUCT_QUERY),
        Step("external", get(s.blog), None),
        Step("from-link", click("shop-link"), sitemap.ARTICLE_3),
    ]


def return_visit(s):
    # The browser closed and opened again on the same profile: stored
    # cookies, a warm cache, new connections.
    return [Step("return-visit", restart_and_get(s.base + "/"), "/")]


def person(s, persistent=True):
    """A person's whole visit. A browser that keeps nothing between runs
    (Epiphany's WebDriver automation mode) makes no return visit."""
    return first_visit(s) + site_tour(s) + (return_visit(s) if persistent else [])


def arrivals(s):
    """A shorter visit for the language and private-window profiles: typed
    deep URLs, arrivals from elsewhere, a link and a search."""
    b = s.base
    return [
        Step("typed", get(b + sitemap.ARTICLE), sitemap.ARTICLE),
        Step("link", click("to-shoes"), sitemap.PRODUCT_QUERY),
        Step("bookmark", get(b + sitemap.LOCALIZED_DE), sitemap.LOCALIZED_DE),
        Step("form-get", fill_and_click([("de-q", "Wanderschuhe")], "de-go"), "/de-de/suche?q="),
        Step("bookmark", get(b + "/"), "/"),
        Step("form-get", fill_and_click([("q", "rain jacket")], "go"), "/search?q=rain"),
        Step("external", get(s.search), None),
        Step("from-search", click("result-1"), sitemap.PRODUCT_QUERY),
        Step("external", get(s.blog), None),
        Step("from-link", click("shop-link"), sitemap.ARTICLE_3),
    ]


def private(s):
    """A private window (the capture before issue 29 made these three)."""
    b = s.base
    return [
        Step("typed", get(b + "/"), "/"),
        Step("link", click("product"), "/products/42"),
        Step("form-get", lambda d: (d.get(b + "/"), d.type("q", "rain jacket"), d.click("go")), "/search?q=rain"),
    ] + arrivals(s)[:2]


def automation(s, persistent=True):
    """What the automated browser sessions (headless, byte-identical) do:
    the person's first visit and a few of the wider site's pages, typed."""
    b = s.base
    return first_visit(s) + [
        Step("bookmark", get(b + p), p)
        for p in (sitemap.ARTICLE, sitemap.PRODUCT_QUERY, sitemap.DOCS, sitemap.FORUM, sitemap.DEEP)
    ] + (return_visit(s) if persistent else [])


def scrape(s):
    """A Selenium scraper: every page by URL, one after the other."""
    return [Step("scrape", get(s.base + p), p)
            for p in ("/", "/products/42", "/products/7", "/search?q=shoes", "/login",
                      sitemap.ARTICLE, sitemap.PRODUCT_QUERY, sitemap.FORUM)]
