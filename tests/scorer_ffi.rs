//! The scorer exports of the C ABI, called as C would call them: every
//! pointer argument null in turn, wrong score counts, error buffers, models
//! that cannot be loaded or fed, and scores equal to the Rust API's.

mod scorer_support;

use std::ffi::{c_char, CStr, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};

use edgeguard::ffi::edgeguard_result;
use edgeguard::ffi::scorer::*;
use edgeguard::ffi::{edgeguard_header, edgeguard_str};
use edgeguard::headers::Header;
use edgeguard::scorer::Scorer;
use scorer_support::{fixture_requests, root, OwnedRequest};

/// Owned C strings and the pointer arrays `edgeguard_scorer_new` takes.
struct Args {
    _strings: Vec<CString>,
    names: Vec<*const c_char>,
    paths: Vec<*const c_char>,
}

fn args(models: &[(&str, PathBuf)]) -> Args {
    let strings: Vec<CString> = models
        .iter()
        .flat_map(|(n, p)| {
            [
                CString::new(*n).unwrap(),
                CString::new(p.display().to_string()).unwrap(),
            ]
        })
        .collect();
    Args {
        names: strings.iter().step_by(2).map(|s| s.as_ptr()).collect(),
        paths: strings
            .iter()
            .skip(1)
            .step_by(2)
            .map(|s| s.as_ptr())
            .collect(),
        _strings: strings,
    }
}

fn shipped() -> Args {
    args(&scorer_support::shipped())
}

/// Tries to build a scorer: the result, the handle (null unless Ok) and the
/// error message.
fn try_new(a: &Args) -> (edgeguard_result, *mut edgeguard_scorer, String) {
    let mut buf = [0 as c_char; 512];
    let mut out = null_mut();
    let r = unsafe {
        edgeguard_scorer_new(
            a.names.as_ptr(),
            a.paths.as_ptr(),
            a.names.len(),
            &mut out,
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    let message = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    (r, out, message)
}

fn new(a: &Args) -> *mut edgeguard_scorer {
    let (r, out, message) = try_new(a);
    assert_eq!(r, edgeguard_result::Ok, "{message}");
    assert!(!out.is_null());
    out
}

fn str_of(s: &str) -> edgeguard_str {
    edgeguard_str::from_slice(s.as_bytes())
}

/// The C view of a request; `headers` must come from `r.ffi_headers()`.
fn c_request(r: &OwnedRequest, headers: &[Header<'_>]) -> edgeguard_request {
    let headers: &[edgeguard_header] = edgeguard::ffi::headers_as_c(headers);
    edgeguard_request {
        method: str_of(&r.method),
        uri: str_of(&r.uri),
        client_addr: str_of(&r.client),
        http_version: r.version.into(),
        headers: headers.as_ptr(),
        headers_len: headers.len(),
        tls: std::ptr::null(),
        request_id: edgeguard::ffi::edgeguard_str::EMPTY,
        peer_addr: edgeguard::ffi::edgeguard_str::EMPTY,
    }
}

/// The request's TLS facts as `edgeguard_tls_get` would hand them over.
fn tls_info(r: &OwnedRequest) -> Option<edgeguard::ffi::tls::edgeguard_tls_info> {
    let (ja4, family) = r.tls.as_ref()?;
    // SAFETY: a plain C struct of integers and arrays; all zero is valid.
    let mut info: edgeguard::ffi::tls::edgeguard_tls_info = unsafe { std::mem::zeroed() };
    info.present = 1;
    info.family = *family as u8;
    for (d, s) in info.ja4.iter_mut().zip(ja4.bytes()) {
        *d = s as std::ffi::c_char;
    }
    Some(info)
}

#[test]
fn scores_through_the_c_abi_equal_the_rust_api() {
    let handle = new(&shipped());
    let models: Vec<(&str, PathBuf)> = scorer_support::shipped();
    let models: Vec<(&str, &std::path::Path)> =
        models.iter().map(|(n, p)| (*n, p.as_path())).collect();
    let scorer = Scorer::load(&models).unwrap();
    for r in fixture_requests() {
        let headers = r.ffi_headers();
        let mut req = c_request(&r, &headers);
        let info = tls_info(&r);
        if let Some(info) = &info {
            req.tls = info;
        }
        let mut got = [f64::NAN; 2];
        let result = unsafe { edgeguard_scorer_score(handle, &req, got.as_mut_ptr(), 2) };
        assert_eq!(result, edgeguard_result::Ok);
        let mut want = [0.0; 2];
        scorer.score(&r.view(&headers), &mut want).unwrap();
        assert_eq!(got, want, "line {}", r.line);
    }
    unsafe { edgeguard_scorer_free(handle) };
}

#[test]
fn introspection() {
    let handle = new(&shipped());
    let scorer = Scorer::load(&[
        ("bot", &root("models/bot.json")),
        ("spoof", &root("models/spoof.json")),
    ])
    .unwrap();
    unsafe {
        assert_eq!(edgeguard_scorer_model_count(handle), 2);
        assert_eq!(edgeguard_scorer_model_count(null()), 0);
        for (i, name) in ["bot", "spoof"].into_iter().enumerate() {
            let got = CStr::from_ptr(edgeguard_scorer_model_name(handle, i));
            assert_eq!(got.to_str().unwrap(), name);
            assert_eq!(
                edgeguard_scorer_model_threshold(handle, i),
                scorer.threshold(i).unwrap()
            );
        }
        assert!(edgeguard_scorer_model_name(handle, 2).is_null());
        assert!(edgeguard_scorer_model_name(null(), 0).is_null());
        assert!(edgeguard_scorer_model_threshold(handle, 2).is_nan());
        assert!(edgeguard_scorer_model_threshold(null(), 0).is_nan());
        edgeguard_scorer_free(handle);
        edgeguard_scorer_free(null_mut());
    }
    // A model without a threshold reports NaN.
    let handle = new(&args(&[(
        "reg",
        root("tests/fixtures/scorer/regression.json"),
    )]));
    unsafe {
        assert!(edgeguard_scorer_model_threshold(handle, 0).is_nan());
        edgeguard_scorer_free(handle);
    }
}

#[test]
fn new_refuses_null_pointers_and_leaves_out_alone() {
    let a = shipped();
    let sentinel = 0x10 as *mut edgeguard_scorer;
    let mut out = sentinel;
    let (names, paths) = (a.names.as_ptr(), a.paths.as_ptr());
    unsafe {
        for (n, p, o) in [
            (null(), paths, &mut out as *mut _),
            (names, null(), &mut out as *mut _),
            (names, paths, null_mut()),
        ] {
            let r = edgeguard_scorer_new(n, p, 2, o, null_mut(), 0);
            assert_eq!(r, edgeguard_result::NullParameter);
        }
        let null_name = [a.names[0], null()];
        let r = edgeguard_scorer_new(null_name.as_ptr(), paths, 2, &mut out, null_mut(), 0);
        assert_eq!(r, edgeguard_result::NullParameter);
        let null_path = [null(), a.paths[1]];
        let r = edgeguard_scorer_new(names, null_path.as_ptr(), 2, &mut out, null_mut(), 0);
        assert_eq!(r, edgeguard_result::NullParameter);
    }
    assert_eq!(out, sentinel);
}

#[test]
fn load_failures_name_the_model_and_file() {
    let missing = root("models/missing.json");
    let mut unknown =
        std::fs::read_to_string(root("tests/fixtures/scorer/reordered.json")).unwrap();
    unknown = unknown.replace(r#""feature_id":"ua_len""#, r#""feature_id":"ua_length""#);
    let unknown_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scorer-ffi-unknown.json");
    std::fs::write(&unknown_path, unknown).unwrap();
    let bot = root("models/bot.json");
    let cases = [
        (
            vec![("bot", bot.clone()), ("gone", missing)],
            edgeguard_result::Io,
            vec!["model `gone`", "missing.json"],
        ),
        (
            vec![("odd", unknown_path)],
            edgeguard_result::ModelInvalid,
            vec![
                "model `odd`",
                "scorer-ffi-unknown.json",
                "`ua_length` is not in the feature schema",
            ],
        ),
        (
            vec![("multi", root("tests/fixtures/catboost/multiclass_cat.json"))],
            edgeguard_result::ModelInvalid,
            vec!["multiclass_cat.json", "3 outputs"],
        ),
        (
            vec![("src", root("tests/scorer_ffi.rs"))],
            edgeguard_result::ModelInvalid,
            vec!["model `src`", "scorer_ffi.rs"],
        ),
        (
            vec![("bot", bot.clone()), ("bot", bot.clone())],
            edgeguard_result::ConfigInvalid,
            vec!["model name `bot` is given twice"],
        ),
        (
            vec![("", bot.clone())],
            edgeguard_result::ConfigInvalid,
            vec!["model 0 has an empty name"],
        ),
        (vec![], edgeguard_result::ConfigInvalid, vec!["no models"]),
    ];
    for (models, code, says) in cases {
        let (r, out, message) = try_new(&args(&models));
        assert_eq!(r, code, "{message}");
        assert!(out.is_null());
        for part in says {
            assert!(message.contains(part), "{message:?} lacks {part:?}");
        }
    }
}

#[test]
fn non_utf8_names_are_a_config_error() {
    let name = CString::new(vec![b'b', 0xff]).unwrap();
    let path = CString::new(root("models/bot.json").display().to_string()).unwrap();
    let (names, paths) = ([name.as_ptr()], [path.as_ptr()]);
    let mut out = null_mut();
    let mut buf = [0 as c_char; 64];
    let r = unsafe {
        edgeguard_scorer_new(
            names.as_ptr(),
            paths.as_ptr(),
            1,
            &mut out,
            buf.as_mut_ptr(),
            64,
        )
    };
    assert_eq!(r, edgeguard_result::ConfigInvalid);
    assert!(out.is_null());
    let message = unsafe { CStr::from_ptr(buf.as_ptr()) };
    assert_eq!(message.to_str().unwrap(), "model 0 name is not UTF-8");
}

#[test]
fn error_messages_are_truncated_to_the_buffer() {
    let a = args(&[("gone", root("models/missing.json"))]);
    let mut out = null_mut();
    let mut full = [0 as c_char; 512];
    let mut short = [0x55 as c_char; 12];
    unsafe {
        let r = edgeguard_scorer_new(
            a.names.as_ptr(),
            a.paths.as_ptr(),
            1,
            &mut out,
            full.as_mut_ptr(),
            512,
        );
        assert_eq!(r, edgeguard_result::Io);
        let r = edgeguard_scorer_new(
            a.names.as_ptr(),
            a.paths.as_ptr(),
            1,
            &mut out,
            short.as_mut_ptr(),
            12,
        );
        assert_eq!(r, edgeguard_result::Io);
        // No buffer at all: the code alone.
        let r = edgeguard_scorer_new(
            a.names.as_ptr(),
            a.paths.as_ptr(),
            1,
            &mut out,
            null_mut(),
            100,
        );
        assert_eq!(r, edgeguard_result::Io);
    }
    let full = unsafe { CStr::from_ptr(full.as_ptr()) }.to_bytes();
    let short = unsafe { CStr::from_ptr(short.as_ptr()) }.to_bytes();
    assert!(full.len() > 11);
    assert_eq!(short, &full[..11]);
    assert!(out.is_null());
}

#[test]
fn score_refuses_nulls_bad_counts_and_versions_writing_nothing() {
    let handle = new(&shipped());
    let r = &fixture_requests()[0];
    let headers = r.ffi_headers();
    let req = c_request(r, &headers);
    let mut out = [7.0f64; 3];
    let p = out.as_mut_ptr();
    unsafe {
        assert_eq!(
            edgeguard_scorer_score(null(), &req, p, 2),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_scorer_score(handle, null(), p, 2),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_scorer_score(handle, &req, null_mut(), 2),
            edgeguard_result::NullParameter
        );
        let no_headers = edgeguard_request {
            headers: null(),
            ..req
        };
        assert_eq!(
            edgeguard_scorer_score(handle, &no_headers, p, 2),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_scorer_score(handle, &req, p, 1),
            edgeguard_result::BufferTooSmall
        );
        assert_eq!(
            edgeguard_scorer_score(handle, &req, p, 0),
            edgeguard_result::BufferTooSmall
        );
        assert_eq!(
            edgeguard_scorer_score(handle, &req, p, 3),
            edgeguard_result::InvalidArgument
        );
        for version in [-1, 65536] {
            let bad = edgeguard_request {
                http_version: version,
                ..req
            };
            assert_eq!(
                edgeguard_scorer_score(handle, &bad, p, 2),
                edgeguard_result::InvalidArgument
            );
        }
    }
    assert_eq!(out, [7.0; 3]);

    // Null strings and no headers are an empty request, still scored.
    let empty = edgeguard_request {
        method: edgeguard_str {
            len: 0,
            data: null(),
        },
        uri: edgeguard_str {
            len: -5,
            data: null(),
        },
        client_addr: edgeguard_str {
            len: 3,
            data: null(),
        },
        http_version: 11,
        headers: null(),
        headers_len: 0,
        tls: std::ptr::null(),
        request_id: edgeguard::ffi::edgeguard_str::EMPTY,
        peer_addr: edgeguard::ffi::edgeguard_str::EMPTY,
    };
    unsafe {
        assert_eq!(
            edgeguard_scorer_score(handle, &empty, p, 2),
            edgeguard_result::Ok
        );
        edgeguard_scorer_free(handle);
    }
    assert!(out[..2].iter().all(|s| (0.0..=1.0).contains(s)));
    assert_eq!(out[2], 7.0);
}

#[test]
fn one_scorer_serves_several_threads() {
    struct Shared(*mut edgeguard_scorer);
    // SAFETY: the handle is immutable after loading (documented Sync).
    unsafe impl Sync for Shared {}
    impl Shared {
        // A method, so closures capture the whole `Shared`, not its pointer.
        fn get(&self) -> *const edgeguard_scorer {
            self.0
        }
    }
    let handle = Shared(new(&shipped()));
    let requests = fixture_requests();
    let score = |r: &OwnedRequest| {
        let headers = r.ffi_headers();
        let mut out = [0.0; 2];
        let result = unsafe {
            edgeguard_scorer_score(handle.get(), &c_request(r, &headers), out.as_mut_ptr(), 2)
        };
        assert_eq!(result, edgeguard_result::Ok);
        out
    };
    let alone: Vec<[f64; 2]> = requests.iter().map(score).collect();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| s.spawn(|| requests.iter().map(score).collect::<Vec<_>>()))
            .collect();
        for w in workers {
            assert_eq!(w.join().unwrap(), alone);
        }
    });
    unsafe { edgeguard_scorer_free(handle.0) };
}
