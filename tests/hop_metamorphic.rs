//! Metamorphic tests of the deployment profiles (issue 38): for each
//! `proxy_profile`, whatever the profile says its hop owns — the headers it
//! adds, where it puts them, hop-by-hop headers, header-name letter case
//! where it folds it, the order where it does not keep the client's, the
//! HTTP version and its own TLS connection to nginx — varied over real
//! browser heads (and scripts') from the corpus never changes the verdict,
//! its grade, its reasons or the score, from a trusted peer. From an
//! untrusted peer, the header a trusted hop reports the client's JA4 in
//! changes nothing, whatever its value, case or position.
//!
//! Table-driven over tests/fixtures/real_clients/corpus.jsonl (a stride
//! sample of every family), each variant seeded by the row, so a failure
//! names the row and the variant and reproduces.

use std::path::Path;

use edgeguard::features::{Grade, Reasons, TlsFacts};
use edgeguard::gate::{self, Job, Scratch};
use edgeguard::headers::Header;
use edgeguard::hop::{Profile, Spec, HOP_BY_HOP, PROFILES};
use edgeguard::load::Config;
use edgeguard::outcome::Outcome;
use edgeguard::tls::Family;

const NOW: u64 = 1_800_000_000;
/// The trusted hop's address (`trusted_proxies`), the client's (nginx's
/// realip set `$remote_addr` to it) and an address nobody trusts.
const PEER: &str = "10.0.0.5";
const CLIENT: &str = "198.51.100.23";
const UNTRUSTED: &str = "203.0.113.7";
/// The header a trusted hop reports the client's JA4 in, for profiles
/// whose vendor has none by default.
const JA4_HEADER: &str = "X-Client-JA4";
/// Chromium's JA4, curl's (OpenSSL 3.0), and the hop's own connection's.
const CHROME_JA4: &str = "t13d1516h2_8daaf6152771_e5627efa2ab1";
const CURL_JA4: &str = "t13d3112h2_e8f1e7e78f70_6bebaf5329ac";
/// Every STRIDE-th row of each family (and at least its first).
const STRIDE: usize = 40;
/// Variants per row and profile.
const VARIANTS: u64 = 6;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

struct Row {
    line: usize,
    family: String,
    label: String,
    method: String,
    uri: String,
    version: u16,
    headers: Vec<(String, String)>,
}

fn rows() -> Vec<Row> {
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/real_clients/corpus.jsonl")).unwrap();
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let s = |k: &str| v[k].as_str().unwrap().to_owned();
        let n = seen.entry(s("family") + &s("label")).or_default();
        *n += 1;
        if !(*n - 1).is_multiple_of(STRIDE) {
            continue;
        }
        out.push(Row {
            line: i + 1,
            family: s("family"),
            label: s("label"),
            method: s("method"),
            uri: s("uri"),
            version: match v["version"].as_str().unwrap() {
                "HTTP/2.0" => 20,
                "HTTP/1.0" => 10,
                _ => 11,
            },
            headers: v["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
                .collect(),
        });
    }
    out
}

fn config(spec: &Spec) -> Config {
    let ja4 = if spec.ja4_header.is_none() {
        format!(r#", "tls_fingerprint_header": "{JA4_HEADER}""#)
    } else {
        String::new()
    };
    let json = format!(
        r#"{{"internal_headers": "nginx-conf/internal-headers.txt",
            "models": {{"bot": "models/bot.json"}}, "mode": "block",
            "trusted_proxies": ["10.0.0.0/24"], "proxy_profile": "{}"{ja4}}}"#,
        spec.name
    );
    Config::parse("t.json", root(), json.as_bytes()).unwrap()
}

/// What a decision comes to: the action, how sure, why, the score.
#[derive(Debug, PartialEq)]
struct Verdict {
    action: Outcome,
    grade: Grade,
    reasons: Reasons,
    score: u64,
}

/// A head as it reaches nginx: the HTTP version, the headers in order,
/// the TLS facts of the connection (the hop's own, behind a hop).
struct Head {
    version: u16,
    headers: Vec<(String, String)>,
    tls: Option<TlsFacts<'static>>,
}

/// The row's request with `head`, from `peer`, through the gate.
fn verdict(cfg: &Config, row: &Row, head: &Head, peer: &str, scratch: &mut Scratch) -> Verdict {
    let views: Vec<Header<'_>> = head
        .headers
        .iter()
        .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
        .collect();
    let req = gate::Incoming::new(
        row.method.as_bytes(),
        row.uri.as_bytes(),
        head.version,
        CLIENT.as_bytes(),
        &views,
        head.tls,
    )
    .with_peer(peer.as_bytes());
    let e = gate::run(cfg.location(), &req, Job::Access, NOW, scratch).unwrap();
    Verdict {
        action: e.action,
        grade: e.grade,
        reasons: e.reasons,
        score: e.scores.unwrap()[0].to_bits(),
    }
}

/// A small seeded generator: the variants reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

fn is_hop_by_hop(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    HOP_BY_HOP.contains(&n.as_str()) || n.starts_with("proxy-")
}

/// `name` in one of the spellings hops send: lower case (HTTP/2, HAProxy),
/// Go's canonical form, upper case.
fn spelled(name: &str, rng: &mut Rng) -> String {
    match rng.below(3) {
        0 => name.to_ascii_lowercase(),
        1 => name
            .split('-')
            .map(|w| {
                let mut c = w.chars();
                c.next().map_or(String::new(), |f| {
                    f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase()
                })
            })
            .collect::<Vec<_>>()
            .join("-"),
        _ => name.to_ascii_uppercase(),
    }
}

/// The headers the hop of `spec` adds: each it names, one of each prefix,
/// and hop-by-hop headers of its own connection.
fn hop_headers(spec: &Spec, rng: &mut Rng) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = spec
        .adds
        .iter()
        .map(|n| (n.to_string(), format!("{CLIENT}, 10.0.0.5")))
        .collect();
    out.extend(
        spec.prefixes
            .iter()
            .map(|p| (format!("{p}ray"), "8d2c1e4b6a7f0c3e-FRA".to_string())),
    );
    let hop_by_hop = [
        ("Connection", "keep-alive"),
        ("Connection", "close"),
        ("Keep-Alive", "timeout=5"),
        ("TE", "trailers"),
        ("Proxy-Connection", "keep-alive"),
    ];
    for (n, v) in hop_by_hop {
        if rng.coin() {
            out.push((n.into(), v.into()));
        }
    }
    out
}

/// The row as `spec`'s hop could deliver it: its own headers at the front,
/// at the end or among the client's, hop-by-hop headers its own, names
/// folded where it folds them, the order its own where it does not keep
/// the client's, its HTTP version, and its own TLS to nginx, if any.
fn delivered(spec: &Spec, row: &Row, rng: &mut Rng) -> Head {
    let mut client: Vec<(String, String)> = row
        .headers
        .iter()
        .filter(|(n, _)| !is_hop_by_hop(n))
        .cloned()
        .collect();
    if spec.folds_case {
        let fold = rng.below(3);
        for h in &mut client {
            let mut r = Rng(fold as u64 + 1);
            h.0 = spelled(&h.0, &mut r);
        }
    }
    if !spec.keeps_order {
        if rng.coin() {
            client.sort_by_key(|h| h.0.to_ascii_lowercase());
        } else {
            for i in (1..client.len()).rev() {
                client.swap(i, rng.below(i + 1));
            }
        }
    }
    let mut headers = client;
    for (n, v) in hop_headers(spec, rng) {
        let at = match rng.below(3) {
            0 => 0,
            1 => headers.len(),
            _ => rng.below(headers.len() + 1),
        };
        headers.insert(at, (spelled(&n, rng), v));
    }
    let version = [10, 11, 20][rng.below(3)];
    let tls = rng
        .coin()
        .then(|| TlsFacts::new(CURL_JA4.as_bytes(), Family::Openssl))
        .flatten();
    Head {
        version,
        headers,
        tls,
    }
}

#[test]
fn what_a_trusted_hop_owns_never_changes_the_verdict() {
    let rows = rows();
    assert!(rows.len() > 200, "{} rows", rows.len());
    let mut scratch = Scratch::decisions_only();
    let mut checked = 0;
    for spec in PROFILES.iter().filter(|s| s.profile != Profile::Direct) {
        let cfg = config(spec);
        let mut changed_direct = 0;
        let direct = config(&PROFILES[0]);
        for row in &rows {
            let mut rng = Rng(row.line as u64 * 0x9e37_79b9 + spec.name.len() as u64 + 1);
            let head = delivered(spec, row, &mut rng);
            let first = verdict(&cfg, row, &head, PEER, &mut scratch);
            // The variant is evidence judged as sent: the test varies
            // what would count.
            let as_sent = verdict(&direct, row, &head, PEER, &mut scratch);
            changed_direct += usize::from(as_sent != first);
            for k in 1..VARIANTS {
                let head = delivered(spec, row, &mut rng);
                let got = verdict(&cfg, row, &head, PEER, &mut scratch);
                assert_eq!(
                    got, first,
                    "{} profile, corpus line {} ({} {}), variant {k}: {:?}",
                    spec.name, row.line, row.label, row.family, head.headers
                );
                checked += 1;
            }
            // A person passes behind their hop, a script does not.
            if row.label == "human" {
                assert_eq!(first.grade, Grade::None, "{} line {}", spec.name, row.line);
            }
        }
        assert!(
            changed_direct * 2 > rows.len(),
            "{}: only {changed_direct} of {} variants differ judged as sent",
            spec.name,
            rows.len()
        );
    }
    assert!(checked > 1000);
}

#[test]
fn the_direct_profile_judges_every_peer_alike() {
    let cfg = config(&PROFILES[0]);
    let mut scratch = Scratch::decisions_only();
    for row in rows() {
        let head = Head {
            version: row.version,
            headers: row.headers.clone(),
            tls: None,
        };
        let of = |peer: &str, scratch: &mut Scratch| verdict(&cfg, &row, &head, peer, scratch);
        let first = of(CLIENT, &mut scratch);
        for peer in [PEER, UNTRUSTED, ""] {
            assert_eq!(
                of(peer, &mut scratch),
                first,
                "line {} via {peer:?}",
                row.line
            );
        }
    }
}

#[test]
fn a_fingerprint_header_from_an_untrusted_peer_changes_nothing() {
    let rows = rows();
    let mut scratch = Scratch::decisions_only();
    for spec in PROFILES {
        let cfg = config(spec);
        let name = spec.ja4_header.unwrap_or(JA4_HEADER);
        for row in &rows {
            let mut rng = Rng(row.line as u64 * 0x85eb_ca6b + 7);
            // The head as the client sent it over TLS: its own stack's
            // facts (curl's for a script, Chromium's otherwise).
            let own = if row.label == "human" {
                TlsFacts::new(CHROME_JA4.as_bytes(), Family::Boringssl)
            } else {
                TlsFacts::new(CURL_JA4.as_bytes(), Family::Openssl)
            };
            for peer in [UNTRUSTED, CLIENT] {
                let mut head = Head {
                    version: row.version,
                    headers: row.headers.clone(),
                    tls: own,
                };
                let plain = verdict(&cfg, row, &head, peer, &mut scratch);
                for value in [CHROME_JA4, CURL_JA4, "garbage", ""] {
                    head.headers = row.headers.clone();
                    let at =
                        [0, head.headers.len(), rng.below(head.headers.len() + 1)][rng.below(3)];
                    head.headers
                        .insert(at, (spelled(name, &mut rng), value.into()));
                    if rng.coin() {
                        head.headers.push((name.into(), CHROME_JA4.into()));
                    }
                    let got = verdict(&cfg, row, &head, peer, &mut scratch);
                    assert_eq!(
                        got, plain,
                        "{} profile, corpus line {} from {peer}: {:?}",
                        spec.name, row.line, head.headers
                    );
                }
            }
        }
    }
}
