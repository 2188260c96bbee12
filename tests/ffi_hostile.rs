//! Hostile input at the C ABI, called from Rust exactly as C would call it:
//! null pointers for every pointer argument, zero and huge lengths, bytes that
//! are not UTF-8, model files that are empty, truncated, absurd or nested
//! deeper than any parser stack, NaN and infinities, error buffers of length
//! 0/1/short and result codes nobody defined.
//!
//! Every case must return a documented code (never `Panic`: a caught panic is
//! still a bug), leave a message when it fails, stay within a bounded amount
//! of memory, and never let an internal header through.
//! `tests/c/hostile.c` runs the same families of cases from C under
//! ASan/UBSan and valgrind.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};

use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::headers::*;
use edgeguard::ffi::model::*;
use edgeguard::ffi::{edgeguard_header, edgeguard_str};
use edgeguard::ffi::{edgeguard_result_text, edgeguard_version};

#[path = "access_support/mod.rs"]
mod access_support;

/// Records the largest single allocation, so a model that claims 10^12 trees
/// cannot pass by merely not crashing: it must also not try to reserve them.
struct LargestAlloc;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for LargestAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: LargestAlloc = LargestAlloc;

/// No single allocation of a hostile load may exceed this: the largest input
/// any case feeds in is a few MiB, and a bounded loader needs a small multiple.
const ALLOC_BOUND: usize = 64 << 20;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/catboost");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).expect("fixture")
}

fn msg(buf: &[c_char]) -> String {
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn text(code: i32) -> String {
    unsafe { CStr::from_ptr(edgeguard_result_text(code)) }
        .to_string_lossy()
        .into_owned()
}

// ---------------------------------------------------------------- result codes

#[test]
fn every_result_code_has_its_own_text_and_unknown_ones_say_so() {
    let known: Vec<String> = (0..=10).map(text).collect();
    for (i, t) in known.iter().enumerate() {
        assert!(
            !t.is_empty() && t != "unknown result code",
            "code {i}: {t:?}"
        );
        assert_eq!(known.iter().filter(|u| *u == t).count(), 1, "{t:?} reused");
    }
    for code in [-1, 11, 12, 255, 256, i32::MIN, i32::MAX] {
        assert_eq!(text(code), "unknown result code", "code {code}");
    }
    let version = unsafe { CStr::from_ptr(edgeguard_version()) };
    assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}

// ----------------------------------------------------------------- header sets

/// Parses `text` through the buffer export; the set (if any) is freed.
fn parse_list(text: &[u8], source: Option<&CStr>) -> (R, String) {
    let mut set = null_mut();
    let mut err = [0 as c_char; 512];
    let code = unsafe {
        edgeguard_header_set_new_from_buffer(
            text.as_ptr(),
            text.len(),
            source.map_or(null(), CStr::as_ptr),
            &mut set,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    assert_ne!(code, R::Panic);
    assert_eq!(code == R::Ok, !set.is_null(), "out written iff Ok");
    unsafe { edgeguard_header_set_free(set) };
    (code, msg(&err))
}

fn new_set(text: &[u8]) -> *mut edgeguard_header_set {
    let mut set = null_mut();
    let code = unsafe {
        edgeguard_header_set_new_from_buffer(
            text.as_ptr(),
            text.len(),
            null(),
            &mut set,
            null_mut(),
            0,
        )
    };
    assert_eq!(code, R::Ok);
    set
}

#[test]
fn header_list_constructors_refuse_null_pointers() {
    let mut set = null_mut();
    let mut err = [0 as c_char; 64];
    let list = b"x-user-id\n";
    unsafe {
        let path = c"/dev/null";
        assert_eq!(
            edgeguard_header_set_new_from_file(null(), &mut set, err.as_mut_ptr(), 64),
            R::NullParameter
        );
        assert_eq!(
            edgeguard_header_set_new_from_file(path.as_ptr(), null_mut(), err.as_mut_ptr(), 64),
            R::NullParameter
        );
        assert_eq!(
            edgeguard_header_set_new_from_buffer(
                list.as_ptr(),
                10,
                null(),
                null_mut(),
                null_mut(),
                0
            ),
            R::NullParameter
        );
        assert_eq!(
            edgeguard_header_set_new_from_buffer(null(), 10, null(), &mut set, null_mut(), 0),
            R::NullParameter
        );
        assert!(set.is_null(), "nothing written on failure");
        edgeguard_header_set_free(null_mut());
        assert_eq!(edgeguard_header_set_len(null()), 0);
    }
}

#[test]
fn hostile_header_lists_are_refused_with_a_code_and_a_message() {
    let long_name = vec![b'a'; 1 << 20];
    let cases: &[(&str, &[u8], R)] = &[
        ("name with NUL", b"x-user\0-id\n", R::HeaderListInvalid),
        ("8-bit name", b"x-\xc3\xa9t\xe9\n", R::HeaderListInvalid),
        ("invalid UTF-8", b"\xff\xfe\xfd\n", R::HeaderListInvalid),
        ("bare star", b"*\n", R::HeaderListInvalid),
        ("inner star", b"x-*-id\n", R::HeaderListInvalid),
        ("hash inside name", b"x-a#b\n", R::HeaderListInvalid),
        ("1 MiB name", &long_name, R::HeaderListInvalid),
        ("colon", b"x-user-id: 1\n", R::HeaderListInvalid),
    ];
    for (what, list, want) in cases {
        let (code, message) = parse_list(list, Some(c"hostile.list"));
        assert_eq!(code, *want, "{what}: {message}");
        assert!(message.starts_with("hostile.list:"), "{what}: {message}");
    }
}

/// A list that holds no rule is refused as a list error: nothing was read
/// from any file, so `Io` would send an operator looking at permissions.
#[test]
fn empty_and_comment_only_lists_are_list_errors_not_io_errors() {
    let cases: &[(&str, &[u8])] = &[
        ("empty", b""),
        ("blank lines", b"\n\n  \r\n\t\n"),
        ("only comments", b"# x-user-id\n   # x-internal-*\n"),
    ];
    for (what, list) in cases {
        let (code, message) = parse_list(list, None);
        assert_eq!(code, R::HeaderListInvalid, "{what}: {message}");
        assert!(message.contains("no header names"), "{what}: {message}");
    }
    // A null buffer of length 0 is the empty list, not a null-pointer error.
    let mut set = null_mut();
    let code =
        unsafe { edgeguard_header_set_new_from_buffer(null(), 0, null(), &mut set, null_mut(), 0) };
    assert_eq!(code, R::HeaderListInvalid);
    assert!(set.is_null());
}

#[test]
fn header_list_files_that_are_missing_empty_or_not_utf8_named() {
    let dir = std::env::temp_dir().join(format!("edgeguard-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.list");
    std::fs::write(&empty, b"").unwrap();
    let comments = dir.join("comments.list");
    std::fs::write(&comments, b"# only a comment\n").unwrap();
    let load = |path: &CStr| {
        let mut set = null_mut();
        let mut err = [0 as c_char; 256];
        let code = unsafe {
            edgeguard_header_set_new_from_file(path.as_ptr(), &mut set, err.as_mut_ptr(), 256)
        };
        assert!(set.is_null());
        (code, msg(&err))
    };
    let missing = CString::new(dir.join("missing.list").to_str().unwrap()).unwrap();
    let (code, message) = load(&missing);
    assert_eq!(code, R::Io, "{message}");
    assert!(message.contains("missing.list"), "{message}");
    let (code, message) = load(c"/nonexistent/\xff\xfe.list");
    assert_eq!(code, R::InvalidArgument, "{message}");
    assert!(!message.is_empty());
    let (code, message) = load(c"/");
    assert_eq!(code, R::Io, "a directory: {message}");
    for path in [&empty, &comments] {
        let (code, message) = load(&CString::new(path.to_str().unwrap()).unwrap());
        assert_eq!(code, R::HeaderListInvalid, "{}: {message}", path.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn source_names_that_are_not_utf8_still_name_the_list() {
    let (code, message) = parse_list(b"x y\n", Some(c"list-\xff.txt"));
    assert_eq!(code, R::HeaderListInvalid);
    assert!(message.starts_with("list-\u{fffd}.txt:1:"), "{message}");
}

#[test]
fn error_buffers_of_length_zero_one_and_short_are_respected() {
    let list = b"bad name\n";
    for len in [0usize, 1, 2, 7, 16] {
        let mut err = [0x55 as c_char; 32];
        let mut set = null_mut();
        let code = unsafe {
            edgeguard_header_set_new_from_buffer(
                list.as_ptr(),
                list.len(),
                c"src".as_ptr(),
                &mut set,
                err.as_mut_ptr(),
                len,
            )
        };
        assert_eq!(code, R::HeaderListInvalid);
        if len == 0 {
            assert!(err.iter().all(|&b| b == 0x55), "len 0 must not be touched");
            continue;
        }
        let written = msg(&err);
        assert_eq!(written.len(), len - 1, "len {len}: {written:?}");
        assert!("src:1:".starts_with(&written) || written.starts_with("src:1:"));
        assert!(err[len..].iter().all(|&b| b == 0x55), "len {len}: overrun");
    }
}

/// The internal names of `headers` by the rules of `list_names` (exact) and
/// `prefixes`, decided without the trie: the reference answer.
fn naive_internal(name: &[u8], exact: &[&[u8]], prefixes: &[&[u8]]) -> bool {
    let fold = |b: u8| {
        if b == b'_' {
            b'-'
        } else {
            b.to_ascii_lowercase()
        }
    };
    let folded: Vec<u8> = name.iter().map(|&b| fold(b)).collect();
    exact.iter().any(|e| folded == *e) || prefixes.iter().any(|p| folded.starts_with(p))
}

struct Found {
    code: R,
    clear: Vec<u32>,
    matched: usize,
}

fn find(set: *const edgeguard_header_set, headers: &[edgeguard_header]) -> Found {
    let mut clear = vec![u32::MAX; headers.len()];
    let (mut n, mut matched) = (usize::MAX, usize::MAX);
    let code = unsafe {
        edgeguard_header_set_find_internal(
            set,
            headers.as_ptr(),
            headers.len(),
            clear.as_mut_ptr(),
            clear.len(),
            &mut n,
            &mut matched,
        )
    };
    if code == R::Ok {
        clear.truncate(n);
    }
    Found {
        code,
        clear,
        matched,
    }
}

/// Every header the reference calls internal must be named (ASCII
/// case-insensitively) by one of the indices to clear; nothing else may be.
fn assert_all_internal_reported(
    headers: &[edgeguard_header],
    found: &Found,
    exact: &[&[u8]],
    prefixes: &[&[u8]],
) {
    assert_eq!(found.code, R::Ok);
    let key = |h: &edgeguard_header| unsafe { h.key.as_bytes() };
    let mut matched = 0;
    for (i, h) in headers.iter().enumerate() {
        let internal = naive_internal(key(h), exact, prefixes);
        matched += usize::from(internal);
        let cleared = found
            .clear
            .iter()
            .any(|&j| key(&headers[j as usize]).eq_ignore_ascii_case(key(h)));
        assert_eq!(
            internal,
            cleared,
            "header {i} {:?}",
            String::from_utf8_lossy(key(h))
        );
    }
    assert_eq!(found.matched, matched);
}

const LIST: &[u8] = b"x-user-id\nx-internal-*\ncf-connecting-ip\n";
const EXACT: &[&[u8]] = &[b"x-user-id", b"cf-connecting-ip"];
const PREFIXES: &[&[u8]] = &[b"x-internal-"];

#[test]
fn find_internal_refuses_null_pointers_and_short_outputs() {
    let set = new_set(LIST);
    let headers = [edgeguard_header::new(b"x-user-id", b"1")];
    let mut clear = [0u32; 4];
    let (mut n, mut m) = (7usize, 7usize);
    unsafe {
        let call = |set,
                    h: *const edgeguard_header,
                    len,
                    c: *mut u32,
                    cap,
                    n: *mut usize,
                    m: *mut usize| {
            edgeguard_header_set_find_internal(set, h, len, c, cap, n, m)
        };
        let (h, c) = (headers.as_ptr(), clear.as_mut_ptr());
        assert_eq!(call(null(), h, 1, c, 4, &mut n, &mut m), R::NullParameter);
        assert_eq!(call(set, null(), 1, c, 4, &mut n, &mut m), R::NullParameter);
        assert_eq!(
            call(set, h, 1, null_mut(), 4, &mut n, &mut m),
            R::NullParameter
        );
        assert_eq!(call(set, h, 1, c, 4, null_mut(), &mut m), R::NullParameter);
        assert_eq!(call(set, h, 1, c, 4, &mut n, null_mut()), R::NullParameter);
        assert_eq!(call(set, h, 1, c, 0, &mut n, &mut m), R::InvalidArgument);
        assert_eq!((n, m), (7, 7), "outputs untouched on failure");
        // A huge count is refused before the array is read.
        assert_eq!(
            call(set, h, usize::MAX, c, 4, &mut n, &mut m),
            R::InvalidArgument
        );
        assert_eq!(
            call(
                set,
                h,
                (u32::MAX as usize) + 1,
                c,
                usize::MAX,
                &mut n,
                &mut m
            ),
            R::InvalidArgument
        );
        // No headers at all, even with a null array, is an empty request.
        assert_eq!(call(set, null(), 0, c, 0, &mut n, &mut m), R::Ok);
        assert_eq!((n, m), (0, 0));
        edgeguard_header_set_free(set);
    }
}

#[test]
fn hostile_requests_still_get_every_internal_header_reported() {
    let set = new_set(LIST);
    let big = vec![b'v'; 1 << 20];
    let long_prefixed = [b"x-internal-".as_slice(), &[b'a'; 5000]].concat();
    let spellings: Vec<Vec<u8>> = vec![
        b"x-user-id".to_vec(),
        b"X-USER-ID".to_vec(),
        b"x_user_id".to_vec(),
        b"X_User-Id".to_vec(),
        b"cf-connecting-ip".to_vec(),
        b"x-internal-".to_vec(),
        b"X_INTERNAL_route".to_vec(),
        long_prefixed,
        b"x-user-id\0".to_vec(),
        b"x-user-id ".to_vec(),
        b"\xffx-user-id".to_vec(),
        b"x-us\xc3\xa9r-id".to_vec(),
        b"x-user-i".to_vec(),
        b"".to_vec(),
        b"\0".to_vec(),
        vec![0xff; 300],
        b"accept".to_vec(),
    ];
    // 10 000 headers cycling through the spellings, each with a 1 MiB value.
    let headers: Vec<edgeguard_header> = (0..10_000)
        .map(|i| edgeguard_header::new(&spellings[i % spellings.len()], &big))
        .collect();
    let found = find(set, &headers);
    assert_all_internal_reported(&headers, &found, EXACT, PREFIXES);
    assert!(found.matched >= 10_000 / spellings.len() * 8);

    // Negative lengths read as empty: such a key can never be internal, and
    // its bytes (here a real internal name) must not be read.
    let name = b"x-user-id";
    let negative = edgeguard_header {
        key: edgeguard_str {
            len: -9,
            data: name.as_ptr(),
        },
        value: edgeguard_str {
            len: i32::MIN,
            data: null(),
        },
    };
    let null_key = edgeguard_header {
        key: edgeguard_str {
            len: 9,
            data: null(),
        },
        value: edgeguard_str {
            len: 0,
            data: null(),
        },
    };
    let mixed = [
        negative,
        null_key,
        edgeguard_header::new(name, b""),
        negative,
    ];
    let found = find(set, &mixed);
    assert_eq!(
        (found.code, found.clear.as_slice(), found.matched),
        (R::Ok, &[2u32][..], 1)
    );
    unsafe { edgeguard_header_set_free(set) };
}

#[test]
fn a_large_list_matches_like_the_reference() {
    let names: Vec<Vec<u8>> = (0..10_000)
        .map(|i| format!("x-int{i}").into_bytes())
        .collect();
    let mut list = names.join(&b'\n');
    list.extend_from_slice(b"\n# trailing comment\nx-p-*\n");
    let set = new_set(&list);
    assert_eq!(unsafe { edgeguard_header_set_len(set) }, 10_001);
    let exact: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    let request: Vec<Vec<u8>> = (0..10_000)
        .map(|i| match i % 4 {
            0 => format!("X_INT{}", i * 7 % 12_000),
            1 => format!("x-p-{i}"),
            2 => format!("x-int{i}x"),
            _ => format!("x-p{i}"),
        })
        .map(String::into_bytes)
        .collect();
    let headers: Vec<edgeguard_header> = request
        .iter()
        .map(|k| edgeguard_header::new(k, b""))
        .collect();
    let found = find(set, &headers);
    assert_all_internal_reported(&headers, &found, &exact, &[b"x-p-"]);
    unsafe { edgeguard_header_set_free(set) };
}

// ---------------------------------------------------------------------- models

fn load_model(json: &[u8], name: &CStr) -> (R, String, *mut edgeguard_model) {
    let mut model = null_mut();
    let mut err = [0 as c_char; 512];
    let code = unsafe {
        edgeguard_model_new_from_buffer(
            json.as_ptr(),
            json.len(),
            name.as_ptr(),
            &mut model,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    assert_ne!(code, R::Panic, "{}", msg(&err));
    assert_eq!(code == R::Ok, !model.is_null());
    (code, msg(&err), model)
}

fn nested(depth: usize) -> Vec<u8> {
    let mut v = b"{\"oblivious_trees\":".to_vec();
    v.extend(vec![b'['; depth]);
    v.extend(vec![b']'; depth]);
    v.push(b'}');
    v
}

/// Rewrites one part of a real model's JSON.
fn mutated(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(&fixture(name)).unwrap();
    edit(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn hostile_models_are_refused_with_a_code_a_message_and_bounded_memory() {
    use serde_json::json;
    let real = fixture("binary_ctr.json");
    let tree = |splits: usize, leaves: usize| {
        json!({"splits": vec![json!({"split_index": 0, "split_type": "FloatFeature",
            "float_feature_index": 0, "border": 0.5}); splits],
            "leaf_values": vec![0.0; leaves]})
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("whitespace", b" \n\t ".to_vec()),
        ("not JSON", b"GIF89a\x00\x01\xff".to_vec()),
        ("JSON null", b"null".to_vec()),
        ("JSON array", b"[1,2,3]".to_vec()),
        ("empty object", b"{}".to_vec()),
        ("truncated half", real[..real.len() / 2].to_vec()),
        ("truncated by one", real[..real.len() - 1].to_vec()),
        (
            "invalid UTF-8 string",
            [&real[..2], b"\xff\xfe", &real[2..]].concat(),
        ),
        ("nested 10 000", nested(10_000)),
        ("nested 100 000 in model_info", {
            let mut v = b"{\"model_info\":".to_vec();
            v.extend(vec![b'['; 100_000]);
            v
        }),
        (
            "10^12 trees claimed",
            mutated("regression_cat.json", |m| {
                m["oblivious_trees"] = json!(1_000_000_000_000u64)
            }),
        ),
        (
            "2^60 leaves (depth 60)",
            mutated("regression_cat.json", |m| {
                m["oblivious_trees"] = json!([tree(60, 1)])
            }),
        ),
        (
            "depth 17",
            mutated("regression_cat.json", |m| {
                m["oblivious_trees"] = json!([tree(17, 1 << 17)])
            }),
        ),
        (
            "leaves not 2^depth",
            mutated("regression_cat.json", |m| {
                m["oblivious_trees"] = json!([tree(2, 5)])
            }),
        ),
        (
            "zero leaves",
            mutated("regression_cat.json", |m| {
                m["oblivious_trees"] = json!([tree(0, 0)])
            }),
        ),
        (
            "feature index 10^12",
            mutated("regression_cat.json", |m| {
                m["features_info"]["float_features"][0]["feature_index"] =
                    json!(1_000_000_000_000u64)
            }),
        ),
        (
            "feature index 2^60",
            mutated("regression_cat.json", |m| {
                m["features_info"]["categorical_features"][0]["feature_index"] = json!(1u64 << 60)
            }),
        ),
        (
            "split index 2^60",
            mutated("regression_cat.json", |m| {
                m["oblivious_trees"][0]["splits"][0]["split_index"] = json!(1u64 << 60)
            }),
        ),
        (
            "negative split index",
            mutated("regression_cat.json", |m| {
                m["oblivious_trees"][0]["splits"][0]["split_index"] = json!(-1)
            }),
        ),
        (
            "unknown split type",
            mutated("regression_cat.json", |m| {
                m["oblivious_trees"][0]["splits"][0]["split_type"] = json!("Quantum")
            }),
        ),
        (
            "NaN-ish border string",
            mutated("regression_cat.json", |m| {
                m["features_info"]["float_features"][0]["borders"] = json!(["NaN"])
            }),
        ),
        (
            "huge bias vector",
            mutated("regression_cat.json", |m| {
                m["scale_and_bias"] = json!([1.0, vec![0.0; 100_000]])
            }),
        ),
        (
            "ctr denominator 2^60",
            mutated("binary_ctr.json", |m| {
                let tables = m["ctr_data"].as_object_mut().unwrap();
                let first = tables.values_mut().next().unwrap();
                first["counter_denominator"] = json!(1u64 << 60)
            }),
        ),
        (
            "ctr hash map not whole records",
            mutated("binary_ctr.json", |m| {
                let tables = m["ctr_data"].as_object_mut().unwrap();
                let first = tables.values_mut().next().unwrap();
                first["hash_map"].as_array_mut().unwrap().pop();
            }),
        ),
        (
            "ctr bucket hash not decimal",
            mutated("binary_ctr.json", |m| {
                let tables = m["ctr_data"].as_object_mut().unwrap();
                let first = tables.values_mut().next().unwrap();
                first["hash_map"][0] = json!("0x1f");
            }),
        ),
        (
            "non-symmetric trees",
            mutated("regression_cat.json", |m| {
                m["trees"] = json!([]);
                m.as_object_mut().unwrap().remove("oblivious_trees");
            }),
        ),
    ];
    for (what, json) in &cases {
        let (code, message, model) = load_model(json, c"hostile.json");
        assert_eq!(code, R::ModelInvalid, "{what}: {message}");
        assert!(message.contains("hostile.json"), "{what}: {message}");
        unsafe { edgeguard_model_free(model) };
    }
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(largest < ALLOC_BOUND, "an allocation of {largest} bytes");
}

#[test]
fn model_constructors_refuse_null_pointers_and_report_io() {
    let json = fixture("regression_cat.json");
    let mut model = null_mut();
    let mut err = [0 as c_char; 256];
    unsafe {
        let e = err.as_mut_ptr();
        assert_eq!(
            edgeguard_model_new_from_file(null(), &mut model, e, 256),
            R::NullParameter
        );
        assert_eq!(
            edgeguard_model_new_from_file(c"x.json".as_ptr(), null_mut(), e, 256),
            R::NullParameter
        );
        let name = c"m".as_ptr();
        let (buf, len) = (json.as_ptr(), json.len());
        assert_eq!(
            edgeguard_model_new_from_buffer(null(), len, name, &mut model, e, 256),
            R::NullParameter
        );
        assert_eq!(
            edgeguard_model_new_from_buffer(buf, len, null(), &mut model, e, 256),
            R::NullParameter
        );
        assert_eq!(
            edgeguard_model_new_from_buffer(buf, len, name, null_mut(), e, 256),
            R::NullParameter
        );
        assert!(model.is_null());
        // A null buffer of length 0 is the empty document.
        assert_eq!(
            edgeguard_model_new_from_buffer(null(), 0, name, &mut model, e, 256),
            R::ModelInvalid
        );
        for path in [
            c"/nonexistent/model.json",
            c"/nonexistent/\xff\xfe.json",
            c"/",
            c"",
        ] {
            let code = edgeguard_model_new_from_file(path.as_ptr(), &mut model, e, 256);
            assert_eq!(code, R::Io, "{path:?}: {}", msg(&err));
            assert!(!msg(&err).is_empty());
        }
        assert!(model.is_null());
        edgeguard_model_free(null_mut());
        assert_eq!(edgeguard_model_float_feature_count(null()), 0);
        assert_eq!(edgeguard_model_cat_feature_count(null()), 0);
        assert_eq!(edgeguard_model_dimension(null()), 0);
    }
}

struct Loaded {
    model: *mut edgeguard_model,
    floats: usize,
    cats: usize,
    dim: usize,
}

fn real_model(name: &str) -> Loaded {
    let (code, message, model) = load_model(&fixture(name), c"fixture");
    assert_eq!(code, R::Ok, "{message}");
    unsafe {
        Loaded {
            model,
            floats: edgeguard_model_float_feature_count(model),
            cats: edgeguard_model_cat_feature_count(model),
            dim: edgeguard_model_dimension(model),
        }
    }
}

fn predict(m: &Loaded, floats: &[f32], cats: &[i32], ty: i32, out: &mut [f64]) -> R {
    unsafe {
        edgeguard_model_predict(
            m.model,
            floats.as_ptr(),
            floats.len(),
            cats.as_ptr(),
            cats.len(),
            ty,
            out.as_mut_ptr(),
            out.len(),
        )
    }
}

#[test]
fn predict_refuses_bad_arguments_and_writes_nothing() {
    for name in [
        "regression_cat.json",
        "binary_ctr.json",
        "multiclass_cat.json",
    ] {
        let m = real_model(name);
        let floats = vec![0.5f32; m.floats];
        let cats = vec![7i32; m.cats];
        let mut out = vec![-42.0; m.dim + 1];
        let sentinel = out.clone();
        let check = |code: R, want: R, what: &str, out: &[f64]| {
            assert_eq!(code, want, "{name}: {what}");
            assert_eq!(out, sentinel.as_slice(), "{name}: {what} wrote output");
        };
        check(
            predict(
                &m,
                &floats[..m.floats.saturating_sub(1)],
                &cats,
                0,
                &mut out,
            ),
            if m.floats == 0 {
                R::Ok
            } else {
                R::FeatureCount
            },
            "one float short",
            &out.clone(),
        );
        let more = vec![0.5f32; m.floats + 1];
        check(
            predict(&m, &more, &cats, 0, &mut out),
            R::FeatureCount,
            "one float too many",
            &out.clone(),
        );
        let more_cats = vec![0i32; m.cats + 1];
        check(
            predict(&m, &floats, &more_cats, 0, &mut out),
            R::FeatureCount,
            "one cat too many",
            &out.clone(),
        );
        for ty in [-1, 3, 4, 1000, i32::MIN, i32::MAX] {
            check(
                predict(&m, &floats, &cats, ty, &mut out),
                R::InvalidArgument,
                "prediction type",
                &out.clone(),
            );
        }
        check(
            predict(&m, &floats, &cats, 0, &mut out[..0]),
            R::BufferTooSmall,
            "out_len 0",
            &out.clone(),
        );
        if m.dim > 1 {
            check(
                predict(&m, &floats, &cats, 0, &mut out[..1]),
                R::BufferTooSmall,
                "out_len 1",
                &out.clone(),
            );
        }
        unsafe {
            let p = |f: *const f32, c: *const i32, o: *mut f64| {
                edgeguard_model_predict(m.model, f, m.floats, c, m.cats, 0, o, 4)
            };
            let mut o = [0.0; 4];
            assert_eq!(
                p(floats.as_ptr(), cats.as_ptr(), null_mut()),
                R::NullParameter
            );
            if m.floats > 0 {
                assert_eq!(p(null(), cats.as_ptr(), o.as_mut_ptr()), R::NullParameter);
            }
            if m.cats > 0 {
                assert_eq!(p(floats.as_ptr(), null(), o.as_mut_ptr()), R::NullParameter);
            }
            assert_eq!(
                edgeguard_model_predict(
                    null(),
                    floats.as_ptr(),
                    m.floats,
                    cats.as_ptr(),
                    m.cats,
                    0,
                    o.as_mut_ptr(),
                    4
                ),
                R::NullParameter
            );
            assert_eq!(
                edgeguard_model_predict_strings(
                    null(),
                    floats.as_ptr(),
                    m.floats,
                    null(),
                    0,
                    0,
                    o.as_mut_ptr(),
                    4
                ),
                R::NullParameter
            );
            assert_eq!(o, [0.0; 4]);
        }
        // Probability has no meaning for a regression: refused, not garbage.
        let mut one = [-42.0];
        let prob = predict(&m, &floats, &cats, 1, &mut out);
        if name.starts_with("regression") {
            assert_eq!(prob, R::InvalidArgument, "{name}");
            assert_eq!(
                predict(&m, &floats, &cats, 2, &mut one),
                R::InvalidArgument,
                "{name} class"
            );
        } else {
            assert_eq!(prob, R::Ok, "{name}");
        }
        unsafe { edgeguard_model_free(m.model) };
    }
}

#[test]
fn nan_and_infinite_inputs_and_any_cat_hash_give_finite_scores() {
    let specials = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        -0.0,
        0.0,
    ];
    let hashes = [0i32, -1, i32::MIN, i32::MAX, 1];
    for name in [
        "regression_cat.json",
        "binary_ctr.json",
        "multiclass_cat.json",
    ] {
        let m = real_model(name);
        let mut out = vec![0.0; m.dim];
        for (i, &x) in specials.iter().enumerate() {
            // All features at the special value, then every feature at a different one.
            let floats: Vec<f32> = (0..m.floats)
                .map(|k| {
                    if k == 0 {
                        x
                    } else {
                        specials[(i + k) % specials.len()]
                    }
                })
                .collect();
            let cats: Vec<i32> = (0..m.cats)
                .map(|k| hashes[(i + k) % hashes.len()])
                .collect();
            for ty in [0, 1, 2] {
                let code = predict(&m, &floats, &cats, ty, &mut out);
                if code == R::InvalidArgument && name.starts_with("regression") && ty != 0 {
                    continue;
                }
                assert_eq!(code, R::Ok, "{name} {x} type {ty}");
                let written = if ty == 2 { &out[..1] } else { &out[..] };
                assert!(
                    written.iter().all(|v| v.is_finite()),
                    "{name} {x} type {ty}: {written:?}"
                );
            }
        }
        unsafe { edgeguard_model_free(m.model) };
    }
}

#[test]
fn hostile_categorical_strings_hash_like_their_bytes() {
    let m = real_model("binary_ctr.json");
    let floats = vec![f32::NAN; m.floats];
    let big = vec![0xffu8; 1 << 20];
    let name = b"cat";
    let strings = [
        edgeguard_str {
            len: -1,
            data: name.as_ptr(),
        },
        edgeguard_str {
            len: i32::MIN,
            data: null(),
        },
        edgeguard_str {
            len: 5,
            data: null(),
        },
        edgeguard_str::from_slice(&big),
        edgeguard_str::from_slice(b"\0\xff\xfe"),
    ];
    let cats: Vec<edgeguard_str> = (0..m.cats).map(|i| strings[i % strings.len()]).collect();
    let hashes: Vec<i32> = cats
        .iter()
        .map(|s| unsafe { edgeguard_cat_hash(s.as_bytes().as_ptr(), s.as_bytes().len()) } as i32)
        .collect();
    for ty in [0, 1, 2] {
        let (mut a, mut b) = ([0.0; 1], [0.0; 1]);
        let code = unsafe {
            edgeguard_model_predict_strings(
                m.model,
                floats.as_ptr(),
                floats.len(),
                cats.as_ptr(),
                cats.len(),
                ty,
                a.as_mut_ptr(),
                1,
            )
        };
        assert_eq!(code, R::Ok);
        assert_eq!(predict(&m, &floats, &hashes, ty, &mut b), R::Ok);
        assert_eq!(a[0].to_bits(), b[0].to_bits(), "type {ty}");
    }
    unsafe {
        let empty = edgeguard_cat_hash(b"".as_ptr(), 0);
        assert_eq!(edgeguard_cat_hash(null(), 0), empty);
        assert_eq!(
            edgeguard_cat_hash(null(), 1 << 40),
            empty,
            "null with a length hashes as empty"
        );
        edgeguard_model_free(m.model);
    }
}

// --------------------------------------------------------------------- scorers

use edgeguard::ffi::scorer::*;
use edgeguard::scorer::{Scorer, MAX_MODELS};

const BOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/models/bot.json");
const SPOOF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/models/spoof.json");

/// A model as `edgeguard_scorer_new` takes it: name and path, as bytes.
type Model<'a> = (&'a [u8], &'a [u8]);

/// `edgeguard_scorer_new` over byte-string names and paths (so names may be
/// anything C could pass); the scorer, if any, is returned for the caller.
fn try_scorer(models: &[Model], errbuf_len: usize) -> (R, String, *mut edgeguard_scorer) {
    let owned: Vec<(CString, CString)> = models
        .iter()
        .map(|(n, p)| (CString::new(*n).unwrap(), CString::new(*p).unwrap()))
        .collect();
    let names: Vec<*const c_char> = owned.iter().map(|(n, _)| n.as_ptr()).collect();
    let paths: Vec<*const c_char> = owned.iter().map(|(_, p)| p.as_ptr()).collect();
    let mut out = null_mut();
    let mut err = vec![0 as c_char; errbuf_len.max(1)];
    let code = unsafe {
        edgeguard_scorer_new(
            names.as_ptr(),
            paths.as_ptr(),
            names.len(),
            &mut out,
            err.as_mut_ptr(),
            errbuf_len,
        )
    };
    assert_ne!(code, R::Panic, "{}", msg(&err));
    assert_eq!(code == R::Ok, !out.is_null(), "out written iff Ok");
    (code, msg(&err), out)
}

fn shipped_scorer() -> *mut edgeguard_scorer {
    let (code, message, s) = try_scorer(
        &[(b"bot", BOT.as_bytes()), (b"spoof", SPOOF.as_bytes())],
        512,
    );
    assert_eq!(code, R::Ok, "{message}");
    s
}

/// A directory of broken model files, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("edgeguard-hostile-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn scorer_new_refuses_null_for_every_pointer_argument() {
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let bot = CString::new(BOT).unwrap();
    let spoof = CString::new(SPOOF).unwrap();
    let paths = [bot.as_ptr(), spoof.as_ptr()];
    let mut out = null_mut();
    let mut err = [0 as c_char; 128];
    let e = err.as_mut_ptr();
    unsafe {
        let n = edgeguard_scorer_new(null(), paths.as_ptr(), 2, &mut out, e, 128);
        assert_eq!(n, R::NullParameter);
        let n = edgeguard_scorer_new(names.as_ptr(), null(), 2, &mut out, e, 128);
        assert_eq!(n, R::NullParameter);
        let n = edgeguard_scorer_new(names.as_ptr(), paths.as_ptr(), 2, null_mut(), e, 128);
        assert_eq!(n, R::NullParameter);
        for i in 0..2 {
            let (mut names, mut paths) = (names, paths);
            names[i] = null();
            let code = edgeguard_scorer_new(names.as_ptr(), paths.as_ptr(), 2, &mut out, e, 128);
            assert_eq!(code, R::NullParameter, "names[{i}]");
            names[i] = c"x".as_ptr();
            paths[i] = null();
            let code = edgeguard_scorer_new(names.as_ptr(), paths.as_ptr(), 2, &mut out, e, 128);
            assert_eq!(code, R::NullParameter, "paths[{i}]");
        }
        // A null error buffer only loses the message.
        let n = edgeguard_scorer_new(names.as_ptr(), paths.as_ptr(), 0, &mut out, null_mut(), 64);
        assert_eq!(n, R::ConfigInvalid);
    }
    assert!(out.is_null(), "out untouched on failure");
}

#[test]
fn scorer_counts_of_zero_too_many_and_size_max_are_config_errors_read_before_the_arrays() {
    let bot = BOT.as_bytes();
    let (code, message, _) = try_scorer(&[], 256);
    assert_eq!(code, R::ConfigInvalid);
    assert!(message.contains("no models given"), "{message}");
    let names: Vec<String> = (0..=MAX_MODELS).map(|i| format!("m{i}")).collect();
    let many: Vec<Model> = names.iter().map(|n| (n.as_bytes(), bot)).collect();
    let (code, message, _) = try_scorer(&many, 256);
    assert_eq!(code, R::ConfigInvalid);
    assert!(message.contains("65 models"), "{message}");
    // Two real entries, and counts no array has: only the count may be read.
    let names = [c"bot".as_ptr(), c"spoof".as_ptr()];
    let paths = [c"/nonexistent".as_ptr(), c"/nonexistent".as_ptr()];
    for n in [
        usize::MAX,
        usize::MAX / 8 + 1,
        1 << 40,
        u32::MAX as usize + 1,
    ] {
        let mut out = null_mut();
        let mut err = [0 as c_char; 256];
        let code = unsafe {
            edgeguard_scorer_new(
                names.as_ptr(),
                paths.as_ptr(),
                n,
                &mut out,
                err.as_mut_ptr(),
                256,
            )
        };
        assert_eq!(code, R::ConfigInvalid, "n = {n}");
        assert!(msg(&err).contains(&n.to_string()), "{}", msg(&err));
        assert!(out.is_null());
    }
}

#[test]
fn scorer_names_that_are_empty_repeated_control_or_not_utf8_are_config_errors() {
    let bot = BOT.as_bytes();
    let cases: [(&str, &[Model], &str); 7] = [
        ("empty", &[(b"", bot)], "empty name"),
        ("duplicate", &[(b"bot", bot), (b"bot", bot)], "twice"),
        ("tab", &[(b"b\tot", bot)], "control"),
        ("escape", &[(b"\x1b[31m", bot)], "control"),
        ("DEL", &[(b"bot\x7f", bot)], "control"),
        (
            "invalid UTF-8",
            &[(b"bot", bot), (b"\xff\xfe", bot)],
            "model 1",
        ),
        ("C1 control", &[("b\u{85}".as_bytes(), bot)], "control"),
    ];
    for (what, models, says) in cases {
        let (code, message, _) = try_scorer(models, 256);
        assert_eq!(code, R::ConfigInvalid, "{what}: {message}");
        assert!(message.contains(says), "{what}: {message}");
    }
    // 8-bit names that are valid UTF-8 are names like any other.
    let (code, message, s) = try_scorer(&[("bøt→🤖".as_bytes(), bot)], 256);
    assert_eq!(code, R::Ok, "{message}");
    let name = unsafe { CStr::from_ptr(edgeguard_scorer_model_name(s, 0)) };
    assert_eq!(name.to_str().unwrap(), "bøt→🤖");
    unsafe { edgeguard_scorer_free(s) };
}

#[test]
fn scorer_model_files_missing_empty_truncated_or_broken_are_refused_by_name_and_file() {
    let dir = Scratch::new("scorer");
    let real = std::fs::read(BOT).unwrap();
    let io = [
        ("missing", dir.0.join("missing.json").display().to_string()),
        ("a directory", dir.0.display().to_string()),
        ("empty path", String::new()),
    ];
    let invalid = [
        ("empty", dir.file("empty.json", b"")),
        ("not JSON", dir.file("gif.json", b"GIF89a\x00\xff")),
        ("truncated", dir.file("trunc.json", &real[..real.len() / 3])),
        (
            "truncated by one",
            dir.file("trunc1.json", &real[..real.len() - 1]),
        ),
        ("JSON null", dir.file("null.json", b"null")),
        ("nested 100 000", dir.file("deep.json", &nested(100_000))),
        (
            "a model the schema cannot feed",
            format!("{FIXTURES}/multiclass_cat.json"),
        ),
        ("/dev/null", "/dev/null".to_owned()),
    ];
    let cases = io
        .iter()
        .map(|c| (c, R::Io))
        .chain(invalid.iter().map(|c| (c, R::ModelInvalid)));
    for ((what, path), want) in cases {
        // The broken model comes second: the good first one must not leak
        // into a half-built scorer.
        let (code, message, s) =
            try_scorer(&[(b"bot", BOT.as_bytes()), (b"new", path.as_bytes())], 1024);
        assert_eq!(code, want, "{what}: {message}");
        assert!(message.contains("`new`"), "{what}: {message}");
        assert!(message.contains(path.as_str()), "{what}: {message}");
        assert!(s.is_null());
    }
    // A path that is not UTF-8 is still a path: missing, named.
    let (code, message, _) = try_scorer(&[(b"bot", b"/nonexistent/\xff\xfe.json")], 256);
    assert_eq!(code, R::Io, "{message}");
    assert!(message.contains("nonexistent"), "{message}");
    // Error buffers of 0 and 1 byte: the code alone, an empty string.
    for len in [0, 1] {
        let (code, message, _) = try_scorer(&[(b"x", b"/nonexistent")], len);
        assert_eq!(code, R::Io);
        assert_eq!(message, "", "errbuf_len {len}");
    }
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(largest < ALLOC_BOUND, "an allocation of {largest} bytes");
}

#[test]
fn scorer_introspection_of_null_and_out_of_range_is_empty_not_a_crash() {
    let s = shipped_scorer();
    unsafe {
        assert_eq!(edgeguard_scorer_model_count(null()), 0);
        assert_eq!(edgeguard_scorer_model_count(s), 2);
        for i in [0, 1] {
            assert!(edgeguard_scorer_model_name(null(), i).is_null());
            assert!(edgeguard_scorer_model_threshold(null(), i).is_nan());
            let t = edgeguard_scorer_model_threshold(s, i);
            assert!((0.0..=1.0).contains(&t), "model {i}: threshold {t}");
        }
        for i in [2, 64, usize::MAX] {
            assert!(edgeguard_scorer_model_name(s, i).is_null(), "{i}");
            assert!(edgeguard_scorer_model_threshold(s, i).is_nan(), "{i}");
        }
        edgeguard_scorer_free(null_mut());
        edgeguard_scorer_free(s);
    }
}

fn c_str(bytes: &[u8]) -> edgeguard_str {
    edgeguard_str::from_slice(bytes)
}

fn c_req(
    method: &[u8],
    uri: &[u8],
    client: &[u8],
    headers: &[edgeguard_header],
) -> edgeguard_request {
    edgeguard_request {
        method: c_str(method),
        uri: c_str(uri),
        client_addr: c_str(client),
        http_version: 11,
        headers: headers.as_ptr(),
        headers_len: headers.len(),
        tls: std::ptr::null(),
        request_id: edgeguard::ffi::edgeguard_str::EMPTY,
        peer_addr: edgeguard::ffi::edgeguard_str::EMPTY,
    }
}

/// Scores through the C ABI and through the Rust API on the same bytes:
/// the boundary must neither refuse nor change a hostile request.
fn score_both(s: *const edgeguard_scorer, rust: &Scorer, req: &edgeguard_request) -> [f64; 2] {
    let mut out = [-1.0f64; 2];
    let code = unsafe { edgeguard_scorer_score(s, req, out.as_mut_ptr(), 2) };
    assert_eq!(code, R::Ok);
    let headers = if req.headers_len == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(req.headers, req.headers_len) }
    };
    // The TLS facts as the boundary reads them: `present` = 1 and a JA4.
    let tls = unsafe { req.tls.as_ref() }
        .filter(|i| i.present == 1)
        .map(|i| {
            let ja4: &[u8] = unsafe { std::slice::from_raw_parts(i.ja4.as_ptr().cast(), 36) };
            let family = edgeguard::tls::Family::from_number(i32::from(i.family));
            edgeguard::features::TlsFacts::new(ja4, family).expect("a JA4")
        });
    let view = unsafe {
        edgeguard::features::Request::new(
            req.method.as_bytes(),
            req.uri.as_bytes(),
            req.http_version as u16,
            req.client_addr.as_bytes(),
            edgeguard::ffi::headers_from_c(headers),
        )
        .with_tls(tls)
    };
    let mut want = [0.0f64; 2];
    rust.score(&view, &mut want).unwrap();
    assert_eq!(out.map(f64::to_bits), want.map(f64::to_bits));
    assert!(out.iter().all(|p| (0.0..=1.0).contains(p)), "{out:?}");
    out
}

#[test]
fn hostile_requests_are_scored_like_the_rust_api_scores_them() {
    let s = shipped_scorer();
    let paths = [
        ("bot", std::path::Path::new(BOT)),
        ("spoof", std::path::Path::new(SPOOF)),
    ];
    let rust = Scorer::load(&paths).unwrap();
    let mib = vec![b'a'; 1 << 20];
    let high = vec![0xe9u8; 1 << 20];
    let ua = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36";

    let ten_thousand: Vec<edgeguard_header> = (0..10_000)
        .map(|i| match i % 4 {
            0 => edgeguard_header::new(b"user-agent", &mib),
            1 => edgeguard_header::new(b"accept-language", &high),
            2 => edgeguard_header::new(b"sec-ch-ua", b"\"\xff\0\"; v=\"999999999999999999999\""),
            _ => edgeguard_header::new(b"x-\0\xff\xfe", &mib),
        })
        .collect();
    score_both(s, &rust, &c_req(b"GET", b"/", b"127.0.0.1", &ten_thousand));

    let weird_headers = [
        edgeguard_header::new(b"", b""),
        edgeguard_header::new(b"\0", b"\0"),
        edgeguard_header::new(b"user-agent", b"\xff\xfe\xfd Chrome/\xff.0"),
        edgeguard_header::new(b"USER-AGENT", ua),
        edgeguard_header::new(b"accept", &mib),
        edgeguard_header::new(b"cookie", b";;;;=;=;"),
        edgeguard_header::new(b"referer", b"\x80"),
        edgeguard_header::new(b"sec-fetch-site", b"\xc3\x28"),
    ];
    let uris: [&[u8]; 6] = [
        b"",
        b"\0",
        b"/\xff\xfe?\xc3\x28=\x80",
        b"?&&&==&",
        &mib,
        &high,
    ];
    let clients: [&[u8]; 6] = [
        b"",
        b"::",
        b"\xff",
        b"999.999.999.999",
        b"fe80::1%eth0",
        &mib,
    ];
    let methods: [&[u8]; 4] = [b"", b"G\0T", b"\xff\xff", &mib];
    for (i, uri) in uris.iter().enumerate() {
        let req = c_req(methods[i % 4], uri, clients[i], &weird_headers);
        score_both(s, &rust, &req);
    }
    // Lengths that disagree with the pointers: negative, null with a length.
    let bad_strings = edgeguard_request {
        method: edgeguard_str {
            len: i32::MIN,
            data: b"GET".as_ptr(),
        },
        uri: edgeguard_str {
            len: i32::MAX,
            data: null(),
        },
        client_addr: edgeguard_str {
            len: -1,
            data: null(),
        },
        http_version: 0,
        headers: null(),
        headers_len: 0,
        tls: std::ptr::null(),
        request_id: edgeguard::ffi::edgeguard_str::EMPTY,
        peer_addr: edgeguard::ffi::edgeguard_str::EMPTY,
    };
    score_both(s, &rust, &bad_strings);
    for version in [0, 9, 10, 11, 20, 30, 65535] {
        score_both(
            s,
            &rust,
            &edgeguard_request {
                http_version: version,
                ..c_req(b"GET", b"/", b"::1", &[])
            },
        );
    }
    unsafe { edgeguard_scorer_free(s) };
}

#[test]
fn scoring_refuses_impossible_lengths_and_versions_before_reading_anything() {
    let s = shipped_scorer();
    let headers = [edgeguard_header::new(b"user-agent", b"curl/8.0")];
    let req = c_req(b"GET", b"/", b"127.0.0.1", &headers);
    let mut out = [-7.0f64; 2];
    let p = out.as_mut_ptr();
    unsafe {
        for n in [0, 1] {
            assert_eq!(
                edgeguard_scorer_score(s, &req, p, n),
                R::BufferTooSmall,
                "n = {n}"
            );
        }
        for n in [3, 64, u32::MAX as usize + 1, usize::MAX / 8 + 1, usize::MAX] {
            assert_eq!(
                edgeguard_scorer_score(s, &req, p, n),
                R::InvalidArgument,
                "n = {n}"
            );
        }
        for len in [
            u32::MAX as usize + 1,
            1 << 40,
            usize::MAX / 32 + 1,
            usize::MAX,
        ] {
            let huge = edgeguard_request {
                headers_len: len,
                tls: std::ptr::null(),
                request_id: edgeguard::ffi::edgeguard_str::EMPTY,
                peer_addr: edgeguard::ffi::edgeguard_str::EMPTY,
                ..req
            };
            assert_eq!(
                edgeguard_scorer_score(s, &huge, p, 2),
                R::InvalidArgument,
                "len {len}"
            );
            let null = edgeguard_request {
                headers: null(),
                ..huge
            };
            assert_eq!(
                edgeguard_scorer_score(s, &null, p, 2),
                R::NullParameter,
                "null, len {len}"
            );
        }
        for version in [-1, i32::MIN, 65536, i32::MAX] {
            let bad = edgeguard_request {
                http_version: version,
                ..req
            };
            assert_eq!(
                edgeguard_scorer_score(s, &bad, p, 2),
                R::InvalidArgument,
                "{version}"
            );
        }
        assert_eq!(edgeguard_scorer_score(null(), &req, p, 2), R::NullParameter);
        assert_eq!(edgeguard_scorer_score(s, null(), p, 2), R::NullParameter);
        assert_eq!(
            edgeguard_scorer_score(s, &req, null_mut(), 2),
            R::NullParameter
        );
        assert_eq!(
            edgeguard_scorer_score(null(), null(), null_mut(), usize::MAX),
            R::NullParameter
        );
        edgeguard_scorer_free(s);
    }
    assert_eq!(out, [-7.0; 2], "nothing written on refusal");
}

/// A ClientHello handshake message: `ciphers` as given, then `exts` as
/// (type, data) pairs; `ext_len_lie` is added to the extensions block
/// length (truncated or oversized extension data).
fn hello(ciphers: &[u16], exts: &[(u16, Vec<u8>)], ext_len_lie: i32) -> Vec<u8> {
    let mut body = vec![3, 3];
    body.extend([0x42; 32]);
    body.push(0);
    body.extend(((2 * ciphers.len()) as u16).to_be_bytes());
    for c in ciphers {
        body.extend(c.to_be_bytes());
    }
    body.extend([1, 0]);
    let block: Vec<u8> = exts
        .iter()
        .flat_map(|(t, d)| {
            let mut e = t.to_be_bytes().to_vec();
            e.extend((d.len() as u16).to_be_bytes());
            e.extend(d);
            e
        })
        .collect();
    if !exts.is_empty() || ext_len_lie != 0 {
        body.extend(((block.len() as i32 + ext_len_lie) as u16).to_be_bytes());
        body.extend(&block);
    }
    let mut msg = vec![1];
    msg.extend(&(body.len() as u32).to_be_bytes()[1..]);
    msg.extend(body);
    msg
}

#[test]
fn hostile_client_hellos_give_facts_the_scorer_takes_or_none() {
    use edgeguard::ffi::tls::{edgeguard_tls_info, edgeguard_tls_parse};
    let s = shipped_scorer();
    let paths = [
        ("bot", std::path::Path::new(BOT)),
        ("spoof", std::path::Path::new(SPOOF)),
    ];
    let rust = Scorer::load(&paths).unwrap();
    let headers = [
        edgeguard_header {
            key: c_str(b"user-agent"),
            value: c_str(b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"),
        },
        edgeguard_header {
            key: c_str(b"accept"),
            value: c_str(b"*/*"),
        },
    ];
    let sni = (0u16, b"\x00\x0c\x00\x00\x09localhost".to_vec());
    let alpn = (0x10u16, b"\x00\x03\x02h2".to_vec());
    let versions = (0x2bu16, b"\x02\x03\x04".to_vec());
    let many: Vec<u16> = (0..30_000u16).map(|i| 0x0100 + i).collect();
    let unknown: Vec<(u16, Vec<u8>)> = (0..2_000u16).map(|i| (0x5000 + i, vec![0; 3])).collect();
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        (
            "a browser-like hello",
            hello(
                &[0x0a0a, 0x1301, 0x1302],
                &[sni.clone(), alpn.clone(), versions.clone()],
                0,
            ),
            true,
        ),
        (
            "30 000 ciphers",
            hello(&many, std::slice::from_ref(&sni), 0),
            true,
        ),
        (
            "2 000 unknown extensions",
            hello(&[0x1301], &unknown, 0),
            true,
        ),
        ("no extensions at all", hello(&[0x1301], &[], 0), true),
        (
            "no SNI, ALPN or versions",
            hello(&[0x1301], &[(0x000a, vec![0, 2, 0, 0x17])], 0),
            true,
        ),
        (
            "extension data cut short",
            hello(&[0x1301], &[sni.clone(), alpn.clone()], -3),
            false,
        ),
        (
            "extension data past the end",
            hello(&[0x1301], &[sni.clone(), alpn.clone()], 40),
            false,
        ),
        (
            "ALPN whose lengths lie",
            hello(&[0x1301], &[(0x10, b"\xff\xff\x02h2".to_vec())], 0),
            true,
        ),
    ];
    let mut plain = [0.0; 2];
    let req = c_req(b"GET", b"/", b"127.0.0.1", &headers);
    assert_eq!(
        unsafe { edgeguard_scorer_score(s, &req, plain.as_mut_ptr(), 2) },
        R::Ok
    );
    for (what, bytes, parses) in cases {
        let mut info: edgeguard_tls_info = unsafe { std::mem::zeroed() };
        let mut err = [0 as c_char; 128];
        let code = unsafe {
            edgeguard_tls_parse(
                bytes.as_ptr(),
                bytes.len(),
                &mut info,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        assert_eq!(code == R::Ok, parses, "{what}: {code:?}");
        // A refused hello leaves no facts (`present` stays 0): the request
        // scores as plain HTTP does.
        let mut req = c_req(b"GET", b"/", b"127.0.0.1", &headers);
        req.tls = &info;
        let got = score_both(s, &rust, &req);
        if !parses {
            assert_eq!(got.map(f64::to_bits), plain.map(f64::to_bits), "{what}");
        }
    }
    unsafe { edgeguard_scorer_free(s) };
}

/// A client that forges the fingerprint header a trusted CDN sets: from
/// an address that is not a trusted proxy it changes no score and no
/// decision, and it is on the clear list (never reaches the origin); from
/// a trusted proxy the same header is read (the test can tell).
#[test]
fn a_forged_fingerprint_header_from_an_untrusted_address_changes_nothing() {
    use access_support::*;
    let list = list_set();
    let sc = scorer();
    let (_cfg, loc) = bound_location(
        r#"{"mode": "block", "trusted_proxies": ["10.0.0.0/8"], "proxy_profile": "cloudfront"}"#,
        sc,
        list,
    );
    let scratch = scratch();
    let chrome: &[(&[u8], &[u8])] = &[
        (b"Host", b"shop.test"),
        (b"User-Agent", b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"),
        (b"Accept", b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        (b"Accept-Language", b"en-US,en;q=0.9"),
        (b"Accept-Encoding", b"gzip, deflate"),
    ];
    let forgeries: &[&[u8]] = &[
        b"t13d1516h2_8daaf6152771_e5627efa2ab1",
        b"t13d3112h2_e8f1e7e78f70_6bebaf5329ac",
        b"not a fingerprint\x00\xff",
        b"",
    ];
    for (spelling, forged) in [
        (&b"CloudFront-Viewer-JA4-Fingerprint"[..], forgeries[0]),
        (b"cloudfront-viewer-ja4-fingerprint", forgeries[1]),
        (b"CLOUDFRONT-VIEWER-JA4-FINGERPRINT", forgeries[2]),
        (b"cloudfront-viewer-ja4-fingerprint", forgeries[3]),
    ] {
        let mut with = chrome.to_vec();
        with.insert(2, (spelling, forged));
        for peer in [&b""[..], b"192.0.2.7", b"11.0.0.1", b"::ffff:192.0.2.7"] {
            let mut plain = Req::new(chrome);
            plain.peer = peer;
            let mut forged_req = Req::new(&with);
            forged_req.peer = peer;
            let (rc, a) = run(loc, null(), &plain, 1_800_000_000, scratch);
            assert_eq!(rc, R::Ok);
            let (scores_a, action_a) = (scores_of(&a), a.action);
            let (rc, b) = run(loc, null(), &forged_req, 1_800_000_000, scratch);
            assert_eq!(rc, R::Ok);
            assert_eq!(scores_of(&b), scores_a, "{forged:?} from {peer:?}");
            assert_eq!(b.action, action_a);
            assert_eq!(cleared(&b), [2], "the forged header is stripped");
            assert_eq!(b.warning.len, 0);
        }
    }
    // From a trusted proxy the report is read: curl's TLS under a Chrome
    // UA is evidence there, so the test tells the two apart.
    let mut plain = Req::new(chrome);
    plain.peer = b"10.1.2.3";
    let mut with = chrome.to_vec();
    with.insert(2, (&b"CloudFront-Viewer-JA4-Fingerprint"[..], forgeries[1]));
    let mut reported = Req::new(&with);
    reported.peer = b"10.1.2.3";
    let (_, a) = run(loc, null(), &plain, 1_800_000_000, scratch);
    let a = scores_of(&a);
    let (_, b) = run(loc, null(), &reported, 1_800_000_000, scratch);
    assert!(scores_of(&b)[0] > a[0], "{:?} vs {a:?}", scores_of(&b));
    assert_eq!(cleared(&b), [2]);
}
