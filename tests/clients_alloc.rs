//! The client memory allocates nothing per request: `prefetch`, `observe` on a known
//! client and on a new one (evicting), `view`, and the classification of
//! a request, and the gate's `clients` stage, in memory shared as
//! nginx's workers share it. dhat counts
//! every heap block while they run.

use std::net::Ipv4Addr;

use edgeguard::clients::{registry, ClientKey, Config, Event, Fetch, Prefix, Width};
use edgeguard::config::Options;
use edgeguard::gate::{self, Given, Incoming, Job, Location, Models, Scratch};
use edgeguard::headers::Header;
use edgeguard::outcome::Outcome;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const T0: u64 = 1_796_601_600_000;

fn key(n: u32, fingerprint: &[u8]) -> ClientKey<'_> {
    ClientKey {
        prefix: Prefix::of(Ipv4Addr::from(n).into(), Width::Host),
        fingerprint,
    }
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    // Made before counting: opening maps memory and reads the random key.
    let memory = registry::open(
        "clients_alloc",
        &Config {
            bytes: 1 << 20,
            ..Config::default()
        },
    )
    .unwrap();
    let fp = b"chrome:hCMPuaSODel";
    let page = Event {
        cookie_returned: true,
        ..Event::request(Fetch::Navigation, b"/articles/42?page=2")
    };
    memory.observe(&key(1, fp), &page, T0).unwrap();

    let before = dhat::HeapStats::get();
    let mut navigations = 0u64;
    let mut misses = 0u64;
    for i in 0..2000u32 {
        let now = T0 + u64::from(i) * 50;
        // A known client: a navigation, then a sub-resource it classifies.
        memory.prefetch(&key(1, fp));
        let v = memory.observe(&key(1, fp), &page, now).unwrap();
        navigations = u64::from(v.navigations);
        let fetch = Fetch::classify(Some(b"image"), Some(b"image/avif,*/*"), b"/logo.png");
        memory
            .observe(&key(1, fp), &Event::request(fetch, b"/logo.png"), now)
            .unwrap();
        // A new client each round: 8 192 slots fill, then evict.
        let v = memory.observe(&key(1000 + i * 7, fp), &page, now).unwrap();
        misses += u64::from(!v.known);
        let v = memory.view(&key(1, fp), now).unwrap();
        assert!(v.subresource_ratio() > 0.0 && v.cookie_returned());
        memory.view(&key(u32::MAX - i, fp), now).unwrap();
    }
    let after = dhat::HeapStats::get();
    assert_eq!(
        after.total_blocks, before.total_blocks,
        "observe and view allocated"
    );
    assert_eq!(navigations, 2001);
    assert_eq!(misses, 2000);
    gate_stage_does_not_allocate();
    println!(
        "clients_alloc: 2 passed, 0 failed (8 000 observes, 4 000 views, 4 000 gate runs, 0 blocks)"
    );
}

/// The gate's `clients` stage: observing both widths, the cookie set and
/// sent back, the behaviour's challenge page, in nginx's shared memory.
fn gate_stage_does_not_allocate() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Options::configure(
        "t",
        Some(root),
        br#"{"client_memory": "1m", "client_cookie": true, "mode": "block", "vars": true,
             "challenge_secret": "tests/fixtures/challenge/secret"}"#,
    )
    .and_then(|o| o.with_shared_memory("t"))
    .unwrap();
    let loc = Location::new(&o, Models::Given(&[("bot", Some(0.5))]), None).unwrap();
    let mut scratch = Scratch::new();
    let ua: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
    let addrs: Vec<String> = (0..1000)
        .map(|i| format!("198.51.{}.{}", i / 200, i % 200))
        .collect();
    let run_one = |scratch: &mut Scratch, addr: &[u8], uri: &[u8], id: &[u8], ms: u64| {
        let cookie: &[u8] = b"x=1";
        let h = [
            Header::new(b"user-agent", ua),
            Header::new(b"accept", b"text/html,*/*;q=0.8"),
            Header::new(b"cookie", cookie),
        ];
        let req = Incoming::new(b"GET", uri, 11, addr, &h, None)
            .given(Given {
                scores: Some(&[0.1]),
                ..Given::default()
            })
            .with_time_ms(ms)
            .with_request_id(id);
        let e = gate::run(&loc, &req, Job::Access, ms / 1000, scratch).unwrap();
        (e.action, e.set_cookie.len())
    };
    // Grown once (texts, the page) before counting.
    for i in 0..12 {
        run_one(
            &mut scratch,
            b"203.0.113.1",
            b"/warm",
            &request_id(i),
            T0 + i,
        );
    }
    let before = dhat::HeapStats::get();
    let (mut challenged, mut cookies) = (0, 0);
    for (i, addr) in addrs.iter().enumerate() {
        let ms = T0 + 1000 + i as u64;
        for j in 0..3u8 {
            let id = request_id(ms * 4 + u64::from(j));
            let (action, set) = run_one(&mut scratch, addr.as_bytes(), &[b'/', b'a' + j], &id, ms);
            challenged += usize::from(action == Outcome::Challenge);
            cookies += usize::from(set > 0);
            if j == 0 {
                // nginx runs the gate again after an internal redirect
                // (a directory's index.html), with the same id.
                run_one(&mut scratch, addr.as_bytes(), b"/a", &id, ms);
            }
        }
    }
    let after = dhat::HeapStats::get();
    assert_eq!(
        after.total_blocks, before.total_blocks,
        "the gate stage allocated"
    );
    // Each /24 × head crawls (10 navigations, no sub-resource, no cookie
    // back): challenged from then on; every navigation gets the cookie,
    // on the upstream's answer or on the challenge page.
    assert_eq!(cookies, 3000);
    assert!(challenged > 2900, "{challenged}");
}

/// A request id as nginx makes them (32 hex digits), on the stack.
fn request_id(n: u64) -> [u8; 32] {
    let mut id = [b'0'; 32];
    for (i, d) in id.iter_mut().rev().take(16).enumerate() {
        *d = b"0123456789abcdef"[((n >> (4 * i)) & 15) as usize];
    }
    id
}
