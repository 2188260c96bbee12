//! `edgeguard_location_run` (the gate's strip, score, decide and texts in
//! one call, nginx's hot path) allocates nothing once its scratch is made:
//! dhat counts every heap block while it runs, on a bot,
//! a browser-like request, an allowlisted client and an unscored request,
//! counting into a metrics registry; and so do the registry's drain and
//! text exposition.

mod access_support;

use std::ptr::null;

use access_support::*;
use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::location::*;
use edgeguard::ffi::metrics::*;

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
    let (cfg, policy) = bound_location(
        r#"{"models": {"bot": "b.json", "spoof": "s.json"}, "mode": "block",
            "allow": ["10.0.0.0/8", "2001:db8::/32"], "vars": ["reasons"]}"#,
        scorer,
        list,
    );
    // Models configured, none loaded: every request unscored.
    let (cfg0, policy0) = bound_location(
        r#"{"models": {"bot": "b.json"}, "fail_closed": true}"#,
        null(),
        list,
    );
    let scratch = scratch();
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
        // Firefox's whole navigation head over HTTP/1.1: the shipped model
        // judges the software, and a head missing what Firefox always sends
        // is not a browser's.
        (b"Connection", b"keep-alive"),
        (b"Upgrade-Insecure-Requests", b"1"),
        (b"Sec-Fetch-Dest", b"document"),
        (b"Sec-Fetch-Mode", b"navigate"),
        (b"Sec-Fetch-Site", b"none"),
        (b"Sec-Fetch-User", b"?1"),
        (b"Priority", b"u=0, i"),
        (b"x-internal-user-id", b"1"),
    ]);
    let addrs: [&'static [u8]; 3] = [b"192.0.2.1", b"10.0.0.1", b"2001:db8::1"];
    let requests: Vec<Req> = (0..6)
        .map(|i| {
            let mut r = if i % 2 == 0 {
                bot_request()
            } else {
                browser.clone_req()
            };
            r.client = addrs[i % 3];
            r
        })
        .collect();
    // Firefox's head with a proxy's `Connection: close`: ambiguous, so
    // mode `block` without a challenge logs it (grade, reasons, host and
    // the request id's place in the line).
    let mut requests = requests;
    for _ in 0..3 {
        let pairs: Vec<(&[u8], &[u8])> = browser
            .strings()
            .map(|(k, v)| (k, if k == b"Connection" { &b"close"[..] } else { v }))
            .collect();
        let mut r = Req::new(&pairs);
        r.client = addrs[0];
        requests.push(r);
    }
    // The score header's value, the variables and the decision line:
    // written with no allocation either.
    let mut lines = 0usize;
    let mut vars = 0usize;
    let mut out = sentinel();
    let mut actions = [0usize; 5];
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let mut metrics = std::ptr::null_mut();
    let rc = unsafe {
        edgeguard_metrics_new(
            cfg,
            names.as_ptr(),
            2,
            null(),
            0,
            &mut metrics,
            std::ptr::null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    let slots_n = unsafe { edgeguard_metrics_len(metrics) };
    let mut slots = vec![0u32; slots_n];
    let mut deltas = vec![0.0f64; slots_n];
    let mut values = vec![0.0f64; slots_n];
    let mut exposition = vec![0u8; unsafe { edgeguard_metrics_text_room(metrics) }];

    let before = dhat::HeapStats::get();
    for i in 0..200 {
        let r = requests[i % requests.len()].c();
        let p = if i % 5 == 4 { policy0 } else { policy };
        let rc = unsafe {
            edgeguard_location_run(p, metrics, &r, null(), 0, 1_800_000_000, scratch, &mut out)
        };
        assert_eq!(rc, R::Ok);
        actions[out.action as usize] += 1;
        lines += usize::from(out.line.len > 0);
        vars += out.vars_len;
        std::hint::black_box(&out.set_header);
        std::hint::black_box(&out.clear_len);
    }
    // The timer's drain and a scrape's text, as the shim runs them.
    let mut drained = 0;
    let mut text_len = 0;
    unsafe {
        assert_eq!(
            edgeguard_metrics_drain(
                metrics,
                slots.as_mut_ptr(),
                deltas.as_mut_ptr(),
                slots_n,
                &mut drained
            ),
            R::Ok
        );
        for i in 0..drained {
            values[slots[i] as usize] += deltas[i];
        }
        assert_eq!(
            edgeguard_metrics_text(
                metrics,
                values.as_ptr(),
                slots_n,
                exposition.as_mut_ptr(),
                exposition.len(),
                &mut text_len
            ),
            R::Ok
        );
    }
    let after = dhat::HeapStats::get();
    assert_eq!(
        after.total_blocks, before.total_blocks,
        "edgeguard_location_run or the metrics allocated"
    );
    assert_eq!(after.total_bytes, before.total_bytes);
    assert!(lines > 0, "decision lines were written");
    assert!(vars > 0, "variables were listed");
    // Real work: pass, allow, block and unavailable all came up.
    let [pass, allow, log, block, unavailable] = actions;
    assert!(
        pass > 0 && allow > 0 && log > 0 && block > 0 && unavailable == 40,
        "{actions:?}"
    );

    // Every request was counted, by its action.
    let text = std::str::from_utf8(&exposition[..text_len]).unwrap();
    assert!(
        text.contains("edgeguard_reasons_total{reason=\"ua_library\",strength=\"certain\"}"),
        "{text}"
    );
    assert!(
        text.contains("edgeguard_requests_total{engine=\"rust\"} 200\n"),
        "{text}"
    );
    assert!(text.contains(&format!(
        "edgeguard_decisions_total{{action=\"block\"}} {block}\n"
    )));
    assert!(text.contains(&format!(
        "edgeguard_decisions_total{{action=\"unavailable\"}} {unavailable}\n"
    )));
    assert!(text.contains("edgeguard_engine_seconds_count{engine=\"rust\"} 200\n"));
    assert!(text.contains("edgeguard_score_count{model=\"spoof\",engine=\"rust\"} 160\n"));
    unsafe {
        edgeguard_metrics_free(metrics);
        edgeguard_location_free(policy);
        edgeguard_location_free(policy0);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
        edgeguard_config_free(cfg0);
        edgeguard::ffi::scorer::edgeguard_scorer_free(scorer);
        edgeguard::ffi::headers::edgeguard_header_set_free(list);
    }
}
