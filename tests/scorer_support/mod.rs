//! Requests of the traffic fixture (`tests/fixtures/traffic/sample.jsonl`,
//! written by `models/train.py`) and the scorer's model files, shared by the
//! feature and scorer tests and `benches/scorer.rs`.

#![allow(dead_code)] // each user takes a different subset

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use edgeguard::features::{FeatureVector, Request, TlsFacts};
use edgeguard::headers::Header;
use edgeguard::scorer::Scorer;
use edgeguard::tls::Family;
use serde_json::Value;

/// A path under the crate root.
pub fn root(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The shipped models, as `edgeguard.conf` names them.
pub fn shipped() -> Vec<(&'static str, PathBuf)> {
    vec![
        ("bot", root("models/bot.json")),
        ("spoof", root("models/spoof.json")),
    ]
}

/// One request with owned bytes, its line in the file, and the official
/// CatBoost raw predictions stored with it (empty for plain request files).
pub struct OwnedRequest {
    pub line: usize,
    pub method: String,
    pub uri: String,
    pub version: u16,
    pub client: String,
    pub headers: Vec<(String, String)>,
    pub expected_raw: BTreeMap<String, f64>,
    /// The connection's `edgeguard_ja4` and `edgeguard_tls_family`, if any.
    pub tls: Option<(String, Family)>,
    /// The request line as read (the input format of `edgeguard features`).
    pub json: String,
}

impl OwnedRequest {
    /// Headers as nginx hands them over, viewing this request's strings.
    pub fn ffi_headers(&self) -> Vec<Header<'_>> {
        self.headers
            .iter()
            .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
            .collect()
    }

    /// The request viewing this one's bytes and `headers` (from
    /// [`OwnedRequest::ffi_headers`] of the same request).
    pub fn view<'a>(&'a self, headers: &'a [Header<'a>]) -> Request<'a> {
        Request::new(
            self.method.as_bytes(),
            self.uri.as_bytes(),
            self.version,
            self.client.as_bytes(),
            headers,
        )
        .with_tls(self.tls.as_ref().map(|(ja4, family)| {
            TlsFacts::new(ja4.as_bytes(), *family).expect("the fixture's JA4")
        }))
    }
}

/// `"1.1"`, `"HTTP/2.0"`, `2` -> 11, 20, 20.
fn version(v: &Value) -> u16 {
    let s = match v {
        Value::String(s) => s.trim_start_matches("HTTP/").to_string(),
        other => other.to_string(),
    };
    let x: f64 = s.parse().expect("version");
    (x * 10.0).round() as u16
}

/// Every request of a JSON Lines file in `edgeguard features`' input format.
pub fn read_requests(path: &Path) -> Vec<OwnedRequest> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            let row: Value = serde_json::from_str(line).expect("request line");
            let s = |k: &str| row[k].as_str().expect(k).to_owned();
            let expected_raw = row["expected_raw"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_f64().expect("raw")))
                        .collect()
                })
                .unwrap_or_default();
            OwnedRequest {
                line: n + 1,
                method: s("method"),
                uri: s("uri"),
                version: version(&row["version"]),
                client: s("client"),
                headers: row["headers"]
                    .as_array()
                    .expect("headers")
                    .iter()
                    .map(|h| (h[0].as_str().unwrap().into(), h[1].as_str().unwrap().into()))
                    .collect(),
                expected_raw,
                tls: row["edgeguard_ja4"]
                    .as_str()
                    .filter(|j| !j.is_empty())
                    .map(|j| {
                        let family = row["edgeguard_tls_family"].as_str().unwrap_or("unknown");
                        (
                            j.to_owned(),
                            Family::from_name(family.as_bytes()).expect("a TLS family"),
                        )
                    }),
                json: line.to_owned(),
            }
        })
        .collect()
}

/// The traffic fixture's requests.
pub fn fixture_requests() -> Vec<OwnedRequest> {
    read_requests(&root("tests/fixtures/traffic/sample.jsonl"))
}

/// Each request's feature vector as `scorer` extracts it, for timing the
/// models apart from extraction.
pub fn extracted<'a>(scorer: &Scorer, views: &[Request<'a>]) -> Vec<FeatureVector<'a>> {
    views
        .iter()
        .map(|req| {
            let mut v = FeatureVector::new();
            scorer.extract(req, &mut v);
            v
        })
        .collect()
}
