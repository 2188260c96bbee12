//! Test inputs for the differential tests of the extraction rewrites: every
//! request of the checked-in fixtures (`tests/fixtures/`: the labelled
//! traffic, the real-client corpus, the legacy requests), and pseudo-random
//! byte strings made of the pieces a parser cares about.

use serde_json::Value;

/// One fixture request, owned.
pub(crate) struct Owned {
    pub(crate) uri: Vec<u8>,
    pub(crate) client: Vec<u8>,
    pub(crate) headers: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The fixture files with a `headers` array of `[name, value]` pairs.
const FILES: &[&str] = &[
    "tests/fixtures/traffic/sample.jsonl",
    "tests/fixtures/traffic/legacy-sample.jsonl",
    "tests/fixtures/real_clients/corpus.jsonl",
    "tests/fixtures/legacy/requests.jsonl",
];

/// Every request of [`FILES`] (more than 2 000).
pub(crate) fn requests() -> Vec<Owned> {
    let mut all = Vec::new();
    for file in FILES {
        let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for (n, line) in text.lines().enumerate() {
            let row: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{path}:{}: {e}", n + 1));
            let headers = row["headers"]
                .as_array()
                .unwrap_or_else(|| panic!("{path}:{}: no headers array", n + 1))
                .iter()
                .map(|h| {
                    let part = |i: usize| h[i].as_str().unwrap_or_default().as_bytes().to_vec();
                    (part(0), part(1))
                })
                .collect();
            let client = row["client"]
                .as_str()
                .unwrap_or_default()
                .as_bytes()
                .to_vec();
            let uri = row["uri"].as_str().unwrap_or_default().as_bytes().to_vec();
            all.push(Owned {
                uri,
                client,
                headers,
            });
        }
    }
    assert!(all.len() > 2000, "the fixtures shrank: {}", all.len());
    all
}

/// The first value of header `name` (any case) in each fixture request
/// that has one.
pub(crate) fn values_of(name: &str) -> Vec<Vec<u8>> {
    requests()
        .into_iter()
        .filter_map(|r| {
            r.headers
                .into_iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name.as_bytes()))
                .map(|(_, v)| v)
        })
        .collect()
}

/// A seeded generator (fastrand's), with the corpus's own mutations: the
/// same strings on every run.
pub(crate) struct Rng(fastrand::Rng);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(fastrand::Rng::with_seed(seed))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0.u64(..)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0.usize(..n)
    }

    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        self.0.shuffle(items);
    }

    /// Up to `max` pieces of `pieces` glued together, some cut short or
    /// changed in case, some bytes replaced by random ones.
    pub(crate) fn glue(&mut self, pieces: &[&[u8]], max: usize) -> Vec<u8> {
        let mut s = Vec::new();
        for _ in 0..self.below(max + 1) {
            let p = pieces[self.below(pieces.len())];
            let p = match self.below(6) {
                0 => &p[..self.below(p.len() + 1)],
                1 => &p[self.below(p.len() + 1)..],
                _ => p,
            };
            let start = s.len();
            s.extend_from_slice(p);
            match self.below(8) {
                0 => s[start..].make_ascii_uppercase(),
                1 => s[start..].make_ascii_lowercase(),
                2 if s.len() > start => {
                    let i = start + self.below(s.len() - start);
                    s[i] = self.next() as u8;
                }
                _ => {}
            }
        }
        s
    }
}
