//! The client memory allocates nothing per request: `prefetch`, `observe` on a known
//! client and on a new one (evicting), `view`, and the classification of
//! a request, in memory shared as nginx's workers share it. dhat counts
//! every heap block while they run.

use std::net::Ipv4Addr;

use edgeguard::clients::{registry, ClientKey, Config, Event, Fetch, Prefix, Width};

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
    println!("clients_alloc: 1 passed, 0 failed (8 000 observes, 4 000 views, 0 blocks)");
}
