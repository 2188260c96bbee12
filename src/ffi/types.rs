//! The C-layout types of the ABI, its constants, and every conversion
//! between them and the crate's Rust types (one mapping each).
//!
//! nginx hands over its header array as `ngx_http_lua_ffi_table_elt_t`
//! elements (pointer + length pairs into the request pool). The core reads
//! it in place, without copying, as `&[headers::Header]`, whose layout is
//! the same; [`headers_from_c`] is the one place that views C memory so.

use std::ffi::{c_int, CStr};
use std::slice;

use crate::challenge::{Clearance, Proof, Rejection};
use crate::features::TlsFacts;
use crate::gate::{self, Effects, Exit, Given};
use crate::headers::Header;
use crate::metrics::{Registry, Screening};
use crate::outcome::Outcome;
use crate::tls::Family;
use crate::verified::Verdict;

// ------------------------------------------------------------- constants

/// The `errbuf` length every message of edgeguard fits in (a shorter
/// buffer gets the message cut at a character boundary).
pub const EDGEGUARD_ERRBUF_LEN: usize = 512;
/// The most models a scorer holds and a location is bound to.
pub const EDGEGUARD_MAX_MODELS: usize = 64;
/// The most variables `edgeguard_effects` lists: one per model, then
/// `edgeguard_action`, `edgeguard_time`, `edgeguard_verified_bot`,
/// `edgeguard_rule`, `edgeguard_tag`, `edgeguard_bot_category`, and the
/// seven `edgeguard_fp_*` (fleet signals), `edgeguard_reasons`,
/// `edgeguard_grade` and the five `edgeguard_client_*` (client memory).
pub const EDGEGUARD_MAX_VARS: usize = 84;
/// How many detection IDs there are: the bits of `edgeguard_effects.reasons`
/// (`edgeguard_detection_name` names each).
pub const EDGEGUARD_DETECTION_COUNT: usize = 24;
/// The most response headers `edgeguard_effects` lists.
pub const EDGEGUARD_MAX_RESPONSE_HEADERS: usize = 5;
/// The length of a JA4 string (`edgeguard_tls_info.ja4`).
pub const EDGEGUARD_JA4_LEN: usize = 36;
/// The room of `edgeguard_tls_info.alpn`.
pub const EDGEGUARD_ALPN_MAX: usize = 16;

const _: () = assert!(EDGEGUARD_MAX_MODELS == crate::scorer::MAX_MODELS);
const _: () = assert!(EDGEGUARD_MAX_VARS == EDGEGUARD_MAX_MODELS + 20);
const _: () = assert!(EDGEGUARD_DETECTION_COUNT == crate::features::reasons::DETECTION_COUNT);
const _: () = assert!(
    EDGEGUARD_JA4_LEN == crate::tls::ja4::JA4_LEN
        && EDGEGUARD_ALPN_MAX == crate::tls::ja4::ALPN_MAX
);

// ------------------------------------------------------------ result codes

/// Result of every fallible export. The numbers are stable: they are part of
/// the ABI and may be logged or compared by callers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_result {
    /// Success; outputs were written.
    Ok = 0,
    /// A required pointer argument was null.
    NullParameter = 1,
    /// A bug inside edgeguard was caught at the boundary; nothing was written.
    Panic = 2,
    /// An argument is out of its documented range (length, count, flag).
    InvalidArgument = 3,
    /// A file could not be read; errbuf names it and the OS error.
    Io = 4,
    /// An internal-header list was rejected; errbuf names the source and line.
    HeaderListInvalid = 5,
    /// A model was rejected; errbuf names the file and the field.
    ModelInvalid = 6,
    /// The number of features given does not match what the model expects.
    FeatureCount = 7,
    /// An output buffer is too small for the result.
    BufferTooSmall = 8,
    /// A configuration was rejected; errbuf says which setting and why.
    ConfigInvalid = 9,
    /// The TLS library functions a call needs are not in this process
    /// (OpenSSL's client-hello calls, found at run time).
    TlsUnavailable = 10,
}

impl edgeguard_result {
    /// Every code, in number order.
    const ALL: [edgeguard_result; 11] = [
        edgeguard_result::Ok,
        edgeguard_result::NullParameter,
        edgeguard_result::Panic,
        edgeguard_result::InvalidArgument,
        edgeguard_result::Io,
        edgeguard_result::HeaderListInvalid,
        edgeguard_result::ModelInvalid,
        edgeguard_result::FeatureCount,
        edgeguard_result::BufferTooSmall,
        edgeguard_result::ConfigInvalid,
        edgeguard_result::TlsUnavailable,
    ];

    /// The code of a number, if it is one.
    pub(crate) fn from_int(n: c_int) -> Option<edgeguard_result> {
        Self::ALL.into_iter().find(|r| *r as c_int == n)
    }

    /// The fixed description of this code.
    pub fn text(self) -> &'static CStr {
        match self {
            Self::Ok => c"ok",
            Self::NullParameter => c"a required pointer argument was null",
            Self::Panic => c"internal error: a panic was caught at the C ABI boundary",
            Self::InvalidArgument => c"an argument is out of range",
            Self::Io => c"a file could not be read",
            Self::HeaderListInvalid => c"the internal header list is invalid",
            Self::ModelInvalid => c"the model is invalid",
            Self::FeatureCount => c"wrong number of features for this model",
            Self::BufferTooSmall => c"the output buffer is too small",
            Self::ConfigInvalid => c"the configuration is invalid",
            Self::TlsUnavailable => c"the TLS library functions needed are not in this process",
        }
    }
}

// ------------------------------------------------------------ byte strings

/// A borrowed byte string: `{ int len; const unsigned char *data; }`.
///
/// Same layout as lua-resty-core's `ngx_http_lua_ffi_str_t`. The bytes are
/// owned by the caller (nginx's request pool) or by a handle, as each use
/// says, and only read during the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_str {
    /// Length in bytes; negative lengths are treated as empty.
    pub len: libc::c_int,
    /// Start of the bytes; may be null when `len` is 0.
    pub data: *const u8,
}

impl edgeguard_str {
    /// No bytes.
    pub const EMPTY: edgeguard_str = edgeguard_str {
        len: 0,
        data: std::ptr::null(),
    };

    /// A view of a Rust slice. The slice must outlive every use of the result.
    pub fn from_slice(s: &[u8]) -> Self {
        edgeguard_str {
            len: libc::c_int::try_from(s.len()).unwrap_or(libc::c_int::MAX),
            data: s.as_ptr(),
        }
    }

    /// The bytes, or an empty slice for a null pointer or a non-positive length.
    ///
    /// # Safety
    /// `data` must point to `len` readable bytes that stay valid and unchanged
    /// for the lifetime `'a` chosen by the caller.
    pub unsafe fn as_bytes<'a>(&self) -> &'a [u8] {
        match usize::try_from(self.len) {
            Ok(n) if n > 0 && !self.data.is_null() => slice::from_raw_parts(self.data, n),
            _ => &[],
        }
    }
}

/// One request header: same layout as lua-resty-core's
/// `ngx_http_lua_ffi_table_elt_t`, the element type that
/// `ngx_http_lua_ffi_req_get_headers` fills. Also any name and value pair
/// the ABI hands out (a variable, a response header).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_header {
    /// Header name (lower-cased by nginx when fetched with `raw = 0`).
    pub key: edgeguard_str,
    /// Header value.
    pub value: edgeguard_str,
}

impl edgeguard_header {
    /// A header viewing two Rust slices (for tests, benches and the CLI).
    pub fn new(key: &[u8], value: &[u8]) -> Self {
        edgeguard_header {
            key: edgeguard_str::from_slice(key),
            value: edgeguard_str::from_slice(value),
        }
    }
}

/// An nginx variable to set: its name (`key`) and value.
pub type edgeguard_var = edgeguard_header;

// `Header` is nginx's element, and so is `edgeguard_header`: a C array is
// viewed as headers by a cast, checked here once.
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<edgeguard_header>() == size_of::<Header<'static>>());
    assert!(align_of::<edgeguard_header>() == align_of::<Header<'static>>());
    assert!(size_of::<edgeguard_header>() == 32);
    assert!(offset_of!(edgeguard_header, value) == 16);
    assert!(offset_of!(edgeguard_str, data) == 8);
};

/// Views a C header array as headers, without a copy.
///
/// # Safety
/// Every `key` and `value` in `headers` points to `len` readable bytes
/// (or is null, or has a non-positive length) that stay valid and
/// unchanged for `'a`.
pub unsafe fn headers_from_c<'a>(headers: &'a [edgeguard_header]) -> &'a [Header<'a>] {
    // SAFETY: the layouts are the same (checked above); a header reads a
    // null or non-positive string as empty; the caller vouches for the
    // bytes.
    slice::from_raw_parts(headers.as_ptr().cast::<Header<'a>>(), headers.len())
}

/// The C layout of `headers`, to hand to the C ABI.
pub fn headers_as_c<'s>(headers: &'s [Header<'_>]) -> &'s [edgeguard_header] {
    // SAFETY: same layout (see `headers_from_c`); a shared view of the
    // same elements, for the same lifetime.
    unsafe { slice::from_raw_parts(headers.as_ptr().cast(), headers.len()) }
}

// ------------------------------------------------------------- TLS facts

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
    pub ja4: [libc::c_char; EDGEGUARD_JA4_LEN],
    /// The first ALPN value offered, `alpn_len` bytes (cut at 16).
    pub alpn: [u8; EDGEGUARD_ALPN_MAX],
}

// What a connection keeps (docs/tls.md: "one 64-byte block per connection").
const _: () = assert!(std::mem::size_of::<edgeguard_tls_info>() == 64);

// ------------------------------------------------------------- a request

/// One request as nginx sees it. Every byte string is borrowed for the
/// duration of the call only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_request {
    /// The method as sent, e.g. `GET`.
    pub method: edgeguard_str,
    /// The request target as sent, path and query (`$request_uri`).
    pub uri: edgeguard_str,
    /// The textual client address (`$remote_addr`).
    pub client_addr: edgeguard_str,
    /// The HTTP version times 10: 10, 11, 20, 30, i.e.
    /// `ngx.req.http_version() * 10`. nginx's `r->http_version` is
    /// `major * 1000 + minor` (1001 for HTTP/1.1), so from C it is
    /// `major * 10 + minor`, not a plain division. Must be in `0..=65535`.
    pub http_version: libc::c_int,
    /// The headers in arrival order, in the layout
    /// `ngx_http_lua_ffi_req_get_headers` fills. May be null when
    /// `headers_len` is 0.
    pub headers: *const edgeguard_header,
    /// How many headers `headers` points to.
    pub headers_len: usize,
    /// The connection's TLS facts: null for plain HTTP; for a TLS
    /// connection, its fingerprint as `edgeguard_tls_get` filled it, with
    /// `present` = 0 when it has none (no `ssl_client_hello_by_lua`). The
    /// TLS features read the fingerprint (missing values without one); a
    /// clearance cookie set on a TLS connection is `Secure`. One with
    /// `present` = 1 must hold a JA4 as edgeguard writes it, or the call
    /// is `InvalidArgument`.
    pub tls: *const edgeguard_tls_info,
    /// The request's id (nginx's `$request_id`), which a challenge page
    /// or a problem document shows as its reference; empty: none shown.
    pub request_id: edgeguard_str,
    /// The connection's peer address (`$realip_remote_addr`: the address
    /// nginx's realip module replaced with the client's; equal to
    /// `client_addr` without it); empty: `client_addr`. Whom
    /// `trusted_proxies` is asked about (docs/deployment.md).
    pub peer_addr: edgeguard_str,
}

impl edgeguard_request {
    /// The request as the gate reads it (and its headers), after the checks
    /// every request export makes: `NullParameter` for a null `headers`
    /// with a non-zero `headers_len`, `InvalidArgument` for an
    /// `http_version` outside `0..=65535`, a `headers_len` above
    /// `UINT32_MAX` or a fingerprint whose JA4 is not one.
    ///
    /// # Safety
    /// The strings, headers and `tls` point to their stated number of
    /// readable bytes for `'a`.
    pub(crate) unsafe fn view<'a>(&'a self) -> Result<gate::Incoming<'a>, edgeguard_result> {
        if self.headers.is_null() && self.headers_len != 0 {
            return Err(edgeguard_result::NullParameter);
        }
        let Ok(http_version) = u16::try_from(self.http_version) else {
            return Err(edgeguard_result::InvalidArgument);
        };
        // The length is checked before a slice is made of it: a length no
        // array can have makes the slice itself undefined behaviour.
        if self.headers_len > u32::MAX as usize {
            return Err(edgeguard_result::InvalidArgument);
        }
        let info = self.tls.as_ref();
        let tls = match info {
            Some(info) if info.present != 0 => {
                // SAFETY: c_char and u8 have the same size and alignment.
                let ja4 = &*(std::ptr::from_ref(&info.ja4) as *const [u8; EDGEGUARD_JA4_LEN]);
                let family = Family::from_number(i32::from(info.family));
                Some(TlsFacts::new(ja4, family).ok_or(edgeguard_result::InvalidArgument)?)
            }
            _ => None,
        };
        let headers: &[edgeguard_header] = if self.headers_len == 0 {
            &[]
        } else {
            slice::from_raw_parts(self.headers, self.headers_len)
        };
        let req = gate::Incoming::new(
            self.method.as_bytes(),
            self.uri.as_bytes(),
            http_version,
            self.client_addr.as_bytes(),
            headers_from_c(headers),
            tls,
        );
        Ok(req
            .secure(info.is_some())
            .with_request_id(self.request_id.as_bytes())
            .with_peer(self.peer_addr.as_bytes()))
    }
}

/// What another engine (the legacy Lua engine) did to a request before it
/// hands it to `edgeguard_location_run`: its scores and its strip.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_given {
    /// Its scores, in the location's model order; null: not scored.
    pub scores: *const f64,
    /// How many: the location's model count (0 with null `scores`).
    pub scores_len: usize,
    /// Internal header entries it removed.
    pub removed: usize,
    /// Internal header entries it could not remove (the request is then
    /// refused).
    pub unremovable: usize,
}

impl edgeguard_given {
    /// The gate's view: `NullParameter` for null scores with a length.
    ///
    /// # Safety
    /// `scores` points to `scores_len` doubles for `'a`.
    pub(crate) unsafe fn view<'a>(&self) -> Result<Given<'a>, edgeguard_result> {
        let scores = super::raw::slice(self.scores, self.scores_len)
            .ok_or(edgeguard_result::NullParameter)?;
        Ok(Given {
            scores: (!self.scores.is_null()).then_some(scores),
            removed: self.removed,
            unremovable: self.unremovable,
        })
    }
}

// ------------------------------------------------------------- effects

/// How a request ends. Stable numbers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_exit {
    /// It goes on to the upstream.
    Continue = 0,
    /// Answered with `status` (nginx's own page for it).
    Status = 1,
    /// Answered with `status`, `response_headers` and `body`.
    Body = 2,
    /// Redirected to `location` with `status`, after `response_headers`.
    Redirect = 3,
}

/// What a request's User-Agent says of a verified bot. Stable numbers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_bot {
    /// It claims no listed bot.
    None = 0,
    /// It claims a listed bot from one of the bot's prefixes.
    Verified = 1,
    /// It claims a listed bot from another address: flagged.
    Fake = 2,
}

/// What a clearance cookie or a challenge answer came to. Stable numbers;
/// `edgeguard_clearance_name` names them (the metric labels).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_clearance {
    /// No cookie of the configured name (or no challenge configured).
    Absent = 0,
    /// A valid cookie; for an answer: solved.
    Accepted = 1,
    /// Not a token: wrong length, not base64url, another kind.
    Malformed = 2,
    /// The MAC matches no key: forged, tampered, or signed by a removed key.
    Mac = 3,
    /// Expired (or beyond the lifetime in force); a nonce too old.
    Expired = 4,
    /// Issued to another address prefix.
    Address = 5,
    /// Issued to another User-Agent.
    UserAgent = 6,
    /// An answer without the work asked for.
    Work = 7,
    /// Issued to a client with another TLS stack (a cookie replayed by
    /// another program).
    Tls = 8,
    /// A no-JavaScript ticket followed before its wait was over.
    Early = 9,
    /// A valid no-JavaScript clearance (`challenge_nojs`): the weaker
    /// proof, a wait instead of work; for an answer: the wait redeemed.
    AcceptedWait = 10,
}

impl From<Clearance> for edgeguard_clearance {
    fn from(c: Clearance) -> Self {
        match c {
            Clearance::Absent => edgeguard_clearance::Absent,
            Clearance::Accepted(Proof::Work) => edgeguard_clearance::Accepted,
            Clearance::Accepted(Proof::Wait) => edgeguard_clearance::AcceptedWait,
            Clearance::Rejected(r) => match r {
                Rejection::Malformed => edgeguard_clearance::Malformed,
                Rejection::Mac => edgeguard_clearance::Mac,
                Rejection::Expired => edgeguard_clearance::Expired,
                Rejection::Address => edgeguard_clearance::Address,
                Rejection::UserAgent => edgeguard_clearance::UserAgent,
                Rejection::Work => edgeguard_clearance::Work,
                Rejection::Tls => edgeguard_clearance::Tls,
                Rejection::Early => edgeguard_clearance::Early,
            },
        }
    }
}

/// The clearance of a number, if it is one.
pub(crate) fn clearance_from_int(n: c_int) -> Option<Clearance> {
    let all = [
        Clearance::Absent,
        Clearance::Accepted(Proof::Work),
        Clearance::Accepted(Proof::Wait),
    ]
    .into_iter()
    .chain(Rejection::ALL.map(Clearance::Rejected));
    all.into_iter()
        .find(|&c| edgeguard_clearance::from(c) as c_int == n)
}

/// Everything one request comes to, as `edgeguard_location_run` writes it.
/// Pointers and strings point into the scratch, the location or the
/// request, valid until the next run with the same scratch.
///
/// Fields may be appended in later versions; a caller allocates the
/// struct from the header of the library it loads.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct edgeguard_effects {
    /// What the request came to (`action_name` names it).
    pub action: Outcome,
    /// How it ends.
    pub exit: edgeguard_exit,
    /// The response status (0 with `Continue`).
    pub status: i32,
    /// The nginx log level of `line` (0 `ngx.STDERR` .. 8 `ngx.DEBUG`).
    pub log_level: i32,
    /// The indices, into the request's headers, of the headers to remove
    /// (`clear[0..clear_len]`): the first of each distinct name to clear,
    /// as `edgeguard_header_set_find_internal` lists them, without those
    /// spelled exactly as the score header on a scored request (setting it
    /// replaces them). Nothing for a refused request.
    pub clear: *const u32,
    /// How many indices `clear` holds.
    pub clear_len: usize,
    /// Internal header entries the list matched, repeats counted (the
    /// score header's spellings not counted; another engine's included).
    pub matched: usize,
    /// Those removed (what the metrics count): `matched`, but on a
    /// refusal only those the other engine removed before it found the
    /// rest.
    pub removed: usize,
    /// Internal entries nginx's Lua API cannot remove (names that are not
    /// RFC 9110 tokens): the request is refused.
    pub unremovable: usize,
    /// The request header to set before proxying (the score header and its
    /// value, `name=%.9g; name=%.9g`); `key.len` 0: none.
    pub set_header: edgeguard_header,
    /// The line to log at `log_level`; empty: none.
    pub line: edgeguard_str,
    /// The response body (`Body`).
    pub body: edgeguard_str,
    /// Where to redirect (`Redirect`): a same-site path.
    pub location: edgeguard_str,
    /// Response headers to add (`Body`, `Redirect`; on `Continue`, the
    /// client memory's `Set-Cookie` for the upstream's answer).
    pub response_headers: [edgeguard_header; EDGEGUARD_MAX_RESPONSE_HEADERS],
    /// How many `response_headers` holds.
    pub response_headers_len: usize,
    /// The nginx variables to set, in order (`vars = true` on a request
    /// that was scored, flagged or claims a verified bot; a record job's
    /// `edgeguard_request_headers` alone).
    pub vars: [edgeguard_var; EDGEGUARD_MAX_VARS],
    /// How many `vars` holds.
    pub vars_len: usize,
    /// The scores in the location's model order (`scores_len` 0: not
    /// scored).
    pub scores: *const f64,
    /// How many `scores` holds.
    pub scores_len: usize,
    /// `Ok`, or why the location's scorer gave no scores.
    pub score_result: edgeguard_result,
    /// The model that flagged the request (also under mode `off`), or -1.
    pub model: i32,
    /// That model's threshold in force; NaN when no model flagged.
    pub threshold: f64,
    /// The verified bot the User-Agent claims, and whether the address
    /// agrees.
    pub bot: edgeguard_bot,
    /// What the clearance cookie said.
    pub clearance: edgeguard_clearance,
    /// The claimed bot's name (empty for `None`): the location's memory.
    pub bot_name: edgeguard_str,
    /// A warning about the deployment, to log once per worker (a static
    /// text); empty: none. A request from a `trusted_proxies` peer whose
    /// client address is the peer's while it carries `X-Forwarded-For`:
    /// nginx's realip module is not set up.
    pub warning: edgeguard_str,
    /// How sure the verdict is (`None`: not flagged).
    pub grade: edgeguard_grade,
    /// Why it was flagged: bit `i` set for detection ID `i`
    /// (`edgeguard_detection_name`); 0: not flagged.
    pub reasons: u32,
    /// Where in `line` nginx's `$request_id` goes (after `request_id=`),
    /// when the request gave none; 0: nowhere (the line has it, or no line).
    pub line_request_id_at: usize,
    /// Where in `body` nginx's `$request_id` goes, for a blocked request
    /// that gave none: the caller inserts it there and sets the
    /// `Edgeguard-Reference` response header to it. 0: nowhere.
    pub body_request_id_at: usize,
    /// The name of `action` (`"pass"`, `"block"`, ...; static storage):
    /// what `$edgeguard_action` holds and `access()` returns, so a caller
    /// needs no table from numbers to names.
    pub action_name: edgeguard_str,
}

/// How sure a flagged request's verdict is. Stable numbers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_grade {
    /// Not flagged.
    None = 0,
    /// Only reasons a hop in front of a person can cause.
    Ambiguous = 1,
    /// At least one reason no person's browser gives.
    Certain = 2,
}

impl From<crate::features::Grade> for edgeguard_grade {
    fn from(g: crate::features::Grade) -> Self {
        use crate::features::Grade;
        match g {
            Grade::None => edgeguard_grade::None,
            Grade::Ambiguous => edgeguard_grade::Ambiguous,
            Grade::Certain => edgeguard_grade::Certain,
        }
    }
}

/// Writes `e` into `out` field by field: the arrays only up to their
/// lengths (the struct is kilobytes; a request writes a few entries).
pub(crate) fn write_effects(e: &Effects<'_>, out: &mut edgeguard_effects) {
    let (exit, body, location) = match e.exit {
        Exit::Continue => (edgeguard_exit::Continue, &[][..], &[][..]),
        Exit::Status(_) => (edgeguard_exit::Status, &[][..], &[][..]),
        Exit::Page { body, .. } => (edgeguard_exit::Body, body, &[][..]),
        Exit::Redirect { location, .. } => (edgeguard_exit::Redirect, &[][..], location),
    };
    out.action = e.action;
    out.exit = exit;
    out.status = i32::from(e.exit.status());
    out.log_level = e.line.map_or(0, |(_, level)| i32::from(level));
    out.clear = e.clear.as_ptr();
    out.clear_len = e.clear.len();
    out.matched = e.matched;
    out.removed = e.removed;
    out.unremovable = e.unremovable;
    out.set_header = match e.set_header {
        Some((name, value)) => edgeguard_header::new(name.as_bytes(), value),
        None => edgeguard_header::new(&[], &[]),
    };
    out.line = edgeguard_str::from_slice(e.line.map_or(&[][..], |(l, _)| l));
    out.body = edgeguard_str::from_slice(body);
    out.location = edgeguard_str::from_slice(location);
    // The client memory's cookie: after a page's four headers at most.
    let cookie = (!e.set_cookie.is_empty()).then_some((&b"Set-Cookie"[..], e.set_cookie));
    out.response_headers_len = fill(
        &mut out.response_headers,
        e.exit
            .headers()
            .map(|(n, v)| (n.as_bytes(), v))
            .chain(cookie),
    );
    out.vars_len = fill(&mut out.vars, e.vars.iter());
    let scores = e.scores.unwrap_or_default();
    out.scores = scores.as_ptr();
    out.scores_len = scores.len();
    out.score_result = e.score_error.map_or(edgeguard_result::Ok, score_error);
    // At most EDGEGUARD_MAX_MODELS.
    out.model = e.flagged.map_or(-1, |(i, _)| i as i32);
    out.threshold = e.flagged.map_or(f64::NAN, |(_, t)| t);
    out.bot = match e.bot {
        None => edgeguard_bot::None,
        Some((Verdict::Verified(_), _)) => edgeguard_bot::Verified,
        Some((Verdict::Fake(_), _)) => edgeguard_bot::Fake,
    };
    out.clearance = e.clearance.into();
    out.bot_name = edgeguard_str::from_slice(e.bot.map_or(&[][..], |(_, n)| n.as_bytes()));
    out.warning = edgeguard_str::from_slice(e.warning.unwrap_or_default().as_bytes());
    out.grade = e.grade.into();
    out.reasons = e.reasons.0;
    out.line_request_id_at = e.line_id_at.unwrap_or(0);
    out.body_request_id_at = e.body_id_at.unwrap_or(0);
    out.action_name = edgeguard_str::from_slice(e.action.as_str().as_bytes());
}

/// Fills the start of `slots` with `pairs`; returns how many.
fn fill<'a>(
    slots: &mut [edgeguard_header],
    pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> usize {
    let mut n = 0;
    for (slot, (k, v)) in slots.iter_mut().zip(pairs) {
        *slot = edgeguard_header::new(k, v);
        n += 1;
    }
    n
}

/// The result code of a scoring failure (a scorer checked at load should
/// never give one: reported like a caught panic).
pub(crate) fn score_error(e: crate::scorer::ScoreError) -> edgeguard_result {
    use crate::scorer::ScoreError;
    match e {
        ScoreError::OutputLen { expected, got } if got < expected => {
            edgeguard_result::BufferTooSmall
        }
        ScoreError::OutputLen { .. } => edgeguard_result::InvalidArgument,
        ScoreError::Model { .. } => edgeguard_result::Panic,
    }
}

/// What an effects struct says besides the action, read as the ints its
/// enum fields are in C (a number no variant has must not become a Rust
/// enum): `None` for such a number. C has the bot's name only: `registry`
/// (made from the same bots list) gives its index; a name it does not
/// list is no bot claim.
///
/// # Safety
/// `out` points to a readable `edgeguard_effects`, its `bot_name` to its
/// length.
pub(crate) unsafe fn seen_of_raw(
    out: *const edgeguard_effects,
    registry: &Registry,
) -> Option<Screening> {
    // Both enums are C ints (`#[repr(C)]` fieldless enums).
    let bot = std::ptr::addr_of!((*out).bot).cast::<c_int>().read();
    let clearance = std::ptr::addr_of!((*out).clearance).cast::<c_int>().read();
    let name = std::ptr::addr_of!((*out).bot_name).read();
    let index = || registry.bot_index(name.as_bytes());
    let bot = match bot {
        0 => None,
        1 => index().map(Verdict::Verified),
        2 => index().map(Verdict::Fake),
        _ => return None,
    };
    Some(Screening {
        clearance: clearance_from_int(clearance)?,
        bot,
    })
}

// ------------------------------------------------------------- metrics

// ------------------------------------------------------------- options

/// The kind of a value `edgeguard_options_put` hands over. Stable numbers;
/// passed as a plain int.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum edgeguard_value {
    /// `text`: a string.
    String = 0,
    /// `number`: a number (NaN and infinities: no value, which the option
    /// refuses).
    Number = 1,
    /// `number`: a boolean, true when nonzero.
    Boolean = 2,
    /// A table of keys: the values put at the next depth are its.
    Object = 3,
    /// A list: the values put at the next depth are its, in order.
    Array = 4,
    /// A value no option can take; `text` names its type (`function`).
    Other = 5,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_read_back_what_they_view() {
        let h = Header::new(b"host", b"example");
        let raw = [edgeguard_header {
            key: edgeguard_str {
                len: -1,
                data: std::ptr::null(),
            },
            value: edgeguard_str {
                len: 3,
                data: std::ptr::null(),
            },
        }];
        // SAFETY: null pointers and negative lengths read as empty.
        let views = unsafe { headers_from_c(&raw) };
        assert_eq!((views[0].name(), views[0].value()), (&b""[..], &b""[..]));
        let c = headers_as_c(std::slice::from_ref(&h));
        assert_eq!(c[0].key.len, 4);
    }

    #[test]
    fn null_or_negative_keys_are_empty_names_that_never_match() {
        use crate::headers::{HeaderSet, Matches};
        let set = HeaderSet::parse("<test>", b"x-a\n").unwrap();
        let odd = [
            edgeguard_header {
                key: edgeguard_str {
                    len: 3,
                    data: std::ptr::null(),
                },
                value: edgeguard_str::from_slice(b"v"),
            },
            edgeguard_header {
                key: edgeguard_str {
                    len: -1,
                    data: b"x-a".as_ptr(),
                },
                value: edgeguard_str::from_slice(b"v"),
            },
            edgeguard_header::new(b"x-ab", b"v"),
        ];
        let mut clear = [7u32; 2];
        // SAFETY: the non-null pointers view statics; null and negative
        // lengths are what is under test (they read as empty).
        let views = unsafe { headers_from_c(&odd) };
        assert_eq!(set.find_internal(views, &mut clear), Matches::default());
        assert_eq!(clear, [7, 7]);
    }

    /// Every enum's numbers map both ways, and none is left out.
    #[test]
    fn numbers_round_trip() {
        for n in 0..11 {
            let r = edgeguard_result::from_int(n).expect("codes are dense from 0");
            assert_eq!(r as c_int, n);
        }
        assert!(edgeguard_result::from_int(11).is_none());
        for n in 0..11 {
            let c = clearance_from_int(n).unwrap();
            assert_eq!(edgeguard_clearance::from(c) as c_int, n);
        }
        assert_eq!(clearance_from_int(11), None);
        // The enums `c_enum!` declares: dense from 0, each number its
        // variant's, and the header declares every one.
        let header = super::super::c_enum_declarations();
        macro_rules! dense {
            ($($t:ty),+) => {$(
                for (i, v) in <$t>::ALL.into_iter().enumerate() {
                    assert_eq!(<$t>::from_int(i as c_int), Some(v));
                    assert_eq!(v.index(), i);
                    let c = format!(
                        "  {}_{} = {i},\n",
                        <$t>::C_TYPE.to_ascii_uppercase(),
                        v.as_str().to_ascii_uppercase()
                    );
                    assert!(header.contains(&c), "{c}");
                }
                assert_eq!(<$t>::from_int(<$t>::ALL.len() as c_int), None);
                assert_eq!(<$t>::from_int(-1), None);
            )+};
        }
        dense!(
            Outcome,
            crate::gate::Job,
            crate::config::Engine,
            crate::metrics::Disagreement,
            crate::model::PredictionType
        );
    }
}
