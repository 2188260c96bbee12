//! `mode = "challenge"`: a proof-of-work page for flagged navigations and a
//! signed clearance cookie for the browsers that solved it.
//!
//! # Flow
//!
//! ```text
//! flagged GET (navigation) ──► page (challenge_status, no-store) with a signed nonce
//!        browser script: SHA-256(nonce ":" counter) until `difficulty` leading zero bits
//!   GET /.edgeguard/challenge?n=NONCE&c=COUNTER&r=/original?path
//!        nonce MAC, age, address prefix, User-Agent and work checked
//!   ──► 303 to /original?path + Set-Cookie: clearance (HttpOnly; SameSite=Lax; Secure on TLS)
//! next requests: cookie verified (no allocation) ──► `cleared` instead of challenged
//! ```
//!
//! Stateless: the nonce is itself a token signed with the `challenge_secret`
//! keys ([`token`]: kind, difficulty, issue time, address prefix, User-Agent
//! hash, HMAC-SHA256), so any worker of any server holding the keys checks
//! an answer without shared state. A nonce is valid for [`NONCE_TTL`]
//! seconds. Every check takes the current time from the caller (nginx's
//! `ngx.time()`, replay's recorded time), so a replayed request is judged
//! as nginx judged it.
//!
//! The proof of work is Anubis's: SHA-256 over the nonce text, `:` and a
//! decimal counter, with `challenge_difficulty` leading zero bits (16 by
//! default: 65 536 hashes on average, about a second in a browser). It
//! costs a browser a second once per cookie lifetime and a scraper the same
//! for every address prefix and User-Agent it rotates through; its value
//! is that the cookie cannot be had without running the page's script.

#![forbid(unsafe_code)]

mod keys;
mod page;
mod token;

use std::io::Write as _;
use std::net::IpAddr;
use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use keys::{KeyError, Keys, MAX_KEYS, MAX_KEY_BYTES, MIN_KEY_BYTES};
pub use token::{Binding, Rejection, TOKEN_TEXT};
/// Room enough for the challenge page.
pub const PAGE_CAP: usize = page::CAP;
use token::{Kind, Opened};

use crate::features::Request;

/// The path the page's script sends its answer to, handled by `access()`
/// itself (never proxied) whenever a challenge is configured.
pub const ENDPOINT: &str = "/.edgeguard/challenge";
/// Seconds a nonce stays valid: time to solve the page.
pub const NONCE_TTL: u64 = 600;
/// The longest return path an answer may carry, in bytes.
pub const MAX_RETURN: usize = 2048;
/// Room for a `Set-Cookie` value: the name (at most [`MAX_COOKIE_NAME`]),
/// the token and the attributes.
pub const SET_COOKIE_CAP: usize = 512;
/// The longest cookie name accepted.
pub const MAX_COOKIE_NAME: usize = 64;
/// At most this many cookies of the configured name are checked per
/// request: the count bounds the HMACs one request can make us compute.
pub const MAX_CANDIDATES: usize = 4;

/// The defaults of the `challenge_*` options.
pub mod defaults {
    /// `challenge_difficulty`: leading zero bits.
    pub const DIFFICULTY: u8 = 16;
    /// `challenge_status`: the page's status.
    pub const STATUS: u16 = 403;
    /// `challenge_ttl`: the cookie's lifetime in seconds (one day).
    pub const TTL: u32 = 86_400;
    /// `challenge_cookie`.
    pub const COOKIE: &str = "edgeguard_clearance";
    /// `challenge_prefix_v4`.
    pub const PREFIX_V4: u8 = 24;
    /// `challenge_prefix_v6`.
    pub const PREFIX_V6: u8 = 64;
}

/// The most leading zero bits `challenge_difficulty` may ask for: 2^24
/// hashes is already a minute on a slow phone.
pub const MAX_DIFFICULTY: u8 = 24;

/// The challenge's settings and keys, shared by every policy of one
/// configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Challenge {
    keys: Arc<Keys>,
    /// Leading zero bits a new nonce asks for.
    pub difficulty: u8,
    /// The page's status.
    pub status: u16,
    /// The cookie's lifetime in seconds.
    pub ttl: u32,
    /// The cookie's name.
    pub cookie: String,
    /// IPv4 prefix length a cookie is bound to.
    pub prefix_v4: u8,
    /// IPv6 prefix length a cookie is bound to.
    pub prefix_v6: u8,
}

/// What a request's clearance cookie says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clearance {
    /// No cookie of the configured name.
    Absent,
    /// A valid cookie.
    Accepted,
    /// A cookie that was refused, and why (the last one checked).
    Rejected(Rejection),
}

/// The outcome of an answer to the challenge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Solved: the `Set-Cookie` value and the `Location` are written, their
    /// lengths here.
    Solved {
        /// Bytes of the `Set-Cookie` value.
        cookie: usize,
        /// Bytes of the `Location`.
        location: usize,
    },
    /// Refused.
    Failed(Rejection),
}

/// An output buffer was too small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooSmall;

impl Challenge {
    /// The challenge under `keys` with the default settings.
    pub fn new(keys: Arc<Keys>) -> Challenge {
        Challenge {
            keys,
            difficulty: defaults::DIFFICULTY,
            status: defaults::STATUS,
            ttl: defaults::TTL,
            cookie: defaults::COOKIE.to_owned(),
            prefix_v4: defaults::PREFIX_V4,
            prefix_v6: defaults::PREFIX_V6,
        }
    }

    /// The keys.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// What binds a token to this client.
    pub fn binding(&self, addr: Option<IpAddr>, user_agent: &[u8]) -> Binding {
        Binding::new(addr, user_agent, self.prefix_v4, self.prefix_v6)
    }

    /// The text of a clearance cookie for `client`, valid until `now + ttl`.
    pub fn mint_cookie(&self, client: &Binding, now: u64) -> [u8; TOKEN_TEXT] {
        token::seal(
            Kind::Cookie,
            0,
            now.saturating_add(u64::from(self.ttl)),
            client,
            &self.keys,
        )
    }

    /// Checks one cookie value. A cookie expiring later than the lifetime
    /// in force allows (the ttl was shortened) counts as expired.
    pub fn verify_cookie(&self, value: &[u8], client: &Binding, now: u64) -> Result<(), Rejection> {
        let opened = token::open(value, Kind::Cookie, &self.keys)?;
        if opened.time <= now || opened.time - now > u64::from(self.ttl) {
            return Err(Rejection::Expired);
        }
        opened.check_binding(client)
    }

    /// The clearance of a request: its cookies of the configured name (at
    /// most [`MAX_CANDIDATES`], from every `Cookie` header), checked until
    /// one is valid. The binding (a SHA-256 of the User-Agent) is computed
    /// only when there is a cookie. Allocates nothing.
    pub fn clearance(&self, req: &Request<'_>, addr: Option<IpAddr>, now: u64) -> Clearance {
        let mut binding = None;
        let mut result = Clearance::Absent;
        let mut checked = 0;
        for (name, value) in req.headers() {
            if !name.eq_ignore_ascii_case(b"cookie") {
                continue;
            }
            for v in cookie_values(value, self.cookie.as_bytes()) {
                let b = *binding.get_or_insert_with(|| self.binding(addr, user_agent(req)));
                match self.verify_cookie(v, &b, now) {
                    Ok(()) => return Clearance::Accepted,
                    Err(r) => result = Clearance::Rejected(r),
                }
                checked += 1;
                if checked == MAX_CANDIDATES {
                    return result;
                }
            }
        }
        result
    }

    /// A fresh nonce for `client`.
    pub fn nonce(&self, client: &Binding, now: u64) -> [u8; TOKEN_TEXT] {
        token::seal(Kind::Nonce, self.difficulty, now, client, &self.keys)
    }

    /// Checks an answer: the nonce's MAC, age and binding, then the work.
    pub fn check_answer(
        &self,
        nonce: &[u8],
        counter: &[u8],
        client: &Binding,
        now: u64,
    ) -> Result<(), Rejection> {
        let opened: Opened = token::open(nonce, Kind::Nonce, &self.keys)?;
        // A nonce from the future (clocks of two servers apart) is given
        // the same slack as one from the past.
        if now.abs_diff(opened.time) > NONCE_TTL {
            return Err(Rejection::Expired);
        }
        opened.check_binding(client)?;
        if counter.is_empty() || counter.len() > 16 || !counter.iter().all(u8::is_ascii_digit) {
            return Err(Rejection::Malformed);
        }
        if leading_zero_bits(nonce, counter) < u32::from(opened.difficulty) {
            return Err(Rejection::Work);
        }
        Ok(())
    }

    /// Writes the challenge page for `client` into `out`; returns its
    /// length. The page needs about 3 KiB ([`page::CAP`] is enough).
    pub fn page(&self, client: &Binding, now: u64, out: &mut [u8]) -> Result<usize, TooSmall> {
        page::render(&self.nonce(client, now), self.difficulty, out)
    }

    /// Handles a request to [`ENDPOINT`]: `uri` is its request target. On
    /// success writes the clearance's `Set-Cookie` value (with `Secure`
    /// when `tls`) into `set_cookie` and the same-site path to return to
    /// into `location`.
    pub fn answer(
        &self,
        uri: &[u8],
        client: &Binding,
        now: u64,
        tls: bool,
        set_cookie: &mut [u8],
        location: &mut [u8],
    ) -> Result<Answer, TooSmall> {
        let (mut nonce, mut counter, mut ret): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
        let query = uri
            .iter()
            .position(|&b| b == b'?')
            .map_or(&b""[..], |i| &uri[i + 1..]);
        for pair in query.split(|&b| b == b'&') {
            match pair.split_at(pair.iter().position(|&b| b == b'=').unwrap_or(pair.len())) {
                (b"n", v) => nonce = v.get(1..).unwrap_or_default(),
                (b"c", v) => counter = v.get(1..).unwrap_or_default(),
                (b"r", v) => ret = v.get(1..).unwrap_or_default(),
                _ => {}
            }
        }
        if let Err(r) = self.check_answer(nonce, counter, client, now) {
            return Ok(Answer::Failed(r));
        }
        let location_len = return_path(ret, location)?;
        let cookie_len = self.set_cookie(&self.mint_cookie(client, now), now, tls, set_cookie)?;
        Ok(Answer::Solved {
            cookie: cookie_len,
            location: location_len,
        })
    }

    /// The `Set-Cookie` value carrying `token`.
    fn set_cookie(
        &self,
        token: &[u8],
        now: u64,
        tls: bool,
        out: &mut [u8],
    ) -> Result<usize, TooSmall> {
        let cap = out.len();
        let mut w = &mut out[..];
        let expires = now.saturating_add(u64::from(self.ttl));
        let ok = (|| -> std::io::Result<()> {
            w.write_all(self.cookie.as_bytes())?;
            w.write_all(b"=")?;
            w.write_all(token)?;
            write!(w, "; Path=/; Max-Age={}; Expires=", self.ttl)?;
            http_date(expires, &mut w)?;
            w.write_all(b"; HttpOnly; SameSite=Lax")?;
            if tls {
                w.write_all(b"; Secure")?;
            }
            Ok(())
        })();
        ok.map_err(|_| TooSmall)?;
        Ok(cap - w.len())
    }
}

/// The `User-Agent` of a request (the first one), or empty.
pub fn user_agent<'a>(req: &Request<'a>) -> &'a [u8] {
    header(req, b"user-agent").unwrap_or_default()
}

fn header<'a>(req: &Request<'a>, want: &[u8]) -> Option<&'a [u8]> {
    req.headers()
        .find(|(n, _)| n.eq_ignore_ascii_case(want))
        .map(|(_, v)| v)
}

/// Whether a request is a top-level navigation a page can answer: GET or
/// HEAD, with `Sec-Fetch-Mode: navigate`, or, from a client that sends no
/// `Sec-Fetch-Mode` (older browsers), an `Accept` naming `text/html`. A
/// fetch or XHR (`Sec-Fetch-Mode: cors`, `no-cors`, `same-origin`) is not,
/// whatever it accepts.
pub fn is_navigation(req: &Request<'_>) -> bool {
    if !matches!(req.method(), b"GET" | b"HEAD") {
        return false;
    }
    match header(req, b"sec-fetch-mode") {
        Some(mode) => mode.trim_ascii().eq_ignore_ascii_case(b"navigate"),
        None => header(req, b"accept")
            .is_some_and(|a| a.windows(9).any(|w| w.eq_ignore_ascii_case(b"text/html"))),
    }
}

/// Whether a request target is [`ENDPOINT`] (with or without a query).
pub fn is_endpoint(uri: &[u8]) -> bool {
    let path = uri.split(|&b| b == b'?').next().unwrap_or_default();
    path == ENDPOINT.as_bytes()
}

/// The values of the cookies named `name` in one `Cookie` header value
/// (`a=1; name=v; b=2`), quotes removed (RFC 6265 allows `name="v"`).
pub fn cookie_values<'a>(header: &'a [u8], name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    header.split(|&b| b == b';').filter_map(move |pair| {
        let pair = pair.trim_ascii();
        let eq = pair.iter().position(|&b| b == b'=')?;
        let (n, v) = (pair[..eq].trim_ascii(), pair[eq + 1..].trim_ascii());
        if n != name {
            return None;
        }
        Some(match v {
            [b'"', inner @ .., b'"'] => inner,
            v => v,
        })
    })
}

/// Leading zero bits of SHA-256(nonce ":" counter).
pub fn leading_zero_bits(nonce: &[u8], counter: &[u8]) -> u32 {
    let digest = Sha256::new()
        .chain_update(nonce)
        .chain_update(b":")
        .chain_update(counter)
        .finalize();
    let mut bits = 0;
    for &b in digest.iter() {
        bits += b.leading_zeros();
        if b != 0 {
            break;
        }
    }
    bits
}

/// Decodes the percent-encoded return path `r` into `out` when it is a
/// same-site path: it starts with one `/` (not `//` or `/\`, which browsers
/// read as another host), holds only visible ASCII other than `\`, and is
/// not the endpoint itself. Anything else returns to `/`: the answer never
/// redirects off the site.
fn return_path(r: &[u8], out: &mut [u8]) -> Result<usize, TooSmall> {
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
    let path = &out[..n];
    ok = ok
        && path.first() == Some(&b'/')
        && !matches!(path.get(1), Some(b'/' | b'\\'))
        && !is_endpoint(path);
    if ok {
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

/// Writes an IMF-fixdate (`Tue, 01 Dec 2026 12:00:00 GMT`, RFC 9110
/// section 5.6.7) for Unix time `secs`.
fn http_date(secs: u64, w: &mut impl std::io::Write) -> std::io::Result<()> {
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
mod tests;
