//! The path rules compare: percent-decoded, slashes merged, `.` and `..`
//! resolved, as nginx normalizes `$uri` before `location` matching
//! (`ngx_http_parse_complex_uri` with `merge_slashes on`). Without it a
//! `pass` rule for `/.well-known/` would also pass
//! `/.well-known/../admin` and `/.well-known/%2e%2e/admin`, which nginx
//! and the upstream serve as `/admin`; and a `block` rule for `/admin`
//! would miss `//admin` and `/%61dmin`.

/// The normalized form of `raw` (which must start with `/`), borrowed when
/// `raw` is already normal, else written into `buf`. `None` for what
/// nginx refuses with 400 before any phase runs (a bad `%` escape, a NUL,
/// `..` above the root) and for a target that is not a path: no path
/// condition holds for those.
pub(crate) fn normalize<'a>(raw: &'a [u8], buf: &'a mut Vec<u8>) -> Option<&'a [u8]> {
    if raw.first() != Some(&b'/') {
        return None;
    }
    if is_normal(raw) {
        return Some(raw);
    }
    buf.clear();
    decode(raw, buf)?;
    let n = resolve(buf)?;
    buf.truncate(n);
    Some(buf)
}

/// No `%`, no empty, `.` or `..` segment: nothing to do.
fn is_normal(p: &[u8]) -> bool {
    let n = p.len();
    let mut i = 0;
    while i < n {
        match p[i] {
            b'%' | 0 => return false,
            b'/' => {
                let next = p.get(i + 1).copied();
                if next == Some(b'/') {
                    return false;
                }
                if next == Some(b'.') {
                    let end = |j: usize| j >= n || p[j] == b'/';
                    if end(i + 2) || (p[i + 2] == b'.' && end(i + 3)) {
                        return false;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    true
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes `raw` into `out` (once: `%252e` is `%2e`, not `.`).
fn decode(raw: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let mut i = 0;
    while i < raw.len() {
        let b = match raw[i] {
            b'%' => {
                let hi = hex(*raw.get(i + 1)?)?;
                let lo = hex(*raw.get(i + 2)?)?;
                i += 2;
                (hi << 4) | lo
            }
            b => b,
        };
        if b == 0 {
            return None;
        }
        out.push(b);
        i += 1;
    }
    Some(())
}

/// Merges slashes and resolves `.` and `..` in place; returns the length.
/// Every segment written is no longer than what was read for it, so the
/// write position never passes the read position.
fn resolve(d: &mut [u8]) -> Option<usize> {
    let n = d.len();
    let (mut r, mut w) = (0, 0);
    while r < n {
        // At a `/`: skip the run of them.
        while r < n && d[r] == b'/' {
            r += 1;
        }
        let e = r + d[r..].iter().position(|&b| b == b'/').unwrap_or(n - r);
        let last = e == n;
        match &d[r..e] {
            b"." => {
                if last {
                    d[w] = b'/';
                    w += 1;
                }
            }
            b".." => {
                if w == 0 {
                    return None;
                }
                w = d[..w].iter().rposition(|&b| b == b'/').unwrap_or(0);
                if last {
                    d[w] = b'/';
                    w += 1;
                }
            }
            _ => {
                d[w] = b'/';
                w += 1;
                d.copy_within(r..e, w);
                w += e - r;
            }
        }
        r = e;
    }
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(raw: &str) -> Option<String> {
        let mut buf = Vec::new();
        normalize(raw.as_bytes(), &mut buf).map(|p| String::from_utf8_lossy(p).into_owned())
    }

    #[test]
    fn paths_normalize_as_nginx_does() {
        let cases = [
            ("/", Some("/")),
            ("/feed", Some("/feed")),
            ("/feed/", Some("/feed/")),
            (
                "/.well-known/security.txt",
                Some("/.well-known/security.txt"),
            ),
            ("/a.b/.c/..d", Some("/a.b/.c/..d")),
            ("//feed", Some("/feed")),
            ("/a//b///c", Some("/a/b/c")),
            ("/a/./b", Some("/a/b")),
            ("/a/.", Some("/a/")),
            ("/a/b/..", Some("/a/")),
            ("/a/b/../c", Some("/a/c")),
            ("/a/..", Some("/")),
            ("/..", None),
            ("/a/../..", None),
            ("/a/../../b", None),
            ("/.well-known/../admin", Some("/admin")),
            ("/.well-known/%2e%2e/admin", Some("/admin")),
            ("/.well-known/%2E%2E%2Fadmin", Some("/admin")),
            ("/%61dmin", Some("/admin")),
            ("/a%2fb", Some("/a/b")),
            ("/a%252e%252e/b", Some("/a%2e%2e/b")),
            ("/caf%C3%A9", Some("/café")),
            ("/a%", None),
            ("/a%4", None),
            ("/a%zz", None),
            ("/a%00b", None),
            ("/a\0b", None),
            ("", None),
            ("*", None),
            ("feed", None),
        ];
        for (raw, want) in cases {
            assert_eq!(norm(raw).as_deref(), want, "{raw}");
        }
    }

    #[test]
    fn normal_paths_are_borrowed() {
        let mut buf = Vec::new();
        let raw = b"/products/123/reviews";
        let p = normalize(raw, &mut buf).unwrap();
        assert!(std::ptr::eq(p, &raw[..]));
        assert!(buf.is_empty());
    }

    #[test]
    fn random_paths_resolve_like_a_reference() {
        // A slow, obviously right reference: split on `/`, drop empty and
        // `.` segments, pop on `..`.
        fn reference(decoded: &[u8]) -> Option<Vec<u8>> {
            let segs: Vec<&[u8]> = decoded.split(|&b| b == b'/').skip(1).collect();
            let mut out: Vec<&[u8]> = Vec::new();
            let mut dir = false;
            for (i, s) in segs.iter().enumerate() {
                let last = i + 1 == segs.len();
                match *s {
                    b"" | b"." => dir = last,
                    b".." => {
                        out.pop()?;
                        dir = last;
                    }
                    s => {
                        out.push(s);
                        dir = false;
                    }
                }
            }
            let mut p: Vec<u8> = Vec::new();
            for s in &out {
                p.push(b'/');
                p.extend_from_slice(s);
            }
            if dir || p.is_empty() {
                p.push(b'/');
            }
            Some(p)
        }
        let mut rng = fastrand::Rng::with_seed(7);
        let alphabet = [
            b"/".as_slice(),
            b".",
            b"..",
            b"a",
            b"bc",
            b"%2e",
            b"%2F",
            b"/.",
        ];
        let mut buf = Vec::new();
        for _ in 0..20_000 {
            let mut raw = b"/".to_vec();
            for _ in 0..rng.usize(0..8) {
                raw.extend_from_slice(alphabet[rng.usize(..alphabet.len())]);
            }
            let mut decoded = Vec::new();
            decode(&raw, &mut decoded).unwrap();
            let want = reference(&decoded);
            let got = normalize(&raw, &mut buf).map(<[u8]>::to_vec);
            assert_eq!(
                got.as_deref().map(String::from_utf8_lossy),
                want.as_deref().map(String::from_utf8_lossy),
                "{}",
                String::from_utf8_lossy(&raw)
            );
        }
    }
}
