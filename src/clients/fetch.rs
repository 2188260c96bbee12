//! What a request fetched: a navigation or one of the sub-resource classes
//! a page pulls in.
//!
//! A browser that opens a page fetches its stylesheets, scripts, images and
//! fonts; a crawler that copied the browser's head fetches documents only.
//! The class comes from `Sec-Fetch-Dest` where the browser sends it (secure
//! contexts only: https and localhost), else from `Accept` (what every
//! browser sends on plain HTTP too), else from the path's extension (a
//! script's and a `fetch()`'s `Accept: */*` are the same).

/// The class of one request, as the memory counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fetch {
    /// A top-level document: a person (or a crawler) opening a page.
    Navigation = 0,
    /// A stylesheet.
    Style = 1,
    /// A script or a worker.
    Script = 2,
    /// An image, the favicon included.
    Image = 3,
    /// A web font.
    Font = 4,
    /// A `fetch()` or XMLHttpRequest: a page's own API calls.
    Api = 5,
    /// Anything else a page embeds: frames, media, manifests, reports.
    Other = 6,
}

impl Fetch {
    /// Every class, in counter order.
    pub const ALL: [Fetch; 7] = [
        Fetch::Navigation,
        Fetch::Style,
        Fetch::Script,
        Fetch::Image,
        Fetch::Font,
        Fetch::Api,
        Fetch::Other,
    ];

    /// The class's name, as rule conditions and docs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Fetch::Navigation => "navigation",
            Fetch::Style => "style",
            Fetch::Script => "script",
            Fetch::Image => "image",
            Fetch::Font => "font",
            Fetch::Api => "api",
            Fetch::Other => "other",
        }
    }

    /// Classifies a request from its `Sec-Fetch-Dest` and `Accept` values
    /// (absent: `None`) and its path (the query is ignored).
    pub fn classify(dest: Option<&[u8]>, accept: Option<&[u8]>, path: &[u8]) -> Fetch {
        if let Some(class) = dest.and_then(from_dest) {
            return class;
        }
        if let Some(class) = accept.and_then(from_accept) {
            return class;
        }
        from_extension(path)
    }
}

/// The class `Sec-Fetch-Dest` names; `None` for a value no browser sends.
fn from_dest(dest: &[u8]) -> Option<Fetch> {
    Some(match dest {
        b"document" => Fetch::Navigation,
        b"style" => Fetch::Style,
        b"script" | b"worker" | b"sharedworker" | b"serviceworker" | b"audioworklet"
        | b"paintworklet" | b"json" => Fetch::Script,
        b"image" => Fetch::Image,
        b"font" => Fetch::Font,
        b"empty" => Fetch::Api,
        b"iframe" | b"frame" | b"embed" | b"object" | b"audio" | b"video" | b"track"
        | b"manifest" | b"report" | b"xslt" | b"webidentity" => Fetch::Other,
        _ => return None,
    })
}

/// The class an `Accept` value's first media range says; `None` when it
/// says nothing (`*/*`, empty).
fn from_accept(accept: &[u8]) -> Option<Fetch> {
    let first = accept.split(|&c| c == b',').next().unwrap_or_default();
    let first = first
        .split(|&c| c == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    let lower = |prefix: &[u8]| {
        first.len() >= prefix.len() && first[..prefix.len()].eq_ignore_ascii_case(prefix)
    };
    if lower(b"text/html") || lower(b"application/xhtml+xml") {
        Some(Fetch::Navigation)
    } else if lower(b"text/css") {
        Some(Fetch::Style)
    } else if lower(b"image/") {
        Some(Fetch::Image)
    } else if lower(b"application/json") {
        Some(Fetch::Api)
    } else if lower(b"font/") || lower(b"application/font") {
        Some(Fetch::Font)
    } else {
        None
    }
}

/// The class a path's extension says, for `Accept: */*` or none: scripts
/// and fonts by their extension, pages by none or `.html`, the rest API
/// calls.
fn from_extension(path: &[u8]) -> Fetch {
    let path = path.split(|&c| c == b'?').next().unwrap_or_default();
    let name = path.rsplit(|&c| c == b'/').next().unwrap_or_default();
    let ext = match name.iter().rposition(|&c| c == b'.') {
        Some(dot) => &name[dot + 1..],
        None => return Fetch::Navigation,
    };
    let is = |list: &[&[u8]]| list.iter().any(|e| ext.eq_ignore_ascii_case(e));
    if is(&[b"html", b"htm", b"php", b"asp", b"aspx", b"jsp"]) {
        Fetch::Navigation
    } else if is(&[b"js", b"mjs"]) {
        Fetch::Script
    } else if is(&[b"css"]) {
        Fetch::Style
    } else if is(&[b"woff2", b"woff", b"ttf", b"otf", b"eot"]) {
        Fetch::Font
    } else if is(&[
        b"png", b"jpg", b"jpeg", b"gif", b"webp", b"avif", b"svg", b"ico",
    ]) {
        Fetch::Image
    } else if is(&[b"json"]) {
        Fetch::Api
    } else {
        Fetch::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME_NAV: &[u8] =
        b"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
    const FIREFOX_IMG: &[u8] = b"image/avif,image/webp,*/*";

    /// `Sec-Fetch-Dest`, `Accept`, path, and the class they make.
    type Case = (
        Option<&'static [u8]>,
        Option<&'static [u8]>,
        &'static [u8],
        Fetch,
    );

    #[test]
    fn classes_from_dest_then_accept_then_extension() {
        let table: &[Case] = &[
            (Some(b"document"), Some(CHROME_NAV), b"/", Fetch::Navigation),
            (
                Some(b"style"),
                Some(b"text/css,*/*;q=0.1"),
                b"/a.css",
                Fetch::Style,
            ),
            (Some(b"script"), Some(b"*/*"), b"/app.js", Fetch::Script),
            (
                Some(b"image"),
                Some(FIREFOX_IMG),
                b"/favicon.ico",
                Fetch::Image,
            ),
            (Some(b"font"), Some(b"*/*"), b"/f.woff2", Fetch::Font),
            (Some(b"empty"), Some(b"*/*"), b"/api/items", Fetch::Api),
            (Some(b"iframe"), Some(CHROME_NAV), b"/embed", Fetch::Other),
            // Plain HTTP: no Sec-Fetch-Dest, the Accept says it.
            (None, Some(CHROME_NAV), b"/page", Fetch::Navigation),
            (None, Some(b"text/css,*/*;q=0.1"), b"/a.css", Fetch::Style),
            (None, Some(FIREFOX_IMG), b"/logo", Fetch::Image),
            (None, Some(b"Application/JSON"), b"/api", Fetch::Api),
            // A made-up destination falls through to Accept.
            (Some(b"nonsense"), Some(CHROME_NAV), b"/", Fetch::Navigation),
            // `*/*` or nothing: the extension.
            (None, Some(b"*/*"), b"/static/app.js?v=3", Fetch::Script),
            (None, Some(b"*/*"), b"/static/f.WOFF2", Fetch::Font),
            (None, None, b"/", Fetch::Navigation),
            (None, None, b"/articles/42", Fetch::Navigation),
            (None, None, b"/index.html", Fetch::Navigation),
            (None, None, b"/data.json", Fetch::Api),
            (None, None, b"/a.b/c", Fetch::Navigation),
            (None, None, b"/video.mp4", Fetch::Other),
            (None, Some(b""), b"", Fetch::Navigation),
        ];
        for &(dest, accept, path, want) in table {
            assert_eq!(
                Fetch::classify(dest, accept, path),
                want,
                "{:?} {:?} {:?}",
                dest.map(String::from_utf8_lossy),
                accept.map(String::from_utf8_lossy),
                String::from_utf8_lossy(path)
            );
        }
    }

    #[test]
    fn every_class_has_its_counter_index_and_name() {
        for (i, f) in Fetch::ALL.into_iter().enumerate() {
            assert_eq!(f as usize, i);
            assert!(!f.as_str().is_empty());
        }
    }
}
