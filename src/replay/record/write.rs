//! The writer of the `headers` text that replay's readers (`record.rs`, the
//! serde path, and `record/fast.rs`, the scanner) take back: the JSON array
//! `[["name","value"],...]` that `resty.edgeguard.record` puts in
//! `$edgeguard_request_headers` (through `edgeguard_headers_record`) and
//! nginx logs. The format's writer and readers live in this one module.
//!
//! Only `"`, `\` and bytes below 0x20 are escaped (`\"`, `\\`, `\u00XX`,
//! lower-case hex); every other byte, 8-bit ones included, is written as it
//! came. nginx's `escape=json` treats `$request_uri` the same way and the
//! readers take JSON strings as bytes, so what replay scores is byte for
//! byte what nginx scored. No white space: the text goes into a log line.

use crate::headers::Header;

/// What byte `b` adds to a string's length once escaped: 1 for `"` and
/// `\` (backslashed), 5 for a control byte (`\u00XX`), 0 for the rest.
#[inline]
const fn extra_of(b: u8) -> u8 {
    match b {
        0..=0x1f => 5,
        b'"' | b'\\' => 1,
        _ => 0,
    }
}

/// The bytes `s` takes beyond its own length once escaped. Most header
/// strings have no escape at all: a branch-free test (byte-wide vector code)
/// says so, and they are copied whole; the others are summed byte by byte.
#[inline]
fn extra(s: &[u8]) -> usize {
    if s.iter().fold(true, |plain, &b| plain & (extra_of(b) == 0)) {
        0
    } else {
        s.iter().map(|&b| usize::from(extra_of(b))).sum()
    }
}

/// The length of `s` as a JSON string, quotes included.
fn string_len(s: &[u8]) -> usize {
    (s.len() + 2).saturating_add(extra(s))
}

/// The exact length of the text of `headers`. Saturates instead of
/// overflowing (no buffer has `usize::MAX` bytes, so it is refused).
pub(crate) fn headers_text_len(headers: &[Header<'_>]) -> usize {
    headers.iter().enumerate().fold(2usize, |n, (i, h)| {
        // `[` `,` `]` of the pair, and the `,` before every pair but the first.
        let pair = 3 + usize::from(i > 0);
        n.saturating_add(pair)
            .saturating_add(string_len(h.name()))
            .saturating_add(string_len(h.value()))
    })
}

/// Writes the text of `headers` at the start of `out` and returns its
/// length, or, when `out` is shorter than that, leaves `out` untouched and
/// returns the length it needs. Allocates nothing.
pub(crate) fn write_headers_text(headers: &[Header<'_>], out: &mut [u8]) -> Result<usize, usize> {
    let need = headers_text_len(headers);
    let Some(out) = out.get_mut(..need) else {
        return Err(need);
    };
    let mut w = Writer { out, pos: 0 };
    w.put(b"[");
    for (i, h) in headers.iter().enumerate() {
        w.put(if i > 0 { b",[" } else { b"[" });
        w.string(h.name());
        w.put(b",");
        w.string(h.value());
        w.put(b"]");
    }
    w.put(b"]");
    debug_assert_eq!(w.pos, need);
    Ok(need)
}

/// Writes the text of `headers` as [`write_headers_text`] does, each value
/// given by `value` in pieces (raw bytes, escaped here: the recorder's
/// redacted values, `replay::record::redact`). Returns the length, or,
/// when `out` is shorter than that, the length it needs (what `out` then
/// holds is unspecified). Allocates nothing.
pub(crate) fn write_headers_text_with<F>(
    headers: &[Header<'_>],
    out: &mut [u8],
    mut value: F,
) -> Result<usize, usize>
where
    F: FnMut(&Header<'_>, &mut dyn FnMut(&[u8])),
{
    let mut s = Sink { out, pos: 0 };
    s.raw(b"[");
    for (i, h) in headers.iter().enumerate() {
        s.raw(if i > 0 { b",[\"" } else { b"[\"" });
        s.escaped(h.name());
        s.raw(b"\",\"");
        value(h, &mut |piece| s.escaped(piece));
        s.raw(b"\"]");
    }
    s.raw(b"]");
    if s.pos <= s.out.len() {
        Ok(s.pos)
    } else {
        Err(s.pos)
    }
}

/// Appends to a buffer that may be too short: past its end, only counts.
struct Sink<'a> {
    out: &'a mut [u8],
    pos: usize,
}

impl Sink<'_> {
    #[inline]
    fn raw(&mut self, bytes: &[u8]) {
        let end = self.pos.saturating_add(bytes.len());
        if let Some(dst) = self.out.get_mut(self.pos..end) {
            dst.copy_from_slice(bytes);
        }
        self.pos = end;
    }

    /// `s` escaped as in a JSON string, without the quotes.
    fn escaped(&mut self, s: &[u8]) {
        if extra(s) == 0 {
            return self.raw(s);
        }
        let mut run = 0;
        for (i, &b) in s.iter().enumerate() {
            if extra_of(b) == 0 {
                continue;
            }
            self.raw(&s[run..i]);
            if b < 0x20 {
                let hex = [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]];
                self.raw(&[b'\\', b'u', b'0', b'0', hex[0], hex[1]]);
            } else {
                self.raw(&[b'\\', b]);
            }
            run = i + 1;
        }
        self.raw(&s[run..]);
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends to a buffer already known to be long enough.
struct Writer<'a> {
    out: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.out[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }

    /// `s` as a JSON string: whole when nothing in it is escaped, else
    /// runs of plain bytes copied between the escapes.
    fn string(&mut self, s: &[u8]) {
        self.put(b"\"");
        if extra(s) == 0 {
            self.put(s);
        } else {
            let mut run = 0;
            for (i, &b) in s.iter().enumerate() {
                if extra_of(b) == 0 {
                    continue;
                }
                self.put(&s[run..i]);
                if b < 0x20 {
                    let hex = [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]];
                    self.put(&[b'\\', b'u', b'0', b'0', hex[0], hex[1]]);
                } else {
                    self.put(&[b'\\', b]);
                }
                run = i + 1;
            }
            self.put(&s[run..]);
        }
        self.put(b"\"");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(pairs: &[(&[u8], &[u8])]) -> Vec<u8> {
        let headers: Vec<Header<'_>> = pairs.iter().map(|&(k, v)| Header::new(k, v)).collect();
        let mut out = vec![0xee; headers_text_len(&headers) + 3];
        let n = write_headers_text(&headers, &mut out).unwrap();
        assert_eq!(n, headers_text_len(&headers));
        assert_eq!(out[n..], [0xee; 3], "nothing written past the text");
        out.truncate(n);
        out
    }

    /// The cases tests/lua/test_record.lua held the Lua encoder to.
    #[test]
    fn the_lua_encoders_cases() {
        assert_eq!(text(&[]), b"[]");
        assert_eq!(
            text(&[
                (b"Host", b"a"),
                (b"X-A", b"1"),
                (b"x-a", b"2"),
                (b"Accept", b"")
            ]),
            br#"[["Host","a"],["X-A","1"],["x-a","2"],["Accept",""]]"#
        );
        assert_eq!(
            text(&[(b"User-Agent", br#"say "hi" \o/"#)]),
            br#"[["User-Agent","say \"hi\" \\o/"]]"#
        );
        assert_eq!(
            text(&[(b"X-Ctl", b"a\tb\x01\x1f")]),
            br#"[["X-Ctl","a\u0009b\u0001\u001f"]]"#
        );
        assert_eq!(
            text(&[(b"X-8", b"caf\xc3\xa9 \xff\x80\x7f")]),
            b"[[\"X-8\",\"caf\xc3\xa9 \xff\x80\x7f\"]]"
        );
        assert_eq!(text(&[(b"", b"")]), br#"[["",""]]"#);
    }

    #[test]
    fn a_short_buffer_is_untouched_and_told_the_length() {
        let h = [Header::new(b"k\"", b"\x00v")];
        let need = headers_text_len(&h);
        assert_eq!(need, br#"[["k\"","\u0000v"]]"#.len());
        for cap in [0, 1, need - 1] {
            let mut out = vec![7u8; cap];
            assert_eq!(write_headers_text(&h, &mut out), Err(need));
            assert!(out.iter().all(|&b| b == 7));
        }
        let mut out = vec![0u8; need];
        assert_eq!(write_headers_text(&h, &mut out), Ok(need));
        assert_eq!(out, br#"[["k\"","\u0000v"]]"#);
    }

    /// Byte for byte what the Lua encoder wrote before it moved here
    /// (tests/fixtures/record/README.md).
    #[test]
    fn the_lua_encoders_text_of_random_headers() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/record/");
        let hex = std::fs::read_to_string(format!("{dir}random-headers.hex")).unwrap();
        let want = std::fs::read(format!("{dir}random-headers.json")).unwrap();
        let unhex = |h: &str| -> Vec<u8> {
            (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
                .collect()
        };
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = hex
            .lines()
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                (unhex(k), unhex(v))
            })
            .collect();
        assert_eq!(pairs.len(), 120);
        let views: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        assert!(text(&views) == want, "the text differs from the fixture");
    }

    /// Up to `max` random bytes, half of them from the ones JSON escapes, so
    /// every path runs.
    fn random_bytes(rng: &mut fastrand::Rng, max: u64) -> Vec<u8> {
        let n = rng.u64(..=max);
        (0..n)
            .map(|_| match rng.u64(..4) {
                0 => b"\"\\\x00\x1f\x20\x7f\x80\xff"[rng.usize(..8)],
                _ => rng.u8(..),
            })
            .collect()
    }

    /// Values given whole to the piecewise writer make the same text,
    /// and a short buffer is told the length.
    #[test]
    fn the_piecewise_writer_agrees_with_the_whole_one() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..200 {
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.u64(..8))
                .map(|_| (random_bytes(&mut rng, 12), random_bytes(&mut rng, 80)))
                .collect();
            let views: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            let want = text(&views);
            let headers: Vec<Header<'_>> = views.iter().map(|&(k, v)| Header::new(k, v)).collect();
            let mut out = vec![0u8; want.len() + 5];
            let split = rng.usize(..=4);
            let n = write_headers_text_with(&headers, &mut out, |h, put| {
                let v = h.value();
                let at = split.min(v.len());
                put(&v[..at]);
                put(&v[at..]);
            })
            .unwrap();
            assert_eq!(&out[..n], &want[..]);
            let mut short = vec![0u8; want.len().saturating_sub(1)];
            assert_eq!(
                write_headers_text_with(&headers, &mut short, |h, put| put(h.value())),
                Err(want.len())
            );
        }
    }

    /// Every byte value, and random headers, come back from both of
    /// replay's readers (the scanner and serde) as they went in.
    #[test]
    fn random_bytes_round_trip_through_both_readers() {
        let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
        let all: Vec<u8> = (0..=255).collect();
        let mut cases = vec![vec![(all.clone(), all.clone())]];
        for _ in 0..200 {
            let n = rng.u64(..12);
            cases.push(
                (0..n)
                    .map(|_| (random_bytes(&mut rng, 24), random_bytes(&mut rng, 300)))
                    .collect(),
            );
        }
        for pairs in &cases {
            let views: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            let t = text(&views);
            let want: Vec<Vec<u8>> = pairs
                .iter()
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect();
            for fast in [true, false] {
                let got = super::super::resolved_pairs(&t, fast).unwrap_or_else(|| {
                    panic!("fast={fast} refused {:?}", String::from_utf8_lossy(&t))
                });
                assert_eq!(got, want, "fast={fast}");
            }
        }
    }
}
