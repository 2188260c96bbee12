//! The challenge's exits through the whole pipeline: page or problem,
//! the return hop and its attempt count, the no-JavaScript fallback, the
//! TLS binding, difficulty by score, the start, and what the decision
//! line says of a refused cookie.

use std::path::Path;

use super::super::*;
use crate::challenge::AnswerResult;
use crate::challenge::{self, Clearance, Proof, Rejection};
use crate::config::Options;
use crate::features::TlsFacts;
use crate::headers::Header;
use crate::outcome::Outcome;
use crate::tls::Family;

const NOW: u64 = 1_800_000_000;
const CHROME: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const CHROME_JA4: &[u8] = b"t13d1516h2_8daaf6152771_02713d6af862";
const PYTHON_JA4: &[u8] = b"t13d5911h1_a33745022dd6_dd5ea6d2a4c8";
const NAV: &[(&[u8], &[u8])] = &[
    (b"user-agent", CHROME),
    (b"sec-fetch-mode", b"navigate"),
    (b"host", b"shop.example"),
];

/// A challenge location of one given model, "bot", threshold 0.5.
fn location(extra: &str) -> Location {
    let json = format!(
        r#"{{"mode": "challenge", "challenge_secret": "tests/fixtures/challenge/secret",
            "challenge_difficulty": 4, "challenge_difficulty_max": 8 {extra}}}"#
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Options::configure("t", Some(root), json.as_bytes()).unwrap();
    Location::new(&o, Models::Given(&[("bot", Some(0.5))]), None).unwrap()
}

/// One request to `loc` scored `score`: its effects.
struct Call<'a> {
    method: &'a [u8],
    uri: &'a [u8],
    headers: Vec<(&'a [u8], &'a [u8])>,
    /// `None`: not scored.
    score: Option<f64>,
    ja4: Option<&'a [u8]>,
    now: u64,
}

impl<'a> Call<'a> {
    fn new(uri: &'a [u8], headers: &[(&'a [u8], &'a [u8])]) -> Call<'a> {
        Call {
            method: b"GET",
            uri,
            headers: headers.to_vec(),
            score: Some(0.9),
            ja4: None,
            now: NOW,
        }
    }

    fn run<'s>(&self, loc: &'s Location, scratch: &'s mut Scratch) -> Effects<'s> {
        let h: Vec<Header<'_>> = self
            .headers
            .iter()
            .map(|(n, v)| Header::new(n, v))
            .collect();
        let tls = self
            .ja4
            .map(|j| TlsFacts::new(j, Family::Boringssl).unwrap());
        let scores = [self.score.unwrap_or_default()];
        let req = Incoming::new(self.method, self.uri, 11, b"192.0.2.10", &h, tls)
            .secure(tls.is_some())
            .with_request_id(b"0123456789abcdef0123456789abcdef")
            .given(Given {
                scores: self.score.map(|_| &scores[..]),
                ..Given::default()
            });
        run(loc, &req, Job::Access, self.now, scratch).unwrap()
    }
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

fn page_of<'a>(e: &Effects<'a>) -> (u16, &'static str, &'a str) {
    match e.exit {
        Exit::Page {
            status,
            content_type,
            body,
            ..
        } => (status, content_type, text(body)),
        other => panic!("{other:?}"),
    }
}

fn redirect_of<'a>(e: &Effects<'a>) -> (&'a str, &'a str) {
    match e.exit {
        Exit::Redirect {
            status: 303,
            location,
            set_cookie,
        } => (text(location), text(set_cookie)),
        other => panic!("{other:?}"),
    }
}

/// The nonce and difficulty a page asks for.
fn nonce_of(page: &str) -> (String, u8) {
    let at = page.find("{\"n\":\"").unwrap() + 6;
    let nonce = page[at..at + challenge::TOKEN_TEXT].to_owned();
    let d = page[at..].split("\"d\":").nth(1).unwrap();
    let d: String = d.chars().take_while(char::is_ascii_digit).collect();
    (nonce, d.parse().unwrap())
}

fn solve(nonce: &str, difficulty: u8) -> u64 {
    (0u64..)
        .find(|c| {
            challenge::leading_zero_bits(nonce.as_bytes(), c.to_string().as_bytes())
                >= u32::from(difficulty)
        })
        .unwrap()
}

/// The answer URI that solves `page`, returning to `/doc`.
fn answer_uri(page: &str) -> String {
    let (nonce, d) = nonce_of(page);
    format!(
        "/.edgeguard/challenge?n={nonce}&c={}&r=%2Fdoc",
        solve(&nonce, d)
    )
}

fn cookie_header(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}

#[test]
fn requests_that_must_not_get_the_page_get_a_problem_document() {
    let loc = location("");
    let mut scratch = Scratch::new();
    let fetch: &[(&[u8], &[u8])] = &[
        (b"user-agent", CHROME),
        (b"accept", b"application/json"),
        (b"sec-fetch-mode", b"cors"),
        (b"sec-fetch-dest", b"empty"),
        (b"host", b"shop.example"),
        (b"referer", b"https://shop.example/cart?x=1#top"),
    ];
    let e = Call::new(b"/api/cart", fetch).run(&loc, &mut scratch);
    assert_eq!(e.action, Outcome::ChallengeRequired);
    assert_eq!(e.answer, Some(AnswerResult::Problem));
    let (status, ty, body) = page_of(&e);
    assert_eq!((status, ty), (403, "application/problem+json"));
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["reason"], "challenge_required");
    assert_eq!(v["status"], 403);
    assert_eq!(v["reference"], "0123456789abcdef0123456789abcdef");
    // Where a person clears: back to the page the call came from.
    assert_eq!(v["clear"], "/.edgeguard/challenge?r=%2Fcart%3Fx%3D1");
    let headers: Vec<&str> = e.exit.headers().map(|(n, _)| n).collect();
    assert_eq!(headers, ["Content-Type", "Cache-Control", "X-Robots-Tag"]);

    // A form POST (a navigation with a body) is never given the page: its
    // body would be lost. A referer of another site returns to `/`.
    let mut post = Call::new(b"/checkout", NAV);
    post.method = b"POST";
    post.headers
        .push((b"referer", b"https://pay.example/return"));
    let e = post.run(&loc, &mut scratch);
    let (_, ty, body) = page_of(&e);
    assert_eq!(
        (e.action, ty),
        (Outcome::ChallengeRequired, "application/problem+json")
    );
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["clear"], "/.edgeguard/challenge?r=%2F");

    // challenge_response: "problem" answers a navigation so too; "page"
    // gives the page to a GET that shows no sign of being one.
    let api = location(r#", "challenge_response": "problem""#);
    let e = Call::new(b"/", NAV).run(&api, &mut scratch);
    assert_eq!(page_of(&e).1, "application/problem+json");
    let bare: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME)];
    let e = Call::new(b"/", bare).run(&loc, &mut scratch);
    assert_eq!(page_of(&e).1, "application/problem+json");
    let pages = location(r#", "challenge_response": "page""#);
    let e = Call::new(b"/", bare).run(&pages, &mut scratch);
    assert_eq!(
        (e.action, page_of(&e).1),
        (Outcome::Challenge, "text/html; charset=utf-8")
    );
    let mut post = Call::new(b"/", bare);
    post.method = b"POST";
    let e = post.run(&pages, &mut scratch);
    assert_eq!(page_of(&e).1, "application/problem+json");
}

#[test]
fn the_page_is_localized_carries_the_reference_and_scales_its_work() {
    let loc = location("");
    let mut scratch = Scratch::new();
    let mut call = Call::new(b"/doc", NAV);
    call.headers.push((b"accept-language", b"de-CH,de;q=0.9"));
    let (score_low, score_high) = (0.5, 1.0);
    call.score = Some(score_low);
    let e = call.run(&loc, &mut scratch);
    let (status, ty, body) = page_of(&e);
    assert_eq!((status, ty), (403, "text/html; charset=utf-8"));
    assert!(body.contains("lang=\"de\""), "{body}");
    assert!(body.contains("0123456789abcdef0123456789abcdef"));
    assert!(body.contains("shop.example"));
    assert_eq!(nonce_of(body).1, 4, "at the threshold: the base");
    call.score = Some(score_high);
    let e = call.run(&loc, &mut scratch);
    assert_eq!(nonce_of(page_of(&e).2).1, 8, "at 1.0: the maximum");
    let Some(("Content-Security-Policy", csp)) = e.exit.headers().nth(3) else {
        panic!("no policy")
    };
    assert!(text(csp).contains("script-src 'sha256-"), "{}", text(csp));
}

#[test]
fn the_return_hop_counts_solves_that_come_back_without_the_cookie() {
    let loc = location("");
    let mut scratch = Scratch::new();
    let e = Call::new(b"/doc", NAV).run(&loc, &mut scratch);
    let uri = answer_uri(page_of(&e).2);
    let e = Call::new(uri.as_bytes(), NAV).run(&loc, &mut scratch);
    assert_eq!(e.answer, Some(AnswerResult::Solved));
    let (hop, set_cookie) = redirect_of(&e);
    let (hop, cookie) = (hop.to_owned(), cookie_header(set_cookie));
    assert!(hop.starts_with("/.edgeguard/challenge?a="), "{hop}");

    // The cookie came back: on to the page.
    let mut back = Call::new(hop.as_bytes(), NAV);
    back.headers.push((b"cookie", cookie.as_bytes()));
    let e = back.run(&loc, &mut scratch);
    assert_eq!(e.action, Outcome::Answer);
    assert_eq!(redirect_of(&e), ("/doc", ""));
    assert_eq!(e.exit.headers().count(), 1, "no Set-Cookie");
    assert_eq!(e.clearance, Clearance::Accepted(Proof::Work));
    let (line, _) = e.line.unwrap();
    assert!(text(line).starts_with("edgeguard challenge=returned "));

    // It did not: the page again, one attempt counted; after the second
    // solve, the "cookies are needed" page.
    let e = Call::new(hop.as_bytes(), NAV).run(&loc, &mut scratch);
    assert_eq!(e.action, Outcome::Challenge);
    let uri = answer_uri(page_of(&e).2);
    let e = Call::new(uri.as_bytes(), NAV).run(&loc, &mut scratch);
    let hop2 = redirect_of(&e).0.to_owned();
    let e = Call::new(hop2.as_bytes(), NAV).run(&loc, &mut scratch);
    assert_eq!(e.action, Outcome::Answer);
    assert_eq!(e.answer, Some(AnswerResult::CookiesNeeded));
    let (_, ty, body) = page_of(&e);
    assert_eq!(ty, "text/html; charset=utf-8");
    assert!(!body.contains("{\"n\":\""), "no more work asked");
    assert!(text(e.line.unwrap().0).starts_with("edgeguard challenge=cookies_needed "));
}

#[test]
fn the_no_javascript_fallback_waits_then_gives_a_weaker_clearance() {
    let loc = location(r#", "challenge_nojs": {"wait": 3, "ttl": 600}"#);
    let mut scratch = Scratch::new();
    let e = Call::new(b"/doc", NAV).run(&loc, &mut scratch);
    let body = page_of(&e).2;
    let at = body.find("/.edgeguard/challenge?t=").expect("a ticket");
    let ticket: String = body[at..]
        .chars()
        .take_while(|&c| c != '"' && c != '\'' && c != ' ')
        .collect::<String>()
        .replace("&amp;", "&");
    // Too early: the wait page, and the reason.
    let mut early = Call::new(ticket.as_bytes(), NAV);
    early.now = NOW + 1;
    let e = early.run(&loc, &mut scratch);
    assert_eq!(e.answer, Some(AnswerResult::Failed(Rejection::Early)));
    assert!(page_of(&e).2.contains("/.edgeguard/challenge?t="));
    // After it: the cookie, its own lifetime.
    let mut ready = Call::new(ticket.as_bytes(), NAV);
    ready.now = NOW + 3;
    let e = ready.run(&loc, &mut scratch);
    assert_eq!(e.answer, Some(AnswerResult::Waited));
    let (_, set_cookie) = redirect_of(&e);
    assert!(set_cookie.contains("Max-Age=600"), "{set_cookie}");
    let cookie = cookie_header(set_cookie);
    let mut next = Call::new(b"/doc", NAV);
    next.headers.push((b"cookie", cookie.as_bytes()));
    next.now = NOW + 4;
    let e = next.run(&loc, &mut scratch);
    assert_eq!(
        (e.action, e.clearance),
        (Outcome::Cleared, Clearance::Accepted(Proof::Wait))
    );
    assert!(text(e.line.unwrap().0).ends_with(" clearance=accepted_wait"));
    // A location without the fallback does not take that clearance.
    let strict = location("");
    let e = next.run(&strict, &mut scratch);
    assert_eq!(e.clearance, Clearance::Rejected(Rejection::Expired));
    assert_eq!(e.action, Outcome::Challenge);
}

#[test]
fn a_cookie_replayed_from_another_tls_stack_is_refused_and_logged() {
    let loc = location("");
    let mut scratch = Scratch::new();
    let mut call = Call::new(b"/doc", NAV);
    call.ja4 = Some(CHROME_JA4);
    let e = call.run(&loc, &mut scratch);
    let uri = answer_uri(page_of(&e).2);
    let mut answer = Call::new(uri.as_bytes(), NAV);
    answer.ja4 = Some(CHROME_JA4);
    let e = answer.run(&loc, &mut scratch);
    let set_cookie = redirect_of(&e).1;
    assert!(set_cookie.ends_with("; Secure"), "{set_cookie}");
    let cookie = cookie_header(set_cookie);
    let mut same = Call::new(b"/doc", NAV);
    same.headers.push((b"cookie", cookie.as_bytes()));
    same.ja4 = Some(CHROME_JA4);
    assert_eq!(same.run(&loc, &mut scratch).action, Outcome::Cleared);
    // The same cookie, User-Agent and address from Python's TLS stack.
    same.ja4 = Some(PYTHON_JA4);
    let e = same.run(&loc, &mut scratch);
    assert_eq!(e.clearance, Clearance::Rejected(Rejection::Tls));
    assert_eq!(e.action, Outcome::Challenge);
    assert!(text(e.line.unwrap().0).ends_with(" clearance=tls"));
    // Or over plain HTTP, where there is no stack to compare.
    same.ja4 = None;
    let e = same.run(&loc, &mut scratch);
    assert_eq!(e.clearance, Clearance::Rejected(Rejection::Tls));
}

#[test]
fn a_problem_documents_clear_url_starts_the_page_or_returns_a_cleared_person() {
    let loc = location("");
    let mut scratch = Scratch::new();
    let start = b"/.edgeguard/challenge?r=%2Fcart%3Fx%3D1";
    let mut call = Call::new(start, NAV);
    call.score = Some(0.0);
    let e = call.run(&loc, &mut scratch);
    assert_eq!(e.action, Outcome::Challenge);
    let body = page_of(&e).2;
    assert_eq!(nonce_of(body).1, 4, "not flagged itself: the base");
    let (nonce, d) = nonce_of(body);
    let uri = format!(
        "/.edgeguard/challenge?n={nonce}&c={}&r=%2Fcart%3Fx%3D1",
        solve(&nonce, d)
    );
    let e = Call::new(uri.as_bytes(), NAV).run(&loc, &mut scratch);
    let cookie = cookie_header(redirect_of(&e).1);
    let mut again = Call::new(start, NAV);
    again.headers.push((b"cookie", cookie.as_bytes()));
    let e = again.run(&loc, &mut scratch);
    assert_eq!(redirect_of(&e), ("/cart?x=1", ""));
    // A start that leaves the site returns to the root.
    let mut off = Call::new(
        b"/.edgeguard/challenge?r=https%3A%2F%2Fevil.example%2F",
        NAV,
    );
    off.headers.push((b"cookie", cookie.as_bytes()));
    assert_eq!(redirect_of(&off.run(&loc, &mut scratch)).0, "/");
}

#[test]
fn replay_decides_alike_without_texts() {
    let loc = location("");
    let (mut texts, mut decisions) = (Scratch::new(), Scratch::decisions_only());
    let fetch: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME), (b"sec-fetch-mode", b"cors")];
    let e = Call::new(b"/doc", NAV).run(&loc, &mut texts);
    let stale = answer_uri(page_of(&e).2);
    let mut expired = Call::new(stale.as_bytes(), NAV);
    expired.now = NOW + challenge::NONCE_TTL + 1;
    for call in [Call::new(b"/", NAV), Call::new(b"/api", fetch), expired] {
        let a = call.run(&loc, &mut texts);
        let (action, answer, status) = (a.action, a.answer, a.exit.status());
        let b = call.run(&loc, &mut decisions);
        assert_eq!(
            (action, answer, status),
            (b.action, b.answer, b.exit.status())
        );
    }
}

#[test]
fn an_unscored_program_under_fail_closed_gets_a_503_problem_with_retry_after() {
    let loc = location(r#", "models": {"bot": "models/bot.json"}, "fail_closed": true"#);
    let mut scratch = Scratch::new();
    let fetch: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME), (b"sec-fetch-mode", b"cors")];
    let mut call = Call::new(b"/api", fetch);
    call.score = None;
    let e = call.run(&loc, &mut scratch);
    assert_eq!(e.action, Outcome::Unavailable);
    let (status, ty, body) = page_of(&e);
    assert_eq!((status, ty), (503, "application/problem+json"));
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        (v["reason"].as_str(), v["retry_after"].as_u64()),
        (Some("unavailable"), Some(30))
    );
    assert!(v.get("clear").is_none(), "nothing to clear");
    let retry = e
        .exit
        .headers()
        .find(|(n, _)| *n == "Retry-After")
        .unwrap()
        .1;
    assert_eq!(text(retry), "30");
    // A person's navigation gets nginx's own 503 page.
    let mut nav = Call::new(b"/", NAV);
    nav.score = None;
    assert_eq!(nav.run(&loc, &mut scratch).exit, Exit::Status(503));
}

/// The answer URI of a solved `nonce`, returning to `/doc`.
fn answer_of(nonce: &str, difficulty: u8) -> String {
    format!(
        "/.edgeguard/challenge?n={nonce}&c={}&r=%2Fdoc",
        solve(nonce, difficulty)
    )
}

#[test]
fn an_answer_that_expired_in_the_browser_gets_a_fresh_page() {
    let loc = location("");
    let mut scratch = Scratch::new();
    let mut first = Call::new(b"/doc", NAV);
    first.score = Some(1.0);
    let e = first.run(&loc, &mut scratch);
    let (nonce, d) = nonce_of(page_of(&e).2);
    assert_eq!(d, 8, "flagged at 1.0: the maximum");
    let late = NOW + challenge::NONCE_TTL + 1;

    // The tab was left open (or the laptop slept): the page again, back to
    // the same place, at the start's difficulty, with a fresh nonce; the
    // answer still counts as failed, expired.
    let stale = answer_of(&nonce, d);
    let mut answer = Call::new(stale.as_bytes(), NAV);
    answer.now = late;
    answer.score = Some(0.0);
    let e = answer.run(&loc, &mut scratch);
    assert_eq!(e.action, Outcome::Answer);
    assert_eq!(e.answer, Some(AnswerResult::Failed(Rejection::Expired)));
    let (line, _) = e.line.unwrap();
    assert!(
        text(line).starts_with("edgeguard challenge=failed reason=expired "),
        "{}",
        text(line)
    );
    let (status, ty, body) = page_of(&e);
    assert_eq!((status, ty), (403, "text/html; charset=utf-8"));
    assert!(body.contains("Checking your browser"), "{body}");
    assert!(body.contains("\"r\":\"%2Fdoc\""), "back to /doc: {body}");
    let (fresh, fresh_d) = nonce_of(body);
    assert_ne!(fresh, nonce);
    assert_eq!(fresh_d, 4, "not flagged itself: the base");
    let csp = e
        .exit
        .headers()
        .find(|(n, _)| *n == "Content-Security-Policy");
    assert!(csp.is_some(), "the solver is allowed to run");

    // The fresh page solves, and the attempt it counted is carried on.
    let fresh_answer = answer_of(&fresh, fresh_d);
    let mut solved = Call::new(fresh_answer.as_bytes(), NAV);
    solved.now = late + 2;
    let e = solved.run(&loc, &mut scratch);
    assert_eq!(e.answer, Some(AnswerResult::Solved));
    let hop = redirect_of(&e).0.to_owned();
    let mut back = Call::new(hop.as_bytes(), NAV);
    back.now = late + 3;
    let e = back.run(&loc, &mut scratch);
    assert_eq!(
        e.answer,
        Some(AnswerResult::CookiesNeeded),
        "one expiry and a solve without the cookie are two attempts"
    );

    // The fresh page expires too: the attempt limit is reached, so the
    // "cookies are needed" page (its link starts over), not a third page.
    let mut again = Call::new(fresh_answer.as_bytes(), NAV);
    again.now = late + 2 * challenge::NONCE_TTL;
    let e = again.run(&loc, &mut scratch);
    assert_eq!(e.answer, Some(AnswerResult::Failed(Rejection::Expired)));
    let body = page_of(&e).2;
    assert!(body.contains("Cookies are needed"), "{body}");
    assert!(!body.contains("{\"n\":\""), "no more work asked");
    assert!(body.contains("href=\"/doc\""), "{body}");

    // A clock stepped back (the page from a server ahead): the same.
    let mut early = Call::new(stale.as_bytes(), NAV);
    early.now = NOW - challenge::NONCE_TTL - 1;
    let e = early.run(&loc, &mut scratch);
    assert!(page_of(&e).2.contains("{\"n\":\""));

    // A fetch() of the endpoint (no page can help it): the problem
    // document, pointing where a person clears.
    let fetch: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME), (b"sec-fetch-mode", b"cors")];
    let mut call = Call::new(stale.as_bytes(), fetch);
    call.now = late;
    let e = call.run(&loc, &mut scratch);
    assert_eq!(e.answer, Some(AnswerResult::Failed(Rejection::Expired)));
    let (status, ty, body) = page_of(&e);
    assert_eq!((status, ty), (403, "application/problem+json"));
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["reason"], "challenge_required");
    assert_eq!(v["clear"], "/.edgeguard/challenge?r=%2Fdoc");
}

#[test]
fn forged_or_tampered_answers_keep_the_refusal() {
    let loc = location("");
    let mut scratch = Scratch::new();
    let e = Call::new(b"/doc", NAV).run(&loc, &mut scratch);
    let (nonce, d) = nonce_of(page_of(&e).2);
    let good = solve(&nonce, d);
    let bad = (0u64..)
        .find(|c| {
            challenge::leading_zero_bits(nonce.as_bytes(), c.to_string().as_bytes()) < u32::from(d)
        })
        .unwrap();
    let tampered = format!("{}AA", &nonce[..nonce.len() - 2]);
    let late = NOW + challenge::NONCE_TTL + 1;
    let other_ua: &[(&[u8], &[u8])] = &[
        (b"user-agent", b"curl/8.5.0"),
        (b"sec-fetch-mode", b"navigate"),
    ];
    type Headers<'a> = &'a [(&'a [u8], &'a [u8])];
    let cases: [(String, Headers<'_>, u64, Rejection); 6] = [
        (format!("n={tampered}&c={good}"), NAV, NOW, Rejection::Mac),
        (format!("n={tampered}&c={good}"), NAV, late, Rejection::Mac),
        (format!("n={nonce}&c={bad}"), NAV, NOW, Rejection::Work),
        (
            format!("n={nonce}&c={good}"),
            other_ua,
            NOW,
            Rejection::UserAgent,
        ),
        // Expired and another client's: refused, its reason the first found.
        (
            format!("n={nonce}&c={good}"),
            other_ua,
            late,
            Rejection::Expired,
        ),
        ("n=garbage&c=1".to_owned(), NAV, NOW, Rejection::Malformed),
    ];
    for (query, headers, now, reason) in cases {
        let uri = format!("/.edgeguard/challenge?{query}&r=%2Fdoc");
        let mut call = Call::new(uri.as_bytes(), headers);
        call.now = now;
        let e = call.run(&loc, &mut scratch);
        assert_eq!(e.answer, Some(AnswerResult::Failed(reason)), "{reason:?}");
        assert_eq!(e.exit, Exit::Status(403), "{reason:?}");
    }
}

#[test]
fn an_expired_no_javascript_ticket_gets_a_fresh_page() {
    let loc = location(r#", "challenge_nojs": {"wait": 3, "ttl": 600}"#);
    let mut scratch = Scratch::new();
    let e = Call::new(b"/doc", NAV).run(&loc, &mut scratch);
    let body = page_of(&e).2;
    let at = body.find("/.edgeguard/challenge?t=").expect("a ticket");
    let ticket: String = body[at..]
        .chars()
        .take_while(|&c| c != '"')
        .collect::<String>()
        .replace("&amp;", "&");
    let mut late = Call::new(ticket.as_bytes(), NAV);
    late.now = NOW + 3 + challenge::NONCE_TTL + 1;
    let e = late.run(&loc, &mut scratch);
    assert_eq!(e.answer, Some(AnswerResult::Failed(Rejection::Expired)));
    let body = page_of(&e).2;
    assert!(body.contains("/.edgeguard/challenge?t="), "a fresh ticket");
    assert!(!body.contains(&ticket[..60]), "not the old one");
}

/// A block location (no challenge) of one given model, "bot", threshold
/// 0.5, with `extra` options.
fn block_location(extra: &str) -> Location {
    let json = format!(r#"{{"mode": "block" {extra}}}"#);
    let o = Options::configure("t", None, json.as_bytes()).unwrap();
    Location::new(&o, Models::Given(&[("bot", Some(0.5))]), None).unwrap()
}

#[test]
fn a_block_carries_its_reference_in_a_header_and_a_body() {
    const ID: &str = "0123456789abcdef0123456789abcdef";
    let loc = block_location("");
    let mut scratch = Scratch::new();
    // A person's navigation: a short page naming the reference.
    let e = Call::new(b"/", NAV).run(&loc, &mut scratch);
    assert_eq!(e.action, Outcome::Block);
    let (status, ty, body) = page_of(&e);
    assert_eq!((status, ty), (403, "text/html; charset=utf-8"));
    assert!(body.contains(&format!("<code>{ID}</code>")), "{body}");
    assert!(body.contains("<title>403 Forbidden</title>"), "{body}");
    let headers: Vec<(&str, &str)> = e.exit.headers().map(|(n, v)| (n, text(v))).collect();
    assert_eq!(
        headers,
        [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Cache-Control", "no-store"),
            ("X-Robots-Tag", "noindex"),
            ("Edgeguard-Reference", ID)
        ]
    );
    // A program: a problem document, reason "blocked", the same reference.
    let api: &[(&[u8], &[u8])] = &[(b"user-agent", b"curl/8.5.0"), (b"accept", b"*/*")];
    let e = Call::new(b"/api", api).run(&loc, &mut scratch);
    let (status, ty, body) = page_of(&e);
    assert_eq!((status, ty), (403, "application/problem+json"));
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        (v["reason"].as_str(), v["reference"].as_str()),
        (Some("blocked"), Some(ID))
    );
    assert_eq!(v["status"], 403);
    assert!(v.get("clear").is_none(), "no check to pass: {v}");
    assert_eq!(
        e.exit.headers().last().map(|(n, v)| (n, text(v))),
        Some(("Edgeguard-Reference", ID))
    );
    // Not flagged: no answer at all.
    let mut low = Call::new(b"/", NAV);
    low.score = Some(0.1);
    assert_eq!(low.run(&loc, &mut scratch).exit, Exit::Continue);
}

#[test]
fn a_block_rules_own_status_carries_the_reference_too() {
    let loc = block_location(
        r#", "rules": [{"name": "slow", "when": {"path": {"exact": "/limited"}}, "action": "block", "status": 429}]"#,
    );
    let mut scratch = Scratch::new();
    let mut call = Call::new(b"/limited", NAV);
    call.score = Some(0.1);
    let e = call.run(&loc, &mut scratch);
    let (status, ty, body) = page_of(&e);
    assert_eq!((status, ty), (429, "text/html; charset=utf-8"));
    assert!(
        body.contains("<title>429 Too Many Requests</title>"),
        "{body}"
    );
    assert_eq!(
        e.exit.headers().last().map(|(n, _)| n),
        Some("Edgeguard-Reference")
    );
}

/// A block of a request that came without an id: the body has a gap where
/// the caller inserts `$request_id` (and then sets the header itself).
#[test]
fn a_block_without_an_id_leaves_the_caller_a_gap() {
    let loc = block_location("");
    let mut scratch = Scratch::new();
    let h: Vec<Header<'_>> = NAV.iter().map(|(n, v)| Header::new(n, v)).collect();
    let api: Vec<Header<'_>> = [(&b"user-agent"[..], &b"curl/8.5.0"[..])]
        .iter()
        .map(|(n, v)| Header::new(n, v))
        .collect();
    let scores = [0.9];
    for (headers, open, close) in [(&h, "<code>", "</code>"), (&api, "\"reference\":\"", "\"")] {
        let req = Incoming::new(b"GET", b"/", 11, b"192.0.2.10", headers, None).given(Given {
            scores: Some(&scores),
            ..Given::default()
        });
        let e = run(&loc, &req, Job::Access, NOW, &mut scratch).unwrap();
        let at = e.body_id_at.expect("a gap");
        let (_, _, body) = page_of(&e);
        assert!(
            body[..at].ends_with(open) && body[at..].starts_with(close),
            "{body}"
        );
        assert!(!body.contains("gap"), "{body}");
        assert!(e.exit.headers().all(|(n, _)| n != "Edgeguard-Reference"));
        // What the caller makes of it is a valid document.
        if open.starts_with('"') {
            let full = format!("{}0123abcd{}", &body[..at], &body[at..]);
            let v: serde_json::Value = serde_json::from_str(&full).unwrap();
            assert_eq!(v["reference"], "0123abcd");
        }
    }
    // With an id, no gap.
    let e = Call::new(b"/", NAV).run(&loc, &mut scratch);
    assert_eq!(e.body_id_at, None);
}

#[test]
fn a_block_with_an_id_that_cannot_be_shown_is_the_bare_status() {
    let loc = block_location("");
    let mut scratch = Scratch::new();
    let h: Vec<Header<'_>> = NAV.iter().map(|(n, v)| Header::new(n, v)).collect();
    let scores = [0.9];
    for id in [&b"has space"[..], b"<script>", &[b'a'; 65]] {
        let req = Incoming::new(b"GET", b"/", 11, b"192.0.2.10", &h, None)
            .with_request_id(id)
            .given(Given {
                scores: Some(&scores),
                ..Given::default()
            });
        let e = run(&loc, &req, Job::Access, NOW, &mut scratch).unwrap();
        assert_eq!(
            (e.action, e.exit),
            (Outcome::Block, Exit::Status(403)),
            "{id:?}"
        );
    }
}
