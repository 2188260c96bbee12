//! The batch loop, written once: the reader's (inputs -> filled batches,
//! [`read_all`]) and a worker's (batches in -> worked -> handed on,
//! [`drain`]). File replay runs both on threads or inline, `edgeguard
//! signals` the reader with the observing worker inline, Kafka replay the
//! worker's on batches its consumer filled, and Kafka signals' stage one
//! the worker's holding its batches until the partials they went into are
//! delivered ([`Work::due`], [`Work::flush`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// What a worker does with the batches it takes ([`drain`]): works each
/// and, if it holds them, says when they go on and whether they went
/// through. A closure over one batch is a worker that holds none.
pub(crate) trait Work<B> {
    /// Works one batch.
    fn each(&mut self, batch: &mut B);

    /// The longest wait for a batch before [`Work::due`] is asked again
    /// (a worker that holds batches until a time); `None`: wait until one
    /// comes.
    fn tick(&self) -> Option<Duration> {
        None
    }

    /// Whether the `held` batches (at least one) go on now; by default
    /// each goes on as soon as it is worked.
    fn due(&mut self, held: usize) -> bool {
        let _ = held;
        true
    }

    /// Called once before the held batches go on: makes what they went
    /// into durable and marks them with whether it is (Kafka's consumer
    /// commits no batch marked failed, and stops). By default there is
    /// nothing to make durable.
    fn flush(&mut self, held: &mut [B]) {
        let _ = held;
    }
}

impl<B, F: FnMut(&mut B)> Work<B> for F {
    fn each(&mut self, batch: &mut B) {
        self(batch)
    }
}

/// What a worker's wait for a batch came to.
enum Next<B> {
    Batch(B),
    /// The tick passed with no batch.
    Idle,
    /// No batch will come: the way in closed or was taken.
    Closed,
}

/// Takes the next batch from `rx`, waiting at most `tick` (None: until one
/// comes). The lock is held only while waiting for one.
fn next<B>(rx: &Mutex<Option<Receiver<B>>>, tick: Option<Duration>) -> Next<B> {
    let Ok(rx) = rx.lock() else {
        return Next::Closed;
    };
    let Some(rx) = rx.as_ref() else {
        return Next::Closed;
    };
    match tick {
        None => rx.recv().map_or(Next::Closed, Next::Batch),
        Some(t) => match rx.recv_timeout(t) {
            Ok(b) => Next::Batch(b),
            Err(RecvTimeoutError::Timeout) => Next::Idle,
            Err(RecvTimeoutError::Disconnected) => Next::Closed,
        },
    }
}

/// A worker's loop: takes batches from `rx` (shared by the workers) until
/// it closes or is taken, works each with `work`, holds them until it says
/// they are due (or the way in closed), flushes them and hands them on
/// with `hand_on`, in the order taken; stops when that refuses. A batch
/// is never handed on before its flush: what the consumer commits is
/// durable.
pub(crate) fn drain<B>(
    rx: &Mutex<Option<Receiver<B>>>,
    work: &mut impl Work<B>,
    mut hand_on: impl FnMut(B) -> bool,
) {
    let mut held = Vec::new();
    loop {
        let closed = match next(rx, work.tick()) {
            Next::Batch(mut batch) => {
                work.each(&mut batch);
                held.push(batch);
                false
            }
            Next::Idle => false,
            Next::Closed => true,
        };
        if !held.is_empty() && (closed || work.due(held.len())) {
            work.flush(&mut held);
            for batch in held.drain(..) {
                if !hand_on(batch) {
                    return;
                }
            }
        }
        if closed {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{channel, sync_channel};
    use std::thread;

    use super::*;

    #[derive(Debug, PartialEq)]
    struct B {
        n: u32,
        worked: bool,
        ok: Option<bool>,
    }

    fn b(n: u32) -> B {
        B {
            n,
            worked: false,
            ok: None,
        }
    }

    fn way_in(batches: impl IntoIterator<Item = B>) -> Mutex<Option<Receiver<B>>> {
        let (tx, rx) = channel();
        for x in batches {
            tx.send(x).unwrap();
        }
        Mutex::new(Some(rx))
    }

    /// Holds batches until `every` are held; logs what happens in order.
    struct Holder {
        every: usize,
        fails: bool,
        log: Vec<String>,
    }

    impl Work<B> for Holder {
        fn each(&mut self, batch: &mut B) {
            batch.worked = true;
            self.log.push(format!("work {}", batch.n));
        }

        fn tick(&self) -> Option<Duration> {
            Some(Duration::from_millis(5))
        }

        fn due(&mut self, held: usize) -> bool {
            held >= self.every
        }

        fn flush(&mut self, held: &mut [B]) {
            self.log.push(format!("flush {}", held.len()));
            for batch in held {
                batch.ok = Some(!self.fails);
            }
        }
    }

    fn holder(every: usize, fails: bool) -> Holder {
        Holder {
            every,
            fails,
            log: Vec::new(),
        }
    }

    #[test]
    fn a_closure_hands_each_batch_on_as_worked_in_order() {
        let rx = way_in((0..3).map(b));
        let mut out = Vec::new();
        drain(&rx, &mut |x: &mut B| x.worked = true, |x| {
            out.push(x);
            true
        });
        let n: Vec<u32> = out.iter().map(|x| x.n).collect();
        assert_eq!(n, [0, 1, 2]);
        assert!(out.iter().all(|x| x.worked && x.ok.is_none()));
    }

    #[test]
    fn the_loop_stops_when_hand_on_refuses_or_the_way_in_is_taken() {
        let rx = way_in((0..5).map(b));
        let mut worked = 0;
        let mut handed = 0;
        drain(&rx, &mut |_: &mut B| worked += 1, |_| {
            handed += 1;
            handed < 2
        });
        assert_eq!((worked, handed), (2, 2));
        let taken: Mutex<Option<Receiver<B>>> = Mutex::new(None);
        drain(&taken, &mut |_: &mut B| worked += 1, |_| true);
        assert_eq!(worked, 2, "nothing to take");
    }

    #[test]
    fn held_batches_go_on_when_due_after_one_flush() {
        let rx = way_in((0..5).map(b));
        let mut w = holder(2, false);
        let mut out = Vec::new();
        drain(&rx, &mut w, |x| {
            assert!(x.worked, "worked before handed on");
            assert_eq!(x.ok, Some(true), "flushed before handed on");
            out.push(format!("hand {}", x.n));
            true
        });
        // Two and two when due; the last one when the way in closed.
        assert_eq!(
            w.log,
            ["work 0", "work 1", "flush 2", "work 2", "work 3", "flush 2", "work 4", "flush 1"]
        );
        assert_eq!(out, ["hand 0", "hand 1", "hand 2", "hand 3", "hand 4"]);
    }

    #[test]
    fn a_failed_flush_hands_the_batches_on_marked_not_ok() {
        let rx = way_in((0..3).map(b));
        let mut w = holder(3, true);
        let mut out = Vec::new();
        drain(&rx, &mut w, |x| {
            out.push(x);
            true
        });
        assert_eq!(w.log.iter().filter(|l| l.starts_with("flush")).count(), 1);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|x| x.ok == Some(false)), "{out:?}");
    }

    /// Due once a batch has waited a tick with nothing new.
    struct Idle {
        asked: usize,
        flushed: usize,
    }

    impl Work<B> for Idle {
        fn each(&mut self, _: &mut B) {}

        fn tick(&self) -> Option<Duration> {
            Some(Duration::from_millis(5))
        }

        fn due(&mut self, _: usize) -> bool {
            self.asked += 1;
            self.asked > 1
        }

        fn flush(&mut self, held: &mut [B]) {
            self.flushed += held.len();
        }
    }

    #[test]
    fn a_tick_with_no_batch_hands_held_ones_on_while_the_way_in_is_open() {
        let (tx, rx) = sync_channel(1);
        let (done_tx, done_rx) = channel();
        let rx = Mutex::new(Some(rx));
        let mut w = Idle {
            asked: 0,
            flushed: 0,
        };
        thread::scope(|s| {
            s.spawn(|| drain(&rx, &mut w, |x| done_tx.send(x).is_ok()));
            tx.send(b(7)).unwrap();
            // Handed on by the tick, the sender still open.
            let back = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!(back.n, 7);
            drop(tx);
        });
        assert_eq!(w.flushed, 1);
        assert!(w.asked >= 2, "asked on the batch and again on a tick");
    }
}
