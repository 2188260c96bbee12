//! What a signals snapshot costs a worker: the time to load one of N
//! entries (what the refresh thread spends, off the request path), the
//! resident memory it adds, and the time of one request's lookup (the JA4
//! and the headers key, as the gate's fleet stage makes them), for keys
//! the fleet knows and keys it does not.
//!
//! ```sh
//! cargo run --release --example signals_measure -- 1000000
//! ```
//!
//! docs/signals.md ("In nginx") quotes its output.

use std::hint::black_box;
use std::time::Instant;

use edgeguard::features::user_agent::Family;
use edgeguard::signals::key::headers_key;
use edgeguard::signals::{Counts, Kind, Live, Lookup, Snapshot, KEY_CAP};

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The `i`th JA4 (36 characters, as real ones).
fn ja4(i: usize) -> String {
    format!("t13d1516h2_{:012x}_{:012x}", i * 7919, i)
}

/// The `i`th headers key: a family and a header order of 8 to 20 codes.
fn order(i: usize) -> String {
    const CODES: &[u8] = b"hcCMPiuaSOUDelrkfgtvwxyz";
    let len = 8 + i % 13;
    let mut x = i.wrapping_mul(2_654_435_761);
    (0..len)
        .map(|_| {
            x = x.rotate_left(5) ^ 0x9e37_79b9;
            CODES[x % CODES.len()] as char
        })
        .chain(format!("{i:x}").chars())
        .take(32)
        .collect()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir =
        std::env::temp_dir().join(format!("edgeguard-signals-measure-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("signals.json");
    {
        let mut s = Snapshot::new(u64::MAX / 4, 3600);
        let c = Counts {
            requests: 1000,
            prefixes24: 100,
            prefixes48: 3,
            user_agents: 4,
            flagged: 10,
            challenges: 20,
            solved: 15,
            cleared: 200,
        };
        for i in 0..n {
            if i % 2 == 0 {
                s.insert(Kind::Ja4, &ja4(i), c).unwrap();
            } else {
                s.insert(Kind::Headers, &format!("chrome:{}", order(i)), c)
                    .unwrap();
            }
        }
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        s.write(&mut f).unwrap();
    }
    let bytes = std::fs::metadata(&path).unwrap().len();
    // What the writer left behind is given back first, so that the numbers
    // below are the load's.
    // SAFETY: malloc_trim only returns free heap pages to the system.
    unsafe { libc::malloc_trim(0) };
    let before = status_kib("VmRSS:");
    let started = Instant::now();
    let live = Live::open(&path, 0, u64::MAX / 2).unwrap();
    let load = started.elapsed();
    let peak = status_kib("VmHWM:");
    // SAFETY: as above; the parser's temporaries are freed by now.
    unsafe { libc::malloc_trim(0) };
    let kept = status_kib("VmRSS:");
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "{n} entries, file {:.1} MB: load {:.2} s; RSS +{:.1} MiB kept ({:.0} bytes an entry), peak {:.1} MiB above the start",
        bytes as f64 / 1e6,
        load.as_secs_f64(),
        mib(kept.saturating_sub(before)),
        kept.saturating_sub(before) as f64 * 1024.0 / n as f64,
        mib(peak.saturating_sub(before)),
    );

    // Lookups as the fleet stage makes them: the snapshot loaded, the
    // JA4 and the headers key built on the stack.
    let keys: Vec<(String, String)> = (0..4096).map(|i| (ja4(i * 2), order(i * 2 + 1))).collect();
    let misses: Vec<(String, String)> = (0..4096)
        .map(|i| (ja4(n + i * 2), order(n + i * 2 + 1)))
        .collect();
    // A few keys over and over: most of a site's traffic is a few browsers.
    let hot: Vec<(String, String)> = keys.iter().take(16).cloned().cycle().take(4096).collect();
    for (what, set) in [
        ("known (4096 spread over the table)", &keys),
        ("known (16 hot)", &hot),
        ("unknown", &misses),
    ] {
        let rounds = 200;
        let started = Instant::now();
        let mut hits = 0usize;
        for _ in 0..rounds {
            for (j, o) in set.iter() {
                let s = live.current(1).unwrap();
                let mut buf = [0; KEY_CAP];
                let key = headers_key(Family::Chrome, o.as_bytes(), &mut buf);
                let l = Lookup::of(&s, Some(j.as_bytes()), key);
                hits += usize::from(black_box(l).answer().is_some());
            }
        }
        let per = started.elapsed().as_nanos() as f64 / (rounds * set.len()) as f64;
        println!(
            "lookup of {what} keys (JA4 + headers key): {per:.0} ns a request ({hits} answered)"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
