//! The client memory under 16 processes at once, as nginx's workers use it:
//! the memory is opened once, then the processes fork and hammer it.
//!
//! - one key, every process: each counter exact (no lost update);
//! - many keys in a small table: every miss accounted for (used slots plus
//!   evictions), every slot in its home bucket, no tag twice in a bucket,
//!   no lock left held;
//! - a reload (a second `open` of the same name and size) gets the same
//!   memory, and processes forked after it see what the others recorded;
//! - ten million distinct clients: the memory stays the size it was made
//!   (every miss evicts; no process grows by what it saw).
//!
//! No libtest harness: `fork` in a process with libtest's threads would
//! copy only the forking thread. Children touch atomics only and `_exit`.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use edgeguard::clients::shm;
use edgeguard::clients::{
    registry, Challenge, ClientKey, ClientMemory, Config, Event, Fetch, Prefix, Width,
};

const T0: u64 = 1_796_601_600_000;
const PROCESSES: usize = 16;

fn key(n: u32) -> ClientKey<'static> {
    ClientKey {
        prefix: Prefix::of(Ipv4Addr::from(n).into(), Width::Host),
        fingerprint: b"chrome:hCMPuaSODel",
    }
}

fn main() {
    hammering_one_key_loses_no_update();
    many_keys_keep_the_table_sound();
    a_reload_gets_the_same_memory_and_later_workers_see_it();
    ten_million_clients_stay_in_fixed_memory();
    println!("clients_stress: 4 passed, 0 failed");
}

/// Runs `work(i)` in `PROCESSES` forked children and waits for all; a
/// child that panics exits 1 and fails the test.
fn in_children(work: impl Fn(usize)) {
    let mut pids = Vec::new();
    for i in 0..PROCESSES {
        // SAFETY: this process runs one thread (no harness); the child
        // runs `work`, which touches the shared atomics, and `_exit`s
        // without running the parent's destructors or atexit handlers.
        match unsafe { libc::fork() } {
            -1 => panic!("fork: {}", std::io::Error::last_os_error()),
            0 => {
                let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(i))).is_ok();
                // SAFETY: ends the child at once, as a forked child must.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) }
            }
            pid => pids.push(pid),
        }
    }
    for pid in pids {
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is a valid out pointer.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child {pid}: {status}"
        );
    }
}

fn open(name: &str, bytes: usize) -> ClientMemory {
    registry::open(
        name,
        &Config {
            bytes,
            ..Config::default()
        },
    )
    .unwrap()
}

/// What each iteration `i` of a child records: one request of class
/// `i % 7`, and on classes 0 to 3 a cookie or challenge fact as well.
fn event(i: usize) -> Event<'static> {
    let fetch = Fetch::ALL[i % 7];
    let mut e = Event::request(fetch, b"/same");
    match i % 7 {
        0 => e.cookie_returned = true,
        1 => e.cookie_issued = true,
        2 => e.challenge = Some(Challenge::Served),
        3 => e.challenge = Some(Challenge::Failed),
        _ => {}
    }
    e
}

fn hammering_one_key_loses_no_update() {
    // 4 000 of each class per process: 64 000 per counter, under the
    // 65 535 an epoch's counter saturates at.
    const ROUNDS: usize = 7 * 4000;
    let memory = open("stress-one-key", 1 << 20);
    // Each child's successful observes per class (a `None` is a request
    // that gave up waiting, counted in the busy gauge).
    let done = shm::shared_words(PROCESSES * 7).unwrap();
    let started = Instant::now();
    in_children(|child| {
        for i in 0..ROUNDS {
            // One epoch: the counts do not age during the test. The
            // clocks advance 10 ms per 1 000 requests, so processes that
            // run at different speeds disagree by well under a second,
            // as nginx workers' clocks do.
            let now = T0 + i as u64 / 100;
            if memory.observe(&key(1), &event(i), now).is_some() {
                done[child * 7 + i % 7].fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let elapsed = started.elapsed();
    let per_class: Vec<u32> = (0..7)
        .map(|c| {
            (0..PROCESSES)
                .map(|p| done[p * 7 + c].load(Ordering::Relaxed) as u32)
                .sum()
        })
        .collect();
    let v = memory.view(&key(1), T0 + ROUNDS as u64 / 100).unwrap();
    let g = memory.gauges();
    assert_eq!(v.navigations, per_class[0]);
    assert_eq!(&v.subresources_by_class[..], &per_class[1..]);
    assert_eq!(v.cookies_returned, per_class[0]);
    assert_eq!(v.cookies_issued, per_class[1]);
    assert_eq!(v.challenges_served, per_class[2]);
    assert_eq!(v.challenges_failed, per_class[3]);
    assert_eq!(v.challenges_solved, 0);
    let total: u32 = per_class.iter().sum();
    assert_eq!(u64::from(total) + g.busy, (PROCESSES * ROUNDS) as u64);
    assert_eq!((g.used, g.evictions, g.steals), (1, 0, 0));
    assert!(
        g.busy * 100 <= (PROCESSES * ROUNDS) as u64,
        "{} requests gave up",
        g.busy
    );
    println!(
        "one key: {PROCESSES} processes x {ROUNDS} observes in {elapsed:.2?} \
         ({:.0} ns per observe of wall time), counts exact, {} gave up waiting",
        elapsed.as_nanos() as f64 / (PROCESSES * ROUNDS) as f64,
        g.busy
    );
}

fn many_keys_keep_the_table_sound() {
    // 256 KiB: 511 buckets, 2 044 slots; 16 x 20 000 requests over
    // 50 000 keys, so most are misses that evict.
    const ROUNDS: usize = 20_000;
    let memory = open("stress-many-keys", 256 << 10);
    let misses = shm::shared_words(PROCESSES).unwrap();
    let done = shm::shared_words(PROCESSES).unwrap();
    in_children(|child| {
        let mut rng = fastrand::Rng::with_seed(child as u64);
        for i in 0..ROUNDS {
            let k = key(rng.u32(0..50_000));
            // 1 ms per 10 requests: processes' clocks stay within seconds.
            let now = T0 + i as u64 / 10;
            if let Some(v) = memory.observe(&k, &event(i), now) {
                done[child].fetch_add(1, Ordering::Relaxed);
                if !v.known {
                    misses[child].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    let sum = |w: &[AtomicU64]| w.iter().map(|x| x.load(Ordering::Relaxed)).sum::<u64>();
    let g = memory.gauges();
    assert_eq!(sum(done) + g.busy, (PROCESSES * ROUNDS) as u64);
    // Every miss took a slot: an empty one (used) or another's (evicted).
    assert_eq!(sum(misses), g.used + g.evictions);
    assert_eq!(g.steals, 0);
    let (mut used, mut requests) = (0u64, 0u64);
    let mut tags = HashSet::new();
    memory.scan(|s| {
        assert!(!s.locked, "bucket {} left locked", s.bucket);
        if s.tag == 0 {
            assert!(s.record.is_empty());
            return;
        }
        used += 1;
        assert_eq!(s.home, s.bucket, "a tag outside its bucket");
        assert!(tags.insert(s.tag), "tag {:x} twice", s.tag);
        assert_eq!(u64::from(s.age_s), s.record.last_seen_ms / 1000);
        requests += u64::from(
            s.record
                .view(s.record.last_seen_ms, memory.window(), true)
                .requests(),
        );
    });
    assert_eq!(used, g.used);
    assert_eq!(g.used, g.slots, "50 000 keys fill every slot");
    assert!(requests <= sum(done));
    println!(
        "many keys: {} slots, {} misses, {} evictions ({} within the window), {} gave up waiting",
        g.slots,
        sum(misses),
        g.evictions,
        g.evicted_live,
        g.busy
    );
}

fn a_reload_gets_the_same_memory_and_later_workers_see_it() {
    let first = open("stress-reload", 1 << 20);
    first.observe(&key(7), &event(0), T0).unwrap();
    // The reload: init_by_lua runs again and opens the same name and size.
    let reloaded = open("stress-reload", 1 << 20);
    assert!(reloaded.same_memory(&first));
    in_children(|_| {
        // A worker forked after the reload opens it again (the registry
        // came with the fork) and records into the same memory.
        let m = open("stress-reload", 1 << 20);
        m.observe(&key(7), &event(0), T0 + 1).unwrap();
        // A memory first opened in a worker is that worker's alone.
        open("stress-opened-in-a-worker", 1 << 20)
            .observe(&key(7), &event(0), T0 + 1)
            .unwrap();
    });
    assert_eq!(
        first.view(&key(7), T0 + 1).unwrap().navigations,
        1 + PROCESSES as u32
    );
    let own = open("stress-opened-in-a-worker", 1 << 20);
    assert!(!own.view(&key(7), T0 + 1).unwrap().known);
}

/// The resident set of this process, bytes (`/proc/self/statm`).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf reads a constant of the system.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

fn ten_million_clients_stay_in_fixed_memory() {
    // 4 MiB: 8 191 buckets. 16 processes x 625 000 distinct clients each
    // (10 M in all, none seen twice): each process's resident set grows by
    // at most the table it touches (4 MiB) and a little slack, never by
    // what it saw; every miss took a slot or evicted one.
    const BYTES: usize = 4 << 20;
    const EACH: usize = 625_000;
    let memory = open("stress-ten-million", BYTES);
    let grew = shm::shared_words(PROCESSES).unwrap();
    let misses = shm::shared_words(PROCESSES).unwrap();
    let started = Instant::now();
    in_children(|child| {
        let before = resident_bytes();
        for i in 0..EACH {
            let k = key((child * EACH + i) as u32 + 1);
            let now = T0 + i as u64 / 100;
            if let Some(v) = memory.observe(&k, &event(i), now) {
                if !v.known {
                    misses[child].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        grew[child].store(resident_bytes().saturating_sub(before), Ordering::Relaxed);
    });
    let g = memory.gauges();
    let sum = |w: &[AtomicU64]| w.iter().map(|x| x.load(Ordering::Relaxed)).sum::<u64>();
    let most = grew
        .iter()
        .map(|x| x.load(Ordering::Relaxed))
        .max()
        .unwrap();
    assert!(
        most <= (BYTES + (1 << 20)) as u64,
        "a process grew by {most} bytes"
    );
    assert_eq!(
        sum(misses) + g.busy,
        (PROCESSES * EACH) as u64,
        "a client seen twice"
    );
    assert_eq!(sum(misses), g.used + g.evictions);
    assert_eq!(g.used, g.slots);
    println!(
        "ten million clients: {} slots in {} bytes, {} evictions, the most a process grew {} KiB, {:.1} s",
        g.slots,
        BYTES,
        g.evictions,
        most >> 10,
        started.elapsed().as_secs_f64()
    );
}
