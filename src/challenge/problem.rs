//! RFC 9457 problem details (`application/problem+json`) for the requests
//! that must not get the page: API calls, `fetch()`/XHR, requests with a
//! body. A program gets something it can act on; a person gets a URL
//! where they can pass the check.
//!
//! ```json
//! {"type":"about:blank","title":"Forbidden","status":403,
//!  "detail":"This request needs the browser check of this site ...",
//!  "reason":"challenge_required","clearance":"expired",
//!  "reference":"5f3c...","clear":"/.edgeguard/challenge?r=%2Fapi%2Fcart",
//!  "retry_after":30}
//! ```
//!
//! `type` is `about:blank` (RFC 9457 section 4.2.1: the title is then the
//! status phrase) unless the operator documents the problems under a base
//! URI (`challenge_problem_base`), in which case it is that base followed
//! by the reason and the title is the reason's own. The extension members
//! are `reason` ([`Problem::as_str`]), `clearance` (what the cookie said,
//! when one was looked at), `reference` (the request id, for support),
//! `clear` (where a person passes the check, then comes back) and
//! `retry_after` (seconds, as the `Retry-After` header the caller sets
//! says). Written into a caller's buffer without allocating; every value
//! that comes from the request is checked or percent-encoded, so nothing
//! needs JSON escaping but the base, checked when given.

use std::io::Write as _;

use super::endpoint::MAX_RETURN;
use super::endpoint::{is_return_path, write_pct};
use super::types::{Clearance, TooSmall, ENDPOINT};

/// Room enough for any problem document.
pub const PROBLEM_CAP: usize = 8192;
/// The longest `challenge_problem_base`.
pub const MAX_BASE: usize = 200;

/// What the problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Problem {
    /// Flagged and not cleared, and this request cannot get the page: a
    /// person passes the check at `clear`, then retries.
    ChallengeRequired,
    /// Refused outright (mode `block`): no check to pass.
    Blocked,
    /// Not scored and `fail_closed`: retry later.
    Unavailable,
    /// Solves came back without the cookie: cookies are needed.
    CookiesNeeded,
}

impl Problem {
    /// The reason's name: the `reason` member, and the end of `type` under
    /// a base.
    pub fn as_str(self) -> &'static str {
        match self {
            Problem::ChallengeRequired => "challenge_required",
            Problem::Blocked => "blocked",
            Problem::Unavailable => "unavailable",
            Problem::CookiesNeeded => "cookies_needed",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Problem::ChallengeRequired => "Browser check required",
            Problem::Blocked => "Request refused",
            Problem::Unavailable => "Temporarily unavailable",
            Problem::CookiesNeeded => "Cookies are needed",
        }
    }

    fn detail(self) -> &'static str {
        match self {
            Problem::ChallengeRequired => {
                "This request needs the browser check of this site, which a program's request \
                 cannot pass. Open the `clear` URL in a browser to pass it, then send the request \
                 again from that browser. Nothing of this request was processed."
            }
            Problem::Blocked => {
                "This request was judged automated and refused. Nothing of it was processed."
            }
            Problem::Unavailable => {
                "The bot check could not judge this request right now, and this site refuses \
                 requests it cannot judge. Nothing of it was processed; retry later."
            }
            Problem::CookiesNeeded => {
                "The browser check was passed, but its cookie did not come back. Allow cookies \
                 for this site, then open the `clear` URL again."
            }
        }
    }

    fn has_clear(self) -> bool {
        matches!(self, Problem::ChallengeRequired | Problem::CookiesNeeded)
    }
}

/// What one problem document says.
#[derive(Clone, Copy, Debug)]
pub struct ProblemInput<'a> {
    /// What the problem is.
    pub problem: Problem,
    /// The response's status (the document's `status` member).
    pub status: u16,
    /// What the clearance cookie said ([`Clearance::Absent`]: no member).
    pub clearance: Clearance,
    /// The request id (`$request_id`); empty or odd: no member.
    pub request_id: &'a [u8],
    /// Where a person returns after passing the check (a same-site path,
    /// else `/`): the page the call came from, say.
    pub return_to: &'a [u8],
    /// Seconds to wait before retrying (the `Retry-After` header's value),
    /// when it applies.
    pub retry_after: Option<u32>,
    /// `challenge_problem_base`: an absolute URI the reasons are
    /// documented under; empty: `about:blank`.
    pub base: &'a str,
}

/// Whether `base` may be a `challenge_problem_base`: an absolute `http`
/// or `https` URI of visible ASCII without `"`, `\`, `<` or `>`, at most
/// [`MAX_BASE`] bytes.
pub fn is_problem_base(base: &str) -> bool {
    base.len() <= MAX_BASE
        && (base.starts_with("https://") || base.starts_with("http://"))
        && base
            .bytes()
            .all(|b| (0x21..0x7f).contains(&b) && !matches!(b, b'"' | b'\\' | b'<' | b'>'))
}

/// The reason phrase of `status` (a problem's title under `about:blank`,
/// a blocked request's page).
pub fn status_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ if (500..600).contains(&status) => "Server Error",
        _ => "Client Error",
    }
}

/// Writes the document into `out`; returns its length. Allocates nothing.
pub fn render(p: &ProblemInput<'_>, out: &mut [u8]) -> Result<usize, TooSmall> {
    let cap = out.len();
    let mut w = &mut out[..];
    let kind = p.problem;
    let based = !p.base.is_empty() && is_problem_base(p.base);
    let ok = (|| -> std::io::Result<()> {
        if based {
            write!(
                w,
                "{{\"type\":\"{}{}\",\"title\":\"{}\"",
                p.base,
                kind.as_str(),
                kind.title()
            )?;
        } else {
            write!(
                w,
                "{{\"type\":\"about:blank\",\"title\":\"{}\"",
                status_phrase(p.status)
            )?;
        }
        write!(
            w,
            ",\"status\":{},\"detail\":\"{}\"",
            p.status,
            kind.detail()
        )?;
        write!(w, ",\"reason\":\"{}\"", kind.as_str())?;
        if p.clearance != Clearance::Absent {
            write!(w, ",\"clearance\":\"{}\"", p.clearance.as_str())?;
        }
        let id = p.request_id;
        if super::page::is_request_id(id) {
            w.write_all(b",\"reference\":\"")?;
            w.write_all(id)?;
            w.write_all(b"\"")?;
        }
        if kind.has_clear() {
            let ret: &[u8] = if is_return_path(p.return_to) && p.return_to.len() <= MAX_RETURN {
                p.return_to
            } else {
                b"/"
            };
            write!(w, ",\"clear\":\"{ENDPOINT}?r=")?;
            write_pct(&mut w, ret)?;
            w.write_all(b"\"")?;
        }
        if let Some(s) = p.retry_after {
            write!(w, ",\"retry_after\":{s}")?;
        }
        w.write_all(b"}")
    })();
    ok.map_err(|_| TooSmall)?;
    Ok(cap - w.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::challenge::{Proof, Rejection};

    fn doc(p: &ProblemInput<'_>) -> serde_json::Value {
        let mut out = [0u8; PROBLEM_CAP];
        let n = render(p, &mut out).unwrap();
        serde_json::from_slice(&out[..n]).unwrap()
    }

    fn input(problem: Problem) -> ProblemInput<'static> {
        ProblemInput {
            problem,
            status: 403,
            clearance: Clearance::Absent,
            request_id: b"5f3ca1b2c3d4e5f60718293a4b5c6d7e",
            return_to: b"/shop/cart?id=7&x=\"<>",
            retry_after: None,
            base: "",
        }
    }

    #[test]
    fn documents_are_rfc_9457_json() {
        let d = doc(&ProblemInput {
            clearance: Clearance::Rejected(Rejection::Expired),
            ..input(Problem::ChallengeRequired)
        });
        assert_eq!(d["type"], "about:blank");
        assert_eq!(d["title"], "Forbidden", "about:blank: the status phrase");
        assert_eq!(d["status"], 403);
        assert_eq!(d["reason"], "challenge_required");
        assert_eq!(d["clearance"], "expired");
        assert_eq!(d["reference"], "5f3ca1b2c3d4e5f60718293a4b5c6d7e");
        assert_eq!(
            d["clear"],
            "/.edgeguard/challenge?r=%2Fshop%2Fcart%3Fid%3D7%26x%3D%22%3C%3E"
        );
        assert!(d.get("retry_after").is_none());
        assert!(d["detail"].as_str().unwrap().contains("`clear` URL"));

        let d = doc(&ProblemInput {
            status: 503,
            retry_after: Some(30),
            base: "https://example.com/docs/problems/",
            request_id: b"",
            ..input(Problem::Unavailable)
        });
        assert_eq!(d["type"], "https://example.com/docs/problems/unavailable");
        assert_eq!(d["title"], "Temporarily unavailable");
        assert_eq!(
            (d["status"].as_u64(), d["retry_after"].as_u64()),
            (Some(503), Some(30))
        );
        assert!(
            d.get("clear").is_none()
                && d.get("reference").is_none()
                && d.get("clearance").is_none()
        );

        let d = doc(&ProblemInput {
            status: 429,
            clearance: Clearance::Accepted(Proof::Wait),
            ..input(Problem::Blocked)
        });
        assert_eq!(
            (d["title"].as_str(), d["clearance"].as_str()),
            (Some("Too Many Requests"), Some("accepted_wait"))
        );
        assert!(d.get("clear").is_none(), "nothing to pass when blocked");
    }

    #[test]
    fn hostile_values_are_left_out_and_buffers_bounded() {
        let d = doc(&ProblemInput {
            request_id: b"id\"},\"x\":\"",
            return_to: b"//evil.example/",
            base: "https://x.example/\"",
            ..input(Problem::CookiesNeeded)
        });
        assert!(d.get("reference").is_none());
        assert_eq!(d["clear"], "/.edgeguard/challenge?r=%2F");
        assert_eq!(d["type"], "about:blank", "a bad base is not written");
        // The longest return path fits PROBLEM_CAP, every byte encoded.
        let mut long = vec![b'%'; MAX_RETURN];
        long[0] = b'/';
        let mut out = [0u8; PROBLEM_CAP];
        let p = ProblemInput {
            return_to: &long,
            base: &"https://x.example/".repeat(12)[..MAX_BASE],
            retry_after: Some(u32::MAX),
            ..input(Problem::ChallengeRequired)
        };
        assert!(is_problem_base(p.base));
        let n = render(&p, &mut out).unwrap();
        assert!(n > 3 * MAX_RETURN && n < PROBLEM_CAP, "{n}");
        let mut small = [0u8; 64];
        assert_eq!(render(&p, &mut small), Err(TooSmall));
        for base in ["ftp://x/", "https://x y/", "example.com/"] {
            assert!(!is_problem_base(base), "{base}");
        }
    }
}
