//! Each condition kind against requests that must and must not meet it,
//! the stages and their order, and the actions.

use std::net::IpAddr;
use std::path::Path;

use super::*;
use crate::features::TlsFacts;
use crate::headers::Header;
use crate::tls::Family;
use crate::verified::Category;

const MODELS: &[&str] = &["bot", "spoof"];

fn rules(json: &str) -> Rules {
    Rules::parse(
        "test.json",
        Path::new("."),
        json.as_bytes(),
        &Context { models: MODELS },
    )
    .unwrap_or_else(|e| panic!("{e}\n{json}"))
}

fn refused(json: &str) -> String {
    Rules::parse(
        "test.json",
        Path::new("."),
        json.as_bytes(),
        &Context { models: MODELS },
    )
    .map(|_| ())
    .expect_err(json)
    .to_string()
}

/// A request built up field by field; `view` borrows it.
#[derive(Clone)]
struct Req {
    method: &'static str,
    host: &'static str,
    target: &'static str,
    headers: Vec<(&'static str, &'static str)>,
    client: Option<IpAddr>,
    bot: Option<BotView<'static>>,
    tls: Option<(&'static str, Family)>,
    scores: Vec<f64>,
    fleet: Option<crate::signals::Lookup>,
    clients: Option<crate::clients::ClientView>,
}

fn get(target: &'static str) -> Req {
    Req {
        method: "GET",
        host: "example.com",
        target,
        headers: vec![("host", "example.com")],
        client: Some("203.0.113.9".parse().unwrap()),
        bot: None,
        tls: None,
        scores: vec![],
        fleet: None,
        clients: None,
    }
}

impl Req {
    fn header(mut self, n: &'static str, v: &'static str) -> Req {
        self.headers.push((n, v));
        self
    }
    fn ua(self, v: &'static str) -> Req {
        self.header("user-agent", v)
    }
    fn method(mut self, m: &'static str) -> Req {
        self.method = m;
        self
    }
    fn host(mut self, h: &'static str) -> Req {
        self.host = h;
        self
    }
    fn client(mut self, a: &str) -> Req {
        self.client = Some(a.parse().unwrap());
        self
    }
    fn bot(mut self, verified: bool, category: Category, name: &'static str) -> Req {
        self.bot = Some(BotView {
            verified,
            category,
            name,
        });
        self
    }
    fn tls(mut self, ja4: &'static str, f: Family) -> Req {
        self.tls = Some((ja4, f));
        self
    }
    fn scores(mut self, s: &[f64]) -> Req {
        self.scores = s.to_vec();
        self
    }
    fn fleet(
        mut self,
        ja4: Option<crate::signals::Counts>,
        headers: Option<crate::signals::Counts>,
    ) -> Req {
        self.fleet = Some(crate::signals::Lookup { ja4, headers });
        self
    }

    /// The first rule before scoring, then after, as a caller runs them.
    fn decide<'r>(&self, r: &'r Rules) -> Option<(&'r str, Action)> {
        let headers: Vec<Header<'_>> = self
            .headers
            .iter()
            .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
            .collect();
        let (path, query) = split_target(self.target.as_bytes());
        let ua = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
            .map_or("", |(_, v)| v);
        let view = View {
            method: self.method.as_bytes(),
            host: self.host.as_bytes(),
            path,
            query,
            headers: &headers,
            user_agent: ua.as_bytes(),
            client: self.client,
            bot: self.bot,
            tls: self
                .tls
                .map(|(j, f)| TlsFacts::new(j.as_bytes(), f).expect("a JA4")),
            scores: &[],
            fleet: self.fleet,
            clients: self.clients,
        };
        let mut scratch = NormalPath::new();
        if let Some(m) = r.before_scoring(&view, &mut scratch) {
            return Some((m.name, m.action));
        }
        let view = View {
            scores: &self.scores,
            ..view
        };
        r.after_scoring(&view, &mut scratch)
            .map(|m| (m.name, m.action))
    }

    fn hits(&self, r: &Rules) -> bool {
        self.decide(r).is_some()
    }
}

/// One rule named `r` with `when`, action pass.
fn when(cond: &str) -> Rules {
    rules(&format!(
        r#"{{"rules": [{{"name": "r", "when": {cond}, "action": "pass"}}]}}"#
    ))
}

fn check(cond: &str, yes: Vec<Req>, no: Vec<Req>) {
    let r = when(cond);
    for q in &yes {
        assert!(q.hits(&r), "{cond} should take {} {}", q.method, q.target);
    }
    for q in &no {
        assert!(
            !q.hits(&r),
            "{cond} should not take {} {}",
            q.method,
            q.target
        );
    }
}

#[test]
fn methods_are_case_sensitive_tokens() {
    check(
        r#"{"method": ["GET", "HEAD"]}"#,
        vec![get("/"), get("/").method("HEAD")],
        vec![
            get("/").method("get"),
            get("/").method("POST"),
            get("/").method("GETX"),
        ],
    );
    check(
        r#"{"method": "PURGE"}"#,
        vec![get("/").method("PURGE")],
        vec![get("/")],
    );
}

#[test]
fn hosts_ignore_case_port_and_trailing_dot() {
    check(
        r#"{"host": ["Example.com", "*.example.org"]}"#,
        vec![
            get("/"),
            get("/").host("EXAMPLE.COM"),
            get("/").host("example.com:8443"),
            get("/").host("example.com."),
            get("/").host("a.example.org"),
            get("/").host("a.b.EXAMPLE.org:80"),
        ],
        vec![
            get("/").host("example.org"),
            get("/").host("www.example.com"),
            get("/").host("badexample.org"),
            get("/").host("example.com.evil"),
            get("/").host(""),
        ],
    );
    check(
        r#"{"host": "[2001:db8::1]"}"#,
        vec![
            get("/").host("[2001:db8::1]:443"),
            get("/").host("[2001:DB8::1]"),
        ],
        vec![get("/").host("2001:db8::1")],
    );
}

#[test]
fn paths_exact_prefix_suffix_and_normalized() {
    check(
        r#"{"path": {"exact": ["/robots.txt", "/"]}}"#,
        vec![
            get("/robots.txt"),
            get("/robots.txt?x=1"),
            get("//robots.txt"),
            get("/a/../robots.txt"),
            get("/"),
            get("/%72obots.txt"),
        ],
        vec![
            get("/robots.txt/"),
            get("/ROBOTS.TXT"),
            get("/robots.txtx"),
            get("/a/robots.txt"),
            get("*"),
            get("/.."),
        ],
    );
    check(
        r#"{"path": {"prefix": "/.well-known/"}}"#,
        vec![
            get("/.well-known/security.txt"),
            get("/.well-known/"),
            get("/.well-known//x"),
        ],
        vec![
            get("/.well-known"),
            get("/.well-known/../admin"),
            get("/.well-known/%2e%2e/admin"),
            get("/x/.well-known/"),
        ],
    );
    check(
        r#"{"path": {"suffix": [".rss", ".atom"], "nocase": true}}"#,
        vec![get("/a.rss"), get("/A.RSS"), get("/x/y.Atom?q")],
        vec![get("/a.rss/"), get("/rss")],
    );
    check(
        r#"{"path": {"exact": "/Admin", "nocase": true}}"#,
        vec![get("/admin"), get("/ADMIN")],
        vec![get("/admin/")],
    );
}

#[test]
fn regexes_are_unanchored_unless_they_say_so() {
    check(
        r#"{"path": {"regex": "^/sitemap[^/]*\\.xml$"}}"#,
        vec![
            get("/sitemap.xml"),
            get("/sitemap_index.xml"),
            get("/sitemap-1.xml?x"),
        ],
        vec![
            get("/a/sitemap.xml"),
            get("/sitemap.xml.bak"),
            get("/sitemap/x.xml"),
        ],
    );
    check(
        r#"{"path": {"regex": "admin"}}"#,
        vec![get("/x/admin/y")],
        vec![get("/x")],
    );
    // Case folding through nocase or the pattern's own flag.
    check(
        r#"{"path": {"regex": "^/feed$", "nocase": true}}"#,
        vec![get("/FEED")],
        vec![get("/feeds")],
    );
    check(
        r#"{"path": {"regex": "(?i)^/feed$"}}"#,
        vec![get("/Feed")],
        vec![get("/feed/")],
    );
    // Patterns match bytes: `.` is one byte, UTF-8 or not, so bytes that
    // are not UTF-8 cannot slip past a `.*`.
    check(
        r#"{"path": {"regex": "^/a.b$"}}"#,
        vec![get("/a%C3b"), get("/axb"), get("/a%FFb")],
        vec![get("/a%C3%A9b")],
    );
    check(
        r#"{"path": {"regex": "^/admin.*$"}}"#,
        vec![get("/admin%FF"), get("/admin/%C3")],
        vec![get("/Admin")],
    );
    check(
        r#"{"path": {"regex": "^/café$"}}"#,
        vec![get("/caf%C3%A9")],
        vec![get("/cafe")],
    );
    // The empty regex matches everything, as the crate defines it.
    check(
        r#"{"path": {"regex": ""}}"#,
        vec![get("/"), get("/x")],
        vec![get("*")],
    );
    // Unicode classes, when a pattern asks for them, work on decoded paths.
    check(
        r#"{"path": {"regex": "(?u)^/\\p{Greek}+$"}}"#,
        vec![get("/%CE%B1%CE%B2")],
        vec![get("/ab"), get("/%CE")],
    );
    check(
        r#"{"path": {"regex": "^/\\w+$"}}"#,
        vec![get("/ab_1")],
        vec![get("/%CE%B1")],
    );
}

#[test]
fn queries_are_raw() {
    check(
        r#"{"query": {"regex": "(^|&)feed=rss2(&|$)"}}"#,
        vec![
            get("/?feed=rss2"),
            get("/?a=1&feed=rss2"),
            get("/?feed=rss2&b"),
        ],
        vec![
            get("/?feed=rss22"),
            get("/?xfeed=rss2"),
            get("/feed=rss2"),
            get("/"),
        ],
    );
    check(
        r#"{"query": {"exact": ""}}"#,
        vec![get("/a"), get("/a?")],
        vec![get("/a?x")],
    );
    check(
        r#"{"query": {"contains": "%20"}}"#,
        vec![get("/?q=a%20b")],
        vec![get("/?q=a b")],
    );
}

#[test]
fn header_names_fold_case_and_underscores() {
    check(
        r#"{"header": {"name": "X-Api-Key", "present": true}}"#,
        vec![
            get("/").header("x-api-key", "k"),
            get("/").header("X-API-KEY", "k"),
            get("/").header("x_api_key", "k"),
            get("/").header("x-api-key", ""),
        ],
        vec![
            get("/"),
            get("/").header("x-api-keys", "k"),
            get("/").header("x-api", "k"),
        ],
    );
    check(
        r#"{"header": {"name": "authorization", "present": false}}"#,
        vec![get("/"), get("/").header("x-authorization", "a")],
        vec![get("/").header("Authorization", "Bearer x")],
    );
}

#[test]
fn header_repeats_any_line_passes_once_needs_one() {
    let two = get("/")
        .header("accept", "text/html")
        .header("accept", "application/rss+xml");
    check(
        r#"{"header": {"name": "accept", "contains": "application/rss+xml"}}"#,
        vec![
            two.clone(),
            get("/").header("accept", "application/rss+xml, */*"),
        ],
        vec![get("/"), get("/").header("accept", "text/html")],
    );
    check(
        r#"{"header": {"name": "accept", "contains": "application/rss+xml", "once": true}}"#,
        vec![get("/").header("accept", "application/rss+xml")],
        vec![two.clone(), get("/")],
    );
    check(
        r#"{"header": {"name": "accept", "once": true}}"#,
        vec![get("/").header("accept", "x")],
        vec![two.clone(), get("/")],
    );
    check(
        r#"{"header": {"name": "accept", "exact": "text/html"}}"#,
        vec![two.clone()],
        vec![get("/").header("accept", "text/html;q=1")],
    );
    // Several header conditions: all must hold.
    check(
        r#"{"header": [{"name": "accept", "prefix": "text/"}, {"name": "cookie", "present": false}]}"#,
        vec![get("/").header("accept", "text/html")],
        vec![
            get("/")
                .header("accept", "text/html")
                .header("cookie", "a=b"),
            get("/"),
        ],
    );
}

#[test]
fn user_agents_read_the_first_line() {
    check(
        r#"{"user_agent": {"contains": ["Miniflux", "newsboat"], "nocase": true}}"#,
        vec![
            get("/").ua("Miniflux/2.1 (+https://miniflux.app)"),
            get("/").ua("NEWSBOAT/2.30"),
        ],
        vec![
            get("/").ua("curl/8"),
            get("/"),
            get("/").ua("curl/8").ua("Miniflux"),
        ],
    );
    check(
        r#"{"user_agent": {"contains": "Miniflux"}}"#,
        vec![get("/").ua("Miniflux/2")],
        vec![get("/").ua("miniflux/2")],
    );
    check(
        r#"{"user_agent": {"exact": ""}}"#,
        vec![get("/"), get("/").ua("")],
        vec![get("/").ua("x")],
    );
}

#[test]
fn clients_in_named_lists_ipv4_and_ipv6() {
    let r = rules(
        r#"{"lists": {"office": ["192.0.2.0/24", "2001:db8:1::/48"], "vpn": ["198.51.100.7"]},
            "rules": [{"name": "r", "when": {"client": ["office", "vpn"]}, "action": "pass"}]}"#,
    );
    for yes in [
        "192.0.2.1",
        "192.0.2.255",
        "::ffff:192.0.2.9",
        "2001:db8:1:ffff::1",
        "198.51.100.7",
    ] {
        assert!(get("/").client(yes).hits(&r), "{yes}");
    }
    for no in [
        "192.0.3.1",
        "2001:db8:2::1",
        "198.51.100.8",
        "::192.0.2.1",
        "203.0.113.9",
    ] {
        assert!(!get("/").client(no).hits(&r), "{no}");
    }
    let mut unix = get("/");
    unix.client = None;
    assert!(!unix.hits(&r), "no address is in no list");
}

#[test]
fn lists_from_files_text_and_published_json() {
    let dir = std::env::temp_dir().join(format!("edgeguard-rules-lists-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("office.txt"),
        "# the office\n192.0.2.0/25   # first half\n\n2001:db8::/32\r\n198.51.100.1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("monitor.json"),
        r#"{"creationTime": "x", "prefixes": [{"ipv4Prefix": "203.0.113.0/28"}, {"ipv6Prefix": "2001:db8:ffff::/48"}]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("bad.txt"), "192.0.2.0/24\nnot-an-address\n").unwrap();
    let json = r#"{"lists": {"office": {"file": "office.txt"}, "monitor": {"file": "monitor.json"}},
                   "rules": [{"name": "o", "when": {"client": "office"}, "action": "pass"},
                             {"name": "m", "when": {"client": "monitor"}, "action": "allow"}]}"#;
    let r = Rules::parse("t.json", &dir, json.as_bytes(), &Context::default()).unwrap();
    assert_eq!(
        get("/").client("192.0.2.100").decide(&r),
        Some(("o", Action::Pass))
    );
    assert_eq!(get("/").client("192.0.2.200").decide(&r), None);
    assert_eq!(
        get("/").client("2001:db8::5").decide(&r),
        Some(("o", Action::Pass))
    );
    assert_eq!(
        get("/").client("198.51.100.1").decide(&r),
        Some(("o", Action::Pass))
    );
    assert_eq!(
        get("/").client("203.0.113.15").decide(&r),
        Some(("m", Action::Allow))
    );
    let bad = r#"{"lists": {"x": {"file": "bad.txt"}}, "rules": [{"when": {"client": "x"}, "action": "pass"}]}"#;
    let e = Rules::parse("t.json", &dir, bad.as_bytes(), &Context::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.json: lists.x.file: ")
            && e.ends_with("bad.txt: line 2: invalid address in CIDR block 'not-an-address'"),
        "{e}"
    );
    let missing = r#"{"lists": {"x": {"file": "nope.txt"}}, "rules": [{"when": {"client": "x"}, "action": "pass"}]}"#;
    let e = Rules::parse("t.json", &dir, missing.as_bytes(), &Context::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("lists.x.file: ") && e.contains("nope.txt: cannot read"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bots_by_verdict_category_and_name() {
    let gpt = get("/").bot(true, Category::AiCrawler, "GPTBot");
    let fake_gpt = get("/").bot(false, Category::AiCrawler, "GPTBot");
    let google = get("/").bot(true, Category::Search, "Googlebot");
    check(
        r#"{"bot": {"category": "ai-crawler"}}"#,
        vec![gpt.clone()],
        vec![fake_gpt.clone(), google.clone(), get("/")],
    );
    check(
        r#"{"bot": {"verdict": "fake"}}"#,
        vec![fake_gpt.clone()],
        vec![gpt.clone(), google.clone(), get("/")],
    );
    check(
        r#"{"bot": {"verdict": "any", "category": ["ai-crawler", "search"]}}"#,
        vec![gpt.clone(), fake_gpt.clone(), google.clone()],
        vec![get("/")],
    );
    check(
        r#"{"bot": {"name": "Googlebot"}}"#,
        vec![google.clone()],
        vec![
            gpt.clone(),
            get("/").bot(true, Category::Search, "googlebot"),
        ],
    );
    check(
        r#"{"bot": {}}"#,
        vec![gpt, google],
        vec![fake_gpt, get("/")],
    );
}

#[test]
fn tls_by_ja4_and_family() {
    const CHROME: &str = "t13d1516h2_8daaf6152771_02713d6af862";
    const CURL: &str = "t13d3112h2_e8f1e7e78f70_6bebaf5329ac";
    let chrome = get("/").tls(CHROME, Family::Boringssl);
    let curl = get("/").tls(CURL, Family::Openssl);
    check(
        r#"{"tls": {"family": ["openssl", "go"]}}"#,
        vec![curl.clone()],
        vec![chrome.clone(), get("/")],
    );
    check(
        r#"{"tls": {"family": "none"}}"#,
        vec![get("/")],
        vec![curl.clone()],
    );
    check(
        r#"{"tls": {"ja4": {"exact": "t13d1516h2_8daaf6152771_02713d6af862"}}}"#,
        vec![chrome.clone()],
        vec![curl.clone(), get("/")],
    );
    check(
        r#"{"tls": {"ja4": {"prefix": "t13d3112h2_"}, "family": "openssl"}}"#,
        vec![curl.clone()],
        vec![chrome, get("/")],
    );
}

/// The fleet's counts for one key.
fn counts(requests: u64, prefixes: u64, challenges: u64, solved: u64) -> crate::signals::Counts {
    crate::signals::Counts {
        requests,
        prefixes24: prefixes,
        prefixes48: 0,
        user_agents: 3,
        flagged: requests / 2,
        challenges,
        solved,
        cleared: requests / 10,
    }
}

#[test]
fn signals_bound_each_count_and_share() {
    // Spread over many prefixes, never solving; a browser people solve.
    let spread = counts(1000, 400, 300, 0);
    let browser = counts(1000, 400, 300, 290);
    let fresh = counts(5, 1, 0, 0);
    let ja4 = |c| get("/").fleet(Some(c), None);
    let hdr = |c| get("/").fleet(None, Some(c));
    check(
        r#"{"signal": {"prefixes": {"min": 50}, "solved": {"max": 0.05}}}"#,
        vec![
            ja4(spread),
            hdr(spread),
            get("/").fleet(Some(browser), Some(spread)),
        ],
        vec![
            ja4(browser),
            ja4(fresh),
            get("/").fleet(None, None),
            get("/"),
        ],
    );
    check(
        r#"{"signal": {"key": "ja4", "prefixes": {"min": 50}, "solved": {"max": 0.05}}}"#,
        vec![ja4(spread)],
        vec![hdr(spread), get("/").fleet(Some(browser), Some(spread))],
    );
    check(
        r#"{"signal": {"key": "headers", "requests": {"min": 10, "max": 1000}}}"#,
        vec![hdr(spread), get("/").fleet(Some(fresh), Some(browser))],
        vec![ja4(spread), hdr(fresh), hdr(counts(1001, 1, 0, 0))],
    );
    check(
        r#"{"signal": {"user_agents": {"min": 3}, "flagged": {"min": 0.5}, "cleared": {"max": 0.1}}}"#,
        vec![ja4(spread)],
        vec![
            ja4(crate::signals::Counts {
                user_agents: 2,
                ..spread
            }),
            ja4(crate::signals::Counts {
                flagged: 499,
                ..spread
            }),
            ja4(crate::signals::Counts {
                cleared: 101,
                ..spread
            }),
        ],
    );
    // No challenge served: the share of solves is unknown, in no range.
    check(
        r#"{"signal": {"solved": {"max": 1}}}"#,
        vec![ja4(spread), ja4(browser)],
        vec![ja4(fresh)],
    );
    // Known at all, whatever the counts.
    check(
        r#"{"signal": {}}"#,
        vec![ja4(fresh), hdr(fresh)],
        vec![get("/").fleet(None, None), get("/")],
    );
}

#[test]
fn signals_unknown_to_the_fleet_needs_a_snapshot() {
    let spread = counts(1000, 400, 300, 0);
    check(
        r#"{"signal": {"known": false}}"#,
        vec![get("/").fleet(None, None)],
        vec![
            get("/").fleet(Some(spread), None),
            get("/").fleet(None, Some(spread)),
            // No snapshot in force: unknown, neither known nor not.
            get("/"),
        ],
    );
    check(
        r#"{"signal": {"key": "ja4", "known": false}}"#,
        vec![
            get("/").fleet(None, None),
            get("/").fleet(None, Some(spread)),
        ],
        vec![get("/").fleet(Some(spread), None), get("/")],
    );
    let r = rules(
        r#"{"rules": [{"name": "fleet", "when": {"signal": {"known": false}}, "action": "log"},
                      {"name": "s", "when": {"signal": {"requests": {"min": 1}}, "score": {"model": "bot", "at_least": 0.5}}, "action": "block"}]}"#,
    );
    assert_eq!(r.first_signal(), Some("rules[0]"));
    assert_eq!(r.describe(0).unwrap().stage, Stage::BeforeScoring);
    assert_eq!(r.describe(1).unwrap().stage, Stage::AfterScoring);
    assert_eq!(
        get("/")
            .fleet(Some(spread), None)
            .scores(&[0.9, 0.0])
            .decide(&r),
        Some(("s", Action::Block(403)))
    );
    assert_eq!(
        get("/")
            .fleet(Some(spread), None)
            .scores(&[0.1, 0.0])
            .decide(&r),
        None
    );
    assert_eq!(
        rules(r#"{"rules": [{"action": "log"}]}"#).first_signal(),
        None
    );
}

#[test]
fn signal_refusals_name_the_field() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"key": "tls"}"#,
            "rules[0].when.signal.key: 'tls' is not a key (ja4, headers, any)",
        ),
        (
            r#"{"prefixes": {}}"#,
            "rules[0].when.signal.prefixes: give min, max or both",
        ),
        (
            r#"{"prefixes": {"min": -1}}"#,
            "rules[0].when.signal.prefixes.min: -1 must be a number of at least 0",
        ),
        (
            r#"{"solved": {"max": 5}}"#,
            "rules[0].when.signal.solved.max: 5 is a share: from 0 to 1",
        ),
        (
            r#"{"flagged": {"min": 1.5}}"#,
            "rules[0].when.signal.flagged.min: 1.5 is a share",
        ),
        (
            r#"{"requests": {"min": 10, "max": 5}}"#,
            "rules[0].when.signal.requests: no value is at least 10 and at most 5",
        ),
        (
            r#"{"known": false, "requests": {"min": 1}}"#,
            "rules[0].when.signal.known: a key the fleet does not know has no counts",
        ),
        (
            r#"{"requests": {"min": "many"}}"#,
            "rules[0].when.signal.requests.min: invalid type: string",
        ),
        (
            r#"{"requests": {"least": 1}}"#,
            "rules[0].when.signal.requests.least: unknown field `least`",
        ),
        (
            r#"{"prefixes24": {"min": 1}}"#,
            "rules[0].when.signal.prefixes24: unknown field `prefixes24`",
        ),
        (
            r#"{"known": "no"}"#,
            "rules[0].when.signal.known: invalid type: string",
        ),
    ];
    for (cond, want) in cases {
        let json = format!(r#"{{"rules": [{{"when": {{"signal": {cond}}}, "action": "log"}}]}}"#);
        let got = refused(&json);
        assert!(got.contains(want), "{json}\n  got: {got}\n want: {want}");
    }
}

#[test]
fn scores_need_scoring_and_ranges_are_half_open() {
    let r = rules(
        r#"{"rules": [
            {"name": "sure", "when": {"score": {"model": "bot", "at_least": 0.9}}, "action": "block", "status": 429},
            {"name": "low", "when": {"score": [{"model": "bot", "below": 0.1}, {"model": "spoof", "below": 0.5}]}, "action": "allow"}]}"#,
    );
    assert_eq!(
        get("/").scores(&[0.9, 0.0]).decide(&r),
        Some(("sure", Action::Block(429)))
    );
    assert_eq!(
        get("/").scores(&[0.95, 0.0]).decide(&r),
        Some(("sure", Action::Block(429)))
    );
    assert_eq!(get("/").scores(&[0.5, 0.0]).decide(&r), None);
    assert_eq!(
        get("/").scores(&[0.05, 0.2]).decide(&r),
        Some(("low", Action::Allow))
    );
    assert_eq!(
        get("/").scores(&[0.1, 0.2]).decide(&r),
        None,
        "below is exclusive"
    );
    assert_eq!(get("/").scores(&[0.05, 0.5]).decide(&r), None);
    assert_eq!(
        get("/").scores(&[f64::NAN, 0.0]).decide(&r),
        None,
        "NaN is in no range"
    );
    assert_eq!(
        get("/").decide(&r),
        None,
        "unscored: no score condition holds"
    );
    assert_eq!(
        get("/").scores(&[0.95]).decide(&r),
        Some(("sure", Action::Block(429)))
    );
    assert_eq!(
        get("/").scores(&[0.05]).decide(&r),
        None,
        "a missing model's score holds no range"
    );
    assert!(r.has_after_scoring());
    assert_eq!(r.describe(0).unwrap().stage, Stage::AfterScoring);
}

#[test]
fn first_match_wins_and_stages_keep_file_order() {
    let r = rules(
        r#"{"rules": [
            {"name": "feeds", "when": {"path": {"prefix": "/feed"}}, "action": "pass", "tag": "feed"},
            {"name": "ai", "when": {"bot": {"category": "ai-crawler"}}, "action": "block"},
            {"name": "admin", "when": {"path": {"prefix": "/admin"}}, "action": "challenge"},
            {"name": "catch", "action": "log"},
            {"name": "sure", "when": {"score": {"model": "bot", "at_least": 0.5}}, "action": "block"}]}"#,
    );
    let gpt = get("/feed").bot(true, Category::AiCrawler, "GPTBot");
    assert_eq!(
        gpt.decide(&r),
        Some(("feeds", Action::Pass)),
        "the earlier rule wins"
    );
    assert_eq!(
        get("/x")
            .bot(true, Category::AiCrawler, "GPTBot")
            .decide(&r),
        Some(("ai", Action::Block(403)))
    );
    assert_eq!(
        get("/admin/").decide(&r),
        Some(("admin", Action::Challenge))
    );
    // A rule before scoring took it: the score rule never runs.
    assert_eq!(
        get("/x").scores(&[0.99, 0.0]).decide(&r),
        Some(("catch", Action::Log))
    );
    let m = r.describe(0).unwrap();
    assert_eq!(
        (m.name, m.tag, m.stage, m.from),
        ("feeds", "feed", Stage::BeforeScoring, "rules[0]")
    );
    assert_eq!(m.when, r#"{"path":{"prefix":"/feed"}}"#);
    assert_eq!(r.len(), 5);
}

#[test]
fn presets_expand_in_place() {
    let r = rules(
        r#"{"rules": [{"preset": "well-known"}, {"preset": "feeds"}, {"name": "x", "action": "challenge"}]}"#,
    );
    let names: Vec<&str> = (0..r.len()).map(|i| r.describe(i).unwrap().name).collect();
    assert_eq!(&names[..2], ["well-known/robots-txt", "well-known/dir"]);
    assert!(names.contains(&"feeds/path"));
    assert_eq!(names.last(), Some(&"x"));
    assert_eq!(
        get("/robots.txt").decide(&r),
        Some(("well-known/robots-txt", Action::Pass))
    );
    assert_eq!(
        get("/robots.txt").method("POST").decide(&r),
        Some(("x", Action::Challenge))
    );
    assert_eq!(
        get("/sitemap_index.xml").decide(&r),
        Some(("well-known/sitemaps", Action::Pass))
    );
    assert_eq!(
        get("/sitemap.xml.gz").decide(&r),
        Some(("well-known/sitemaps", Action::Pass))
    );
    assert_eq!(
        get("/.well-known/acme-challenge/tok").decide(&r),
        Some(("well-known/dir", Action::Pass))
    );
    assert_eq!(
        get("/.well-known/../wp-admin").decide(&r),
        Some(("x", Action::Challenge))
    );
    assert!(r.describe(0).unwrap().from.contains("preset well-known"));
}

#[test]
fn the_feeds_preset_takes_feeds_and_only_feeds() {
    let r = rules(r#"{"rules": [{"preset": "feeds"}]}"#);
    for feed in [
        "/feed",
        "/feed/",
        "/blog/feed/",
        "/comments/feed",
        "/rss",
        "/rss.xml",
        "/atom.xml",
        "/index.xml",
        "/blog/index.xml",
        "/feeds/all.atom.xml",
        "/@alice.rss",
        "/commits.atom",
        "/feed.json",
        "/FEED",
        "/feed/atom/",
        "/?feed=rss2",
        "/?feed=atom&x=1",
    ] {
        assert_eq!(
            get(feed).decide(&r).map(|m| m.1),
            Some(Action::Pass),
            "{feed}"
        );
    }
    for page in [
        "/",
        "/feedback",
        "/rss-guide",
        "/blog/post",
        "/sitemap.xml",
        "/a/?feed=rss2",
        "/?feed=rss2x",
        "/feeds/all.html",
    ] {
        assert_eq!(get(page).decide(&r), None, "{page}");
    }
    assert_eq!(get("/feed").method("POST").decide(&r), None);
    // A known reader asking for a feed type, anywhere.
    let reader = get("/blog/")
        .ua("Miniflux/2.1.3 (+https://miniflux.app)")
        .header("accept", "application/rss+xml, application/atom+xml;q=0.9");
    assert_eq!(reader.decide(&r), Some(("feeds/readers", Action::Pass)));
    assert_eq!(
        get("/blog/")
            .ua("Miniflux/2.1.3")
            .header("accept", "text/html")
            .decide(&r),
        None
    );
    assert_eq!(
        get("/blog/")
            .ua("python-requests/2")
            .header("accept", "application/rss+xml")
            .decide(&r),
        None
    );
    // Google's feed fetcher, verified by address, anywhere.
    let ff = get("/any").bot(true, Category::Feed, "FeedFetcher-Google");
    assert_eq!(ff.decide(&r), Some(("feeds/verified", Action::Pass)));
    assert_eq!(
        get("/any")
            .bot(false, Category::Feed, "FeedFetcher-Google")
            .decide(&r),
        None
    );
}

#[test]
fn the_other_presets() {
    let r = rules(
        r#"{"rules": [{"preset": "link-previews"}, {"preset": "monitors"}, {"preset": "webhooks"}]}"#,
    );
    assert_eq!(
        get("/post/1")
            .ua("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)")
            .decide(&r),
        Some(("link-previews/user-agent", Action::Allow))
    );
    assert_eq!(
        get("/post/1").ua("facebookexternalhit/1.1").decide(&r),
        Some(("link-previews/user-agent", Action::Allow))
    );
    assert_eq!(
        get("/post/1")
            .ua("http.rb/5.1.1 (Mastodon/4.2.0; +https://mastodon.social/)")
            .decide(&r),
        Some(("link-previews/user-agent", Action::Allow))
    );
    assert_eq!(
        get("/post/1")
            .bot(true, Category::Preview, "TelegramBot")
            .decide(&r),
        Some(("link-previews/verified", Action::Pass))
    );
    assert_eq!(
        get("/health")
            .bot(true, Category::Monitor, "UptimeRobot")
            .decide(&r),
        Some(("monitors/verified", Action::Pass))
    );
    assert_eq!(
        get("/health")
            .bot(false, Category::Monitor, "UptimeRobot")
            .decide(&r),
        None
    );
    assert_eq!(
        get("/hook")
            .method("POST")
            .bot(true, Category::Webhook, "GitHub")
            .decide(&r),
        Some(("webhooks/verified", Action::Pass))
    );
    assert_eq!(
        get("/hook")
            .bot(true, Category::Webhook, "GitHub")
            .decide(&r),
        None,
        "webhooks POST"
    );
    assert_eq!(
        get("/")
            .ua("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0")
            .decide(&r),
        None
    );
}

#[test]
fn every_shipped_preset_compiles_alone() {
    for (name, _) in presets::PRESETS {
        let r = rules(&format!(r#"{{"rules": [{{"preset": "{name}"}}]}}"#));
        assert!(!r.is_empty() && !r.has_after_scoring(), "{name}");
    }
}

#[test]
fn empty_when_matches_everything() {
    let r = rules(r#"{"rules": [{"action": "challenge"}]}"#);
    assert_eq!(get("/x").decide(&r), Some(("rule-0", Action::Challenge)));
    let r = rules(r#"{"rules": [{"when": {}, "action": "block", "status": 451}]}"#);
    assert_eq!(get("/x").decide(&r), Some(("rule-0", Action::Block(451))));
}

#[test]
fn refusals_name_file_rule_and_field() {
    let cases: &[(&str, &str)] = &[
        ("", "test.json: EOF while parsing"),
        ("[]", "test.json: invalid length"),
        ("5", "test.json: invalid type: integer `5`, expected struct File"),
        (r#"{"rules": []}"#, "test.json: rules: lists no rule"),
        (r#"{"rules": [{"when": {}, "action": "pass"}], "x": 1}"#, "test.json: x: unknown field `x`"),
        (r#"{"rules": [{"action": "pass", "when": {"metod": "GET"}}]}"#, "test.json: rules[0].when.metod: unknown field `metod`"),
        (r#"{"rules": [{"action": "pass"}, {"action": "pass", "when": {"path": {"prefx": "/"}}}]}"#, "rules[1].when.path.prefx: unknown field `prefx`"),
        (r#"{"rules": [{"action": "pass", "when": {"method": 5}}]}"#, "rules[0].when.method: invalid type: integer `5`, expected one value or an array of them"),
        (r#"{"rules": [{"action": "pass", "when": {"method": [5]}}]}"#, "rules[0].when.method[0]: invalid type: integer `5`, expected a string"),
        (r#"{"rules": [{"action": "pass", "when": {"method": "G T"}}]}"#, "rules[0].when.method: 'G T' is not a method"),
        (r#"{"rules": [{"action": "pass", "when": {"method": []}}]}"#, "rules[0].when.method: lists nothing"),
        (r#"{"rules": [{"action": "fly"}]}"#, "rules[0].action: 'fly' is not an action"),
        (r#"{"rules": [{"when": {}}]}"#, "rules[0].action: missing"),
        (r#"{"rules": [{"action": "pass", "status": 403}]}"#, "rules[0].status: only a block has a status"),
        (r#"{"rules": [{"action": "block", "status": 200}]}"#, "rules[0].status: 200 is not an error status"),
        (r#"{"rules": [{"action": "block", "status": 70000}]}"#, "rules[0].status: invalid value: integer `70000`, expected u16"),
        (r#"{"rules": [{"action": "pass", "name": "a b"}]}"#, "rules[0].name: 'a b' must be"),
        (r#"{"rules": [{"action": "pass", "tag": "x\r\nSet-Cookie: a"}]}"#, "rules[0].tag: "),
        (r#"{"rules": [{"name": "a", "when": {"method": "GET"}, "action": "pass"}, {"name": "a", "action": "pass"}]}"#, "rules[1].name: 'a' is also the name of rules[0]"),
        (r#"{"rules": [{"action": "pass"}, {"action": "block"}]}"#, "rules[1]: never runs: rules[0] matches every request"),
        (r#"{"rules": [{"when": {"score": {"model": "bot", "at_least": 0.5}}, "action": "block"}, {"when": {"method": "GET"}, "action": "pass"}]}"#,
         "rules[1]: has no score condition but comes after rules[0], which has one"),
        (r#"{"rules": [{"when": {"score": {"model": "cat", "at_least": 0.5}}, "action": "block"}]}"#, "rules[0].when.score.model: no model 'cat' (models: bot, spoof)"),
        (r#"{"rules": [{"when": {"score": {"model": "bot"}}, "action": "block"}]}"#, "rules[0].when.score: give at_least, below or both"),
        (r#"{"rules": [{"when": {"score": {"model": "bot", "at_least": 0.5, "below": 0.5}}, "action": "block"}]}"#, "no score is at least 0.5 and below 0.5"),
        (r#"{"rules": [{"when": {"score": [{"model": "bot", "below": 1}, {"model": "bot", "at_least": "x"}]}, "action": "block"}]}"#, "rules[0].when.score[1].at_least: invalid type: string"),
        (r#"{"rules": [{"when": {"path": {}}, "action": "pass"}]}"#, "rules[0].when.path: give exactly one of exact, prefix, suffix, contains, regex"),
        (r#"{"rules": [{"when": {"path": {"exact": "/", "prefix": "/"}}, "action": "pass"}]}"#, "rules[0].when.path: give exactly one of"),
        (r#"{"rules": [{"when": {"path": {"prefix": ""}}, "action": "pass"}]}"#, "rules[0].when.path.prefix: is empty: it would match everything"),
        (r#"{"rules": [{"when": {"user_agent": {"contains": ["a", ""]}}, "action": "pass"}]}"#, "rules[0].when.user_agent.contains[1]: is empty"),
        (r#"{"rules": [{"when": {"path": {"regex": "a("}}, "action": "pass"}]}"#, "rules[0].when.path.regex: regex parse error:"),
        (r#"{"rules": [{"when": {"host": "example.com:80"}, "action": "pass"}]}"#, "rules[0].when.host: 'example.com:80' is not a host name"),
        (r#"{"rules": [{"when": {"host": ["a.com", "*"]}, "action": "pass"}]}"#, "rules[0].when.host[1]: '*' is not a host name"),
        (r#"{"rules": [{"when": {"header": {"name": "accept"}}, "action": "pass"}]}"#, "rules[0].when.header: says nothing of the header"),
        (r#"{"rules": [{"when": {"header": {"name": "a b", "present": true}}, "action": "pass"}]}"#, "rules[0].when.header.name: 'a b' is not a header name"),
        (r#"{"rules": [{"when": {"header": {"name": "accept", "present": true, "exact": "x"}}, "action": "pass"}]}"#, "rules[0].when.header.present: a value test already needs the header"),
        (r#"{"rules": [{"when": {"header": [{"name": "a", "present": true}, {"name": "b", "present": false, "once": true}]}, "action": "pass"}]}"#, "rules[0].when.header[1].once: an absent header is not there once"),
        (r#"{"rules": [{"when": {"header": {"name": "a", "colour": "x"}}, "action": "pass"}]}"#, "rules[0].when.header.colour: unknown field `colour`"),
        (r#"{"rules": [{"when": {"client": "office"}, "action": "pass"}]}"#, "rules[0].when.client: no list 'office' in \"lists\" (lists: none)"),
        (r#"{"lists": {"a": ["192.0.2.0/24", "nope"]}, "rules": [{"when": {"client": "a"}, "action": "pass"}]}"#, "test.json: lists.a[1]: invalid address in CIDR block 'nope'"),
        (r#"{"lists": {"a": []}, "rules": [{"when": {"client": "a"}, "action": "pass"}]}"#, "lists.a: lists no address"),
        (r#"{"lists": {"a b": ["192.0.2.0/24"]}, "rules": [{"action": "pass"}]}"#, "lists.a b: 'a b' must be"),
        (r#"{"lists": {"a": 5}, "rules": [{"action": "pass"}]}"#, "lists.a: data did not match any variant"),
        (r#"{"rules": [{"when": {"bot": {"category": "robots"}}, "action": "pass"}]}"#, "rules[0].when.bot.category: 'robots' is not a category (search, ai-crawler"),
        (r#"{"rules": [{"when": {"bot": {"verdict": "maybe"}}, "action": "pass"}]}"#, "rules[0].when.bot.verdict: 'maybe' is not a verdict"),
        (r#"{"rules": [{"when": {"tls": {}}, "action": "pass"}]}"#, "rules[0].when.tls: says nothing: give ja4 or family"),
        (r#"{"rules": [{"when": {"tls": {"family": ["go", "rustls"]}}, "action": "pass"}]}"#, "rules[0].when.tls.family[1]: 'rustls' is not a TLS family"),
        (r#"{"rules": [{"preset": "fedds"}]}"#, "rules[0].preset: no preset 'fedds' (presets: well-known, feeds, link-previews, monitors, webhooks)"),
        (r#"{"rules": [{"preset": "feeds", "action": "block"}]}"#, "rules[0]: a preset entry has only \"preset\""),
        (r#"{"rules": [{"preset": 5}]}"#, "rules[0].preset: invalid type: integer `5`, expected a string"),
        (r#"{"rules": [{"preset": "feeds"}, {"preset": "feeds"}]}"#, "'feeds/verified' is also the name of rules[0] (preset feeds: rules[0])"),
    ];
    for (json, want) in cases {
        let got = refused(json);
        assert!(got.contains(want), "{json}\n  got: {got}\n want: {want}");
        assert!(got.starts_with("test.json: "), "{got}");
    }
}

#[test]
fn contains_one_or_many_patterns_short_texts_and_case() {
    // One pattern (a substring search), several (an automaton); a text
    // shorter than every pattern fails before a search; nocase folds.
    check(
        r#"{"query": {"contains": "utm_source=spam"}}"#,
        vec![get("/?utm_source=spam"), get("/?a=1&utm_source=spam&b")],
        vec![
            get("/?utm_source=spa"),
            get("/?x"),
            get("/"),
            get("/?UTM_SOURCE=SPAM"),
        ],
    );
    check(
        r#"{"query": {"contains": "utm_source=spam", "nocase": true}}"#,
        vec![get("/?UTM_Source=Spam"), get("/?utm_source=spam")],
        vec![get("/?utm_source=spa"), get("/")],
    );
    check(
        r#"{"query": {"contains": ["%3cscript", "union+select"], "nocase": true}}"#,
        vec![
            get("/?q=%3CScript"),
            get("/?q=1+UNION+SELECT+2"),
            get("/?%3cscript"),
        ],
        vec![get("/?q=%3Cscrip"), get("/?q=union"), get("/?%3c")],
    );
    check(
        r#"{"user_agent": {"contains": ["ab", "abcdef"]}}"#,
        vec![get("/").ua("xxab"), get("/").ua("ab")],
        vec![get("/").ua("a"), get("/").ua(""), get("/").ua("AB")],
    );
}

#[test]
fn index_agrees_with_visiting_every_rule() {
    // Random files of up to 150 rules (three words of the index) over the
    // conditions it reads (method, path, bot) and others it does not,
    // against random requests: the indexed stages and a walk over every
    // rule give the same first rule, before and after scoring.
    let methods = [
        r#"["GET", "HEAD"]"#,
        r#""POST""#,
        r#"["PURGE", "BAN"]"#,
        r#"["OPTIONS", "get"]"#,
        r#"["DELETE", "PUT", "PATCH", "TRACE", "CONNECT"]"#,
    ];
    let paths = [
        r#"{"exact": "/"}"#,
        r#"{"exact": ["/feed", "/Feed/", "/a"]}"#,
        r#"{"exact": ["/FEED"], "nocase": true}"#,
        r#"{"prefix": ["/.well-known/", "/a"]}"#,
        r#"{"prefix": "/"}"#,
        r#"{"prefix": ["/B"], "nocase": true}"#,
        r#"{"prefix": "x"}"#,
        r#"{"suffix": ".xml"}"#,
        r#"{"contains": "dm"}"#,
        r#"{"regex": "^/a"}"#,
    ];
    let others = [
        r#""bot": {"category": "search"}"#,
        r#""bot": {"verdict": "fake"}"#,
        r#""host": "example.com""#,
        r#""query": {"contains": "x=1"}"#,
        r#""user_agent": {"prefix": "curl/"}"#,
        r#""client": "net""#,
    ];
    let reqs_methods = [
        "GET", "HEAD", "POST", "BAN", "get", "PURGE", "OPTIONS", "BREW",
    ];
    let targets = [
        "/",
        "/feed",
        "/Feed/",
        "/FEED",
        "/a",
        "/admin",
        "//admin",
        "/%61dmin",
        "/b/../a",
        "/.well-known/x",
        "/bc",
        "/sitemap.xml",
        "*",
        "",
        "/..",
        "/a?x=1",
        "/x%zz",
    ];
    let mut rng = fastrand::Rng::with_seed(32);
    let mut scratch = NormalPath::new();
    for _ in 0..300 {
        let n = rng.usize(1..150);
        let scored = rng.usize(0..=n.min(20));
        let mut rs = Vec::new();
        for i in 0..n {
            let mut conds = Vec::new();
            if rng.bool() {
                conds.push(format!(
                    r#""method": {}"#,
                    methods[rng.usize(..methods.len())]
                ));
            }
            if rng.u8(..3) != 0 {
                conds.push(format!(r#""path": {}"#, paths[rng.usize(..paths.len())]));
            }
            if rng.u8(..3) == 0 {
                conds.push(others[rng.usize(..others.len())].to_owned());
            }
            if conds.is_empty() {
                // A rule without a condition is refused before others.
                conds.push(format!(
                    r#""method": {}"#,
                    methods[rng.usize(..methods.len())]
                ));
            }
            if i >= n - scored {
                conds.push(r#""score": {"model": "bot", "at_least": 0.5}"#.to_owned());
            }
            rs.push(format!(
                r#"{{"name": "r{i}", "when": {{{}}}, "action": "pass"}}"#,
                conds.join(", ")
            ));
        }
        let r = rules(&format!(
            r#"{{"lists": {{"net": ["203.0.113.0/24"]}}, "rules": [{}]}}"#,
            rs.join(", ")
        ));
        for _ in 0..40 {
            let mut q = get(targets[rng.usize(..targets.len())])
                .method(reqs_methods[rng.usize(..reqs_methods.len())]);
            if rng.bool() {
                q = q.ua("curl/8");
            }
            q = match rng.u8(..3) {
                0 => q.bot(true, Category::Search, "googlebot"),
                1 => q.bot(false, Category::Feed, "x"),
                _ => q,
            };
            let headers: Vec<Header<'_>> = q
                .headers
                .iter()
                .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
                .collect();
            let (path, query) = split_target(q.target.as_bytes());
            let scores = [rng.f64(), rng.f64()];
            let view = View {
                method: q.method.as_bytes(),
                host: q.host.as_bytes(),
                path,
                query,
                headers: &headers,
                user_agent: q.headers.get(1).map_or(&b""[..], |h| h.1.as_bytes()),
                client: q.client,
                bot: q.bot,
                tls: None,
                scores: &scores,
                fleet: None,
                clients: None,
            };
            let indexed = r.before_scoring(&view, &mut scratch).map(|m| m.index);
            let all = r.first_visiting_all(Stage::BeforeScoring, &view, &mut scratch);
            assert_eq!(indexed, all, "{} {}", q.method, q.target);
            let indexed = r.after_scoring(&view, &mut scratch).map(|m| m.index);
            let all = r.first_visiting_all(Stage::AfterScoring, &view, &mut scratch);
            assert_eq!(indexed, all, "{} {} (scored)", q.method, q.target);
        }
    }
}

#[test]
fn client_conditions_read_the_memory_and_hold_without_it_never() {
    let r = rules(
        r#"{"rules": [{"name": "crawl", "when": {"client.navigations": {"min": 10}, "client.subresource_ratio": {"max": 0.05},
              "client.cookie_returned": {"max": 0}}, "action": "challenge"},
            {"name": "old", "when": {"client.age": {"min": 600}, "client.rate": {"max": 1}}, "action": "log"}]}"#,
    );
    let crawler = crate::clients::ClientView {
        known: true,
        navigations: 12,
        paths: 12,
        first_seen_s: 1_800_000_000,
        last_seen_ms: 1_800_000_030_000,
        rate: 0.4,
        ..Default::default()
    };
    let with = |v| Req {
        clients: Some(v),
        ..get("/")
    };
    assert_eq!(with(crawler).decide(&r).map(|m| m.0), Some("crawl"));
    let browser = crate::clients::ClientView {
        subresources_by_class: [20, 10, 30, 0, 0, 0],
        ..crawler
    };
    assert_eq!(with(browser).decide(&r), None);
    let returned = crate::clients::ClientView {
        cookies_returned: 1,
        ..crawler
    };
    assert_eq!(with(returned).decide(&r), None);
    let old = crate::clients::ClientView {
        first_seen_s: 1_799_999_000,
        ..browser
    };
    assert_eq!(with(old).decide(&r).map(|m| m.0), Some("old"));
    assert_eq!(
        get("/").decide(&r),
        None,
        "no memory: no client condition holds"
    );
    for (json, want) in [
        (
            r#"{"client.navigations": {}}"#,
            "rules[0].when.client.navigations: give min, max or both",
        ),
        (
            r#"{"client.subresource_ratio": {"min": 2}}"#,
            "client.subresource_ratio.min: 2 is a share",
        ),
        (
            r#"{"client.paths": {"min": -1}}"#,
            "must be a number of at least 0",
        ),
        (
            r#"{"client.rate": {"min": 3, "max": 2}}"#,
            "no value is at least 3 and at most 2",
        ),
        (r#"{"client.visits": {"min": 3}}"#, "client.visits"),
        (
            r#"{"client.direct_ratio": {"max": 1.5}}"#,
            "client.direct_ratio.max: 1.5 is a share",
        ),
    ] {
        let e = refused(&format!(
            r#"{{"rules": [{{"name": "x", "when": {json}, "action": "log"}}]}}"#
        ));
        assert!(e.contains(want), "{json}: {e}");
    }
}

#[test]
fn direct_navigation_conditions_tell_a_copied_head_from_a_visit() {
    let r = rules(
        r#"{"rules": [{"name": "from-nowhere", "when": {"client.navigations": {"min": 10},
              "client.direct_ratio": {"min": 0.5}}, "action": "challenge"},
            {"name": "typed", "when": {"client.direct_navigations": {"min": 3}}, "action": "log"}]}"#,
    );
    let visit = crate::clients::ClientView {
        known: true,
        navigations: 10,
        direct_navigations: 1,
        ..Default::default()
    };
    let with = |v| Req {
        clients: Some(v),
        ..get("/")
    };
    assert_eq!(with(visit).decide(&r), None);
    let copied = crate::clients::ClientView {
        direct_navigations: 10,
        ..visit
    };
    assert_eq!(with(copied).decide(&r).map(|m| m.0), Some("from-nowhere"));
    let three = crate::clients::ClientView {
        navigations: 9,
        direct_navigations: 3,
        ..visit
    };
    assert_eq!(with(three).decide(&r).map(|m| m.0), Some("typed"));
}
