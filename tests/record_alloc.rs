//! `edgeguard_headers_record`, which `resty.edgeguard.record` calls on every
//! recorded request, allocates nothing: dhat counts every heap block while
//! it runs (with a roomy buffer, and with one too short).

use edgeguard::ffi::record::edgeguard_headers_record;
use edgeguard::ffi::{edgeguard_header, edgeguard_result};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    recording_does_not_allocate();
    println!("record_alloc: 1 passed, 0 failed");
}

fn recording_does_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();

    let long = vec![b'"'; 3000];
    let pairs: Vec<(&[u8], &[u8])> = vec![
        (b"Host", b"shop.example"),
        (b"User-Agent", b"Mozilla/5.0 \"x\" \\ \x01 caf\xc3\xa9"),
        (b"X-Long", &long),
        (b"", b""),
    ];
    let headers: Vec<edgeguard_header> = pairs
        .iter()
        .map(|&(k, v)| edgeguard_header::new(k, v))
        .collect();
    let mut roomy = vec![0u8; 16 * 1024];
    let mut short = [0u8; 8];
    let (mut n, mut need) = (0usize, 0usize);

    let before = dhat::HeapStats::get();
    // SAFETY: the headers view `pairs` and `long`; the buffers are ours.
    let (ok, too_small) = unsafe {
        (
            edgeguard_headers_record(
                headers.as_ptr(),
                headers.len(),
                roomy.as_mut_ptr(),
                roomy.len(),
                &mut n,
            ),
            edgeguard_headers_record(
                headers.as_ptr(),
                headers.len(),
                short.as_mut_ptr(),
                short.len(),
                &mut need,
            ),
        )
    };
    let after = dhat::HeapStats::get();

    assert_eq!(
        after.total_blocks, before.total_blocks,
        "recording allocated"
    );
    assert_eq!(after.total_bytes, before.total_bytes);
    // The calls did real work: every `"` of X-Long escaped.
    assert_eq!(ok, edgeguard_result::Ok);
    assert_eq!(too_small, edgeguard_result::BufferTooSmall);
    assert_eq!(need, n);
    assert!(n > 6000, "{n}");
    assert!(roomy[..n].starts_with(
        br#"[["Host","shop.example"],["User-Agent","Mozilla/5.0 \"x\" \\ \u0001 caf"#
    ));
    assert!(roomy[..n].ends_with(br#"\""],["",""]]"#));
}
