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
    let token = c.mint_cookie(&c.binding(ip(addr), ua), now);
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
            Clearance::Accepted,
        ),
        (
            "same /24",
            &c,
            good.clone(),
            "192.0.2.200",
            UA,
            NOW,
            Clearance::Accepted,
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
            Clearance::Accepted,
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
            Clearance::Accepted,
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
            Clearance::Accepted,
        ),
        (
            "many cookies",
            &c,
            many,
            "192.0.2.10",
            UA,
            NOW,
            Clearance::Accepted,
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
        Clearance::Accepted
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
        Clearance::Accepted
    );
}

fn solve(nonce: &[u8]) -> String {
    let d = u32::from(
        token::open(nonce, Kind::Nonce, &challenge(&[K1]).keys)
            .unwrap()
            .difficulty,
    );
    (0u64..)
        .map(|i| i.to_string())
        .find(|c| leading_zero_bits(nonce, c.as_bytes()) >= d)
        .unwrap()
}

fn nonce_of(page: &[u8]) -> &[u8] {
    let at = page.windows(5).position(|w| w == b"N = \"").unwrap() + 5;
    &page[at..at + TOKEN_TEXT]
}

#[test]
fn page_answer_cookie_round_trip() {
    let mut c = challenge(&[K1]);
    c.difficulty = 8;
    let client = c.binding(ip("198.51.100.7"), UA);
    let mut page = [0u8; page::CAP];
    let n = c.page(&client, NOW, &mut page).unwrap();
    let page = &page[..n];
    assert!(n < 4000, "{n}");
    assert!(std::str::from_utf8(page).unwrap().contains("var N = \"") && !page.contains(&b'@'));
    assert!(page.windows(8).any(|w| w == b"D = 8, P"));
    let nonce = nonce_of(page);
    let counter = solve(nonce);
    let uri = format!(
        "{ENDPOINT}?n={}&c={counter}&r=%2Fshop%2Fitem%3Fid%3D4%26x%3D%25C3%25A9",
        std::str::from_utf8(nonce).unwrap()
    );
    let (mut sc, mut loc) = ([0u8; SET_COOKIE_CAP], [0u8; MAX_RETURN]);
    let got = c
        .answer(uri.as_bytes(), &client, NOW + 5, true, &mut sc, &mut loc)
        .unwrap();
    let Answer::Solved { cookie, location } = got else {
        panic!("{got:?}")
    };
    assert_eq!(&loc[..location], b"/shop/item?id=4&x=%C3%A9");
    let sc = std::str::from_utf8(&sc[..cookie]).unwrap();
    let (pair, attrs) = sc.split_once("; ").unwrap();
    assert_eq!(
        attrs,
        "Path=/; Max-Age=86400; Expires=Sat, 16 Jan 2027 08:00:05 GMT; HttpOnly; SameSite=Lax; Secure"
    );
    assert_eq!(
        clearance(&c, &[pair.as_bytes()], "198.51.100.99", UA, NOW + 100),
        Clearance::Accepted
    );
    // Without TLS, no Secure.
    let (mut sc2, mut loc2) = ([0u8; SET_COOKIE_CAP], [0u8; MAX_RETURN]);
    let Ok(Answer::Solved { cookie, .. }) =
        c.answer(uri.as_bytes(), &client, NOW, false, &mut sc2, &mut loc2)
    else {
        panic!()
    };
    assert!(std::str::from_utf8(&sc2[..cookie])
        .unwrap()
        .ends_with("SameSite=Lax"));

    // Failures, each with its reason.
    let fail = |uri: &str, client: &Binding, now: u64| {
        let (mut a, mut b) = ([0u8; SET_COOKIE_CAP], [0u8; MAX_RETURN]);
        match c
            .answer(uri.as_bytes(), client, now, false, &mut a, &mut b)
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
    let elsewhere = c.binding(ip("203.0.113.1"), UA);
    assert_eq!(
        fail(
            &format!("{ENDPOINT}?n={nonce_s}&c={counter}"),
            &elsewhere,
            NOW
        ),
        Rejection::Address
    );
    let other_ua = c.binding(ip("198.51.100.7"), b"python-requests/2.31");
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
fn return_paths_stay_on_the_site() {
    let r = |s: &str| {
        let mut out = [0u8; MAX_RETURN];
        let n = return_path(s.as_bytes(), &mut out).unwrap();
        String::from_utf8(out[..n].to_vec()).unwrap()
    };
    assert_eq!(r("%2Fa%2Fb%3Fq%3D1"), "/a/b?q=1");
    assert_eq!(r("/plain"), "/plain");
    for evil in [
        "",
        "%2F%2Fevil.example%2F",
        "%2F%5Cevil.example",
        "https%3A%2F%2Fevil.example%2F",
        "evil",
        "%2Fa%0d%0aSet-Cookie:x",
        "%2Fa%20b",
        "%2F%2",
        "%2F%zz",
        "%2F.edgeguard%2Fchallenge%3Fn%3D1",
    ] {
        assert_eq!(r(evil), "/", "{evil}");
    }
    assert_eq!(r(&("/".to_owned() + &"a".repeat(MAX_RETURN))), "/");
    let mut tiny = [0u8; 0];
    assert_eq!(return_path(b"/x", &mut tiny), Err(TooSmall));
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
fn dates_and_work() {
    let date = |s: u64| {
        let mut v = Vec::new();
        http_date(s, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    };
    assert_eq!(date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
    assert_eq!(date(1_798_761_599), "Thu, 31 Dec 2026 23:59:59 GMT");
    assert_eq!(date(4_107_542_400), "Mon, 01 Mar 2100 00:00:00 GMT");
    // SHA-256("abc:0") starts 0x4c…: one leading zero bit.
    assert_eq!(leading_zero_bits(b"abc", b"0"), 1);
    let mut c = challenge(&[K1]);
    c.cookie = "x".repeat(MAX_COOKIE_NAME);
    let (mut sc, mut loc) = ([0u8; SET_COOKIE_CAP], [0u8; 1]);
    let mut z = c.clone();
    z.difficulty = 0;
    let client = z.binding(None, b"");
    let nonce = z.nonce(&client, NOW);
    let uri = format!("{ENDPOINT}?n={}&c=0", std::str::from_utf8(&nonce).unwrap());
    assert!(matches!(
        z.answer(uri.as_bytes(), &client, NOW, true, &mut sc, &mut loc),
        Ok(Answer::Solved { location: 1, .. })
    ));
    let mut small = [0u8; 64];
    assert_eq!(
        z.answer(uri.as_bytes(), &client, NOW, true, &mut small, &mut loc),
        Err(TooSmall)
    );
}
