//! The fast path of [`parse`](super::parse): a scanner for the JSON that
//! replay reads, with no serde machinery between the bytes and the spans.
//! It fills the same [`LineBufs`] with the same spans as the serde path. On
//! anything it does not expect (a syntax error, a type mismatch, an escaped
//! field name, a lone surrogate) it gives up and the serde path parses the
//! line again, so that every error and its message come from one place.

use super::{
    scaled_version, version_text, Base, Fields, LineBufs, LiveScore, LiveScoreSeed, Span,
    LIVE_PREFIX,
};
use serde::de::Visitor;

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// [`special_bits`] of `buf`: where its quotes and backslashes are.
    bits: &'a [u64],
}

impl<'a> Cursor<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.buf.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte after whitespace.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.buf.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        // Logged lines have no white space between tokens: the next byte
        // is usually the one expected.
        if self.buf.get(self.pos) == Some(&b) {
            self.pos += 1;
            return Some(());
        }
        (self.peek()? == b).then(|| self.pos += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        let end = self.pos + word.len();
        (self.buf.get(self.pos..end)? == word).then(|| self.pos = end)
    }

    /// A string: the range of its content, and whether it holds escapes.
    /// (Raw control characters were ruled out for the whole buffer.)
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        self.eat(b'"')?;
        let start = self.pos;
        let mut pos = start;
        let mut escaped = false;
        loop {
            let i = self.special(pos)?;
            if self.buf[i] == b'"' {
                self.pos = i + 1;
                return Some((start, i, escaped));
            }
            // The escaped byte is never the closing quote (`\u` is followed
            // by hex digits). Past the end, `special` finds nothing.
            escaped = true;
            pos = i + 2;
        }
    }

    /// The first quote or backslash at or after `from`, read off the bits:
    /// a string's end or next escape is a few instructions away however far
    /// it is, where a search per string paid its setup at every string and
    /// every escape (a log line's `headers` text has one every few bytes).
    #[inline]
    fn special(&self, from: usize) -> Option<usize> {
        let mut k = from / 64;
        let mut m = *self.bits.get(k)? & (!0u64 << (from % 64));
        while m == 0 {
            k += 1;
            m = *self.bits.get(k)?;
        }
        Some(k * 64 + m.trailing_zeros() as usize)
    }

    /// Appends the unescaped content of the string at `s..e` of `buf` to
    /// `out`, its backslashes found through the bits.
    fn unescape(&self, s: usize, e: usize, out: &mut Vec<u8>) -> Option<()> {
        // Reads stop at the string's end, as if it were the whole buffer.
        let src = &self.buf[..e];
        let mut i = s;
        // The bits inside a string are its backslashes and the quotes they
        // escape, which the jump past each escape skips.
        while let Some(j) = self.special(i).filter(|&j| j < e) {
            out.extend_from_slice(&src[i..j]);
            i = j + unescape_one(src, j, out)?;
        }
        out.extend_from_slice(&src[i..]);
        Some(())
    }

    /// A string as a span: of `base` (at `offset`) when it has no escapes,
    /// else unescaped into `owned`.
    fn str_span(&mut self, base: Base, offset: usize, owned: &mut Vec<u8>) -> Option<Span> {
        let (s, e, escaped) = self.string()?;
        if !escaped {
            return Some(Span {
                base,
                start: s + offset,
                len: e - s,
            });
        }
        let start = owned.len();
        self.unescape(s, e, owned)?;
        Some(Span {
            base: Base::Owned,
            start,
            len: owned.len() - start,
        })
    }

    /// A string without escapes.
    fn plain(&mut self) -> Option<&'a [u8]> {
        let (s, e, escaped) = self.string()?;
        (!escaped).then(|| &self.buf[s..e])
    }

    /// A string without escapes, as text.
    fn plain_str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.plain()?).ok()
    }

    fn number(&mut self) -> Option<f64> {
        self.ws();
        let start = self.pos;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.buf.get(self.pos) {
            self.pos += 1;
        }
        let text = &self.buf[start..self.pos];
        if !json_number(text) {
            // Rust's float syntax is looser (`01`, `1.`, `1e`): serde decides.
            return None;
        }
        // ASCII by construction. serde refuses a number past f64's range
        // where Rust's parser gives an infinity; near the edge the two may
        // round differently, and no log holds such numbers: serde decides.
        let v: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
        (v.abs() < 1e300).then_some(v)
    }

    /// A string the record does not use, checked as serde checks the
    /// strings it ignores (UTF-8, valid escapes); escapes are undone into
    /// `tmp` and dropped.
    fn skip_string(&mut self, tmp: &mut Vec<u8>) -> Option<()> {
        let (s, e, escaped) = self.string()?;
        let raw = &self.buf[s..e];
        if escaped {
            let mark = tmp.len();
            let undone = self.unescape(s, e, tmp);
            tmp.truncate(mark);
            undone?;
        }
        std::str::from_utf8(raw).ok().map(drop)
    }

    /// A value the record does not use; `tmp` as for [`Self::skip_string`].
    fn skip_value(&mut self, tmp: &mut Vec<u8>) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(tmp),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            b'[' => {
                self.pos += 1;
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Some(());
                }
                loop {
                    self.skip_value(tmp)?;
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b']' => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'{' => {
                self.pos += 1;
                if self.peek()? == b'}' {
                    self.pos += 1;
                    return Some(());
                }
                loop {
                    self.skip_string(tmp)?;
                    self.eat(b':')?;
                    self.skip_value(tmp)?;
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b'}' => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }

    fn version(&mut self) -> Option<u16> {
        match self.peek()? {
            b'"' => version_text(self.plain_str()?),
            _ => scaled_version(self.number()?),
        }
    }

    fn live_score(&mut self) -> Option<LiveScore> {
        match self.peek()? {
            b'"' => LiveScoreSeed
                .visit_str::<serde_json::Error>(self.plain_str()?)
                .ok(),
            b'n' => self.literal(b"null").map(|()| LiveScore::number(f64::NAN)),
            _ => self.number().map(LiveScore::number),
        }
    }

    /// `[[name, value], ...]`, appended to `pairs`.
    fn pairs(
        &mut self,
        base: Base,
        offset: usize,
        owned: &mut Vec<u8>,
        pairs: &mut Vec<(Span, Span)>,
    ) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(());
        }
        loop {
            self.eat(b'[')?;
            let k = self.str_span(base, offset, owned)?;
            self.eat(b',')?;
            let v = self.str_span(base, offset, owned)?;
            self.eat(b']')?;
            pairs.push((k, v));
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The pairs of a `headers` text that is itself a JSON string (the
    /// content `s..e` of the line, escaped once more by nginx), read where
    /// it sits: the array's brackets and commas are the same bytes in both
    /// layers and each inner quote is `\"`, so an inner string with no
    /// escape of its own is a plain run of the line, kept as a view, and
    /// one with escapes (a `sec-ch-ua` value's quotes) is undone, both
    /// layers, into `owned` through `tmp`. The usual log line's text thus
    /// needs no unescaping whole into the scratch and no second scan. On
    /// anything else (white space, a `\u` of the outer layer outside an
    /// inner escape) it gives up, leaving `pairs` and `owned` as they were,
    /// and the text is unescaped and read as before. Whether it read them.
    fn nested_pairs(
        &self,
        s: usize,
        e: usize,
        owned: &mut Vec<u8>,
        tmp: &mut Vec<u8>,
        pairs: &mut Vec<(Span, Span)>,
    ) -> bool {
        let (o, p) = (owned.len(), pairs.len());
        // Reads stop at the outer string's end.
        let b = &self.buf[..e];
        let token = |i: &mut usize, t: u8| (b.get(*i) == Some(&t)).then(|| *i += 1);
        let mut list = || -> Option<()> {
            let mut i = s;
            token(&mut i, b'[')?;
            if token(&mut i, b']').is_none() {
                loop {
                    token(&mut i, b'[')?;
                    let k = self.nested_string(b, &mut i, owned, tmp)?;
                    token(&mut i, b',')?;
                    let v = self.nested_string(b, &mut i, owned, tmp)?;
                    token(&mut i, b']')?;
                    pairs.push((k, v));
                    if token(&mut i, b']').is_some() {
                        break;
                    }
                    token(&mut i, b',')?;
                }
            }
            (i == e).then_some(())
        };
        let read = list().is_some();
        if !read {
            owned.truncate(o);
            pairs.truncate(p);
        }
        read
    }

    /// An inner string at `b[*i]` of [`Self::nested_pairs`], from its `\"`
    /// to its `\"`. Every special byte inside is a backslash: `\"` ends the
    /// string, `\\` starts an inner escape, whose own character may be
    /// escaped in the outer layer too (`\\\"`, `\\\\`); any other outer
    /// escape makes it give up: `\u005c` would be an inner backslash, which
    /// only undoing the outer layer first can tell.
    fn nested_string(
        &self,
        b: &[u8],
        i: &mut usize,
        owned: &mut Vec<u8>,
        tmp: &mut Vec<u8>,
    ) -> Option<Span> {
        if b.get(*i..*i + 2)? != b"\\\"" {
            return None;
        }
        let start = *i + 2;
        let mut j = self.special(start)?;
        let mut escaped = false;
        loop {
            match *b.get(j + 1)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    // The inner escape's character, escaped in the outer
                    // layer too when it is a quote or a backslash; the two
                    // layers are undone below, and judged there.
                    let after = match *b.get(j + 2)? {
                        b'\\' => j + 4,
                        _ => j + 3,
                    };
                    j = self.special(after)?;
                }
                _ => return None,
            }
        }
        *i = j + 2;
        if !escaped {
            return Some(Span {
                base: Base::Line,
                start,
                len: j - start,
            });
        }
        // The outer layer into `tmp`, then the inner one onto `owned`:
        // both with the scanner's own rules, so what is undone here is
        // what unescaping the whole text and reading it would give.
        tmp.clear();
        self.unescape(start, j, tmp)?;
        let at = owned.len();
        let mut from = 0;
        while let Some(k) = memchr::memchr(b'\\', &tmp[from..]) {
            owned.extend_from_slice(&tmp[from..from + k]);
            from += k + unescape_one(tmp, from + k, owned)?;
        }
        owned.extend_from_slice(&tmp[from..]);
        Some(Span {
            base: Base::Owned,
            start: at,
            len: owned.len() - at,
        })
    }

    fn at_end(&mut self) -> bool {
        self.ws();
        self.pos == self.buf.len()
    }
}

/// The fields of a whole line, or None to leave it to serde.
pub(super) fn record(line: &[u8], scratch: &mut LineBufs) -> Option<Fields> {
    // A CRLF file's lines end in CR: white space, fine after the record.
    if !no_controls(line.strip_suffix(b"\r").unwrap_or(line)) {
        return None;
    }
    special_bits(line, &mut scratch.bits);
    let mut c = Cursor {
        buf: line,
        pos: 0,
        bits: &scratch.bits,
    };
    let mut f = Fields::default();
    c.eat(b'{')?;
    if c.peek()? == b'}' {
        c.pos += 1;
    } else {
        loop {
            let key = c.plain()?;
            c.eat(b':')?;
            let owned = &mut scratch.owned;
            match key {
                b"method" => f.method = Some(c.str_span(Base::Line, 0, owned)?),
                b"uri" => f.uri = Some(c.str_span(Base::Line, 0, owned)?),
                b"client" => f.client = Some(c.str_span(Base::Line, 0, owned)?),
                b"peer" => f.peer = Some(c.str_span(Base::Line, 0, owned)?),
                b"edgeguard_action" => f.live_action = Some(c.str_span(Base::Line, 0, owned)?),
                b"edgeguard_ja4" => f.ja4 = Some(c.str_span(Base::Line, 0, owned)?),
                b"edgeguard_time" => f.time = Some(c.str_span(Base::Line, 0, owned)?),
                // nginx's `time`: a string in edgeguard's formats; any
                // other value is skipped, as serde's path does.
                b"time" if c.peek()? == b'"' => {
                    f.logged = Some(c.str_span(Base::Line, 0, owned)?);
                }
                // Not a model's score: what access{} logged of the bot.
                b"edgeguard_verified_bot" => c.skip_value(owned)?,
                b"edgeguard_tls_family" => {
                    f.tls_family = Some(c.str_span(Base::Line, 0, owned)?);
                }
                b"version" => f.version = Some(c.version()?),
                b"headers" => {
                    scratch.pairs.clear();
                    f.headers_text = match c.peek()? {
                        b'[' => {
                            c.pairs(Base::Line, 0, owned, &mut scratch.pairs)?;
                            None
                        }
                        b'n' => {
                            c.literal(b"null")?;
                            None
                        }
                        _ => {
                            let (s, e, escaped) = c.string()?;
                            let raw = &line[s..e];
                            // A log line's text, escaped: its pairs read in
                            // place, or the text unescaped for later.
                            let in_place = escaped
                                && c.nested_pairs(
                                    s,
                                    e,
                                    owned,
                                    &mut scratch.text,
                                    &mut scratch.pairs,
                                );
                            if in_place || super::is_unset(raw) {
                                None
                            } else if escaped {
                                scratch.text.clear();
                                c.unescape(s, e, &mut scratch.text)?;
                                if super::is_unset(&scratch.text) {
                                    None
                                } else {
                                    Some(Span {
                                        base: Base::Text,
                                        start: 0,
                                        len: scratch.text.len(),
                                    })
                                }
                            } else {
                                Some(Span {
                                    base: Base::Line,
                                    start: s,
                                    len: e - s,
                                })
                            }
                        }
                    };
                }
                _ if key.len() > LIVE_PREFIX.len() && key.starts_with(LIVE_PREFIX.as_bytes()) => {
                    let score = c.live_score()?;
                    let start = owned.len();
                    owned.extend_from_slice(&key[LIVE_PREFIX.len()..]);
                    let name = Span {
                        base: Base::Owned,
                        start,
                        len: key.len() - LIVE_PREFIX.len(),
                    };
                    scratch.live.push((name, score));
                }
                // Unknown names are checked as serde would; known ones are ASCII.
                _ => {
                    std::str::from_utf8(key).ok()?;
                    c.skip_value(owned)?;
                }
            }
            match c.peek()? {
                b',' => c.pos += 1,
                b'}' => {
                    c.pos += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    c.at_end().then_some(f)
}

/// The pairs of a `headers` text (already unescaped once), or None to
/// leave it to serde.
pub(super) fn pairs(
    buf: &[u8],
    base: Base,
    offset: usize,
    owned: &mut Vec<u8>,
    pairs: &mut Vec<(Span, Span)>,
    bits: &mut Vec<u64>,
) -> Option<()> {
    if !no_controls(buf) {
        return None;
    }
    special_bits(buf, bits);
    let mut c = Cursor { buf, pos: 0, bits };
    c.pairs(base, offset, owned, pairs)?;
    c.at_end().then_some(())
}

/// One bit per byte of `buf`, 64 to a word, set where the byte is `"` or
/// `\` (exactly: the tests compare it with a byte-by-byte scan), into
/// `bits` (cleared first; its capacity stays from line to line). One pass
/// over the line, eight bytes to a `u64` step, replaces a search per string
/// and per escape.
pub(super) fn special_bits(buf: &[u8], bits: &mut Vec<u64>) {
    bits.clear();
    let (blocks, rest) = buf.as_chunks::<64>();
    bits.extend(blocks.iter().map(block_bits));
    if !rest.is_empty() {
        // Zero bytes are neither: the bits past the end stay clear.
        let mut last = [0u8; 64];
        last[..rest.len()].copy_from_slice(rest);
        bits.push(block_bits(&last));
    }
}

/// [`special_bits`] of 64 bytes.
#[inline]
fn block_bits(block: &[u8; 64]) -> u64 {
    // Bit 8j of a word to bit 56 + j of the product: eight flags to the top
    // byte (each lands there alone; the other partial products sit at
    // distinct lower bits, so nothing carries into it).
    const GATHER: u64 = 0x0102_0408_1020_4080;
    // A flag byte (0 or 1) per byte first: this loop compiles to vector
    // compares, where comparing in `u64` words took three times the
    // instructions.
    let mut flags = [0u8; 64];
    for (f, &c) in flags.iter_mut().zip(block) {
        *f = u8::from(c == b'"') | u8::from(c == b'\\');
    }
    let mut bits = 0;
    for (k, w) in flags.as_chunks::<8>().0.iter().enumerate() {
        bits |= (u64::from_le_bytes(*w).wrapping_mul(GATHER) >> 56) << (8 * k);
    }
    bits
}

/// Whether `s` holds no byte below 0x20. JSON strings may not hold raw
/// control characters; between tokens only tab, CR and LF could appear, which
/// lines do not have in practice. So a buffer with any such byte is left to
/// serde whole, and the strings of the others need no check of their own.
fn no_controls(s: &[u8]) -> bool {
    // A minimum, not a search with an early exit: it compiles to vector code.
    s.iter().copied().min().is_none_or(|m| m >= 0x20)
}

/// Whether `t` is a JSON number: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
pub(super) fn json_number(t: &[u8]) -> bool {
    let digits =
        |t: &[u8], at: usize| at + t[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i = usize::from(t.first() == Some(&b'-'));
    match t.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(t, i),
        _ => return false,
    }
    if t.get(i) == Some(&b'.') {
        let end = digits(t, i + 1);
        if end == i + 1 {
            return false;
        }
        i = end;
    }
    if let Some(b'e' | b'E') = t.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = t.get(i) {
            i += 1;
        }
        let end = digits(t, i);
        if end == i {
            return false;
        }
        i = end;
    }
    i == t.len()
}

/// Undoes the escape at `src[j]` (a backslash) onto `out`; returns its
/// length in bytes, or None for what serde must judge (a bad escape, a
/// lone surrogate, the end of `src`).
fn unescape_one(src: &[u8], j: usize, out: &mut Vec<u8>) -> Option<usize> {
    let c = *src.get(j + 1)?;
    let b = match c {
        b'"' | b'\\' | b'/' => c,
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'u' => {
            let hi = hex4(src.get(j + 2..j + 6)?)?;
            let (cp, len) = if (0xd800..0xdc00).contains(&hi) {
                if src.get(j + 6..j + 8)? != b"\\u" {
                    return None;
                }
                let lo = hex4(src.get(j + 8..j + 12)?)?;
                if !(0xdc00..0xe000).contains(&lo) {
                    return None;
                }
                (0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00), 12)
            } else {
                (hi, 6)
            };
            // A lone low surrogate is not a char: serde decides.
            let ch = char::from_u32(cp)?;
            out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
            return Some(len);
        }
        _ => return None,
    };
    out.push(b);
    Some(2)
}

fn hex4(h: &[u8]) -> Option<u32> {
    h.iter().try_fold(0u32, |acc, &b| {
        let d = (b as char).to_digit(16)?;
        Some(acc * 16 + d)
    })
}
