//! C ABI for TLS fingerprints (JA4), and the OpenSSL calls that read a live
//! ClientHello.
//!
//! libedgeguard has no link-time dependency on libssl: nginx links OpenSSL
//! into its own process, and the functions used here are found there at run
//! time with `dlsym(RTLD_DEFAULT, ...)`, once per process. Without them
//! (plain LuaJIT, a TLS-less nginx) the library loads and scores as before;
//! `edgeguard_tls_client_hello` answers `EDGEGUARD_RESULT_TLS_UNAVAILABLE`
//! and `edgeguard_tls_get` finds nothing.
//!
//! A connection's fingerprint lives on its `SSL *` (OpenSSL "ex data", one
//! index for the process), in one small heap block made during the
//! handshake and freed by OpenSSL's callback when the `SSL` is freed: state
//! bounded by the open connections, never by requests.

use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use super::boundary::{bytes, write_error};
use super::edgeguard_result;
use crate::tls::client_hello::ExtensionsBlock;
use crate::tls::ja4::{ALPN_MAX, JA4_LEN};
use crate::tls::{ClientHello, ExtensionTypes, Fingerprint, Scratch, U16List};

/// One connection's TLS fingerprint, as `edgeguard_tls_get` and
/// `edgeguard_tls_parse` fill it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_tls_info {
    /// 1 when the rest is filled; 0 when the connection has no fingerprint
    /// (plain HTTP, TLS without `ssl_client_hello_by_lua`, OpenSSL absent).
    pub present: u8,
    /// Whether GREASE values were among the ciphers or extensions (1/0).
    pub grease: u8,
    /// The TLS library family guessed from the cipher list: 0 unknown,
    /// 1 BoringSSL, 2 NSS, 3 OpenSSL, 4 Go (`edgeguard_tls_family_name`).
    pub family: u8,
    /// Length of `alpn` (at most 16).
    pub alpn_len: u8,
    /// Where the extension list came from: 1 the whole ClientHello (every
    /// extension counted, as JA4 defines); 2 OpenSSL's list of the
    /// extensions it implements (others, e.g. Chrome's ALPS, are missing,
    /// so the JA4 differs from a capture's). 0 when absent.
    pub source: u8,
    /// The version JA4 reports (e.g. 0x0304).
    pub version: u16,
    /// Cipher suites, GREASE left out (not capped at 99).
    pub ciphers: u16,
    /// Extensions, GREASE left out (not capped at 99). On the live path:
    /// the ones OpenSSL recognises (see docs/tls.md).
    pub extensions: u16,
    /// The JA4 string, 36 ASCII bytes, not NUL-terminated.
    pub ja4: [c_char; 36],
    /// The first ALPN value offered, `alpn_len` bytes (cut at 16).
    pub alpn: [u8; 16],
}

const _: () = assert!(JA4_LEN == 36 && ALPN_MAX == 16);
// What a connection keeps (docs/tls.md: "one 64-byte block per connection").
const _: () = assert!(std::mem::size_of::<edgeguard_tls_info>() == 64);

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
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
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

type ExFree =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, c_int, c_long, *mut c_void);
type ExDup = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    *mut *mut c_void,
    c_int,
    c_long,
    *mut c_void,
) -> c_int;

type LegacyVersionFn = unsafe extern "C" fn(*mut c_void) -> c_uint;
type BytesFn = unsafe extern "C" fn(*mut c_void, *mut *const u8) -> usize;
type ExtensionsPresentFn = unsafe extern "C" fn(*mut c_void, *mut *mut c_int, *mut usize) -> c_int;
type GetExtFn = unsafe extern "C" fn(*mut c_void, c_uint, *mut *const u8, *mut usize) -> c_int;
type IsV2Fn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CryptoFreeFn = unsafe extern "C" fn(*mut c_void, *const c_char, c_int);
type NewIndexFn = unsafe extern "C" fn(
    c_int,
    c_long,
    *mut c_void,
    *mut c_void,
    Option<ExDup>,
    Option<ExFree>,
) -> c_int;
type SetExDataFn = unsafe extern "C" fn(*mut c_void, c_int, *mut c_void) -> c_int;
type GetExDataFn = unsafe extern "C" fn(*const c_void, c_int) -> *mut c_void;

/// The OpenSSL functions this module calls, found in the process.
struct OpenSsl {
    legacy_version: LegacyVersionFn,
    ciphers: BytesFn,
    extensions_present: ExtensionsPresentFn,
    get_ext: GetExtFn,
    isv2: IsV2Fn,
    compression: BytesFn,
    crypto_free: CryptoFreeFn,
    new_index: NewIndexFn,
    set_ex_data: SetExDataFn,
    get_ex_data: GetExDataFn,
}

/// `CRYPTO_EX_INDEX_SSL` (openssl/crypto.h).
const CRYPTO_EX_INDEX_SSL: c_int = 0;

fn sym(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT only looks the name up.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

macro_rules! resolve {
    ($name:literal, $t:ty) => {
        // SAFETY: the symbol is OpenSSL's function of that name, whose C
        // signature (OpenSSL 1.1.1 and 3.x) is `$t`.
        unsafe { std::mem::transmute::<*mut c_void, $t>(sym($name)?) }
    };
}

fn openssl() -> Option<&'static OpenSsl> {
    static LIB: OnceLock<Option<OpenSsl>> = OnceLock::new();
    LIB.get_or_init(|| {
        Some(OpenSsl {
            legacy_version: resolve!(c"SSL_client_hello_get0_legacy_version", LegacyVersionFn),
            ciphers: resolve!(c"SSL_client_hello_get0_ciphers", BytesFn),
            extensions_present: resolve!(
                c"SSL_client_hello_get1_extensions_present",
                ExtensionsPresentFn
            ),
            get_ext: resolve!(c"SSL_client_hello_get0_ext", GetExtFn),
            isv2: resolve!(c"SSL_client_hello_isv2", IsV2Fn),
            compression: resolve!(c"SSL_client_hello_get0_compression_methods", BytesFn),
            crypto_free: resolve!(c"CRYPTO_free", CryptoFreeFn),
            new_index: resolve!(c"CRYPTO_get_ex_new_index", NewIndexFn),
            set_ex_data: resolve!(c"SSL_set_ex_data", SetExDataFn),
            get_ex_data: resolve!(c"SSL_get_ex_data", GetExDataFn),
        })
    })
    .as_ref()
}

/// The process's ex-data index, made on first use when `create` (readers
/// never make one). Every Lua VM that loads this library in the process
/// (nginx makes a new one on each reload) shares it, since the library's
/// statics outlive the VMs.
fn ex_index(ossl: &OpenSsl, create: bool) -> Option<c_int> {
    static INDEX: Mutex<Option<c_int>> = Mutex::new(None);
    let mut idx = INDEX.lock().unwrap_or_else(|e| e.into_inner());
    if idx.is_none() && create {
        // SAFETY: documented OpenSSL call; the callbacks are this library's,
        // which is never unloaded while nginx runs (LuaJIT keeps it).
        let i = unsafe {
            (ossl.new_index)(
                CRYPTO_EX_INDEX_SSL,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                Some(stored_dup),
                Some(stored_free),
            )
        };
        *idx = (i >= 0).then_some(i);
    }
    *idx
}

/// OpenSSL's free callback for the stored fingerprint.
unsafe extern "C" fn stored_free(
    _parent: *mut c_void,
    ptr: *mut c_void,
    _ad: *mut c_void,
    _idx: c_int,
    _argl: c_long,
    _argp: *mut c_void,
) {
    ffi_panic_boundary! {
        if !ptr.is_null() {
            drop(Box::from_raw(ptr.cast::<edgeguard_tls_info>()));
        }
    }
}

/// OpenSSL's dup callback (`SSL_dup`): the copy gets its own block, so the
/// two `SSL`s never free the same one.
unsafe extern "C" fn stored_dup(
    _to: *mut c_void,
    _from: *const c_void,
    from_d: *mut *mut c_void,
    _idx: c_int,
    _argl: c_long,
    _argp: *mut c_void,
) -> c_int {
    ffi_panic_boundary! {
        if !from_d.is_null() && !(*from_d).is_null() {
            let copy = *(*from_d).cast::<edgeguard_tls_info>();
            *from_d = Box::into_raw(Box::new(copy)).cast();
        }
        1
    }
}

/// Frees OpenSSL's copy of the extension list when dropped.
struct OsslInts<'o> {
    ossl: &'o OpenSsl,
    ptr: *mut c_int,
    len: usize,
}

impl OsslInts<'_> {
    fn as_slice(&self) -> &[c_int] {
        if self.ptr.is_null() || self.len == 0 {
            return &[];
        }
        // SAFETY: OpenSSL allocated `len` ints at `ptr`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for OsslInts<'_> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: OPENSSL_free of what get1_extensions_present allocated.
            unsafe { (self.ossl.crypto_free)(self.ptr.cast(), c"edgeguard".as_ptr(), 0) };
        }
    }
}

/// The data pointer and length OpenSSL holds for extension `t`, if any.
///
/// # Safety
/// `ssl` is inside the client-hello callback.
unsafe fn ossl_ext(ossl: &OpenSsl, ssl: *mut c_void, t: u16) -> Option<(*const u8, usize)> {
    let mut p: *const u8 = std::ptr::null();
    let mut len = 0usize;
    if (ossl.get_ext)(ssl, c_uint::from(t), &mut p, &mut len) == 0 || p.is_null() {
        return None;
    }
    Some((p, len))
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
        let block = Box::into_raw(Box::new(info));
        if (ossl.set_ex_data)(ssl, idx, block.cast()) == 0 {
            drop(Box::from_raw(block));
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

    use super::*;
    use std::cell::RefCell;

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
            &mut Scratch::default(),
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
            Fingerprint::compute(&h, &mut Scratch::default())
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
