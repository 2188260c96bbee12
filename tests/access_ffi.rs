//! `edgeguard_access`, called as the Lua shim calls it: one call finds the
//! headers to clear, scores and decides, and agrees with the three separate
//! exports it replaces; every pointer and length it refuses, refused with
//! nothing written.

mod access_support;

use std::ptr::{null, null_mut};

/// The caller's clock (nginx's ngx.time()): no cookie is judged here.
const NOW: i64 = 1_800_000_000;

use access_support::*;
use edgeguard::ffi::access::*;
use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::headers::*;
use edgeguard::ffi::scorer::*;
use edgeguard::ffi::text::*;

const BLOCK: &str = r#"{"models": {"bot": "b.json", "spoof": "s.json"}, "mode": "block", "status": 429,
    "allow": ["10.0.0.0/8"]}"#;

struct Call<'a> {
    scorer: *const edgeguard_scorer,
    policy: *const edgeguard_policy,
    addr: &'a [u8],
}

fn call(
    c: &Call<'_>,
    req: &Req,
    clear: &mut [u32],
    scores: &mut [f64],
) -> (R, edgeguard_access_out) {
    call_text(c, req, clear, scores, &mut [0u8; 4096])
}

/// `call` with the caller's text buffer.
fn call_text(
    c: &Call<'_>,
    req: &Req,
    clear: &mut [u32],
    scores: &mut [f64],
    text: &mut [u8],
) -> (R, edgeguard_access_out) {
    let r = req.c();
    let mut out = sentinel();
    let rc = unsafe {
        edgeguard_access(
            c.scorer,
            c.policy,
            null(),
            &r,
            if c.addr.is_empty() {
                null()
            } else {
                c.addr.as_ptr()
            },
            c.addr.len(),
            NOW,
            clear.as_mut_ptr(),
            clear.len(),
            scores.as_mut_ptr(),
            scores.len(),
            text.as_mut_ptr(),
            text.len(),
            &mut out,
        )
    };
    (rc, out)
}

/// C's `snprintf` of one double.
fn c_format(fmt: &std::ffi::CStr, v: f64) -> String {
    let mut buf = [0 as std::ffi::c_char; 512];
    let n = unsafe { libc::snprintf(buf.as_mut_ptr(), buf.len(), fmt.as_ptr(), v) };
    assert!(n > 0);
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn one_call_agrees_with_find_score_and_decide() {
    let list = list_set();
    let scorer = scorer();
    // The policy's strip set: the list and the score header's spellings
    // (the default X-Bot-Score), what the shim's locations strip.
    let (cfg, policy) = bound_policy_with(BLOCK, scorer, 2, list);
    let set = unsafe { edgeguard_policy_strip_set(policy) };
    assert!(!set.is_null());
    let req = bot_request();
    let c = Call {
        scorer,
        policy,
        addr: &[192, 0, 2, 7],
    };
    let (mut clear, mut scores) = (vec![0u32; req.len()], [0.0f64; 2]);
    let mut text = [0u8; 4096];
    let (rc, out) = call_text(&c, &req, &mut clear, &mut scores, &mut text);
    assert_eq!(rc, R::Ok);

    // The texts, as the shim's string.format wrote them (C's printf).
    let at = |s: edgeguard::ffi::text::edgeguard_span| {
        String::from_utf8_lossy(&text[s.offset..s.offset + s.len]).into_owned()
    };
    let g = |v| c_format(c"%.9g", v);
    assert_eq!(
        at(out.text.scores),
        format!("bot={}; spoof={}", g(scores[0]), g(scores[1]))
    );
    assert_eq!(at(out.text.values[0]), g(scores[0]));
    assert_eq!(at(out.text.values[1]), g(scores[1]));
    assert_eq!(out.text.values[2].len, 0);
    let name = ["bot", "spoof"][out.decision.model as usize];
    assert_eq!(
        at(out.text.line),
        format!(
            "edgeguard action=block model={name} score={} threshold={} client=192.0.2.7 method=GET uri=\"/login?next=/\"",
            c_format(c"%.6f", scores[out.decision.model as usize]),
            c_format(c"%.6f", out.decision.threshold)
        )
    );
    assert!(
        out.text.line.offset + out.text.line.len
            <= unsafe { edgeguard_policy_text_room(policy) } + 3 + 13 + 9
    );

    // The separate exports on the same request.
    let r = req.c();
    let (mut clear2, mut n, mut matched, mut unremovable) = (vec![0u32; req.len()], 0, 0, 0);
    let rc = unsafe {
        edgeguard_header_set_find_checked(
            set,
            r.headers,
            r.headers_len,
            clear2.as_mut_ptr(),
            clear2.len(),
            &mut n,
            &mut matched,
            &mut unremovable,
        )
    };
    assert_eq!(rc, R::Ok);
    let mut scores2 = [0.0f64; 2];
    assert_eq!(
        unsafe { edgeguard_scorer_score(scorer, &r, scores2.as_mut_ptr(), 2) },
        R::Ok
    );
    let mut d = sentinel().decision;
    let addr = [192u8, 0, 2, 7];
    let rc =
        unsafe { edgeguard_policy_decide(policy, scores2.as_ptr(), 2, addr.as_ptr(), 4, &mut d) };
    assert_eq!(rc, R::Ok);

    assert_eq!(out.scores_len, 2);
    assert_eq!(out.score_result, R::Ok);
    assert_eq!(
        scores.map(f64::to_bits),
        scores2.map(f64::to_bits),
        "bit-identical scores"
    );
    assert!(scores[0] > 0.9, "curl scores as a bot: {}", scores[0]);
    assert_eq!(
        (out.decision.action, out.decision.model, out.decision.status),
        (d.action, d.model, d.status)
    );
    assert_eq!(out.decision.action, edgeguard_action::Block);
    assert_eq!(out.decision.status, 429);
    assert_eq!(out.decision.threshold.to_bits(), d.threshold.to_bits());
    assert_eq!((out.matched, out.unremovable), (matched, unremovable));
    assert_eq!(
        out.matched, 3,
        "the internal entries, repeats counted, not the score header's"
    );
    assert_eq!(out.label.len, 0);
    // The exact spelling of the score header stays (setting it replaces it);
    // every other name is listed once.
    assert_eq!(
        n, 4,
        "x-bot-score, x-internal-user-id, x_bot_score, x-debug-trace"
    );
    assert_eq!(&clear2[..n], &[2, 4, 5, 6]);
    assert_eq!(&clear[..out.clear_len], &[4, 5, 6]);

    // Allowlisted client: allowed, same scores.
    let c10 = Call {
        addr: &[10, 1, 2, 3],
        ..c
    };
    let (rc, out) = call(&c10, &req, &mut clear, &mut scores);
    assert_eq!((rc, out.decision.action), (R::Ok, edgeguard_action::Allow));

    // No binary address (what the shim passes): the allow list reads the
    // request's textual client_addr, IPv4 and IPv6 alike.
    let no_addr = Call { addr: &[], ..c };
    let (rc, out) = call(&no_addr, &req, &mut clear, &mut scores);
    assert_eq!(
        (rc, out.decision.action),
        (R::Ok, edgeguard_action::Block),
        "192.0.2.7"
    );
    for (client, want) in [
        (&b"10.1.2.3"[..], edgeguard_action::Allow),
        (b"10.255.0.1", edgeguard_action::Allow),
        (b"2001:db8::1", edgeguard_action::Block),
        (b"unix:", edgeguard_action::Block),
    ] {
        let mut other = bot_request();
        other.client = client;
        let (rc, out) = call(&no_addr, &other, &mut clear, &mut scores);
        assert_eq!(
            (rc, out.decision.action),
            (R::Ok, want),
            "{}",
            String::from_utf8_lossy(client)
        );
    }
    unsafe {
        edgeguard_policy_free(policy);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

#[test]
fn unscored_requests_keep_every_spelling_on_the_clear_list_and_fail_as_configured() {
    let list = list_set();
    let scorer = scorer();
    let req = bot_request();
    let (mut clear, mut scores) = (vec![0u32; req.len()], [0.0f64; 2]);
    for (json, want) in [
        (
            r#"{"models": {"bot": "b.json"}, "fail_closed": true}"#,
            edgeguard_action::Unavailable,
        ),
        (r#"{"models": {"bot": "b.json"}}"#, edgeguard_action::Pass),
    ] {
        let (cfg, policy) = bound_policy_with(json, scorer, 0, list);
        let c = Call {
            scorer: null(),
            policy,
            addr: &[],
        };
        let (rc, out) = call(&c, &req, &mut clear, &mut scores);
        assert_eq!(rc, R::Ok);
        assert_eq!(
            (out.scores_len, out.decision.action, out.decision.model),
            (0, want, -1)
        );
        assert!(out.decision.threshold.is_nan());
        assert_eq!(
            &clear[..out.clear_len],
            &[2, 4, 5, 6],
            "no score header will be set: all go"
        );
        unsafe {
            edgeguard_policy_free(policy);
            edgeguard_config_free(cfg);
        }
    }
    // No list and no score header: nothing to clear, still scored and
    // decided.
    let none = BLOCK.replace("\"mode\"", "\"score_header\": \"\", \"mode\"");
    let (cfg, policy) = bound_policy(&none, scorer, 2);
    assert!(unsafe { edgeguard_policy_strip_set(policy) }.is_null());
    let c = Call {
        scorer,
        policy,
        addr: &[],
    };
    let (rc, out) = call(&c, &req, &mut [], &mut scores);
    assert_eq!(
        (rc, out.clear_len, out.matched, out.scores_len),
        (R::Ok, 0, 0, 2)
    );
    assert_eq!(out.decision.action, edgeguard_action::Block);
    unsafe {
        edgeguard_policy_free(policy);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

#[test]
fn names_nginx_cannot_remove_are_counted() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, policy) = bound_policy_with(BLOCK, scorer, 2, list);
    let req = Req::new(&[
        (b"User-Agent", b"curl/8"),
        (b"X-Debug-(a", b"1"),
        (b"X-Debug-\xe9", b"2"),
        (b"X-Debug-ok", b"3"),
    ]);
    let (mut clear, mut scores) = (vec![0u32; req.len()], [0.0f64; 2]);
    let c = Call {
        scorer,
        policy,
        addr: &[],
    };
    let (rc, out) = call(&c, &req, &mut clear, &mut scores);
    assert_eq!(rc, R::Ok);
    assert_eq!((out.matched, out.unremovable), (3, 2));
    unsafe {
        edgeguard_policy_free(policy);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

#[test]
fn bad_arguments_are_refused_and_nothing_is_written() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, policy) = bound_policy_with(BLOCK, scorer, 2, list);
    let (cfg1, policy1) = bound_policy_with(BLOCK, scorer, 1, list);
    let req = bot_request();
    let r = req.c();
    let (mut clear, mut scores) = (vec![0u32; req.len()], [0.0f64; 2]);
    let mut out = sentinel();
    let go = |scorer,
              policy: *const edgeguard_policy,
              r: *const edgeguard_request,
              addr: *const u8,
              addr_len,
              clear: *mut u32,
              clear_cap,
              scores: *mut f64,
              scores_cap,
              text: *mut u8,
              text_cap,
              out| unsafe {
        edgeguard_access(
            scorer,
            policy,
            null(),
            r,
            addr,
            addr_len,
            NOW,
            clear,
            clear_cap,
            scores,
            scores_cap,
            text,
            text_cap,
            out,
        )
    };
    let mut textbuf = [0u8; 4096];
    let (cl, sc, tx, o) = (
        clear.as_mut_ptr(),
        scores.as_mut_ptr(),
        textbuf.as_mut_ptr(),
        &mut out as *mut edgeguard_access_out,
    );
    let n = req.len();
    let cases: Vec<(&str, R, R)> = vec![
        (
            "null policy",
            go(scorer, null(), &r, null(), 0, cl, n, sc, 2, tx, 4096, o),
            R::NullParameter,
        ),
        (
            "null request",
            go(scorer, policy, null(), null(), 0, cl, n, sc, 2, tx, 4096, o),
            R::NullParameter,
        ),
        (
            "null out",
            go(
                scorer,
                policy,
                &r,
                null(),
                0,
                cl,
                n,
                sc,
                2,
                tx,
                4096,
                null_mut(),
            ),
            R::NullParameter,
        ),
        (
            "null addr, length 4",
            go(scorer, policy, &r, null(), 4, cl, n, sc, 2, tx, 4096, o),
            R::NullParameter,
        ),
        (
            "null clear with a strip set",
            go(
                scorer,
                policy,
                &r,
                null(),
                0,
                null_mut(),
                n,
                sc,
                2,
                tx,
                4096,
                o,
            ),
            R::NullParameter,
        ),
        (
            "null scores with a scorer",
            go(
                scorer,
                policy,
                &r,
                null(),
                0,
                cl,
                n,
                null_mut(),
                2,
                tx,
                4096,
                o,
            ),
            R::NullParameter,
        ),
        (
            "clear too small",
            go(scorer, policy, &r, null(), 0, cl, n - 1, sc, 2, tx, 4096, o),
            R::InvalidArgument,
        ),
        (
            "scores too small",
            go(scorer, policy, &r, null(), 0, cl, n, sc, 1, tx, 4096, o),
            R::InvalidArgument,
        ),
        (
            "policy of 1 model, scorer of 2",
            go(scorer, policy1, &r, null(), 0, cl, n, sc, 2, tx, 4096, o),
            R::InvalidArgument,
        ),
        (
            "policy of 2 models, no scorer",
            go(null(), policy, &r, null(), 0, cl, n, sc, 2, tx, 4096, o),
            R::InvalidArgument,
        ),
        (
            "addr length no array has",
            go(
                scorer,
                policy,
                &r,
                b"x".as_ptr(),
                usize::MAX,
                cl,
                n,
                sc,
                2,
                tx,
                4096,
                o,
            ),
            R::NullParameter,
        ),
        (
            "null text, length 4096",
            go(
                scorer,
                policy,
                &r,
                null(),
                0,
                cl,
                n,
                sc,
                2,
                null_mut(),
                4096,
                o,
            ),
            R::NullParameter,
        ),
        (
            "text below its room",
            go(scorer, policy, &r, null(), 0, cl, n, sc, 2, tx, 100, o),
            R::BufferTooSmall,
        ),
        (
            "text length no array has",
            go(
                scorer,
                policy,
                &r,
                null(),
                0,
                cl,
                n,
                sc,
                2,
                tx,
                usize::MAX,
                o,
            ),
            R::NullParameter,
        ),
    ];
    for (what, got, want) in cases {
        assert_eq!(got, want, "{what}");
    }
    let mut bad = req.c();
    bad.http_version = 70000;
    assert_eq!(
        go(scorer, policy, &bad, null(), 0, cl, n, sc, 2, tx, 4096, o),
        R::InvalidArgument
    );
    bad = req.c();
    bad.headers = null();
    assert_eq!(
        go(scorer, policy, &bad, null(), 0, cl, n, sc, 2, tx, 4096, o),
        R::NullParameter
    );
    bad.headers_len = usize::MAX;
    bad.headers = req.c().headers;
    assert_eq!(
        go(
            scorer,
            policy,
            &bad,
            null(),
            0,
            cl,
            usize::MAX,
            sc,
            2,
            tx,
            4096,
            o
        ),
        R::InvalidArgument
    );
    assert_eq!(out.clear_len, 777, "nothing written on an error");
    assert_eq!(out.decision.model, 77);
    unsafe {
        edgeguard_policy_free(policy);
        edgeguard_policy_free(policy1);
        edgeguard_config_free(cfg);
        edgeguard_config_free(cfg1);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

#[test]
fn the_policy_owns_the_strip_set_and_a_location_strips_both_score_headers() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, policy) = bound_policy_with(BLOCK, scorer, 2, list);
    // A location with its own score header strips configure()'s too, and
    // keeps only its own exact spelling on a scored request.
    let json = br#"{"score_header": "X-Other-Score"}"#;
    let mut loc = null_mut();
    let rc = unsafe {
        edgeguard_config_new_for_location(
            cfg,
            json.as_ptr(),
            json.len(),
            null(),
            &mut loc,
            null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let mut lp = null_mut();
    let rc = unsafe {
        edgeguard_policy_new(loc, names.as_ptr(), null(), 2, list, &mut lp, null_mut(), 0)
    };
    assert_eq!(rc, R::Ok);
    // Without the list: the spellings alone, counted as nothing.
    let mut bare = null_mut();
    let rc = unsafe {
        edgeguard_policy_new(
            loc,
            names.as_ptr(),
            null(),
            2,
            null(),
            &mut bare,
            null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    unsafe { edgeguard_header_set_free(list) };
    let req = Req::new(&[
        (b"User-Agent", b"curl/8"),
        (b"X-Bot-Score", b"bot=0"),
        (b"x_other_score", b"bot=0"),
        (b"X-Other-Score", b"bot=0"),
        (b"X-Internal-User-Id", b"1"),
    ]);
    let (mut clear, mut scores) = (vec![0u32; req.len()], [0.0f64; 2]);
    for (p, want_clear, want_matched) in [
        (policy, &[4u32][..], 1),
        (lp, &[1, 2, 4][..], 1),
        (bare, &[1, 2][..], 0),
    ] {
        let c = Call {
            scorer,
            policy: p,
            addr: &[],
        };
        let (rc, out) = call(&c, &req, &mut clear, &mut scores);
        assert_eq!(rc, R::Ok);
        assert_eq!(&clear[..out.clear_len], want_clear);
        assert_eq!(out.matched, want_matched);
        assert!(!unsafe { edgeguard_policy_strip_set(p) }.is_null());
    }
    assert!(unsafe { edgeguard_policy_strip_set(null()) }.is_null());
    unsafe {
        edgeguard_policy_free(policy);
        edgeguard_policy_free(lp);
        edgeguard_policy_free(bare);
        edgeguard_config_free(loc);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
    }
}
