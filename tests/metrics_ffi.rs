//! `edgeguard_location_run` counts the Rust engine's request into a metrics
//! registry as the Lua shim used to after it (`act()`, `refuse()`): the
//! engine's time and scores, the decision with the entries stripped, a
//! request nginx cannot strip as refused (nothing stripped), and nothing
//! for a call that fails. The hostile-argument cases of the metrics
//! exports are in the C suite (`tests/c/hostile.c`).

mod access_support;

use std::ptr::{null, null_mut};

use access_support::*;
use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::headers::*;
use edgeguard::ffi::location::*;
use edgeguard::ffi::metrics::*;
use edgeguard::ffi::scorer::*;

const BLOCK: &str = r#"{"models": {"bot": "b.json", "spoof": "s.json"}, "mode": "block"}"#;

/// The exposition of what `m` holds (drained into a fresh dict).
fn text(m: *const edgeguard_metrics) -> String {
    unsafe {
        let n = edgeguard_metrics_len(m);
        let (mut slots, mut deltas, mut values) = (vec![0u32; n], vec![0.0; n], vec![0.0; n]);
        let mut got = 0;
        assert_eq!(
            edgeguard_metrics_drain(m, slots.as_mut_ptr(), deltas.as_mut_ptr(), n, &mut got),
            R::Ok
        );
        for i in 0..got {
            values[slots[i] as usize] += deltas[i];
        }
        let mut buf = vec![0u8; edgeguard_metrics_text_room(m)];
        let mut len = 0;
        assert_eq!(
            edgeguard_metrics_text(m, values.as_ptr(), n, buf.as_mut_ptr(), buf.len(), &mut len),
            R::Ok
        );
        String::from_utf8(buf[..len].to_vec()).unwrap()
    }
}

/// One request through the location, counted into `m` (null: not
/// counted); `http_version` out of range makes the call fail.
fn access(
    loc: *const edgeguard_location,
    m: *const edgeguard_metrics,
    req: &Req,
    http_version: i32,
    scratch: *mut edgeguard_scratch,
) -> (R, edgeguard_effects) {
    let mut r = req.c();
    r.http_version = http_version;
    let mut out = sentinel();
    let rc =
        unsafe { edgeguard_location_run(loc, m, &r, null(), 0, 1_800_000_000, scratch, &mut out) };
    (rc, out)
}

#[test]
fn the_rust_engine_counts_decisions_refusals_and_not_failures() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, loc) = bound_location(BLOCK, scorer, list);
    let scratch = scratch();
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let mut m = null_mut();
    let rc =
        unsafe { edgeguard_metrics_new(cfg, names.as_ptr(), 2, null(), 0, &mut m, null_mut(), 0) };
    assert_eq!(rc, R::Ok);

    let bot = bot_request();
    let (rc, out) = access(loc, m, &bot, 11, scratch);
    assert_eq!(rc, R::Ok);
    let action = ["pass", "allow", "log", "block"][out.action as usize];
    // Two internal entries matched and stripped.
    let stripped = Req::new(&[
        (b"User-Agent", b"curl/8"),
        (b"x-internal-user-id", b"1"),
        (b"X-Debug-a", b"2"),
    ]);
    let (rc, out2) = access(loc, m, &stripped, 11, scratch);
    assert_eq!((rc, out2.matched, out2.unremovable), (R::Ok, 2, 0));
    // Entries nginx cannot remove: refused, 0 stripped, as refuse("rust", 0, left).
    let unremovable = Req::new(&[
        (b"User-Agent", b"curl/8"),
        (b"X-Debug-(a", b"1"),
        (b"X-Debug-ok", b"3"),
    ]);
    let (rc, out3) = access(loc, m, &unremovable, 11, scratch);
    assert_eq!((rc, out3.unremovable), (R::Ok, 1));
    // A failed call (an HTTP version no request has) counts nothing: the
    // shim counts its 500 itself.
    let (rc, _) = access(loc, m, &unremovable, 70000, scratch);
    assert_eq!(rc, R::InvalidArgument);
    // No registry: nothing counted either.
    let (rc, _) = access(loc, null(), &bot, 11, scratch);
    assert_eq!(rc, R::Ok);

    let t = text(m);
    assert!(
        t.contains("edgeguard_requests_total{engine=\"rust\"} 3\n"),
        "{t}"
    );
    let stripped = out.matched + out2.matched;
    assert!(stripped > 2, "the bot request carries internal headers too");
    assert!(
        t.contains(&format!("edgeguard_headers_stripped_total {stripped}\n")),
        "{t}"
    );
    assert!(
        t.contains("edgeguard_decisions_total{action=\"refused\"} 1\n"),
        "{t}"
    );
    let second = ["pass", "allow", "log", "block"][out2.action as usize];
    let want = 1 + usize::from(second == action);
    assert!(
        t.contains(&format!(
            "edgeguard_decisions_total{{action=\"{action}\"}} {want}\n"
        )),
        "{t}"
    );
    // Time and scores for the three that were scored, refused included
    // (the engine ran before the shim refused).
    assert!(
        t.contains("edgeguard_engine_seconds_count{engine=\"rust\"} 3\n"),
        "{t}"
    );
    assert!(
        t.contains("edgeguard_score_count{model=\"bot\",engine=\"rust\"} 3\n"),
        "{t}"
    );
    let sum: f64 = t
        .lines()
        .find_map(|l| l.strip_prefix("edgeguard_engine_seconds_sum{engine=\"rust\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(sum > 0.0 && sum < 1.0, "{sum}");
    unsafe {
        edgeguard_metrics_free(m);
        edgeguard_location_free(loc);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}
