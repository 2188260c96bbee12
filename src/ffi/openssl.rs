//! OpenSSL's functions, found in the nginx process at run time.
//!
//! libedgeguard has no link-time dependency on libssl: nginx links OpenSSL
//! into its own process, and the functions `tls.rs` calls are looked up
//! there with `dlsym(RTLD_DEFAULT, ...)`, once per process. Without them
//! (plain LuaJIT, a TLS-less nginx) [`openssl`] is `None`. This file is the
//! binding: the C signatures, the lookup, the process's ex-data index and
//! its callbacks (a connection's fingerprint lives in one block OpenSSL
//! frees with the `SSL`), and the list OpenSSL allocates.

use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use super::handle::Handle;
use super::types::edgeguard_tls_info;

impl Handle for edgeguard_tls_info {}

pub(super) type ExFree =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, c_int, c_long, *mut c_void);
pub(super) type ExDup = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    *mut *mut c_void,
    c_int,
    c_long,
    *mut c_void,
) -> c_int;

pub(super) type LegacyVersionFn = unsafe extern "C" fn(*mut c_void) -> c_uint;
pub(super) type BytesFn = unsafe extern "C" fn(*mut c_void, *mut *const u8) -> usize;
pub(super) type ExtensionsPresentFn =
    unsafe extern "C" fn(*mut c_void, *mut *mut c_int, *mut usize) -> c_int;
pub(super) type GetExtFn =
    unsafe extern "C" fn(*mut c_void, c_uint, *mut *const u8, *mut usize) -> c_int;
pub(super) type IsV2Fn = unsafe extern "C" fn(*mut c_void) -> c_int;
pub(super) type CryptoFreeFn = unsafe extern "C" fn(*mut c_void, *const c_char, c_int);
pub(super) type NewIndexFn = unsafe extern "C" fn(
    c_int,
    c_long,
    *mut c_void,
    *mut c_void,
    Option<ExDup>,
    Option<ExFree>,
) -> c_int;
pub(super) type SetExDataFn = unsafe extern "C" fn(*mut c_void, c_int, *mut c_void) -> c_int;
pub(super) type GetExDataFn = unsafe extern "C" fn(*const c_void, c_int) -> *mut c_void;

/// The OpenSSL functions this module calls, found in the process.
pub(super) struct OpenSsl {
    pub(super) legacy_version: LegacyVersionFn,
    pub(super) ciphers: BytesFn,
    pub(super) extensions_present: ExtensionsPresentFn,
    pub(super) get_ext: GetExtFn,
    pub(super) isv2: IsV2Fn,
    pub(super) compression: BytesFn,
    pub(super) crypto_free: CryptoFreeFn,
    pub(super) new_index: NewIndexFn,
    pub(super) set_ex_data: SetExDataFn,
    pub(super) get_ex_data: GetExDataFn,
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

pub(super) fn openssl() -> Option<&'static OpenSsl> {
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
pub(super) fn ex_index(ossl: &OpenSsl, create: bool) -> Option<c_int> {
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
            edgeguard_tls_info::free(ptr.cast::<edgeguard_tls_info>());
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
            *from_d = copy.into_raw().cast();
        }
        1
    }
}

/// Frees OpenSSL's copy of the extension list when dropped.
pub(super) struct OsslInts<'o> {
    pub(super) ossl: &'o OpenSsl,
    pub(super) ptr: *mut c_int,
    pub(super) len: usize,
}

impl OsslInts<'_> {
    pub(super) fn as_slice(&self) -> &[c_int] {
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
pub(super) unsafe fn ossl_ext(
    ossl: &OpenSsl,
    ssl: *mut c_void,
    t: u16,
) -> Option<(*const u8, usize)> {
    let mut p: *const u8 = std::ptr::null();
    let mut len = 0usize;
    if (ossl.get_ext)(ssl, c_uint::from(t), &mut p, &mut len) == 0 || p.is_null() {
        return None;
    }
    Some((p, len))
}
