//! How a navigation arrived: from a link of the site, or from nowhere.
//!
//! A person who reads a site clicks its links: every navigation after the
//! first of a visit says where it came from, with `Sec-Fetch-Site:
//! same-origin` (secure contexts: https and localhost; Chromium 80+,
//! Firefox 90+, Safari 17+) and a `Referer` of the page clicked on (unless
//! the site's `Referrer-Policy` withholds it). A typed URL, a bookmark, an
//! address-bar completion or a new window says `Sec-Fetch-Site: none` and
//! sends no `Referer`; back, forward and reload repeat what the original
//! navigation sent. A crawler that copied a browser's head from a typed
//! URL (or impersonates one: curl_cffi) sends `none` and no `Referer` on
//! every page: its pages all arrive from nowhere. So the share of a
//! client's navigations from nowhere separates a cookie-keeping crawler
//! from a reader with a warm cache, who also fetches documents only for a
//! while (docs/behaviour.md, "Behaviour as evidence").

/// Whether a navigation arrived from nowhere, from its `Sec-Fetch-Site`
/// and `Referer` values (absent: `None`): `Sec-Fetch-Site: none`, or,
/// without a `Sec-Fetch-Site` a browser sends (plain HTTP), no `Referer`.
///
/// Another site's link (`cross-site`, or a foreign `Referer` over plain
/// HTTP) is an arrival from somewhere: a search result or a link shared
/// elsewhere is how people come. A value no browser sends is read as
/// absent. A page over plain HTTP on a site with `Referrer-Policy:
/// no-referrer` arrives from nowhere by this test: its readers lose the
/// cookie's room, not more (docs/behaviour.md, "What is not covered").
pub fn direct(sec_fetch_site: Option<&[u8]>, referer: Option<&[u8]>) -> bool {
    match sec_fetch_site {
        Some(b"none") => true,
        Some(b"same-origin" | b"same-site" | b"cross-site") => false,
        _ => referer.is_none_or(|r| r.trim_ascii().is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Sec-Fetch-Site`, `Referer`, and whether the navigation arrived
    /// from nowhere.
    type Case = (Option<&'static [u8]>, Option<&'static [u8]>, bool);

    #[test]
    fn arrivals_as_browsers_send_them() {
        let page: Option<&[u8]> = Some(b"https://docs.example/guide/");
        let table: &[Case] = &[
            // Typed, bookmarked, a new window; a copied typed-URL head.
            (Some(b"none"), None, true),
            // `none` wins over a Referer no browser sends with it.
            (Some(b"none"), page, true),
            // A link on the site, with or without its Referer (a site's
            // `no-referrer` policy).
            (Some(b"same-origin"), page, false),
            (Some(b"same-origin"), None, false),
            (Some(b"same-site"), page, false),
            // A search result, a link from elsewhere.
            (Some(b"cross-site"), Some(b"https://search.example/"), false),
            // Plain HTTP: no Sec-Fetch-Site; the Referer says it.
            (None, page, false),
            (None, None, true),
            (None, Some(b""), true),
            (None, Some(b"  "), true),
            // A made-up value is read as absent.
            (Some(b"elsewhere"), page, false),
            (Some(b"elsewhere"), None, true),
            (Some(b"NONE"), page, false),
        ];
        for &(site, referer, want) in table {
            assert_eq!(
                direct(site, referer),
                want,
                "{:?} {:?}",
                site.map(String::from_utf8_lossy),
                referer.map(String::from_utf8_lossy)
            );
        }
    }
}
