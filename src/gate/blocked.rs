//! A blocked request's answer (part of stage 7, `respond`): its status, the
//! reference a support desk looks up, and a small body.
//!
//! nginx's bare 403 told a person nothing and gave support nothing to
//! search for. A block (mode `block`, or a block rule with its own status,
//! a 429 say) now answers with `Edgeguard-Reference: <$request_id>`, the
//! id the challenge page shows and the decision logs carry (`request_id`
//! in `log_format edgeguard_decisions`), and a body that says the same:
//!
//! ```text
//! a navigation (challenge::Response::wants_page) -> a short HTML page naming the reference
//! anything else (a fetch, an API call, a body)   -> application/problem+json, reason "blocked",
//!                                                   "reference" member
//! an id that cannot be shown (challenge::is_request_id) -> the bare status, as before
//! ```
//!
//! nginx makes `$request_id` (16 random bytes from OpenSSL) on its first
//! read, so the shim reads it only for a request that needs it: a request
//! that comes without one gets a body with a gap where the id goes
//! ([`Effects::body_id_at`](super::Effects)), and the shim inserts the id
//! there and sets the header (as it inserts it into the decision line).
//! Written into the scratch's body; nothing allocates.

use std::io::Write as _;

use super::effects::Exit;
use super::location::Location;
use super::request::Incoming;
use super::scratch::Scratch;
use super::state::{BodyParts, State};
use crate::challenge::{self, Problem, ProblemInput, Response};
use crate::config::text::Span;

/// The response header naming the request's reference.
pub(super) const REFERENCE_HEADER: &str = "Edgeguard-Reference";

/// The exit of a request blocked with `status`: the body and the
/// reference header when the request has an id, else the bare status.
pub(super) fn blocked(
    loc: &Location,
    req: &Incoming<'_>,
    status: u16,
    scratch: &mut Scratch,
    s: &mut State,
) -> Exit<'static> {
    let id = req.request_id();
    // Empty: the caller inserts it later (`id_at`).
    if !id.is_empty() && !challenge::is_request_id(id) {
        return Exit::Status(status);
    }
    let ch = loc.policy.challenge();
    let response = ch.map_or(Response::Auto, |c| c.response);
    let problem = !response.wants_page(req.http());
    let out = &mut scratch.body[..];
    // Without an id, a stand-in of a valid id's shape marks the gap, then
    // is cut out of the body.
    let shown: &[u8] = if id.is_empty() { GAP } else { id };
    let written = if problem {
        let input = ProblemInput {
            problem: Problem::Blocked,
            status,
            clearance: s.decision.clearance,
            request_id: shown,
            return_to: b"/",
            retry_after: None,
            base: ch.map_or("", |c| c.problem_base.as_str()),
        };
        challenge::render_problem(&input, out).ok()
    } else {
        page(status, shown, out)
    };
    // The header's value after the body.
    let Some(n) = written.filter(|&n| n + id.len() <= out.len()) else {
        return Exit::Status(status); // not reached: the body holds a page
    };
    let (n, id_at) = if id.is_empty() {
        let Some(at) = out[..n].windows(GAP.len()).position(|w| w == GAP) else {
            return Exit::Status(status); // not reached: the body names it
        };
        out.copy_within(at + GAP.len()..n, at);
        (n - GAP.len(), Some(at))
    } else {
        out[n..n + id.len()].copy_from_slice(id);
        (n, None)
    };
    s.body = BodyParts::Blocked {
        body: Span { offset: 0, len: n },
        problem,
        reference: Span {
            offset: n,
            len: id.len(),
        },
        id_at,
    };
    Exit::Status(status)
}

/// What stands for a request id the caller inserts later: the shape of
/// one (`is_request_id`), found nowhere else in a page or a problem.
const GAP: &[u8] = b"edgeguard-request-id-gap";

/// The page a person's browser shows: the status and the reference, in
/// plain words. English only (the challenge's locales are for the check a
/// person can pass; here there is none).
fn page(status: u16, id: &[u8], mut out: &mut [u8]) -> Option<usize> {
    let cap = out.len();
    let phrase = challenge::status_phrase(status);
    write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{status} {phrase}</title></head>\n<body><h1>{phrase}</h1>\n\
         <p>This site refused this request: it was judged automated.</p>\n\
         <p>If you are a person and think this is a mistake, contact the site \
         and give this reference: <code>"
    )
    .ok()?;
    // Letters, digits, `-`, `_`, `.` only (is_request_id): nothing to escape.
    out.write_all(id).ok()?;
    out.write_all(b"</code></p></body></html>\n").ok()?;
    Some(cap - out.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_the_status_and_the_reference() {
        let mut out = [0u8; 1024];
        let n = page(429, b"5f3ca1b2c3d4e5f60718293a4b5c6d7e", &mut out).unwrap();
        let text = std::str::from_utf8(&out[..n]).unwrap();
        assert!(
            text.contains("<title>429 Too Many Requests</title>"),
            "{text}"
        );
        assert!(text.contains("<code>5f3ca1b2c3d4e5f60718293a4b5c6d7e</code>"));
        assert!(page(403, b"x", &mut out[..40]).is_none(), "too small");
    }
}
