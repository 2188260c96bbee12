//! The batch loop, written once: the reader's (inputs -> filled batches,
//! [`read_all`]) and a worker's (batches in -> worked -> handed on,
//! [`drain`]). File replay runs both on threads or inline, `edgeguard
//! signals` the reader with the observing worker inline, Kafka replay the
//! worker's on batches its consumer filled.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use super::input::{Batch, Input};
use super::options::Options;

/// Lines per batch at most, so batches of tiny lines still spread evenly.
pub(crate) const MAX_LINES: usize = 4096;

/// Where the reader gets empty batches and puts full ones.
pub(crate) trait Exchange {
    /// An empty batch to fill; None ends the reading.
    fn empty(&mut self) -> Option<Batch>;
    /// A batch of lines, handed on; false ends the reading.
    fn full(&mut self, batch: Batch) -> bool;
}

/// The reader: fills empty batches with lines of each input in turn.
/// Returns the read errors met (each ends its input, not the run).
pub(crate) fn read_all(
    inputs: Vec<Input>,
    exchange: &mut impl Exchange,
    consumed: Arc<AtomicU64>,
    stop: &AtomicBool,
    options: &Options,
) -> Vec<String> {
    let mut errors = Vec::new();
    let mut seq = 0u64;
    let mut spare: Option<Batch> = None;
    'inputs: for (index, input) in inputs.into_iter().enumerate() {
        let name = input.name().to_owned();
        let mut lines = match input.into_lines(Arc::clone(&consumed), options.max_line) {
            Ok(l) => l,
            Err(e) => {
                errors.push(format!("{name}: {e}"));
                continue;
            }
        };
        loop {
            if stop.load(Ordering::Relaxed) {
                break 'inputs;
            }
            let mut batch = match spare.take() {
                Some(b) => b,
                None => match exchange.empty() {
                    Some(b) => b,
                    None => break 'inputs,
                },
            };
            let result = lines.fill(&mut batch, options.batch_bytes, MAX_LINES);
            let more = match result {
                Ok(more) => more,
                Err(e) => {
                    errors.push(format!("{name}: {e}"));
                    false
                }
            };
            if batch.lines.is_empty() {
                spare = Some(batch);
            } else {
                batch.seq = seq;
                batch.input = index;
                seq += 1;
                if !exchange.full(batch) {
                    break 'inputs;
                }
            }
            if !more {
                break;
            }
        }
    }
    errors
}

/// A worker's loop: takes batches from `rx` (shared by the workers; the
/// lock is held only to take one) until it closes or is taken, works each
/// with `each`, hands it on with `hand_on`; stops when that refuses.
pub(crate) fn drain<B>(
    rx: &Mutex<Option<Receiver<B>>>,
    mut each: impl FnMut(&mut B),
    mut hand_on: impl FnMut(B) -> bool,
) {
    loop {
        let next = match rx.lock() {
            Ok(rx) => rx.as_ref().and_then(|rx| rx.recv().ok()),
            Err(_) => None,
        };
        let Some(mut batch) = next else { break };
        each(&mut batch);
        if !hand_on(batch) {
            break;
        }
    }
}
