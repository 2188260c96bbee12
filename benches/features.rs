//! Feature extraction per request, on the labelled requests of
//! `tests/fixtures/traffic/sample.jsonl` (browsers, crawlers, scripts,
//! spoofers): ns per request, all kinds mixed and per kind.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use edgeguard::features::{extract, header_order, user_agent, FeatureVector, Request};
use edgeguard::headers::Header;

struct Owned {
    kind: String,
    method: String,
    uri: String,
    version: u16,
    client: String,
    headers: Vec<(String, String)>,
}

fn load() -> Vec<Owned> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/traffic/sample.jsonl"
    ))
    .expect("tests/fixtures/traffic/sample.jsonl");
    text.lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).expect("fixture line");
            let s = |k: &str| row[k].as_str().unwrap_or_default().to_owned();
            let version = match row["version"].as_str().unwrap_or("1.1") {
                "1.0" => 10,
                "2" => 20,
                "3" => 30,
                _ => 11,
            };
            let headers = row["headers"]
                .as_array()
                .expect("headers")
                .iter()
                .map(|h| {
                    (
                        h[0].as_str().unwrap().to_owned(),
                        h[1].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            Owned {
                kind: s("kind"),
                method: s("method"),
                uri: s("uri"),
                version,
                client: s("client"),
                headers,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let owned = load();
    let headers: Vec<Vec<Header<'_>>> = owned
        .iter()
        .map(|o| {
            o.headers
                .iter()
                .map(|(k, v)| Header::new(k.as_bytes(), v.as_bytes()))
                .collect()
        })
        .collect();
    // SAFETY: the headers view `owned`, alive for the whole bench.
    let requests: Vec<(String, Request<'_>)> = owned
        .iter()
        .zip(&headers)
        .map(|(o, h)| {
            let req = Request::new(
                o.method.as_bytes(),
                o.uri.as_bytes(),
                o.version,
                o.client.as_bytes(),
                h,
            );
            (o.kind.clone(), req)
        })
        .collect();

    let mut group = c.benchmark_group("features/extract");
    let mut groups: Vec<(&str, Vec<Request<'_>>)> =
        vec![("all", requests.iter().map(|(_, r)| *r).collect())];
    for kind in ["browser", "spoofer", "crawler", "curl"] {
        groups.push((
            kind,
            requests
                .iter()
                .filter(|(k, _)| k == kind)
                .map(|(_, r)| *r)
                .collect(),
        ));
    }
    for (name, reqs) in &groups {
        if reqs.is_empty() {
            continue;
        }
        group.throughput(Throughput::Elements(reqs.len() as u64));
        group.bench_function(*name, |b| {
            let mut v = FeatureVector::new();
            b.iter(|| {
                for r in reqs {
                    extract(black_box(r), &mut v);
                    black_box(v.floats());
                }
            })
        });
    }
    group.finish();

    // The parts, on the browser requests: where the time of one request goes.
    let browsers: Vec<&Request<'_>> = requests
        .iter()
        .filter(|(k, _)| k == "browser")
        .map(|(_, r)| r)
        .collect();
    let uas: Vec<&[u8]> = browsers
        .iter()
        .filter_map(|r| {
            r.headers()
                .find(|(n, _)| n.eq_ignore_ascii_case(b"user-agent"))
                .map(|(_, v)| v)
        })
        .collect();
    let mut parts = c.benchmark_group("features/parts");
    parts.throughput(Throughput::Elements(browsers.len() as u64));
    parts.bench_function("user_agent::parse", |b| {
        b.iter(|| {
            for ua in &uas {
                black_box(user_agent::parse(black_box(ua)));
            }
        })
    });
    parts.bench_function("header_order::code", |b| {
        b.iter(|| {
            for r in &browsers {
                for (name, _) in r.headers() {
                    black_box(header_order::code(black_box(name)));
                }
            }
        })
    });
    parts.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
