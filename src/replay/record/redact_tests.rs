use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::challenge::{Clearance, Keys, Proof};
use crate::features::{extract, FeatureVector};
use crate::headers::Header;

const KEY: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const OTHER_KEY: &str = "2222222222222222222222222222222222222222222222222222222222222222";
const NOW: u64 = 1_800_000_000;
const UA: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0 Safari/537.36";
const ADDR: &str = "192.0.2.10";

fn challenge(key: &str) -> Challenge {
    let k = Keys::parse(Path::new("secret"), key.as_bytes()).unwrap();
    Challenge::new(Arc::new(k))
}

/// A clearance token of `c` for a client at `addr` sending `ua`, minted
/// at `at`.
fn token(c: &Challenge, addr: &str, ua: &[u8], proof: Proof, at: u64) -> String {
    let t = c.mint_cookie(&c.binding(addr.parse().ok(), ua, None), proof, 16, at);
    String::from_utf8(t.to_vec()).unwrap()
}

/// Header pairs, owned.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The redacted text of `pairs` sent from `addr`, and its pairs read back
/// (as replay reads them).
fn redacted(r: &Redactor, pairs: &[(&[u8], &[u8])], addr: &str) -> (String, Pairs) {
    let headers: Vec<Header<'_>> = pairs.iter().map(|&(k, v)| Header::new(k, v)).collect();
    let req = gate::Incoming::new(b"GET", b"/", 11, addr.as_bytes(), &headers, None);
    let mut out = vec![0u8; 64];
    let n = match r.write(&req, &mut out) {
        Ok(n) => n,
        Err(need) => {
            out = vec![0u8; need];
            r.write(&req, &mut out).unwrap()
        }
    };
    out.truncate(n);
    let flat = super::super::resolved_pairs(&out, false).expect("the text reads back");
    let back = flat
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    (String::from_utf8_lossy(&out).into_owned(), back)
}

fn on(names: &[&str], ch: Option<Challenge>) -> Redactor {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    Redactor::new(true, &names, ch, None)
}

#[test]
fn cookies_keep_their_names_and_lengths() {
    let r = on(&[], None);
    let (text, _) = redacted(
        &r,
        &[(
            b"Cookie",
            b"sid=s3cr3t-value; lang=en;theme=\"dark\" ; =anon; bare; empty=; ;",
        )],
        ADDR,
    );
    assert_eq!(
        text,
        r#"[["Cookie","sid=[redacted 12]; lang=[redacted 2];theme=[redacted 6] ; =[redacted 4]; [redacted 4]; empty=; ;"]]"#
    );
}

#[test]
fn credentials_keep_their_scheme() {
    let r = on(&[], None);
    let cases: [(&[u8], &[u8], &str); 6] = [
        (
            b"Authorization",
            b"Bearer eyJhbGciOi.x.y",
            "Bearer [redacted 14]",
        ),
        (
            b"proxy-authorization",
            b"Basic  dXNlcjpwYXNz",
            "Basic  [redacted 12]",
        ),
        (
            b"AUTHORIZATION",
            b"ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "[redacted 40]",
        ),
        (b"Authorization", b"Bearer", "[redacted 6]"),
        (
            b"Authorization",
            b"not/a/scheme credentials",
            "[redacted 24]",
        ),
        (b"Authorization", b"", ""),
    ];
    for (name, value, want) in cases {
        let (_, back) = redacted(&r, &[(name, value)], ADDR);
        assert_eq!(String::from_utf8_lossy(&back[0].1), want);
    }
    let long = format!("{} secret", "S".repeat(MAX_SCHEME + 1));
    let (_, back) = redacted(&r, &[(b"Authorization", long.as_bytes())], ADDR);
    assert_eq!(back[0].1, format!("[redacted {}]", long.len()).into_bytes());
}

#[test]
fn the_redact_list_logs_lengths_and_off_logs_every_byte() {
    let r = on(&["X-Api-Key", "x-session"], None);
    let pairs: [(&[u8], &[u8]); 4] = [
        (b"x-api-key", b"k-123456"),
        (b"X-SESSION", b"\"quoted\\\x01"),
        (b"X-Other", b"kept"),
        (b"Cookie", b"a=1"),
    ];
    let (text, _) = redacted(&r, &pairs, ADDR);
    assert_eq!(
        text,
        r#"[["x-api-key","[redacted 8]"],["X-SESSION","[redacted 9]"],["X-Other","kept"],["Cookie","a=[redacted 1]"]]"#
    );
    let off = Redactor::new(false, &["x-api-key".into()], Some(challenge(KEY)), None);
    let headers: Vec<Header<'_>> = pairs.iter().map(|&(k, v)| Header::new(k, v)).collect();
    let mut want = vec![0u8; 512];
    let n = crate::replay::write_headers_text(&headers, &mut want).unwrap();
    let (text, _) = redacted(&off, &pairs, ADDR);
    assert_eq!(text.as_bytes(), &want[..n]);
}

#[test]
fn a_clearance_cookie_is_logged_as_its_verdict() {
    let c = challenge(KEY);
    let r = on(&[], Some(c.clone()));
    let good = token(&c, ADDR, UA, Proof::Work, NOW);
    let forged = token(&challenge(OTHER_KEY), ADDR, UA, Proof::Work, NOW);
    let other_ua = token(&c, ADDR, b"curl/8.0", Proof::Wait, NOW);
    let cookie = format!(
        "a=1; edgeguard_clearance={good}; edgeguard_clearance=\"{forged}\"; edgeguard_clearance={other_ua}; edgeguard_clearance=junk; edgeguard_clearance={good}"
    );
    let (text, back) = redacted(
        &r,
        &[(b"User-Agent", UA), (b"Cookie", cookie.as_bytes())],
        ADDR,
    );
    let expires = NOW + u64::from(c.ttl);
    assert_eq!(
        String::from_utf8_lossy(&back[1].1),
        format!(
            "a=[redacted 1]; edgeguard_clearance=[clearance ok work {expires}]; \
             edgeguard_clearance=[clearance mac]; \
             edgeguard_clearance=[clearance user_agent wait {NOW}]; \
             edgeguard_clearance=[clearance malformed]; edgeguard_clearance=[redacted 104]"
        ),
        "the fifth is past the count the gate checks: {text}"
    );
    assert!(!text.contains(&good) && !text.contains(&forged) && !text.contains(&other_ua));
}

/// The property replay rests on: a redacted request read back from the log
/// gets the clearance, and the features, its original got, whatever the
/// time, the lifetime in force and the cookies' mix.
#[test]
fn replay_judges_a_redacted_clearance_as_the_gate_judged_the_token() {
    let keyed = challenge(KEY);
    let mut rng = fastrand::Rng::with_seed(41);
    let uas: [&[u8]; 2] = [UA, b"python-requests/2.31"];
    let addrs = [ADDR, "192.0.2.99", "198.51.100.7", "2001:db8::1"];
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..400 {
        // The recorder's configuration and replay's may differ in the
        // lifetimes, not in the keys or the cookie's name.
        let mut live = keyed.clone();
        live.nojs_wait = rng.bool().then_some(5);
        let mut cookie = String::new();
        for i in 0..rng.usize(0..6) {
            let mint = NOW - rng.u64(0..2 * u64::from(live.ttl));
            let value = match rng.u8(0..6) {
                0 => token(
                    &live,
                    addrs[rng.usize(..2)],
                    uas[rng.usize(..2)],
                    Proof::Work,
                    mint,
                ),
                1 => token(&live, ADDR, UA, Proof::Wait, NOW - rng.u64(0..600)),
                2 => token(&challenge(OTHER_KEY), ADDR, UA, Proof::Work, mint),
                3 => format!("\"{}\"", token(&live, ADDR, UA, Proof::Work, mint)),
                4 => "x".repeat(rng.usize(0..120)),
                _ => token(&live, ADDR, UA, Proof::Work, mint),
            };
            let name = if rng.u8(0..4) == 0 {
                "other"
            } else {
                "edgeguard_clearance"
            };
            let sep = if i == 0 {
                ""
            } else {
                ["; ", ";", " ;  "][rng.usize(..3)]
            };
            cookie.push_str(&format!("{sep}{name}={value}"));
        }
        let (addr, ua) = (addrs[rng.usize(..addrs.len())], uas[rng.usize(..2)]);
        let pairs: Vec<(&[u8], &[u8])> = vec![(b"User-Agent", ua), (b"Cookie", cookie.as_bytes())];
        let (_, back) = redacted(&on(&[], Some(live.clone())), &pairs, addr);
        let views: Vec<Header<'_>> = back.iter().map(|(k, v)| Header::new(k, v)).collect();
        let original: Vec<Header<'_>> = pairs.iter().map(|&(k, v)| Header::new(k, v)).collect();
        let span = [600, u64::from(live.ttl) / 2][rng.usize(..2)];
        let now = NOW + rng.u64(0..span);
        let ip = addr.parse().ok();
        let orig_req = features::Request::new(b"GET", b"/", 11, addr.as_bytes(), &original);
        let logged = features::Request::new(b"GET", b"/", 11, addr.as_bytes(), &views);
        let want = live.clearance(&orig_req, ip, now);
        assert_eq!(
            live.clearance(&logged.from_log(true), ip, now),
            want,
            "round {round}: {cookie}"
        );
        // A replay that turned the no-JavaScript fallback on or off, or
        // shortened the lifetime, judges as nginx would have.
        let mut other = live.clone();
        other.nojs_wait = if live.nojs_wait.is_some() {
            None
        } else {
            Some(5)
        };
        other.ttl = live.ttl / 3;
        assert_eq!(
            other.clearance(&logged.from_log(true), ip, now),
            other.clearance(&orig_req, ip, now),
            "round {round}, other lifetimes: {cookie}"
        );
        // Not from a log (nginx): the logged text is no token.
        if want.is_accepted() {
            assert!(!live.clearance(&logged, ip, now).is_accepted());
        }
        // The features do not change.
        let (mut a, mut b) = (FeatureVector::new(), FeatureVector::new());
        extract(&orig_req, &mut a);
        extract(&logged, &mut b);
        assert_eq!(a.floats().map(f32::to_bits), b.floats().map(f32::to_bits));
        assert!(a.cats().eq(b.cats()));
        seen.insert(want.as_str());
    }
    // Every verdict came up.
    for v in [
        "absent",
        "accepted",
        "accepted_wait",
        "mac",
        "malformed",
        "expired",
        "address",
        "user_agent",
    ] {
        assert!(seen.contains(v), "no {v} among {seen:?}");
    }
    let _ = Clearance::Absent;
}

#[test]
fn the_memory_cookie_is_logged_as_whether_it_checked() {
    let key = HashKey([7, 9]);
    let r = Redactor::new(true, &[], None, Some(key));
    let now = unix_now_s();
    let mut set = [0u8; memory_cookie::SET_COOKIE_ROOM];
    let n = memory_cookie::set_cookie(&key, now, false, &mut set);
    let value = std::str::from_utf8(&set[..n]).unwrap()["edgeguard_v=".len()..]
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let forged = format!("{}0000000000000000", &value[..value.len() - 16]);
    let old = {
        let n = memory_cookie::set_cookie(&key, now - 31 * 86_400, false, &mut set);
        let v = std::str::from_utf8(&set[..n]).unwrap();
        v["edgeguard_v=".len()..]
            .split(';')
            .next()
            .unwrap()
            .to_owned()
    };
    let header = format!("a=1; edgeguard_v={value}; edgeguard_v=\"{value}\"; edgeguard_v={forged}; edgeguard_v={old}");
    let (text, _) = redacted(&r, &[(b"Cookie", header.as_bytes())], ADDR);
    let (vlen, olen) = (value.len(), old.len());
    assert_eq!(
        text,
        format!(
            r#"[["Cookie","a=[redacted 1]; edgeguard_v=[client cookie ok]; edgeguard_v=[client cookie ok]; edgeguard_v=[redacted {vlen}]; edgeguard_v=[redacted {olen}]"]]"#
        )
    );
    assert!(
        !text.contains(&value[value.len() - 16..]),
        "the MAC is not logged"
    );
    // Another memory's key (or none): a cookie like the others.
    for other in [
        Redactor::new(true, &[], None, Some(HashKey([7, 10]))),
        Redactor::new(true, &[], None, None),
    ] {
        let (text, _) = redacted(&other, &[(b"Cookie", header.as_bytes())], ADDR);
        assert!(!text.contains("[client cookie ok]"), "{text}");
    }
}
