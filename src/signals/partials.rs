//! The fleet's first stage: what a slice of the request log adds to each
//! key, per bucket, as partial cells flushed every few seconds to the
//! partials topic, keyed `kind:key` so that every partial of one key lands
//! in one partition and so at one second-stage member, which merges them
//! into its window ([`super::window::Window::merge`]). Sketches merge
//! exactly, so the second stage holds what one process reading the whole
//! log would.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::key::{Kind, KEY_CAP};
use super::window::{Cell, Fold, Obs};

/// The longest `kind:key` text.
pub const TOPIC_KEY_CAP: usize = 8 + KEY_CAP;

/// One partial as the partials topic carries it (JSON).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partial {
    /// The seconds of the first stage's buckets: the second stage refuses
    /// a partial cut otherwise.
    pub bucket_secs: u64,
    /// The cell.
    pub cell: Cell,
}

/// The Kafka key of `key` of `kind`: `kind:key`.
pub fn topic_key<'b>(kind: Kind, key: &[u8], buf: &'b mut [u8; TOPIC_KEY_CAP]) -> &'b [u8] {
    let name = kind.as_str().as_bytes();
    let key = &key[..key.len().min(TOPIC_KEY_CAP - name.len() - 1)];
    let n = name.len() + 1 + key.len();
    buf[..name.len()].copy_from_slice(name);
    buf[name.len()] = b':';
    buf[name.len() + 1..n].copy_from_slice(key);
    &buf[..n]
}

/// The kind and key of a Kafka key `kind:key`.
pub fn parse_topic_key(k: &[u8]) -> Option<(Kind, &[u8])> {
    let colon = k.iter().position(|&b| b == b':')?;
    let kind = Kind::from_name(std::str::from_utf8(&k[..colon]).ok()?)?;
    Some((kind, &k[colon + 1..]))
}

/// Cells per `kind:key` since the last flush.
#[derive(Debug)]
pub struct Partials {
    bucket_secs: u64,
    cells: HashMap<Box<[u8]>, Vec<Cell>>,
}

impl Partials {
    /// Empty partials of buckets of `bucket_secs` seconds (at least 1).
    pub fn new(bucket_secs: u64) -> Partials {
        Partials {
            bucket_secs: bucket_secs.max(1),
            cells: HashMap::new(),
        }
    }

    /// Keys held.
    pub fn keys(&self) -> usize {
        self.cells.len()
    }

    /// Takes every cell: (`kind:key`, the partial).
    pub fn drain(&mut self) -> impl Iterator<Item = (Box<[u8]>, Partial)> + '_ {
        let bucket_secs = self.bucket_secs;
        self.cells.drain().flat_map(move |(k, cells)| {
            cells
                .into_iter()
                .map(move |cell| (k.clone(), Partial { bucket_secs, cell }))
        })
    }
}

impl Fold for Partials {
    fn fold(&mut self, kind: Kind, key: &[u8], o: &Obs<'_>) {
        let mut buf = [0; TOPIC_KEY_CAP];
        let k = topic_key(kind, key, &mut buf);
        let bucket = o.time / self.bucket_secs;
        if !self.cells.contains_key(k) {
            self.cells.insert(k.into(), Vec::new());
        }
        let Some(cells) = self.cells.get_mut(k) else {
            return;
        };
        match cells.iter_mut().find(|c| c.bucket == bucket) {
            Some(c) => c.add(o),
            None => {
                let mut c = Cell::new(bucket);
                c.add(o);
                cells.push(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signals::window::{Prefix, Settings, Window};

    #[test]
    fn topic_keys_round_trip() {
        let mut buf = [0; TOPIC_KEY_CAP];
        let k = topic_key(Kind::Headers, b"chrome:hCMP", &mut buf);
        assert_eq!(k, b"headers:chrome:hCMP");
        assert_eq!(
            parse_topic_key(k),
            Some((Kind::Headers, &b"chrome:hCMP"[..]))
        );
        assert_eq!(parse_topic_key(b"tls:x"), None);
        assert_eq!(parse_topic_key(b"ja4"), None);
    }

    #[test]
    fn flushed_partials_merge_into_the_window_one_stream_makes() {
        let settings = Settings {
            window: 600,
            buckets: 10,
            ..Settings::default()
        };
        let mut whole = Window::new(settings).unwrap();
        let mut merged = Window::new(settings).unwrap();
        let mut parts = [Partials::new(60), Partials::new(60)];
        let uas = ["a", "b", "c"];
        for i in 0..3000u32 {
            let o = Obs {
                time: 1_000 + u64::from(i) / 5,
                prefix: Some(Prefix::V4([1, (i >> 8) as u8, i as u8])),
                user_agent: uas[i as usize % 3].as_bytes(),
                flagged: i % 3 == 0,
                challenge: i % 4 == 0,
                solved: i % 8 == 0,
                cleared: i % 5 == 0,
            };
            whole.fold(Kind::Headers, b"curl:hua", &o);
            parts[(i % 7 == 0) as usize].fold(Kind::Headers, b"curl:hua", &o);
            // Flushes at odd moments.
            if i % 611 == 0 {
                for p in parts.iter_mut() {
                    flush(p, &mut merged);
                }
            }
        }
        for p in parts.iter_mut() {
            flush(p, &mut merged);
        }
        assert_eq!(
            whole.counts(Kind::Headers, b"curl:hua"),
            merged.counts(Kind::Headers, b"curl:hua")
        );
    }

    fn flush(p: &mut Partials, w: &mut Window) {
        for (k, partial) in p.drain() {
            let bytes = serde_json::to_vec(&partial).unwrap();
            let back: Partial = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(back.bucket_secs, 60);
            let (kind, key) = parse_topic_key(&k).unwrap();
            w.merge(kind, key, &back.cell);
        }
    }
}
