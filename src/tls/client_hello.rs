//! The parts of a ClientHello JA4 reads, as views of borrowed bytes.
//!
//! Framing (record, handshake header, the length-prefixed vectors of the
//! ClientHello and each extension's header) is checked strictly: a
//! ClientHello whose lengths disagree is refused with the field and byte
//! offset named, since no TLS stack would accept it either. The contents of
//! the three extensions JA4 looks into are read leniently, because on the
//! live path OpenSSL hands them over before it has validated them: a
//! malformed ALPN extension counts as no ALPN value, a malformed
//! supported_versions as no version list, malformed signature_algorithms as
//! an empty list (the extension still counts as present).

use std::fmt;

use super::codepoints::ext;

/// A list of big-endian 16-bit values (cipher suites, versions, signature
/// algorithms) as on the wire: an even number of bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct U16List<'a>(&'a [u8]);

impl<'a> U16List<'a> {
    /// The list in `bytes`, or `None` if their number is odd.
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        bytes.len().is_multiple_of(2).then_some(Self(bytes))
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + 'a {
        self.0
            .chunks_exact(2)
            .map(|p| u16::from_be_bytes([p[0], p[1]]))
    }

    /// How many values the list holds.
    pub fn len(&self) -> usize {
        self.0.len() / 2
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The extension types of a ClientHello, in the order the client sent them.
#[derive(Clone, Copy, Debug)]
pub enum ExtensionTypes<'a> {
    /// The extensions block as on the wire (type, length, data, ...), its
    /// framing already checked ([`ClientHello::parse_handshake`]).
    Wire(&'a [u8]),
    /// The types as a list of ints (OpenSSL's
    /// `SSL_client_hello_get1_extensions_present`). Values outside 0..=65535
    /// are skipped.
    List(&'a [i32]),
}

impl<'a> ExtensionTypes<'a> {
    /// The types in order, GREASE included.
    pub fn iter(&self) -> impl Iterator<Item = u16> + 'a {
        let (wire, list) = match *self {
            Self::Wire(block) => (Some(WireExtensions { rest: block }), None),
            Self::List(list) => (None, Some(list.iter())),
        };
        wire.into_iter().flatten().map(|(t, _)| t).chain(
            list.into_iter()
                .flatten()
                .filter_map(|&t| u16::try_from(t).ok()),
        )
    }
}

/// (type, data) of each extension of a checked extensions block.
#[derive(Clone)]
struct WireExtensions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for WireExtensions<'a> {
    type Item = (u16, &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        let r = self.rest;
        if r.len() < 4 {
            return None;
        }
        let t = u16::from_be_bytes([r[0], r[1]]);
        let n = usize::from(u16::from_be_bytes([r[2], r[3]]));
        let data = r.get(4..4 + n)?;
        self.rest = &r[4 + n..];
        Some((t, data))
    }
}

/// An extensions block whose framing was checked: a whole number of
/// (type, length, data) extensions.
#[derive(Clone, Copy, Debug)]
pub struct ExtensionsBlock<'a>(&'a [u8]);

impl<'a> ExtensionsBlock<'a> {
    /// The block in `bytes`, or `None` when its lengths do not add up.
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        check_extensions(bytes, 0).ok()?;
        Some(Self(bytes))
    }

    /// The data of the first extension of type `t`.
    pub fn data(&self, t: u16) -> Option<&'a [u8]> {
        WireExtensions { rest: self.0 }
            .find(|&(et, _)| et == t)
            .map(|(_, d)| d)
    }

    /// The block's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// What JA4 reads of one ClientHello.
#[derive(Clone, Copy, Debug)]
pub struct ClientHello<'a> {
    /// `legacy_version` of the ClientHello body (not the record's version).
    pub legacy_version: u16,
    /// The cipher suites in the client's order, GREASE included.
    pub ciphers: U16List<'a>,
    /// The extension types in the client's order, GREASE included.
    pub extensions: ExtensionTypes<'a>,
    /// Whether a server_name extension is present.
    pub sni: bool,
    /// The first protocol name of the ALPN extension; `None` when the
    /// extension is absent, malformed or lists nothing.
    pub alpn: Option<&'a [u8]>,
    /// The supported_versions list; `None` when the extension is absent or
    /// malformed.
    pub supported_versions: Option<U16List<'a>>,
    /// The signature_algorithms list in the client's order (empty when the
    /// extension is absent or malformed).
    pub signature_algorithms: U16List<'a>,
}

impl<'a> ClientHello<'a> {
    /// Builds the view from the parts a TLS stack hands out: the legacy
    /// version, the raw cipher-suite bytes, the extension types, and a lookup
    /// of an extension's data by type.
    pub fn from_parts(
        legacy_version: u16,
        ciphers: U16List<'a>,
        extensions: ExtensionTypes<'a>,
        ext_data: impl Fn(u16) -> Option<&'a [u8]>,
    ) -> Self {
        Self {
            legacy_version,
            ciphers,
            sni: extensions.iter().any(|t| t == ext::SERVER_NAME),
            alpn: ext_data(ext::ALPN).and_then(first_alpn),
            supported_versions: ext_data(ext::SUPPORTED_VERSIONS).and_then(supported_versions),
            signature_algorithms: ext_data(ext::SIGNATURE_ALGORITHMS)
                .and_then(signature_algorithms)
                .unwrap_or_default(),
            extensions,
        }
    }

    /// Parses one TLS record (content type 22) holding a whole ClientHello.
    /// A ClientHello fragmented over several records is refused: clients
    /// send theirs in one (the record limit is 16 KiB).
    pub fn parse_record(record: &'a [u8]) -> Result<Self, ParseError> {
        let mut r = Reader::new(record);
        let content_type = r.u8("record content type")?;
        if content_type != 22 {
            return Err(r.error("record content type", Problem::NotHandshake(content_type)));
        }
        r.u16("record version")?;
        let len = usize::from(r.u16("record length")?);
        let body = r.take(len, "record body")?;
        let hello = Self::parse_handshake(body).map_err(|e| e.shifted(5))?;
        Ok(hello)
    }

    /// Parses a handshake message (type 1, 24-bit length, body). Bytes after
    /// the message are ignored.
    pub fn parse_handshake(msg: &'a [u8]) -> Result<Self, ParseError> {
        let mut r = Reader::new(msg);
        let t = r.u8("handshake type")?;
        if t != 1 {
            return Err(r.error("handshake type", Problem::NotClientHello(t)));
        }
        let len = r.u24("handshake length")?;
        let body = r.take(len, "ClientHello body")?;
        Self::parse_body(body).map_err(|e| e.shifted(4))
    }

    /// Parses a ClientHello body (from `legacy_version` on).
    pub fn parse_body(body: &'a [u8]) -> Result<Self, ParseError> {
        let mut r = Reader::new(body);
        let legacy_version = r.u16("legacy_version")?;
        r.take(32, "random")?;
        let sid = usize::from(r.u8("legacy_session_id length")?);
        if sid > 32 {
            return Err(r.error("legacy_session_id length", Problem::TooLong(sid)));
        }
        r.take(sid, "legacy_session_id")?;
        let n = usize::from(r.u16("cipher_suites length")?);
        let ciphers = r.take(n, "cipher_suites")?;
        let ciphers = U16List::new(ciphers)
            .ok_or_else(|| r.error("cipher_suites length", Problem::Odd(n)))?;
        let n = usize::from(r.u8("legacy_compression_methods length")?);
        r.take(n, "legacy_compression_methods")?;
        // A ClientHello may end here (no extensions at all).
        let block = if r.remaining() == 0 {
            &[][..]
        } else {
            let n = usize::from(r.u16("extensions length")?);
            let start = r.pos;
            let block = r.take(n, "extensions")?;
            check_extensions(block, start)?;
            if r.remaining() != 0 {
                return Err(r.error("extensions", Problem::Trailing(r.remaining())));
            }
            block
        };
        let checked = ExtensionsBlock(block);
        let lookup = |t: u16| checked.data(t);
        Ok(Self::from_parts(
            legacy_version,
            ciphers,
            ExtensionTypes::Wire(block),
            lookup,
        ))
    }
}

/// Checks that an extensions block is a whole number of extensions.
fn check_extensions(block: &[u8], start: usize) -> Result<(), ParseError> {
    let mut r = Reader::new(block);
    let mut walk = || {
        while r.remaining() > 0 {
            r.u16("extension type")?;
            let n = usize::from(r.u16("extension length")?);
            r.take(n, "extension data")?;
        }
        Ok(())
    };
    walk().map_err(|e: ParseError| e.shifted(start))
}

/// The first name of an ALPN extension's protocol_name_list.
fn first_alpn(data: &[u8]) -> Option<&[u8]> {
    let mut r = Reader::new(data);
    let list = usize::from(r.u16("").ok()?);
    let mut list = Reader::new(r.take(list, "").ok()?);
    let n = usize::from(list.u8("").ok()?);
    let name = list.take(n, "").ok()?;
    (!name.is_empty()).then_some(name)
}

/// The versions of a ClientHello's supported_versions extension.
fn supported_versions(data: &[u8]) -> Option<U16List<'_>> {
    let (&n, rest) = data.split_first()?;
    U16List::new(rest.get(..usize::from(n))?)
}

/// The list of a signature_algorithms extension.
fn signature_algorithms(data: &[u8]) -> Option<U16List<'_>> {
    let n = usize::from(u16::from_be_bytes([*data.first()?, *data.get(1)?]));
    U16List::new(data.get(2..2 + n)?)
}

/// Why bytes are not a ClientHello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The field being read.
    pub field: &'static str,
    /// Its byte offset from the start of what was parsed.
    pub offset: usize,
    /// What was wrong.
    pub problem: Problem,
}

/// What was wrong with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The bytes end before the field does (it needs this many more).
    Truncated(usize),
    /// A record of another content type.
    NotHandshake(u8),
    /// A handshake message of another type.
    NotClientHello(u8),
    /// A length above the field's maximum.
    TooLong(usize),
    /// An odd number of bytes for a list of 16-bit values.
    Odd(usize),
    /// Bytes after the extensions.
    Trailing(usize),
}

impl ParseError {
    fn shifted(mut self, by: usize) -> Self {
        self.offset += by;
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}: ", self.field, self.offset)?;
        match self.problem {
            Problem::Truncated(n) => write!(f, "truncated ({n} more bytes needed)"),
            Problem::NotHandshake(t) => write!(f, "content type {t}, not a handshake (22)"),
            Problem::NotClientHello(t) => write!(f, "handshake type {t}, not a ClientHello (1)"),
            Problem::TooLong(n) => write!(f, "length {n} is above the maximum"),
            Problem::Odd(n) => write!(f, "odd length {n} for a list of 16-bit values"),
            Problem::Trailing(n) => write!(f, "{n} bytes after the extensions"),
        }
    }
}

impl std::error::Error for ParseError {}

/// A bounds-checked cursor.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn error(&self, field: &'static str, problem: Problem) -> ParseError {
        ParseError {
            field,
            offset: self.pos,
            problem,
        }
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], ParseError> {
        if n > self.remaining() {
            return Err(self.error(field, Problem::Truncated(n - self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, ParseError> {
        Ok(self.take(1, field)?[0])
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, ParseError> {
        let b = self.take(2, field)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u24(&mut self, field: &'static str) -> Result<usize, ParseError> {
        let b = self.take(3, field)?;
        Ok(usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]))
    }
}
