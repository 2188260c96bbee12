//! The challenge's endpoint, [`ENDPOINT`]: what a request to it asks for,
//! and the same-site path it returns to.
//!
//! | query | what it is | who sends it |
//! |---|---|---|
//! | `n=NONCE&c=COUNTER&r=RET` | an answer: the proof of work | the page's script |
//! | `t=TICKET&r=RET` | a no-JavaScript ticket, redeemable after its wait | the page's `<meta http-equiv="refresh">`, or a person following its link |
//! | `a=RETURN&r=RET` | the return after a solve, carrying the attempt count | the answer's redirect (`Location`) |
//! | `r=RET`, or nothing | a person sent to pass the check (problem+json's `clear`) | a link |
//!
//! `RET` is the percent-encoded path and query to go back to. Nothing here
//! allocates.

use super::types::{TooSmall, ENDPOINT};

/// The longest return path an answer may carry, in bytes (decoded).
pub const MAX_RETURN: usize = 2048;

/// What a request to [`ENDPOINT`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// An answer to the proof of work.
    Answer {
        /// The nonce's text, as sent.
        nonce: &'a [u8],
        /// The counter, as sent.
        counter: &'a [u8],
        /// The percent-encoded return path, as sent.
        ret: &'a [u8],
    },
    /// A no-JavaScript ticket.
    Ticket {
        /// The ticket's text, as sent.
        ticket: &'a [u8],
        /// The percent-encoded return path, as sent.
        ret: &'a [u8],
    },
    /// The return after a solve.
    Return {
        /// The return token's text, as sent.
        token: &'a [u8],
        /// The percent-encoded return path, as sent.
        ret: &'a [u8],
    },
    /// No token: a person sent to pass the check (serve the page).
    Start {
        /// The percent-encoded return path, as sent (may be empty).
        ret: &'a [u8],
    },
}

impl<'a> Endpoint<'a> {
    /// Reads a request target to [`ENDPOINT`] (path and query). The first
    /// of each parameter counts; unknown ones are ignored. A target with a
    /// nonce or counter is an answer (a missing half makes it a malformed
    /// one), else one with a ticket a ticket, else one with a return token
    /// a return, else a start.
    pub fn parse(uri: &'a [u8]) -> Endpoint<'a> {
        let (mut n, mut c, mut t, mut a, mut r) = (None, None, None, None, None);
        let query = uri
            .iter()
            .position(|&b| b == b'?')
            .map_or(&b""[..], |i| &uri[i + 1..]);
        for pair in query.split(|&b| b == b'&') {
            let eq = pair.iter().position(|&b| b == b'=').unwrap_or(pair.len());
            let (name, value) = (&pair[..eq], pair.get(eq + 1..).unwrap_or_default());
            let slot = match name {
                b"n" => &mut n,
                b"c" => &mut c,
                b"t" => &mut t,
                b"a" => &mut a,
                b"r" => &mut r,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        let ret = r.unwrap_or_default();
        if n.is_some() || c.is_some() {
            Endpoint::Answer {
                nonce: n.unwrap_or_default(),
                counter: c.unwrap_or_default(),
                ret,
            }
        } else if let Some(ticket) = t {
            Endpoint::Ticket { ticket, ret }
        } else if let Some(token) = a {
            Endpoint::Return { token, ret }
        } else {
            Endpoint::Start { ret }
        }
    }
}

/// Whether a request target is [`ENDPOINT`] (with or without a query).
pub fn is_endpoint(uri: &[u8]) -> bool {
    let path = uri.split(|&b| b == b'?').next().unwrap_or_default();
    path == ENDPOINT.as_bytes()
}

/// Whether `path` may be returned to: it starts with one `/` (not `//` or
/// `/\`, which browsers read as another host), holds only visible ASCII
/// other than `\`, is at most [`MAX_RETURN`] bytes and is not the endpoint
/// itself.
pub fn is_return_path(path: &[u8]) -> bool {
    path.len() <= MAX_RETURN
        && path.first() == Some(&b'/')
        && !matches!(path.get(1), Some(b'/' | b'\\'))
        && path
            .iter()
            .all(|&b| (0x21..0x7f).contains(&b) && b != b'\\')
        && !is_endpoint(path)
}

/// `path` when [`is_return_path`], else `/`: a page's own request target
/// (`$request_uri`, which may be an absolute URI or hold raw bytes) made
/// into a place to return to.
pub fn return_or_root(path: &[u8]) -> &[u8] {
    if is_return_path(path) {
        path
    } else {
        b"/"
    }
}

/// Decodes the percent-encoded return path `r` into `out` when it is a
/// same-site path ([`is_return_path`]). Anything else returns to `/`: the
/// answer never redirects off the site.
pub fn return_path(r: &[u8], out: &mut [u8]) -> Result<usize, TooSmall> {
    let mut n = 0;
    let mut i = 0;
    let mut ok = !r.is_empty() && r.len() <= 3 * MAX_RETURN;
    while ok && i < r.len() {
        let b = match r[i] {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (
                    r.get(i + 1).and_then(|&c| hex(c)),
                    r.get(i + 2).and_then(|&c| hex(c)),
                ) {
                    (Some(h), Some(l)) => {
                        i += 2;
                        (h * 16 + l) as u8
                    }
                    _ => {
                        ok = false;
                        break;
                    }
                }
            }
            b => b,
        };
        i += 1;
        if !(0x21..0x7f).contains(&b) || b == b'\\' || n == MAX_RETURN || n == out.len() {
            ok = false;
            break;
        }
        out[n] = b;
        n += 1;
    }
    if ok && is_return_path(&out[..n]) {
        return Ok(n);
    }
    match out.first_mut() {
        Some(slot) => {
            *slot = b'/';
            Ok(1)
        }
        None => Err(TooSmall),
    }
}

/// Writes `bytes` percent-encoded: everything but RFC 3986's unreserved
/// characters as `%XX`. The result is safe inside a query value, an HTML
/// attribute and a JSON string alike.
pub(crate) fn write_pct(w: &mut impl std::io::Write, bytes: &[u8]) -> std::io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            w.write_all(&[b])?;
        } else {
            w.write_all(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])?;
        }
    }
    Ok(())
}

/// Writes `bytes` for an HTML text or attribute value: `&`, `<`, `>`, `"`
/// and `'` as character references.
pub(crate) fn write_html(w: &mut impl std::io::Write, bytes: &[u8]) -> std::io::Result<()> {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' => b"&quot;",
            b'\'' => b"&#39;",
            _ => continue,
        };
        w.write_all(&bytes[start..i])?;
        w.write_all(esc)?;
        start = i + 1;
    }
    w.write_all(&bytes[start..])
}

/// The endpoint's URL for a token: `ENDPOINT?<param>=<token><amp>r=<ret>`,
/// `amp` being `&` (a header, JSON) or `&amp;` (HTML).
pub(crate) fn write_token_url(
    w: &mut impl std::io::Write,
    param: u8,
    token: &[u8],
    ret: &[u8],
    amp: &[u8],
) -> std::io::Result<()> {
    w.write_all(ENDPOINT.as_bytes())?;
    w.write_all(&[b'?', param, b'='])?;
    w.write_all(token)?;
    w.write_all(amp)?;
    w.write_all(b"r=")?;
    write_pct(w, ret)
}

/// Writes an IMF-fixdate (`Tue, 01 Dec 2026 12:00:00 GMT`, RFC 9110
/// section 5.6.7) for Unix time `secs`.
pub(crate) fn http_date(secs: u64, w: &mut impl std::io::Write) -> std::io::Result<()> {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    write!(
        w,
        "{}, {d:02} {} {y} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Year, month (1-12) and day of the `days`-th day after 1970-01-01, in the
/// proleptic Gregorian calendar (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_requests_are_told_apart() {
        let p = |u: &'static str| Endpoint::parse(u.as_bytes());
        assert_eq!(
            p("/.edgeguard/challenge?n=N&c=7&r=%2Fx"),
            Endpoint::Answer {
                nonce: b"N",
                counter: b"7",
                ret: b"%2Fx"
            }
        );
        // Half an answer is still an answer (refused as malformed).
        assert!(matches!(
            p("/.edgeguard/challenge?c=1&t=T"),
            Endpoint::Answer { nonce: b"", .. }
        ));
        assert_eq!(
            p("/.edgeguard/challenge?t=T&r=%2F&t=U"),
            Endpoint::Ticket {
                ticket: b"T",
                ret: b"%2F"
            }
        );
        assert_eq!(
            p("/.edgeguard/challenge?r=%2Fa&a=R"),
            Endpoint::Return {
                token: b"R",
                ret: b"%2Fa"
            }
        );
        for start in [
            "/.edgeguard/challenge",
            "/.edgeguard/challenge?",
            "/.edgeguard/challenge?x=1&&=",
        ] {
            assert_eq!(p(start), Endpoint::Start { ret: b"" }, "{start}");
        }
        assert_eq!(
            p("/.edgeguard/challenge?r=%2Fq"),
            Endpoint::Start { ret: b"%2Fq" }
        );
    }

    #[test]
    fn return_paths_stay_on_the_site() {
        let r = |s: &str| {
            let mut out = [0u8; MAX_RETURN];
            let n = return_path(s.as_bytes(), &mut out).unwrap();
            String::from_utf8(out[..n].to_vec()).unwrap()
        };
        assert_eq!(r("%2Fa%2Fb%3Fq%3D1"), "/a/b?q=1");
        assert_eq!(r("/plain"), "/plain");
        for evil in [
            "",
            "%2F%2Fevil.example%2F",
            "%2F%5Cevil.example",
            "https%3A%2F%2Fevil.example%2F",
            "evil",
            "%2Fa%0d%0aSet-Cookie:x",
            "%2Fa%20b",
            "%2F%2",
            "%2F%zz",
            "%2F.edgeguard%2Fchallenge%3Fn%3D1",
        ] {
            assert_eq!(r(evil), "/", "{evil}");
        }
        assert_eq!(r(&("/".to_owned() + &"a".repeat(MAX_RETURN))), "/");
        let mut tiny = [0u8; 0];
        assert_eq!(return_path(b"/x", &mut tiny), Err(TooSmall));
        assert_eq!(return_or_root(b"/a?b=1"), b"/a?b=1");
        for bad in [
            &b"http://x/"[..],
            b"//x",
            b"/a b",
            b"",
            b"/.edgeguard/challenge?n=1",
        ] {
            assert_eq!(return_or_root(bad), b"/", "{bad:?}");
        }
    }

    #[test]
    fn encodings() {
        let pct = |b: &[u8]| {
            let mut v = Vec::new();
            write_pct(&mut v, b).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(pct(b"/a b?c=\"&'<>~"), "%2Fa%20b%3Fc%3D%22%26%27%3C%3E~");
        let html = |b: &[u8]| {
            let mut v = Vec::new();
            write_html(&mut v, b).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(html(b"a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        let mut v = Vec::new();
        write_token_url(&mut v, b't', b"TOK", b"/x?y=1", b"&amp;").unwrap();
        assert_eq!(v, b"/.edgeguard/challenge?t=TOK&amp;r=%2Fx%3Fy%3D1");
    }

    #[test]
    fn dates() {
        let date = |s: u64| {
            let mut v = Vec::new();
            http_date(s, &mut v).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(date(1_798_761_599), "Thu, 31 Dec 2026 23:59:59 GMT");
        assert_eq!(date(4_107_542_400), "Mon, 01 Mar 2100 00:00:00 GMT");
    }
}
