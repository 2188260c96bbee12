//! Feature extraction allocates nothing: the nginx hot path calls it for
//! every request. One dhat profiler per test binary, so one test here, and
//! no libtest harness (`harness = false` in Cargo.toml): dhat counts every
//! thread, and libtest's main thread allocates while a test runs.

use edgeguard::features::orders::{Engine, OrderCounts};
use edgeguard::features::{extract, extract_with, Cat, FeatureVector, Float, Request, TlsFacts};
use edgeguard::headers::Header;
use edgeguard::tls::Family;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const SETS: &[&[(&str, &str)]] = &[
    &[
        ("host", "shop.example"),
        ("sec-ch-ua", r#""Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24""#),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"Windows\""),
        ("upgrade-insecure-requests", "1"),
        ("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"),
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        ("sec-fetch-site", "none"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-user", "?1"),
        ("sec-fetch-dest", "document"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("accept-language", "en-US,en;q=0.9"),
        ("cookie", "a=1; b=2; c=3"),
        ("priority", "u=0, i"),
    ],
    &[("host", "x"), ("user-agent", "curl/8.5.0"), ("accept", "*/*")],
    &[
        ("user-agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
        ("Sec-Fetch-Mode", "cors"),
        ("accept-language", "*"),
        ("x-unknown", "1"),
    ],
    // Schema 4's evidence at work: a Chrome UA with a library's values,
    // an HTTP/1.1 connection, a media range, hand-written client hints.
    &[
        ("Host", "shop.example"),
        ("Connection", "Keep-Alive"),
        ("sec-ch-ua", r#"" Not A;Brand";v="99", "Microsoft Edge";v="101", "HeadlessChrome";v="101""#),
        ("Upgrade-Insecure-Requests", "1"),
        ("User-Agent", "Mozilla/5.0 (Linux; Android 10; K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.0.0 Mobile Safari/537.36"),
        ("Accept", "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"),
        ("Accept-Encoding", "identity"),
        ("Range", "bytes=0-"),
        ("TE", "trailers"),
        ("Sec-Fetch-Dest", "websocket"),
    ],
    &[],
];

fn main() {
    extract_allocates_nothing();
    println!("features_alloc: 1 passed, 0 failed");
}

fn extract_allocates_nothing() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let owned: Vec<Vec<Header<'_>>> = SETS
        .iter()
        .map(|set| {
            set.iter()
                .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
                .collect()
        })
        .collect();
    // Many headers: the fingerprint truncates, the rank buffer fills up.
    let many: Vec<Header<'_>> = (0..200)
        .map(|i| Header::new(if i % 2 == 0 { b"accept" } else { b"te" }, b"x"))
        .collect();
    // A learnt order table (schema 2's `order_reversed_pairs`), built
    // before measuring: looking pairs up in it must not allocate either.
    let mut counts = OrderCounts::default();
    counts.add(Engine::Chromium, b"hcCMPiuaSOUDelk");
    counts.add(Engine::Gecko, b"hualeckiDOSUp");
    let table = counts.table(1);
    let chrome_tls =
        TlsFacts::new(b"t13d1516h2_8daaf6152771_e5627efa2ab1", Family::Boringssl).expect("a JA4");
    let openssl_tls =
        TlsFacts::new(b"t13d1812h1_85036bcba153_b26ce05bbdd6", Family::Openssl).expect("a JA4");
    let mut v = FeatureVector::new();
    let before = dhat::HeapStats::get();
    let mut checksum = 0.0f32;
    for _ in 0..100 {
        for headers in owned.iter().chain([&many]) {
            // SAFETY: the headers view statics and `owned`/`many`, alive here.
            let req = Request::new(b"GET", b"/a/b.js?x=1&y=2", 20, b"2001:db8::1", headers);
            extract(&req, &mut v);
            checksum += v.floats().iter().filter(|x| !x.is_nan()).sum::<f32>();
            extract_with(&req, Some(&table), &mut v);
            checksum += v.float(Float::OrderReversedPairs).max(0.0) + 1.0;
            // Schema 3: the same request over TLS, its facts borrowed.
            for tls in [&chrome_tls, &openssl_tls] {
                extract_with(&req.with_tls(Some(*tls)), Some(&table), &mut v);
                checksum += v.float(Float::TlsCipherCount) + v.cat(Cat::TlsJa4).len() as f32;
                checksum += v.float(Float::EngineHeadersMissing) + v.cat(Cat::UaClaim).len() as f32;
            }
            // An HTTP/1.1 preflight: another branch of the evidence.
            let preflight = Request::new(b"OPTIONS", b"/api", 11, b"192.0.2.1", headers);
            extract_with(&preflight, Some(&table), &mut v);
            checksum += v.float(Float::FetchContradiction) + v.float(Float::ChBrandMismatch);
        }
    }
    let after = dhat::HeapStats::get();
    dhat::assert_eq!(after.total_blocks, before.total_blocks);
    dhat::assert_eq!(after.total_bytes, before.total_bytes);
    assert!(checksum > 0.0);
}
