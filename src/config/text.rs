//! The texts nginx writes for a decision: the score header's value, the
//! per-model variables and the decision line, written into a caller's
//! buffer with no allocation.
//!
//! The numbers are formatted as C's `printf` formats them (`"%.9g"` for
//! scores in the header and the variables, `"%.6f"` in the decision line),
//! the text the Lua shim wrote with `string.format` before Rust did: an
//! origin or a log pipeline that parses them sees the same bytes. Rust's
//! `{:.N}` and `{:.Ne}` round the exact binary value to nearest, ties to
//! even, as glibc does, so `%g` is built from them: the exponent `{:.Ne}`
//! gives decides between the fixed and the exponent form, then trailing
//! zeros go. The values a request has (scores, thresholds) take a faster
//! path of the same rounding done in integers (`fast_g`, `write_f`);
//! `tests/text_printf.rs` compares both with libc's `snprintf`.

use crate::features::reasons::DETECTIONS;
use crate::features::{Grade, Reasons};
use std::fmt::{self, Write};

/// A part of the caller's buffer: `len` bytes from `offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// Where it starts.
    pub offset: usize,
    /// How many bytes.
    pub len: usize,
}

/// A writer over a fixed buffer: fails (without writing) when a piece does
/// not fit.
pub struct Cursor<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Cursor<'a> {
    /// An empty cursor over `buf`.
    pub fn new(buf: &'a mut [u8]) -> Cursor<'a> {
        Cursor { buf, len: 0 }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What was written.
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Appends raw bytes (a URI is not always UTF-8).
    pub fn bytes(&mut self, b: &[u8]) -> fmt::Result {
        let end = self.len.checked_add(b.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        if b.len() <= 16 {
            // Most pieces are a few bytes: a call to memcpy costs more.
            for (d, s) in dst.iter_mut().zip(b) {
                *d = *s;
            }
        } else {
            dst.copy_from_slice(b);
        }
        self.len = end;
        Ok(())
    }

    /// The span of what `f` writes.
    pub fn span(&mut self, f: impl FnOnce(&mut Self) -> fmt::Result) -> Result<Span, fmt::Error> {
        let offset = self.len;
        f(self)?;
        Ok(Span {
            offset,
            len: self.len - offset,
        })
    }
}

impl Write for Cursor<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.bytes(s.as_bytes())
    }
}

/// Where the formatters write: `fmt::Write`, and ASCII bytes without a
/// UTF-8 check (the digits).
pub trait Sink: Write {
    /// Appends ASCII bytes.
    fn ascii(&mut self, b: &[u8]) -> fmt::Result;
}

impl Sink for Cursor<'_> {
    fn ascii(&mut self, b: &[u8]) -> fmt::Result {
        self.bytes(b)
    }
}

impl Sink for String {
    fn ascii(&mut self, b: &[u8]) -> fmt::Result {
        self.push_str(std::str::from_utf8(b).map_err(|_| fmt::Error)?);
        Ok(())
    }
}

/// A small stack buffer for one number's digits.
struct Digits {
    buf: [u8; 64],
    len: usize,
}

impl Digits {
    fn new() -> Digits {
        Digits {
            buf: [0; 64],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only ASCII from the float formatter is ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl Write for Digits {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// C's spelling of the values without digits.
fn non_finite(w: &mut impl Write, v: f64) -> Option<fmt::Result> {
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_nan() {
        Some(write!(w, "{sign}nan"))
    } else if v.is_infinite() {
        Some(write!(w, "{sign}inf"))
    } else {
        None
    }
}

/// Drops the trailing zeros of a fraction, and its point when none is left.
fn trim_fraction(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

/// Writes `n` in decimal, zero-padded to `width` digits (at most 20), with
/// one call: the fast paths stay out of `core::fmt`'s machinery,
/// which costs more than the digits.
fn write_u64(w: &mut impl Sink, mut n: u64, width: usize) -> fmt::Result {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    let start = i.min(buf.len().saturating_sub(width));
    w.ascii(&buf[start..])
}

/// `v`'s magnitude as `m * 2^k`, exactly (`v` finite).
fn decompose(v: f64) -> (u64, i32) {
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    if exp == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, exp - 1075)
    }
}

/// 10^0 to 10^20: a table, as u128 `pow` and `checked_mul` are slow
/// library calls.
const POW10: [u128; 21] = {
    let mut t = [1u128; 21];
    let mut i = 1;
    while i < 21 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// `m * 2^k * 10^p` rounded to nearest, ties to even, and its floor,
/// computed exactly; None when it does not fit a u128 (`p` <= 20).
fn scaled(m: u64, k: i32, p: u32) -> Option<(u128, u128)> {
    // m < 2^53 and 10^20 < 2^67: the product fits.
    let x = u128::from(m) * *POW10.get(p as usize)?;
    if k >= 0 {
        let k = k.unsigned_abs();
        if k >= 128 || x.leading_zeros() < k {
            return None;
        }
        return Some((x << k, x << k));
    }
    let s = k.unsigned_abs();
    if s >= 128 {
        // x < 2^120: the value is below 2^-8, so it rounds to 0.
        return Some((0, 0));
    }
    let q = x >> s;
    let rem = x & ((1u128 << s) - 1);
    let half = 1u128 << (s - 1);
    let up = rem > half || (rem == half && q & 1 == 1);
    Some((q + u128::from(up), q))
}

/// The `%g` fixed form by exact integer arithmetic, for the values scores
/// are (the exponent X after rounding in -4..P-1, P <= 17); None for the
/// rest, which [`write_g`] formats through Rust's `{:e}`. Both paths give
/// the same digits (tests/text_printf.rs); this one is several times
/// faster, and every scored request takes it.
fn fast_g(w: &mut impl Sink, v: f64, p: usize) -> Option<fmt::Result> {
    let a = v.abs();
    if !(1e-5..1e17).contains(&a) || p > 17 {
        return None;
    }
    let p = p as i32;
    let (m, k) = decompose(v);
    let (lo, hi) = (POW10[p as usize - 1], POW10[p as usize]);
    // floor(log10(a)), made exact: the X with 10^(P-1) <= a * 10^(P-1-X) < 10^P.
    let mut x = a.log10().floor() as i32;
    let mut n = 0;
    for _ in 0..3 {
        if !(-4..p).contains(&x) {
            return None;
        }
        let (rounded, floor) = scaled(m, k, (p - 1 - x) as u32)?;
        if floor < lo {
            x -= 1;
        } else if floor >= hi {
            x += 1;
        } else {
            n = rounded;
            break;
        }
    }
    if n == 0 {
        return None;
    }
    if n == hi {
        // Rounded up to the next power of ten.
        x += 1;
        n = lo;
        if x >= p {
            return None;
        }
    }
    // n < 10^17: the digit work is done in u64, much cheaper than u128.
    let n = u64::try_from(n).ok()?;
    let mut digits = (p - 1 - x) as usize;
    let scale = u64::try_from(POW10[digits]).ok()?;
    let (int, mut fraction) = (n / scale, n % scale);
    while digits > 0 && fraction % 10 == 0 {
        fraction /= 10;
        digits -= 1;
    }
    Some((|| {
        if v.is_sign_negative() {
            w.write_str("-")?;
        }
        write_u64(w, int, 1)?;
        if digits > 0 {
            w.write_str(".")?;
            write_u64(w, fraction, digits)?;
        }
        Ok(())
    })())
}

/// Writes `v` as C's `printf("%.<precision>g", v)`.
pub fn write_g(w: &mut impl Sink, v: f64, precision: usize) -> fmt::Result {
    if let Some(done) = non_finite(w, v) {
        return done;
    }
    let p = precision.max(1);
    if let Some(done) = fast_g(w, v, p) {
        return done;
    }
    // The exponent X of the `%e` form at precision P - 1, after rounding.
    let mut e = Digits::new();
    write!(e, "{:.*e}", p - 1, v)?;
    let (mantissa, exp) = e.as_str().split_once('e').ok_or(fmt::Error)?;
    let x: i32 = exp.parse().map_err(|_| fmt::Error)?;
    if x < -4 || x >= p as i32 {
        let sign = if x < 0 { '-' } else { '+' };
        return write!(
            w,
            "{}e{sign}{:02}",
            trim_fraction(mantissa),
            x.unsigned_abs()
        );
    }
    let mut f = Digits::new();
    write!(f, "{:.*}", (p as i32 - 1 - x) as usize, v)?;
    w.write_str(trim_fraction(f.as_str()))
}

/// Writes `v` as C's `printf("%.<precision>f", v)`: exactly, by integer
/// arithmetic, when `v * 10^precision` fits a u128 (every score and
/// threshold); through Rust's `{:.N}` otherwise.
pub fn write_f(w: &mut impl Sink, v: f64, precision: usize) -> fmt::Result {
    if let Some(done) = non_finite(w, v) {
        return done;
    }
    let (m, k) = decompose(v);
    let fast = u32::try_from(precision)
        .ok()
        .filter(|&p| p <= 20)
        .and_then(|p| scaled(m, k, p));
    let Some((n, _)) = fast else {
        return write!(w, "{v:.precision$}");
    };
    let sign = if v.is_sign_negative() { "-" } else { "" };
    match u64::try_from(n) {
        // Scores and thresholds: u64 arithmetic, no core::fmt.
        Ok(n) if (1..=19).contains(&precision) => {
            let scale = POW10[precision] as u64;
            w.write_str(sign)?;
            write_u64(w, n / scale, 1)?;
            w.write_str(".")?;
            write_u64(w, n % scale, precision)
        }
        _ if precision == 0 => write!(w, "{sign}{n}"),
        _ => {
            let scale = POW10[precision];
            write!(w, "{sign}{}.{:0precision$}", n / scale, n % scale)
        }
    }
}

/// The longest `%.9g` text: `-1.23456789e-308`.
pub const MAX_G9: usize = 16;
/// The longest `%.6f` text: `-` and 309 digits, the point and 6 digits.
pub const MAX_F6: usize = 317;

/// Writes the score header's value, `name=%.9g; name=%.9g` in model order,
/// and hands each value's span to `value(i, span)`. Returns the whole
/// value's span.
pub fn write_scores(
    w: &mut Cursor<'_>,
    names: &[Box<str>],
    scores: &[f64],
    mut value: impl FnMut(usize, Span),
) -> Result<Span, fmt::Error> {
    w.span(|w| {
        for (i, (name, &score)) in names.iter().zip(scores).enumerate() {
            if i > 0 {
                w.write_str("; ")?;
            }
            w.write_str(name)?;
            w.write_str("=")?;
            value(i, w.span(|w| write_g(w, score, 9))?);
        }
        Ok(())
    })
}

/// What the decision line says.
pub struct Line<'a> {
    /// The action, as `$edgeguard_action` names it.
    pub action: &'a str,
    /// The model that flagged the request, its score and its threshold.
    pub flagged: Option<(&'a str, f64, f64)>,
    /// The request's client address, as nginx holds it.
    pub client: &'a [u8],
    /// The request's method.
    pub method: &'a [u8],
    /// The request's URI.
    pub uri: &'a [u8],
    /// The bot the User-Agent claims and the verdict (`verified`, `fake`).
    pub bot: Option<(&'a [u8], &'a str)>,
    /// What the clearance cookie said, when there was one: `accepted`,
    /// `accepted_wait`, or why it was refused (`expired`, `tls`, ...).
    pub clearance: Option<&'a str>,
    /// The site rule that decided the request: its name and tag.
    pub rule: Option<(&'a str, &'a str)>,
    /// Why it was flagged and how surely (none: not flagged).
    pub verdict: Option<(Grade, Reasons)>,
    /// The request's id (`$request_id`); empty: left for the caller to
    /// insert where [`write_line`] says.
    pub request_id: &'a [u8],
    /// The `Host` header as sent (empty: none).
    pub host: &'a [u8],
}

/// The longest `host=` value a line writes: a DNS name (253) and a port.
pub const MAX_HOST: usize = 260;

/// The longest `request_id=` value a line writes.
pub const MAX_REQUEST_ID: usize = 64;

/// The room a decision line needs besides its client, method and URI,
/// for a model name of `max_name` bytes and a bot name of `max_bot`.
pub fn line_room(max_name: usize, max_bot: usize) -> usize {
    const WORDS: usize = "edgeguard action= grade= reasons= model= score= threshold= request_id= host= client= method= uri=\"\" bot= verdict= clearance=".len();
    // The longest clearance name.
    const CLEARANCE: usize = "accepted_wait".len();
    let reasons: usize = DETECTIONS.iter().map(|d| d.name.len() + 1).sum();
    WORDS
        + "unavailable".len()
        + "ambiguous".len()
        + reasons
        + max_name
        + 2 * MAX_F6
        + MAX_REQUEST_ID
        + MAX_HOST
        + max_bot
        + "verified".len()
        + CLEARANCE
}

/// Writes the comma-separated names of `reasons` (`ua_library,accept_non_browser`).
pub fn write_reasons(w: &mut Cursor<'_>, reasons: Reasons) -> fmt::Result {
    for (i, id) in reasons.iter().enumerate() {
        if i > 0 {
            w.write_str(",")?;
        }
        w.write_str(id.detection().name)?;
    }
    Ok(())
}

/// Writes the decision line:
/// `edgeguard action=A grade=G reasons=R,R model=M score=%.6f threshold=%.6f
/// request_id=ID host=H client=C method=M uri="U"` (without the grade and
/// reasons when not flagged, the model part when no model flagged, the
/// host without one), then ` bot=B verdict=V` for a bot claim,
/// ` clearance=R` when a clearance cookie was seen, then
/// ` rule=NAME tag=TAG` for the site rule that decided it (without the tag
/// when it has none). Returns its span and, when the line has no request
/// id, the offset in it where the caller inserts one (after
/// `request_id=`): nginx makes `$request_id` on its first read, which only
/// a logged line then pays for.
pub fn write_line(
    w: &mut Cursor<'_>,
    line: &Line<'_>,
) -> Result<(Span, Option<usize>), fmt::Error> {
    let mut id_at = None;
    let span = w.span(|w| {
        let start = w.len();
        w.write_str("edgeguard action=")?;
        w.write_str(line.action)?;
        if let Some((grade, reasons)) = line.verdict {
            w.write_str(" grade=")?;
            w.write_str(grade.as_str())?;
            w.write_str(" reasons=")?;
            write_reasons(w, reasons)?;
        }
        if let Some((model, score, threshold)) = line.flagged {
            w.write_str(" model=")?;
            w.write_str(model)?;
            w.write_str(" score=")?;
            write_f(w, score, 6)?;
            w.write_str(" threshold=")?;
            write_f(w, threshold, 6)?;
        }
        w.write_str(" request_id=")?;
        if line.request_id.is_empty() {
            id_at = Some(w.len() - start);
        } else {
            w.bytes(&line.request_id[..line.request_id.len().min(MAX_REQUEST_ID)])?;
        }
        if !line.host.is_empty() {
            w.write_str(" host=")?;
            write_host(w, line.host)?;
        }
        write_request(w, line)?;
        if let Some((bot, verdict)) = line.bot {
            w.write_str(" bot=")?;
            w.bytes(bot)?;
            w.write_str(" verdict=")?;
            w.write_str(verdict)?;
        }
        if let Some(c) = line.clearance {
            w.write_str(" clearance=")?;
            w.write_str(c)?;
        }
        if let Some((name, tag)) = line.rule {
            w.write_str(" rule=")?;
            w.write_str(name)?;
            if !tag.is_empty() {
                w.write_str(" tag=")?;
                w.write_str(tag)?;
            }
        }
        Ok(())
    })?;
    Ok((span, id_at))
}

/// A `Host` value, at most [`MAX_HOST`] bytes, each byte a host name,
/// an IP literal or a port may hold (`A-Z a-z 0-9 . - _ : [ ]`); any other
/// is written `?`, so that a client's `Host` cannot forge a field.
fn write_host(w: &mut Cursor<'_>, host: &[u8]) -> fmt::Result {
    for &b in &host[..host.len().min(MAX_HOST)] {
        let ok = b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']');
        w.bytes(if ok { std::slice::from_ref(&b) } else { b"?" })?;
    }
    Ok(())
}

/// ` client=C method=M uri="U"`: the request a line is about.
fn write_request(w: &mut Cursor<'_>, line: &Line<'_>) -> fmt::Result {
    w.write_str(" client=")?;
    w.bytes(line.client)?;
    w.write_str(" method=")?;
    w.bytes(line.method)?;
    w.write_str(" uri=\"")?;
    w.bytes(line.uri)?;
    w.write_str("\"")
}

/// Writes the line of a request refused for internal headers nginx cannot
/// remove (`left` of them): `edgeguard action=refused status=400
/// internal_left=N reason="..." client=C method=M uri="U"` (`line`'s
/// request; its other parts are not read).
pub fn write_refused(w: &mut Cursor<'_>, left: usize, line: &Line<'_>) -> Result<Span, fmt::Error> {
    w.span(|w| {
        w.write_str("edgeguard action=refused status=400 internal_left=")?;
        write_u64(w, left as u64, 1)?;
        w.write_str(
            " reason=\"header names that are not RFC 9110 tokens, which ngx.req.clear_header cannot remove\"",
        )?;
        write_request(w, line)
    })
}

/// Writes the line of a request to the challenge's endpoint: `edgeguard
/// challenge=RESULT client=C method=M uri="U"` (`solved`, `waited`,
/// `cookies_needed`, `returned`), or `challenge=failed reason=R` for a
/// `failed` one (`line`'s request).
pub fn write_answer(
    w: &mut Cursor<'_>,
    result: &str,
    reason: Option<&str>,
    line: &Line<'_>,
) -> Result<Span, fmt::Error> {
    w.span(|w| {
        w.write_str("edgeguard challenge=")?;
        w.write_str(result)?;
        if let Some(reason) = reason {
            w.write_str(" reason=")?;
            w.write_str(reason)?;
        }
        write_request(w, line)
    })
}

/// Writes `n` in decimal.
pub fn write_decimal(w: &mut impl Sink, n: u64) -> fmt::Result {
    write_u64(w, n, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g9(v: f64) -> String {
        let mut s = String::new();
        write_g(&mut s, v, 9).unwrap();
        s
    }

    #[test]
    fn g_picks_the_form_c_picks() {
        for (v, want) in [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.99999999995, "1"),
            (123456789.0, "123456789"),
            (1234567890.0, "1.23456789e+09"),
            (1e100, "1e+100"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (0.00342984818, "0.00342984818"),
        ] {
            assert_eq!(g9(v), want, "{v:e}");
        }
    }

    #[test]
    fn scores_take_the_integer_path() {
        let fast = |v: f64, p| fast_g(&mut String::new(), v, p).is_some();
        for v in [
            0.00342984818,
            0.5,
            0.99999999995,
            0.0001,
            1.0,
            12345678.25,
            -0.25,
        ] {
            assert!(fast(v, 9), "{v:e}");
        }
        for v in [1e-7, 2e9, 0.0] {
            assert!(!fast(v, 9), "{v:e}");
        }
        let mut s = String::new();
        write_f(&mut s, 0.0078125, 6).unwrap();
        assert_eq!(s, "0.007812", "a tie, to even");
    }

    #[test]
    fn texts_fit_their_spans_and_the_room_bound() {
        let names: Vec<Box<str>> = vec!["bot".into(), "spoof".into()];
        let mut buf = [0u8; 2048];
        let mut w = Cursor::new(&mut buf);
        let mut values = [Span::default(); 2];
        let h = write_scores(&mut w, &names, &[0.25, 1e-7], |i, s| values[i] = s).unwrap();
        let line = Line {
            action: "block",
            flagged: Some(("spoof", f64::MAX, -f64::MAX)),
            client: b"192.0.2.1",
            method: b"GET",
            uri: b"/x\xff",
            bot: Some((b"Googlebot", "fake")),
            clearance: Some("accepted_wait"),
            rule: None,
            verdict: Some((Grade::Ambiguous, all_reasons())),
            request_id: &[b'f'; 80],
            host: &[b'"'; 300],
        };
        let (l, id_at) = write_line(&mut w, &line).unwrap();
        assert_eq!(id_at, None);
        let text = w.written();
        let at = |s: Span| &text[s.offset..s.offset + s.len];
        assert_eq!(at(h), b"bot=0.25; spoof=1e-07");
        assert_eq!(at(values[1]), b"1e-07");
        let l = at(l);
        assert!(
            l.starts_with(b"edgeguard action=block grade=ambiguous reasons=ua_missing,ua_library,")
        );
        assert!(l.ends_with(
            b" method=GET uri=\"/x\xff\" bot=Googlebot verdict=fake clearance=accepted_wait"
        ));
        let host = format!(" host={} client=", "?".repeat(MAX_HOST));
        assert!(String::from_utf8_lossy(l).contains(&host));
        assert!(l.len() <= line_room(5, 9) + 9 + 3 + 3);
        let mut small = [0u8; 8];
        assert!(write_line(&mut Cursor::new(&mut small), &line).is_err());
    }

    fn all_reasons() -> Reasons {
        crate::features::reasons::Id::ALL
            .into_iter()
            .fold(Reasons::NONE, Reasons::with)
    }

    /// A line without an id leaves room where nginx's goes, and names
    /// nothing a request without a verdict does not have.
    #[test]
    fn a_line_without_an_id_says_where_it_goes() {
        let mut buf = [0u8; 512];
        let mut w = Cursor::new(&mut buf);
        let line = Line {
            action: "log",
            flagged: None,
            client: b"192.0.2.1",
            method: b"GET",
            uri: b"/",
            bot: None,
            clearance: None,
            rule: None,
            verdict: None,
            request_id: b"",
            host: b"shop.test:8443",
        };
        let (l, at) = write_line(&mut w, &line).unwrap();
        let text = w.written();
        let l = &text[l.offset..l.offset + l.len];
        assert_eq!(
            l,
            b"edgeguard action=log request_id= host=shop.test:8443 client=192.0.2.1 method=GET uri=\"/\""
        );
        assert_eq!(&l[..at.unwrap()], b"edgeguard action=log request_id=");
    }
}
