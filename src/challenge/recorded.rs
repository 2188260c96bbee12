//! A clearance cookie as the request recorder logs it: what the gate needs
//! to judge it again, without the bearer token.
//!
//! The clearance token is a credential: anyone holding it, from the same
//! address prefix, User-Agent and TLS stack, passes the challenge until it
//! expires. So the recorder (`replay::record::redact`) logs, instead of the
//! token, what checking it with the keys found, in the order
//! [`Challenge::verify_cookie`](super::Challenge::verify_cookie) checks:
//!
//! | logged value | meaning |
//! |---|---|
//! | `[clearance mac]`, `[clearance malformed]` | the token did not open (forged, another kind, a key no longer listed) |
//! | `[clearance ok work 1765000000]` | it opened, proves `work` (or `wait`), expires then, and is this client's |
//! | `[clearance user_agent work 1765000000]` | it opened but was issued to another User-Agent (`address`, `tls`) |
//!
//! Replay judges a logged verdict as the gate judges a token
//! ([`Recorded::judge`]): the expiry against the line's time and the
//! lifetime in force (so a shorter `challenge_ttl` or the no-JavaScript
//! fallback turned off replays as nginx would have decided), then the
//! binding. What it cannot do is re-check the MAC under other keys or the
//! binding under other prefix lengths: those stay as the recorder found
//! them. Only replay reads this form (`gate::Incoming::from_log`): in nginx
//! a client sending `[clearance ok ...]` sends a malformed token.

use super::token::{Proof, Rejection};

/// What the recorder found checking one clearance cookie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// The token did not open: `malformed` or `mac`.
    Refused(Rejection),
    /// The token opened.
    Opened {
        /// What it proves.
        proof: Proof,
        /// Its expiry, Unix seconds.
        expires: u64,
        /// Whether it was issued to this client (address prefix,
        /// User-Agent, TLS stack); why not otherwise.
        binding: Result<(), Rejection>,
    },
}

const OPEN: &[u8] = b"[clearance ";

impl Recorded {
    /// The verdict at `now` with `ttl`, the lifetime in force for a proof
    /// (0: that proof is not accepted): the checks of `verify_cookie` after
    /// the MAC, in its order.
    pub fn judge(self, now: u64, ttl: impl Fn(Proof) -> u32) -> Result<Proof, Rejection> {
        match self {
            Recorded::Refused(r) => Err(r),
            Recorded::Opened {
                proof,
                expires,
                binding,
            } => {
                if expires <= now || expires - now > u64::from(ttl(proof)) {
                    return Err(Rejection::Expired);
                }
                binding.map(|()| proof)
            }
        }
    }

    /// Calls `put` with the pieces of the logged text (no allocation).
    pub fn write(self, put: &mut impl FnMut(&[u8])) {
        put(OPEN);
        match self {
            Recorded::Refused(r) => put(r.as_str().as_bytes()),
            Recorded::Opened {
                proof,
                expires,
                binding,
            } => {
                put(binding.err().map_or("ok", Rejection::as_str).as_bytes());
                put(b" ");
                put(proof.as_str().as_bytes());
                put(b" ");
                let mut digits = [0u8; 20];
                put(decimal(expires, &mut digits));
            }
        }
        put(b"]");
    }

    /// The logged text read back; None for anything else (a token, a
    /// value of another cookie, a text that is not exactly this form).
    pub fn parse(v: &[u8]) -> Option<Recorded> {
        let inner = v.strip_prefix(OPEN)?.strip_suffix(b"]")?;
        let mut words = inner.split(|&b| b == b' ');
        let state = words.next()?;
        let Some(proof) = words.next() else {
            return match Rejection::from_name(state)? {
                r @ (Rejection::Malformed | Rejection::Mac) => Some(Recorded::Refused(r)),
                _ => None,
            };
        };
        let proof = match proof {
            b"work" => Proof::Work,
            b"wait" => Proof::Wait,
            _ => return None,
        };
        let expires = words.next().and_then(number)?;
        if words.next().is_some() {
            return None;
        }
        let binding = match state {
            b"ok" => Ok(()),
            s => match Rejection::from_name(s)? {
                r @ (Rejection::Address | Rejection::UserAgent | Rejection::Tls) => Err(r),
                _ => return None,
            },
        };
        Some(Recorded::Opened {
            proof,
            expires,
            binding,
        })
    }
}

/// `n` in decimal, in the tail of `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
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

/// A decimal number of at most 19 digits.
fn number(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: Recorded) -> String {
        let mut out = Vec::new();
        r.write(&mut |b| out.extend_from_slice(b));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_form_reads_back_as_written() {
        let cases = [
            (Recorded::Refused(Rejection::Mac), "[clearance mac]"),
            (
                Recorded::Refused(Rejection::Malformed),
                "[clearance malformed]",
            ),
            (
                Recorded::Opened {
                    proof: Proof::Work,
                    expires: 1_765_000_000,
                    binding: Ok(()),
                },
                "[clearance ok work 1765000000]",
            ),
            (
                Recorded::Opened {
                    proof: Proof::Wait,
                    expires: 0,
                    binding: Err(Rejection::UserAgent),
                },
                "[clearance user_agent wait 0]",
            ),
            (
                Recorded::Opened {
                    proof: Proof::Work,
                    expires: u64::MAX / 10,
                    binding: Err(Rejection::Tls),
                },
                "[clearance tls work 1844674407370955161]",
            ),
        ];
        for (r, want) in cases {
            assert_eq!(text(r), want);
            assert_eq!(Recorded::parse(want.as_bytes()), Some(r), "{want}");
        }
    }

    #[test]
    fn anything_else_is_not_a_recorded_verdict() {
        for v in [
            "",
            "[clearance]",
            "[clearance ok]",
            "[clearance expired]",
            "[clearance work]",
            "[clearance ok work]",
            "[clearance ok work 12 13]",
            "[clearance ok work -1]",
            "[clearance ok work 99999999999999999999]",
            "[clearance ok work 1x]",
            "[clearance mac work 1]",
            "[clearance expired work 1]",
            "[clearance ok proof 1]",
            "[clearance ok work 1",
            "clearance ok work 1]",
            "[clearance  ok work 1]",
            "[redacted 104]",
        ] {
            assert_eq!(Recorded::parse(v.as_bytes()), None, "{v:?}");
        }
    }

    #[test]
    fn judged_as_the_gate_judges_a_token() {
        let ttl = |p: Proof| if p == Proof::Work { 100 } else { 0 };
        let opened = |proof, expires, binding| Recorded::Opened {
            proof,
            expires,
            binding,
        };
        assert_eq!(
            opened(Proof::Work, 150, Ok(())).judge(100, ttl),
            Ok(Proof::Work)
        );
        // Expired, at or past the expiry.
        assert_eq!(
            opened(Proof::Work, 100, Ok(())).judge(100, ttl),
            Err(Rejection::Expired)
        );
        // Expiring later than the lifetime in force allows.
        assert_eq!(
            opened(Proof::Work, 201, Ok(())).judge(100, ttl),
            Err(Rejection::Expired)
        );
        // A proof no longer accepted (ttl 0).
        assert_eq!(
            opened(Proof::Wait, 150, Ok(())).judge(100, ttl),
            Err(Rejection::Expired)
        );
        // Expiry is checked before the binding, as verify_cookie does.
        let ua = Err(Rejection::UserAgent);
        assert_eq!(
            opened(Proof::Work, 50, ua).judge(100, ttl),
            Err(Rejection::Expired)
        );
        assert_eq!(
            opened(Proof::Work, 150, ua).judge(100, ttl),
            ua.map(|()| Proof::Work)
        );
        assert_eq!(
            Recorded::Refused(Rejection::Mac).judge(100, ttl),
            Err(Rejection::Mac)
        );
    }
}
