//! How a replay runs: threads, order, batch and line sizes, samples, the
//! clock.

/// How a replay runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Write output lines in input order (costs a reorder buffer bounded by
    /// the pool).
    pub ordered: bool,
    /// Bytes of input per batch.
    pub batch_bytes: usize,
    /// Longest line kept, in bytes; longer lines are counted and skipped.
    pub max_line: usize,
    /// Show a progress line on stderr when it is a terminal.
    pub progress: bool,
    /// Errors and flipped requests kept as samples.
    pub samples: usize,
    /// The Unix time requests are judged at (clearance cookies, nonces)
    /// when their line has no `edgeguard_time`; none: the time replay
    /// starts.
    pub now: Option<u64>,
}

/// The clock's Unix seconds.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Default for Options {
    fn default() -> Options {
        Options {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ordered: false,
            batch_bytes: 256 << 10,
            max_line: 1 << 20,
            progress: true,
            samples: 10,
            now: None,
        }
    }
}
