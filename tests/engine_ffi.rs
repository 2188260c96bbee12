//! `edgeguard_engine_new`, the one load call nginx makes: the options
//! table in, the engine with its parts and report out, the failure policy,
//! per-location binding and null handling, from Rust.

use std::ffi::{c_char, c_int, CStr};
use std::ptr::{null, null_mut};

use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::engine::*;
use edgeguard::ffi::headers::edgeguard_header_set_len;
use edgeguard::ffi::location::*;
use edgeguard::ffi::scorer::edgeguard_scorer_model_count;
use edgeguard::load::Config;

fn root() -> String {
    env!("CARGO_MANIFEST_DIR").to_owned()
}

/// An options table of string values (`mode`, paths) and one `models`
/// object, as the shim fills it.
fn table(strings: &[(&str, &str)], models: &[(&str, &str)]) -> *mut edgeguard_options {
    let mut o = null_mut();
    assert_eq!(unsafe { edgeguard_options_new(&mut o) }, R::Ok);
    let put = |depth: usize, k: &str, kind: edgeguard_value, v: &str| unsafe {
        edgeguard_options_put(
            o,
            depth,
            k.as_ptr(),
            k.len(),
            kind as c_int,
            0.0,
            v.as_ptr(),
            v.len(),
        )
    };
    for (k, v) in strings {
        assert_eq!(put(0, k, edgeguard_value::String, v), R::Ok);
    }
    if !models.is_empty() {
        assert_eq!(put(0, "models", edgeguard_value::Object, ""), R::Ok);
        for (k, v) in models {
            assert_eq!(put(1, k, edgeguard_value::String, v), R::Ok);
        }
    }
    o
}

/// The engine of `options`, or the code and message.
fn engine(options: *mut edgeguard_options) -> Result<*mut edgeguard_engine, (R, String)> {
    let mut out = null_mut();
    let mut err = [0 as c_char; 512];
    let rc = unsafe {
        edgeguard_engine_new(
            options,
            c"edgeguard.configure".as_ptr(),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    unsafe { edgeguard_options_free(options) };
    match rc {
        R::Ok => Ok(out),
        rc => Err((
            rc,
            unsafe { CStr::from_ptr(err.as_ptr()) }
                .to_string_lossy()
                .into_owned(),
        )),
    }
}

#[test]
fn loads_the_parts_and_reports_them() {
    let bot = format!("{}/models/bot.json", root());
    let list = format!("{}/nginx-conf/internal-headers.txt", root());
    let e = engine(table(
        &[("internal_headers", &list), ("mode", "block")],
        &[("bot", &bot)],
    ))
    .unwrap();
    let offline = Config::parse(
        "t.json",
        std::path::Path::new("/"),
        format!(r#"{{"internal_headers": "{list}", "models": {{"bot": "{bot}"}}}}"#).as_bytes(),
    )
    .unwrap();
    unsafe {
        let report: serde_json::Value =
            serde_json::from_str(CStr::from_ptr(edgeguard_engine_report(e)).to_str().unwrap())
                .unwrap();
        assert_eq!(report["mode"], "block");
        assert_eq!(report["loaded"]["models"][0]["name"], "bot");
        assert_eq!(
            report["loaded"]["models"][0]["threshold"].as_f64(),
            offline.scorer().unwrap().threshold(0)
        );
        let n = offline.headers().unwrap().len();
        assert_eq!(
            report["loaded"]["internal_headers"],
            serde_json::Value::from(n)
        );
        assert_eq!(edgeguard_header_set_len(edgeguard_engine_header_set(e)), n);
        assert_eq!(edgeguard_scorer_model_count(edgeguard_engine_scorer(e)), 1);
        assert_eq!(
            edgeguard_location_model_count(edgeguard_engine_location(e)),
            1
        );
        let cfg = CStr::from_ptr(edgeguard_config_json(edgeguard_engine_config(e)))
            .to_str()
            .unwrap();
        assert!(cfg.contains(r#""mode":"block""#), "{cfg}");

        // A location through the engine: its options, the same scorer.
        let mut loc = null_mut();
        let mut loc_cfg = null_mut();
        let mut err = [0 as c_char; 256];
        let t = table(&[("mode", "log")], &[]);
        let rc = edgeguard_engine_location_new(
            e,
            t,
            c"edgeguard.access".as_ptr(),
            &mut loc,
            &mut loc_cfg,
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!(rc, R::Ok);
        assert_eq!(edgeguard_location_model_count(loc), 1);
        let cfg = CStr::from_ptr(edgeguard_config_json(loc_cfg))
            .to_str()
            .unwrap();
        assert!(cfg.contains(r#""mode":"log""#), "{cfg}");
        edgeguard_options_free(t);
        // A configure{}-only option is misuse per location; nothing written.
        let t = table(&[("internal_headers", &list)], &[]);
        let mut none = null_mut();
        let rc = edgeguard_engine_location_new(
            e,
            t,
            c"edgeguard.access".as_ptr(),
            &mut none,
            null_mut(),
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!(rc, R::InvalidArgument);
        assert!(none.is_null());
        let msg = CStr::from_ptr(err.as_ptr()).to_string_lossy();
        assert!(
            msg.starts_with("edgeguard.access: internal_headers: unknown option"),
            "{msg}"
        );
        edgeguard_options_free(t);
        // The location and its configuration outlive the engine.
        edgeguard_engine_free(e);
        assert_eq!(edgeguard_location_model_count(loc), 1);
        edgeguard_location_free(loc);
        edgeguard_config_free(loc_cfg);
    }
}

#[test]
fn one_failure_policy_and_the_codes() {
    let (rc, msg) = engine(table(&[("mode", "deny")], &[])).unwrap_err();
    assert_eq!(rc, R::InvalidArgument, "{msg}");
    assert!(
        msg.starts_with("edgeguard.configure: mode: must be"),
        "{msg}"
    );
    let (rc, msg) = engine(table(&[], &[("bot", "/nonexistent/bot.json")])).unwrap_err();
    assert_eq!(rc, R::ConfigInvalid, "{msg}");
    assert!(
        msg.starts_with("models not loaded, so this configuration is refused"),
        "{msg}"
    );
    assert!(msg.contains("/nonexistent/bot.json"), "{msg}");
    let (rc, msg) =
        engine(table(&[("internal_headers", "/nonexistent/list.txt")], &[])).unwrap_err();
    assert_eq!(rc, R::ConfigInvalid, "{msg}");
    assert!(msg.starts_with("/nonexistent/list.txt"), "{msg}");
    // Under the legacy engine, Rust loads neither: the Lua engine does.
    let e = engine(table(
        &[
            ("engine", "lua"),
            ("internal_headers", "/nonexistent/list.txt"),
        ],
        &[],
    ))
    .unwrap();
    unsafe {
        assert!(edgeguard_engine_header_set(e).is_null() && edgeguard_engine_scorer(e).is_null());
        edgeguard_engine_free(e);
    }
}

#[test]
fn null_parameters() {
    let mut out = null_mut();
    unsafe {
        assert_eq!(
            edgeguard_engine_new(null_mut(), null(), &mut out, null_mut(), 0),
            R::NullParameter
        );
        let t = table(&[], &[]);
        assert_eq!(
            edgeguard_engine_new(t, null(), null_mut(), null_mut(), 0),
            R::NullParameter
        );
        edgeguard_options_free(t);
        assert!(out.is_null());
        assert!(edgeguard_engine_report(null()).is_null());
        assert!(edgeguard_engine_config(null()).is_null());
        assert!(edgeguard_engine_location(null()).is_null());
        assert!(edgeguard_engine_scorer(null()).is_null());
        assert!(edgeguard_engine_header_set(null()).is_null());
        let mut loc = null_mut();
        assert_eq!(
            edgeguard_engine_location_new(
                null(),
                null_mut(),
                null(),
                &mut loc,
                null_mut(),
                null_mut(),
                0
            ),
            R::NullParameter
        );
        edgeguard_engine_free(null_mut());
    }
}
