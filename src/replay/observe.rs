//! Replay for a consumer of its decisions: each request the primary
//! configuration judged, handed over with its [`Effects`] as the gate gave
//! them. `edgeguard signals` counts these; it never judges a request
//! itself, so what it counts is what replay (and nginx) decided.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use crate::load::Config;

use super::batches::{read_all, Exchange};
use super::input::{Batch, Input};
use super::options::{unix_now, Options};
use super::seen::Observer;
use super::summary::Summary;
use super::worker::Worker;

/// Reads `inputs` (files, stdin; gzip detected) and runs the gate on each
/// request line under `config`, as `edgeguard replay` does, on this
/// thread, handing each request and its effects to `observe`. Bad lines
/// are counted in the summary, never fatal; a read error ends its input
/// and is listed in `input_errors`.
pub fn observe(
    inputs: Vec<Input>,
    config: &Config,
    options: &Options,
    observe: &mut Observer<'_>,
) -> io::Result<Summary> {
    let started = Instant::now();
    let names: Vec<String> = inputs.iter().map(|i| i.name().to_owned()).collect();
    let now = options.now.unwrap_or_else(unix_now);
    let worker = Worker::with(
        config,
        None,
        false,
        &[],
        options.max_line,
        options.samples,
        now,
    );
    // The replay's reader, with this thread's worker as its exchange: a
    // batch is observed as soon as it is full, and is then the next one.
    let mut inline = Observing {
        worker,
        observe,
        batch: Some(Batch::default()),
    };
    let consumed = Arc::new(AtomicU64::new(0));
    let errors = read_all(
        inputs,
        &mut inline,
        consumed,
        &AtomicBool::new(false),
        options,
    );
    let worker = inline.worker;
    let mut summary = worker.tally;
    summary.inputs = names;
    summary.input_errors = errors;
    summary.threads = 1;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// The exchange of [`observe`]: each full batch observed at once, then
/// reused.
struct Observing<'a, 'o, 'p> {
    worker: Worker<'a>,
    observe: &'o mut Observer<'p>,
    batch: Option<Batch>,
}

impl Exchange for Observing<'_, '_, '_> {
    fn empty(&mut self) -> Option<Batch> {
        self.batch.take()
    }

    fn full(&mut self, mut batch: Batch) -> bool {
        self.worker.observe(&mut batch, self.observe);
        self.batch = Some(batch);
        true
    }
}
