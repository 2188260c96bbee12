//! The profiles against real heads as each hop delivered them
//! (`tests/fixtures/hop/heads.jsonl`: corpus heads sent through a real
//! nginx load balancer, HAProxy 2.6 and Caddy 2.6 by
//! `tests/e2e/hop_support.py`), and the vendors' profiles against heads
//! built from their documentation.

use std::path::Path;

use super::*;
use crate::features::{FeatureVector, Float, EVIDENCE};
use crate::gate::{self, Job, Scratch};
use crate::load::Config;
use crate::outcome::Outcome;

const NOW: u64 = 1_800_000_000;
/// Chromium's JA4 (its cipher set is BoringSSL's).
const CHROME_JA4: &str = "t13d1516h2_8daaf6152771_e5627efa2ab1";
/// curl 7.88's (OpenSSL 3.0's cipher set).
const CURL_JA4: &str = "t13d3112h2_e8f1e7e78f70_6bebaf5329ac";
/// A cipher set no fixture records.
const UNKNOWN_JA4: &str = "t13d1516h2_000000000000_e5627efa2ab1";
const PEER: &str = "10.0.0.5";
const CLIENT: &str = "198.51.100.23";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A configuration of the shipped models with `extra` options. Ambiguous
/// verdicts block too: these tests pin what the evidence is (a person
/// behind an untrusted hop shows some), not how sure it is.
fn config(extra: &str) -> Config {
    let json = format!(
        r#"{{"internal_headers": "nginx-conf/internal-headers.txt",
            "models": {{"bot": "models/bot.json"}}, "mode": "block",
            "ambiguous": "block"{extra}}}"#
    );
    Config::parse("t.json", root(), json.as_bytes()).unwrap()
}

fn profile_config(profile: &str) -> Config {
    config(&format!(
        r#", "trusted_proxies": ["10.0.0.0/24"], "proxy_profile": "{profile}""#
    ))
}

/// One head as a hop delivered it.
struct Head {
    hop: String,
    label: String,
    family: String,
    headers: Vec<(String, String)>,
}

fn heads() -> Vec<Head> {
    let text = std::fs::read_to_string(root().join("tests/fixtures/hop/heads.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap().to_owned();
            Head {
                hop: s("hop"),
                label: s("label"),
                family: s("family"),
                headers: v["headers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        (
                            p[0].as_str().unwrap().to_owned(),
                            p[1].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect(),
            }
        })
        .collect()
}

fn views(headers: &[(String, String)]) -> Vec<Header<'_>> {
    headers
        .iter()
        .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
        .collect()
}

/// The evidence features that fired (non-zero, not NaN) on `v`.
fn fired(v: &FeatureVector<'_>) -> Vec<&'static str> {
    crate::features::FLOAT_FEATURES
        .iter()
        .zip(v.floats())
        .filter(|(spec, x)| EVIDENCE.contains(&spec.name) && **x != 0.0 && !x.is_nan())
        .map(|(spec, _)| spec.name)
        .collect()
}

/// The features `cfg` scores `headers` with, from `peer` (`tls`: nginx's
/// own TLS facts of the connection).
fn judged<'a>(
    cfg: &Config,
    headers: &'a [Header<'a>],
    peer: &str,
    tls: Option<TlsFacts<'a>>,
    buf: &'a mut HeaderBuf,
) -> FeatureVector<'a> {
    let http = features::Request::new(b"GET", b"/", 11, CLIENT.as_bytes(), headers).with_tls(tls);
    let relayed = cfg
        .location()
        .hop()
        .and_then(|h| h.relay(&http, headers, peer.as_bytes(), buf));
    let http = relayed.map_or(http, |r| r.http);
    let mut v = FeatureVector::new();
    cfg.scorer().unwrap().extract(&http, &mut v);
    v
}

/// The gate's whole run: action and bot score.
fn decide(cfg: &Config, headers: &[Header<'_>], peer: &str) -> (Outcome, f64) {
    let req = gate::Incoming::new(b"GET", b"/", 11, CLIENT.as_bytes(), headers, None)
        .with_peer(peer.as_bytes());
    let mut scratch = Scratch::decisions_only();
    let e = gate::run(cfg.location(), &req, Job::Access, NOW, &mut scratch).unwrap();
    (e.action, e.scores.unwrap()[0])
}

#[test]
fn people_through_each_real_hop_show_no_evidence_with_its_profile() {
    let heads = heads();
    for hop in ["nginx", "haproxy", "caddy"] {
        let cfg = profile_config(hop);
        let direct = config("");
        let (mut people, mut flagged_before) = (0, 0);
        for h in heads.iter().filter(|h| h.hop == hop && h.label == "human") {
            let hv = views(&h.headers);
            let mut buf = HeaderBuf::default();
            let v = judged(&cfg, &hv, PEER, None, &mut buf);
            assert!(fired(&v).is_empty(), "{hop} {}: {:?}", h.family, fired(&v));
            let (action, score) = decide(&cfg, &hv, PEER);
            assert_eq!(action, Outcome::Pass, "{hop} {} {score}", h.family);
            people += 1;
            // Without the profile the hop's head is what nginx judged
            // before: the hop's missing `Connection` blocks people.
            if decide(&direct, &hv, PEER).0 == Outcome::Block {
                flagged_before += 1;
            }
        }
        assert!(people >= 6, "{hop}: {people} heads");
        assert!(flagged_before > 0, "{hop}: the heads show the hop");
    }
}

#[test]
fn scripts_through_each_real_hop_are_still_blocked() {
    let heads = heads();
    for hop in ["nginx", "haproxy", "caddy"] {
        let cfg = profile_config(hop);
        let mut n = 0;
        for h in heads
            .iter()
            .filter(|h| h.hop == hop && h.label == "automated")
        {
            let hv = views(&h.headers);
            let (action, score) = decide(&cfg, &hv, PEER);
            assert_eq!(action, Outcome::Block, "{hop} {} {score}", h.family);
            n += 1;
        }
        assert!(n >= 2, "{hop}: {n} script heads");
    }
}

/// A real Chromium head (HTTP/2, from the corpus) as a vendor's edge
/// forwards it: its headers in `order` (sorted where the vendor's order is
/// unknown), names lower-cased, the vendor's own headers added.
fn vendor_head(order_sorted: bool, added: &[(&str, &str)]) -> Vec<(String, String)> {
    let chrome: &[(&str, &str)] = &[
        ("host", "shop.test"),
        ("sec-ch-ua", "\"Not:A-Brand\";v=\"8\", \"Chromium\";v=\"156\""),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"Linux\""),
        ("upgrade-insecure-requests", "1"),
        ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"),
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
        ("sec-fetch-site", "none"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-user", "?1"),
        ("sec-fetch-dest", "document"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("accept-language", "en-US,en;q=0.9"),
        ("priority", "u=0, i"),
    ];
    let mut out: Vec<(String, String)> = chrome
        .iter()
        .chain(added)
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    if order_sorted {
        out.sort();
    }
    out.push(("connection".into(), "keep-alive".into()));
    out
}

#[test]
fn vendor_profiles_leave_out_what_their_documentation_says_they_add() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        (
            "aws-alb",
            &[
                ("x-forwarded-for", CLIENT),
                ("x-forwarded-proto", "https"),
                ("x-forwarded-port", "443"),
                (
                    "x-amzn-trace-id",
                    "Root=1-67891233-abcdef012345678912345678",
                ),
            ],
        ),
        (
            "cloudfront",
            &[
                ("x-forwarded-for", CLIENT),
                ("via", "2.0 abc.cloudfront.net (CloudFront)"),
                ("x-amz-cf-id", "x1y2z3"),
                ("cloudfront-viewer-country", "DE"),
                ("cloudfront-viewer-ja4-fingerprint", CHROME_JA4),
            ],
        ),
        (
            "cloudflare",
            &[
                ("cf-connecting-ip", CLIENT),
                ("cf-ray", "8a1b2c3d4e5f6789-FRA"),
                ("cf-visitor", "{\"scheme\":\"https\"}"),
                ("cf-ipcountry", "DE"),
                ("cdn-loop", "cloudflare"),
                ("x-forwarded-for", CLIENT),
                ("x-forwarded-proto", "https"),
            ],
        ),
        (
            "fastly",
            &[
                ("fastly-client-ip", CLIENT),
                ("fastly-ff", "abc!FRA!cache-fra1"),
                ("fastly-ssl", "1"),
                ("x-forwarded-for", CLIENT),
                ("x-forwarded-host", "shop.test"),
                ("x-forwarded-server", "cache-fra1"),
                ("cdn-loop", "Fastly"),
            ],
        ),
        (
            "generic",
            &[("x-forwarded-for", CLIENT), ("via", "1.1 proxy")],
        ),
    ];
    for (profile, added) in cases {
        let cfg = profile_config(profile);
        let head = vendor_head(true, added);
        let hv = views(&head);
        let mut buf = HeaderBuf::default();
        let v = judged(&cfg, &hv, PEER, None, &mut buf);
        assert!(fired(&v).is_empty(), "{profile}: {:?}", fired(&v));
        assert_eq!(decide(&cfg, &hv, PEER).0, Outcome::Pass, "{profile}");
        // CloudFront's report is the client's TLS: Chromium's, as the UA
        // says; nginx's own (the hop's OpenSSL) is not read.
        if *profile == "cloudfront" {
            assert_eq!(v.float(Float::TlsFamilyMismatch), 0.0);
            assert_eq!(v.cat(crate::features::Cat::TlsJa4), CHROME_JA4.as_bytes());
            let hop_tls = TlsFacts::new(CURL_JA4.as_bytes(), crate::tls::Family::Openssl);
            let mut buf = HeaderBuf::default();
            let v = judged(&cfg, &hv, PEER, hop_tls, &mut buf);
            assert_eq!(v.cat(crate::features::Cat::TlsJa4), CHROME_JA4.as_bytes());
        }
    }
}

#[test]
fn a_reported_fingerprint_is_evidence_only_where_its_family_is_known() {
    let cfg = profile_config("cloudfront");
    let mismatch = |ja4: &str| {
        let head = vendor_head(true, &[("cloudfront-viewer-ja4-fingerprint", ja4)]);
        let hv = views(&head);
        let mut buf = HeaderBuf::default();
        let v = judged(&cfg, &hv, PEER, None, &mut buf);
        (
            v.float(Float::TlsFamilyMismatch),
            v.cat(crate::features::Cat::TlsJa4).to_vec(),
        )
    };
    // A Chrome UA over curl's OpenSSL: as much evidence as straight to nginx.
    assert_eq!(mismatch(CURL_JA4).0, 1.0);
    // A cipher set nobody recorded: the family cannot be known.
    assert_eq!(
        mismatch(UNKNOWN_JA4),
        (0.0, UNKNOWN_JA4.as_bytes().to_vec())
    );
    // Not a JA4: no TLS facts at all.
    assert_eq!(mismatch("t13d1516h2").1, b"".to_vec());
    // Two reports (one the client's, one the hop's): neither believed.
    let mut head = vendor_head(true, &[("cloudfront-viewer-ja4-fingerprint", CHROME_JA4)]);
    head.push(("CloudFront-Viewer-JA4-Fingerprint".into(), CURL_JA4.into()));
    let hv = views(&head);
    let mut buf = HeaderBuf::default();
    let v = judged(&cfg, &hv, PEER, None, &mut buf);
    assert_eq!(v.cat(crate::features::Cat::TlsJa4), b"");
}

#[test]
fn an_untrusted_peer_is_judged_as_today_and_its_forged_fingerprint_ignored() {
    let cfg = profile_config("cloudfront");
    let direct = config("");
    // A script with a Chrome UA over curl's TLS, claiming Chrome's JA4.
    let mut head = vendor_head(false, &[("cloudfront-viewer-ja4-fingerprint", CHROME_JA4)]);
    head.retain(|(n, _)| n != "connection");
    let hv = views(&head);
    let curl_tls = TlsFacts::new(CURL_JA4.as_bytes(), crate::tls::Family::Openssl);
    for peer in [CLIENT, "", "10.0.1.5", "not an address"] {
        let mut b1 = HeaderBuf::default();
        let mut b2 = HeaderBuf::default();
        let got = judged(&cfg, &hv, peer, curl_tls, &mut b1);
        let today = judged(&direct, &hv, peer, curl_tls, &mut b2);
        assert_eq!(
            got.floats().map(f32::to_bits),
            today.floats().map(f32::to_bits),
            "{peer:?}"
        );
        assert_eq!(got.cat(crate::features::Cat::TlsJa4), CURL_JA4.as_bytes());
        assert_eq!(got.float(Float::TlsFamilyMismatch), 1.0);
    }
    // The gate strips the header (an internal header) and decides as
    // without it.
    let req = gate::Incoming::new(b"GET", b"/", 11, CLIENT.as_bytes(), &hv, curl_tls)
        .with_peer(CLIENT.as_bytes());
    let mut scratch = Scratch::new();
    let e = gate::run(cfg.location(), &req, Job::Access, NOW, &mut scratch).unwrap();
    let forged = head
        .iter()
        .position(|(n, _)| n == "cloudfront-viewer-ja4-fingerprint")
        .unwrap();
    assert!(e.clear.contains(&(forged as u32)));
    assert_eq!(e.action, Outcome::Block);
    assert!(e.warning.is_none());
}

#[test]
fn the_direct_profile_and_an_empty_trust_list_relay_nobody() {
    let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
    assert!(Hop::new(Profile::Direct, &trusted, None).is_none());
    assert!(Hop::new(Profile::Nginx, &[], None).is_none());
    let hop = Hop::new(Profile::Cloudfront, &trusted, None).unwrap();
    assert_eq!(hop.ja4_header(), Some("cloudfront-viewer-ja4-fingerprint"));
    let hop = Hop::new(Profile::Fastly, &trusted, Some("X-JA4")).unwrap();
    assert_eq!(hop.ja4_header(), Some("x-ja4"));
    assert!(hop.trusts("10.1.2.3".parse().unwrap()));
    assert!(hop.trusts("::ffff:10.1.2.3".parse().unwrap()));
    assert!(!hop.trusts("11.0.0.1".parse().unwrap()));
}

#[test]
fn a_trusted_peer_without_realip_is_warned_about() {
    let cfg = profile_config("nginx");
    let head = [
        Header::new(b"host", b"shop.test"),
        Header::new(b"user-agent", b"curl/8.0"),
        Header::new(b"x-forwarded-for", b"198.51.100.23"),
    ];
    // realip set up: the client is the client, the peer the proxy.
    let req = gate::Incoming::new(b"GET", b"/", 11, CLIENT.as_bytes(), &head, None)
        .with_peer(PEER.as_bytes());
    let mut scratch = Scratch::new();
    let e = gate::run(cfg.location(), &req, Job::Access, NOW, &mut scratch).unwrap();
    assert!(e.warning.is_none());
    // Not set up: $remote_addr is the proxy's (and $realip_remote_addr
    // equal, or absent without the module).
    for peer in [PEER, ""] {
        let req = gate::Incoming::new(b"GET", b"/", 11, PEER.as_bytes(), &head, None)
            .with_peer(peer.as_bytes());
        let e = gate::run(cfg.location(), &req, Job::Access, NOW, &mut scratch).unwrap();
        assert_eq!(e.warning, Some(REALIP_WARNING), "{peer:?}");
    }
}

#[test]
fn websocket_upgrades_keep_what_says_so() {
    let cfg = profile_config("nginx");
    let head = [
        Header::new(b"host", b"shop.test"),
        Header::new(b"connection", b"upgrade"),
        Header::new(b"upgrade", b"websocket"),
        Header::new(b"keep-alive", b"timeout=5"),
        Header::new(b"x-forwarded-for", b"198.51.100.23"),
    ];
    let http = features::Request::new(b"GET", b"/ws", 11, CLIENT.as_bytes(), &head);
    let mut buf = HeaderBuf::default();
    let r = cfg
        .location()
        .hop()
        .unwrap()
        .relay(&http, &head, PEER.as_bytes(), &mut buf)
        .unwrap();
    let names: Vec<&[u8]> = r.http.headers().map(|(n, _)| n).collect();
    assert_eq!(names, [&b"host"[..], b"connection", b"upgrade"]);
    assert_eq!(r.http.client_version(), None);
    assert!(r.http.kept().order);
}

#[test]
fn profiles_are_named_once_in_lower_case() {
    let mut names: Vec<&str> = Profile::names().collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), PROFILES.len());
    for s in PROFILES {
        assert_eq!(Profile::from_name(s.name), Some(s.profile));
        for n in s.adds.iter().chain(s.prefixes).chain(&s.ja4_header) {
            assert_eq!(*n, n.to_ascii_lowercase(), "{}", s.name);
        }
        // Direct is no hop: nothing added, everything kept.
        let direct = s.profile == Profile::Direct;
        assert_eq!(s.adds.is_empty(), direct, "{}", s.name);
        assert!(!direct || (s.keeps_order && !s.folds_case && s.ja4_header.is_none()));
    }
}

#[test]
fn the_features_read_no_header_name_case() {
    // Why `folds_case` needs no undoing: the same head in any case gives
    // the same vector.
    let cfg = config("");
    for h in heads().iter().filter(|h| h.hop == "nginx").take(20) {
        let upper: Vec<(String, String)> = h
            .headers
            .iter()
            .map(|(n, v)| (n.to_ascii_uppercase(), v.clone()))
            .collect();
        let (a, b) = (views(&h.headers), views(&upper));
        let (mut b1, mut b2) = (HeaderBuf::default(), HeaderBuf::default());
        let (va, vb) = (
            judged(&cfg, &a, PEER, None, &mut b1),
            judged(&cfg, &b, PEER, None, &mut b2),
        );
        assert_eq!(va.floats().map(f32::to_bits), vb.floats().map(f32::to_bits));
    }
}

#[test]
fn allow_and_verified_bots_read_the_client_not_the_hop() {
    // realip made $remote_addr the client's; the peer is the hop.
    let bot = [
        Header::new(b"host", b"shop.test"),
        Header::new(
            b"user-agent",
            b"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
        ),
        Header::new(b"x-forwarded-for", b"198.51.100.23"),
    ];
    let curl = [
        Header::new(b"host", b"shop.test"),
        Header::new(b"user-agent", b"curl/8.0"),
        Header::new(b"x-forwarded-for", b"198.51.100.23"),
    ];
    let bots = r#", "verified_bots": "tests/fixtures/verified/bots.json""#;
    let trusted = r#", "trusted_proxies": ["10.0.0.0/24"], "proxy_profile": "nginx""#;
    let cfg = config(&format!(r#"{bots}{trusted}, "allow": ["198.51.100.0/24"]"#));
    // bingbot's prefixes hold the client (198.51.100.0/24), not the hop.
    assert_eq!(decide(&cfg, &bot, PEER).0, Outcome::Verified);
    assert_eq!(decide(&cfg, &curl, PEER).0, Outcome::Allow);
    // An allow list of the hop's addresses allows nobody behind it.
    let cfg = config(&format!(r#"{bots}{trusted}, "allow": ["10.0.0.0/24"]"#));
    assert_eq!(decide(&cfg, &curl, PEER).0, Outcome::Block);
    // A bot claim from a client outside its prefixes is fake, wherever
    // the hop is.
    let req = gate::Incoming::new(b"GET", b"/", 11, b"203.0.113.9", &bot, None)
        .with_peer(CLIENT.as_bytes());
    let mut scratch = Scratch::decisions_only();
    let e = gate::run(cfg.location(), &req, Job::Access, NOW, &mut scratch).unwrap();
    assert!(matches!(
        e.bot,
        Some((crate::verified::Verdict::Fake(_), _))
    ));
}

#[test]
fn the_clearance_binds_the_client_and_its_reported_tls_not_the_hop() {
    use crate::challenge::{Clearance, Proof};
    let cfg = config(
        r#", "challenge_secret": "tests/fixtures/challenge/secret", "mode": "challenge",
           "trusted_proxies": ["10.0.0.0/24"], "proxy_profile": "cloudfront""#,
    );
    let ch = cfg.location().policy().challenge().unwrap();
    let ua: &[u8] = b"python-requests/2.31";
    let client: std::net::IpAddr = CLIENT.parse().unwrap();
    let reported = TlsFacts::reported(CHROME_JA4.as_bytes());
    let cookie = ch.mint_cookie(
        &ch.binding(Some(client), ua, reported),
        Proof::Work,
        12,
        NOW,
    );
    let cookie = format!("{}={}", ch.cookie, std::str::from_utf8(&cookie).unwrap());
    let head = [
        Header::new(b"host", b"shop.test"),
        Header::new(b"user-agent", ua),
        Header::new(b"cookie", cookie.as_bytes()),
        Header::new(b"cloudfront-viewer-ja4-fingerprint", CHROME_JA4.as_bytes()),
    ];
    // nginx's own TLS facts are the hop's (OpenSSL): not what was bound.
    let hop_tls = TlsFacts::new(CURL_JA4.as_bytes(), crate::tls::Family::Openssl);
    let run = |client: &[u8], peer: &[u8]| {
        let req = gate::Incoming::new(b"GET", b"/", 11, client, &head, hop_tls).with_peer(peer);
        let mut scratch = Scratch::decisions_only();
        let e = gate::run(cfg.location(), &req, Job::Access, NOW, &mut scratch).unwrap();
        (e.action, e.clearance)
    };
    // The client, through the trusted hop: its clearance holds.
    assert_eq!(
        run(CLIENT.as_bytes(), PEER.as_bytes()),
        (Outcome::Cleared, Clearance::Accepted(Proof::Work))
    );
    // The same cookie from another client prefix, or straight to nginx
    // (where the TLS is its own and the header is not believed): refused.
    for (client, peer) in [("198.51.200.9", PEER), (CLIENT, CLIENT)] {
        let (action, clearance) = run(client.as_bytes(), peer.as_bytes());
        assert_ne!(action, Outcome::Cleared, "{client} via {peer}");
        assert!(matches!(clearance, Clearance::Rejected(_)), "{clearance:?}");
    }
}

#[test]
fn rule_cidrs_read_the_client_not_the_hop() {
    // realip made $remote_addr the client's; a rule on the client's list
    // decides for it, a rule on the hop's list for nobody behind it.
    let trusted = r#", "trusted_proxies": ["10.0.0.0/24"], "proxy_profile": "nginx""#;
    let file =
        std::env::temp_dir().join(format!("edgeguard-hop-rules-{}.json", std::process::id()));
    std::fs::write(
        &file,
        r#"{"lists": {"office": ["198.51.100.0/24"], "hops": ["10.0.0.0/24"]},
            "rules": [{"name": "office", "when": {"client": "office"}, "action": "allow"},
                      {"name": "hops", "when": {"client": "hops"}, "action": "allow"}]}"#,
    )
    .unwrap();
    let cfg = config(&format!(r#"{trusted}, "rules": ["{}"]"#, file.display()));
    std::fs::remove_file(&file).unwrap();
    let curl = [
        Header::new(b"host", b"shop.test"),
        Header::new(b"user-agent", b"curl/8.0"),
        Header::new(b"x-forwarded-for", b"198.51.100.23"),
    ];
    let run = |client: &str| {
        let req = gate::Incoming::new(b"GET", b"/", 11, client.as_bytes(), &curl, None)
            .with_peer(PEER.as_bytes());
        let mut scratch = Scratch::decisions_only();
        let e = gate::run(cfg.location(), &req, Job::Access, NOW, &mut scratch).unwrap();
        (e.action, e.rule.map(|r| r.name.to_owned()))
    };
    assert_eq!(run(CLIENT), (Outcome::Allow, Some("office".to_owned())));
    // Another client behind the same hop: no rule is its, the model's call.
    assert_eq!(run("203.0.113.9"), (Outcome::Block, None));
}

#[test]
fn signals_count_the_client_and_the_key_the_gate_looks_up() {
    use crate::replay::{observe, Input, Options, WindowFeed};
    use crate::signals::{key::headers_key_of, Kind, Settings, Window, KEY_CAP};
    // A person's head as the nginx hop delivered it, over the hop's own
    // TLS connection (OpenSSL's), logged from three clients: what
    // `edgeguard signals` reads.
    let cfg = profile_config("nginx");
    let heads = heads();
    let h = heads
        .iter()
        .find(|h| h.hop == "nginx" && h.label == "human")
        .unwrap();
    let log: String = [CLIENT, "198.51.100.99", "203.0.113.9"]
        .iter()
        .map(|client| {
            let line = serde_json::json!({
                "client": client, "peer": PEER, "method": "GET", "uri": "/",
                "version": "1.1", "headers": h.headers, "edgeguard_ja4": CURL_JA4,
                "edgeguard_tls_family": "openssl", "edgeguard_time": NOW.to_string(),
            });
            format!("{line}\n")
        })
        .collect();
    let mut window = Window::new(Settings::default()).unwrap();
    let mut observer = WindowFeed::new(&mut window, || NOW);
    let input = Input::from_reader("t", Box::new(std::io::Cursor::new(log)), None);
    let options = Options {
        threads: 1,
        now: Some(NOW),
        ..Options::default()
    };
    let summary = observe(vec![input], &cfg, &options, &mut |seen| observer.add(seen)).unwrap();
    assert_eq!((summary.requests, summary.parse_errors), (3, 0));
    // The key the gate looks a relayed request up under: the client's
    // headers only.
    let hv = views(&h.headers);
    let hop_tls = TlsFacts::new(CURL_JA4.as_bytes(), crate::tls::Family::Openssl);
    let mut buf = HeaderBuf::default();
    let v = judged(&cfg, &hv, PEER, hop_tls, &mut buf);
    let mut kb = [0; KEY_CAP];
    let key = headers_key_of(&v, &mut kb).to_vec();
    let c = window.counts(Kind::Headers, &key).unwrap_or_else(|| {
        panic!(
            "no counts under the gate's key {}",
            String::from_utf8_lossy(&key)
        )
    });
    // Two client /24s, none of them the hop's.
    assert_eq!((c.requests, c.prefixes24, c.prefixes48), (3, 2, 0));
    // The hop's TLS is no client's: nothing is counted under its JA4
    // (a direct curl would be looked up there and read people's counts).
    assert!(window.counts(Kind::Ja4, CURL_JA4.as_bytes()).is_none());
}
