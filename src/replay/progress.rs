//! The progress bar: lines per second and, when the input size is known,
//! how far along and the time left, drawn by indicatif. Shown only on a
//! terminal, so logs and pipes get nothing but the summary.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the text is recomputed (indicatif redraws at most as often).
const EVERY: Duration = Duration::from_millis(250);

pub(super) struct Progress {
    bar: Option<ProgressBar>,
    total: Option<u64>,
    consumed: Arc<AtomicU64>,
    lines: u64,
    started: Instant,
    last: Instant,
}

impl Progress {
    pub(super) fn new(wanted: bool, total: Option<u64>, consumed: Arc<AtomicU64>) -> Progress {
        let now = Instant::now();
        let total = total.filter(|&t| t > 0);
        let bar = (wanted && std::io::stderr().is_terminal()).then(|| {
            let target = ProgressDrawTarget::stderr_with_hz(4);
            let (bar, template) = match total {
                // The bar counts input bytes; the text counts lines.
                Some(t) => (
                    ProgressBar::with_draw_target(Some(t), target),
                    "{bar:24} {msg}",
                ),
                None => (
                    ProgressBar::with_draw_target(None, target),
                    "{spinner} {msg}",
                ),
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar: bar.filter(|b| !b.is_hidden()),
            total,
            consumed,
            lines: 0,
            started: now,
            last: now,
        }
    }

    /// Counts lines written; updates the bar at most every 250 ms.
    pub(super) fn lines(&mut self, n: u64) {
        self.lines += n;
        let Some(bar) = &self.bar else {
            return;
        };
        if self.last.elapsed() < EVERY {
            return;
        }
        self.last = Instant::now();
        let consumed = self.consumed.load(Ordering::Relaxed);
        bar.set_position(consumed);
        bar.set_message(line(
            self.lines,
            self.started.elapsed(),
            consumed,
            self.total,
        ));
    }

    /// Clears the bar, leaving the terminal to the summary.
    pub(super) fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
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
