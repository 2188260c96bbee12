//! The clearance cookie parser and the challenge answer, on arbitrary bytes.
//!
//! - `cookie_values` against a naive reference splitter;
//! - arbitrary Cookie headers never clear, unless they hold a cookie minted
//!   for the client, which clears when it is among the first
//!   `MAX_CANDIDATES` cookies of the configured name;
//! - an arbitrary answer URI never earns a cookie, and whatever it asks to
//!   return to, a written Location is a same-site path of visible ASCII.
#![no_main]

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use arbitrary::Arbitrary;
use edgeguard::challenge::{
    cookie_values, Answer, Challenge, Clearance, Keys, Proof, MAX_CANDIDATES,
};
use edgeguard::features::Request;
use edgeguard::headers::Header;
use libfuzzer_sys::{arbitrary, fuzz_target};

#[derive(Arbitrary, Debug)]
struct Input {
    cookie: Vec<u8>,
    /// Where a minted cookie goes into `cookie`, if anywhere.
    minted_at: Option<u16>,
    user_agent: Vec<u8>,
    addr: [u8; 16],
    v6: bool,
    uri: Vec<u8>,
    now: u32,
}

fn reference<'a>(header: &'a [u8], name: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    for pair in header.split(|&b| b == b';') {
        let pair = pair.trim_ascii();
        let Some(eq) = pair.iter().position(|&b| b == b'=') else {
            continue;
        };
        if pair[..eq].trim_ascii() == name {
            let v = pair[eq + 1..].trim_ascii();
            out.push(if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
                &v[1..v.len() - 1]
            } else {
                v
            });
        }
    }
    out
}

fuzz_target!(|input: Input| {
    let keys = Keys::parse(Path::new("k"), "ab".repeat(32).as_bytes()).expect("a valid key");
    let mut ch = Challenge::new(Arc::new(keys));
    ch.difficulty = 0;
    let name = ch.cookie.clone().into_bytes();
    let addr = if input.v6 {
        IpAddr::from(input.addr)
    } else {
        IpAddr::from([input.addr[0], input.addr[1], input.addr[2], input.addr[3]])
    };
    let now = u64::from(input.now) + 1_000_000;
    let binding = ch.binding(Some(addr), &input.user_agent, None);

    let mut header = input.cookie.clone();
    let mut minted_index = None;
    if let Some(at) = input.minted_at {
        let at = usize::from(at) % (header.len() + 1);
        let token = ch.mint_cookie(&binding, Proof::Work, 0, now);
        let cookie = [b"; ".as_slice(), &name, b"=", &token, b"; "].concat();
        // The candidates before it, as the parser sees the finished header.
        header.splice(at..at, cookie.iter().copied());
        let before = reference(&header[..at + 2], &name).len();
        minted_index = Some(before);
    }
    let got: Vec<&[u8]> = cookie_values(&header, &name).collect();
    assert_eq!(got, reference(&header, &name));

    let headers = [
        Header::new(b"User-Agent", &input.user_agent),
        Header::new(b"Cookie", &header),
    ];
    let req = Request::new(b"GET", &input.uri, 11, b"", &headers);
    let clearance = ch.clearance(&req, Some(addr), now);
    match minted_index {
        Some(i) if i < MAX_CANDIDATES => {
            assert_eq!(clearance, Clearance::Accepted(Proof::Work), "{i}")
        }
        // Before the minted one, the fuzzer's bytes may hold a cookie that
        // was never minted: it must not clear.
        _ => assert!(
            !clearance.is_accepted()
                || got
                    .iter()
                    .any(|v| ch.verify_cookie(v, &binding, now).is_ok()),
        ),
    }
    if minted_index.is_none() {
        assert!(!clearance.is_accepted(), "the fuzzer forged a cookie");
    }

    let (mut set_cookie, mut location) = ([0u8; 512], [0u8; 8192]);
    match ch.answer(
        &input.uri,
        &binding,
        now,
        false,
        false,
        &mut set_cookie,
        &mut location,
    ) {
        Ok(Answer::Solved { location: n, .. }) => {
            // Only a nonce this key signed for this client could get here.
            panic!("an arbitrary answer solved: {:?}", &location[..n]);
        }
        Ok(Answer::Failed(_) | Answer::TooEarly { .. }) => {}
        Err(_) => panic!("the buffers are large enough"),
    }
    // A real nonce with the fuzzer's return path: always a same-site path.
    // (`&` would start another parameter, which may replace n or c.)
    let nonce = ch.nonce(&binding, 0, 0, now);
    let ret: Vec<u8> = input.uri.iter().copied().filter(|&b| b != b'&').collect();
    let uri = [
        b"/.edgeguard/challenge?n=".as_slice(),
        &nonce,
        b"&c=0&r=",
        &ret,
    ]
    .concat();
    match ch.answer(
        &uri,
        &binding,
        now,
        true,
        false,
        &mut set_cookie,
        &mut location,
    ) {
        Ok(Answer::Solved {
            location: n,
            cookie,
            ..
        }) => {
            let loc = &location[..n];
            assert!(
                loc[0] == b'/' && !matches!(loc.get(1), Some(b'/' | b'\\')),
                "{loc:?}"
            );
            assert!(
                loc.iter().all(|&b| (0x21..0x7f).contains(&b) && b != b'\\'),
                "{loc:?}"
            );
            assert!(set_cookie[..cookie].ends_with(b"; Secure"));
        }
        other => panic!("a real nonce failed: {other:?}"),
    }
});
