//! What the request recorder keeps of the secrets a request carries: the
//! one place that decides which header bytes reach the access log (and
//! `edgeguard ship`, and Kafka).
//!
//! | header | logged as |
//! |---|---|
//! | `Cookie` | each cookie's name and the length of its value: `sid=[redacted 32]; lang=[redacted 2]` |
//! | the client memory's cookie (`edgeguard_v`, with `client_memory`) | whether it checked with the memory's key when the request was recorded, not the value: `edgeguard_v=[client cookie ok]`, else its length (`clients::cookie::RECORDED_VALID`) |
//! | the challenge's clearance cookie (`challenge_cookie`) | what checking it with the keys found, not the token: `edgeguard_clearance=[clearance ok work 1765000000]` (`challenge::Recorded`) |
//! | `Authorization`, `Proxy-Authorization` | the scheme and the credentials' length: `Bearer [redacted 180]` |
//! | each name in `redact` | the value's length: `[redacted 40]` |
//! | every other header | byte for byte |
//!
//! Replay decides from a redacted line what nginx decided: the features
//! read cookies only by count (the `;`-separated items are all kept) and
//! no credential at all, and the clearance verdict is judged again against
//! the line's time ([`crate::challenge::Recorded::judge`]). What a redacted
//! line cannot replay: a rule that tests the value of a redacted header,
//! and a clearance under other keys or prefix lengths than the recorder's
//! (docs/replay.md, "What the log keeps").
//!
//! `redact: false` turns it all off (a lab's capture, where the log is the
//! point): every byte is logged, secrets included.

use crate::challenge::{Binding, Challenge, MAX_CANDIDATES};
use crate::clients::{cookie as memory_cookie, HashKey};
use crate::features;
use crate::gate;
use crate::net::addr_from_text;

use super::write::write_headers_text_with;

/// How the recorder writes a request's headers: built once per
/// configuration, used for every recorded request.
#[derive(Clone, Debug)]
pub struct Redactor {
    /// Off: every byte logged.
    on: bool,
    /// `redact`: more header names (ASCII lower case) whose values are
    /// logged as their length.
    names: Vec<Box<[u8]>>,
    /// The challenge, whose clearance cookies are logged as verdicts
    /// (none: a cookie like the others).
    challenge: Option<Challenge>,
    /// The client memory's cookie key: its cookie is logged as whether it
    /// checked (none: a cookie like the others).
    memory_cookie: Option<HashKey>,
}

/// What a header's value becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Treatment {
    Keep,
    Cookie,
    Credentials,
    Length,
}

/// The longest authentication scheme kept (the registered ones are at most
/// 13 bytes); a longer first word is more likely a credential.
const MAX_SCHEME: usize = 32;

impl Redactor {
    /// The recorder of a configuration: `on` (the `redact` option is not
    /// `false`), its extra `names`, its `challenge` and the key of its
    /// client memory's cookie (`memory_cookie`) if it has them.
    pub fn new(
        on: bool,
        names: &[String],
        challenge: Option<Challenge>,
        memory_cookie: Option<HashKey>,
    ) -> Redactor {
        Redactor {
            memory_cookie,
            on,
            names: names
                .iter()
                .map(|n| n.to_ascii_lowercase().into_bytes().into_boxed_slice())
                .collect(),
            challenge,
        }
    }

    /// Writes the `headers` text of `req` (`[["name","value"],...]`, the
    /// format of `write::write_headers_text`) with its secrets redacted,
    /// into `out`. Returns its length, or, when `out` is too short, the
    /// length it needs (what `out` holds is then unspecified). Allocates
    /// nothing.
    pub fn write(&self, req: &gate::Incoming<'_>, out: &mut [u8]) -> Result<usize, usize> {
        let mut clearance = Clearances {
            challenge: self.challenge.as_ref(),
            memory_cookie: self.memory_cookie.as_ref(),
            now_s: unix_now_s(),
            req: req.http(),
            binding: None,
            left: MAX_CANDIDATES,
        };
        write_headers_text_with(req.headers(), out, |h, put| {
            match self.treatment(h.name()) {
                Treatment::Keep => put(h.value()),
                Treatment::Cookie => cookie(h.value(), &mut clearance, put),
                Treatment::Credentials => credentials(h.value(), put),
                Treatment::Length => length(h.value(), put),
            }
        })
    }

    fn treatment(&self, name: &[u8]) -> Treatment {
        if !self.on {
            Treatment::Keep
        } else if name.eq_ignore_ascii_case(b"cookie") {
            Treatment::Cookie
        } else if name.eq_ignore_ascii_case(b"authorization")
            || name.eq_ignore_ascii_case(b"proxy-authorization")
        {
            Treatment::Credentials
        } else if self.names.iter().any(|n| name.eq_ignore_ascii_case(n)) {
            Treatment::Length
        } else {
            Treatment::Keep
        }
    }
}

/// The clearance cookies of one request, checked as the gate checks them:
/// at most [`MAX_CANDIDATES`], the binding computed once, on the first.
struct Clearances<'r, 'a> {
    challenge: Option<&'r Challenge>,
    memory_cookie: Option<&'r HashKey>,
    /// Now, seconds: the memory's cookie is checked then.
    now_s: u64,
    req: &'r features::Request<'a>,
    binding: Option<Binding>,
    left: usize,
}

impl Clearances<'_, '_> {
    /// Writes what the recorder logs for `value`, the value of a cookie
    /// named `name`: a verdict for a clearance cookie within the count the
    /// gate checks, else its length.
    fn value(&mut self, name: &[u8], value: &[u8], put: &mut dyn FnMut(&[u8])) {
        if let Some(key) = self.memory_cookie {
            if name == memory_cookie::NAME.as_bytes() {
                if memory_cookie::valid(key, unquoted(value), self.now_s) {
                    return put(memory_cookie::RECORDED_VALID);
                }
                return length(value, put);
            }
        }
        let ch = match self.challenge {
            Some(ch) if self.left > 0 && name == ch.cookie.as_bytes() => ch,
            _ => return length(value, put),
        };
        self.left -= 1;
        let (req, binding) = (self.req, &mut self.binding);
        let b =
            *binding.get_or_insert_with(|| ch.binding_of(req, addr_from_text(req.client_addr())));
        ch.record_cookie(unquoted(value), &b).write(&mut |p| put(p));
    }
}

/// The wall clock, seconds since the epoch: the recorder runs as nginx
/// answers, so this is the request's time.
fn unix_now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A cookie value without the double quotes RFC 6265 allows around it (as
/// the gate reads it).
fn unquoted(v: &[u8]) -> &[u8] {
    match v {
        [b'"', inner @ .., b'"'] => inner,
        v => v,
    }
}

/// `[redacted N]`, or nothing for an empty value.
fn length(value: &[u8], put: &mut dyn FnMut(&[u8])) {
    if value.is_empty() {
        return;
    }
    let mut digits = [0u8; 20];
    put(b"[redacted ");
    put(decimal(value.len(), &mut digits));
    put(b"]");
}

/// A `Cookie` header: every byte but the values' (names, `=`, `;` and the
/// white space around them), so that the items and their names stay.
fn cookie(value: &[u8], clearance: &mut Clearances<'_, '_>, put: &mut dyn FnMut(&[u8])) {
    for (i, item) in value.split(|&b| b == b';').enumerate() {
        if i > 0 {
            put(b";");
        }
        // Read as the gate reads it (`challenge::cookie_values`): the name
        // before the first `=`, both trimmed.
        let Some(eq) = item.iter().position(|&b| b == b'=') else {
            // No `=`: a cookie without a name; the item is its value.
            let (lead, v, trail) = trim(item);
            put(lead);
            length(v, put);
            put(trail);
            continue;
        };
        let (name, rest) = (&item[..eq], &item[eq + 1..]);
        put(name);
        put(b"=");
        let (lead, v, trail) = trim(rest);
        put(lead);
        clearance.value(name.trim_ascii(), v, put);
        put(trail);
    }
}

/// `s` as its leading white space, the rest trimmed, and its trailing
/// white space (`trim_ascii`'s white space).
fn trim(s: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let core = s.trim_ascii();
    let start = s.len() - s.trim_ascii_start().len();
    (&s[..start], core, &s[start + core.len()..])
}

/// Credentials: the scheme (a token followed by a space) and the length of
/// the rest; the whole value's length when it does not start so.
fn credentials(value: &[u8], put: &mut dyn FnMut(&[u8])) {
    let scheme = value
        .iter()
        .position(|&b| b == b' ')
        .filter(|&n| n > 0 && n <= MAX_SCHEME && value[..n].iter().all(|&b| is_tchar(b)));
    match scheme {
        Some(n) => {
            let rest = &value[n..];
            let start = rest.iter().position(|&b| b != b' ').unwrap_or(rest.len());
            put(&value[..n + start]);
            length(&rest[start..], put);
        }
        None => length(value, put),
    }
}

/// An RFC 9110 token character.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `n` in decimal, in the tail of `buf`.
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
