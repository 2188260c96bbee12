//! `edgeguard_access` (strip + score + decide in one call, nginx's hot path)
//! allocates nothing: dhat counts every heap block while it runs, on a bot,
//! a browser-like request, an allowlisted client and an unscored request.

mod access_support;

use std::ptr::null;

use access_support::*;
use edgeguard::ffi::access::edgeguard_access;
use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    access_does_not_allocate();
    println!("access_alloc: 1 passed, 0 failed");
}

/// dhat allows one profiler at a time, so every check lives in this one test.
fn access_does_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let list = list_set();
    let scorer = scorer();
    let (cfg, policy) = bound_policy_with(
        r#"{"models": {"bot": "b.json", "spoof": "s.json"}, "mode": "block",
            "allow": ["10.0.0.0/8", "2001:db8::/32"]}"#,
        scorer,
        2,
        list,
    );
    let (cfg0, policy0) = bound_policy_with(
        r#"{"models": {"bot": "b.json"}, "fail_closed": true}"#,
        scorer,
        0,
        list,
    );
    let bot = bot_request();
    let browser = Req::new(&[
        (b"Host", b"edge.test"),
        (
            b"User-Agent",
            b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        ),
        (
            b"Accept",
            b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        ),
        (b"Accept-Language", b"en-US,en;q=0.5"),
        (b"Accept-Encoding", b"gzip, deflate, br, zstd"),
        (b"Sec-Fetch-Dest", b"document"),
        (b"Sec-Fetch-Mode", b"navigate"),
        (b"x-internal-user-id", b"1"),
    ]);
    let addrs: [&[u8]; 3] = [
        &[192, 0, 2, 1],
        &[10, 0, 0, 1],
        &[0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    ];
    let mut clear = [0u32; 64];
    let mut scores = [0.0f64; 2];
    // The score header's value, the values and the decision line: written
    // with no allocation either.
    let mut text = [0u8; 4096];
    let mut lines = 0usize;
    let mut out = sentinel();
    let mut actions = [0usize; 5];

    let before = dhat::HeapStats::get();
    for i in 0..200 {
        let req = if i % 2 == 0 { &bot } else { &browser };
        let r = req.c();
        let addr = addrs[i % 3];
        let (s, p) = if i % 5 == 4 {
            (null(), policy0)
        } else {
            (scorer.cast_const(), policy)
        };
        let rc = unsafe {
            edgeguard_access(
                s,
                p,
                &r,
                addr.as_ptr(),
                addr.len(),
                1_800_000_000,
                clear.as_mut_ptr(),
                clear.len(),
                scores.as_mut_ptr(),
                2,
                text.as_mut_ptr(),
                text.len(),
                &mut out,
            )
        };
        assert_eq!(rc, R::Ok);
        actions[out.decision.action as usize] += 1;
        lines += usize::from(out.text.line.len > 0);
        std::hint::black_box(&text[..out.text.scores.len]);
        std::hint::black_box(&clear[..out.clear_len]);
    }
    let after = dhat::HeapStats::get();
    assert_eq!(
        after.total_blocks, before.total_blocks,
        "edgeguard_access allocated"
    );
    assert_eq!(after.total_bytes, before.total_bytes);
    assert!(lines > 0, "decision lines were written");
    // Real work: pass, allow, block and unavailable all came up.
    let [pass, allow, _, block, unavailable] = actions;
    assert!(
        pass > 0 && allow > 0 && block > 0 && unavailable == 40,
        "{actions:?}"
    );
    unsafe {
        edgeguard_policy_free(policy);
        edgeguard_policy_free(policy0);
        edgeguard_config_free(cfg);
        edgeguard_config_free(cfg0);
        edgeguard::ffi::scorer::edgeguard_scorer_free(scorer);
        edgeguard::ffi::headers::edgeguard_header_set_free(list);
    }
}
