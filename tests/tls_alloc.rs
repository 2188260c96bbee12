//! Fingerprinting a ClientHello allocates nothing once a SortRoom exists: it
//! runs inside nginx's handshake, once per connection. Both sources are
//! covered: bytes (parse + JA4) and the C ABI that nginx's path shares
//! (`edgeguard_tls_parse`, whose thread-local scratch is made on the first
//! call). One dhat profiler per binary, no libtest harness.

use edgeguard::ffi::tls::{edgeguard_tls_info, edgeguard_tls_parse};
use edgeguard::tls::{ClientHello, Fingerprint, SortRoom};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    fingerprinting_allocates_nothing();
    println!("tls_alloc: 1 passed, 0 failed");
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn fingerprinting_allocates_nothing() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut hellos = Vec::new();
    for f in ["foxio-clienthellos.txt", "local-clienthellos.txt"] {
        let path = format!("{}/tests/fixtures/tls/{f}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            hellos.push(hex(line.rsplit(' ').next().unwrap()));
        }
    }
    assert!(hellos.len() > 40);
    let mut scratch = SortRoom::default();
    let mut info = std::mem::MaybeUninit::<edgeguard_tls_info>::uninit();
    let mut err = [0 as std::ffi::c_char; 128];
    // Warm: the C ABI's per-thread scratch.
    // SAFETY: valid bytes, a writable out and error buffer.
    unsafe {
        edgeguard_tls_parse(
            hellos[0].as_ptr(),
            hellos[0].len(),
            info.as_mut_ptr(),
            err.as_mut_ptr(),
            err.len(),
        )
    };
    let before = dhat::HeapStats::get();
    let mut checksum = 0u64;
    for _ in 0..20 {
        for h in &hellos {
            let hello = match h.first() {
                Some(1) => ClientHello::parse_handshake(h),
                _ => ClientHello::parse_record(h),
            }
            .unwrap();
            let fp = Fingerprint::compute(&hello, &mut scratch);
            checksum += u64::from(fp.ja4_bytes()[30]) + u64::from(fp.ciphers);
            // SAFETY: as above.
            let rc = unsafe {
                edgeguard_tls_parse(
                    h.as_ptr(),
                    h.len(),
                    info.as_mut_ptr(),
                    err.as_mut_ptr(),
                    err.len(),
                )
            };
            assert_eq!(rc as i32, 0);
        }
    }
    let after = dhat::HeapStats::get();
    dhat::assert_eq!(after.total_blocks, before.total_blocks);
    dhat::assert_eq!(after.total_bytes, before.total_bytes);
    assert!(checksum > 0);
}
