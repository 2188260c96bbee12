//! The per-request calls of a header set allocate nothing: dhat counts every
//! heap block while they run.

use edgeguard::headers::Header;
use edgeguard::headers::HeaderSet;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const SHIPPED: &[u8] = include_bytes!("../nginx-conf/internal-headers.txt");

fn main() {
    hot_path_does_not_allocate();
    println!("headers_alloc: 1 passed, 0 failed");
}

/// dhat allows one profiler at a time, so every check lives in this one test.
fn hot_path_does_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();

    let set = HeaderSet::parse("nginx-conf/internal-headers.txt", SHIPPED).unwrap();
    let long_prefixed = [b"x-internal-".as_slice(), &[b'q'; 400]].concat();
    let long_other = vec![b'z'; 400];
    let names: Vec<&[u8]> = vec![
        b"host",
        b"X-User-Id",
        b"accept-encoding",
        b"x_user_id",
        b"x-envoy-original-path",
        b"X-USER-ID",
        b"cookie",
        b"x-internal-a",
        b"",
        b"x-\xff\xfe",
        &long_prefixed,
        &long_other,
    ];
    let request: Vec<Header<'_>> = names.iter().map(|n| Header::new(n, b"v")).collect();
    let mut roomy = [0u32; 16];
    let mut short = [0u32; 1];

    let before = dhat::HeapStats::get();
    let mut internal = 0;
    for name in &names {
        internal += usize::from(set.is_internal(std::hint::black_box(name)));
    }
    let found = set.find_internal(std::hint::black_box(&request), &mut roomy);
    // A short `clear` takes the slower duplicate scan; it must not allocate either.
    let found_short = set.find_internal(std::hint::black_box(&request), &mut short);
    let after = dhat::HeapStats::get();

    assert_eq!(
        after.total_blocks, before.total_blocks,
        "the hot path allocated"
    );
    assert_eq!(after.total_bytes, before.total_bytes);
    // The calls did real work: six internal headers, five names as nginx
    // tells them apart (`x_user_id` is not `X-User-Id` to clear_header).
    assert_eq!(internal, 6);
    assert_eq!(found.matched, 6);
    assert_eq!(found.distinct, 5);
    assert_eq!(found_short, found);
    assert_eq!(roomy[..5], [1, 3, 4, 7, 10]);
    assert_eq!(short, [1]);
}
