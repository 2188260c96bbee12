//! C ABI for TLS fingerprints (JA4), and the reading of a live ClientHello
//! through OpenSSL's calls (`openssl.rs` binds them at run time). Without
//! them (plain LuaJIT, a TLS-less nginx) the library loads and scores as
//! before; `edgeguard_tls_client_hello` answers
//! `EDGEGUARD_RESULT_TLS_UNAVAILABLE` and `edgeguard_tls_get` finds nothing.
//!
//! A connection's fingerprint lives on its `SSL *` (OpenSSL "ex data", one
//! index for the process), in one small heap block made during the
//! handshake and freed by OpenSSL's callback when the `SSL` is freed: state
//! bounded by the open connections, never by requests.

use std::ffi::{c_char, c_int, c_void};

use super::boundary::write_error;
use super::handle::Handle;
use super::openssl::{ex_index, openssl, ossl_ext, OpenSsl, OsslInts};
use super::raw::bytes;
use super::types::edgeguard_result;
use crate::tls::client_hello::ExtensionsBlock;
use crate::tls::{ClientHello, ExtensionTypes, Fingerprint, SortRoom, U16List};

pub use super::types::edgeguard_tls_info;

/// `edgeguard_tls_info.source`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Wire = 1,
    OpensslList = 2,
}

impl edgeguard_tls_info {
    const ABSENT: Self = Self {
        present: 0,
        grease: 0,
        family: 0,
        alpn_len: 0,
        source: 0,
        version: 0,
        ciphers: 0,
        extensions: 0,
        ja4: [0; 36],
        alpn: [0; 16],
    };

    fn from_fingerprint(fp: &Fingerprint, source: Source) -> Self {
        let mut info = Self::ABSENT;
        info.present = 1;
        info.source = source as u8;
        info.grease = u8::from(fp.grease);
        info.family = fp.family as u8;
        info.version = fp.version;
        info.ciphers = fp.ciphers;
        info.extensions = fp.extensions;
        for (d, s) in info.ja4.iter_mut().zip(fp.ja4_bytes()) {
            *d = *s as c_char;
        }
        let alpn = fp.alpn();
        info.alpn[..alpn.len()].copy_from_slice(alpn);
        info.alpn_len = alpn.len() as u8;
        info
    }
}

thread_local! {
    // Sorting room for the handshakes of this thread (an nginx worker has
    // one): made once, reused by every ClientHello.
    static SCRATCH: std::cell::RefCell<SortRoom> = std::cell::RefCell::new(SortRoom::default());
}

fn fingerprint(hello: &ClientHello<'_>) -> Fingerprint {
    SCRATCH.with(|s| Fingerprint::compute(hello, &mut s.borrow_mut()))
}

/// Fingerprints a ClientHello given as bytes: one TLS record (content type
/// 22) or one handshake message (type 1), as a client sent it. For tests,
/// captures and replay; nginx uses `edgeguard_tls_client_hello`.
///
/// On success writes `*out` (with `present` = 1). On a malformed ClientHello
/// returns `EDGEGUARD_RESULT_INVALID_ARGUMENT`, `*out` untouched, and writes
/// the field and byte offset at fault to `errbuf`. Allocates nothing once
/// the thread has fingerprinted one ClientHello.
///
/// # Safety
/// `hello` points to `hello_len` readable bytes (or `hello_len` is 0); `out` is
/// writable; `errbuf` is null or points to `errbuf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_tls_parse(
    hello: *const u8,
    hello_len: usize,
    out: *mut edgeguard_tls_info,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(out);
        let Some(b) = bytes(hello, hello_len) else {
            return edgeguard_result::NullParameter;
        };
        let parsed = match b.first() {
            Some(1) => ClientHello::parse_handshake(b),
            _ => ClientHello::parse_record(b),
        };
        match parsed {
            Ok(hello) => {
                *out = edgeguard_tls_info::from_fingerprint(&fingerprint(&hello), Source::Wire);
                edgeguard_result::Ok
            }
            Err(e) => {
                write_error(errbuf, errbuf_len, &e);
                edgeguard_result::InvalidArgument
            }
        }
    }
}

/// The ClientHello's whole extensions block, unknown types included, found
/// where the wire format puts it: after the cipher suites and compression
/// methods, in the message buffer OpenSSL parsed and keeps for the
/// callback. OpenSSL 3.0 and 1.1.1 hand out the cipher list and extension
/// data as views of that buffer (`PACKET`s), not copies. That is not a
/// documented promise, so nothing is read unless the pointers prove it:
/// the first extension OpenSSL reports must lie after the ciphers within
/// one ClientHello's reach (no read needed to check), the bytes between
/// must be the compression methods OpenSSL copied, and every extension
/// OpenSSL reports must then sit in the block at the very address OpenSSL
/// gives for its data. Anything else gives `None`: the caller uses
/// OpenSSL's list instead.
///
/// # Safety
/// `ssl` is inside the client-hello callback; `ciphers` is what
/// `SSL_client_hello_get0_ciphers` returned.
unsafe fn wire_block<'a>(
    ossl: &OpenSsl,
    ssl: *mut c_void,
    ciphers: &'a [u8],
    reported: &[c_int],
) -> Option<&'a [u8]> {
    let first = u16::try_from(*reported.first()?).ok()?;
    let (q, _) = ossl_ext(ossl, ssl, first)?;
    let after = ciphers.as_ptr() as usize + ciphers.len();
    let mut cm: *const u8 = std::ptr::null();
    let cm_len = (ossl.compression)(ssl, &mut cm);
    let cm = bytes(cm, cm_len)?;
    // compression length byte, methods, extensions length, then at least
    // the first extension's 4-byte header before its data.
    let block_at = after.checked_add(1 + cm.len() + 2)?;
    let gap = (q as usize).checked_sub(block_at)?;
    if gap < 4 || gap > u16::MAX as usize {
        return None;
    }
    // SAFETY: [after, q) lies between two views of the one message buffer
    // (checked above: q follows the ciphers by less than a ClientHello).
    let head = std::slice::from_raw_parts(after as *const u8, 1 + cm.len() + 2);
    if usize::from(head[0]) != cm.len() || &head[1..1 + cm.len()] != cm {
        return None;
    }
    let block_len = usize::from(u16::from_be_bytes([head[1 + cm.len()], head[2 + cm.len()]]));
    if block_len < gap {
        return None;
    }
    // SAFETY: OpenSSL parsed the message: its extensions length (this
    // field, verified against the compression bytes before it) runs to the
    // end of the message.
    let block = std::slice::from_raw_parts(block_at as *const u8, block_len);
    let checked = ExtensionsBlock::parse(block)?;
    for &t in reported {
        let t = u16::try_from(t).ok()?;
        let (p, len) = ossl_ext(ossl, ssl, t)?;
        let d = checked.data(t)?;
        if d.as_ptr() != p || d.len() != len {
            return None;
        }
    }
    Some(checked.bytes())
}

/// Reads the ClientHello being processed on `ssl` and fingerprints it.
///
/// # Safety
/// `ssl` is an `SSL *` inside OpenSSL's client-hello callback.
unsafe fn live_fingerprint(
    ossl: &OpenSsl,
    ssl: *mut c_void,
) -> Result<Option<(Fingerprint, Source)>, &'static str> {
    if (ossl.isv2)(ssl) != 0 {
        // An SSLv2-format hello has 3-byte cipher specs and no extensions:
        // nothing JA4 defines.
        return Ok(None);
    }
    let mut cp: *const u8 = std::ptr::null();
    let n = (ossl.ciphers)(ssl, &mut cp);
    let cipher_bytes = bytes(cp, if cp.is_null() { 0 } else { n }).unwrap_or_default();
    let ciphers = U16List::new(cipher_bytes).ok_or("OpenSSL gave an odd-length cipher list")?;
    let mut ext_ptr: *mut c_int = std::ptr::null_mut();
    let mut ext_len = 0usize;
    if (ossl.extensions_present)(ssl, &mut ext_ptr, &mut ext_len) == 0 {
        return Err("SSL_client_hello_get1_extensions_present failed");
    }
    let exts = OsslInts {
        ossl,
        ptr: ext_ptr,
        len: ext_len,
    };
    let lookup = |t: u16| {
        // SAFETY: as the caller promised; OpenSSL points into its copy of
        // the ClientHello, alive for the callback.
        let (p, len) = unsafe { ossl_ext(ossl, ssl, t) }?;
        // SAFETY: OpenSSL's extension data, `len` bytes.
        unsafe { bytes(p, len) }
    };
    let (types, source) = match wire_block(ossl, ssl, cipher_bytes, exts.as_slice()) {
        Some(block) => (ExtensionTypes::Wire(block), Source::Wire),
        None => (ExtensionTypes::List(exts.as_slice()), Source::OpensslList),
    };
    let hello = ClientHello::from_parts((ossl.legacy_version)(ssl) as u16, ciphers, types, lookup);
    Ok(Some((fingerprint(&hello), source)))
}

/// Fingerprints the ClientHello of the handshake in progress on `ssl` and
/// stores the result on it for `edgeguard_tls_get`. Call it from
/// `ssl_client_hello_by_lua*` (OpenSSL's client-hello callback): only then
/// does OpenSSL hold the ClientHello.
///
/// Never affects the handshake: on failure nothing is stored and the caller
/// logs the error and carries on. Returns `EDGEGUARD_RESULT_TLS_UNAVAILABLE`
/// when OpenSSL's client-hello functions are not in the process, and
/// `EDGEGUARD_RESULT_INVALID_ARGUMENT` (message in `errbuf`) when OpenSSL
/// refuses a call. An SSLv2-format ClientHello is skipped (`Ok`, nothing
/// stored). Calling it again on the same connection replaces the stored
/// fingerprint. Allocates one block per connection, freed with the `SSL`.
///
/// # Safety
/// `ssl` is the connection's `SSL *` (e.g.
/// `ngx_http_lua_ffi_get_req_ssl_pointer` in that phase) inside the
/// client-hello callback; `errbuf` is null or points to `errbuf_len`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_tls_client_hello(
    ssl: *mut c_void,
    errbuf: *mut c_char,
    errbuf_len: usize,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(ssl);
        let Some(ossl) = openssl() else {
            write_error(errbuf, errbuf_len, &"OpenSSL's SSL_client_hello_* functions are not in this process");
            return edgeguard_result::TlsUnavailable;
        };
        let Some(idx) = ex_index(ossl, true) else {
            write_error(errbuf, errbuf_len, &"CRYPTO_get_ex_new_index failed");
            return edgeguard_result::TlsUnavailable;
        };
        let (fp, source) = match live_fingerprint(ossl, ssl) {
            Ok(Some(found)) => found,
            Ok(None) => return edgeguard_result::Ok,
            Err(msg) => {
                write_error(errbuf, errbuf_len, &msg);
                return edgeguard_result::InvalidArgument;
            }
        };
        let info = edgeguard_tls_info::from_fingerprint(&fp, source);
        let old = (ossl.get_ex_data)(ssl, idx).cast::<edgeguard_tls_info>();
        if !old.is_null() {
            *old = info;
            return edgeguard_result::Ok;
        }
        let block = info.into_raw();
        if (ossl.set_ex_data)(ssl, idx, block.cast()) == 0 {
            edgeguard_tls_info::free(block);
            write_error(errbuf, errbuf_len, &"SSL_set_ex_data failed");
            return edgeguard_result::InvalidArgument;
        }
        edgeguard_result::Ok
    }
}

/// Writes the fingerprint stored on `ssl` by `edgeguard_tls_client_hello`
/// to `*out`; `out->present` is 0 when there is none (null `ssl`: plain
/// HTTP; no `ssl_client_hello_by_lua`; OpenSSL not in the process). Any
/// request phase may call it with the request's `SSL *`; HTTP/2 streams
/// share their connection's. Allocates nothing.
///
/// # Safety
/// `ssl` is null or a live `SSL *`; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn edgeguard_tls_get(
    ssl: *const c_void,
    out: *mut edgeguard_tls_info,
) -> edgeguard_result {
    ffi_panic_boundary! {
        try_non_null!(out);
        *out = edgeguard_tls_info::ABSENT;
        if ssl.is_null() {
            return edgeguard_result::Ok;
        }
        let Some(ossl) = openssl() else {
            return edgeguard_result::Ok;
        };
        let Some(idx) = ex_index(ossl, false) else {
            return edgeguard_result::Ok;
        };
        let p = (ossl.get_ex_data)(ssl, idx).cast::<edgeguard_tls_info>();
        if !p.is_null() {
            *out = *p;
        }
        edgeguard_result::Ok
    }
}

/// The name of a family number (`"boringssl"`, `"nss"`, `"openssl"`,
/// `"go"`; `"unknown"` for anything else). Static storage: never free it.
#[no_mangle]
pub extern "C" fn edgeguard_tls_family_name(family: c_int) -> *const c_char {
    ffi_panic_boundary! {
        crate::tls::Family::from_number(family).c_name().as_ptr()
    }
}

#[cfg(test)]
mod tests {
    //! The live path against a stand-in for OpenSSL's client-hello calls
    //! over a recorded ClientHello: views into the message (as OpenSSL 3.0
    //! keeps them), copies (as another version might), and lies.

    use super::super::openssl::{ExDup, ExFree};
    use super::*;
    use std::cell::RefCell;
    use std::ffi::{c_long, c_uint};

    /// What the fake OpenSSL serves.
    struct Fake {
        body: Vec<u8>,
        ciphers: (usize, usize),
        compression: Vec<u8>,
        /// (type, offset, len) of the extensions the fake "implements".
        known: Vec<(u16, usize, usize)>,
        /// Extension data handed out from this copy instead of `body`.
        copy: Option<Vec<u8>>,
    }

    thread_local! {
        static FAKE: RefCell<Option<Fake>> = const { RefCell::new(None) };
    }

    fn with<R>(f: impl FnOnce(&Fake) -> R) -> R {
        FAKE.with(|x| f(x.borrow().as_ref().unwrap()))
    }

    unsafe extern "C" fn legacy_version(_: *mut c_void) -> c_uint {
        with(|f| c_uint::from(u16::from_be_bytes([f.body[0], f.body[1]])))
    }
    unsafe extern "C" fn ciphers(_: *mut c_void, out: *mut *const u8) -> usize {
        with(|f| {
            *out = f.body.as_ptr().add(f.ciphers.0);
            f.ciphers.1
        })
    }
    unsafe extern "C" fn compression(_: *mut c_void, out: *mut *const u8) -> usize {
        with(|f| {
            *out = f.compression.as_ptr();
            f.compression.len()
        })
    }
    unsafe extern "C" fn extensions_present(
        _: *mut c_void,
        out: *mut *mut c_int,
        len: *mut usize,
    ) -> c_int {
        with(|f| {
            let p = libc::malloc(4 * f.known.len().max(1)).cast::<c_int>();
            for (i, k) in f.known.iter().enumerate() {
                *p.add(i) = c_int::from(k.0);
            }
            *out = p;
            *len = f.known.len();
            1
        })
    }
    unsafe extern "C" fn get_ext(
        _: *mut c_void,
        t: c_uint,
        out: *mut *const u8,
        len: *mut usize,
    ) -> c_int {
        with(|f| match f.known.iter().find(|k| c_uint::from(k.0) == t) {
            Some(&(_, off, n)) => {
                *out = f.copy.as_ref().unwrap_or(&f.body).as_ptr().add(off);
                *len = n;
                1
            }
            None => 0,
        })
    }
    unsafe extern "C" fn isv2(_: *mut c_void) -> c_int {
        0
    }
    unsafe extern "C" fn crypto_free(p: *mut c_void, _: *const c_char, _: c_int) {
        libc::free(p);
    }
    unsafe extern "C" fn new_index(
        _: c_int,
        _: c_long,
        _: *mut c_void,
        _: *mut c_void,
        _: Option<ExDup>,
        _: Option<ExFree>,
    ) -> c_int {
        -1
    }
    unsafe extern "C" fn set_ex_data(_: *mut c_void, _: c_int, _: *mut c_void) -> c_int {
        0
    }
    unsafe extern "C" fn get_ex_data(_: *const c_void, _: c_int) -> *mut c_void {
        std::ptr::null_mut()
    }

    const FAKE_OPENSSL: OpenSsl = OpenSsl {
        legacy_version,
        ciphers,
        extensions_present,
        get_ext,
        isv2,
        compression,
        crypto_free,
        new_index,
        set_ex_data,
        get_ex_data,
    };

    /// Types OpenSSL 3.0 parses (ssl/statem/extensions.c); Chromium's ALPS,
    /// compress_certificate, ECH and GREASE are not among them.
    const IMPLEMENTED: &[u16] = &[
        0xff01, 0, 1, 5, 10, 11, 13, 16, 18, 21, 22, 23, 35, 41, 42, 43, 44, 45, 49, 50, 51,
    ];

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The recorded ClientHello of `client` as a record, and a fake over it.
    fn fake_for(client: &str) -> (Vec<u8>, Fake) {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tls/local-clienthellos.txt"
        ))
        .unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{client} ")))
            .unwrap();
        let record = hex(line.rsplit(' ').next().unwrap());
        let body = record[9..].to_vec();
        let sid = usize::from(body[34]);
        let c_at = 35 + sid;
        let c_len = usize::from(u16::from_be_bytes([body[c_at], body[c_at + 1]]));
        let m_at = c_at + 2 + c_len;
        let m_len = usize::from(body[m_at]);
        let mut at = m_at + 1 + m_len + 2;
        let mut known = Vec::new();
        while at < body.len() {
            let t = u16::from_be_bytes([body[at], body[at + 1]]);
            let n = usize::from(u16::from_be_bytes([body[at + 2], body[at + 3]]));
            if IMPLEMENTED.contains(&t) {
                known.push((t, at + 4, n));
            }
            at += 4 + n;
        }
        let fake = Fake {
            compression: body[m_at + 1..m_at + 1 + m_len].to_vec(),
            ciphers: (c_at + 2, c_len),
            known,
            copy: None,
            body,
        };
        (record, fake)
    }

    fn live(fake: Fake) -> (Fingerprint, Source) {
        FAKE.with(|x| *x.borrow_mut() = Some(fake));
        let ssl = std::ptr::NonNull::<u8>::dangling().as_ptr().cast();
        // SAFETY: the fake ignores the SSL pointer.
        unsafe { live_fingerprint(&FAKE_OPENSSL, ssl) }
            .unwrap()
            .unwrap()
    }

    fn from_bytes(record: &[u8]) -> Fingerprint {
        Fingerprint::compute(
            &ClientHello::parse_record(record).unwrap(),
            &mut SortRoom::default(),
        )
    }

    #[test]
    fn views_into_the_message_give_the_whole_client_hello() {
        for client in ["chromium", "curl", "go"] {
            let (record, fake) = fake_for(client);
            let (fp, source) = live(fake);
            assert_eq!(source, Source::Wire, "{client}");
            assert_eq!(fp, from_bytes(&record), "{client}");
        }
    }

    #[test]
    fn anything_unproven_falls_back_to_openssls_list() {
        let (record, fake) = fake_for("chromium");
        let known: Vec<i32> = fake.known.iter().map(|k| i32::from(k.0)).collect();
        let whole = from_bytes(&record);
        let listed = {
            let h = ClientHello::parse_record(&record).unwrap();
            let h = ClientHello {
                extensions: ExtensionTypes::List(&known),
                ..h
            };
            Fingerprint::compute(&h, &mut SortRoom::default())
        };
        assert!(
            listed.extensions < whole.extensions,
            "Chromium sends extensions OpenSSL lacks"
        );
        assert_ne!(listed.ja4(), whole.ja4());

        // Extension data copied out of the message.
        let (_, mut f) = fake_for("chromium");
        f.copy = Some(f.body.clone());
        assert_eq!(live(f), (listed, Source::OpensslList));
        // Compression methods that do not match the bytes after the ciphers.
        let (_, mut f) = fake_for("chromium");
        f.compression = vec![1];
        assert_eq!(live(f), (listed, Source::OpensslList));
        // An extension reported at another offset than the block has it.
        let (_, mut f) = fake_for("chromium");
        f.known[1].1 += 1;
        assert_eq!(live(f).1, Source::OpensslList);
        // A length that does not match the block's.
        let (_, mut f) = fake_for("chromium");
        f.known[0].2 += 1;
        assert_eq!(live(f).1, Source::OpensslList);
        // No extension OpenSSL knows: nothing to anchor the block on.
        let (_, mut f) = fake_for("chromium");
        f.known.clear();
        let (fp, source) = live(f);
        assert_eq!(source, Source::OpensslList);
        assert_eq!(fp.extensions, 0);
    }
}
