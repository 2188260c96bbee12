//! `edgeguard_location_run`, called as the Lua shim calls it: one call finds
//! the headers to clear, scores and decides, and agrees with the separate
//! exports (the find, the scorer, a location given those scores); every
//! pointer and number it refuses, refused with nothing written.

mod access_support;

use std::ptr::{null, null_mut};

/// The caller's clock (nginx's ngx.time()): no cookie is judged here.
const NOW: i64 = 1_800_000_000;

use access_support::*;
use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::headers::*;
use edgeguard::ffi::location::*;
use edgeguard::ffi::scorer::*;
use edgeguard::ffi::{edgeguard_grade, EDGEGUARD_DETECTION_COUNT};
use edgeguard::gate::Job;
use edgeguard::outcome::Outcome;

const BLOCK: &str = r#"{"models": {"bot": "b.json", "spoof": "s.json"}, "mode": "block", "status": 429,
    "allow": ["10.0.0.0/8"]}"#;

/// C's `snprintf` of one double.
fn c_format(fmt: &std::ffi::CStr, v: f64) -> String {
    let mut buf = [0 as std::ffi::c_char; 512];
    let n = unsafe { libc::snprintf(buf.as_mut_ptr(), buf.len(), fmt.as_ptr(), v) };
    assert!(n > 0);
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The list extended with the score header's spellings: what a location
/// of the default score header strips.
fn strip_set(list: *const edgeguard_header_set) -> *mut edgeguard_header_set {
    let mut set = null_mut();
    let names = b"X-Bot-Score";
    let rc = unsafe {
        edgeguard_header_set_extend(
            list,
            names.as_ptr(),
            names.len(),
            null(),
            &mut set,
            null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    set
}

#[test]
fn one_call_agrees_with_find_score_and_decide() {
    let list = list_set();
    let scorer = scorer();
    let json = BLOCK.replace("\"mode\"", "\"vars\": true, \"mode\"");
    let (cfg, loc) = bound_location(&json, scorer, list);
    let scratch = scratch();
    let req = bot_request();
    let (rc, out) = run(loc, null(), &req, NOW, scratch);
    assert_eq!(rc, R::Ok);
    let scores = scores_of(&out);

    // The texts, as the shim's string.format wrote them (C's printf).
    let g = |v| c_format(c"%.9g", v);
    assert_eq!(
        (text(out.set_header.key), text(out.set_header.value)),
        (
            "X-Bot-Score".into(),
            format!("bot={}; spoof={}", g(scores[0]), g(scores[1]))
        )
    );
    let vars = vars_of(&out);
    assert_eq!(vars[0], ("edgeguard_bot".into(), g(scores[0])));
    assert_eq!(vars[1], ("edgeguard_spoof".into(), g(scores[1])));
    assert_eq!(
        vars[2],
        ("edgeguard_action".into(), "block".into()),
        "no third value"
    );
    let name = ["bot", "spoof"][out.model as usize];
    assert_eq!(
        text(out.line),
        format!(
            "edgeguard action=block grade=certain reasons=ua_library model={name} score={} threshold={} request_id= host=edge.test client=192.0.2.7 method=GET uri=\"/login?next=/\"",
            c_format(c"%.6f", scores[out.model as usize]),
            c_format(c"%.6f", out.threshold)
        )
    );
    // The shim inserts nginx's `$request_id` after `request_id=`; the
    // grade and reasons are the effects' too.
    let at = out.line_request_id_at;
    assert!(text(out.line)[..at].ends_with(" request_id="));
    assert_eq!(
        (out.grade, out.reasons.count_ones()),
        (edgeguard_grade::Certain, 1)
    );
    assert_eq!(
        unsafe {
            std::ffi::CStr::from_ptr(edgeguard_detection_name(
                out.reasons.trailing_zeros() as usize
            ))
        },
        c"ua_library"
    );
    assert!(edgeguard_detection_name(EDGEGUARD_DETECTION_COUNT).is_null());
    assert_eq!(out.log_level, 7, "ngx.INFO without log_level");
    // A block answers with a body naming its reference; the request gave
    // no `$request_id`, so the shim inserts it at the gap.
    assert_eq!((out.exit, out.status), (edgeguard_exit::Body, 429));
    assert!(out.body_request_id_at > 0 && out.body_request_id_at < out.body.len as usize);

    // The separate exports on the same request.
    let set = strip_set(list);
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
    // A location given those scores (the legacy engine's way in) decides alike.
    let given_loc = bound_given(cfg, scorer, 2, list);
    let given = edgeguard_given {
        scores: scores2.as_ptr(),
        scores_len: 2,
        removed: 0,
        unremovable: 0,
    };
    let (rc, d) = run_given(given_loc, null(), &req, &given, 0, NOW, scratch);
    assert_eq!(rc, R::Ok);

    assert_eq!(out.scores_len, 2);
    assert_eq!(out.score_result, R::Ok);
    assert_eq!(
        scores.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
        scores2.map(f64::to_bits),
        "bit-identical scores"
    );
    assert!(scores[0] > 0.9, "curl scores as a bot: {}", scores[0]);
    assert_eq!(
        (out.action, out.model, out.status),
        (d.action, d.model, d.status)
    );
    assert_eq!(out.action, Outcome::Block);
    // The effects name their action (static storage).
    assert_eq!(unsafe { out.action_name.as_bytes() }, b"block");
    assert_eq!(out.status, 429);
    assert_eq!(out.threshold.to_bits(), d.threshold.to_bits());
    assert_eq!((out.matched, out.unremovable), (matched, unremovable));
    assert_eq!(
        out.matched, 3,
        "the internal entries, repeats counted, not the score header's"
    );
    assert_eq!(out.bot_name.len, 0);
    // The exact spelling of the score header stays (setting it replaces it);
    // every other name is listed once.
    assert_eq!(
        n, 4,
        "x-bot-score, x-internal-user-id, x_bot_score, x-debug-trace"
    );
    assert_eq!(&clear2[..n], &[2, 4, 5, 6]);
    assert_eq!(cleared(&out), [4, 5, 6]);

    // The allow list reads the request's textual client_addr, IPv4 and
    // IPv6 alike.
    for (client, want) in [
        (&b"192.0.2.7"[..], Outcome::Block),
        (b"10.1.2.3", Outcome::Allow),
        (b"10.255.0.1", Outcome::Allow),
        (b"2001:db8::1", Outcome::Block),
        (b"unix:", Outcome::Block),
    ] {
        let mut other = bot_request();
        other.client = client;
        let (rc, out) = run(loc, null(), &other, NOW, scratch);
        assert_eq!(
            (rc, out.action),
            (R::Ok, want),
            "{}",
            String::from_utf8_lossy(client)
        );
    }
    unsafe {
        edgeguard_location_free(loc);
        edgeguard_location_free(given_loc);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(set);
        edgeguard_header_set_free(list);
    }
}

#[test]
fn unscored_requests_keep_every_spelling_on_the_clear_list_and_fail_as_configured() {
    let list = list_set();
    let scorer = scorer();
    let scratch = scratch();
    let req = bot_request();
    for (json, want) in [
        (
            r#"{"models": {"bot": "b.json"}, "fail_closed": true}"#,
            Outcome::Unavailable,
        ),
        (r#"{"models": {"bot": "b.json"}}"#, Outcome::Pass),
    ] {
        // Models configured but not loaded: no scorer to bind.
        let (cfg, loc) = bound_location(json, null(), list);
        let (rc, out) = run(loc, null(), &req, NOW, scratch);
        assert_eq!(rc, R::Ok);
        assert_eq!((out.scores_len, out.action, out.model), (0, want, -1));
        assert!(out.threshold.is_nan());
        assert_eq!(
            cleared(&out),
            [2, 4, 5, 6],
            "no score header will be set: all go"
        );
        let status = if want == Outcome::Unavailable { 503 } else { 0 };
        assert_eq!(out.status, status);
        unsafe {
            edgeguard_location_free(loc);
            edgeguard_config_free(cfg);
        }
    }
    // No list and no score header: nothing to clear, still scored and
    // decided.
    let none = BLOCK.replace("\"mode\"", "\"score_header\": \"\", \"mode\"");
    let (cfg, loc) = bound_location(&none, scorer, null());
    let (rc, out) = run(loc, null(), &req, NOW, scratch);
    assert_eq!(
        (rc, out.clear_len, out.matched, out.scores_len),
        (R::Ok, 0, 0, 2)
    );
    assert_eq!(out.action, Outcome::Block);
    assert_eq!(out.set_header.key.len, 0, "no score header");
    unsafe {
        edgeguard_location_free(loc);
        edgeguard_config_free(cfg);
        edgeguard_scratch_free(scratch);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

#[test]
fn names_nginx_cannot_remove_are_counted() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, loc) = bound_location(BLOCK, scorer, list);
    let scratch = scratch();
    let req = Req::new(&[
        (b"User-Agent", b"curl/8"),
        (b"X-Debug-(a", b"1"),
        (b"X-Debug-\xe9", b"2"),
        (b"X-Debug-ok", b"3"),
    ]);
    let (rc, out) = run(loc, null(), &req, NOW, scratch);
    assert_eq!(rc, R::Ok);
    assert_eq!((out.matched, out.unremovable), (3, 2));
    // Refused: nothing cleared, 400, the refusal's line.
    assert_eq!(
        (out.action, out.status, out.clear_len),
        (Outcome::Refused, 400, 0)
    );
    assert!(text(out.line).starts_with("edgeguard action=refused status=400 internal_left=2 "));
    unsafe {
        edgeguard_location_free(loc);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

#[test]
fn bad_arguments_are_refused_and_nothing_is_written() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, loc) = bound_location(BLOCK, scorer, list);
    let given_loc = bound_given(cfg, scorer, 2, list);
    let scratch = scratch();
    let req = bot_request();
    let r = req.c();
    let mut out = sentinel();
    let o = &mut out as *mut edgeguard_effects;
    let go = |loc,
              r: *const edgeguard_request,
              given: *const edgeguard_given,
              job,
              scratch,
              out| unsafe {
        edgeguard_location_run(loc, null(), r, given, job, NOW, scratch, out)
    };
    let one = [0.5f64];
    let short = edgeguard_given {
        scores: one.as_ptr(),
        scores_len: 1,
        removed: 0,
        unremovable: 0,
    };
    let null_scores = edgeguard_given {
        scores: null(),
        scores_len: 2,
        removed: 0,
        unremovable: 0,
    };
    let huge = edgeguard_given {
        scores: one.as_ptr(),
        scores_len: usize::MAX,
        removed: 0,
        unremovable: 0,
    };
    let cases: Vec<(&str, R, R)> = vec![
        (
            "null location",
            go(null(), &r, null(), 0, scratch, o),
            R::NullParameter,
        ),
        (
            "null request",
            go(loc, null(), null(), 0, scratch, o),
            R::NullParameter,
        ),
        (
            "null scratch",
            go(loc, &r, null(), 0, null_mut(), o),
            R::NullParameter,
        ),
        (
            "null out",
            go(loc, &r, null(), 0, scratch, null_mut()),
            R::NullParameter,
        ),
        (
            "a job that is none",
            go(loc, &r, null(), 5, scratch, o),
            R::InvalidArgument,
        ),
        (
            "a negative job",
            go(loc, &r, null(), -1, scratch, o),
            R::InvalidArgument,
        ),
        (
            "given 1 score of 2",
            go(given_loc, &r, &short, 0, scratch, o),
            R::InvalidArgument,
        ),
        (
            "given scores to a scorer's location",
            go(loc, &r, &short, 0, scratch, o),
            R::InvalidArgument,
        ),
        (
            "null given scores, length 2",
            go(given_loc, &r, &null_scores, 0, scratch, o),
            R::NullParameter,
        ),
        (
            "given length no array has",
            go(given_loc, &r, &huge, 0, scratch, o),
            R::NullParameter,
        ),
    ];
    for (what, got, want) in cases {
        assert_eq!(got, want, "{what}");
    }
    let mut bad = req.c();
    bad.http_version = 70000;
    assert_eq!(go(loc, &bad, null(), 0, scratch, o), R::InvalidArgument);
    bad = req.c();
    bad.headers = null();
    assert_eq!(go(loc, &bad, null(), 0, scratch, o), R::NullParameter);
    bad.headers_len = usize::MAX;
    bad.headers = req.c().headers;
    assert_eq!(go(loc, &bad, null(), 0, scratch, o), R::InvalidArgument);
    assert_eq!(out.clear_len, 777, "nothing written on an error");
    assert_eq!(out.model, 77);
    unsafe {
        edgeguard_location_free(loc);
        edgeguard_location_free(given_loc);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

#[test]
fn the_location_owns_its_strip_set_and_strips_both_score_headers() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, plain) = bound_location(BLOCK, scorer, list);
    // A location with its own score header strips configure()'s too, and
    // keeps only its own exact spelling on a scored request.
    let json = br#"{"score_header": "X-Other-Score"}"#;
    let mut derived = null_mut();
    let rc = unsafe {
        edgeguard_config_new_for_location(
            cfg,
            json.as_ptr(),
            json.len(),
            null(),
            &mut derived,
            null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    let own = bound(derived, scorer, list);
    // Without the list: the spellings alone, counted as nothing.
    let bare = bound(derived, scorer, null());
    // The location keeps its own copy: the caller's list may go.
    unsafe { edgeguard_header_set_free(list) };
    let scratch = scratch();
    let req = Req::new(&[
        (b"User-Agent", b"curl/8"),
        (b"X-Bot-Score", b"bot=0"),
        (b"x_other_score", b"bot=0"),
        (b"X-Other-Score", b"bot=0"),
        (b"X-Internal-User-Id", b"1"),
    ]);
    for (loc, want_clear, want_matched) in [
        (plain, &[4u32][..], 1),
        (own, &[1, 2, 4][..], 1),
        (bare, &[1, 2][..], 0),
    ] {
        let (rc, out) = run(loc, null(), &req, NOW, scratch);
        assert_eq!(rc, R::Ok);
        assert_eq!(cleared(&out), want_clear);
        assert_eq!(out.matched, want_matched);
    }
    unsafe {
        edgeguard_location_free(plain);
        edgeguard_location_free(own);
        edgeguard_location_free(bare);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(derived);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
    }
}

/// The strip jobs: `clear_internal_headers()` (the list and the score
/// header's spellings) and a subrequest (the list alone); neither scores.
#[test]
fn strip_jobs_list_what_they_strip() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, loc) = bound_location(BLOCK, scorer, list);
    let scratch = scratch();
    let req = bot_request();
    let (rc, out) = run_given(loc, null(), &req, null(), Job::Strip as i32, NOW, scratch);
    assert_eq!(rc, R::Ok);
    assert_eq!((cleared(&out), out.matched), (vec![2, 4, 5, 6], 3));
    assert_eq!(
        (out.action, out.scores_len, out.exit),
        (Outcome::Pass, 0, edgeguard_exit::Continue)
    );
    let (rc, out) = run_given(
        loc,
        null(),
        &req,
        null(),
        Job::StripList as i32,
        NOW,
        scratch,
    );
    assert_eq!(rc, R::Ok);
    assert_eq!((cleared(&out), out.matched), (vec![4, 6], 3));
    unsafe {
        edgeguard_location_free(loc);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

/// The record job (`record.capture()`): nothing stripped, scored or
/// decided; one variable, `$edgeguard_request_headers`, holding what the
/// configuration's recorder writes (`edgeguard_config_record`'s text).
#[test]
fn the_record_job_sets_the_request_head_alone() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, loc) = bound_location(BLOCK, scorer, list);
    let scratch = scratch();
    let req = bot_request();
    let r = req.c();
    let mut want = vec![0u8; 4096];
    let mut n = 0;
    // SAFETY: the request views `req`; the buffer is ours; `cfg` is live.
    let rc = unsafe {
        edgeguard::ffi::record::edgeguard_config_record(
            cfg,
            &r,
            want.as_mut_ptr(),
            want.len(),
            &mut n,
        )
    };
    assert_eq!(rc, R::Ok);
    let (rc, out) = run_given(loc, null(), &req, null(), Job::Record as i32, NOW, scratch);
    assert_eq!(rc, R::Ok);
    assert_eq!(
        (
            cleared(&out),
            out.matched,
            out.action,
            out.exit,
            out.scores_len,
            out.line.len
        ),
        (vec![], 0, Outcome::Pass, edgeguard_exit::Continue, 0, 0)
    );
    assert_eq!(out.set_header.key.len, 0);
    assert_eq!(out.vars_len, 1);
    assert_eq!(text(out.vars[0].key), "edgeguard_request_headers");
    assert_eq!(text(out.vars[0].value), String::from_utf8_lossy(&want[..n]));
    assert!(
        text(out.vars[0].value).starts_with(r#"[["Host","edge.test"],["User-Agent","curl/8.1.2"]"#)
    );
    // Without a location (before any configuration): the default
    // redaction, as edgeguard_config_record's without a configuration.
    let rc = unsafe {
        edgeguard::ffi::record::edgeguard_config_record(
            null(),
            &r,
            want.as_mut_ptr(),
            want.len(),
            &mut n,
        )
    };
    assert_eq!(rc, R::Ok);
    let (rc, out) = run_given(
        null(),
        null(),
        &req,
        null(),
        Job::Record as i32,
        NOW,
        scratch,
    );
    assert_eq!(rc, R::Ok);
    assert_eq!(text(out.vars[0].value), String::from_utf8_lossy(&want[..n]));
    let (rc, _) = run_given(
        null(),
        null(),
        &req,
        null(),
        Job::Access as i32,
        NOW,
        scratch,
    );
    assert_eq!(
        rc,
        R::NullParameter,
        "only a record job goes without a location"
    );
    unsafe {
        edgeguard_location_free(loc);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

/// The score job (`score()`): the scores the whole pipeline reads, of
/// the request as sent; nothing stripped, decided or answered.
#[test]
fn the_score_job_scores_alone() {
    let list = list_set();
    let scorer = scorer();
    let (cfg, loc) = bound_location(BLOCK, scorer, list);
    let scratch = scratch();
    let req = bot_request();
    let (rc, access) = run_given(loc, null(), &req, null(), Job::Access as i32, NOW, scratch);
    assert_eq!(rc, R::Ok);
    let want: Vec<f64> = (0..access.scores_len)
        .map(|i| unsafe { *access.scores.add(i) })
        .collect();
    assert_eq!(want.len(), 2);
    let (rc, out) = run_given(loc, null(), &req, null(), Job::Score as i32, NOW, scratch);
    assert_eq!(rc, R::Ok);
    let got: Vec<f64> = (0..out.scores_len)
        .map(|i| unsafe { *out.scores.add(i) })
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        (
            cleared(&out),
            out.matched,
            out.action,
            out.exit,
            out.score_result
        ),
        (vec![], 0, Outcome::Pass, edgeguard_exit::Continue, R::Ok)
    );
    unsafe {
        edgeguard_location_free(loc);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
        edgeguard_header_set_free(list);
    }
}

/// Misuse of the constructor.
#[test]
fn locations_refuse_names_beside_a_scorer_and_too_many() {
    let scorer = scorer();
    let cfg = config(BLOCK);
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let mut loc = null_mut();
    let mut err = [0 as std::ffi::c_char; 256];
    let go = |scorer,
              names: *const *const std::ffi::c_char,
              n,
              loc: &mut *mut edgeguard_location,
              err: &mut [std::ffi::c_char]| unsafe {
        edgeguard_location_new(
            cfg,
            scorer,
            names,
            null(),
            n,
            null(),
            loc,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    assert_eq!(
        go(scorer, names.as_ptr(), 2, &mut loc, &mut err),
        R::InvalidArgument
    );
    assert_eq!(
        go(null(), names.as_ptr(), 65, &mut loc, &mut err),
        R::InvalidArgument
    );
    assert_eq!(go(null(), null(), 2, &mut loc, &mut err), R::NullParameter);
    let bad = [c"bot".as_ptr(), c"\xff".as_ptr()];
    assert_eq!(
        go(null(), bad.as_ptr(), 2, &mut loc, &mut err),
        R::InvalidArgument
    );
    let msg = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert_eq!(msg, "model 1 name is not UTF-8");
    assert!(loc.is_null(), "nothing written");
    assert_eq!(unsafe { edgeguard_location_model_count(null()) }, 0);
    unsafe {
        edgeguard_config_free(cfg);
        edgeguard_scorer_free(scorer);
    }
}
