//! The pipeline end to end, on locations made as nginx and replay make
//! them.

use std::path::Path;

use super::*;
use crate::config::Options;
use crate::headers::{Header, HeaderSet};

const NOW: u64 = 1_800_000_000;
const CHROME: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const GOOGLEBOT: &[u8] =
    b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn config(json: &str) -> Config {
    Config::parse("t.json", root(), json.as_bytes()).unwrap()
}

fn list() -> HeaderSet {
    HeaderSet::parse("t", b"x-internal-*\nx-user-id\n").unwrap()
}

/// A location of the Lua engine's models ("bot", "spoof"), given scores.
fn given_location(json: &str) -> Location {
    let o = Options::configure("t", Some(root()), json.as_bytes()).unwrap();
    Location::new(
        &o,
        Models::Given(&[("bot", Some(0.5)), ("spoof", None)]),
        Some(&list()),
    )
    .unwrap()
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

fn run_one<'a>(
    loc: &'a Location,
    headers: &[(&[u8], &[u8])],
    uri: &[u8],
    given: Option<Given<'_>>,
    job: Job,
    scratch: &'a mut Scratch,
) -> Effects<'a> {
    let h: Vec<Header<'_>> = headers.iter().map(|(n, v)| Header::new(n, v)).collect();
    let mut req = Request::new(b"GET", uri, 11, b"192.0.2.10", &h, None);
    if let Some(g) = given {
        req = req.given(g);
    }
    run(loc, &req, job, NOW, scratch).unwrap()
}

#[test]
fn a_flagged_request_gets_every_effect() {
    let loc = given_location(r#"{"mode": "block", "vars": true, "status": 429, "log_level": 5}"#);
    let mut scratch = Scratch::new();
    let headers: &[(&[u8], &[u8])] = &[
        (b"user-agent", b"curl/8"),
        (b"x-internal-a", b"1"),
        (b"X-Bot-Score", b"forged"),
        (b"x_bot_score", b"forged"),
        (b"X-Internal-A", b"2"),
    ];
    let g = Given {
        scores: Some(&[0.75, 0.25]),
        ..Given::default()
    };
    let e = run_one(&loc, headers, b"/p?q", Some(g), Job::Access, &mut scratch);
    assert_eq!(e.action, Action::Block);
    assert_eq!(e.exit, Exit::Status(429));
    // The internal name once, the other spelling of the score header; the
    // exact spelling is left to the score header's setting.
    assert_eq!(e.clear, [1, 3]);
    assert_eq!(e.matched, 2);
    let (name, value) = e.set_header.unwrap();
    assert_eq!((name, text(value)), ("X-Bot-Score", "bot=0.75; spoof=0.25"));
    let vars: Vec<(&str, &str)> = e.vars.iter().map(|(n, v)| (text(n), text(v))).collect();
    assert_eq!(
        vars,
        [
            ("edgeguard_bot", "0.75"),
            ("edgeguard_spoof", "0.25"),
            ("edgeguard_action", "block")
        ]
    );
    let (line, level) = e.line.unwrap();
    assert_eq!(level, 5);
    assert_eq!(
        text(line),
        "edgeguard action=block model=bot score=0.750000 threshold=0.500000 client=192.0.2.10 method=GET uri=\"/p?q\""
    );
    assert_eq!(e.flagged, Some((0, 0.5)));
}

#[test]
fn an_unflagged_unscored_request_only_strips() {
    let loc = given_location(r#"{"mode": "block", "vars": true}"#);
    let mut scratch = Scratch::new();
    let headers: &[(&[u8], &[u8])] = &[(b"x-user-id", b"1"), (b"X-Bot-Score", b"f")];
    let e = run_one(
        &loc,
        headers,
        b"/",
        Some(Given::default()),
        Job::Access,
        &mut scratch,
    );
    assert_eq!(e.action, Action::Pass);
    assert_eq!(e.exit, Exit::Continue);
    assert_eq!(e.clear, [0, 1], "unscored: every spelling is removed");
    assert!(e.set_header.is_none() && e.vars.is_empty() && e.line.is_none());
}

/// What replay reported as `pass` and nginx answered with 503.
#[test]
fn unscored_under_fail_closed_is_unavailable_in_every_caller() {
    let loc = given_location(r#"{"models": {"bot": "b.json"}, "fail_closed": true, "vars": true}"#);
    let mut scratch = Scratch::new();
    let e = run_one(
        &loc,
        &[],
        b"/",
        Some(Given::default()),
        Job::Access,
        &mut scratch,
    );
    assert_eq!((e.action, e.exit), (Action::Unavailable, Exit::Status(503)));
    assert!(e.vars.is_empty() && e.line.is_none());
    // Replay's configuration, whose scorer is asked and fails: the same.
    let cfg = config(r#"{"models": {"bot": "models/bot.json"}, "fail_closed": true}"#);
    let mut scratch = Scratch::decisions_only();
    let e = run_one(cfg.location(), &[], b"/", None, Job::Access, &mut scratch);
    assert!(
        e.scores.is_some() && e.action != Action::Unavailable,
        "scored: the scorer works"
    );
    let none = config(r#"{"fail_closed": true}"#);
    let e = run_one(none.location(), &[], b"/", None, Job::Access, &mut scratch);
    assert_eq!(
        e.action,
        Action::Pass,
        "no models configured: nothing failed"
    );
}

#[test]
fn names_nginx_cannot_remove_refuse_the_request() {
    let loc = given_location(r#"{"mode": "log", "log_level": 6}"#);
    let mut scratch = Scratch::new();
    let headers: &[(&[u8], &[u8])] = &[(b"x-internal-(a", b"1"), (b"x-user-id", b"1")];
    for job in [Job::Access, Job::Strip, Job::StripList] {
        let e = run_one(&loc, headers, b"/u", None, job, &mut scratch);
        assert_eq!(
            (e.action, e.exit),
            (Action::Refused, Exit::Status(400)),
            "{job:?}"
        );
        assert!(e.clear.is_empty(), "nothing is removed");
        let (line, level) = e.line.unwrap();
        assert_eq!(level, 6);
        assert_eq!(
            text(line),
            "edgeguard action=refused status=400 internal_left=1 reason=\"header names that are not \
             RFC 9110 tokens, which ngx.req.clear_header cannot remove\" client=192.0.2.10 method=GET uri=\"/u\""
        );
    }
    // Another engine's count of them refuses too, naming its count.
    let g = Given {
        removed: 3,
        unremovable: 2,
        ..Given::default()
    };
    let e = run_one(&loc, &[], b"/u", Some(g), Job::Access, &mut scratch);
    assert_eq!(
        (e.action, e.matched, e.unremovable),
        (Action::Refused, 3, 2)
    );
}

#[test]
fn strip_jobs_strip_and_decide_nothing() {
    let loc = given_location(r#"{"mode": "block"}"#);
    let mut scratch = Scratch::new();
    let headers: &[(&[u8], &[u8])] = &[(b"x-user-id", b"1"), (b"x-bot-score", b"f")];
    let e = run_one(&loc, headers, b"/", None, Job::Strip, &mut scratch);
    assert_eq!(
        (e.action, e.clear, e.matched),
        (Action::Pass, &[0, 1][..], 1)
    );
    let e = run_one(&loc, headers, b"/", None, Job::StripList, &mut scratch);
    assert_eq!(e.clear, [0], "a subrequest keeps its parent's score header");
    assert!(e.scores.is_none() && e.line.is_none());
}

#[test]
fn given_scores_must_be_one_per_model() {
    let loc = given_location("{}");
    let mut scratch = Scratch::new();
    let req = Request::new(b"GET", b"/", 11, b"", &[], None).given(Given {
        scores: Some(&[0.1]),
        ..Given::default()
    });
    assert_eq!(
        run(&loc, &req, Job::Access, NOW, &mut scratch).unwrap_err(),
        Misuse::ScoreCount
    );
}

fn challenge_config(extra: &str) -> Config {
    config(&format!(
        r#"{{"models": {{"bot": "models/bot.json"}}, "thresholds": {{"bot": 0.0}},
            "mode": "challenge", "challenge_secret": "tests/fixtures/challenge/secret",
            "verified_bots": "tests/fixtures/verified/bots.json", "vars": true {extra}}}"#
    ))
}

#[test]
fn a_flagged_navigation_gets_the_page_and_an_answer_its_cookie() {
    let cfg = challenge_config("");
    let loc = cfg.location();
    let mut scratch = Scratch::new();
    let nav: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME), (b"sec-fetch-mode", b"navigate")];
    let e = run_one(loc, nav, b"/doc", None, Job::Access, &mut scratch);
    assert_eq!(e.action, Action::Challenge);
    let Exit::Page {
        status,
        content_type,
        body,
        ..
    } = e.exit
    else {
        panic!("{:?}", e.exit)
    };
    assert_eq!((status, content_type), (403, "text/html; charset=utf-8"));
    assert!(text(body).contains("/.edgeguard/challenge"));
    let headers: Vec<_> = e.exit.headers().map(|(n, v)| (n, text(v))).collect();
    let csp = loc.policy().challenge().unwrap().pages().csp();
    assert_eq!(
        headers,
        [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Cache-Control", "no-store"),
            ("X-Robots-Tag", "noindex"),
            ("Content-Security-Policy", csp)
        ]
    );
    let vars: Vec<&str> = e.vars.iter().map(|(n, _)| text(n)).collect();
    assert_eq!(
        vars,
        [
            "edgeguard_bot",
            "edgeguard_action",
            "edgeguard_time",
            "edgeguard_verified_bot"
        ]
    );
    let time = e
        .vars
        .iter()
        .find(|(n, _)| *n == b"edgeguard_time")
        .unwrap()
        .1;
    assert_eq!(text(time), NOW.to_string());

    // A wrong answer: the block status and the reason.
    let e = run_one(
        loc,
        &[(b"user-agent", CHROME)],
        b"/.edgeguard/challenge?n=x&c=1&r=/doc",
        None,
        Job::Access,
        &mut scratch,
    );
    assert_eq!((e.action, e.exit), (Action::Answer, Exit::Status(403)));
    assert!(e.vars.is_empty() && e.set_header.is_none());
    let (line, _) = e.line.unwrap();
    assert!(text(line).starts_with("edgeguard challenge=failed reason=malformed client=192.0.2.10"));

    // A solved one: the cookie and a redirect back.
    let ch = loc.policy().challenge().unwrap();
    let binding = ch.binding("192.0.2.10".parse().ok(), CHROME, None);
    let nonce = ch.nonce(&binding, ch.difficulty, 0, NOW);
    let counter = (0u64..)
        .find(|c| {
            challenge::leading_zero_bits(&nonce, c.to_string().as_bytes())
                >= u32::from(ch.difficulty)
        })
        .unwrap();
    let uri = format!(
        "/.edgeguard/challenge?n={}&c={counter}&r=/doc",
        std::str::from_utf8(&nonce).unwrap()
    );
    let e = run_one(
        loc,
        &[(b"user-agent", CHROME)],
        uri.as_bytes(),
        None,
        Job::Access,
        &mut scratch,
    );
    let Exit::Redirect {
        status,
        location,
        set_cookie,
    } = e.exit
    else {
        panic!("{:?}", e.exit)
    };
    // Through the return hop, which counts the attempt.
    assert_eq!(status, 303);
    assert!(text(location).starts_with("/.edgeguard/challenge?a="));
    assert!(text(location).ends_with("&r=%2Fdoc"), "{}", text(location));
    assert!(text(set_cookie).starts_with("edgeguard_clearance="));
    assert!(!text(set_cookie).contains("Secure"), "plain HTTP");
    assert_eq!(e.answer, Some(AnswerResult::Solved));
    let (line, _) = e.line.unwrap();
    assert_eq!(
        text(line),
        format!("edgeguard challenge=solved client=192.0.2.10 method=GET uri=\"{uri}\"")
    );
}

#[test]
fn a_verified_bot_gets_its_variables_and_line() {
    let cfg = challenge_config("");
    let mut scratch = Scratch::new();
    let h = [Header::new(b"user-agent", GOOGLEBOT)];
    let req = Request::new(b"GET", b"/", 11, b"192.0.2.70", &h, None);
    let e = run(cfg.location(), &req, Job::Access, NOW, &mut scratch).unwrap();
    assert_eq!(e.action, Action::Verified);
    let bot = e
        .vars
        .iter()
        .find(|(n, _)| *n == b"edgeguard_verified_bot")
        .unwrap()
        .1;
    assert_eq!(text(bot), "Googlebot");
    assert!(text(e.line.unwrap().0).ends_with(" bot=Googlebot verdict=verified"));
}

#[test]
fn replay_reads_decisions_without_texts() {
    let cfg = challenge_config("");
    let mut scratch = Scratch::decisions_only();
    let nav: &[(&[u8], &[u8])] = &[(b"user-agent", CHROME), (b"sec-fetch-mode", b"navigate")];
    let e = run_one(cfg.location(), nav, b"/", None, Job::Access, &mut scratch);
    assert_eq!(e.action, Action::Challenge);
    assert!(e.line.is_none() && e.set_header.is_none() && e.vars.is_empty());
    assert!(e.scores.is_some());
}

use crate::challenge;
use crate::metrics::AnswerResult;
