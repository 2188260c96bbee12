//! The client memory in the gate: a crawl is challenged (never blocked on
//! behaviour alone), a browser's visit is not, nor a verified bot; the
//! cookie goes out on navigations and counts when it comes back.

use std::path::Path;

use super::super::*;
use crate::config::Options;
use crate::features::reasons::Id;
use crate::features::Grade;
use crate::headers::Header;
use crate::outcome::Outcome;

const NOW: u64 = 1_800_000_000;
const CHROME: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const GOOGLEBOT: &[u8] =
    b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const HTML: &[u8] = b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// A location of one given model ("bot", threshold 0.5) with a 1 MiB
/// client memory of its own, and `extra` options.
fn location(extra: &str) -> Location {
    let json = format!(
        r#"{{"client_memory": "1m", "challenge_secret": "tests/fixtures/challenge/secret",
            "verified_bots": "nginx-conf/verified-bots.json" {extra}}}"#
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Options::configure("t", Some(root), json.as_bytes())
        .and_then(|o| o.with_private_memory("t"))
        .unwrap();
    Location::new(&o, Models::Given(&[("bot", Some(0.5))]), None).unwrap()
}

/// One request from `client` with User-Agent `ua`, accepting `accept`,
/// scored 0.1 (the model does not flag it), `ms` after `NOW`.
#[allow(clippy::too_many_arguments)]
fn run_at<'s>(
    loc: &'s Location,
    scratch: &'s mut Scratch,
    client: &[u8],
    ua: &[u8],
    uri: &[u8],
    accept: &[u8],
    cookie: Option<&[u8]>,
    ms: u64,
) -> Effects<'s> {
    run_with(loc, scratch, client, ua, uri, accept, cookie, &[], ms)
}

/// [`run_at`] with `extra` headers after the others.
#[allow(clippy::too_many_arguments)]
fn run_with<'s>(
    loc: &'s Location,
    scratch: &'s mut Scratch,
    client: &[u8],
    ua: &[u8],
    uri: &[u8],
    accept: &[u8],
    cookie: Option<&[u8]>,
    extra: &[Header<'_>],
    ms: u64,
) -> Effects<'s> {
    let mut h = vec![
        Header::new(b"host", b"shop.example"),
        Header::new(b"user-agent", ua),
        Header::new(b"accept", accept),
    ];
    if let Some(c) = cookie {
        h.push(Header::new(b"cookie", c));
    }
    h.extend_from_slice(extra);
    let now_ms = NOW * 1000 + ms;
    let g = Given {
        scores: Some(&[0.1]),
        ..Given::default()
    };
    let req = Incoming::new(b"GET", uri, 11, client, &h, None)
        .given(g)
        .with_time_ms(now_ms);
    run(loc, &req, Job::Access, now_ms / 1000, scratch).unwrap()
}

fn page(i: usize) -> Vec<u8> {
    format!("/article/{i}").into_bytes()
}

#[test]
fn a_crawl_is_challenged_never_blocked_even_in_block_mode() {
    for mode in ["block", "challenge", "log", "off"] {
        let loc = location(&format!(r#", "mode": "{mode}""#));
        let mut scratch = Scratch::new();
        for i in 0..12 {
            let e = run_at(
                &loc,
                &mut scratch,
                b"198.51.100.7",
                CHROME,
                &page(i),
                HTML,
                None,
                i as u64 * 2000,
            );
            let seen = e.clients.unwrap();
            assert_eq!(seen.host.navigations, i as u32 + 1);
            if i < 9 {
                assert_eq!(e.action, Outcome::Pass, "{mode} {i}");
                assert!(!e.reasons.has(Id::BehaviourCrawl));
                continue;
            }
            assert_eq!(e.action, Outcome::Challenge, "{mode} {i}");
            assert!(e.reasons.has(Id::BehaviourCrawl), "{mode}");
            assert_eq!(e.grade, Grade::Ambiguous);
            assert_eq!(e.exit.status(), 403, "the challenge page");
        }
    }
}

#[test]
fn behaviour_log_logs_and_a_request_that_must_not_get_the_page_is_logged() {
    let loc = location(r#", "mode": "block", "behaviour": "log", "vars": true"#);
    let mut scratch = Scratch::new();
    let mut last = Outcome::Pass;
    for i in 0..10 {
        last = run_at(
            &loc,
            &mut scratch,
            b"198.51.100.8",
            CHROME,
            &page(i),
            HTML,
            None,
            0,
        )
        .action;
    }
    assert_eq!(last, Outcome::Log);
    // A `fetch()` after ten navigations is the client's first
    // sub-resource: no longer a crawl.
    let loc = location(r#", "mode": "block""#);
    for i in 0..10 {
        run_at(
            &loc,
            &mut scratch,
            b"198.51.100.9",
            CHROME,
            &page(i),
            HTML,
            None,
            0,
        );
    }
    let e = run_at(
        &loc,
        &mut scratch,
        b"198.51.100.9",
        CHROME,
        b"/api/x",
        b"application/json",
        None,
        0,
    );
    assert_eq!(e.action, Outcome::Pass);
    let off = location(r#", "behaviour": "off""#);
    for i in 0..12 {
        let e = run_at(
            &off,
            &mut scratch,
            b"198.51.100.10",
            CHROME,
            &page(i),
            HTML,
            None,
            0,
        );
        assert_eq!(e.action, Outcome::Pass);
        assert_eq!(e.clients.unwrap().host.navigations, i as u32 + 1);
    }
}

#[test]
fn a_browser_visit_a_verified_bot_and_another_address_are_not_flagged() {
    let loc = location(r#", "mode": "block""#);
    let mut scratch = Scratch::new();
    for i in 0..30 {
        let e = run_at(
            &loc,
            &mut scratch,
            b"203.0.113.5",
            CHROME,
            &page(i),
            HTML,
            None,
            0,
        );
        assert_eq!(e.action, Outcome::Pass, "page {i}");
        for (uri, accept) in [
            (&b"/site.css"[..], &b"text/css,*/*;q=0.1"[..]),
            (b"/logo.png", b"image/avif,image/webp,*/*"),
        ] {
            let e = run_at(
                &loc,
                &mut scratch,
                b"203.0.113.5",
                CHROME,
                uri,
                accept,
                None,
                0,
            );
            assert_eq!(e.action, Outcome::Pass);
        }
    }
    // Googlebot from its published prefix (the example list's).
    for i in 0..30 {
        let e = run_at(
            &loc,
            &mut scratch,
            b"192.0.2.10",
            GOOGLEBOT,
            &page(i),
            HTML,
            None,
            0,
        );
        assert_eq!(e.action, Outcome::Verified);
        assert!(!e.reasons.has(Id::BehaviourCrawl));
    }
    // The same head from another /24 is another client.
    let e = run_at(
        &loc,
        &mut scratch,
        b"203.0.114.5",
        CHROME,
        &page(0),
        HTML,
        None,
        0,
    );
    assert_eq!(e.clients.unwrap().network.navigations, 1);
}

#[test]
fn a_crawler_rotating_addresses_in_its_network_is_caught_by_the_network_record() {
    let loc = location(r#", "mode": "challenge""#);
    let mut scratch = Scratch::new();
    let mut actions = Vec::new();
    for i in 0..10u8 {
        let client = format!("198.51.100.{}", 20 + i);
        let e = run_at(
            &loc,
            &mut scratch,
            client.as_bytes(),
            CHROME,
            &page(i.into()),
            HTML,
            None,
            0,
        );
        let seen = e.clients.unwrap();
        assert_eq!(seen.host.navigations, 1);
        assert_eq!(seen.network.navigations, u32::from(i) + 1);
        actions.push(e.action);
    }
    assert_eq!(actions[8], Outcome::Pass);
    assert_eq!(actions[9], Outcome::Challenge);
}

#[test]
fn the_cookie_goes_out_on_navigations_and_counts_when_it_comes_back() {
    let loc = location(r#", "mode": "block", "client_cookie": true"#);
    let mut scratch = Scratch::new();
    let e = run_at(
        &loc,
        &mut scratch,
        b"203.0.113.6",
        CHROME,
        b"/",
        HTML,
        None,
        0,
    );
    assert_eq!(e.clients.unwrap().cookie, CookieSeen::Issued);
    let set = String::from_utf8(e.set_cookie.to_vec()).unwrap();
    assert!(set.starts_with("edgeguard_v="), "{set}");
    assert!(set.contains("; HttpOnly; SameSite=Lax"), "{set}");
    assert!(!set.contains("Secure"), "plain HTTP");
    let value = set.split(';').next().unwrap().to_owned();
    // A sub-resource gets none.
    let e = run_at(
        &loc,
        &mut scratch,
        b"203.0.113.6",
        CHROME,
        b"/a.css",
        b"text/css",
        None,
        0,
    );
    assert_eq!(e.clients.unwrap().cookie, CookieSeen::None);
    assert!(e.set_cookie.is_empty());
    // Sent back: counted, and the client is no crawler for it.
    for i in 0..12 {
        let cookie = format!("a=1; {value}");
        let e = run_at(
            &loc,
            &mut scratch,
            b"203.0.113.6",
            CHROME,
            &page(i),
            HTML,
            Some(cookie.as_bytes()),
            1000,
        );
        let seen = e.clients.unwrap();
        assert_eq!(seen.cookie, CookieSeen::Returned);
        assert!(e.set_cookie.is_empty());
        assert_eq!(seen.host.cookies_returned, i as u32 + 1);
        assert_eq!(seen.host.cookies_issued, 1);
        assert_eq!(e.action, Outcome::Pass);
    }
    // A forged one is not returned: issued again.
    let e = run_at(
        &loc,
        &mut scratch,
        b"203.0.113.6",
        CHROME,
        b"/",
        HTML,
        Some(b"edgeguard_v=1800000000.0000000000000000"),
        2000,
    );
    assert_eq!(e.clients.unwrap().cookie, CookieSeen::Issued);
    // A crawler that never sends it back is challenged: the challenge
    // page carries the cookie too (it was counted as issued), so a person
    // who solves it comes back with one.
    let mut last = None;
    for i in 0..10 {
        let e = run_at(
            &loc,
            &mut scratch,
            b"198.51.100.50",
            CHROME,
            &page(i),
            HTML,
            None,
            0,
        );
        assert_eq!(e.clients.unwrap().host.cookies_issued, i as u32 + 1);
        last = Some((e.action, e.set_cookie.is_empty()));
    }
    assert_eq!(last, Some((Outcome::Challenge, false)));
}

#[test]
fn a_served_challenge_is_counted_in_the_record() {
    let loc = location(r#", "mode": "challenge""#);
    let mut scratch = Scratch::new();
    for i in 0..11 {
        run_at(
            &loc,
            &mut scratch,
            b"198.51.100.60",
            CHROME,
            &page(i),
            HTML,
            None,
            0,
        );
    }
    let e = run_at(
        &loc,
        &mut scratch,
        b"198.51.100.60",
        CHROME,
        &page(11),
        HTML,
        None,
        0,
    );
    // Two served before this request, counted after each.
    assert_eq!(e.clients.unwrap().host.challenges_served, 2);
    assert_eq!(e.action, Outcome::Challenge);
}

#[test]
fn the_client_variables_carry_the_host_record_and_the_cookie() {
    let loc = location(r#", "vars": true, "client_cookie": true"#);
    let mut scratch = Scratch::new();
    run_at(
        &loc,
        &mut scratch,
        b"203.0.113.7",
        CHROME,
        b"/a.css",
        b"text/css",
        None,
        0,
    );
    let e = run_at(
        &loc,
        &mut scratch,
        b"203.0.113.7",
        CHROME,
        b"/",
        HTML,
        None,
        1500,
    );
    let vars: Vec<(String, String)> = e
        .vars
        .iter()
        .map(|(n, v)| (text(n), text(v)))
        .filter(|(n, _)| n.starts_with("edgeguard_client_"))
        .collect();
    let want = [
        ("edgeguard_client_navigations", "1"),
        ("edgeguard_client_subresources", "1"),
        ("edgeguard_client_paths", "1"),
        ("edgeguard_client_direct", "1"), // no Sec-Fetch-Site, no Referer
        ("edgeguard_client_rate", "1.33"), // 2 requests in 1.5 s
        ("edgeguard_client_cookie", "issued"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(vars, want);
    assert!(e.vars.len() <= crate::ffi::EDGEGUARD_MAX_VARS);
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

#[test]
fn a_request_the_gate_runs_twice_for_counts_once() {
    let loc = location(r#", "mode": "block""#);
    let mut scratch = Scratch::new();
    let h = [
        Header::new(b"user-agent", CHROME),
        Header::new(b"accept", HTML),
    ];
    let mut navigations = |id: &[u8], ms: u64| {
        let now_ms = NOW * 1000 + ms;
        let req = Incoming::new(b"GET", b"/en-us/products/", 11, b"203.0.113.9", &h, None)
            .given(Given {
                scores: Some(&[0.1]),
                ..Given::default()
            })
            .with_time_ms(now_ms)
            .with_request_id(id);
        let e = run(&loc, &req, Job::Access, now_ms / 1000, &mut scratch).unwrap();
        let seen = e.clients.unwrap();
        (seen.host.navigations, seen.network.navigations)
    };
    // nginx's internal redirect to the directory's index.html: the same
    // $request_id twice.
    assert_eq!(navigations(b"0123456789abcdef0123456789abcdef", 0), (1, 1));
    assert_eq!(navigations(b"0123456789abcdef0123456789abcdef", 1), (1, 1));
    assert_eq!(navigations(b"fedcba9876543210fedcba9876543210", 2), (2, 2));
    // No id (a caller that passes none): each run counts.
    assert_eq!(navigations(b"", 3), (3, 3));
    assert_eq!(navigations(b"", 4), (4, 4));
}

/// Documents only, the cookie sent back from the second page on, each
/// page's `Sec-Fetch-Site` and `Referer` as `arrive` says (`ms` apart):
/// the first page the behaviour flags, 1-based (`None`: none of `pages`).
fn first_flag_keeping_the_cookie(
    client: &[u8],
    pages: usize,
    arrive: impl Fn(usize) -> Vec<Header<'static>>,
) -> Option<usize> {
    let loc = location(r#", "mode": "block", "client_cookie": true"#);
    let mut scratch = Scratch::new();
    let e = run_with(
        &loc,
        &mut scratch,
        client,
        CHROME,
        b"/",
        HTML,
        None,
        &arrive(0),
        0,
    );
    assert!(!e.reasons.has(Id::BehaviourCrawl));
    let set = String::from_utf8(e.set_cookie.to_vec()).unwrap();
    let cookie = set.split(';').next().unwrap().to_owned();
    for i in 1..pages {
        let e = run_with(
            &loc,
            &mut scratch,
            client,
            CHROME,
            &page(i),
            HTML,
            Some(cookie.as_bytes()),
            &arrive(i),
            i as u64 * 2000,
        );
        let seen = e.clients.unwrap();
        assert_eq!(seen.host.navigations, i as u32 + 1);
        assert_eq!(seen.cookie, CookieSeen::Returned);
        if e.reasons.has(Id::BehaviourCrawl) {
            // Challenged, never blocked on behaviour alone.
            assert_eq!(e.action, Outcome::Challenge, "page {}", i + 1);
            return Some(i + 1);
        }
        assert_eq!(e.action, Outcome::Pass, "page {}", i + 1);
    }
    None
}

#[test]
fn a_crawler_that_keeps_the_cookie_is_challenged_at_the_count_a_reader_at_twice_it() {
    // A head copied from a typed URL: every page from nowhere, over https
    // (`none`) or plain HTTP (no Sec-Fetch-Site, no Referer).
    let typed = |_| vec![Header::new(b"sec-fetch-site", b"none")];
    assert_eq!(
        first_flag_keeping_the_cookie(b"198.51.100.77", 25, typed),
        Some(10)
    );
    assert_eq!(
        first_flag_keeping_the_cookie(b"198.51.100.78", 25, |_| vec![]),
        Some(10)
    );
    // A reader with a warm cache: typed once, then links of the site.
    let links = |i: usize| match i {
        0 => vec![Header::new(b"sec-fetch-site", b"none")],
        _ => vec![
            Header::new(b"sec-fetch-site", b"same-origin"),
            Header::new(b"referer", b"https://shop.example/article/"),
        ],
    };
    assert_eq!(
        first_flag_keeping_the_cookie(b"198.51.100.79", 25, links),
        Some(20)
    );
    // Plain HTTP: the Referer alone says it.
    let referred = |i: usize| match i {
        0 => vec![],
        _ => vec![Header::new(b"referer", b"http://shop.example/")],
    };
    assert_eq!(
        first_flag_keeping_the_cookie(b"198.51.100.80", 25, referred),
        Some(20)
    );
    // Half the pages from nowhere: not "mostly" links, no room.
    let half = |i: usize| match i % 2 {
        0 => vec![Header::new(b"sec-fetch-site", b"none")],
        _ => vec![Header::new(b"sec-fetch-site", b"same-origin")],
    };
    assert_eq!(
        first_flag_keeping_the_cookie(b"198.51.100.81", 25, half),
        Some(10)
    );
    // The rule on views: the cookie doubles the count for a client whose
    // navigations mostly came from links; one sub-resource or solved
    // challenge keeps any count out.
    let mut v = crate::clients::ClientView {
        navigations: 40,
        cookies_returned: 40,
        ..crate::clients::ClientView::default()
    };
    assert!(super::crawls(&v, 10));
    v.navigations = 19;
    assert!(!super::crawls(&v, 10));
    // Monotone: more navigations from nowhere only take the room away.
    for direct in 0..=19 {
        v.direct_navigations = direct;
        assert_eq!(super::crawls(&v, 10), direct >= 10, "{direct} from nowhere");
    }
    v.direct_navigations = 0;
    v.cookies_returned = 0;
    assert!(super::crawls(&v, 10));
    v.navigations = 9;
    assert!(!super::crawls(&v, 10));
    assert!(super::crawls(&v, 9));
    v.navigations = 1000;
    v.challenges_solved = 1;
    assert!(!super::crawls(&v, 10));
    v.challenges_solved = 0;
    v.subresources_by_class[0] = 1;
    assert!(!super::crawls(&v, 10));
}

#[test]
fn a_logged_cookie_counts_as_returned_only_as_the_recorder_found_it() {
    let loc = location(r#", "client_cookie": true"#);
    let mut scratch = Scratch::new();
    let seen = |scratch: &mut Scratch, cookie: &[u8], client: &[u8]| {
        let h = [
            Header::new(b"user-agent", CHROME),
            Header::new(b"accept", HTML),
            Header::new(b"cookie", cookie),
        ];
        let req = Incoming::new(b"GET", b"/", 11, client, &h, None)
            .from_log()
            .with_time_ms(NOW * 1000);
        run(&loc, &req, Job::Access, NOW, scratch)
            .unwrap()
            .clients
            .unwrap()
            .cookie
    };
    let ok = seen(
        &mut scratch,
        b"edgeguard_v=[client cookie ok]",
        b"192.0.2.1",
    );
    assert_eq!(ok, CookieSeen::Returned);
    // A value the recorder did not find valid (forged, expired, another
    // memory's) is logged as its length: not returned, as nginx judged.
    let redacted = seen(&mut scratch, b"edgeguard_v=[redacted 27]", b"192.0.2.2");
    assert_eq!(redacted, CookieSeen::Issued);
}

#[test]
fn a_rule_before_scoring_sees_this_request_counted() {
    // The stage runs before the rules: a rule reads the counts with this
    // request in them (the third navigation is the third).
    let loc = location(
        r#", "rules": [{"name": "third", "when": {"client.navigations": {"min": 3}}, "action": "challenge"}]"#,
    );
    let mut scratch = Scratch::new();
    let actions: Vec<Outcome> = (0..4)
        .map(|i| {
            run_at(
                &loc,
                &mut scratch,
                b"192.0.2.77",
                CHROME,
                &page(i),
                HTML,
                None,
                i as u64,
            )
            .action
        })
        .collect();
    assert_eq!(
        actions,
        [
            Outcome::Pass,
            Outcome::Pass,
            Outcome::Challenge,
            Outcome::Challenge
        ]
    );
}
