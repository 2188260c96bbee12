//! The per-request parts of the challenge and the verified bots allocate
//! nothing: verifying a clearance cookie (valid, forged, expired, other
//! address, in a 10 KB Cookie header), looking an address up among 10 000+
//! bot prefixes, and a whole `decide_request` with both configured, through
//! `edgeguard_location_run` counting into a metrics registry, a failed
//! answer included. dhat
//! counts every heap block while they run; it allows one profiler at a
//! time, so every check lives in one test, without libtest's threads.

use std::net::IpAddr;
use std::path::Path;

use edgeguard::challenge::{
    Answer, Clearance, PageInput, Problem, ProblemInput, Proof, Rejection, Returned, State,
    LOCATION_CAP, MAX_RETURN, NONCE_TTL, PAGE_CAP, PROBLEM_CAP, SET_COOKIE_CAP,
};
use edgeguard::features::{Request, TlsFacts};
use edgeguard::ffi::config::edgeguard_config_new;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::location::*;
use edgeguard::ffi::metrics::*;
use edgeguard::ffi::scorer::edgeguard_request;
use edgeguard::ffi::{edgeguard_header, edgeguard_str};
use edgeguard::headers::Header;
use edgeguard::load::Config;
use edgeguard::outcome::Outcome;
use edgeguard::tls::Family;
use edgeguard::verified::{PrefixSetBuilder, Verdict};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const NOW: u64 = 1_800_000_000;
const CHROME: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const GOOGLEBOT: &[u8] =
    b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

fn main() {
    per_request_work_does_not_allocate();
    println!("challenge_alloc: 1 passed, 0 failed");
}

fn per_request_work_does_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cfg = Config::parse(
        "t.json",
        root,
        br#"{"models": {"bot": "models/bot.json"}, "mode": "challenge",
            "challenge_secret": "tests/fixtures/challenge/secret",
            "verified_bots": "tests/fixtures/verified/bots.json"}"#,
    )
    .unwrap();
    let policy = cfg.policy();
    let ch = policy.challenge().unwrap();
    let addr: IpAddr = "192.0.2.10".parse().unwrap();
    let good = ch.mint_cookie(&ch.binding(Some(addr), CHROME, None), Proof::Work, 16, NOW);
    let cookie = format!(
        "edgeguard_clearance={}",
        std::str::from_utf8(&good).unwrap()
    );
    let mut forged = cookie.clone().into_bytes();
    let last = forged.len() - 2;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let big = format!("{}; {cookie}", "junk=1".repeat(1700));
    let mut bots_set = PrefixSetBuilder::default();
    for i in 0..10_000u32 {
        bots_set.add(IpAddr::V4((0x0a00_0000 + i * 256).into()), 24);
        bots_set.add(
            IpAddr::V6((0x2001_0db8_u128 << 96 | u128::from(i) << 64).into()),
            64,
        );
    }
    let bots_set = bots_set.build();
    let probes: Vec<IpAddr> = [
        "10.0.7.9",
        "10.200.0.1",
        "2001:db8:0:1f::1",
        "2001:db9::1",
        "::ffff:10.0.0.1",
    ]
    .iter()
    .map(|a| a.parse().unwrap())
    .collect();
    let headers = |c: &'static [u8], ua: &'static [u8]| {
        vec![
            Header::new(b"User-Agent", ua),
            Header::new(b"Sec-Fetch-Mode", b"navigate"),
            Header::new(b"Cookie", c),
        ]
    };
    let leak = |s: String| -> &'static [u8] { Box::leak(s.into_bytes().into_boxed_slice()) };
    let (cookie_s, forged_s, big_s) = (
        leak(cookie.clone()),
        leak(String::from_utf8(forged).unwrap()),
        leak(big),
    );
    let cases = [
        (
            headers(cookie_s, CHROME),
            addr,
            Clearance::Accepted(Proof::Work),
        ),
        (
            headers(forged_s, CHROME),
            addr,
            Clearance::Rejected(Rejection::Mac),
        ),
        (
            headers(big_s, CHROME),
            addr,
            Clearance::Accepted(Proof::Work),
        ),
        (
            headers(cookie_s, CHROME),
            "192.0.3.10".parse().unwrap(),
            Clearance::Rejected(Rejection::Address),
        ),
        (
            headers(cookie_s, b"curl/8.5.0"),
            addr,
            Clearance::Rejected(Rejection::UserAgent),
        ),
        (
            headers(cookie_s, GOOGLEBOT),
            "192.0.2.70".parse().unwrap(),
            Clearance::Rejected(Rejection::UserAgent),
        ),
    ];
    let bots = policy.verified_bots().unwrap();
    let scores = [0.99];

    // The one FFI call per request, edgeguard_location_run, with a challenge
    // and verified bots configured (no list, no models: the cookie and the
    // bot claim are what it judges).
    let opts = format!(
        r#"{{"mode": "challenge", "challenge_secret": "{0}/tests/fixtures/challenge/secret",
            "verified_bots": "{0}/tests/fixtures/verified/bots.json"}}"#,
        root.display()
    );
    let (mut c_cfg, mut c_policy) = (std::ptr::null_mut(), std::ptr::null_mut());
    let null = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            edgeguard_config_new(
                opts.as_ptr(),
                opts.len(),
                std::ptr::null(),
                std::ptr::null(),
                &mut c_cfg,
                null,
                0,
            )
        },
        R::Ok
    );
    assert_eq!(
        unsafe {
            edgeguard_location_new(
                c_cfg,
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                0,
                std::ptr::null(),
                &mut c_policy,
                null,
                0,
            )
        },
        R::Ok
    );
    let c_headers: Vec<Vec<edgeguard_header>> = cases
        .iter()
        .map(|(h, _, _)| {
            h.iter()
                .map(|h| edgeguard_header::new(h.name(), h.value()))
                .collect()
        })
        .collect();
    let c_addrs: Vec<String> = cases.iter().map(|(_, a, _)| a.to_string()).collect();
    // The decision line of a verified or fake bot is written too, into the
    // scratch made here.
    let mut scratch = std::ptr::null_mut();
    assert_eq!(unsafe { edgeguard_scratch_new(&mut scratch) }, R::Ok);
    let mut out: edgeguard_effects = unsafe { std::mem::zeroed() };
    // The configuration's challenge and verified bots give the series.
    let mut metrics = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            edgeguard_metrics_new(
                c_cfg,
                std::ptr::null(),
                0,
                std::ptr::null(),
                0,
                &mut metrics,
                null,
                0,
            )
        },
        R::Ok
    );
    let answer_req = edgeguard_request {
        method: edgeguard_str::from_slice(b"GET"),
        uri: edgeguard_str::from_slice(b"/.edgeguard/challenge?n=forged&c=1&r=/"),
        client_addr: edgeguard_str::from_slice(b"192.0.2.10"),
        http_version: 11,
        headers: c_headers[0].as_ptr(),
        headers_len: c_headers[0].len(),
        tls: std::ptr::null(),
        request_id: edgeguard_str::EMPTY,
        peer_addr: edgeguard_str::EMPTY,
    };
    // An answer whose nonce expired in the browser (a tab left open): a
    // fresh page, written by the same call.
    let stale = ch.nonce(
        &ch.binding(Some(addr), CHROME, None),
        16,
        0,
        NOW - NONCE_TTL - 1,
    );
    let stale_uri = leak(format!(
        "/.edgeguard/challenge?n={}&c=0&r=%2Fcart",
        std::str::from_utf8(&stale).unwrap()
    ));
    let stale_req = edgeguard_request {
        uri: edgeguard_str::from_slice(stale_uri),
        ..answer_req
    };
    // A fake Googlebot's form POST: flagged, never the page: a problem
    // document with the request's id, written by the same call.
    let post_req = edgeguard_request {
        method: edgeguard_str::from_slice(b"POST"),
        uri: edgeguard_str::from_slice(b"/checkout"),
        request_id: edgeguard_str::from_slice(b"0123456789abcdef0123456789abcdef"),
        headers: c_headers[5].as_ptr(),
        headers_len: c_headers[5].len(),
        ..answer_req
    };
    let slots_n = unsafe { edgeguard_metrics_len(metrics) };
    let (mut slots, mut deltas, mut values) =
        (vec![0u32; slots_n], vec![0.0; slots_n], vec![0.0; slots_n]);
    let mut exposition = vec![0u8; unsafe { edgeguard_metrics_text_room(metrics) }];

    // The pieces the request pipeline calls for a challenged request: the
    // page (localized, with the no-JavaScript ticket), problem+json, an
    // answer with the return hop, the hop, a ticket, a TLS-bound cookie.
    let mut nojs = ch.clone();
    nojs.nojs_wait = Some(5);
    let client = nojs.binding(Some(addr), CHROME, None);
    let mut page = vec![0u8; PAGE_CAP];
    let mut problem = vec![0u8; PROBLEM_CAP];
    let (mut sc, mut loc, mut back) = (
        [0u8; SET_COOKIE_CAP],
        [0u8; LOCATION_CAP],
        [0u8; MAX_RETURN],
    );
    let mut easy = nojs.clone();
    easy.difficulty = 0;
    let zero_nonce = easy.nonce(&client, 0, 0, NOW);
    let answer_uri = format!(
        "/.edgeguard/challenge?n={}&c=0&r=%2Fcart%3Fx%3D1",
        std::str::from_utf8(&zero_nonce).unwrap()
    );
    let ticket = nojs.ticket(&client, 0, NOW).unwrap();
    let ticket_uri = format!(
        "/.edgeguard/challenge?t={}&r=%2F",
        std::str::from_utf8(&ticket).unwrap()
    );
    let page_headers = [
        Header::new(b"Host", b"shop.example"),
        Header::new(b"User-Agent", CHROME),
        Header::new(b"Accept-Language", b"pt-BR,pt;q=0.9,en;q=0.8"),
    ];
    let page_req = Request::new(b"GET", b"/cart?x=1", 11, b"", &page_headers);
    let chrome_ja4: &[u8] = b"t13d1516h2_8daaf6152771_02713d6af862";
    let python_ja4: &[u8] = b"t13d5911h1_a33745022dd6_dd5ea6d2a4c8";
    let tls_client = ch.binding(
        Some(addr),
        CHROME,
        TlsFacts::new(chrome_ja4, Family::Boringssl),
    );
    let tls_cookie = format!(
        "edgeguard_clearance={}",
        std::str::from_utf8(&ch.mint_cookie(&tls_client, Proof::Work, 16, NOW)).unwrap()
    );
    let tls_headers = [
        Header::new(b"User-Agent", CHROME),
        Header::new(b"Cookie", tls_cookie.as_bytes()),
    ];

    let before = dhat::HeapStats::get();
    let mut seen = 0usize;
    for _ in 0..50 {
        let mut input = PageInput::for_request(&page_req, 16);
        input.request_id = b"5f3ca1b2c3d4e5f60718293a4b5c6d7e";
        let n = nojs.page(&input, &client, NOW, &mut page).unwrap();
        assert!(page[..n].windows(9).any(|w| w == b"lang=\"pt\""));
        input.state = State::CookiesNeeded;
        assert!(nojs.page(&input, &client, NOW, &mut page).is_ok());
        let p = ProblemInput {
            problem: Problem::ChallengeRequired,
            status: 403,
            clearance: Clearance::Rejected(Rejection::Expired),
            request_id: b"5f3ca1b2c3d4e5f60718293a4b5c6d7e",
            return_to: b"/cart?x=1",
            retry_after: None,
            base: "",
        };
        assert!(nojs.problem(&p, &mut problem).unwrap() > 100);
        let a = easy
            .answer(
                answer_uri.as_bytes(),
                &client,
                NOW,
                true,
                true,
                &mut sc,
                &mut loc,
            )
            .unwrap();
        let Answer::Solved { location, .. } = a else {
            panic!("{a:?}")
        };
        let r = easy
            .returning(&loc[..location], &client, NOW, &mut back)
            .unwrap();
        assert!(matches!(r, Returned::Back { attempts: 1, .. }));
        let t = nojs
            .answer(
                ticket_uri.as_bytes(),
                &client,
                NOW + 6,
                true,
                false,
                &mut sc,
                &mut loc,
            )
            .unwrap();
        assert!(
            matches!(
                t,
                Answer::Solved {
                    proof: Proof::Wait,
                    ..
                }
            ),
            "{t:?}"
        );
        for (ja4, want) in [
            (chrome_ja4, Clearance::Accepted(Proof::Work)),
            (python_ja4, Clearance::Rejected(Rejection::Tls)),
        ] {
            let req = Request::new(b"GET", b"/", 11, b"", &tls_headers)
                .with_tls(TlsFacts::new(ja4, Family::Boringssl));
            assert_eq!(ch.clearance(&req, Some(addr), NOW), want);
        }
        seen += 1;
    }

    for _ in 0..50 {
        for (h, a, want) in &cases {
            let req = Request::new(b"GET", b"/", 11, b"", h);
            assert_eq!(ch.clearance(&req, Some(*a), NOW + 1), *want);
            let later = ch.clearance(&req, Some(*a), NOW + 86_401);
            assert!(matches!(later, Clearance::Rejected(_)));
            let d = policy
                .decide_request(Some(&scores), &req, Some(*a), NOW, Default::default)
                .unwrap();
            let want_action = match (h[0].value(), want) {
                (GOOGLEBOT, _) => Outcome::Verified,
                (_, Clearance::Accepted(_)) => Outcome::Cleared,
                _ => Outcome::Challenge,
            };
            assert_eq!(d.action, want_action);
            seen += 1;
        }
        for (i, (_, _, want)) in cases.iter().enumerate() {
            let r = edgeguard_request {
                method: edgeguard_str::from_slice(b"GET"),
                uri: edgeguard_str::from_slice(b"/"),
                client_addr: edgeguard_str::from_slice(c_addrs[i].as_bytes()),
                http_version: 11,
                headers: c_headers[i].as_ptr(),
                headers_len: c_headers[i].len(),
                tls: std::ptr::null(),
                request_id: edgeguard_str::EMPTY,
                peer_addr: edgeguard_str::EMPTY,
            };
            let rc = unsafe {
                edgeguard_location_run(
                    c_policy,
                    metrics,
                    &r,
                    std::ptr::null(),
                    0,
                    NOW as i64,
                    scratch,
                    &mut out,
                )
            };
            assert_eq!(rc, R::Ok);
            let accepted = out.clearance == edgeguard_clearance::Accepted;
            assert_eq!(accepted, want.is_accepted(), "case {i}");
            seen += usize::from(out.bot != edgeguard_bot::None);
        }
        let rc = unsafe {
            edgeguard_location_run(
                c_policy,
                metrics,
                &answer_req,
                std::ptr::null(),
                0,
                NOW as i64,
                scratch,
                &mut out,
            )
        };
        assert_eq!(rc, R::Ok);
        assert_eq!((out.action, out.status), (Outcome::Answer, 403));
        assert!(unsafe { out.line.as_bytes() }
            .starts_with(b"edgeguard challenge=failed reason=malformed "));
        let rc = unsafe {
            edgeguard_location_run(
                c_policy,
                metrics,
                &stale_req,
                std::ptr::null(),
                0,
                NOW as i64,
                scratch,
                &mut out,
            )
        };
        assert_eq!(rc, R::Ok);
        assert_eq!((out.action, out.status), (Outcome::Answer, 403));
        assert!(unsafe { out.line.as_bytes() }
            .starts_with(b"edgeguard challenge=failed reason=expired "));
        assert!(unsafe { out.body.as_bytes() }
            .windows(6)
            .any(|w| w == b"{\"n\":\""));
        let rc = unsafe {
            edgeguard_location_run(
                c_policy,
                metrics,
                &post_req,
                std::ptr::null(),
                0,
                NOW as i64,
                scratch,
                &mut out,
            )
        };
        assert_eq!(rc, R::Ok);
        assert_eq!((out.action, out.status), (Outcome::ChallengeRequired, 403));
        let body = unsafe { out.body.as_bytes() };
        assert!(body.starts_with(b"{\"type\":\"about:blank\""), "{body:?}");
        assert!(body
            .windows(32)
            .any(|w| w == b"0123456789abcdef0123456789abcdef"));
        for p in &probes {
            seen += usize::from(bots_set.contains(*p));
        }
        assert_eq!(
            bots.judge(GOOGLEBOT, Some("2001:db8:4801::9".parse().unwrap())),
            Some(Verdict::Verified(0))
        );
        assert_eq!(
            bots.judge(GOOGLEBOT, Some("203.0.113.1".parse().unwrap())),
            Some(Verdict::Fake(0))
        );
        assert_eq!(
            bots.judge(CHROME, Some("192.0.2.70".parse().unwrap())),
            None
        );
    }
    let (mut drained, mut text_len) = (0, 0);
    unsafe {
        let rc = edgeguard_metrics_drain(
            metrics,
            slots.as_mut_ptr(),
            deltas.as_mut_ptr(),
            slots_n,
            &mut drained,
        );
        assert_eq!(rc, R::Ok);
        for i in 0..drained {
            values[slots[i] as usize] += deltas[i];
        }
        let rc = edgeguard_metrics_text(
            metrics,
            values.as_ptr(),
            slots_n,
            exposition.as_mut_ptr(),
            exposition.len(),
            &mut text_len,
        );
        assert_eq!(rc, R::Ok);
    }
    let after = dhat::HeapStats::get();
    assert_eq!(seen, 50 * (1 + 6 + 1 + 3), "every case and probe ran");
    // 50 rounds of the six requests: two accepted cookies, a forged one,
    // another address, another User-Agent twice (the Googlebot one comes
    // from its prefixes: verified); 50 malformed answers and 50 expired
    // ones, each a request too (the one call counts an answer as nginx
    // counted it).
    let text = std::str::from_utf8(&exposition[..text_len]).unwrap();
    for want in [
        "edgeguard_requests_total{engine=\"rust\"} 450\n",
        "edgeguard_decisions_total{action=\"answer\"} 100\n",
        "edgeguard_clearances_total{result=\"accepted\"} 100\n",
        "edgeguard_clearances_total{result=\"mac\"} 50\n",
        "edgeguard_clearances_total{result=\"address\"} 50\n",
        // The POST carries the Chrome cookie with the Googlebot UA too.
        "edgeguard_clearances_total{result=\"user_agent\"} 150\n",
        "edgeguard_verified_bots_total{bot=\"Googlebot\",result=\"verified\"} 50\n",
        "edgeguard_challenges_total{result=\"failed\"} 100\n",
        "edgeguard_challenges_total{result=\"problem\"} 50\n",
        "edgeguard_challenge_failures_total{reason=\"malformed\"} 50\n",
        "edgeguard_challenge_failures_total{reason=\"expired\"} 50\n",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    unsafe {
        edgeguard_metrics_free(metrics);
        edgeguard_scratch_free(scratch);
        edgeguard_location_free(c_policy);
    }
    assert_eq!(
        after.total_blocks, before.total_blocks,
        "cookie verification, prefix lookups, decide_request, pages, problems, answers, returns or tickets allocated"
    );
}
