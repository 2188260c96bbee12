//! `edgeguard signals` on a crafted access log: a scripted client over many
//! /24s that is served the challenge and never solves it, and people who
//! are served it, solve it and come back cleared. The log's challenges,
//! answers and cookies are made by the gate itself (the library's
//! `gate::run` under the same configuration), so the counts the snapshot
//! holds are checked against what really happened to each request.

use std::path::{Path, PathBuf};
use std::process::Command;

use edgeguard::challenge::AnswerResult;
use edgeguard::challenge::{self, Clearance};
use edgeguard::features::TlsFacts;
use edgeguard::features::{extract, FeatureVector};
use edgeguard::gate::{self, Exit, Job, Scratch};
use edgeguard::headers::Header;
use edgeguard::load::Config;
use edgeguard::outcome::Outcome;
use edgeguard::signals::key::headers_key_of;
use edgeguard::signals::{Kind, Snapshot, KEY_CAP};
use edgeguard::tls::Family;

const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const CHROME_JA4: &str = "t13d1516h2_8daaf6152771_02713d6af862";
const SCRIPT_JA4: &str = "t13d5911h1_a33745022dd6_dd5ea6d2a4c8";
/// 2026-12-04T16:00:00Z.
const T0: u64 = 1_796_400_000;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("edgeguard-signals-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A challenge configuration with a rule that challenges /login, as a
/// site would protect its login page.
fn config(dir: &Path) -> PathBuf {
    let r = root().display();
    let path = dir.join("config.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"internal_headers": "{r}/nginx-conf/internal-headers.txt",
                "models": {{"bot": "{r}/models/bot.json", "spoof": "{r}/models/spoof.json"}},
                "mode": "challenge", "challenge_secret": "{r}/tests/fixtures/challenge/secret",
                "challenge_difficulty": 2, "challenge_difficulty_max": 4,
                "rules": [{{"name": "login", "when": {{"path": {{"prefix": "/login"}}}}, "action": "challenge"}}]}}"#
        ),
    )
    .unwrap();
    path
}

/// One request: run through the gate now (to learn what nginx did), and
/// logged as nginx's edgeguard_json_challenge line.
struct Req<'a> {
    client: &'a str,
    uri: &'a str,
    headers: Vec<(&'a str, String)>,
    ja4: &'a str,
    time: u64,
}

/// What the gate did with a request that the test reads on.
struct Done {
    action: Outcome,
    answer: Option<AnswerResult>,
    clearance: Clearance,
    flagged: bool,
    body: String,
    set_cookie: String,
}

impl Req<'_> {
    fn run(&self, config: &Config, scratch: &mut Scratch, log: &mut String) -> Done {
        let h: Vec<Header<'_>> = self
            .headers
            .iter()
            .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
            .collect();
        let tls = TlsFacts::new(self.ja4.as_bytes(), Family::Boringssl);
        let req = gate::Incoming::new(
            b"GET",
            self.uri.as_bytes(),
            11,
            self.client.as_bytes(),
            &h,
            tls,
        )
        .secure(true);
        let e = gate::run(config.location(), &req, Job::Access, self.time, scratch).unwrap();
        let (body, set_cookie) = match e.exit {
            Exit::Page { body, .. } => (String::from_utf8_lossy(body).into_owned(), String::new()),
            Exit::Redirect { set_cookie, .. } => (
                String::new(),
                String::from_utf8_lossy(set_cookie).into_owned(),
            ),
            _ => (String::new(), String::new()),
        };
        let pairs: Vec<[&str; 2]> = self.headers.iter().map(|(n, v)| [*n, v.as_str()]).collect();
        let line = serde_json::json!({
            "time": iso(self.time),
            "client": self.client,
            "method": "GET",
            "uri": self.uri,
            "version": "HTTP/1.1",
            "status": 200,
            "headers": serde_json::to_string(&pairs).unwrap(),
            "edgeguard_bot": "",
            "edgeguard_spoof": "",
            "edgeguard_action": e.action.as_str(),
            "edgeguard_ja4": self.ja4,
            "edgeguard_tls_family": "boringssl",
            "edgeguard_time": self.time.to_string(),
            "edgeguard_verified_bot": "",
        });
        log.push_str(&line.to_string());
        log.push('\n');
        Done {
            action: e.action,
            answer: e.answer,
            clearance: e.clearance,
            flagged: e.flagged.is_some(),
            body,
            set_cookie,
        }
    }
}

/// `$time_iso8601` of Unix time `t` (UTC, within 2026-12-04).
fn iso(t: u64) -> String {
    let s = t - T0;
    format!(
        "2026-12-04T{:02}:{:02}:{:02}+00:00",
        16 + s / 3600,
        s / 60 % 60,
        s % 60
    )
}

fn script_headers() -> Vec<(&'static str, String)> {
    vec![
        ("host", "shop.example".to_owned()),
        ("user-agent", "python-requests/2.31.0".to_owned()),
        ("accept-encoding", "gzip, deflate".to_owned()),
        ("accept", "*/*".to_owned()),
        ("connection", "keep-alive".to_owned()),
    ]
}

fn chrome_nav(uri_extra: Option<String>) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("host", "shop.example".to_owned()),
        ("user-agent", CHROME.to_owned()),
        (
            "accept",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8".to_owned(),
        ),
        ("sec-fetch-mode", "navigate".to_owned()),
        ("sec-fetch-dest", "document".to_owned()),
        ("accept-language", "en-US,en;q=0.9".to_owned()),
    ];
    if let Some(c) = uri_extra {
        h.push(("cookie", c));
    }
    h
}

/// The answer URI that solves `page`, returning to /login.
fn answer(page: &str) -> String {
    let at = page.find("{\"n\":\"").expect("a challenge page") + 6;
    let nonce = &page[at..at + challenge::TOKEN_TEXT];
    let d = page[at..].split("\"d\":").nth(1).unwrap();
    let d: u32 = d
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap();
    let c = (0u64..)
        .find(|c| challenge::leading_zero_bits(nonce.as_bytes(), c.to_string().as_bytes()) >= d)
        .unwrap();
    format!("/.edgeguard/challenge?n={nonce}&c={c}&r=%2Flogin")
}

struct Expected {
    bot: [u64; 5],
    people: [u64; 5],
    flagged_bot: u64,
}

/// 120 bot requests from 120 /24s; 40 people from 40 other /24s, each: the
/// page, the answer, two pages with the cookie. Returns the log and what
/// the gate did: [requests, challenges, solved, cleared, prefixes].
fn crafted(config: &Config) -> (String, Expected) {
    let mut scratch = Scratch::new();
    let mut log = String::new();
    let mut bot = [0u64; 5];
    let mut flagged_bot = 0;
    for i in 0..120u64 {
        let client = format!("198.{}.{}.7", 18 + i / 60, i % 60);
        let r = Req {
            client: &client,
            uri: "/login",
            headers: script_headers(),
            ja4: SCRIPT_JA4,
            time: T0 + 20 * i,
        };
        let d = r.run(config, &mut scratch, &mut log);
        bot[0] += 1;
        // Not a navigation: the challenge_required problem document.
        assert_eq!(d.action, Outcome::ChallengeRequired);
        assert_eq!(d.answer, Some(AnswerResult::Problem));
        bot[1] += 1;
        flagged_bot += u64::from(d.flagged);
    }
    bot[4] = 60 * 2;
    let mut people = [0u64; 5];
    for p in 0..40u64 {
        let client = format!("203.0.{p}.{}", 10 + p);
        let t = T0 + 60 * p;
        let page = Req {
            client: &client,
            uri: "/login",
            headers: chrome_nav(None),
            ja4: CHROME_JA4,
            time: t,
        }
        .run(config, &mut scratch, &mut log);
        assert_eq!(page.action, Outcome::Challenge, "person {p}");
        let uri = answer(&page.body);
        let solved = Req {
            client: &client,
            uri: &uri,
            headers: chrome_nav(None),
            ja4: CHROME_JA4,
            time: t + 2,
        }
        .run(config, &mut scratch, &mut log);
        assert_eq!(solved.answer, Some(AnswerResult::Solved), "person {p}");
        let cookie = solved.set_cookie.split(';').next().unwrap().to_owned();
        for k in 0..2 {
            let back = Req {
                client: &client,
                uri: "/login",
                headers: chrome_nav(Some(cookie.clone())),
                ja4: CHROME_JA4,
                time: t + 3 + k,
            }
            .run(config, &mut scratch, &mut log);
            assert!(
                back.clearance.is_accepted(),
                "person {p}: {:?}",
                back.clearance
            );
        }
        people[0] += 4;
        people[1] += 1;
        people[2] += 1;
        people[3] += 2;
    }
    people[4] = 40;
    (
        log,
        Expected {
            bot,
            people,
            flagged_bot,
        },
    )
}

fn signals(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .arg("signals")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_crafted_log_gives_the_counts_the_gate_gave() {
    let dir = temp("crafted");
    let cfg = config(&dir);
    let config = Config::load(&cfg).unwrap();
    let (log, want) = crafted(&config);
    let log_path = dir.join("access.jsonl");
    std::fs::write(&log_path, &log).unwrap();
    let out = dir.join("snapshot.json");
    let o = signals(&[
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        log_path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("280 requests (0 bad lines)"), "{stderr}");
    let s = Snapshot::load(&out).unwrap();
    // The events span 40 minutes: one window from 16:00 to the minute
    // after the last.
    assert_eq!(s.window(), 3600);
    assert_eq!(s.generated(), T0 + 40 * 60);

    let bot = s.ja4(SCRIPT_JA4.as_bytes()).unwrap();
    let [requests, challenges, solved, cleared, prefixes] = want.bot;
    assert_eq!(
        (bot.requests, bot.challenges, bot.solved, bot.cleared),
        (requests, challenges, solved, cleared)
    );
    assert_eq!(bot.prefixes24, prefixes);
    assert_eq!((bot.prefixes48, bot.user_agents), (0, 1));
    assert_eq!(bot.flagged, want.flagged_bot);

    let person = s.ja4(CHROME_JA4.as_bytes()).unwrap();
    let [requests, challenges, solved, cleared, prefixes] = want.people;
    assert_eq!(
        (
            person.requests,
            person.challenges,
            person.solved,
            person.cleared
        ),
        (requests, challenges, solved, cleared)
    );
    assert_eq!((person.prefixes24, person.user_agents), (prefixes, 1));
    assert_eq!(person.solved_share(), Some(1.0));
    assert_eq!(bot.solved_share(), Some(0.0));

    // The headers keys count the same requests (one header order each).
    let headers: Vec<_> = s
        .sorted()
        .into_iter()
        .filter(|(k, _, _)| *k == Kind::Headers)
        .map(|(_, key, c)| (key.to_owned(), c.requests))
        .collect();
    let key_of = |h: &[(&str, String)]| {
        let h: Vec<Header<'_>> = h
            .iter()
            .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
            .collect();
        let req = edgeguard::features::Request::new(b"GET", b"/login", 11, b"192.0.2.1", &h);
        let mut v = FeatureVector::new();
        extract(&req, &mut v);
        let mut buf = [0; KEY_CAP];
        String::from_utf8(headers_key_of(&v, &mut buf).to_vec()).unwrap()
    };
    // The page, the answer and the two with the cookie share one key:
    // the cookie says what the visit is, not what sent it.
    let nav = key_of(&chrome_nav(None));
    assert_eq!(nav, key_of(&chrome_nav(Some("c=1".into()))));
    let mut want_headers = vec![(nav, 160), (key_of(&script_headers()), 120)];
    want_headers.sort();
    assert_eq!(headers, want_headers);
    assert!(want_headers[1].0.starts_with("python-requests:"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn min_requests_window_and_bad_input() {
    let dir = temp("options");
    let cfg = config(&dir);
    let config = Config::load(&cfg).unwrap();
    let (log, _) = crafted(&config);
    // Bad lines are counted, never fatal; gzip is read.
    let mut text = String::from("not json\n");
    text.push_str(&log);
    let gz = dir.join("access.jsonl.gz");
    {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        enc.write_all(text.as_bytes()).unwrap();
        enc.finish().unwrap();
    }
    let out = dir.join("snapshot.json");
    let o = signals(&[
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--window",
        "600",
        "--buckets",
        "10",
        "--min-requests",
        "100",
        gz.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("(1 bad lines)"), "{stderr}");
    assert!(stderr.contains("line 1:"), "{stderr}");
    let s = Snapshot::load(&out).unwrap();
    assert_eq!(s.window(), 600);
    // The last 10 minutes: the bot's requests from 16:30 to 16:39:40 (30),
    // the people of minutes 30..39 (40 requests): under 100 both.
    assert_eq!(s.len(), 0, "{:?}", s.sorted());
    let o = signals(&[
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--window",
        "600",
        "--buckets",
        "10",
        gz.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let s = Snapshot::load(&out).unwrap();
    assert_eq!(s.ja4(SCRIPT_JA4.as_bytes()).unwrap().requests, 30);
    assert_eq!(s.ja4(CHROME_JA4.as_bytes()).unwrap().requests, 40);
    assert_eq!(s.ja4(CHROME_JA4.as_bytes()).unwrap().prefixes24, 10);

    // Refused settings and a missing config say why, and write nothing.
    let fresh = dir.join("none.json");
    for (args, want) in [
        (
            vec!["--window", "3600", "--buckets", "7"],
            "does not cut into 7 buckets",
        ),
        (vec!["--window", "0"], "--window"),
    ] {
        let mut all = vec![
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            fresh.to_str().unwrap(),
        ];
        all.extend(args);
        all.push(gz.to_str().unwrap());
        let o = signals(&all);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains(want), "{e}");
        assert!(!fresh.exists());
    }
    let o = signals(&[
        "--config",
        "/nonexistent.json",
        "--out",
        fresh.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent.json"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn kafka_usage_and_a_build_without_it() {
    // Clap's own checks, in every build.
    let o = signals(&["--topic", "log"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--kafka-brokers"), "{e}");
    let o = signals(&["export", "--topic", "s", "--out", "x.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--kafka-brokers"));
    // File mode needs its two options.
    let o = signals(&["--out", "x.json"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--config is required"));
    #[cfg(not(feature = "kafka"))]
    for args in [
        &[
            "--kafka-brokers",
            "127.0.0.1:1",
            "--group",
            "g",
            "--partials-topic",
            "p",
            "--snapshot-topic",
            "s",
        ][..],
        &[
            "export",
            "--kafka-brokers",
            "127.0.0.1:1",
            "--topic",
            "s",
            "--out",
            "x.json",
        ],
    ] {
        let o = signals(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains("built without Kafka support"), "{e}");
    }
}
