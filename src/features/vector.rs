//! The vector the features fill, and the header walk they share: the leaf
//! that extraction (`mod.rs`) and its parts (`evidence.rs`, `tls.rs`) all
//! import, so that no part imports the module that runs them.

use super::bytes;
use super::fetch_metadata::FetchMetadata;
use super::header_order::{self, Fingerprint};
use super::language;
use super::schema::{Cat, Float, CAT_COUNT, FLOAT_COUNT};
use super::uri;

/// Longest `header_order` fingerprint, in bytes.
pub const HEADER_ORDER_CAP: usize = 32;

/// Where a categorical value lives.
#[derive(Clone, Copy, Debug)]
pub(super) enum CatValue<'a> {
    Borrowed(&'a [u8]),
    HeaderOrder,
    UriExt,
    Language,
}

/// The features of one request. Reusable: [`extract`] overwrites all of it.
#[derive(Clone, Debug)]
pub struct FeatureVector<'a> {
    pub(super) floats: [f32; FLOAT_COUNT],
    pub(super) cats: [CatValue<'a>; CAT_COUNT],
    pub(super) order: Fingerprint<HEADER_ORDER_CAP>,
    pub(super) ext: [u8; uri::MAX_EXT],
    pub(super) ext_len: usize,
    pub(super) language: [u8; language::MAX_PRIMARY],
    pub(super) language_len: usize,
}

impl<'a> FeatureVector<'a> {
    /// A vector of NaNs and empty categorical values.
    pub fn new() -> Self {
        FeatureVector {
            floats: [f32::NAN; FLOAT_COUNT],
            cats: [CatValue::Borrowed(b""); CAT_COUNT],
            order: Fingerprint::new(),
            ext: [0; uri::MAX_EXT],
            ext_len: 0,
            language: [0; language::MAX_PRIMARY],
            language_len: 0,
        }
    }

    /// The float features in [`FLOAT_FEATURES`] order.
    pub fn floats(&self) -> &[f32; FLOAT_COUNT] {
        &self.floats
    }

    /// One float feature.
    pub fn float(&self, f: Float) -> f32 {
        self.floats[f.index()]
    }

    /// One categorical feature's bytes.
    pub fn cat(&self, c: Cat) -> &[u8] {
        match self.cats[c.index()] {
            CatValue::Borrowed(b) => b,
            CatValue::HeaderOrder => self.order.as_bytes(),
            CatValue::UriExt => &self.ext[..self.ext_len],
            CatValue::Language => &self.language[..self.language_len],
        }
    }

    /// The `i`-th categorical feature in [`CAT_FEATURES`] order, `None` past
    /// the end.
    pub fn cat_at(&self, i: usize) -> Option<&[u8]> {
        Cat::ALL.get(i).map(|&c| self.cat(c))
    }

    /// The categorical features in [`CAT_FEATURES`] order.
    pub fn cats(&self) -> impl Iterator<Item = &[u8]> + '_ {
        Cat::ALL.iter().map(|&c| self.cat(c))
    }

    pub(super) fn set(&mut self, f: Float, v: f32) {
        self.floats[f.index()] = v;
    }

    pub(super) fn set_flag(&mut self, f: Float, v: bool) {
        self.set(f, if v { 1.0 } else { 0.0 });
    }

    pub(super) fn set_cat(&mut self, c: Cat, v: &'a [u8]) {
        self.cats[c.index()] = CatValue::Borrowed(v);
    }
}

impl Default for FeatureVector<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// What the header walk keeps: the first value of each header the features
/// read, counts, and the codes of the known headers in arrival order.
pub(super) struct HeaderWalk<'a> {
    pub(super) host: Option<&'a [u8]>,
    pub(super) connection: Option<&'a [u8]>,
    pub(super) user_agent: Option<&'a [u8]>,
    pub(super) accept: Option<&'a [u8]>,
    pub(super) accept_language: Option<&'a [u8]>,
    pub(super) accept_encoding: Option<&'a [u8]>,
    pub(super) referer: Option<&'a [u8]>,
    pub(super) upgrade_insecure_requests: Option<&'a [u8]>,
    pub(super) ch_ua: Option<&'a [u8]>,
    pub(super) ch_mobile: Option<&'a [u8]>,
    pub(super) ch_platform: Option<&'a [u8]>,
    pub(super) fetch: FetchMetadata<'a>,
    /// `te` is present (Firefox sends `TE: trailers` over HTTP/2).
    pub(super) te: bool,
    /// `range` is present (media requests).
    pub(super) range: bool,
    pub(super) headers: u32,
    pub(super) client_hints: u32,
    pub(super) fetch_headers: u32,
    pub(super) cookie_headers: u32,
    pub(super) cookies: u32,
    /// Codes of the known headers (not [`header_order::UNKNOWN`]), the
    /// first [`header_order::MAX_RANKED`] of them.
    pub(super) codes: [u8; header_order::MAX_RANKED],
    pub(super) n_codes: usize,
}

impl<'a> HeaderWalk<'a> {
    pub(super) fn new() -> Self {
        HeaderWalk {
            host: None,
            connection: None,
            user_agent: None,
            accept: None,
            accept_language: None,
            accept_encoding: None,
            referer: None,
            upgrade_insecure_requests: None,
            ch_ua: None,
            ch_mobile: None,
            ch_platform: None,
            fetch: FetchMetadata::default(),
            te: false,
            range: false,
            headers: 0,
            client_hints: 0,
            fetch_headers: 0,
            cookie_headers: 0,
            cookies: 0,
            codes: [header_order::UNKNOWN; header_order::MAX_RANKED],
            n_codes: 0,
        }
    }

    pub(super) fn codes(&self) -> &[u8] {
        &self.codes[..self.n_codes]
    }

    /// Notes one header, `code` being its [`header_order::code`].
    pub(super) fn header(&mut self, code: u8, value: &'a [u8]) {
        self.headers += 1;
        if code == header_order::UNKNOWN {
            return;
        }
        if self.n_codes < self.codes.len() {
            self.codes[self.n_codes] = code;
            self.n_codes += 1;
        }
        match code {
            b'h' => first(&mut self.host, value),
            b'c' => first(&mut self.connection, value),
            b'u' => first(&mut self.user_agent, value),
            b'a' => first(&mut self.accept, value),
            b'l' => first(&mut self.accept_language, value),
            b'e' => first(&mut self.accept_encoding, value),
            b'r' => first(&mut self.referer, value),
            b'i' => first(&mut self.upgrade_insecure_requests, value),
            b't' => self.te = true,
            b'R' => self.range = true,
            b'k' => {
                self.cookie_headers += 1;
                self.cookies += bytes::count_items(value, b';') as u32;
            }
            b'C' | b'M' | b'P' | header_order::OTHER_CLIENT_HINT => {
                self.client_hints += 1;
                match code {
                    b'C' => first(&mut self.ch_ua, value),
                    b'M' => first(&mut self.ch_mobile, value),
                    b'P' => first(&mut self.ch_platform, value),
                    _ => {}
                }
            }
            b'S' | b'O' | b'U' | b'D' | header_order::OTHER_FETCH => {
                self.fetch_headers += 1;
                match code {
                    b'S' => first(&mut self.fetch.site, value),
                    b'O' => first(&mut self.fetch.mode, value),
                    b'U' => first(&mut self.fetch.user, value),
                    b'D' => first(&mut self.fetch.dest, value),
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

pub(super) fn first<'a>(slot: &mut Option<&'a [u8]>, value: &'a [u8]) {
    slot.get_or_insert(value);
}

pub(super) fn flag(v: bool) -> f32 {
    if v {
        1.0
    } else {
        0.0
    }
}
