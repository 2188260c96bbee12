//! One input line, parsed in place.
//!
//! Two line shapes are read, told apart by their fields, never by a flag:
//!
//! - the request lines of `edgeguard features`:
//!   `{"method": "GET", "uri": "/a?b=1", "version": "1.1", "client": "203.0.113.7",
//!   "headers": [["host", "x"], ["user-agent", "..."]]}`;
//! - the access-log lines of the shipped `log_format edgeguard_json
//!   escape=json` (`nginx-conf/log-format.conf`): the same field names, with
//!   `version` as `$server_protocol` (`"HTTP/1.1"`), `headers` as a string
//!   holding the JSON array text of `$edgeguard_request_headers` (nginx
//!   escapes it once more), and the live decision in `edgeguard_action` and
//!   `edgeguard_<model>` (scores as nginx logged them; `""` or `"-"` when
//!   unset), and the connection's TLS fingerprint in `edgeguard_ja4`
//!   and `edgeguard_tls_family` (optional: older lines have none; `""` on
//!   plain HTTP). A line with a JA4 but no family (written before the
//!   family was logged) gets the family `unknown`. `peer`
//!   (`$realip_remote_addr`, optional) is the connection's address, which
//!   `trusted_proxies` is asked about (src/hop/).
//!
//! nginx's own `time` (`$time_iso8601`, `2026-12-04T16:15:19+00:00`) is read
//! as the line's time when it is one ([`Parsed::logged`]: the event time the
//! signals window slides by); anything else in it is ignored, as replay
//! always ignored it. Other fields (labels, status) are skipped without
//! being built.
//!
//! Request strings (method, URI, client, header names and values, and the
//! `headers` text) are bytes, not UTF-8: nginx's `escape=json` escapes `"`,
//! `\` and bytes below 0x20 and writes every other byte as the client sent
//! it, and the scorer in nginx sees those bytes. Field names must be UTF-8.
//!
//! Two paths fill the same spans. A hand-written scanner (`record/fast.rs`)
//! reads every line first: strings without escapes are views of the line,
//! escaped ones are unescaped into the worker's [`LineBufs`], which keeps its
//! capacity from line to line, so a good line costs no allocation at all.
//! A log line's `headers` text is read in place, both layers of escaping at
//! once, when it is laid out as record.lua writes it; else it is unescaped
//! whole and read as a second document. On
//! anything it does not expect it gives up, and serde_json (seeds below,
//! borrowing where it can) parses the line again: it is the reference, and
//! its errors are the messages reported. A test holds the two to the same
//! result on every fixture line. Positions are kept as offsets while parsing
//! (the scratch may grow) and turned into [`Header`] views only
//! once the line is fully read.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::features::TlsFacts;
use crate::headers::{Header, HeaderBuf};
use crate::outcome::Outcome;
use crate::tls::Family;

/// Which buffer a [`Span`] points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    /// The input line.
    Line,
    /// `LineBufs::text`: the unescaped `headers` string of a log line.
    Text,
    /// `LineBufs::owned`: unescaped strings.
    Owned,
}

#[derive(Clone, Copy, Debug)]
struct Span {
    base: Base,
    start: usize,
    len: usize,
}

const EMPTY: Span = Span {
    base: Base::Owned,
    start: 0,
    len: 0,
};

/// A worker's reusable parsing buffers.
#[derive(Debug, Default)]
pub(crate) struct LineBufs {
    owned: Vec<u8>,
    text: Vec<u8>,
    pairs: Vec<(Span, Span)>,
    live: Vec<(Span, LiveScore)>,
    headers: HeaderBuf,
    /// Where the quotes and backslashes of the buffer being scanned are
    /// (`fast::special_bits`).
    bits: Vec<u64>,
}

/// A parsed line: views of the line and of the scratch it was parsed with.
#[derive(Debug)]
pub(crate) struct Parsed<'s> {
    pub(crate) method: &'s [u8],
    pub(crate) uri: &'s [u8],
    pub(crate) version: u16,
    pub(crate) client: &'s [u8],
    /// The connection's peer (`peer`: `$realip_remote_addr`); empty:
    /// the client.
    pub(crate) peer: &'s [u8],
    /// Views of `line` and `LineBufs`.
    pub(crate) headers: &'s [Header<'s>],
    /// What nginx decided, for log lines that carry it.
    pub(crate) live_action: Option<Outcome>,
    /// The connection's JA4 (`edgeguard_ja4`), for log lines that carry one.
    pub(crate) ja4: Option<&'s [u8]>,
    /// The Unix time access() decided with (`edgeguard_time`), for log
    /// lines that carry it: the clock the clearance cookie is judged by.
    pub(crate) time: Option<u64>,
    /// nginx's `time` (`$time_iso8601`) as Unix seconds, when the line has
    /// one in that form; None otherwise (never an error).
    pub(crate) logged: Option<u64>,
    /// The TLS facts the features read: the JA4 and `edgeguard_tls_family`.
    pub(crate) tls: Option<TlsFacts<'s>>,
    live: &'s [(Span, LiveScore)],
    bufs: Bufs<'s>,
}

impl Parsed<'_> {
    /// The score nginx logged for the model named `name`, if any.
    pub(crate) fn live_score(&self, name: &str) -> Option<LiveScore> {
        self.live
            .iter()
            .find(|(n, _)| self.bufs.get(*n) == name.as_bytes())
            .map(|&(_, s)| s)
            .filter(|s| !s.value.is_nan())
    }
}

#[derive(Clone, Copy, Debug)]
struct Bufs<'s> {
    line: &'s [u8],
    text: &'s [u8],
    owned: &'s [u8],
}

impl<'s> Bufs<'s> {
    fn get(&self, s: Span) -> &'s [u8] {
        let buf = match s.base {
            Base::Line => self.line,
            Base::Text => self.text,
            Base::Owned => self.owned,
        };
        &buf[s.start..s.start + s.len]
    }
}

/// Why a line was skipped: the column and serde_json's message.
#[derive(Debug)]
pub struct ParseError(serde_json::Error);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // serde_json counts lines within the record; the caller prints the
        // input's own line number, so only the column is useful here.
        let e = &self.0;
        let msg = e.to_string();
        let msg = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(head, _)| head);
        write!(f, "column {}: {msg}", e.column())
    }
}

/// Parses one line (without its newline).
pub(crate) fn parse<'s>(
    line: &'s [u8],
    scratch: &'s mut LineBufs,
) -> Result<Parsed<'s>, ParseError> {
    scratch.owned.clear();
    scratch.text.clear();
    scratch.pairs.clear();
    scratch.live.clear();
    scratch.headers.clear();

    let fields = match fast::record(line, scratch) {
        Some(fields) => fields,
        None => serde_record(line, scratch)?,
    };
    if let Some(text) = fields.headers_text {
        header_pairs(line, text, scratch)?;
    }

    let bufs = Bufs {
        line,
        text: &scratch.text,
        owned: &scratch.owned,
    };
    let headers = scratch.headers.fill(
        scratch
            .pairs
            .iter()
            .map(|&(k, v)| (bufs.get(k), bufs.get(v))),
    );
    let missing = |name: &str| ParseError(de::Error::missing_field(static_name(name)));
    let (ja4, tls) = tls_of(&fields, &bufs)?;
    Ok(Parsed {
        method: bufs.get(fields.method.ok_or_else(|| missing("method"))?),
        uri: bufs.get(fields.uri.ok_or_else(|| missing("uri"))?),
        version: fields.version.ok_or_else(|| missing("version"))?,
        client: bufs.get(fields.client.unwrap_or(EMPTY)),
        peer: bufs.get(fields.peer.unwrap_or(EMPTY)),
        headers,
        live_action: fields
            .live_action
            .and_then(|s| Outcome::from_name(bufs.get(s))),
        ja4,
        time: time_of(&fields, &bufs)?,
        logged: fields.logged.and_then(|s| iso_time(bufs.get(s))),
        tls,
        live: &scratch.live,
        bufs,
    })
}

/// The `headers` field's pairs into `scratch.pairs`: the array text sits
/// in the line (no escapes) or in `scratch.text`.
#[inline]
fn header_pairs(line: &[u8], text: Span, scratch: &mut LineBufs) -> Result<(), ParseError> {
    let (base, buf) = match text.base {
        Base::Line => (Base::Line, &line[text.start..text.start + text.len]),
        _ => (Base::Text, &scratch.text[..]),
    };
    let offset = if base == Base::Line { text.start } else { 0 };
    let (owned, pairs) = (&mut scratch.owned, &mut scratch.pairs);
    if fast::pairs(buf, base, offset, owned, pairs, &mut scratch.bits).is_none() {
        scratch.pairs.clear();
        let mut de = serde_json::Deserializer::from_slice(buf);
        PairsSeed {
            base,
            origin: buf.as_ptr(),
            offset,
            owned: &mut scratch.owned,
            pairs: &mut scratch.pairs,
        }
        .deserialize(&mut de)
        .map_err(ParseError)?;
        de.end().map_err(ParseError)?;
    }
    Ok(())
}

/// The recorded JA4 and the TLS facts it and the family make.
#[inline]
#[allow(clippy::type_complexity)]
fn tls_of<'s>(
    fields: &Fields,
    bufs: &Bufs<'s>,
) -> Result<(Option<&'s [u8]>, Option<TlsFacts<'s>>), ParseError> {
    let ja4 = fields.ja4.map(|s| bufs.get(s)).filter(|v| !is_unset(v));
    let family = match fields.tls_family.map(|s| bufs.get(s)).filter(|v| !is_unset(v)) {
        None => Family::Unknown,
        Some(v) => Family::from_name(v).ok_or_else(|| {
            ParseError(de::Error::custom(format_args!(
                "edgeguard_tls_family: {:?} is not a TLS family (boringssl, nss, openssl, go, unknown)",
                String::from_utf8_lossy(v)
            )))
        })?,
    };
    let tls = match ja4 {
        None => None,
        Some(v) => Some(TlsFacts::new(v, family).ok_or_else(|| {
            ParseError(de::Error::custom(format_args!(
                "edgeguard_ja4: {:?} is not a JA4 fingerprint (36 characters, t13d1516h2_8daaf6152771_e5627efa2ab1)",
                String::from_utf8_lossy(v)
            )))
        })?),
    };
    Ok((ja4, tls))
}

/// The recorded `edgeguard_time`: Unix seconds.
#[inline]
fn time_of(fields: &Fields, bufs: &Bufs<'_>) -> Result<Option<u64>, ParseError> {
    let Some(v) = fields.time.map(|s| bufs.get(s)).filter(|v| !is_unset(v)) else {
        return Ok(None);
    };
    std::str::from_utf8(v)
        .ok()
        .filter(|t| !t.is_empty() && t.len() <= 19 && t.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|t| t.parse().ok())
        .map(Some)
        .ok_or_else(|| {
            ParseError(de::Error::custom(format_args!(
                "edgeguard_time: {:?} is not Unix seconds",
                String::from_utf8_lossy(v)
            )))
        })
}

/// `2026-12-04T16:15:19+01:00` (nginx's `$time_iso8601`: local time and
/// its offset; `Z` too) as Unix seconds; None for anything else.
pub(crate) fn iso_time(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?;
    let (local, zone) = (s.get(..19)?, s.get(19..)?);
    let offset: i64 = match zone.as_bytes() {
        b"Z" | b"" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [h1, h2, m1, m2];
            if !digits.iter().all(|d| d.is_ascii_digit()) {
                return None;
            }
            let n = |a: &u8, b: &u8| i64::from((a - b'0') * 10 + (b - b'0'));
            let secs = n(h1, h2) * 3600 + n(m1, m2) * 60;
            if *sign == b'+' {
                secs
            } else {
                -secs
            }
        }
        _ => return None,
    };
    // humantime reads the local part as if it were UTC; the offset is
    // then taken off.
    let t = humantime::parse_rfc3339_weak(local).ok()?;
    let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    u64::try_from(i64::try_from(secs).ok()? - offset).ok()
}

/// The serde path: the line again from scratch, for its error if it has
/// one.
fn serde_record(line: &[u8], scratch: &mut LineBufs) -> Result<Fields, ParseError> {
    scratch.owned.clear();
    scratch.text.clear();
    scratch.pairs.clear();
    scratch.live.clear();
    let fields = {
        let mut de = serde_json::Deserializer::from_slice(line);
        let fields = RecordSeed {
            origin: line.as_ptr(),
            owned: &mut scratch.owned,
            text: &mut scratch.text,
            pairs: &mut scratch.pairs,
            live: &mut scratch.live,
        }
        .deserialize(&mut de)
        .map_err(ParseError)?;
        de.end().map_err(ParseError)?;
        fields
    };
    Ok(fields)
}

/// The fields a line parses to, resolved to bytes, by the scanner (`fast`)
/// or by serde: what the two paths are compared on.
#[cfg(any(test, feature = "fuzzing"))]
fn resolved(line: &[u8], fast: bool) -> Option<Vec<Vec<u8>>> {
    let mut s = LineBufs::default();
    let f = if fast {
        fast::record(line, &mut s)
    } else {
        serde_record(line, &mut s).ok()
    }?;
    let bufs = Bufs {
        line,
        text: &s.text,
        owned: &s.owned,
    };
    let span = |x: Option<Span>| x.map_or(b"<none>".to_vec(), |x| bufs.get(x).to_vec());
    let mut out = vec![
        span(f.method),
        span(f.uri),
        span(f.client),
        span(f.peer),
        span(f.live_action),
        span(f.ja4),
        span(f.time),
        span(f.logged),
        span(f.tls_family),
        format!("{:?}", f.version).into_bytes(),
    ];
    for &(n, score) in &s.live {
        out.push(bufs.get(n).to_vec());
        out.push(format!("{score:?}").into_bytes());
    }
    // The headers as `parse` assembles them: the pairs the record gave (an
    // array, or a log line's text the scanner read in place), then those of
    // a text left for later, read by both pair parsers. Which of the two
    // held them is the scanner's business.
    out.push(b"<pairs>".to_vec());
    for &(k, v) in &s.pairs {
        out.push(bufs.get(k).to_vec());
        out.push(bufs.get(v).to_vec());
    }
    if let Some(text) = f.headers_text {
        let text = bufs.get(text).to_vec();
        out.extend(resolved_pairs(&text, fast)?);
    }
    Some(out)
}

/// The pairs of a `headers` text, by the scanner (`fast`) or by serde.
#[cfg(any(test, feature = "fuzzing"))]
fn resolved_pairs(text: &[u8], fast: bool) -> Option<Vec<Vec<u8>>> {
    let (mut owned, mut pairs) = (Vec::new(), Vec::new());
    if fast {
        fast::pairs(text, Base::Line, 0, &mut owned, &mut pairs, &mut Vec::new())?;
    } else {
        let mut de = serde_json::Deserializer::from_slice(text);
        PairsSeed {
            base: Base::Line,
            origin: text.as_ptr(),
            offset: 0,
            owned: &mut owned,
            pairs: &mut pairs,
        }
        .deserialize(&mut de)
        .ok()?;
        de.end().ok()?;
    }
    let bufs = Bufs {
        line: text,
        text: &[],
        owned: &owned,
    };
    Some(
        pairs
            .iter()
            .flat_map(|&(k, v)| [bufs.get(k).to_vec(), bufs.get(v).to_vec()])
            .collect(),
    )
}

/// Both parsers on one line: `Ok(true)` when the scanner answered and serde
/// agrees, `Ok(false)` when the scanner left the line to serde, `Err` when
/// the scanner accepted a line serde refuses or read it differently (the
/// `replay_line` fuzz target and the fixture test hold it to that).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn paths_agree(line: &[u8]) -> Result<bool, String> {
    let Some(fast) = resolved(line, true) else {
        return Ok(false);
    };
    match resolved(line, false) {
        Some(slow) if slow == fast => Ok(true),
        Some(slow) => Err(format!("the scanner read {fast:?}, serde {slow:?}")),
        None => Err(format!(
            "the scanner accepted a line serde refuses: {fast:?}"
        )),
    }
}

fn static_name(name: &str) -> &'static str {
    match name {
        "method" => "method",
        "uri" => "uri",
        _ => "version",
    }
}

/// The scalar fields of a record, as spans.
#[derive(Default)]
struct Fields {
    method: Option<Span>,
    uri: Option<Span>,
    version: Option<u16>,
    client: Option<Span>,
    peer: Option<Span>,
    headers_text: Option<Span>,
    live_action: Option<Span>,
    ja4: Option<Span>,
    time: Option<Span>,
    /// nginx's `time`.
    logged: Option<Span>,
    tls_family: Option<Span>,
}

/// Where a string seed puts what it reads.
struct StrSeed<'a> {
    /// The base of strings serde_json borrows from its input.
    base: Base,
    origin: *const u8,
    /// Added to borrowed offsets (the input may be a slice of the base).
    offset: usize,
    /// Where escaped strings are copied.
    owned: &'a mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for StrSeed<'_> {
    type Value = Span;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Span, D::Error> {
        // Bytes, not str: nginx's escape=json writes bytes >= 0x80 as they
        // came, and the request is scored on its bytes, UTF-8 or not.
        d.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for StrSeed<'_> {
    type Value = Span;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Span, E> {
        // serde_json hands out borrowed strings only from the slice it was
        // given, which starts at `origin`.
        let start = v.as_ptr() as usize - self.origin as usize + self.offset;
        Ok(Span {
            base: self.base,
            start,
            len: v.len(),
        })
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Span, E> {
        let start = self.owned.len();
        self.owned.extend_from_slice(v);
        Ok(Span {
            base: Base::Owned,
            start,
            len: v.len(),
        })
    }
}

/// A value read as a string if it is one, else skipped: nginx's `time`,
/// which other log formats may hold as a number (and replay never
/// refused a line for it).
struct AnyStr<'a>(StrSeed<'a>);

impl<'de> DeserializeSeed<'de> for AnyStr<'_> {
    type Value = Option<Span>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Span>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnyStr<'_> {
    type Value = Option<Span>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Option<Span>, E> {
        self.0.visit_borrowed_bytes(v.as_bytes()).map(Some)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Span>, E> {
        self.0.visit_bytes(v.as_bytes()).map(Some)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<Span>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<Span>, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<Span>, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<Span>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Span>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Option<Span>, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Option<Span>, A::Error> {
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

struct RecordSeed<'a> {
    origin: *const u8,
    owned: &'a mut Vec<u8>,
    text: &'a mut Vec<u8>,
    pairs: &'a mut Vec<(Span, Span)>,
    live: &'a mut Vec<(Span, LiveScore)>,
}

impl RecordSeed<'_> {
    fn str_seed(&mut self) -> StrSeed<'_> {
        StrSeed {
            base: Base::Line,
            origin: self.origin,
            offset: 0,
            owned: self.owned,
        }
    }
}

impl<'de> DeserializeSeed<'de> for RecordSeed<'_> {
    type Value = Fields;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Fields, D::Error> {
        d.deserialize_map(self)
    }
}

/// A record key; borrowed keys cost nothing, escaped keys are rare.
enum Key<'de> {
    Method,
    Uri,
    Version,
    Client,
    Peer,
    Headers,
    LiveAction,
    Ja4,
    Time,
    Logged,
    TlsFamily,
    LiveScore(std::borrow::Cow<'de, [u8]>),
    Other,
}

const LIVE_PREFIX: &str = "edgeguard_";

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Key<'de>, E> {
                Ok(match key(v)? {
                    Key::LiveScore(_) => Key::LiveScore(v[LIVE_PREFIX.len()..].into()),
                    k => k,
                })
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Key<'de>, E> {
                Ok(match key(v)? {
                    Key::LiveScore(_) => Key::LiveScore(v[LIVE_PREFIX.len()..].to_owned().into()),
                    k => k,
                })
            }
        }
        fn key<E: de::Error>(v: &[u8]) -> Result<Key<'static>, E> {
            Ok(match v {
                b"method" => Key::Method,
                b"uri" => Key::Uri,
                b"version" => Key::Version,
                b"client" => Key::Client,
                b"peer" => Key::Peer,
                b"headers" => Key::Headers,
                b"edgeguard_action" => Key::LiveAction,
                b"edgeguard_ja4" => Key::Ja4,
                b"edgeguard_time" => Key::Time,
                b"time" => Key::Logged,
                b"edgeguard_verified_bot" => Key::Other,
                b"edgeguard_tls_family" => Key::TlsFamily,
                _ if v.len() > LIVE_PREFIX.len() && v.starts_with(LIVE_PREFIX.as_bytes()) => {
                    Key::LiveScore(b"".into())
                }
                // Only unknown names are checked: known ones are ASCII.
                _ if std::str::from_utf8(v).is_err() => {
                    return Err(E::custom("invalid unicode in a field name"))
                }
                _ => Key::Other,
            })
        }
        // Bytes: serde_json then skips the UTF-8 check of every name.
        d.deserialize_bytes(KeyVisitor)
    }
}

impl<'de> Visitor<'de> for RecordSeed<'_> {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match key {
                Key::Method => fields.method = Some(map.next_value_seed(self.str_seed())?),
                Key::Uri => fields.uri = Some(map.next_value_seed(self.str_seed())?),
                Key::Client => fields.client = Some(map.next_value_seed(self.str_seed())?),
                Key::Peer => fields.peer = Some(map.next_value_seed(self.str_seed())?),
                Key::Version => fields.version = Some(map.next_value_seed(VersionSeed)?),
                Key::Headers => {
                    self.pairs.clear();
                    fields.headers_text = map.next_value_seed(HeadersSeed {
                        pairs: PairsSeed {
                            base: Base::Line,
                            origin: self.origin,
                            offset: 0,
                            owned: self.owned,
                            pairs: self.pairs,
                        },
                        text: self.text,
                    })?;
                }
                Key::LiveAction => {
                    fields.live_action = Some(map.next_value_seed(self.str_seed())?);
                }
                Key::Ja4 => fields.ja4 = Some(map.next_value_seed(self.str_seed())?),
                Key::Time => fields.time = Some(map.next_value_seed(self.str_seed())?),
                Key::Logged => fields.logged = map.next_value_seed(AnyStr(self.str_seed()))?,
                Key::TlsFamily => {
                    fields.tls_family = Some(map.next_value_seed(self.str_seed())?);
                }
                Key::LiveScore(name) => {
                    let score = map.next_value_seed(LiveScoreSeed)?;
                    let start = self.owned.len();
                    self.owned.extend_from_slice(&name);
                    let span = Span {
                        base: Base::Owned,
                        start,
                        len: name.len(),
                    };
                    self.live.push((span, score));
                }
                Key::Other => map.next_value_seed(Skip)?,
            }
        }
        Ok(fields)
    }
}

/// Skips any value. Unlike [`IgnoredAny`], for which serde_json keeps a
/// stack of brackets in a buffer allocated per deserializer, this walks
/// nested values through the visitor, which allocates nothing (labels and
/// feature vectors of fixture lines are nested).
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
}

/// `version`: a number (`1.1`, `2`) or a string (`"1.1"`, `"HTTP/2.0"`).
struct VersionSeed;

impl<'de> DeserializeSeed<'de> for VersionSeed {
    type Value = u16;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u16, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for VersionSeed {
    type Value = u16;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an HTTP version (1.0, 1.1, 2, 3)")
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<u16, E> {
        scaled_version(x).ok_or_else(|| E::custom(format_args!("unsupported HTTP version {x}")))
    }

    fn visit_u64<E: de::Error>(self, x: u64) -> Result<u16, E> {
        self.visit_f64(x as f64)
    }

    fn visit_i64<E: de::Error>(self, x: i64) -> Result<u16, E> {
        self.visit_f64(x as f64)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<u16, E> {
        version_text(s).ok_or_else(|| E::custom(format_args!("unsupported HTTP version {s:?}")))
    }
}

/// `"1.1"`, `"HTTP/2.0"`, as nginx's scaled version.
fn version_text(s: &str) -> Option<u16> {
    let t = s.trim();
    let t = match t.get(..5) {
        Some(p) if p.eq_ignore_ascii_case("http/") => &t[5..],
        _ => t,
    };
    // The forms nginx logs (`$server_protocol`) and `edgeguard features`
    // writes, without a float parse; anything else as the number it reads.
    match t.as_bytes() {
        b"1.1" => Some(11),
        b"2" | b"2.0" => Some(20),
        b"1.0" => Some(10),
        b"3" | b"3.0" => Some(30),
        b"0.9" => Some(9),
        _ => t.parse::<f64>().ok().and_then(scaled_version),
    }
}

/// nginx's `r->http_version` scaled to 9, 10, 11, 20 or 30.
fn scaled_version(x: f64) -> Option<u16> {
    let scaled = (x * 10.0).round();
    match scaled as u16 {
        v @ (9 | 10 | 11 | 20 | 30) if scaled == f64::from(v) => Some(v),
        _ => None,
    }
}

/// A score nginx logged, and how far from it the exact score may lie given
/// the digits it was printed with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LiveScore {
    /// NaN when the variable was not set.
    pub(crate) value: f64,
    /// Half a unit in the last printed digit (`"%.9g"` of 0.73 gives
    /// 5e-10, `"%.6f"` 5e-7); a few ulps for JSON numbers.
    pub(crate) tolerance: f64,
}

impl LiveScore {
    /// Whether `score` printed the way this one was gives the same digits.
    pub(crate) fn matches(&self, score: f64) -> bool {
        // The slack covers the rounding of the decimal text to f64.
        (self.value - score).abs() <= self.tolerance * (1.0 + 1e-6)
    }

    fn number(value: f64) -> LiveScore {
        LiveScore {
            value,
            tolerance: 4.0 * f64::EPSILON * value.abs().max(1.0),
        }
    }
}

/// Half a unit in the last digit of a decimal number: `0.912345` gives
/// 5e-7, `1.2e-05` 5e-7, `42` 0.5.
fn half_unit(s: &str) -> Option<f64> {
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let decimals = mantissa.find('.').map_or(0, |i| mantissa.len() - i - 1);
    Some(0.5 * 10f64.powi(exp - decimals as i32))
}

/// A live score as nginx logged it: `"0.731245"`, a number, or empty when
/// the variable was not set (NaN then).
struct LiveScoreSeed;

impl<'de> DeserializeSeed<'de> for LiveScoreSeed {
    type Value = LiveScore;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<LiveScore, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for LiveScoreSeed {
    type Value = LiveScore;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a score")
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<LiveScore, E> {
        Ok(LiveScore::number(x))
    }

    fn visit_u64<E: de::Error>(self, x: u64) -> Result<LiveScore, E> {
        Ok(LiveScore::number(x as f64))
    }

    fn visit_i64<E: de::Error>(self, x: i64) -> Result<LiveScore, E> {
        Ok(LiveScore::number(x as f64))
    }

    fn visit_unit<E: de::Error>(self) -> Result<LiveScore, E> {
        Ok(LiveScore::number(f64::NAN))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<LiveScore, E> {
        if let "" | "-" = s {
            return Ok(LiveScore::number(f64::NAN));
        }
        match (s.parse::<f64>(), half_unit(s)) {
            (Ok(value), Some(tolerance)) => Ok(LiveScore { value, tolerance }),
            _ => Err(E::custom(format_args!("live score {s:?} is not a number"))),
        }
    }
}

/// `headers`: an array of pairs, read into `pairs`; or a string holding
/// that array's JSON text (log lines), returned for a second pass; or null.
struct HeadersSeed<'a> {
    pairs: PairsSeed<'a>,
    text: &'a mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for HeadersSeed<'_> {
    type Value = Option<Span>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Span>, D::Error> {
        // `null`, else an array or a string read as bytes (see `StrSeed`).
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for HeadersSeed<'_> {
    type Value = Option<Span>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of [name, value] pairs, or its JSON text")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Span>, A::Error> {
        self.pairs.visit_seq(seq).map(|()| None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<Span>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<Span>, D::Error> {
        d.deserialize_bytes(self)
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Option<Span>, E> {
        if is_unset(v) {
            return Ok(None);
        }
        let start = v.as_ptr() as usize - self.pairs.origin as usize;
        Ok(Some(Span {
            base: Base::Line,
            start,
            len: v.len(),
        }))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Option<Span>, E> {
        if is_unset(v) {
            return Ok(None);
        }
        self.text.clear();
        self.text.extend_from_slice(v);
        Ok(Some(Span {
            base: Base::Text,
            start: 0,
            len: v.len(),
        }))
    }
}

/// nginx logs an unset variable as `-`, an empty one as nothing.
fn is_unset(v: &[u8]) -> bool {
    matches!(v.trim_ascii(), b"" | b"-")
}

/// An array of `[name, value]` string pairs, appended to `pairs`.
struct PairsSeed<'a> {
    base: Base,
    origin: *const u8,
    offset: usize,
    owned: &'a mut Vec<u8>,
    pairs: &'a mut Vec<(Span, Span)>,
}

impl<'de> DeserializeSeed<'de> for PairsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PairsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of [name, value] pairs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(pair) = seq.next_element_seed(PairSeed {
            base: self.base,
            origin: self.origin,
            offset: self.offset,
            owned: self.owned,
        })? {
            self.pairs.push(pair);
        }
        Ok(())
    }
}

struct PairSeed<'a> {
    base: Base,
    origin: *const u8,
    offset: usize,
    owned: &'a mut Vec<u8>,
}

impl PairSeed<'_> {
    fn str_seed(&mut self) -> StrSeed<'_> {
        StrSeed {
            base: self.base,
            origin: self.origin,
            offset: self.offset,
            owned: self.owned,
        }
    }
}

impl<'de> DeserializeSeed<'de> for PairSeed<'_> {
    type Value = (Span, Span);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(Span, Span), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PairSeed<'_> {
    type Value = (Span, Span);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a [name, value] pair")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(Span, Span), A::Error> {
        let name = seq
            .next_element_seed(self.str_seed())?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let value = seq
            .next_element_seed(self.str_seed())?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &self));
        }
        Ok((name, value))
    }
}

mod fast;
pub(crate) mod redact;
pub(crate) mod write;

#[cfg(test)]
mod tests;
