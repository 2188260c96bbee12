use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::headers::Header;

const K1: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const K2: &str = "2222222222222222222222222222222222222222222222222222222222222222";
const NOW: u64 = 1_800_000_000;
const UA: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0 Safari/537.36";

fn challenge(keys: &[&str]) -> Challenge {
    let k = Keys::parse(Path::new("secret"), keys.join("\n").as_bytes()).unwrap();
    Challenge::new(Arc::new(k))
}

fn ip(s: &str) -> Option<IpAddr> {
    Some(s.parse().unwrap())
}

fn clearance(
    c: &Challenge,
    cookie_headers: &[&[u8]],
    addr: &str,
    ua: &[u8],
    now: u64,
) -> Clearance {
    let mut headers = vec![Header::new(b"User-Agent", ua)];
    headers.extend(cookie_headers.iter().map(|v| Header::new(b"Cookie", v)));
    let req = Request::new(b"GET", b"/", 11, addr.as_bytes(), &headers);
    c.clearance(&req, ip(addr), now)
}

fn cookie_for(c: &Challenge, addr: &str, ua: &[u8], now: u64) -> String {
    let token = c.mint_cookie(&c.binding(ip(addr), ua, None), Proof::Work, 16, now);
    format!(
        "edgeguard_clearance={}",
        std::str::from_utf8(&token).unwrap()
    )
}

/// The cookie table, in Rust; tests/e2e/test_challenge.py sends the
/// same table through nginx.
#[test]
fn cookie_table() {
    let c = challenge(&[K1]);
    let good = cookie_for(&c, "192.0.2.10", UA, NOW);
    let token = good.split_once('=').unwrap().1.to_owned();
    let flip = |i: usize| {
        let mut t = token.clone().into_bytes();
        t[i] = if t[i] == b'A' { b'Q' } else { b'A' };
        format!("edgeguard_clearance={}", String::from_utf8(t).unwrap())
    };
    // Bytes 2..10 (the expiry) are characters 2..14 of the text.
    let tampered_expiry = flip(10);
    let tampered_mac = flip(TOKEN_TEXT - 3);
    let big = format!("a={}; {good}", "x".repeat(10 * 1024));
    let many: String = (0..200).map(|i| format!("c{i}=v{i}; ")).collect::<String>() + &good;
    let rotated = challenge(&[K2, K1]);
    let removed = challenge(&[K2]);
    let expired_ttl = NOW + u64::from(c.ttl);
    type Case<'a> = (
        &'a str,
        &'a Challenge,
        String,
        &'a str,
        &'a [u8],
        u64,
        Clearance,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "valid",
            &c,
            good.clone(),
            "192.0.2.10",
            UA,
            NOW + 10,
            Clearance::Accepted(Proof::Work),
        ),
        (
            "same /24",
            &c,
            good.clone(),
            "192.0.2.200",
            UA,
            NOW,
            Clearance::Accepted(Proof::Work),
        ),
        (
            "expired",
            &c,
            good.clone(),
            "192.0.2.10",
            UA,
            expired_ttl,
            Clearance::Rejected(Rejection::Expired),
        ),
        (
            "tampered MAC",
            &c,
            tampered_mac,
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Rejected(Rejection::Mac),
        ),
        (
            "tampered expiry",
            &c,
            tampered_expiry,
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Rejected(Rejection::Mac),
        ),
        (
            "other /24",
            &c,
            good.clone(),
            "192.0.3.10",
            UA,
            NOW,
            Clearance::Rejected(Rejection::Address),
        ),
        (
            "other family",
            &c,
            good.clone(),
            "2001:db8::1",
            UA,
            NOW,
            Clearance::Rejected(Rejection::Address),
        ),
        (
            "v4-mapped",
            &c,
            good.clone(),
            "::ffff:192.0.2.10",
            UA,
            NOW,
            Clearance::Accepted(Proof::Work),
        ),
        (
            "other UA",
            &c,
            good.clone(),
            "192.0.2.10",
            b"curl/8.0",
            NOW,
            Clearance::Rejected(Rejection::UserAgent),
        ),
        (
            "old key still listed",
            &rotated,
            good.clone(),
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Accepted(Proof::Work),
        ),
        (
            "old key removed",
            &removed,
            good.clone(),
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Rejected(Rejection::Mac),
        ),
        (
            "garbage",
            &c,
            "edgeguard_clearance=\u{1}%%garbage".into(),
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Rejected(Rejection::Malformed),
        ),
        (
            "empty value",
            &c,
            "edgeguard_clearance=".into(),
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Rejected(Rejection::Malformed),
        ),
        (
            "10 KB header",
            &c,
            big,
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Accepted(Proof::Work),
        ),
        (
            "many cookies",
            &c,
            many,
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Accepted(Proof::Work),
        ),
        (
            "other name",
            &c,
            format!("x{good}"),
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Absent,
        ),
        (
            "no cookie",
            &c,
            "a=b".into(),
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Absent,
        ),
    ];
    for (what, ch, header, addr, ua, now, want) in cases {
        assert_eq!(
            clearance(ch, &[header.as_bytes()], addr, ua, now),
            want,
            "{what}"
        );
    }
    // A cookie checked after a reload that shortened the ttl: expired.
    let mut short = c.clone();
    short.ttl = 60;
    assert_eq!(
        clearance(&short, &[good.as_bytes()], "192.0.2.10", UA, NOW),
        Clearance::Rejected(Rejection::Expired)
    );
}

#[test]
fn candidates_are_bounded_and_any_valid_one_clears() {
    let c = challenge(&[K1]);
    let good = cookie_for(&c, "192.0.2.10", UA, NOW);
    let bad = "edgeguard_clearance=nope";
    // A bad one before the good one, in another Cookie header (HTTP/2
    // sends one header per cookie): cleared.
    assert_eq!(
        clearance(
            &c,
            &[bad.as_bytes(), good.as_bytes()],
            "192.0.2.10",
            UA,
            NOW
        ),
        Clearance::Accepted(Proof::Work)
    );
    // The good one after MAX_CANDIDATES bad ones is not looked at.
    let mut headers: Vec<&[u8]> = vec![bad.as_bytes(); MAX_CANDIDATES];
    headers.push(good.as_bytes());
    assert_eq!(
        clearance(&c, &headers, "192.0.2.10", UA, NOW),
        Clearance::Rejected(Rejection::Malformed)
    );
    // Quoted values are read without their quotes.
    let quoted = good.replace('=', "=\"") + "\"";
    assert_eq!(
        clearance(&c, &[quoted.as_bytes()], "192.0.2.10", UA, NOW),
        Clearance::Accepted(Proof::Work)
    );
}

fn solve(nonce: &[u8]) -> String {
    let d = u32::from(
        token::open(nonce, Kind::Nonce, &challenge(&[K1]).keys)
            .unwrap()
            .level,
    );
    (0u64..)
        .map(|i| i.to_string())
        .find(|c| leading_zero_bits(nonce, c.as_bytes()) >= d)
        .unwrap()
}

fn nonce_of(page: &[u8]) -> &[u8] {
    let at = page.windows(6).position(|w| w == b"{\"n\":\"").unwrap() + 6;
    &page[at..at + TOKEN_TEXT]
}

fn page_for(c: &Challenge, client: &Binding, input: PageInput<'_>, now: u64) -> String {
    let mut out = vec![0u8; PAGE_CAP];
    let n = c.page(&input, client, now, &mut out).unwrap();
    String::from_utf8(out[..n].to_vec()).unwrap()
}

fn input(state: State) -> PageInput<'static> {
    PageInput {
        state,
        accept_language: b"",
        host: b"shop.example",
        request_id: b"",
        return_to: b"/",
        difficulty: 8,
        attempts: 0,
        ticket: None,
        seconds: 0,
    }
}

#[test]
fn page_answer_cookie_round_trip() {
    let mut c = challenge(&[K1]);
    c.difficulty = 8;
    let client = c.binding(ip("198.51.100.7"), UA, None);
    let page = page_for(&c, &client, input(State::Challenge), NOW);
    assert!(
        page.contains("\"d\":8,\"e\":\"/.edgeguard/challenge\"") && !page.contains("{{"),
        "{page}"
    );
    let nonce = nonce_of(page.as_bytes());
    let counter = solve(nonce);
    let uri = format!(
        "{ENDPOINT}?n={}&c={counter}&r=%2Fshop%2Fitem%3Fid%3D4%26x%3D%25C3%25A9",
        std::str::from_utf8(nonce).unwrap()
    );
    let (mut sc, mut loc) = ([0u8; SET_COOKIE_CAP], [0u8; MAX_RETURN]);
    let got = c
        .answer(
            uri.as_bytes(),
            &client,
            NOW + 5,
            true,
            false,
            &mut sc,
            &mut loc,
        )
        .unwrap();
    let Answer::Solved {
        cookie,
        location,
        proof: Proof::Work,
        attempts: 1,
    } = got
    else {
        panic!("{got:?}")
    };
    assert_eq!(&loc[..location], b"/shop/item?id=4&x=%C3%A9");
    let sc = std::str::from_utf8(&sc[..cookie]).unwrap();
    let (pair, attrs) = sc.split_once("; ").unwrap();
    assert_eq!(
        attrs,
        "Path=/; Max-Age=86400; Expires=Sat, 16 Jan 2027 08:00:05 GMT; HttpOnly; SameSite=None; Secure"
    );
    assert_eq!(
        clearance(&c, &[pair.as_bytes()], "198.51.100.99", UA, NOW + 100),
        Clearance::Accepted(Proof::Work)
    );
    // Without TLS, no Secure.
    let (mut sc2, mut loc2) = ([0u8; SET_COOKIE_CAP], [0u8; MAX_RETURN]);
    let Ok(Answer::Solved { cookie, .. }) = c.answer(
        uri.as_bytes(),
        &client,
        NOW,
        false,
        false,
        &mut sc2,
        &mut loc2,
    ) else {
        panic!()
    };
    assert!(std::str::from_utf8(&sc2[..cookie])
        .unwrap()
        .ends_with("SameSite=Lax"));

    // Failures, each with its reason.
    let fail = |uri: &str, client: &Binding, now: u64| {
        let (mut a, mut b) = ([0u8; SET_COOKIE_CAP], [0u8; MAX_RETURN]);
        match c
            .answer(uri.as_bytes(), client, now, false, false, &mut a, &mut b)
            .unwrap()
        {
            Answer::Failed(r) => r,
            s => panic!("{uri}: {s:?}"),
        }
    };
    let nonce_s = std::str::from_utf8(nonce).unwrap();
    let wrong = (0u64..)
        .map(|i| i.to_string())
        .find(|w| leading_zero_bits(nonce, w.as_bytes()) < 8)
        .unwrap();
    assert_eq!(
        fail(
            &format!("{ENDPOINT}?n={nonce_s}&c={wrong}&r=/"),
            &client,
            NOW
        ),
        Rejection::Work
    );
    assert_eq!(
        fail(
            &format!("{ENDPOINT}?n={nonce_s}&c={counter}"),
            &client,
            NOW + NONCE_TTL + 1
        ),
        Rejection::Expired
    );
    assert_eq!(
        fail(&format!("{ENDPOINT}?n={nonce_s}&c=-1"), &client, NOW),
        Rejection::Malformed
    );
    assert_eq!(
        fail(&format!("{ENDPOINT}?c={counter}"), &client, NOW),
        Rejection::Malformed
    );
    let elsewhere = c.binding(ip("203.0.113.1"), UA, None);
    assert_eq!(
        fail(
            &format!("{ENDPOINT}?n={nonce_s}&c={counter}"),
            &elsewhere,
            NOW
        ),
        Rejection::Address
    );
    let other_ua = c.binding(ip("198.51.100.7"), b"python-requests/2.31", None);
    assert_eq!(
        fail(
            &format!("{ENDPOINT}?n={nonce_s}&c={counter}"),
            &other_ua,
            NOW
        ),
        Rejection::UserAgent
    );
    // A nonce is not a cookie, nor a cookie a nonce.
    let as_cookie = format!("edgeguard_clearance={nonce_s}");
    assert_eq!(
        clearance(&c, &[as_cookie.as_bytes()], "198.51.100.7", UA, NOW),
        Clearance::Rejected(Rejection::Malformed)
    );
    let cookie_token = pair.split_once('=').unwrap().1;
    assert_eq!(
        fail(&format!("{ENDPOINT}?n={cookie_token}&c=1"), &client, NOW),
        Rejection::Malformed
    );
}

#[test]
fn navigation_and_endpoint() {
    let nav = |method: &[u8], headers: &[(&[u8], &[u8])]| {
        let h: Vec<Header<'_>> = headers.iter().map(|(n, v)| Header::new(n, v)).collect();
        is_navigation(&Request::new(method, b"/", 11, b"192.0.2.1", &h))
    };
    assert!(nav(b"GET", &[(b"sec-fetch-mode", b"navigate")]));
    assert!(nav(b"HEAD", &[(b"Sec-Fetch-Mode", b"NAVIGATE")]));
    assert!(nav(
        b"GET",
        &[(b"accept", b"text/html,application/xhtml+xml,*/*;q=0.8")]
    ));
    assert!(!nav(
        b"GET",
        &[(b"sec-fetch-mode", b"cors"), (b"accept", b"text/html")]
    ));
    assert!(!nav(b"POST", &[(b"sec-fetch-mode", b"navigate")]));
    assert!(!nav(b"GET", &[(b"accept", b"application/json")]));
    assert!(!nav(b"GET", &[]));
    assert!(is_endpoint(b"/.edgeguard/challenge?n=1"));
    assert!(is_endpoint(b"/.edgeguard/challenge"));
    assert!(!is_endpoint(b"/.edgeguard/challenge/x"));
    assert!(!is_endpoint(b"/x/.edgeguard/challenge"));
}

#[test]
fn long_cookie_names_and_small_buffers() {
    let mut c = challenge(&[K1]);
    c.cookie = "x".repeat(MAX_COOKIE_NAME);
    c.difficulty = 0;
    let client = c.binding(None, b"", None);
    let (mut sc, mut loc) = ([0u8; SET_COOKIE_CAP], [0u8; 1]);
    let nonce = c.nonce(&client, 0, 0, NOW);
    let uri = format!("{ENDPOINT}?n={}&c=0", std::str::from_utf8(&nonce).unwrap());
    assert!(matches!(
        c.answer(uri.as_bytes(), &client, NOW, true, false, &mut sc, &mut loc),
        Ok(Answer::Solved { location: 1, .. })
    ));
    let mut small = [0u8; 64];
    assert_eq!(
        c.answer(
            uri.as_bytes(),
            &client,
            NOW,
            true,
            false,
            &mut small,
            &mut loc
        ),
        Err(TooSmall)
    );
}

/// The return hop counts solves that come back without the cookie: the
/// first comes back as attempt 1 (another page, which knows it), the
/// second as attempt 2, and that one gets the "cookies are needed" page
/// instead of a third solve.
#[test]
fn solves_without_the_cookie_end_in_the_cookies_page() {
    let mut c = challenge(&[K1]);
    c.difficulty = 4;
    let client = c.binding(ip("198.51.100.8"), UA, None);
    let mut attempts = 0;
    let mut page_in = PageInput {
        return_to: b"/cart?x=1",
        ..input(State::Challenge)
    };
    let mut loc_back = Vec::new();
    for round in 1..=2u8 {
        page_in.attempts = attempts;
        let page = page_for(&c, &client, page_in, NOW);
        // The page's script answers with the return path the page carries.
        assert!(page.contains("\"r\":\"%2Fcart%3Fx%3D1\""), "{page}");
        let nonce = nonce_of(page.as_bytes()).to_vec();
        let counter = solve(&nonce);
        let uri = format!(
            "{ENDPOINT}?n={}&c={counter}&r=%2Fcart%3Fx%3D1",
            std::str::from_utf8(&nonce).unwrap()
        );
        let (mut sc, mut loc) = ([0u8; SET_COOKIE_CAP], [0u8; LOCATION_CAP]);
        let Ok(Answer::Solved {
            location,
            attempts: a,
            ..
        }) = c.answer(uri.as_bytes(), &client, NOW, false, true, &mut sc, &mut loc)
        else {
            panic!("round {round}")
        };
        assert_eq!(a, round);
        let hop = std::str::from_utf8(&loc[..location]).unwrap().to_owned();
        assert!(
            hop.starts_with("/.edgeguard/challenge?a=") && hop.ends_with("&r=%2Fcart%3Fx%3D1"),
            "{hop}"
        );
        // The hop arrives without the cookie: the token says which attempt.
        let mut back = [0u8; MAX_RETURN];
        let r = c
            .returning(hop.as_bytes(), &client, NOW + 1, &mut back)
            .unwrap();
        let Returned::Back {
            attempts: got,
            location,
        } = r
        else {
            panic!("{r:?}")
        };
        assert_eq!(got, round);
        assert_eq!(&back[..location], b"/cart?x=1");
        assert_eq!(r.cookies_needed(), round >= COOKIES_NEEDED_AFTER);
        attempts = got;
        loc_back = hop.into_bytes();
    }
    // The hop's token: bound, short-lived, not a cookie, not forgeable.
    let hop = std::str::from_utf8(&loc_back).unwrap();
    let mut back = [0u8; MAX_RETURN];
    let other = c.binding(ip("203.0.113.9"), UA, None);
    assert_eq!(
        c.returning(hop.as_bytes(), &other, NOW, &mut back),
        Ok(Returned::Failed(Rejection::Address))
    );
    assert_eq!(
        c.returning(hop.as_bytes(), &client, NOW + RETURN_TTL + 1, &mut back),
        Ok(Returned::Failed(Rejection::Expired))
    );
    let token = hop.split("a=").nth(1).unwrap().split('&').next().unwrap();
    assert_eq!(
        c.verify_cookie(token.as_bytes(), &client, NOW),
        Err(Rejection::Malformed)
    );
    let forged = hop.replacen("a=", "a=A", 1).replacen(&token[..1], "", 1);
    assert!(matches!(
        c.returning(forged.as_bytes(), &client, NOW, &mut back),
        Ok(Returned::Failed(Rejection::Mac | Rejection::Malformed))
    ));
    assert_eq!(
        c.returning(b"/.edgeguard/challenge?r=%2F", &client, NOW, &mut back),
        Ok(Returned::Failed(Rejection::Malformed))
    );
    // The cookies page itself carries no nonce: no third solve.
    let page = page_for(
        &c,
        &client,
        PageInput {
            state: State::CookiesNeeded,
            return_to: b"/cart?x=1",
            ..input(State::Challenge)
        },
        NOW,
    );
    assert!(
        page.contains("Cookies are needed") && !page.contains("edgeguard-data"),
        "{page}"
    );
    assert!(page.contains("href=\"/cart?x=1\""), "{page}");
}

/// The no-JavaScript fallback: off by default; on, the page carries a
/// ticket in a `<noscript>` refresh; the ticket is redeemable only after
/// its wait, for a weaker clearance with its own lifetime.
#[test]
fn the_no_javascript_ticket_waits_and_clears_weaker() {
    let mut c = challenge(&[K1]);
    let client = c.binding(ip("198.51.100.9"), b"Lynx/2.9.0dev.12 libwww-FM/2.14", None);
    assert!(c.ticket(&client, 0, NOW).is_none());
    let off = page_for(&c, &client, input(State::Challenge), NOW);
    assert!(
        !off.contains("http-equiv=\"refresh\"") && off.contains("This check needs JavaScript"),
        "{off}"
    );
    c.nojs_wait = Some(5);
    let page = page_for(&c, &client, input(State::Challenge), NOW);
    let meta = page
        .split("<noscript><meta http-equiv=\"refresh\" content=\"")
        .nth(1)
        .unwrap();
    let url = meta.split('"').next().unwrap().to_owned();
    assert!(url.starts_with("5; url=/.edgeguard/challenge?t="), "{url}");
    let uri = url.trim_start_matches("5; url=").replace("&amp;", "&");
    assert!(uri.ends_with("&r=%2F"), "{uri}");
    assert!(
        page.contains("continues by itself after 5 seconds"),
        "{page}"
    );

    let redeem = |c: &Challenge, client: &Binding, now: u64| {
        let (mut sc, mut loc) = ([0u8; SET_COOKIE_CAP], [0u8; LOCATION_CAP]);
        let a = c
            .answer(uri.as_bytes(), client, now, false, false, &mut sc, &mut loc)
            .unwrap();
        (a, String::from_utf8(sc.to_vec()).unwrap())
    };
    assert_eq!(redeem(&c, &client, NOW).0, Answer::TooEarly { seconds: 5 });
    assert_eq!(
        redeem(&c, &client, NOW + 4).0,
        Answer::TooEarly { seconds: 1 }
    );
    let (solved, set_cookie) = redeem(&c, &client, NOW + 5);
    assert!(
        matches!(
            solved,
            Answer::Solved {
                proof: Proof::Wait,
                attempts: 1,
                location: 1,
                ..
            }
        ),
        "{solved:?}"
    );
    assert!(set_cookie.contains("; Max-Age=3600; "), "{set_cookie}");
    let other = c.binding(ip("198.51.100.9"), b"curl/8.5.0", None);
    assert_eq!(
        redeem(&c, &other, NOW + 5).0,
        Answer::Failed(Rejection::UserAgent)
    );
    assert_eq!(
        redeem(&c, &client, NOW + 5 + NONCE_TTL + 1).0,
        Answer::Failed(Rejection::Expired)
    );

    // The cookie it sets clears as the weaker kind, for its own lifetime.
    let token = set_cookie.split(['=', ';']).nth(1).unwrap().to_owned();
    assert_eq!(
        c.verify_cookie(token.as_bytes(), &client, NOW + 10),
        Ok(Proof::Wait)
    );
    assert_eq!(
        c.verify_cookie(token.as_bytes(), &client, NOW + 5 + 3600),
        Err(Rejection::Expired)
    );
    // The wait page (a ticket followed too early) refreshes to the same ticket.
    let ticket = uri
        .split("t=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_owned();
    let wait = page_for(
        &c,
        &client,
        PageInput {
            state: State::Wait,
            ticket: Some(ticket.as_bytes()),
            seconds: 3,
            ..input(State::Challenge)
        },
        NOW,
    );
    assert!(
        wait.contains(&format!(
            "<a href=\"/.edgeguard/challenge?t={ticket}&amp;r=%2F\">Continue</a>"
        )),
        "{wait}"
    );
    assert!(!wait.contains("http-equiv"), "no automatic refresh: {wait}");
    assert!(
        wait.contains("Please wait 3 more seconds") && !wait.contains("edgeguard-data"),
        "{wait}"
    );

    // Turned off: tickets and their cookies are refused.
    c.nojs_wait = None;
    assert_eq!(
        redeem(&c, &client, NOW + 5).0,
        Answer::Failed(Rejection::Malformed)
    );
    assert_eq!(
        c.verify_cookie(token.as_bytes(), &client, NOW + 10),
        Err(Rejection::Expired)
    );
}

fn tls_request<'a>(headers: &'a [Header<'a>], ja4: &'a [u8]) -> Request<'a> {
    Request::new(b"GET", b"/", 11, b"192.0.2.10", headers).with_tls(crate::features::TlsFacts::new(
        ja4,
        crate::tls::Family::Boringssl,
    ))
}

/// A cookie earned over TLS is bound to the solver's TLS stack: the same
/// browser on a resumed session passes, a script with its cookie does not.
#[test]
fn clearance_is_bound_to_the_tls_stack_that_solved() {
    let c = challenge(&[K1]);
    let chrome = b"t13d1516h2_8daaf6152771_02713d6af862";
    let resumed = b"t13d1517h2_8daaf6152771_b6f405a00624";
    let python = b"t13d5911h1_a33745022dd6_dd5ea6d2a4c8";
    let h0 = [Header::new(b"User-Agent", UA)];
    let client = c.binding_of(&tls_request(&h0, chrome), ip("192.0.2.10"));
    assert!(client.has_tls());
    let token = c.mint_cookie(&client, Proof::Work, 16, NOW);
    let cookie = format!(
        "edgeguard_clearance={}",
        std::str::from_utf8(&token).unwrap()
    );
    let h = [
        Header::new(b"User-Agent", UA),
        Header::new(b"Cookie", cookie.as_bytes()),
    ];
    let at = |ja4: &[u8]| c.clearance(&tls_request(&h, ja4), ip("192.0.2.10"), NOW);
    assert_eq!(at(chrome), Clearance::Accepted(Proof::Work));
    assert_eq!(at(resumed), Clearance::Accepted(Proof::Work));
    assert_eq!(at(python), Clearance::Rejected(Rejection::Tls));
    let plain = Request::new(b"GET", b"/", 11, b"192.0.2.10", &h);
    assert_eq!(
        c.clearance(&plain, ip("192.0.2.10"), NOW),
        Clearance::Rejected(Rejection::Tls)
    );
    assert_eq!(Clearance::Rejected(Rejection::Tls).as_str(), "tls");
}

/// Key rotation as keys.rs documents it, on two servers that reload at
/// different times: no cookie signed at any step is refused by a server
/// at any neighbouring step, and only the last step retires the old key.
#[test]
fn key_rotation_in_three_reloads_refuses_no_cookie() {
    let steps = [
        challenge(&[K1]),     // 0: the old key alone
        challenge(&[K1, K2]), // 1: the new key added below
        challenge(&[K2, K1]), // 2: the new key signs
        challenge(&[K2]),     // 3: the old key retired
    ];
    let client = steps[0].binding(ip("192.0.2.10"), UA, None);
    for (i, signer) in steps.iter().enumerate() {
        let token = signer.mint_cookie(&client, Proof::Work, 16, NOW);
        for (j, checker) in steps.iter().enumerate() {
            let got = checker.verify_cookie(&token, &client, NOW + 60);
            // Servers one step apart always agree; the old key's cookies
            // (steps 0 and 1) are refused only once it is retired (step 3).
            if i.abs_diff(j) <= 1 {
                assert_eq!(
                    got,
                    Ok(Proof::Work),
                    "signed at step {i}, checked at step {j}"
                );
            }
            if j == 3 && i <= 1 {
                assert_eq!(
                    got,
                    Err(Rejection::Mac),
                    "signed at step {i}, checked at step {j}"
                );
            }
        }
    }
    // Skipping step 1 is what breaks a fleet: a server still at step 0
    // refuses what a server at step 2 signs.
    let token = steps[2].mint_cookie(&client, Proof::Work, 16, NOW);
    let skipped = challenge(&[K1]);
    assert_eq!(
        skipped.verify_cookie(&token, &client, NOW),
        Err(Rejection::Mac)
    );
}

#[test]
fn difficulty_follows_the_score_between_the_bounds() {
    let mut c = challenge(&[K1]);
    assert_eq!((c.difficulty, c.difficulty_max), (16, 18));
    assert_eq!(c.difficulty_for(Some(0.5), 0.5), 16);
    assert_eq!(c.difficulty_for(Some(1.0), 0.5), 18);
    assert_eq!(c.difficulty_for(None, 0.5), 18);
    c.difficulty_max = 22;
    assert_eq!(c.difficulty_for(Some(0.75), 0.5), 19);
    // The nonce carries the bits asked, and the answer is held to them.
    let client = c.binding(None, UA, None);
    let nonce = c.nonce(&client, 3, 0, NOW);
    assert_eq!(token::open(&nonce, Kind::Nonce, &c.keys).unwrap().level, 3);
}
