//! Shape of the request target as sent (`$request_uri`): length, depth,
//! extension, query arguments. Probes and scrapers walk paths browsers do not
//! (`/.env`, `/wp-login.php`, deep API paths with many arguments).

/// Longest extension kept as is in `uri_ext`; longer ones become [`ODD_EXT`].
pub const MAX_EXT: usize = 8;
/// `uri_ext` of an extension that is too long or not ASCII alphanumeric.
pub const ODD_EXT: &[u8] = b"~";

/// The pieces of a request target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target<'a> {
    /// The path (no query, no fragment, no scheme or authority).
    pub path: &'a [u8],
    /// The query without its `?`, empty when there is none.
    pub query: &'a [u8],
}

/// Splits a request target. An absolute-form target
/// (`http://host/path`, as sent to proxies) is reduced to its path.
///
/// One scan finds the end of the path (a `?` or `#`) and one the end of the
/// query; a target that does not start with `h` has no scheme to look for.
pub fn split(uri: &[u8]) -> Target<'_> {
    let mut rest = uri;
    if rest.first().is_some_and(|&b| b | 0x20 == b'h') {
        for scheme in [&b"http://"[..], b"https://"] {
            if rest.len() >= scheme.len() && rest[..scheme.len()].eq_ignore_ascii_case(scheme) {
                let after = &rest[scheme.len()..];
                let slash = after
                    .iter()
                    .position(|&b| matches!(b, b'/' | b'?' | b'#'))
                    .unwrap_or(after.len());
                rest = &after[slash..];
                break;
            }
        }
    }
    match rest.iter().position(|&b| b == b'?' || b == b'#') {
        Some(q) if rest[q] == b'?' => {
            let query = &rest[q + 1..];
            let end = query.iter().position(|&b| b == b'#').unwrap_or(query.len());
            Target {
                path: &rest[..q],
                query: &query[..end],
            }
        }
        Some(fragment) => Target {
            path: &rest[..fragment],
            query: b"",
        },
        None => Target {
            path: rest,
            query: b"",
        },
    }
}

/// Number of non-empty path segments: `/` is 0, `/a/b/` is 2.
pub fn depth(path: &[u8]) -> u32 {
    count_runs(path, b'/')
}

/// Number of non-empty `&`-separated query arguments.
pub fn arg_count(query: &[u8]) -> u32 {
    count_runs(query, b'&')
}

/// Number of non-empty runs of bytes other than `sep`: the non-empty
/// pieces `split(sep)` gives, counted where each one starts, without
/// slicing.
fn count_runs(s: &[u8], sep: u8) -> u32 {
    let mut runs = 0;
    let mut after_sep = true;
    for &b in s {
        let at_sep = b == sep;
        runs += u32::from(after_sep & !at_sep);
        after_sep = at_sep;
    }
    runs
}

/// The extension of the last path segment: the bytes after its last `.`,
/// empty when there is none (a trailing `/` means no last segment).
pub fn extension(path: &[u8]) -> &[u8] {
    let last = match path.iter().rposition(|&b| b == b'/') {
        Some(slash) => &path[slash + 1..],
        None => path,
    };
    match last.iter().rposition(|&b| b == b'.') {
        Some(dot) => &last[dot + 1..],
        None => b"",
    }
}

/// Writes the `uri_ext` value of an extension into `buf`: lower-cased when it
/// is 1..=[`MAX_EXT`] ASCII alphanumerics, [`ODD_EXT`] otherwise, nothing for
/// none. Returns the length written.
pub fn write_ext(ext: &[u8], buf: &mut [u8; MAX_EXT]) -> usize {
    if ext.is_empty() {
        return 0;
    }
    if ext.len() > MAX_EXT || !ext.iter().all(u8::is_ascii_alphanumeric) {
        buf[..ODD_EXT.len()].copy_from_slice(ODD_EXT);
        return ODD_EXT.len();
    }
    for (d, s) in buf.iter_mut().zip(ext) {
        *d = s.to_ascii_lowercase();
    }
    ext.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definitions [`split`], [`depth`] and [`arg_count`] replaced.
    /// Written apart from [`split`]'s scan (prefix stripping, a count of
    /// authority bytes), so a slip in one is not repeated in the other.
    fn split_oracle(uri: &[u8]) -> Target<'_> {
        let strip = |scheme: &[u8]| {
            let head = uri.get(..scheme.len())?;
            head.eq_ignore_ascii_case(scheme)
                .then(|| &uri[scheme.len()..])
        };
        let rest = match strip(b"http://").or_else(|| strip(b"https://")) {
            Some(after) => {
                let authority = after.iter().take_while(|b| !b"/?#".contains(b)).count();
                &after[authority..]
            }
            None => uri,
        };
        let end = rest.iter().position(|&b| b == b'#').unwrap_or(rest.len());
        let rest = &rest[..end];
        match rest.iter().position(|&b| b == b'?') {
            Some(q) => Target {
                path: &rest[..q],
                query: &rest[q + 1..],
            },
            None => Target {
                path: rest,
                query: b"",
            },
        }
    }

    fn pieces_oracle(s: &[u8], sep: u8) -> u32 {
        s.split(|&b| b == sep).filter(|s| !s.is_empty()).count() as u32
    }

    /// On the request targets of the fixtures and on targets glued from
    /// schemes, separators and path pieces.
    #[test]
    fn agrees_with_the_definitions() {
        let same = |uri: &[u8]| {
            let t = split(uri);
            let show = String::from_utf8_lossy(uri);
            assert_eq!(t, split_oracle(uri), "{show}");
            assert_eq!(depth(t.path), pieces_oracle(t.path, b'/'), "{show}");
            assert_eq!(arg_count(t.query), pieces_oracle(t.query, b'&'), "{show}");
        };
        let uris: Vec<Vec<u8>> = crate::features::corpus::requests()
            .into_iter()
            .map(|r| r.uri)
            .collect();
        assert!(uris.iter().filter(|u| u.contains(&b'?')).count() > 50);
        for uri in &uris {
            same(uri);
        }
        let pieces: &[&[u8]] = &[
            b"/",
            b"//",
            b"?",
            b"#",
            b"&",
            b"&&",
            b"a",
            b"x.php",
            b"=",
            b"http://",
            b"HTTPS://",
            b"h",
            b"example.com",
            b"%2F",
        ];
        let mut rng = crate::features::corpus::Rng::new(0x0e_1a_4a);
        for _ in 0..100_000 {
            same(&rng.glue(pieces, 8));
        }
    }

    #[test]
    fn target_table() {
        // uri, path, query, depth, args, ext
        let table: &[(&str, &str, &str, u32, u32, &str)] = &[
            ("/", "/", "", 0, 0, ""),
            ("", "", "", 0, 0, ""),
            ("/a/b/", "/a/b/", "", 2, 0, ""),
            ("/static/app.JS?v=3", "/static/app.JS", "v=3", 2, 1, "JS"),
            ("/search?q=x&&page=2&", "/search", "q=x&&page=2&", 1, 2, ""),
            ("/.env", "/.env", "", 1, 0, "env"),
            ("/a.b/c", "/a.b/c", "", 2, 0, ""),
            ("/x?y#frag", "/x", "y", 1, 1, ""),
            ("/x#f?not-query", "/x", "", 1, 0, ""),
            (
                "http://example.com/p/q.php?a=1",
                "/p/q.php",
                "a=1",
                2,
                1,
                "php",
            ),
            ("HTTPS://example.com", "", "", 0, 0, ""),
            ("http://example.com?x=1", "", "x=1", 0, 1, ""),
            ("//double//slash", "//double//slash", "", 2, 0, ""),
            ("/file.", "/file.", "", 1, 0, ""),
        ];
        for &(uri, path, query, d, args, ext) in table {
            let t = split(uri.as_bytes());
            assert_eq!(
                t,
                Target {
                    path: path.as_bytes(),
                    query: query.as_bytes()
                },
                "{uri}"
            );
            assert_eq!(depth(t.path), d, "{uri}");
            assert_eq!(arg_count(t.query), args, "{uri}");
            assert_eq!(extension(t.path), ext.as_bytes(), "{uri}");
        }
    }

    #[test]
    fn ext_values() {
        let mut buf = [0; MAX_EXT];
        let n = write_ext(b"PHP", &mut buf);
        assert_eq!(&buf[..n], b"php");
        let n = write_ext(b"backup12", &mut buf);
        assert_eq!(&buf[..n], b"backup12");
        let n = write_ext(b"backup123", &mut buf);
        assert_eq!(&buf[..n], ODD_EXT);
        let n = write_ext(b"ph%70", &mut buf);
        assert_eq!(&buf[..n], ODD_EXT);
        assert_eq!(write_ext(b"", &mut buf), 0);
    }
}
