//! Handles and a request for the `edgeguard_location_run` tests: the
//! internal list, the shipped models' scorer and a location bound to them,
//! all made through the C ABI as the Lua shim makes them.

#![allow(dead_code)] // each user takes a different subset

use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};

use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::headers::*;
use edgeguard::ffi::location::*;
use edgeguard::ffi::metrics::edgeguard_metrics;
use edgeguard::ffi::scorer::*;
use edgeguard::ffi::{edgeguard_header, edgeguard_str};
use edgeguard::outcome::Outcome;

pub const LIST: &str = "x-internal-user-id\nx-debug-*\n";

pub fn root(relative: &str) -> String {
    format!("{}/{relative}", env!("CARGO_MANIFEST_DIR"))
}

fn message(buf: &[c_char]) -> String {
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The internal list alone: `edgeguard_location_new` extends it with the
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

/// A configuration from configure{}-style JSON.
pub fn config(json: &str) -> *mut edgeguard_config {
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
    cfg
}

/// A location of `cfg` bound to `scorer` (null: no models) and the
/// internal list `headers` (null: none): the Rust engine's.
pub fn bound(
    cfg: *const edgeguard_config,
    scorer: *const edgeguard_scorer,
    headers: *const edgeguard_header_set,
) -> *mut edgeguard_location {
    let mut err = [0 as c_char; 512];
    let mut loc = null_mut();
    let rc = unsafe {
        edgeguard_location_new(
            cfg,
            scorer,
            null(),
            null(),
            0,
            headers,
            &mut loc,
            err.as_mut_ptr(),
            512,
        )
    };
    assert_eq!(rc, R::Ok, "{}", message(&err));
    loc
}

/// A location of `cfg` bound to the first `n` of the shipped models' names
/// (bot, spoof) with the scorer's own thresholds, scored by another engine
/// (the legacy Lua engine's location), with the list `headers`.
pub fn bound_given(
    cfg: *const edgeguard_config,
    scorer: *const edgeguard_scorer,
    n: usize,
    headers: *const edgeguard_header_set,
) -> *mut edgeguard_location {
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let own: Vec<f64> = (0..2)
        .map(|i| unsafe { edgeguard_scorer_model_threshold(scorer, i) })
        .collect();
    let mut err = [0 as c_char; 512];
    let mut loc = null_mut();
    let rc = unsafe {
        edgeguard_location_new(
            cfg,
            null(),
            names.as_ptr(),
            own.as_ptr(),
            n,
            headers,
            &mut loc,
            err.as_mut_ptr(),
            512,
        )
    };
    assert_eq!(rc, R::Ok, "{}", message(&err));
    loc
}

/// A configuration from `json` and the Rust engine's location of it.
pub fn bound_location(
    json: &str,
    scorer: *const edgeguard_scorer,
    headers: *const edgeguard_header_set,
) -> (*mut edgeguard_config, *mut edgeguard_location) {
    let cfg = config(json);
    (cfg, bound(cfg, scorer, headers))
}

/// One thread's scratch.
pub fn scratch() -> *mut edgeguard_scratch {
    let mut s = null_mut();
    assert_eq!(unsafe { edgeguard_scratch_new(&mut s) }, R::Ok);
    s
}

/// Runs an `Access` job on `req` at `now`, as the shim does (no given
/// work); the code and the effects.
pub fn run(
    loc: *const edgeguard_location,
    metrics: *const edgeguard_metrics,
    req: &Req,
    now: i64,
    scratch: *mut edgeguard_scratch,
) -> (R, edgeguard_effects) {
    run_given(loc, metrics, req, null(), 0, now, scratch)
}

/// `run` with another engine's work and a job.
pub fn run_given(
    loc: *const edgeguard_location,
    metrics: *const edgeguard_metrics,
    req: &Req,
    given: *const edgeguard_given,
    job: i32,
    now: i64,
    scratch: *mut edgeguard_scratch,
) -> (R, edgeguard_effects) {
    let r = req.c();
    let mut out = sentinel();
    let rc =
        unsafe { edgeguard_location_run(loc, metrics, &r, given, job, now, scratch, &mut out) };
    (rc, out)
}

/// The bytes of a string the effects hand out.
pub fn text(s: edgeguard_str) -> String {
    String::from_utf8_lossy(unsafe { s.as_bytes() }).into_owned()
}

/// The indices the effects list to clear.
pub fn cleared(e: &edgeguard_effects) -> Vec<u32> {
    if e.clear_len == 0 {
        return Vec::new();
    }
    unsafe { std::slice::from_raw_parts(e.clear, e.clear_len) }.to_vec()
}

/// The scores the effects hand out.
pub fn scores_of(e: &edgeguard_effects) -> Vec<f64> {
    if e.scores_len == 0 {
        return Vec::new();
    }
    unsafe { std::slice::from_raw_parts(e.scores, e.scores_len) }.to_vec()
}

/// The variables the effects list, as (name, value).
pub fn vars_of(e: &edgeguard_effects) -> Vec<(String, String)> {
    e.vars[..e.vars_len]
        .iter()
        .map(|v| (text(v.key), text(v.value)))
        .collect()
}

/// A request owning its bytes, viewed as an `edgeguard_request`.
pub struct Req {
    strings: Vec<(Vec<u8>, Vec<u8>)>,
    headers: Vec<edgeguard_header>,
    method: &'static [u8],
    uri: &'static [u8],
    /// `client_addr`, the textual address (`$remote_addr`).
    pub client: &'static [u8],
    /// `peer_addr` (`$realip_remote_addr`; empty: the client).
    pub peer: &'static [u8],
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
            peer: b"",
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
            request_id: edgeguard::ffi::edgeguard_str::EMPTY,
            peer_addr: edgeguard_str::from_slice(self.peer),
        }
    }

    pub fn len(&self) -> usize {
        self.headers.len()
    }

    /// The headers, in order.
    pub fn strings(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.strings.iter().map(|(k, v)| (&k[..], &v[..]))
    }

    /// A copy owning its own bytes.
    pub fn clone_req(&self) -> Req {
        let pairs: Vec<(&[u8], &[u8])> =
            self.strings.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        let mut r = Req::new(&pairs);
        r.method = self.method;
        r.uri = self.uri;
        r.client = self.client;
        r.peer = self.peer;
        r
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

/// An effects struct filled with a pattern that no call writes.
pub fn sentinel() -> edgeguard_effects {
    let mut e: edgeguard_effects = unsafe { std::mem::zeroed() };
    e.action = Outcome::Allow;
    e.exit = edgeguard_exit::Redirect;
    e.status = 7;
    e.clear_len = 777;
    e.matched = 777;
    e.unremovable = 777;
    e.scores_len = 777;
    e.score_result = R::Panic;
    e.model = 77;
    e.threshold = 7.0;
    e.bot = edgeguard_bot::Fake;
    e.clearance = edgeguard_clearance::Work;
    e.bot_name = edgeguard_str {
        len: 7,
        data: null(),
    };
    e
}
