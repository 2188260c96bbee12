//! The signals snapshot: per fingerprint key, the fleet's counts over the
//! last window, as `edgeguard signals` publishes them and nginx and replay
//! load them.
//!
//! The file (documented in docs/signals.md) is one JSON object:
//!
//! ```json
//! {"format": "edgeguard-signals", "version": 1,
//!  "generated": 1796400000, "window": 3600,
//!  "entries": [
//!   {"kind": "ja4", "key": "t13d1516h2_8daaf6152771_02713d6af862",
//!    "requests": 1200, "prefixes24": 310, "prefixes48": 12,
//!    "user_agents": 3, "flagged": 4, "challenges": 20, "solved": 18,
//!    "cleared": 400}
//!  ]}
//! ```
//!
//! `generated` is the Unix time the counts end at, `window` the seconds they
//! cover. Each entry is one key ([`super::key`]) and its [`Counts`]. The same
//! entry object is the value of a record in the compacted topic (its Kafka
//! key is `kind:key`). Loading refuses a file that does not follow this,
//! naming the file and the field (`entries[3].solved`), as the verified-bots
//! file is refused; the previous snapshot stays in force.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::key::{self, Kind, KEY_CAP};
use crate::features::user_agent::Family;

/// The `format` every snapshot file names.
pub const FORMAT: &str = "edgeguard-signals";
/// The only `version` this build reads.
pub const VERSION: u32 = 1;
/// The most entries a snapshot may hold (each costs about 150 bytes in
/// every process that loads it).
pub const MAX_ENTRIES: usize = 2_000_000;

/// What the fleet saw of one key over the window. Distinct counts are
/// HyperLogLog estimates, capped at `requests`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Requests that carried the key.
    pub requests: u64,
    /// Distinct IPv4 client /24 prefixes among them.
    pub prefixes24: u64,
    /// Distinct IPv6 client /48 prefixes among them.
    pub prefixes48: u64,
    /// Distinct User-Agent values among them.
    pub user_agents: u64,
    /// Requests a model flagged.
    pub flagged: u64,
    /// Challenges served (pages and problem documents).
    pub challenges: u64,
    /// Challenges solved (answers that earned a clearance).
    pub solved: u64,
    /// Requests that carried a valid clearance cookie.
    pub cleared: u64,
}

impl Counts {
    /// Distinct client prefixes, IPv4 /24 and IPv6 /48 together.
    pub fn prefixes(&self) -> u64 {
        self.prefixes24 + self.prefixes48
    }

    /// The share of requests a model flagged.
    pub fn flagged_share(&self) -> f64 {
        share(self.flagged, self.requests)
    }

    /// The share of served challenges that were solved (at most 1: a solve
    /// can outlive, in the window, the challenge it answered); `None` when
    /// no challenge was served.
    pub fn solved_share(&self) -> Option<f64> {
        (self.challenges > 0).then(|| share(self.solved, self.challenges).min(1.0))
    }

    /// The share of requests that carried a clearance.
    pub fn cleared_share(&self) -> f64 {
        share(self.cleared, self.requests)
    }

    /// Each count's field name and value, in file order.
    pub fn fields(&self) -> [(&'static str, u64); 8] {
        [
            ("requests", self.requests),
            ("prefixes24", self.prefixes24),
            ("prefixes48", self.prefixes48),
            ("user_agents", self.user_agents),
            ("flagged", self.flagged),
            ("challenges", self.challenges),
            ("solved", self.solved),
            ("cleared", self.cleared),
        ]
    }

    /// Why these counts cannot be true of one key, if they cannot: the
    /// field and the reason.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.requests == 0 {
            return Err(("requests", "must be at least 1".into()));
        }
        for (name, v) in self.fields().into_iter().skip(1) {
            if v > self.requests {
                return Err((
                    name,
                    format!("{v} is more than the entry's {} requests", self.requests),
                ));
            }
        }
        if self.prefixes() > self.requests {
            return Err((
                "prefixes48",
                format!(
                    "prefixes24 + prefixes48 = {} is more than the entry's {} requests",
                    self.prefixes(),
                    self.requests
                ),
            ));
        }
        Ok(())
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// One entry as the file and the compacted topic write it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// `ja4` or `headers`.
    pub kind: String,
    /// The key's text.
    pub key: String,
    /// [`Counts::requests`].
    pub requests: u64,
    /// [`Counts::prefixes24`].
    pub prefixes24: u64,
    /// [`Counts::prefixes48`].
    pub prefixes48: u64,
    /// [`Counts::user_agents`].
    pub user_agents: u64,
    /// [`Counts::flagged`].
    pub flagged: u64,
    /// [`Counts::challenges`].
    pub challenges: u64,
    /// [`Counts::solved`].
    pub solved: u64,
    /// [`Counts::cleared`].
    pub cleared: u64,
}

impl Record {
    /// The record of `key` of `kind` with `counts`.
    pub fn new(kind: Kind, key: &str, c: &Counts) -> Record {
        Record {
            kind: kind.as_str().into(),
            key: key.into(),
            requests: c.requests,
            prefixes24: c.prefixes24,
            prefixes48: c.prefixes48,
            user_agents: c.user_agents,
            flagged: c.flagged,
            challenges: c.challenges,
            solved: c.solved,
            cleared: c.cleared,
        }
    }

    /// The kind, key and counts, checked: the field and the reason
    /// otherwise.
    pub fn parts(&self) -> Result<(Kind, &str, Counts), (&'static str, String)> {
        let kind = Kind::from_name(&self.kind).ok_or_else(|| {
            (
                "kind",
                format!("{:?} is not a key kind (ja4 or headers)", self.kind),
            )
        })?;
        key::check(kind, &self.key).map_err(|m| ("key", m))?;
        let c = Counts {
            requests: self.requests,
            prefixes24: self.prefixes24,
            prefixes48: self.prefixes48,
            user_agents: self.user_agents,
            flagged: self.flagged,
            challenges: self.challenges,
            solved: self.solved,
            cleared: self.cleared,
        };
        c.check()?;
        Ok((kind, &self.key, c))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: String,
    version: u32,
    generated: u64,
    window: u64,
    entries: Vec<Record>,
}

/// A snapshot that was refused: the file, the field and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotError(pub String);

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SnapshotError {}

/// Per key, the fleet's counts over `window` seconds up to `generated`.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    generated: u64,
    window: u64,
    maps: [HashMap<Box<[u8]>, Counts>; 2],
}

impl Snapshot {
    /// An empty snapshot of counts over `window` seconds up to
    /// `generated` (Unix seconds).
    pub fn new(generated: u64, window: u64) -> Snapshot {
        Snapshot {
            generated,
            window,
            maps: Default::default(),
        }
    }

    /// Adds `key` of `kind` with `counts`, checked as a file's entry is.
    pub fn insert(&mut self, kind: Kind, key: &str, counts: Counts) -> Result<(), String> {
        key::check(kind, key)?;
        counts.check().map_err(|(f, m)| format!("{f}: {m}"))?;
        if self.len() >= MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} entries"));
        }
        let map = &mut self.maps[kind as usize];
        if map.contains_key(key.as_bytes()) {
            return Err(format!("{} key {key:?} is listed twice", kind.as_str()));
        }
        map.insert(key.as_bytes().into(), counts);
        Ok(())
    }

    /// Reads the snapshot file at `path`.
    pub fn load(path: &Path) -> Result<Snapshot, SnapshotError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| SnapshotError(format!("{name}: {e}")))?;
        Self::from_slice(&bytes, &name)
    }

    /// Parses a snapshot file's bytes; `name` (the file) starts every error.
    pub fn from_slice(bytes: &[u8], name: &str) -> Result<Snapshot, SnapshotError> {
        let err = |field: &str, m: &str| SnapshotError(format!("{name}: {field}: {m}"));
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(SnapshotError(format!(
                "{name}: not a signals snapshot (a JSON object with \"format\": \"{FORMAT}\")"
            )));
        }
        let de = &mut serde_json::Deserializer::from_slice(bytes);
        let file: File = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." || path == "?" {
                SnapshotError(format!("{name}: {inner}"))
            } else {
                err(&path, &inner.to_string())
            }
        })?;
        if file.format != FORMAT {
            return Err(err(
                "format",
                &format!("{:?} is not {FORMAT:?}", file.format),
            ));
        }
        if file.version != VERSION {
            return Err(err(
                "version",
                &format!(
                    "{} is not a version this build reads ({VERSION})",
                    file.version
                ),
            ));
        }
        if file.window == 0 {
            return Err(err("window", "must be at least 1 second"));
        }
        if file.entries.len() > MAX_ENTRIES {
            return Err(err(
                "entries",
                &format!("{} entries, more than {MAX_ENTRIES}", file.entries.len()),
            ));
        }
        let mut s = Snapshot::new(file.generated, file.window);
        for (i, r) in file.entries.iter().enumerate() {
            let (kind, key, counts) = r
                .parts()
                .map_err(|(f, m)| err(&format!("entries[{i}].{f}"), &m))?;
            s.insert(kind, key, counts)
                .map_err(|m| err(&format!("entries[{i}].key"), &m))?;
        }
        Ok(s)
    }

    /// Writes the file: entries sorted by kind and key, one per line, so
    /// two snapshots diff line by line.
    pub fn write(&self, mut w: impl Write) -> io::Result<()> {
        write!(
            w,
            "{{\"format\":\"{FORMAT}\",\"version\":{VERSION},\"generated\":{},\"window\":{},\"entries\":[",
            self.generated, self.window
        )?;
        let mut first = true;
        for (kind, key, c) in self.sorted() {
            w.write_all(if first { b"\n" } else { b",\n" })?;
            first = false;
            serde_json::to_writer(&mut w, &Record::new(kind, key, c))?;
        }
        w.write_all(b"\n]}\n")
    }

    /// Every entry, sorted by kind and key.
    pub fn sorted(&self) -> Vec<(Kind, &str, &Counts)> {
        let mut v: Vec<_> = Kind::ALL
            .into_iter()
            .flat_map(|k| {
                self.maps[k as usize].iter().map(move |(key, c)| {
                    // Keys are checked text when inserted.
                    (k, std::str::from_utf8(key).unwrap_or_default(), c)
                })
            })
            .collect();
        v.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        v
    }

    /// The counts of `key` of `kind`. Allocates nothing.
    pub fn get(&self, kind: Kind, key: &[u8]) -> Option<&Counts> {
        self.maps[kind as usize].get(key)
    }

    /// The counts of a connection's JA4.
    pub fn ja4(&self, ja4: &[u8]) -> Option<&Counts> {
        self.get(Kind::Ja4, ja4)
    }

    /// The counts of a request claiming `family` with header order
    /// `order`. Allocates nothing: the key is built on the stack.
    pub fn headers(&self, family: Family, order: &[u8]) -> Option<&Counts> {
        let mut buf = [0; KEY_CAP];
        self.get(Kind::Headers, key::headers_key(family, order, &mut buf))
    }

    /// The Unix time the counts end at.
    pub fn generated(&self) -> u64 {
        self.generated
    }

    /// The seconds the counts cover.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// How many keys the snapshot holds.
    pub fn len(&self) -> usize {
        self.maps.iter().map(HashMap::len).sum()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JA4: &str = "t13d1516h2_8daaf6152771_02713d6af862";

    fn counts() -> Counts {
        Counts {
            requests: 100,
            prefixes24: 40,
            prefixes48: 2,
            user_agents: 3,
            flagged: 5,
            challenges: 10,
            solved: 9,
            cleared: 50,
        }
    }

    #[test]
    fn writes_what_it_reads() {
        let mut s = Snapshot::new(1_796_400_000, 3600);
        s.insert(Kind::Ja4, JA4, counts()).unwrap();
        s.insert(Kind::Headers, "chrome:hCMPuaSODel", counts())
            .unwrap();
        s.insert(
            Kind::Headers,
            "curl:hua",
            Counts {
                requests: 1,
                ..Default::default()
            },
        )
        .unwrap();
        let mut out = Vec::new();
        s.write(&mut out).unwrap();
        let back = Snapshot::from_slice(&out, "t.json").unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back.generated(), 1_796_400_000);
        assert_eq!(back.window(), 3600);
        assert_eq!(back.ja4(JA4.as_bytes()), Some(&counts()));
        assert_eq!(
            back.headers(Family::Chrome, b"hCMPiuaSOUDrel"),
            Some(&counts())
        );
        assert_eq!(back.headers(Family::Firefox, b"hCMPuaSODel"), None);
        let mut again = Vec::new();
        back.write(&mut again).unwrap();
        assert_eq!(out, again);
    }

    #[test]
    fn shares() {
        let c = counts();
        assert_eq!(c.flagged_share(), 0.05);
        assert_eq!(c.solved_share(), Some(0.9));
        assert_eq!(c.cleared_share(), 0.5);
        assert_eq!(
            Counts {
                requests: 1,
                ..Default::default()
            }
            .solved_share(),
            None
        );
        let over = Counts {
            challenges: 1,
            solved: 3,
            ..c
        };
        assert_eq!(over.solved_share(), Some(1.0));
    }

    fn refused(text: &str) -> String {
        Snapshot::from_slice(text.as_bytes(), "s.json")
            .unwrap_err()
            .0
    }

    fn file(entries: &str) -> String {
        format!(
            r#"{{"format":"edgeguard-signals","version":1,"generated":5,"window":3600,"entries":[{entries}]}}"#
        )
    }

    fn entry(kind: &str, key: &str, extra: &str) -> String {
        let base = r#""requests":10,"prefixes24":1,"prefixes48":0,"user_agents":1,"flagged":0,"challenges":0,"solved":0,"cleared":0"#;
        let mut fields: Vec<String> = base.split(',').map(str::to_owned).collect();
        for e in extra.split(',').filter(|e| !e.is_empty()) {
            let name = e.split(':').next().unwrap();
            fields.retain(|f| f.split(':').next().unwrap() != name);
            fields.push(e.into());
        }
        format!(r#"{{"kind":"{kind}","key":"{key}",{}}}"#, fields.join(","))
    }

    #[test]
    fn refuses_bad_files_naming_the_field() {
        let cases = [
            (
                file(&entry("ja4", JA4, r#""solved":11"#)),
                "s.json: entries[0].solved: 11 is more than",
            ),
            (file(&entry("tls", JA4, "")), "s.json: entries[0].kind:"),
            (file(&entry("ja4", "abc", "")), "s.json: entries[0].key:"),
            (
                file(&entry("headers", "chromium:hu", "")),
                "s.json: entries[0].key:",
            ),
            (
                file(&entry(
                    "ja4",
                    JA4,
                    r#""requests":0,"prefixes24":0,"user_agents":0"#,
                )),
                "s.json: entries[0].requests: must be at least 1",
            ),
            (
                file(&entry("ja4", JA4, r#""prefixes24":6,"prefixes48":6"#)),
                "s.json: entries[0].prefixes48:",
            ),
            (
                file(&entry("ja4", JA4, r#""requests":-1"#)),
                "s.json: entries[0].requests:",
            ),
            (
                file(&entry("ja4", JA4, r#""extra":1"#)),
                "s.json: entries[0].extra: unknown field",
            ),
            (
                file(&format!(
                    "{},{}",
                    entry("ja4", JA4, ""),
                    entry("ja4", JA4, "")
                )),
                "s.json: entries[1].key: ja4 key",
            ),
            (
                file("").replace("edgeguard-signals", "x"),
                "s.json: format:",
            ),
            (
                file("").replace(r#""version":1"#, r#""version":2"#),
                "s.json: version: 2 is not",
            ),
            (
                file("").replace(r#""window":3600"#, r#""window":0"#),
                "s.json: window:",
            ),
            ("{".into(), "s.json: EOF"),
            ("[]".into(), "s.json: not a signals snapshot"),
        ];
        for (text, want) in cases {
            let got = refused(&text);
            assert!(got.starts_with(want), "{text}\n got {got}\nwant {want}");
        }
        Snapshot::from_slice(file("").as_bytes(), "s.json").unwrap();
    }
}
