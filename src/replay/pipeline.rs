//! The threads of a replay and the bounded channels between them.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use crate::load::Config;

use super::batches::{drain, read_all, Exchange};
use super::input::{Batch, Input};
use super::options::{unix_now, Options};
use super::progress::Progress;
use super::summary::Summary;
use super::worker::Worker;

/// Runs a replay: one reader thread fills batches, `threads` workers parse
/// and decide them, and this thread writes them out (in input order if asked)
/// and recycles them. Phases: set up the pool, run the threads, merge.
pub(super) fn run(
    inputs: Vec<Input>,
    primary: &Config,
    compare: Option<&Config>,
    output: Option<&mut dyn Write>,
    options: &Options,
) -> io::Result<Summary> {
    let started = Instant::now();
    // The client memory is rebuilt from the log in its order, as nginx
    // built it: one worker.
    let in_order = primary.location().client_memory().is_some()
        || compare.is_some_and(|c| c.location().client_memory().is_some());
    let threads = if in_order { 1 } else { options.threads.max(1) };
    let names: Vec<String> = inputs.iter().map(|i| i.name().to_owned()).collect();
    let total_size = inputs
        .iter()
        .map(Input::size)
        .try_fold(0u64, |acc, s| s.map(|s| acc + s));
    let consumed = Arc::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let (pool, free_tx) = Pool::new(threads);
    let want_output = output.is_some();
    let now = options.now.unwrap_or_else(unix_now);
    let mut writer = Writer {
        output,
        progress: Progress::new(options.progress, total_size, Arc::clone(&consumed)),
        free: Some(free_tx),
        stop: &stop,
        error: None,
        ordered: options.ordered,
        pending: BTreeMap::new(),
        next_seq: 0,
    };
    let stages = Stages {
        primary,
        compare,
        want_output,
        json_names: names
            .iter()
            .map(|n| serde_json::to_string(n).unwrap_or_else(|_| "\"?\"".to_owned()))
            .collect(),
        options,
        threads,
        now,
    };
    let (input_errors, tallies) = stages.run(inputs, pool, &mut writer, &consumed, &stop);
    if let Some(e) = writer.error {
        return Err(e);
    }
    if let Some(w) = writer.output {
        w.flush()?;
    }
    if tallies.len() != threads {
        return Err(io::Error::other("a replay worker panicked"));
    }
    let mut summary = Summary::new(primary, compare, options.samples);
    for t in tallies {
        summary.merge(t);
    }
    summary.inputs = names;
    summary.input_errors = input_errors;
    summary.threads = threads;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// The batches of a run and the channels they travel: free (writer to
/// reader; the writer holds the sending end), work (reader to workers); the
/// workers' channel to the writer is made where the workers are.
struct Pool {
    size: usize,
    free_rx: Receiver<Batch>,
    work_tx: SyncSender<Batch>,
    work_rx: Receiver<Batch>,
}

impl Pool {
    /// Two batches per worker keep every worker busy while the reader fills
    /// and the writer drains; this is all the memory a run holds.
    fn new(threads: usize) -> (Pool, SyncSender<Batch>) {
        let size = 2 * threads + 2;
        let (free_tx, free_rx) = sync_channel::<Batch>(size);
        let (work_tx, work_rx) = sync_channel::<Batch>(size);
        for _ in 0..size {
            // Cannot fail: the channel holds `size` batches and its receiver lives.
            let _ = free_tx.send(Batch::default());
        }
        let pool = Pool {
            size,
            free_rx,
            work_tx,
            work_rx,
        };
        (pool, free_tx)
    }
}

/// What the worker threads are made with.
struct Stages<'a> {
    primary: &'a Config,
    compare: Option<&'a Config>,
    want_output: bool,
    json_names: Vec<String>,
    options: &'a Options,
    threads: usize,
    /// The clock a line without `edgeguard_time` is judged by.
    now: u64,
}

impl Stages<'_> {
    /// The reader and the workers on their threads, the writer on this one,
    /// until every batch is through. Returns the reader's input errors and
    /// each worker's counts (fewer than `threads` if one panicked).
    fn run(
        &self,
        inputs: Vec<Input>,
        pool: Pool,
        writer: &mut Writer<'_, '_>,
        consumed: &Arc<AtomicU64>,
        stop: &AtomicBool,
    ) -> (Vec<String>, Vec<Summary>) {
        if self.threads == 1 {
            drop(pool);
            return self.run_inline(inputs, writer, consumed, stop);
        }
        let Pool {
            size,
            free_rx,
            work_tx,
            work_rx,
        } = pool;
        let (done_tx, done_rx) = sync_channel::<Batch>(size);
        // Taken (and so closed) once the workers are gone, so that a reader
        // blocked on a full channel wakes up even if every worker panicked.
        let work_rx = Mutex::new(Some(work_rx));
        thread::scope(|scope| {
            let reader = {
                let consumed = Arc::clone(consumed);
                let options = self.options;
                let mut channels = Channels {
                    free: free_rx,
                    work: work_tx,
                };
                scope.spawn(move || read_all(inputs, &mut channels, consumed, stop, options))
            };
            let workers: Vec<_> = (0..self.threads)
                .map(|_| {
                    let (done_tx, work_rx) = (done_tx.clone(), &work_rx);
                    scope.spawn(move || work(self.worker(), work_rx, &done_tx))
                })
                .collect();
            drop(done_tx);
            for batch in done_rx.iter() {
                writer.take(batch);
            }
            writer.finish();
            if let Ok(mut rx) = work_rx.lock() {
                rx.take();
            }
            let input_errors = reader
                .join()
                .unwrap_or_else(|_| vec!["reader panicked".into()]);
            let tallies = workers.into_iter().filter_map(|w| w.join().ok()).collect();
            (input_errors, tallies)
        })
    }

    /// One worker thread asked for: the reading, the work and the writing
    /// of each batch on this thread, one after the other. The batches would
    /// wait on each other anyway, and no thread hands them on (three
    /// wake-ups a batch, and the batch's bytes moving between cores).
    fn run_inline(
        &self,
        inputs: Vec<Input>,
        writer: &mut Writer<'_, '_>,
        consumed: &Arc<AtomicU64>,
        stop: &AtomicBool,
    ) -> (Vec<String>, Vec<Summary>) {
        // Nothing is handed back through the pool: the one batch is reused.
        writer.free = None;
        let mut inline = Inline {
            worker: self.worker(),
            writer,
            batch: Some(Batch::default()),
        };
        // A panicking worker ends the run with the error the threads give
        // (no counts from it), not by unwinding out of `run`.
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            read_all(
                inputs,
                &mut inline,
                Arc::clone(consumed),
                stop,
                self.options,
            )
        }));
        let Inline { worker, writer, .. } = inline;
        writer.finish();
        match read {
            Ok(errors) => (errors, vec![worker.tally]),
            Err(_) => (Vec::new(), Vec::new()),
        }
    }

    fn worker(&self) -> Worker<'_> {
        Worker::with(
            self.primary,
            self.compare,
            self.want_output,
            &self.json_names,
            self.options.max_line,
            self.options.samples,
            self.now,
        )
    }
}

/// A worker thread: takes batches until the reader is done, hands each back
/// processed; returns its counts.
fn work(
    mut worker: Worker<'_>,
    work_rx: &Mutex<Option<Receiver<Batch>>>,
    done_tx: &SyncSender<Batch>,
) -> Summary {
    drain(
        work_rx,
        &mut |batch: &mut Batch| worker.process(batch),
        |batch| done_tx.send(batch).is_ok(),
    );
    worker.tally
}

/// The writing end: output in input order if asked, the progress bar, and
/// the batches' way back to the reader.
struct Writer<'o, 's> {
    output: Option<&'o mut dyn Write>,
    progress: Progress,
    /// The way back to the reader; dropped by `finish`, so that a reader
    /// waiting for a free batch ends.
    free: Option<SyncSender<Batch>>,
    stop: &'s AtomicBool,
    /// The first write error; it stops the reader.
    error: Option<io::Error>,
    ordered: bool,
    pending: BTreeMap<u64, Batch>,
    next_seq: u64,
}

impl Writer<'_, '_> {
    /// A processed batch: written now, or held until those before it are.
    fn take(&mut self, batch: Batch) {
        if !self.ordered {
            return self.emit(batch);
        }
        self.pending.insert(batch.seq, batch);
        while let Some(b) = self.pending.remove(&self.next_seq) {
            self.next_seq += 1;
            self.emit(b);
        }
    }

    fn emit(&mut self, batch: Batch) {
        self.write(&batch);
        // The reader may have finished: then the batch is simply dropped.
        if let Some(free) = &self.free {
            let _ = free.send(batch);
        }
    }

    /// A batch's output and progress, in the order batches come here.
    fn write(&mut self, batch: &Batch) {
        self.progress.lines(batch.lines.len() as u64);
        if self.error.is_none() {
            if let Some(w) = self.output.as_mut() {
                if let Err(e) = w.write_all(&batch.out) {
                    self.error = Some(e);
                    self.stop.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// The workers are done: whatever is held is in order. Closes the way
    /// back to the reader and clears the progress bar.
    fn finish(&mut self) {
        for (_, b) in std::mem::take(&mut self.pending) {
            self.emit(b);
        }
        self.free = None;
        self.progress.finish();
    }
}

/// The threads' exchange: free batches from the writer, full ones to the
/// workers.
struct Channels {
    free: Receiver<Batch>,
    work: SyncSender<Batch>,
}

impl Exchange for Channels {
    fn empty(&mut self) -> Option<Batch> {
        self.free.recv().ok()
    }

    fn full(&mut self, batch: Batch) -> bool {
        self.work.send(batch).is_ok()
    }
}

/// The one-thread exchange: a full batch is worked and written at once,
/// and is then the next empty one.
struct Inline<'a, 'w, 'o, 's> {
    worker: Worker<'a>,
    writer: &'w mut Writer<'o, 's>,
    batch: Option<Batch>,
}

impl Exchange for Inline<'_, '_, '_, '_> {
    fn empty(&mut self) -> Option<Batch> {
        self.batch.take()
    }

    fn full(&mut self, mut batch: Batch) -> bool {
        self.worker.process(&mut batch);
        // In input order by construction: `--ordered` needs nothing more.
        self.writer.write(&batch);
        self.batch = Some(batch);
        true
    }
}
