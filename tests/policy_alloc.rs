//! Deciding a request allocates nothing, through the Rust API (replay) and
//! the C ABI (nginx, a location given the legacy engine's scores): dhat
//! counts every heap block while they run.

use std::net::IpAddr;
use std::ptr::{null, null_mut};

use edgeguard::config::Options;
use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::edgeguard_str;
use edgeguard::ffi::location::*;
use edgeguard::ffi::scorer::edgeguard_request;
use edgeguard::outcome::Outcome;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    deciding_does_not_allocate();
    println!("policy_alloc: 1 passed, 0 failed");
}

const OPTIONS: &str = r#"{"models": {"bot": "b.json", "spoof": "s.json"}, "mode": "block",
    "thresholds": {"bot": 0.5, "spoof": 0.7},
    "allow": ["10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32", "fe80::/10", "203.0.113.7"]}"#;

/// dhat allows one profiler at a time, so every check lives in this one test.
fn deciding_does_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();

    let options = Options::configure("test", None, OPTIONS.as_bytes()).unwrap();
    let policy = edgeguard::gate::Policy::new(&options, &[("bot", None), ("spoof", None)]);
    let mut cfg = null_mut();
    let rc = unsafe {
        edgeguard_config_new(
            OPTIONS.as_ptr(),
            OPTIONS.len(),
            null(),
            null(),
            &mut cfg,
            null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let mut c_policy = null_mut();
    let rc = unsafe {
        edgeguard_location_new(
            cfg,
            null(),
            names.as_ptr(),
            null(),
            2,
            null(),
            &mut c_policy,
            null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    let texts: [&[u8]; 5] = [
        b"10.9.8.7",
        b"198.51.100.1",
        b"2001:db8::5",
        b"2001:db9::5",
        b"not-an-ip",
    ];
    // The addresses that parse, as the C requests' textual client_addr.
    let requests: Vec<edgeguard_request> = texts
        .iter()
        .filter(|t| std::str::from_utf8(t).unwrap().parse::<IpAddr>().is_ok())
        .map(|t| edgeguard_request {
            method: edgeguard_str::from_slice(b"GET"),
            uri: edgeguard_str::from_slice(b"/"),
            client_addr: edgeguard_str::from_slice(t),
            http_version: 11,
            headers: null(),
            headers_len: 0,
            tls: null(),
            request_id: edgeguard::ffi::edgeguard_str::EMPTY,
            peer_addr: edgeguard::ffi::edgeguard_str::EMPTY,
        })
        .collect();
    let mut scratch = null_mut();
    assert_eq!(unsafe { edgeguard_scratch_new(&mut scratch) }, R::Ok);
    let mut d: edgeguard_effects = unsafe { std::mem::zeroed() };
    let mut counts = [0usize; 4];
    let mut c_counts = [0usize; 5];

    let before = dhat::HeapStats::get();
    for i in 0..100 {
        let scores = [f64::from(i % 10) / 10.0, f64::from(i % 7) / 7.0];
        for t in texts {
            counts[policy
                .decide(std::hint::black_box(&scores), t)
                .action
                .index()] += 1;
        }
        let given = edgeguard_given {
            scores: scores.as_ptr(),
            scores_len: 2,
            removed: 0,
            unremovable: 0,
        };
        for r in &requests {
            let rc = unsafe {
                edgeguard_location_run(c_policy, null(), r, &given, 0, 0, scratch, &mut d)
            };
            assert_eq!(rc, R::Ok);
            c_counts[d.action as usize] += 1;
        }
        let unscored = edgeguard_given {
            scores: null(),
            scores_len: 0,
            ..given
        };
        let rc = unsafe {
            edgeguard_location_run(
                c_policy,
                null(),
                &requests[0],
                &unscored,
                0,
                0,
                scratch,
                &mut d,
            )
        };
        assert_eq!(rc, R::Ok);
    }
    let after = dhat::HeapStats::get();

    assert_eq!(
        after.total_blocks, before.total_blocks,
        "deciding allocated"
    );
    assert_eq!(after.total_bytes, before.total_bytes);
    // Real work: every action but log came up, from both paths.
    assert!(
        counts[Outcome::Pass.index()] > 0
            && counts[Outcome::Allow.index()] > 0
            && counts[Outcome::Block.index()] > 0
    );
    assert_eq!(c_counts[0] + c_counts[1] + c_counts[3], 400);
    assert!(c_counts[1] > 0 && c_counts[3] > 0);
    unsafe {
        edgeguard_location_free(c_policy);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
    }
}
