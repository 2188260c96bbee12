//! The challenge's and the verified bots' per-request costs, against the
//! decision they add to:
//!
//! - `decide/plain`: `Policy::decide_request` with neither configured (what
//!   every request pays today);
//! - `decide/no_cookie`: with a challenge and 10 000 + 10 000 bot prefixes
//!   configured, a browser request without a cookie (the common case: a
//!   User-Agent scan for bot tokens, a Cookie scan);
//! - `decide/cookie`: the same with a valid clearance cookie (SHA-256 of
//!   the User-Agent, one HMAC-SHA256);
//! - `decide/forged`: a forged cookie under two keys (both HMACs fail);
//! - `judge/verified`, `judge/fake`: a Googlebot claim looked up among
//!   20 000 prefixes (merged ranges, binary search).
//!
//! Run: `cargo bench --bench challenge`

use std::hint::black_box;
use std::net::IpAddr;
use std::path::Path;

use criterion::Criterion;
use edgeguard::challenge::Proof;
use edgeguard::features::Request;
use edgeguard::headers::Header;
use edgeguard::load::Config;

const CHROME: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const GOOGLEBOT: &[u8] =
    b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const NOW: u64 = 1_800_000_000;

fn big_bots(dir: &Path) -> std::path::PathBuf {
    let mut prefixes = Vec::new();
    for i in 0..10_000u32 {
        let v4 = IpAddr::V4((0x0a00_0000 + i * 512).into());
        let v6 = IpAddr::V6((0x2001_0db8_u128 << 96 | u128::from(i) << 72).into());
        prefixes.push(format!(r#"{{"ipv4Prefix": "{v4}/24"}}"#));
        prefixes.push(format!(r#"{{"ipv6Prefix": "{v6}/64"}}"#));
    }
    let path = dir.join("bench-bots.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"bots": [{{"name": "Googlebot", "tokens": ["Googlebot"], "prefixes": {{"prefixes": [{}]}}}},
                {{"name": "bingbot", "tokens": ["bingbot"], "prefixes": {{"prefixes": [{{"ipv4Prefix": "192.0.2.0/24"}}]}}}}]}}"#,
            prefixes.join(",")
        ),
    )
    .unwrap();
    path
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = std::env::temp_dir().join(format!("edgeguard-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let bots = big_bots(&tmp);
    let plain = Config::parse("plain", root, br#"{"mode": "block"}"#).unwrap();
    let text = format!(
        r#"{{"mode": "challenge", "challenge_secret": "tests/fixtures/challenge/secret", "verified_bots": "{}"}}"#,
        bots.display()
    );
    let full = Config::parse("full", root, text.as_bytes()).unwrap();
    let ch = full.policy().challenge().unwrap();
    let addr: IpAddr = "192.0.2.10".parse().unwrap();
    let good = ch.mint_cookie(&ch.binding(Some(addr), CHROME, None), Proof::Work, 16, NOW);
    let cookie = format!(
        "session=abc; edgeguard_clearance={}",
        std::str::from_utf8(&good).unwrap()
    );
    let mut forged = cookie.clone().into_bytes();
    let n = forged.len();
    forged[n - 3] ^= 1;
    let base = |c: &'static [u8]| {
        vec![
            Header::new(b"Host", b"shop.example"),
            Header::new(b"User-Agent", CHROME),
            Header::new(b"Accept", b"text/html,application/xhtml+xml,*/*;q=0.8"),
            Header::new(b"Accept-Language", b"en-US,en;q=0.9"),
            Header::new(b"Sec-Fetch-Mode", b"navigate"),
            Header::new(b"Cookie", c),
        ]
    };
    let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
    let no_cookie = base(b"session=abc; theme=dark");
    let with_cookie = base(leak(cookie.into_bytes()));
    let with_forged = base(leak(forged));
    let scores = [0.9];
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("decide");
    for (name, cfg, headers) in [
        ("plain", &plain, &no_cookie),
        ("no_cookie", &full, &no_cookie),
        ("cookie", &full, &with_cookie),
        ("forged", &full, &with_forged),
    ] {
        let req = Request::new(b"GET", b"/", 11, b"192.0.2.10", headers);
        let p = cfg.policy();
        let s: &[f64] = if cfg.model_count() == 0 { &[] } else { &scores };
        g.bench_function(name, |b| {
            b.iter(|| {
                black_box(p.decide_request(
                    Some(black_box(s)),
                    &req,
                    Some(addr),
                    NOW,
                    Default::default,
                ))
            })
        });
    }
    g.finish();
    let bots = full.policy().verified_bots().unwrap();
    let mut g = c.benchmark_group("judge");
    let real: IpAddr = "10.0.200.7".parse().unwrap();
    let fake: IpAddr = "203.0.113.7".parse().unwrap();
    assert!(matches!(
        bots.judge(GOOGLEBOT, Some(real)),
        Some(edgeguard::verified::Verdict::Verified(0))
    ));
    g.bench_function("verified", |b| {
        b.iter(|| black_box(bots.judge(black_box(GOOGLEBOT), Some(real))))
    });
    g.bench_function("fake", |b| {
        b.iter(|| black_box(bots.judge(black_box(GOOGLEBOT), Some(fake))))
    });
    g.finish();
    c.final_summary();
    let _ = std::fs::remove_dir_all(&tmp);
}
