//! Handles and a request for the `edgeguard_access` tests: the strip set,
//! the shipped models' scorer and a policy bound to them, all made through
//! the C ABI as the Lua shim makes them.

#![allow(dead_code)] // each user takes a different subset

use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};

use edgeguard::ffi::access::edgeguard_access_out;
use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::headers::*;
use edgeguard::ffi::scorer::*;
use edgeguard::ffi::{edgeguard_header, edgeguard_str};

pub const LIST: &str = "x-internal-user-id\nx-debug-*\n";

pub fn root(relative: &str) -> String {
    format!("{}/{relative}", env!("CARGO_MANIFEST_DIR"))
}

fn message(buf: &[c_char]) -> String {
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The internal list alone: `edgeguard_policy_new` extends it with the
/// score header's names into a location's strip set.
pub fn list_set() -> *mut edgeguard_header_set {
    let mut err = [0 as c_char; 256];
    let mut list = null_mut();
    let rc = unsafe {
        edgeguard_header_set_new_from_buffer(
            LIST.as_ptr(),
            LIST.len(),
            null(),
            &mut list,
            err.as_mut_ptr(),
            256,
        )
    };
    assert_eq!(rc, R::Ok, "{}", message(&err));
    list
}

/// The shipped models (bot, spoof: the configuration's order).
pub fn scorer() -> *mut edgeguard_scorer {
    let strings: Vec<CString> = ["bot", "spoof"]
        .iter()
        .flat_map(|n| {
            [
                CString::new(*n).unwrap(),
                CString::new(root(&format!("models/{n}.json"))).unwrap(),
            ]
        })
        .collect();
    let names: Vec<*const c_char> = strings.iter().step_by(2).map(|s| s.as_ptr()).collect();
    let paths: Vec<*const c_char> = strings
        .iter()
        .skip(1)
        .step_by(2)
        .map(|s| s.as_ptr())
        .collect();
    let mut err = [0 as c_char; 512];
    let mut out = null_mut();
    let rc = unsafe {
        edgeguard_scorer_new(
            names.as_ptr(),
            paths.as_ptr(),
            2,
            &mut out,
            err.as_mut_ptr(),
            512,
        )
    };
    assert_eq!(rc, R::Ok, "{}", message(&err));
    out
}

/// A configuration from configure{}-style JSON and a policy bound to `n`
/// of the shipped models (bot, spoof) with the scorer's own thresholds,
/// without an internal list.
pub fn bound_policy(
    json: &str,
    scorer: *const edgeguard_scorer,
    n: usize,
) -> (*mut edgeguard_config, *mut edgeguard_policy) {
    bound_policy_with(json, scorer, n, null())
}

/// `bound_policy` with the internal list `headers` (null: none).
pub fn bound_policy_with(
    json: &str,
    scorer: *const edgeguard_scorer,
    n: usize,
    headers: *const edgeguard_header_set,
) -> (*mut edgeguard_config, *mut edgeguard_policy) {
    let mut err = [0 as c_char; 512];
    let mut cfg = null_mut();
    let rc = unsafe {
        edgeguard_config_new(
            json.as_ptr(),
            json.len(),
            null(),
            null(),
            &mut cfg,
            err.as_mut_ptr(),
            512,
        )
    };
    assert_eq!(rc, R::Ok, "{}", message(&err));
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let own: Vec<f64> = (0..2)
        .map(|i| unsafe { edgeguard_scorer_model_threshold(scorer, i) })
        .collect();
    let mut p = null_mut();
    let rc = unsafe {
        edgeguard_policy_new(
            cfg,
            names.as_ptr(),
            own.as_ptr(),
            n,
            headers,
            &mut p,
            err.as_mut_ptr(),
            512,
        )
    };
    assert_eq!(rc, R::Ok, "{}", message(&err));
    (cfg, p)
}

/// A request owning its bytes, viewed as an `edgeguard_request`.
pub struct Req {
    strings: Vec<(Vec<u8>, Vec<u8>)>,
    headers: Vec<edgeguard_header>,
    method: &'static [u8],
    uri: &'static [u8],
    /// `client_addr`, the textual address (`$remote_addr`).
    pub client: &'static [u8],
}

impl Req {
    pub fn new(headers: &[(&[u8], &[u8])]) -> Req {
        let strings: Vec<(Vec<u8>, Vec<u8>)> = headers
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        let headers = strings
            .iter()
            .map(|(k, v)| edgeguard_header::new(k, v))
            .collect();
        Req {
            strings,
            headers,
            method: b"GET",
            uri: b"/login?next=/",
            client: b"192.0.2.7",
        }
    }

    pub fn c(&self) -> edgeguard_request {
        edgeguard_request {
            method: edgeguard_str::from_slice(self.method),
            uri: edgeguard_str::from_slice(self.uri),
            client_addr: edgeguard_str::from_slice(self.client),
            http_version: 11,
            headers: self.headers.as_ptr(),
            headers_len: self.headers.len(),
            tls: std::ptr::null(),
        }
    }

    pub fn len(&self) -> usize {
        self.headers.len()
    }
}

/// curl's headers with internal ones and client spellings of the score
/// header mixed in.
pub fn bot_request() -> Req {
    Req::new(&[
        (b"Host", b"edge.test"),
        (b"User-Agent", b"curl/8.1.2"),
        (b"X-Bot-Score", b"bot=0.0"),
        (b"Accept", b"*/*"),
        (b"x-internal-user-id", b"42"),
        (b"X_Bot_Score", b"bot=0.0"),
        (b"X-Debug-Trace", b"1"),
        (b"X-Internal-User-Id", b"43"),
    ])
}

/// An out struct filled with a pattern that no call writes.
pub fn sentinel() -> edgeguard_access_out {
    edgeguard_access_out {
        clear_len: 777,
        matched: 777,
        unremovable: 777,
        scores_len: 777,
        score_result: R::Panic,
        decision: edgeguard_decision {
            action: edgeguard_action::Allow,
            model: 77,
            threshold: 7.0,
            status: 7,
        },
        label: edgeguard_str {
            len: 7,
            data: null(),
        },
        bot: edgeguard::ffi::challenge::edgeguard_bot::Fake,
        clearance: edgeguard::ffi::challenge::edgeguard_clearance::Work,
        challenge_status: 7,
        text: edgeguard::ffi::text::edgeguard_text {
            scores: edgeguard::ffi::text::edgeguard_span { offset: 7, len: 7 },
            line: edgeguard::ffi::text::edgeguard_span { offset: 7, len: 7 },
            values: [edgeguard::ffi::text::edgeguard_span { offset: 7, len: 7 }; 64],
        },
    }
}
