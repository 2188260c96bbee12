//! The progress line: lines per second and, when the input size is known,
//! how far along and the time left. Shown only on a terminal, so logs and
//! pipes get nothing but the summary.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const EVERY: Duration = Duration::from_millis(250);

pub(super) struct Progress {
    on: bool,
    total: Option<u64>,
    consumed: Arc<AtomicU64>,
    lines: u64,
    started: Instant,
    last: Instant,
    shown: bool,
}

impl Progress {
    pub(super) fn new(wanted: bool, total: Option<u64>, consumed: Arc<AtomicU64>) -> Progress {
        let now = Instant::now();
        Progress {
            on: wanted && std::io::stderr().is_terminal(),
            total,
            consumed,
            lines: 0,
            started: now,
            last: now,
            shown: false,
        }
    }

    /// Counts lines written; redraws at most every 250 ms.
    pub(super) fn lines(&mut self, n: u64) {
        self.lines += n;
        if !self.on || self.last.elapsed() < EVERY {
            return;
        }
        self.last = Instant::now();
        let text = line(
            self.lines,
            self.started.elapsed(),
            self.consumed.load(Ordering::Relaxed),
            self.total,
        );
        let mut err = std::io::stderr().lock();
        // A progress line that cannot be drawn is not worth failing for.
        let _ = write!(err, "\r\x1b[K{text}");
        let _ = err.flush();
        self.shown = true;
    }

    /// Clears the line, leaving the terminal to the summary.
    pub(super) fn finish(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
        }
    }
}

/// `1234567 lines  412345 lines/s  37.2%  ETA 0:12`
fn line(lines: u64, elapsed: Duration, consumed: u64, total: Option<u64>) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mut s = format!("{lines} lines  {:.0} lines/s", lines as f64 / secs);
    if let Some(total) = total.filter(|&t| t > 0) {
        let done = (consumed as f64 / total as f64).min(1.0);
        s += &format!("  {:.1}%", done * 100.0);
        if done > 0.0 {
            let left = (secs / done - secs).max(0.0) as u64;
            s += &format!("  ETA {}:{:02}", left / 60, left % 60);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_rate_share_and_eta() {
        assert_eq!(
            line(1000, Duration::from_secs(2), 250, Some(1000)),
            "1000 lines  500 lines/s  25.0%  ETA 0:06"
        );
        assert_eq!(
            line(10, Duration::from_secs(1), 5, None),
            "10 lines  10 lines/s"
        );
    }
}
