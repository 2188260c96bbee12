//! The challenge's leaf: what its parts share (the endpoint's path, the
//! clearance verdict, the short-buffer error, a request's headers), so
//! that no part imports the module that holds them all.

use super::token::{Proof, Rejection};
use crate::features::Request;

/// The path the page's script sends its answer to, handled by the
/// pipeline itself (never proxied) whenever a challenge is configured.
pub const ENDPOINT: &str = "/.edgeguard/challenge";

/// What the challenge did with a request besides serving its page: an
/// answer, a no-JavaScript wait redeemed, the "cookies are needed" page,
/// or a problem document instead of the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerResult {
    /// The work was done: a clearance cookie was issued.
    Solved,
    /// A no-JavaScript wait was redeemed: the weaker clearance was issued.
    Waited,
    /// Refused, and why (`early`: a no-JavaScript ticket followed before
    /// its wait was over).
    Failed(Rejection),
    /// Solves came back without the cookie: the "cookies are needed"
    /// page (or problem) was served instead of another challenge.
    CookiesNeeded,
    /// A request that must not get the page (a body, a fetch or an API
    /// call) got `application/problem+json` instead.
    Problem,
}

/// What a request's clearance cookie says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clearance {
    /// No cookie of the configured name.
    Absent,
    /// A valid cookie, and what it proves.
    Accepted(Proof),
    /// A cookie that was refused, and why (the last one checked).
    Rejected(Rejection),
}

impl Clearance {
    /// Whether the request is cleared, by either proof.
    pub fn is_accepted(self) -> bool {
        matches!(self, Clearance::Accepted(_))
    }

    /// The name in logs and replay's output: `absent`, `accepted`,
    /// `accepted_wait` (the no-JavaScript clearance), or the rejection's.
    pub fn as_str(self) -> &'static str {
        match self {
            Clearance::Absent => "absent",
            Clearance::Accepted(Proof::Work) => "accepted",
            Clearance::Accepted(Proof::Wait) => "accepted_wait",
            Clearance::Rejected(r) => r.as_str(),
        }
    }
}

/// An output buffer was too small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooSmall;

/// The `User-Agent` of a request (the first one), or empty.
pub fn user_agent<'a>(req: &Request<'a>) -> &'a [u8] {
    header(req, b"user-agent").unwrap_or_default()
}

/// The first header of a request named `want` (ASCII case-insensitive).
pub fn header<'a>(req: &Request<'a>, want: &[u8]) -> Option<&'a [u8]> {
    req.headers()
        .find(|(n, _)| n.eq_ignore_ascii_case(want))
        .map(|(_, v)| v)
}
