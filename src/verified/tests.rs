use std::net::IpAddr;

use super::*;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verified")
}

fn ip(s: &str) -> Option<IpAddr> {
    Some(s.parse().unwrap())
}

const GOOGLEBOT: &[u8] =
    b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const BINGBOT: &[u8] =
    b"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36";
const CHROME: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

#[test]
fn the_fixture_file_verifies_and_catches_fakes() {
    let bots = VerifiedBots::load(&dir().join("bots.json")).unwrap();
    assert_eq!(bots.len(), 2);
    assert_eq!(bots.name(0), Some("Googlebot"));
    let g = |ua: &[u8], a: &str| bots.judge(ua, ip(a));
    // Listed v4 and v6 prefixes, from the per-bot file.
    assert_eq!(g(GOOGLEBOT, "192.0.2.66"), Some(Verdict::Verified(0)));
    assert_eq!(g(GOOGLEBOT, "2001:db8:4801::1"), Some(Verdict::Verified(0)));
    assert_eq!(
        g(GOOGLEBOT, "::ffff:192.0.2.66"),
        Some(Verdict::Verified(0))
    );
    // The same claim from elsewhere, or from the other bot's range.
    assert_eq!(g(GOOGLEBOT, "203.0.113.9"), Some(Verdict::Fake(0)));
    assert_eq!(g(GOOGLEBOT, "198.51.100.5"), Some(Verdict::Fake(0)));
    assert_eq!(bots.judge(GOOGLEBOT, None), Some(Verdict::Fake(0)));
    // Inline prefixes.
    assert_eq!(g(BINGBOT, "198.51.100.5"), Some(Verdict::Verified(1)));
    assert_eq!(g(BINGBOT, "2001:db8:bbbb::7"), Some(Verdict::Verified(1)));
    // A browser from a crawler's range claims nothing.
    assert_eq!(g(CHROME, "192.0.2.66"), None);
    // Case-sensitive, as the vendors document their tokens.
    assert_eq!(g(b"googlebot/2.1", "203.0.113.9"), None);
    assert_eq!(g(b"", "192.0.2.66"), None);
}

fn refused(text: &str) -> String {
    let v: Value = serde_json::from_str(text).unwrap();
    VerifiedBots::from_value(&dir().join("bots.json"), &v)
        .unwrap_err()
        .0
}

#[test]
fn bad_files_name_file_and_field() {
    let cases: &[(&str, &str)] = &[
        (r#"[]"#, "bots.json: not an object with a \"bots\" array"),
        (
            r#"{"bots": {}}"#,
            "bots.json: bots: must be an array, got an object",
        ),
        (r#"{"bots": []}"#, "bots.json: bots: lists no bot"),
        (
            r#"{"bots": [1]}"#,
            "bots[0]: must be an object, got a number",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": [], "x": 1}]}"#,
            "bots[0].x: unknown field",
        ),
        (
            r#"{"bots": [{"tokens": ["abc"], "prefixes": []}]}"#,
            "bots[0].name: missing",
        ),
        (
            r#"{"bots": [{"name": "a b", "tokens": ["abc"], "prefixes": []}]}"#,
            "bots[0].name: 'a b' must be",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["ab"], "prefixes": []}]}"#,
            "bots[0].tokens[0]: 'ab' is shorter than 3",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": [], "prefixes": []}]}"#,
            "bots[0].tokens: lists no token",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": "abc", "prefixes": []}]}"#,
            "bots[0].tokens: must be an array",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": []}]}"#,
            "bots[0].prefixes: lists no prefix",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"]}]}"#,
            "bots[0].prefixes: missing",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": 5}]}"#,
            "bots[0].prefixes: must be a path",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": {"prefixes": [{"ipv4Prefix": "192.0.2.0/24"}, {"ipv4Prefix": "300.0.0.0/8"}]}}]}"#,
            "bots.json: bots[0].prefixes.prefixes[1].ipv4Prefix: invalid address",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": [{"ipv4Prefix": "2001:db8::/32"}]}]}"#,
            "bots[0].prefixes[0].ipv4Prefix: '2001:db8::/32' is not an IPv4 prefix",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": [{"ipv6Prefix": "192.0.2.0/24"}]}]}"#,
            "bots[0].prefixes[0].ipv6Prefix: '192.0.2.0/24' is not an IPv6 prefix",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": [{"ipv6Prefix": "2001:db8::/129"}]}]}"#,
            "bots[0].prefixes[0].ipv6Prefix: prefix length 129 too long",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": [{}]}]}"#,
            "bots[0].prefixes[0]: has neither",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": {"creationTime": "x"}}]}"#,
            "bots[0].prefixes: no \"prefixes\" array",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": "nope.json"}]}"#,
            "bots[0].prefixes: ",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": "bad-prefixes.json"}]}"#,
            "bots.json: bots[0].prefixes: ",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": ["192.0.2.0/24"]}, {"name": "a", "tokens": ["abd"], "prefixes": ["192.0.2.0/24"]}]}"#,
            "bots[0].prefixes[0]: must be an object, got a string",
        ),
    ];
    for (text, want) in cases {
        let got = refused(text);
        assert!(got.contains(want), "{text}\n  got: {got}\n want: {want}");
    }
    // A per-bot file's own field is named after the file.
    let got =
        refused(r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": "bad-prefixes.json"}]}"#);
    assert!(
        got.ends_with(
            "bad-prefixes.json: prefixes[1].ipv6Prefix: invalid address in CIDR block 'nope'"
        ),
        "{got}"
    );
    let got = refused(r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": "nope.json"}]}"#);
    assert!(got.contains("nope.json: cannot read"), "{got}");
    let dup = r#"{"bots": [{"name": "a", "tokens": ["abc"], "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]},
                            {"name": "a", "tokens": ["abd"], "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}]}"#;
    assert!(refused(dup).contains("bots[1].name: 'a' is listed twice"));
    let e = VerifiedBots::load(&dir().join("missing.json"))
        .unwrap_err()
        .0;
    assert!(
        e.ends_with("missing.json: cannot read: No such file or directory (os error 2)"),
        "{e}"
    );
}

#[test]
fn categories_default_to_search_and_are_checked() {
    // A file written before categories: every bot is a search crawler.
    let bots = VerifiedBots::load(&dir().join("bots.json")).unwrap();
    assert_eq!(bots.category(0), Some(Category::Search));
    assert_eq!(bots.category(1), Some(Category::Search));
    assert_eq!(bots.category(2), None);
    let v: Value = serde_json::from_str(
        r#"{"bots": [
            {"name": "GPTBot", "tokens": ["GPTBot"], "category": "ai-crawler", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]},
            {"name": "UptimeRobot", "tokens": ["UptimeRobot"], "category": "monitor", "prefixes": [{"ipv6Prefix": "2001:db8::/32"}]},
            {"name": "Googlebot", "tokens": ["Googlebot"], "category": "search", "prefixes": [{"ipv4Prefix": "198.51.100.0/24"}]}]}"#,
    )
    .unwrap();
    let bots = VerifiedBots::from_value(&dir().join("bots.json"), &v).unwrap();
    assert_eq!(bots.category(0), Some(Category::AiCrawler));
    assert_eq!(bots.category(1), Some(Category::Monitor));
    assert_eq!(bots.category(2), Some(Category::Search));
    let ua = b"Mozilla/5.0 (compatible; GPTBot/1.3; +https://openai.com/gptbot)";
    assert_eq!(bots.judge(ua, ip("192.0.2.1")), Some(Verdict::Verified(0)));
    for (text, want) in [
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "category": "robot", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}]}"#,
            "bots.json: bots[0].category: 'robot' is not a category (search, ai-crawler, ai-assistant, preview, feed, monitor, archive, webhook, other)",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "category": ["search"], "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}]}"#,
            "bots.json: bots[0].category: must be a string, got an array",
        ),
        (
            r#"{"bots": [{"name": "a", "tokens": ["abc"], "category": "Search", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}]}"#,
            "bots[0].category: 'Search' is not a category",
        ),
    ] {
        let got = refused(text);
        assert!(got.contains(want), "{text}\n  got: {got}\n want: {want}");
    }
}
