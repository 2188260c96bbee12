//! Fetch metadata (`sec-fetch-site`, `-mode`, `-user`, `-dest`): browsers
//! derive the four values from one navigation, so they are always mutually
//! consistent. Tools that replay a header set with values shuffled, or that
//! invent them, produce combinations no browser sends.

/// The four values of one request, each `None` when the header is absent.
#[derive(Clone, Copy, Debug, Default)]
pub struct FetchMetadata<'a> {
    /// `sec-fetch-site`.
    pub site: Option<&'a [u8]>,
    /// `sec-fetch-mode`.
    pub mode: Option<&'a [u8]>,
    /// `sec-fetch-user`.
    pub user: Option<&'a [u8]>,
    /// `sec-fetch-dest`.
    pub dest: Option<&'a [u8]>,
}

const SITES: &[&[u8]] = &[b"none", b"same-origin", b"same-site", b"cross-site"];
const MODES: &[&[u8]] = &[
    b"navigate",
    b"same-origin",
    b"no-cors",
    b"cors",
    b"websocket",
];
/// Destinations of navigations: the only ones that go with mode `navigate`.
const NAVIGATION_DESTS: &[&[u8]] = &[
    b"document",
    b"iframe",
    b"frame",
    b"embed",
    b"object",
    b"fencedframe",
];
const OTHER_DESTS: &[&[u8]] = &[
    b"empty",
    b"image",
    b"script",
    b"style",
    b"font",
    b"audio",
    b"video",
    b"track",
    b"worker",
    b"sharedworker",
    b"serviceworker",
    b"manifest",
    b"report",
    b"xslt",
    b"audioworklet",
    b"paintworklet",
    b"webidentity",
    b"json",
];

impl FetchMetadata<'_> {
    /// Whether any of the four headers is present.
    pub fn any(&self) -> bool {
        self.site.is_some() || self.mode.is_some() || self.user.is_some() || self.dest.is_some()
    }

    /// Whether the present values form a combination no browser sends:
    /// an unknown value, `site`/`mode`/`dest` not all present together,
    /// `user` other than `?1` or outside a navigation, or a navigation to a
    /// non-document destination (and the reverse).
    pub fn incoherent(&self) -> bool {
        if !self.any() {
            return false;
        }
        let (Some(site), Some(mode), Some(dest)) = (self.site, self.mode, self.dest) else {
            return true;
        };
        let (site, mode, dest) = (site.trim_ascii(), mode.trim_ascii(), dest.trim_ascii());
        if !SITES.contains(&site) || !MODES.contains(&mode) {
            return true;
        }
        let navigation_dest = NAVIGATION_DESTS.contains(&dest);
        if !navigation_dest && !OTHER_DESTS.contains(&dest) {
            return true;
        }
        let navigate = mode == b"navigate";
        if navigate != navigation_dest {
            return true;
        }
        match self.user {
            Some(user) => user.trim_ascii() != b"?1" || !navigate,
            None => false,
        }
    }
}

impl FetchMetadata<'_> {
    /// Whether the values contradict each other, as schema 4 reads them:
    /// what [`incoherent`](Self::incoherent) checks, but a destination
    /// that is a token of lower-case letters not in this list is taken as
    /// one a browser may send (destinations are added to the Fetch standard
    /// over time: `websocket`, `speculationrules`, ...), `websocket` goes
    /// with its own mode, and `sec-fetch-mode: cors` alone is what Chromium
    /// sends on a CORS preflight to a plain-HTTP origin (captured: Chromium
    /// 156, `OPTIONS` from `http://shop.test` to `http://api.test`).
    pub fn contradicts(&self, preflight: bool) -> bool {
        if !self.any() {
            return false;
        }
        fn trim(v: Option<&[u8]>) -> Option<&[u8]> {
            v.map(<[u8]>::trim_ascii)
        }
        let (site, mode, user, dest) = (
            trim(self.site),
            trim(self.mode),
            trim(self.user),
            trim(self.dest),
        );
        if preflight && site.is_none() && user.is_none() && dest.is_none() && mode == Some(b"cors")
        {
            return false;
        }
        let (Some(site), Some(mode), Some(dest)) = (site, mode, dest) else {
            return true;
        };
        if !SITES.contains(&site) || !MODES.contains(&mode) {
            return true;
        }
        let navigation_dest = NAVIGATION_DESTS.contains(&dest);
        let known = navigation_dest || OTHER_DESTS.contains(&dest) || dest == b"websocket";
        if !known && (dest.is_empty() || !dest.iter().all(u8::is_ascii_lowercase)) {
            return true;
        }
        let navigate = mode == b"navigate";
        if known
            && (navigate != navigation_dest || (mode == b"websocket") != (dest == b"websocket"))
        {
            return true;
        }
        match user {
            Some(user) => user != b"?1" || !navigate,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta<'a>(site: &'a str, mode: &'a str, user: &'a str, dest: &'a str) -> FetchMetadata<'a> {
        let opt = |s: &'a str| (!s.is_empty()).then_some(s.as_bytes());
        FetchMetadata {
            site: opt(site),
            mode: opt(mode),
            user: opt(user),
            dest: opt(dest),
        }
    }

    #[test]
    fn new_destinations_and_websockets_are_no_contradiction() {
        for (site, mode, dest) in [
            ("same-origin", "websocket", "websocket"),
            ("same-origin", "no-cors", "speculationrules"),
            ("same-origin", "cors", "webbundle"),
        ] {
            let m = meta(site, mode, "", dest);
            assert!(!m.contradicts(false), "{site} {mode} {dest}");
        }
        for (site, mode, dest) in [
            ("same-origin", "navigate", "websocket"),
            ("same-origin", "websocket", "empty"),
            ("same-origin", "cors", "Empty"),
            ("same-origin", "cors", "dest-1"),
            ("same-origin", "cors", "document"),
            ("same-origin", "navigate", "image"),
        ] {
            let m = meta(site, mode, "", dest);
            assert!(m.contradicts(false), "{site} {mode} {dest}");
        }
    }

    #[test]
    fn a_lone_cors_mode_is_chromiums_preflight() {
        let m = meta("", "cors", "", "");
        assert!(m.incoherent() && m.contradicts(false) && !m.contradicts(true));
        assert!(meta("", "no-cors", "", "").contradicts(true));
        assert!(meta("same-origin", "cors", "", "").contradicts(true));
        assert!(!meta("same-origin", "cors", "", "empty").contradicts(true));
    }

    #[test]
    fn coherence_table() {
        let table: &[(&str, &str, &str, &str, bool)] = &[
            ("", "", "", "", false),
            ("none", "navigate", "?1", "document", false),
            ("same-origin", "navigate", "", "iframe", false),
            ("cross-site", "no-cors", "", "image", false),
            ("same-origin", "cors", "", "empty", false),
            // browserforge's header sets put each value under its neighbour's name
            ("?1", "same-site", "document", "navigate", true),
            ("none", "navigate", "?1", "", true),
            ("none", "navigate", "?0", "document", true),
            ("same-origin", "cors", "?1", "empty", true),
            ("none", "navigate", "", "image", true),
            ("none", "cors", "", "document", true),
            ("everywhere", "navigate", "?1", "document", true),
            ("none", "navigate", "?1", "page", true),
            ("", "", "?1", "", true),
            ("", "cors", "", "", true),
        ];
        for &(site, mode, user, dest, want) in table {
            let m = meta(site, mode, user, dest);
            assert_eq!(m.incoherent(), want, "{site} {mode} {user} {dest}");
            // An unknown destination token is no contradiction in schema 4.
            let unknown_dest = dest == "page";
            assert_eq!(
                m.contradicts(false),
                want && !unknown_dest,
                "{site} {mode} {user} {dest}"
            );
            assert_eq!(
                m.any(),
                !(site.is_empty() && mode.is_empty() && user.is_empty() && dest.is_empty())
            );
        }
    }
}
