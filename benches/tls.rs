//! JA4 per ClientHello, on the ClientHellos this machine's clients send
//! (`tests/fixtures/tls/local-clienthellos.txt`: curl, Python, Chromium,
//! Go, Node): parsing alone, parsing + JA4, and JA4 of a hostile hello (the
//! most ciphers a ClientHello can carry). ns per ClientHello.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use edgeguard::tls::{ClientHello, Fingerprint, SortRoom};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn load() -> Vec<(String, Vec<u8>)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tls/local-clienthellos.txt"
    ))
    .unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let client = l.split(' ').next().unwrap().to_owned();
            (client, hex(l.rsplit(' ').next().unwrap()))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let hellos = load();
    let mut scratch = SortRoom::default();
    let mut g = c.benchmark_group("tls");
    for (client, bytes) in &hellos {
        g.bench_function(format!("parse/{client}"), |b| {
            b.iter(|| {
                ClientHello::parse_record(black_box(bytes))
                    .unwrap()
                    .ciphers
                    .len()
            })
        });
        g.bench_function(format!("parse+ja4/{client}"), |b| {
            b.iter(|| {
                let h = ClientHello::parse_record(black_box(bytes)).unwrap();
                Fingerprint::compute(&h, &mut scratch).ciphers
            })
        });
    }
    // 32 767 ciphers: what one hostile ClientHello can make the sort do.
    let mut body = vec![3, 3];
    body.extend([0u8; 32]);
    body.push(0);
    body.extend(65_534u16.to_be_bytes());
    for i in 0..32_767u32 {
        body.extend(((i * 7919) as u16).to_be_bytes());
    }
    body.extend([1, 0]);
    let mut msg = vec![1];
    msg.extend(&(body.len() as u32).to_be_bytes()[1..]);
    msg.extend(body);
    g.bench_function("parse+ja4/32767-ciphers", |b| {
        b.iter(|| {
            let h = ClientHello::parse_handshake(black_box(&msg)).unwrap();
            Fingerprint::compute(&h, &mut scratch).ciphers
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
