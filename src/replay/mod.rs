//! Offline replay: score recorded traffic with the code nginx runs, at the
//! speed of the machine, and report what a configuration would decide.
//!
//! ```text
//!             free batches (a fixed pool: memory stays flat)
//!        ┌──────────────────────────────────────────────────────┐
//!        v                                                      │
//!   [reader] ──batches of whole lines──> [worker × N] ──> [writer]
//!   files/stdin, gzip                    parse in place    ordered or not,
//!   cut at newlines                      strip, score,     per-request JSONL,
//!                                        decide, count     progress line
//! ```
//!
//! The reader fills byte buffers with whole lines; workers parse each line
//! without building a JSON tree (strings are views of the buffer, see
//! [`record`](self) docs in `record.rs`), score it with the shared
//! zero-allocation [`Scorer`](crate::scorer::Scorer) and decide it with
//! [`gate::run`](crate::gate::run) (what nginx runs), under one or two
//! configurations; the writer emits output and hands the buffer back to the
//! reader. Every channel is bounded by the pool size, so a slow writer
//! slows the reader, and however large the input, memory holds only the
//! pool.
//!
//! Lines that cannot be used (not JSON, a field name not UTF-8, missing fields, longer
//! than [`Options::max_line`]) are counted with their line numbers, never
//! fatal.

#![forbid(unsafe_code)]

pub(crate) mod batches;
mod feed;
mod input;
mod number;
mod observe;
mod options;
mod pipeline;
mod progress;
mod record;
mod seen;
mod summary;
mod worker;

use std::io::{self, Write};

pub use feed::{Marks, WindowFeed};
pub use input::Input;
pub use observe::observe;
pub use options::Options;
pub use seen::{Observer, Seen};
// The batches a Kafka consumer fills for the workers.
#[cfg(feature = "kafka")]
pub(crate) use input::{Batch, LineSpan, Lines};
pub use summary::{
    ConfigSummary, Flip, Histogram, LineError, LiveSummary, ModelSummary, Summary, HISTOGRAM_BINS,
};
pub use worker::Worker;

pub use record::ParseError;
// The writer of the `headers` text, for `edgeguard_headers_record`.
pub use record::redact::Redactor;
pub(crate) use record::write::write_headers_text;

/// The one reader of request lines (the shapes `record.rs` describes): what
/// replay's workers parse, and what `edgeguard features` reads. Keeps its
/// buffers from line to line, so a good line costs no allocation.
#[derive(Debug, Default)]
pub struct LineReader {
    scratch: record::LineBufs,
}

impl LineReader {
    /// A reader with empty buffers.
    pub fn new() -> LineReader {
        LineReader::default()
    }

    /// Parses one line (without its newline) into the request it holds,
    /// viewing the line and this reader's buffers.
    pub fn read<'s>(&'s mut self, line: &'s [u8]) -> Result<Request<'s>, ParseError> {
        let p = record::parse(line, &mut self.scratch)?;
        Ok(Request::new(p.method, p.uri, p.version, p.client, p.headers).with_tls(p.tls))
    }
}

/// For the `replay_line` fuzz target and the tests: whether the hand-written
/// line scanner and serde_json read `line` alike (see `record.rs`).
/// `Ok(true)`: the scanner answered and serde agrees; `Ok(false)`: the
/// scanner left the line to serde. Also parses it as replay does, which must
/// never panic. Not in the default library: the `fuzzing` feature.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub fn line_parsers_agree(line: &[u8]) -> Result<bool, String> {
    let mut scratch = record::LineBufs::default();
    let _ = record::parse(line, &mut scratch);
    record::paths_agree(line)
}

use crate::features::Request;
use crate::load::Config;

/// Replays `inputs` under `primary` (and `compare`, if given), writing one
/// output line per request to `output` if given. Returns the counts; fails
/// only when the output cannot be written.
pub fn run(
    inputs: Vec<Input>,
    primary: &Config,
    compare: Option<&Config>,
    output: Option<&mut dyn Write>,
    options: &Options,
) -> io::Result<Summary> {
    pipeline::run(inputs, primary, compare, output, options)
}
