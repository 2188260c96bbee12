//! Replay for a consumer of its decisions: each request the primary
//! configuration judged, handed over with its [`Effects`] as the gate gave
//! them. `edgeguard signals` counts these; it never judges a request
//! itself, so what it counts is what replay (and nginx) decided.

use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use crate::load::Config;

use super::input::{Batch, Input};
use super::options::{unix_now, Options};
use super::seen::Observer;
use super::summary::Summary;
use super::worker::Worker;

/// Lines per batch at most (as the pipeline's).
const MAX_LINES: usize = 4096;

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
    let mut worker = Worker::with(
        config,
        None,
        false,
        &[],
        options.max_line,
        options.samples,
        now,
    );
    let mut errors = Vec::new();
    let mut batch = Batch::default();
    let consumed = Arc::new(AtomicU64::new(0));
    for (index, input) in inputs.into_iter().enumerate() {
        let name = input.name().to_owned();
        let mut lines = match input.into_lines(Arc::clone(&consumed), options.max_line) {
            Ok(l) => l,
            Err(e) => {
                errors.push(format!("{name}: {e}"));
                continue;
            }
        };
        loop {
            let more = match lines.fill(&mut batch, options.batch_bytes, MAX_LINES) {
                Ok(more) => more,
                Err(e) => {
                    errors.push(format!("{name}: {e}"));
                    false
                }
            };
            batch.input = index;
            worker.observe(&mut batch, observe);
            if !more {
                break;
            }
        }
    }
    let mut summary = worker.tally;
    summary.inputs = names;
    summary.input_errors = errors;
    summary.threads = 1;
    summary.elapsed = started.elapsed();
    Ok(summary)
}
