//! A batch of one partition's messages: the lines replay's workers read,
//! plus what Kafka knows of each message (offset, key).

use std::ops::Range;

use crate::replay::{Batch, LineSpan};

/// Counts a worker took while processing one batch, for the live metrics
/// (the run's totals come from the workers' summaries at the end).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    /// Requests scored.
    pub(crate) requests: u64,
    /// Lines that are not requests (not JSON, blank, too long).
    pub(crate) invalid: u64,
    /// Primary decisions, by [`crate::config::Action::index`].
    pub(crate) actions: [u64; crate::outcome::Outcome::ALL.len()],
}

/// One partition's messages in offset order.
#[derive(Debug, Default)]
pub(crate) struct MessageBatch {
    /// The lines: `lines.input` is the partition (the summary's errors
    /// name `topic-partition:offset`), each line's `number` is its
    /// message's offset, `lines.out` gets the workers' output rows.
    pub(crate) lines: Batch,
    pub(crate) partition: i32,
    /// The message keys and header bytes, end to end; `key_spans[i]` is
    /// line i's key, `header_spans[i]` its range of `headers` (name and
    /// value ranges in `bytes`). Headers are rare: a message without any
    /// costs an empty range.
    bytes: Vec<u8>,
    key_spans: Vec<Option<Range<u32>>>,
    headers: Vec<(Range<u32>, Option<Range<u32>>)>,
    header_spans: Vec<Range<u32>>,
    /// The consumer's ticket for it ([`super::offsets::Offsets`]).
    pub(crate) ticket: u64,
    /// The offset after its last message.
    pub(crate) end: i64,
    /// Set by the writer: false if its results could not be written.
    pub(crate) ok: bool,
    /// Set by the worker.
    pub(crate) counts: Counts,
}

impl MessageBatch {
    /// Empties it for `partition`.
    pub(crate) fn reset(&mut self, partition: i32) {
        self.lines.data.clear();
        self.lines.lines.clear();
        self.lines.out.clear();
        self.bytes.clear();
        self.key_spans.clear();
        self.headers.clear();
        self.header_spans.clear();
        self.partition = partition;
        // Partitions are never negative on a fetched message.
        self.lines.input = usize::try_from(partition).unwrap_or(0);
        self.end = 0;
        self.ok = true;
        self.counts = Counts::default();
    }

    /// Appends a message. The payload is one request line; a newline the
    /// shipper ended it with is not part of it. Lines longer than
    /// `max_line` are kept (for the dead-letter destination) but marked, so
    /// the workers count them instead of parsing them.
    pub(crate) fn push<'h>(
        &mut self,
        offset: i64,
        key: Option<&[u8]>,
        headers: impl Iterator<Item = (&'h str, Option<&'h [u8]>)>,
        payload: &[u8],
        max_line: usize,
    ) {
        let payload = payload.strip_suffix(b"\n").unwrap_or(payload);
        let payload = payload.strip_suffix(b"\r").unwrap_or(payload);
        let start = self.lines.data.len();
        self.lines.data.extend_from_slice(payload);
        self.lines.lines.push(LineSpan {
            start,
            end: self.lines.data.len(),
            // Offsets are never negative on a fetched message.
            number: u64::try_from(offset).unwrap_or(0),
            too_long: payload.len() > max_line,
        });
        let key = key.map(|k| self.keep(k));
        self.key_spans.push(key);
        let first = self.headers.len();
        for (name, value) in headers {
            let name = self.keep(name.as_bytes());
            let value = value.map(|v| self.keep(v));
            self.headers.push((name, value));
        }
        self.header_spans
            .push(index(first)..index(self.headers.len()));
        self.end = offset + 1;
    }

    /// Keeps bytes in `bytes`; their range.
    fn keep(&mut self, b: &[u8]) -> Range<u32> {
        let from = self.bytes.len();
        self.bytes.extend_from_slice(b);
        index(from)..index(self.bytes.len())
    }

    /// Messages held.
    pub(crate) fn len(&self) -> usize {
        self.lines.lines.len()
    }

    /// Whether it holds no message.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.lines.is_empty()
    }

    /// Bytes of payload held.
    pub(crate) fn bytes(&self) -> usize {
        self.lines.data.len()
    }

    /// Message `i`: its offset, key and payload.
    pub(crate) fn message(&self, i: usize) -> Message<'_> {
        let l = &self.lines.lines[i];
        Message {
            offset: l.number as i64,
            key: self.key_spans[i].clone().map(|r| self.at(r)),
            payload: &self.lines.data[l.start..l.end],
            too_long: l.too_long,
        }
    }
}

impl MessageBatch {
    fn at(&self, r: Range<u32>) -> &[u8] {
        &self.bytes[r.start as usize..r.end as usize]
    }

    /// Message `i`'s headers: (name, value).
    pub(crate) fn headers(&self, i: usize) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        let r = self.header_spans[i].clone();
        self.headers[r.start as usize..r.end as usize]
            .iter()
            .map(|(n, v)| (self.at(n.clone()), v.clone().map(|v| self.at(v))))
    }
}

/// A position in a batch's side buffers: batches are cut at a few
/// hundred KiB of payload, and a message's key and headers are bounded by
/// the broker's message size, so they fit.
fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// One message of a batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Message<'b> {
    pub(crate) offset: i64,
    pub(crate) key: Option<&'b [u8]>,
    pub(crate) payload: &'b [u8],
    pub(crate) too_long: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_offsets_keys_and_payloads_without_the_newline() {
        let mut b = MessageBatch::default();
        b.reset(3);
        let no_headers = std::iter::empty();
        b.push(41, Some(b"k1"), no_headers.clone(), b"{\"a\":1}\n", 100);
        let headers = [("h1", Some(&b"v1"[..])), ("h2", None)];
        b.push(42, None, headers.into_iter(), b"{\"b\":2}\r\n", 100);
        b.push(44, Some(b""), no_headers, b"0123456789", 5);
        assert_eq!((b.len(), b.partition, b.end), (3, 3, 45));
        assert_eq!(b.lines.input, 3, "the summary's errors name the partition");
        let m = b.message(0);
        assert_eq!(
            (m.offset, m.key, m.payload, m.too_long),
            (41, Some(&b"k1"[..]), &b"{\"a\":1}"[..], false)
        );
        let m = b.message(1);
        assert_eq!((m.offset, m.key, m.payload), (42, None, &b"{\"b\":2}"[..]));
        let h: Vec<_> = b.headers(1).collect();
        assert_eq!(h, vec![(&b"h1"[..], Some(&b"v1"[..])), (&b"h2"[..], None)]);
        assert_eq!(b.headers(0).count() + b.headers(2).count(), 0);
        let m = b.message(2);
        assert_eq!((m.offset, m.key, m.too_long), (44, Some(&b""[..]), true));
        assert_eq!(m.payload, b"0123456789", "kept for the dead letters");
        b.reset(0);
        assert!(b.is_empty() && b.bytes() == 0 && b.ok);
    }
}
