//! Finding the internal headers of a request, four ways side by side (and
//! edgeguard's a second time, as nginx runs it):
//!
//! - `original`: for every internal name, scan the request and remove matches
//!   (what a Lua loop of `ngx.req.clear_header` over the list does);
//! - `hashset`: for every request header, fold the name and look it up in a
//!   `HashSet` (std SipHash);
//! - `trie-hard`: the same with a plain trie-hard trie;
//! - `edgeguard`: `HeaderSet::find_internal`;
//! - `+score`: the same on the list extended with the score header's name,
//!   the strip set an nginx location searches.
//!
//! Two workloads: (a) the shipped `nginx-conf/internal-headers.txt`, (b)
//! trie-hard's header fixture as the internal list. Each has 10 000 requests
//! of 10 to 30 headers, about 10 % internal, the rest real request header
//! names from `benches/data/request-headers.txt`. Every reported time is for
//! ONE request: the measured loop walks the workload's requests in turn.
//!
//! Before measuring, all variants are run over every request and must
//! agree; the bench prints the check. After criterion, a summary table gives
//! each variant's best time per request over whole passes of the workload,
//! and edgeguard's speed-up. Run `cargo bench --bench headers`; for the check
//! and one quick pass of each variant, `cargo test --bench headers`.

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use edgeguard::ffi::edgeguard_header;
use edgeguard::headers::{HeaderSet, MAX_NAME_LEN};
use trie_hard::TrieHard;

const SHIPPED: &[u8] = include_bytes!("../nginx-conf/internal-headers.txt");
const TRIE_HARD: &[u8] = include_bytes!("data/trie-hard-headers.txt");
const PUBLIC: &[u8] = include_bytes!("data/request-headers.txt");

const REQUESTS: usize = 10_000;
const INTERNAL_SHARE: f64 = 0.10;
/// Room for the indices of one request; no request has more headers.
const MAX_HEADERS: usize = 30;

/// Words of a list: first word of each non-blank, non-comment line.
fn words(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|&b| b == b'\n').filter_map(|line| {
        let word = line.trim_ascii().split(u8::is_ascii_whitespace).next()?;
        (!word.is_empty() && !word.starts_with(b"#")).then_some(word)
    })
}

fn fold(b: u8) -> u8 {
    match b {
        b'_' => b'-',
        _ => b.to_ascii_lowercase(),
    }
}

fn folded(name: &[u8]) -> Vec<u8> {
    name.iter().map(|&b| fold(b)).collect()
}

/// A list as the three comparison variants use it.
struct Rules {
    exact: Vec<Vec<u8>>,
    prefixes: Vec<Vec<u8>>,
}

impl Rules {
    fn new(text: &[u8]) -> Rules {
        let mut rules = Rules {
            exact: Vec::new(),
            prefixes: Vec::new(),
        };
        for word in words(text) {
            match word.strip_suffix(b"*") {
                Some(prefix) => rules.prefixes.push(folded(prefix)),
                None => rules.exact.push(folded(word)),
            }
        }
        rules.exact.sort();
        rules.exact.dedup();
        rules
    }

    /// Folded `name` into `buf`, or `None` if it is too long for an exact name.
    fn fold_into<'b>(name: &[u8], buf: &'b mut [u8; MAX_NAME_LEN]) -> Option<&'b [u8]> {
        let out = buf.get_mut(..name.len())?;
        for (dst, &src) in out.iter_mut().zip(name) {
            *dst = fold(src);
        }
        Some(out)
    }

    fn prefix_match(&self, name: &[u8]) -> bool {
        self.prefixes
            .iter()
            .any(|p| name.len() >= p.len() && p.iter().zip(name).all(|(&a, &b)| a == fold(b)))
    }
}

/// xorshift64*: a fixed seed gives the same workload on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// Suffixes for names under a prefix rule, as services coin them.
const SUFFIXES: &[&str] = &[
    "id",
    "user",
    "token",
    "original-path",
    "request-id",
    "route",
    "shard",
    "upstream-rq-timeout-ms",
    "retry-on",
    "decorator-operation",
    "client-ip",
    "auth",
];

/// A generated workload: owns the name bytes its requests point into.
struct Workload {
    name: &'static str,
    set: HeaderSet,
    rules: Rules,
    /// The distinct names; `requests` point into them.
    _names: Vec<Vec<u8>>,
    requests: Vec<Vec<edgeguard_header>>,
    headers: usize,
    internal: usize,
}

impl Workload {
    fn new(name: &'static str, list: &[u8], seed: u64) -> Workload {
        let set = HeaderSet::parse(name, list).expect("fixture list parses");
        let rules = Rules::new(list);
        let public: Vec<&[u8]> = words(PUBLIC).filter(|n| !set.is_internal(n)).collect();
        let mut rng = Rng(seed);
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut pool: HashMap<Vec<u8>, usize> = HashMap::new();
        let (mut total, mut internal) = (0, 0);
        let mut shapes: Vec<Vec<usize>> = Vec::with_capacity(REQUESTS);
        for _ in 0..REQUESTS {
            let count = 10 + rng.below(21);
            let mut request = Vec::with_capacity(count);
            for _ in 0..count {
                let name = if rng.chance(INTERNAL_SHARE) {
                    let pick = rng.below(rules.exact.len() + rules.prefixes.len());
                    let mut name = match rules.exact.get(pick) {
                        Some(exact) => exact.clone(),
                        None => {
                            let prefix = &rules.prefixes[pick - rules.exact.len()];
                            [
                                prefix.as_slice(),
                                SUFFIXES[rng.below(SUFFIXES.len())].as_bytes(),
                            ]
                            .concat()
                        }
                    };
                    // nginx hands keys lower-cased; a few arrive raw, some
                    // with `_` as a smuggling attempt.
                    if rng.chance(0.1) {
                        for b in &mut name {
                            *b = if *b == b'-' {
                                b'_'
                            } else {
                                b.to_ascii_uppercase()
                            };
                        }
                    }
                    name
                } else {
                    public[rng.below(public.len())].to_vec()
                };
                // Interned: a request's names are in cache when nginx hands
                // them over, and a pool of a few hundred distinct names keeps
                // the benchmark measuring lookups rather than cache misses.
                let next = names.len();
                let index = *pool.entry(name.clone()).or_insert(next);
                if index == next {
                    names.push(name);
                }
                request.push(index);
                total += 1;
                internal += usize::from(set.is_internal(&names[index]));
            }
            shapes.push(request);
        }
        // `names` is complete: the headers may now point into its elements.
        let requests: Vec<Vec<edgeguard_header>> = shapes
            .iter()
            .map(|shape| {
                shape
                    .iter()
                    .map(|&i| edgeguard_header::new(&names[i], b"1"))
                    .collect()
            })
            .collect();
        Workload {
            name,
            set,
            rules,
            _names: names,
            requests,
            headers: total,
            internal,
        }
    }
}

fn key(header: &edgeguard_header) -> &[u8] {
    // SAFETY: every key points into `Workload::_names`, alive and unchanged
    // for as long as the workload.
    unsafe { header.key.as_bytes() }
}

/// One way to find the internal headers; writes the index of every internal
/// header (not only the first of each name) and returns how many.
trait Variant {
    fn find(&self, request: &[edgeguard_header], out: &mut [u32; MAX_HEADERS]) -> usize;
}

struct Original<'w>(&'w Rules);

impl Variant for Original<'_> {
    fn find(&self, request: &[edgeguard_header], out: &mut [u32; MAX_HEADERS]) -> usize {
        let mut removed = [false; MAX_HEADERS];
        for name in &self.0.exact {
            for (i, header) in request.iter().enumerate() {
                let k = key(header);
                if k.len() == name.len() && k.iter().zip(name).all(|(&a, &b)| fold(a) == b) {
                    removed[i] = true;
                }
            }
        }
        for prefix in &self.0.prefixes {
            for (i, header) in request.iter().enumerate() {
                let k = key(header);
                if k.len() >= prefix.len() && prefix.iter().zip(k).all(|(&a, &b)| a == fold(b)) {
                    removed[i] = true;
                }
            }
        }
        let mut n = 0;
        for (i, _) in removed.iter().enumerate().filter(|(_, r)| **r) {
            out[n] = i as u32;
            n += 1;
        }
        n
    }
}

struct Flipped<'w, F> {
    rules: &'w Rules,
    contains: F,
}

impl<F: Fn(&[u8]) -> bool> Variant for Flipped<'_, F> {
    fn find(&self, request: &[edgeguard_header], out: &mut [u32; MAX_HEADERS]) -> usize {
        let mut n = 0;
        let mut buf = [0u8; MAX_NAME_LEN];
        for (i, header) in request.iter().enumerate() {
            let k = key(header);
            let exact = Rules::fold_into(k, &mut buf).is_some_and(|f| (self.contains)(f));
            if exact || self.rules.prefix_match(k) {
                out[n] = i as u32;
                n += 1;
            }
        }
        n
    }
}

struct Edgeguard<'w>(&'w HeaderSet);

impl Variant for Edgeguard<'_> {
    fn find(&self, request: &[edgeguard_header], out: &mut [u32; MAX_HEADERS]) -> usize {
        // SAFETY: bench requests view the workload's own name strings.
        unsafe {
            self.0
                .find_internal(edgeguard::ffi::headers_from_c(request), out)
        }
        .distinct
    }
}

/// All four variants must find the same headers in every request: the
/// baselines every internal header, edgeguard the first of each name plus a
/// count of all of them.
fn check(w: &Workload, variants: &[(&str, &dyn Variant)]) {
    let mut expected = [0u32; MAX_HEADERS];
    let mut got = [0u32; MAX_HEADERS];
    let mut total = 0;
    for request in &w.requests {
        let n = variants[0].1.find(request, &mut expected);
        total += n;
        for &(name, variant) in &variants[1..3] {
            let m = variant.find(request, &mut got);
            assert_eq!(
                got[..m],
                expected[..n],
                "{}: {name} disagrees with original",
                w.name
            );
        }
        let firsts: Vec<u32> = expected[..n]
            .iter()
            .enumerate()
            .filter(|&(at, &i)| {
                // One clear per name as nginx compares names: case folded,
                // `_` and `-` apart.
                let name = key(&request[i as usize]);
                expected[..at]
                    .iter()
                    .all(|&j| !key(&request[j as usize]).eq_ignore_ascii_case(name))
            })
            .map(|(_, &i)| i)
            .collect();
        // SAFETY: the workload's headers view its own name strings.
        let found = unsafe {
            w.set
                .find_internal(edgeguard::ffi::headers_from_c(request), &mut got)
        };
        assert_eq!(found.matched, n, "{}: edgeguard count", w.name);
        assert_eq!(
            got[..found.distinct],
            firsts[..],
            "{}: edgeguard clear",
            w.name
        );
    }
    assert_eq!(total, w.internal);
    println!(
        "{}: {} requests, {} headers, {} internal ({:.1} %): all {} variants agree",
        w.name,
        w.requests.len(),
        w.headers,
        w.internal,
        100.0 * w.internal as f64 / w.headers as f64,
        variants.len(),
    );
}

/// Run `iters` requests, walking the workload in turn.
fn walk(w: &Workload, variant: &dyn Variant, iters: u64) {
    let mut out = [0u32; MAX_HEADERS];
    let mut sink = 0;
    let mut requests = w.requests.iter().cycle();
    for _ in 0..iters {
        let request = requests.next().expect("cycle never ends");
        sink += variant.find(black_box(request), &mut out);
    }
    black_box(sink);
}

/// Wall time of `iters` requests, for criterion.
fn per_request(w: &Workload, variant: &dyn Variant, iters: u64) -> Duration {
    let start = Instant::now();
    walk(w, variant, iters);
    start.elapsed()
}

/// CPU time this thread has used: unlike wall time, it does not count the
/// time other processes held the CPU, which on a shared machine is most of
/// the noise.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn bench(c: &mut Criterion, w: &Workload, summary: bool) {
    let hashset: HashSet<Vec<u8>> = w.rules.exact.iter().cloned().collect();
    let trie: TrieHard<'_, ()> =
        TrieHard::new(w.rules.exact.iter().map(|k| (k.as_slice(), ())).collect());
    let original = Original(&w.rules);
    let hashset = Flipped {
        rules: &w.rules,
        contains: |k: &[u8]| hashset.contains(k),
    };
    let trie = Flipped {
        rules: &w.rules,
        contains: |k: &[u8]| trie.get_from_bytes(k).is_some(),
    };
    let edgeguard = Edgeguard(&w.set);
    // What a location strips in nginx: the list extended with the score
    // header's name (edgeguard_location_new), searched by the same lookup.
    let extended_set = w.set.extend("score_header", b"X-Bot-Score").unwrap();
    let extended = Edgeguard(&extended_set);
    let variants: [(&str, &dyn Variant); 5] = [
        ("original", &original),
        ("hashset", &hashset),
        ("trie-hard", &trie),
        ("edgeguard", &edgeguard),
        ("+score", &extended),
    ];
    check(w, &variants);

    let mut group = c.benchmark_group(format!("headers/{}", w.name));
    for (name, variant) in variants {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| per_request(w, variant, iters))
        });
    }
    group.finish();
    if summary {
        summarize(w, &variants);
    }
}

/// Best of several whole passes over the workload, in CPU ns per request.
/// Variants take turns pass by pass, so a busy spell hits them all alike.
fn summarize(w: &Workload, variants: &[(&str, &dyn Variant)]) {
    const PASSES: usize = 15;
    let per_pass = w.requests.len() as u64;
    let mut ns = vec![f64::INFINITY; variants.len()];
    for _ in 0..PASSES {
        for (best, &(_, variant)) in ns.iter_mut().zip(variants) {
            let start = thread_cpu_time();
            walk(w, variant, per_pass);
            let pass = (thread_cpu_time() - start).as_nanos() as f64 / per_pass as f64;
            *best = best.min(pass);
        }
    }
    println!(
        "\nsummary {}: best of {PASSES} passes, CPU ns per request",
        w.name
    );
    for (&(name, _), t) in variants.iter().zip(&ns) {
        println!("  {name:<10} {t:>8.1}");
    }
    let (original, edgeguard) = (ns[0], ns[3]);
    let best_baseline = ns[1].min(ns[2]);
    println!(
        "  edgeguard: {:.1}x faster than original, {:.1}x faster than the better of hashset and trie-hard\n",
        original / edgeguard,
        best_baseline / edgeguard
    );
}

fn main() {
    let workloads = [
        Workload::new("a-shipped", SHIPPED, 0x0A11_CE5E_ED00_000A),
        Workload::new("b-trie-hard", TRIE_HARD, 0x0A11_CE5E_ED00_000B),
    ];
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    // cargo passes `--bench` only to `cargo bench`; `cargo test` runs each
    // variant once, where a timing summary would mean nothing.
    let summary = std::env::args().any(|arg| arg == "--bench");
    for w in &workloads {
        bench(&mut c, w, summary);
    }
    c.final_summary();
}
