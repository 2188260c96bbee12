//! A native proof-of-work solver, what a script author writes in an
//! afternoon: SHA-256 of the nonce's constant blocks once (the midstate),
//! then one or two compressions per counter, on every core. Used by
//! `scripts/pow-measure.py` for docs/challenge.md's table.
//!
//! `pow_native BITS TRIALS [THREADS]`: solves TRIALS random nonces of the
//! page's length and prints one line per trial: `seconds hashes`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use sha2::{Digest, Sha256};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bits: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(16);
    let trials: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let threads: u64 = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u64));
    for t in 0..trials {
        // A nonce of the page's shape: 104 base64url characters.
        let nonce: String = (0..104)
            .map(|i| {
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                    [(i * 7 + t as usize * 13 + i * i) % 64] as char
            })
            .collect();
        let prefix = format!("{nonce}:");
        let start = Instant::now();
        let done = AtomicBool::new(false);
        let tried = AtomicU64::new(0);
        std::thread::scope(|s| {
            for k in 0..threads {
                let (prefix, done, tried) = (&prefix, &done, &tried);
                s.spawn(move || {
                    let mid = Sha256::new().chain_update(prefix.as_bytes());
                    let mut c = k;
                    let mut n = 0u64;
                    let mut buf = itoa_buf();
                    while !done.load(Ordering::Relaxed) {
                        let digits = itoa(c, &mut buf);
                        let d = mid.clone().chain_update(digits).finalize();
                        n += 1;
                        if u32::from_be_bytes([d[0], d[1], d[2], d[3]]).leading_zeros() >= bits {
                            done.store(true, Ordering::Relaxed);
                        }
                        c += threads;
                    }
                    tried.fetch_add(n, Ordering::Relaxed);
                });
            }
        });
        println!(
            "{:.4} {}",
            start.elapsed().as_secs_f64(),
            tried.load(Ordering::Relaxed)
        );
    }
}

fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

fn itoa(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}
