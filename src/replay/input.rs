//! Inputs, and cutting them into batches of whole lines.
//!
//! A batch is a byte buffer plus the positions of the lines in it, cut only
//! at newlines so that a worker never needs the batch before or after. The
//! buffers come back from the writer and are refilled, so the reader
//! allocates only while the pool warms up. A line longer than the limit is
//! not kept: its bytes are dropped as they arrive and the line is marked, so
//! one huge line costs no more memory than the limit.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One input: a file, gzip-compressed or not, or stdin.
pub struct Input {
    name: String,
    reader: Box<dyn Read + Send>,
    size: Option<u64>,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("name", &self.name)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl Input {
    /// Opens a file; `-` is stdin. Gzip is recognised by its magic bytes,
    /// whatever the name.
    pub fn open(path: &Path) -> io::Result<Input> {
        if path.as_os_str() == "-" {
            return Ok(Input::stdin());
        }
        let file = File::open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let size = file.metadata().ok().map(|m| m.len());
        Ok(Input {
            name: path.display().to_string(),
            reader: Box::new(file),
            size,
        })
    }

    /// Standard input; its size is unknown.
    pub fn stdin() -> Input {
        Input::from_reader("<stdin>", Box::new(io::stdin()), None)
    }

    /// Any byte stream, named `name` in reports; `size` in bytes if known
    /// (for the progress line).
    pub fn from_reader(name: &str, reader: Box<dyn Read + Send>, size: Option<u64>) -> Input {
        Input {
            name: name.to_owned(),
            reader,
            size,
        }
    }

    /// The name reports use.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The size in bytes, if known.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// The decoded lines of this input. `consumed` counts raw (compressed)
    /// bytes read, for the progress line.
    pub(crate) fn into_lines(self, consumed: Arc<AtomicU64>, max_line: usize) -> io::Result<Lines> {
        const BUF: usize = 256 << 10;
        let counted = Counting {
            inner: self.reader,
            consumed,
        };
        let mut raw = BufReader::with_capacity(BUF, counted);
        let gz = raw.fill_buf()?.starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn BufRead + Send> = if gz {
            let decoder = flate2::bufread::MultiGzDecoder::new(raw);
            Box::new(BufReader::with_capacity(BUF, decoder))
        } else {
            Box::new(raw)
        };
        Ok(Lines {
            reader,
            line_no: 0,
            max_line,
            eager: false,
        })
    }
}

struct Counting {
    inner: Box<dyn Read + Send>,
    consumed: Arc<AtomicU64>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Where one line sits in a batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LineSpan {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// 1-based line number in its input.
    pub(crate) number: u64,
    /// Longer than the limit: its bytes were dropped.
    pub(crate) too_long: bool,
}

/// A batch of whole lines of one input, and the output written for them.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Position in the run, for the ordered writer.
    pub(crate) seq: u64,
    /// Index of the input.
    pub(crate) input: usize,
    pub(crate) data: Vec<u8>,
    pub(crate) lines: Vec<LineSpan>,
    /// Per-request output lines, filled by a worker.
    pub(crate) out: Vec<u8>,
}

impl Batch {
    /// The bytes of line `l` (without its newline).
    #[cfg(test)]
    pub(crate) fn line(&self, l: &LineSpan) -> &[u8] {
        &self.data[l.start..l.end]
    }
}

/// The lines of one input, read a batch at a time.
pub(crate) struct Lines {
    reader: Box<dyn BufRead + Send>,
    line_no: u64,
    max_line: usize,
    eager: bool,
}

impl Lines {
    /// Each batch ends once the bytes read so far are used up (and hold a
    /// line), instead of waiting for more: a pipe fed a line at a time
    /// (`tail -F log | edgeguard ship`) must not hold lines back.
    #[cfg(feature = "kafka")]
    pub(crate) fn eager(mut self) -> Lines {
        self.eager = true;
        self
    }

    /// Empties `batch` and fills it with whole lines until it holds at least
    /// `target` bytes or `max_lines` lines, or the input ends. Returns false
    /// at the end of the input (the batch may still hold lines).
    pub(crate) fn fill(
        &mut self,
        batch: &mut Batch,
        target: usize,
        max_lines: usize,
    ) -> io::Result<bool> {
        batch.data.clear();
        batch.lines.clear();
        batch.out.clear();
        let mut start = 0;
        let mut len = 0usize;
        let mut too_long = false;
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                // A last line without its newline (a log cut mid-write) is
                // still a line: the parser decides whether it is whole.
                if len > 0 || too_long {
                    self.finish(batch, start, too_long);
                }
                return Ok(false);
            }
            let (chunk, used, ends) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            if !too_long {
                if len + chunk.len() > self.max_line {
                    too_long = true;
                    batch.data.truncate(start);
                } else {
                    batch.data.extend_from_slice(chunk);
                }
            }
            len += chunk.len();
            let drained = used == buf.len();
            self.reader.consume(used);
            if ends {
                self.finish(batch, start, too_long);
                if batch.data.len() >= target
                    || batch.lines.len() >= max_lines
                    || (self.eager && drained)
                {
                    return Ok(true);
                }
                start = batch.data.len();
                len = 0;
                too_long = false;
            }
        }
    }

    fn finish(&mut self, batch: &mut Batch, start: usize, too_long: bool) {
        self.line_no += 1;
        batch.lines.push(LineSpan {
            start,
            end: batch.data.len(),
            number: self.line_no,
            too_long,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &[u8], max_line: usize, target: usize) -> Vec<Vec<(u64, Vec<u8>, bool)>> {
        let input = Input::from_reader("t", Box::new(io::Cursor::new(text.to_vec())), None);
        let mut lines = input
            .into_lines(Arc::new(AtomicU64::new(0)), max_line)
            .unwrap();
        let mut batches = Vec::new();
        let mut batch = Batch::default();
        loop {
            let more = lines.fill(&mut batch, target, 1000).unwrap();
            batches.push(
                batch
                    .lines
                    .iter()
                    .map(|l| (l.number, batch.line(l).to_vec(), l.too_long))
                    .collect(),
            );
            if !more {
                return batches;
            }
        }
    }

    /// A pipe: each read returns what one write put in.
    #[cfg(feature = "kafka")]
    struct Chunks(Vec<&'static [u8]>);

    #[cfg(feature = "kafka")]
    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let c = self.0.remove(0);
            buf[..c.len()].copy_from_slice(c);
            Ok(c.len())
        }
    }

    #[cfg(feature = "kafka")]
    #[test]
    fn an_eager_batch_ends_with_what_was_read() {
        let batches = |eager: bool| {
            let chunks = Chunks(vec![b"a\nb\n", b"c", b"\nd\n"]);
            let input = Input::from_reader("t", Box::new(chunks), None);
            let mut lines = input.into_lines(Arc::new(AtomicU64::new(0)), 100).unwrap();
            if eager {
                lines = lines.eager();
            }
            let (mut out, mut batch) = (Vec::new(), Batch::default());
            loop {
                let more = lines.fill(&mut batch, 1 << 20, 1000).unwrap();
                let got: Vec<_> = batch.lines.iter().map(|l| batch.line(l).to_vec()).collect();
                out.push(got);
                if !more {
                    return out;
                }
            }
        };
        let v = |s: &[&[u8]]| s.iter().map(|b| b.to_vec()).collect::<Vec<_>>();
        // Waiting for 1 MiB: one batch at the end of the input.
        assert_eq!(batches(false), vec![v(&[b"a", b"b", b"c", b"d"])]);
        // Eager: a batch whenever the bytes read are used up on a line end
        // ("c" waits for its newline).
        assert_eq!(
            batches(true),
            vec![v(&[b"a", b"b"]), v(&[b"c", b"d"]), v(&[])]
        );
    }

    #[test]
    fn cuts_at_newlines_and_keeps_a_last_line_without_one() {
        let got = lines_of(b"ab\ncd\n\nefg", 100, 4);
        assert_eq!(
            got,
            vec![
                vec![(1, b"ab".to_vec(), false), (2, b"cd".to_vec(), false)],
                vec![(3, b"".to_vec(), false), (4, b"efg".to_vec(), false)],
            ]
        );
        assert_eq!(lines_of(b"", 100, 4), vec![vec![]]);
        assert_eq!(
            lines_of(b"x\n", 100, 100),
            vec![vec![(1, b"x".to_vec(), false)]]
        );
    }

    #[test]
    fn drops_the_bytes_of_overlong_lines() {
        let mut text = b"ok\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 50));
        text.extend_from_slice(b"\nfine\n");
        text.extend(std::iter::repeat_n(b'y', 11));
        let got = lines_of(&text, 10, 1 << 20);
        assert_eq!(
            got,
            vec![vec![
                (1, b"ok".to_vec(), false),
                (2, b"".to_vec(), true),
                (3, b"fine".to_vec(), false),
                (4, b"".to_vec(), true),
            ]]
        );
    }

    #[test]
    fn reads_gzip() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"one\ntwo\n").unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(
            lines_of(&gz, 100, 100),
            vec![vec![
                (1, b"one".to_vec(), false),
                (2, b"two".to_vec(), false)
            ]]
        );
    }
}
