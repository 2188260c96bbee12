//! `edgeguard_location_run`'s record job, which `resty.edgeguard.record`
//! runs on every recorded request, `edgeguard_config_record` and
//! `edgeguard_headers_record` allocate nothing: dhat counts every heap
//! block while they run (with a roomy buffer, and with one too short;
//! redacting cookies, credentials and a clearance cookie, which is checked
//! with the keys; the record job once its scratch has grown to the head).

use std::ffi::c_char;
use std::path::Path;
use std::ptr::{null, null_mut};
use std::sync::Arc;

use edgeguard::challenge::{Challenge, Keys, Proof};
use edgeguard::ffi::config::{edgeguard_config, edgeguard_config_free, edgeguard_config_new};
use edgeguard::ffi::location::{
    edgeguard_effects, edgeguard_location_free, edgeguard_location_new, edgeguard_location_run,
    edgeguard_scratch_free, edgeguard_scratch_new,
};
use edgeguard::ffi::record::{edgeguard_config_record, edgeguard_headers_record};
use edgeguard::ffi::{edgeguard_header, edgeguard_request, edgeguard_result, edgeguard_str};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    recording_does_not_allocate();
    redacting_does_not_allocate();
    the_record_job_does_not_allocate();
    println!("record_alloc: 3 passed, 0 failed");
}

const SECRET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/challenge/secret"
);

fn text(s: &[u8]) -> edgeguard_str {
    edgeguard_str {
        len: s.len() as i32,
        data: s.as_ptr(),
    }
}

fn redacting_does_not_allocate() {
    let ua: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0 Safari/537.36";
    let keys = Keys::parse(Path::new("secret"), &std::fs::read(SECRET).unwrap()).unwrap();
    let ch = Challenge::new(Arc::new(keys));
    let now = 1_800_000_000;
    let token = ch.mint_cookie(
        &ch.binding("192.0.2.10".parse().ok(), ua, None),
        Proof::Work,
        16,
        now,
    );
    let cookie = [
        b"sid=s3cr3t; edgeguard_clearance=".as_slice(),
        &token,
        b"; lang=en",
    ]
    .concat();
    let pairs: Vec<(&[u8], &[u8])> = vec![
        (b"Host", b"shop.example"),
        (b"User-Agent", ua),
        (b"Cookie", &cookie),
        (b"Authorization", b"Bearer eyJ0eXAi.payload.sig"),
        (b"X-Api-Key", b"k-123456"),
    ];
    let headers: Vec<edgeguard_header> = pairs
        .iter()
        .map(|&(k, v)| edgeguard_header::new(k, v))
        .collect();
    let request = edgeguard_request {
        method: text(b"GET"),
        uri: text(b"/"),
        client_addr: text(b"192.0.2.10"),
        http_version: 11,
        headers: headers.as_ptr(),
        headers_len: headers.len(),
        tls: null(),
        request_id: edgeguard_str::EMPTY,
        peer_addr: edgeguard_str::EMPTY,
    };
    let json = format!(r#"{{"challenge_secret": "{SECRET}", "redact": ["x-api-key"]}}"#);
    let mut config: *mut edgeguard_config = null_mut();
    let mut errbuf = [0 as c_char; 256];
    // SAFETY: the JSON is ours; out and errbuf are writable.
    let rc = unsafe {
        edgeguard_config_new(
            json.as_ptr(),
            json.len(),
            null(),
            null(),
            &mut config,
            errbuf.as_mut_ptr(),
            256,
        )
    };
    assert_eq!(rc, edgeguard_result::Ok);
    let mut roomy = vec![0u8; 4096];
    let mut short = [0u8; 8];
    let (mut n, mut need, mut n_default) = (0usize, 0usize, 0usize);
    let mut default_out = vec![0u8; 4096];
    // Warm the default recorder (made once, on first use).
    // SAFETY: as below.
    unsafe {
        edgeguard_config_record(
            null(),
            &request,
            default_out.as_mut_ptr(),
            0,
            &mut n_default,
        )
    };

    let before = dhat::HeapStats::get();
    // SAFETY: the request views `pairs`; the buffers are ours; `config` is live.
    let (ok, too_small, default) = unsafe {
        (
            edgeguard_config_record(config, &request, roomy.as_mut_ptr(), roomy.len(), &mut n),
            edgeguard_config_record(config, &request, short.as_mut_ptr(), short.len(), &mut need),
            edgeguard_config_record(
                null(),
                &request,
                default_out.as_mut_ptr(),
                default_out.len(),
                &mut n_default,
            ),
        )
    };
    let after = dhat::HeapStats::get();
    assert_eq!(
        after.total_blocks, before.total_blocks,
        "redacting allocated"
    );
    assert_eq!(after.total_bytes, before.total_bytes);

    assert_eq!(
        (ok, too_small, default),
        (
            edgeguard_result::Ok,
            edgeguard_result::BufferTooSmall,
            edgeguard_result::Ok
        )
    );
    assert_eq!(need, n);
    let got = String::from_utf8(roomy[..n].to_vec()).unwrap();
    let expires = now + u64::from(ch.ttl);
    assert_eq!(
        got,
        format!(
            r#"[["Host","shop.example"],["User-Agent","{}"],["Cookie","sid=[redacted 6]; edgeguard_clearance=[clearance ok work {expires}]; lang=[redacted 2]"],["Authorization","Bearer [redacted 20]"],["X-Api-Key","[redacted 8]"]]"#,
            String::from_utf8_lossy(ua)
        )
    );
    // Without a configuration: no challenge (the token is a cookie like
    // the others) and no extra names.
    let got = String::from_utf8(default_out[..n_default].to_vec()).unwrap();
    assert!(got.contains("edgeguard_clearance=[redacted 104];"), "{got}");
    assert!(got.contains(r#"["X-Api-Key","k-123456"]"#), "{got}");
    // Misuse is refused before anything is read.
    // SAFETY: nulls where the ABI refuses them.
    unsafe {
        assert_eq!(
            edgeguard_config_record(config, null(), roomy.as_mut_ptr(), 8, &mut n),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_config_record(config, &request, null_mut(), 8, &mut n),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_config_record(config, &request, roomy.as_mut_ptr(), 8, null_mut()),
            edgeguard_result::NullParameter
        );
        edgeguard_config_free(config);
    }
}

fn recording_does_not_allocate() {
    let long = vec![b'"'; 3000];
    let pairs: Vec<(&[u8], &[u8])> = vec![
        (b"Host", b"shop.example"),
        (b"User-Agent", b"Mozilla/5.0 \"x\" \\ \x01 caf\xc3\xa9"),
        (b"X-Long", &long),
        (b"", b""),
    ];
    let headers: Vec<edgeguard_header> = pairs
        .iter()
        .map(|&(k, v)| edgeguard_header::new(k, v))
        .collect();
    let mut roomy = vec![0u8; 16 * 1024];
    let mut short = [0u8; 8];
    let (mut n, mut need) = (0usize, 0usize);

    let before = dhat::HeapStats::get();
    // SAFETY: the headers view `pairs` and `long`; the buffers are ours.
    let (ok, too_small) = unsafe {
        (
            edgeguard_headers_record(
                headers.as_ptr(),
                headers.len(),
                roomy.as_mut_ptr(),
                roomy.len(),
                &mut n,
            ),
            edgeguard_headers_record(
                headers.as_ptr(),
                headers.len(),
                short.as_mut_ptr(),
                short.len(),
                &mut need,
            ),
        )
    };
    let after = dhat::HeapStats::get();

    assert_eq!(
        after.total_blocks, before.total_blocks,
        "recording allocated"
    );
    assert_eq!(after.total_bytes, before.total_bytes);
    // The calls did real work: every `"` of X-Long escaped.
    assert_eq!(ok, edgeguard_result::Ok);
    assert_eq!(too_small, edgeguard_result::BufferTooSmall);
    assert_eq!(need, n);
    assert!(n > 6000, "{n}");
    assert!(roomy[..n].starts_with(
        br#"[["Host","shop.example"],["User-Agent","Mozilla/5.0 \"x\" \\ \u0001 caf"#
    ));
    assert!(roomy[..n].ends_with(br#"\""],["",""]]"#));
}

fn the_record_job_does_not_allocate() {
    // Escaped, the long value alone is more than the scratch's first room.
    let long = vec![b'"'; 3000];
    let pairs: Vec<(&[u8], &[u8])> = vec![
        (b"Host", b"shop.example"),
        (b"X-Long", &long),
        (b"Cookie", b"sid=s3cr3t"),
    ];
    let headers: Vec<edgeguard_header> = pairs
        .iter()
        .map(|&(k, v)| edgeguard_header::new(k, v))
        .collect();
    let request = edgeguard_request {
        method: text(b"GET"),
        uri: text(b"/"),
        client_addr: text(b"192.0.2.10"),
        http_version: 11,
        headers: headers.as_ptr(),
        headers_len: headers.len(),
        tls: null(),
        request_id: edgeguard_str::EMPTY,
        peer_addr: edgeguard_str::EMPTY,
    };
    let json = "{}";
    let (mut config, mut loc, mut scratch) = (null_mut(), null_mut(), null_mut());
    let mut errbuf = [0 as c_char; 256];
    // SAFETY: the JSON is ours; the outs and errbuf are writable.
    unsafe {
        assert_eq!(
            edgeguard_config_new(
                json.as_ptr(),
                json.len(),
                null(),
                null(),
                &mut config,
                errbuf.as_mut_ptr(),
                256
            ),
            edgeguard_result::Ok
        );
        assert_eq!(
            edgeguard_location_new(
                config,
                null(),
                null(),
                null(),
                0,
                null(),
                &mut loc,
                errbuf.as_mut_ptr(),
                256
            ),
            edgeguard_result::Ok
        );
        assert_eq!(edgeguard_scratch_new(&mut scratch), edgeguard_result::Ok);
    }
    // SAFETY: a zeroed effects struct is a valid one (null pointers, zero lengths).
    let mut out: edgeguard_effects = unsafe { std::mem::zeroed() };
    let record = edgeguard::gate::Job::Record as i32;
    // SAFETY: the request views `pairs` and `long`; the handles are live.
    let run = |out: &mut edgeguard_effects| unsafe {
        edgeguard_location_run(
            loc,
            null(),
            &request,
            null(),
            record,
            1_800_000_000,
            scratch,
            out,
        )
    };
    // The first run grows the scratch to the head.
    assert_eq!(run(&mut out), edgeguard_result::Ok);

    let before = dhat::HeapStats::get();
    let rc = run(&mut out);
    let after = dhat::HeapStats::get();
    assert_eq!(
        after.total_blocks, before.total_blocks,
        "the record job allocated"
    );
    assert_eq!(rc, edgeguard_result::Ok);
    assert_eq!(out.vars_len, 1);
    // SAFETY: the effects point into the scratch, live until the next run.
    let (name, value) = unsafe { (out.vars[0].key.as_bytes(), out.vars[0].value.as_bytes()) };
    assert_eq!(name, b"edgeguard_request_headers");
    let want = format!(
        r#"[["Host","shop.example"],["X-Long","{}"],["Cookie","sid=[redacted 6]"]]"#,
        "\\\"".repeat(3000)
    );
    assert_eq!(String::from_utf8_lossy(value), want);
    // SAFETY: the handles are live and not used afterwards.
    unsafe {
        edgeguard_location_free(loc);
        edgeguard_scratch_free(scratch);
        edgeguard_config_free(config);
    }
}
