//! Hostile and broken rules files: each is refused at load, naming the
//! file and the field, within the limits of `edgeguard::rules::limits`;
//! none panics, none is half-loaded.

use std::path::Path;

use edgeguard::rules::limits::*;
use edgeguard::rules::{Context, Rules};

fn load(text: &[u8]) -> Result<Rules, String> {
    Rules::parse(
        "hostile.json",
        Path::new("."),
        text,
        &Context { models: &["bot"] },
    )
    .map_err(|e| e.to_string())
}

fn refused(text: &str, want: &str) {
    let e = load(text.as_bytes())
        .map(|_| ())
        .expect_err(&text[..text.len().min(200)]);
    assert!(e.starts_with("hostile.json: "), "{e}");
    assert!(e.contains(want), "got: {e}\nwant: {want}");
}

fn rule_with(when: &str) -> String {
    format!(r#"{{"rules": [{{"when": {when}, "action": "block"}}]}}"#)
}

#[test]
fn regexes_past_the_size_limit_are_refused() {
    // Each compiles to far more than REGEX_SIZE_LIMIT.
    for pattern in [
        "(?u)\\\\w{200}",
        "a{1000}{1000}",
        "(a|b|c|d|e|f|g|h){1000}{10}",
        "[a-z]{50000}",
        "(?i)(?u)[a-z\\\\w]{500}",
    ] {
        refused(
            &rule_with(&format!(r#"{{"path": {{"regex": "{pattern}"}}}}"#)),
            "rules[0].when.path.regex: ",
        );
    }
    let e = load(rule_with(r#"{"path": {"regex": "a{1000}{1000}"}}"#).as_bytes())
        .err()
        .unwrap();
    assert!(e.contains("size limit") || e.contains("exceeds"), "{e}");
    // What fits is fine.
    load(rule_with(r#"{"path": {"regex": "^/(a|b|c){1,20}$"}}"#).as_bytes()).unwrap();
}

#[test]
fn long_patterns_deep_nesting_and_too_many_regexes() {
    let long = "a".repeat(MAX_PATTERN + 1);
    refused(
        &rule_with(&format!(r#"{{"path": {{"regex": "{long}"}}}}"#)),
        "rules[0].when.path.regex: longer than 4096 bytes",
    );
    let nested = format!("{}a{}", "(".repeat(100), ")".repeat(100));
    refused(
        &rule_with(&format!(r#"{{"user_agent": {{"regex": "{nested}"}}}}"#)),
        "exceed the maximum number of nested parentheses/brackets (32)",
    );
    let rules: Vec<String> = (0..=MAX_REGEXES)
        .map(|i| format!(r#"{{"when": {{"path": {{"regex": "^/r{i}$"}}}}, "action": "block"}}"#))
        .collect();
    refused(
        &format!(r#"{{"rules": [{}]}}"#, rules.join(",")),
        &format!(
            "rules[{MAX_REGEXES}].when.path.regex: more than {MAX_REGEXES} regular expressions"
        ),
    );
}

#[test]
fn huge_lists_strings_and_rule_counts_are_refused() {
    let addrs: Vec<String> = (0..=MAX_LIST_ENTRIES as u32)
        .map(|i| format!("\"10.{}.{}.{}\"", i >> 16 & 255, i >> 8 & 255, i & 255))
        .collect();
    refused(
        &format!(
            r#"{{"lists": {{"big": [{}]}}, "rules": [{{"when": {{"client": "big"}}, "action": "pass"}}]}}"#,
            addrs.join(",")
        ),
        &format!(
            "lists.big: {} entries, more than {MAX_LIST_ENTRIES}",
            MAX_LIST_ENTRIES + 1
        ),
    );
    let values: Vec<String> = (0..=MAX_VALUES).map(|i| format!("\"/p{i}\"")).collect();
    refused(
        &rule_with(&format!(
            r#"{{"path": {{"exact": [{}]}}}}"#,
            values.join(",")
        )),
        "rules[0].when.path.exact: 4097 values, more than 4096",
    );
    let long = "x".repeat(MAX_STRING + 1);
    refused(
        &rule_with(&format!(
            r#"{{"user_agent": {{"contains": ["a", "{long}"]}}}}"#
        )),
        "rules[0].when.user_agent.contains[1]: longer than 4096 bytes",
    );
    let rules: Vec<String> = (0..=MAX_RULES)
        .map(|i| format!(r#"{{"when": {{"path": {{"exact": "/r{i}"}}}}, "action": "block"}}"#))
        .collect();
    refused(
        &format!(r#"{{"rules": [{}]}}"#, rules.join(",")),
        &format!("rules[{MAX_RULES}]: more than {MAX_RULES} rules"),
    );
    let lists: Vec<String> = (0..=MAX_LISTS)
        .map(|i| format!(r#""l{i}": ["192.0.2.{i}"]"#))
        .collect();
    refused(
        &format!(
            r#"{{"lists": {{{}}}, "rules": [{{"action": "pass"}}]}}"#,
            lists.join(",")
        ),
        "lists: 65 lists, more than 64",
    );
    // A file past MAX_FILE is refused before it is parsed.
    let big = vec![b' '; MAX_FILE as usize + 1];
    let e = load(&big).err().unwrap();
    assert_eq!(e, format!("hostile.json: larger than {MAX_FILE} bytes"));
}

#[test]
fn deep_nesting_bad_types_unknown_fields() {
    // serde_json's recursion limit, named as an error, not a stack overflow.
    let deep = format!(
        r#"{{"rules": [{{"action": "pass", "comment": {}1{}}}]}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    refused(&deep, "recursion limit exceeded");
    let deep_when = format!(
        r#"{{"rules": [{{"action": "pass", "when": {{"path": {}}}}}]}}"#,
        "{\"exact\": ".repeat(200) + "\"/\"" + &"}".repeat(200)
    );
    refused(&deep_when, "rules[0].when.path.exact");
    for (text, want) in [
        (
            r#"{"rules": {"action": "pass"}}"#,
            "rules: invalid type: map, expected a sequence",
        ),
        (r#"{"rules": [[]]}"#, "rules[0].action: missing"),
        (
            r#"{"rules": [5]}"#,
            "rules[0]: invalid type: integer `5`, expected struct Rule",
        ),
        (
            r#"{"rules": [{"action": ["pass"]}]}"#,
            "rules[0].action: invalid type: sequence, expected a string",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": []}]}"#,
            "rules[0].when: invalid length 0, expected struct When",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"path": "/x"}}]}"#,
            "rules[0].when.path: invalid type: string \"/x\", expected struct Text",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"path": {"exact": {"a": 1}}}}]}"#,
            "rules[0].when.path.exact: invalid type: map, expected a string",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"path": {"exact": null}}}]}"#,
            "rules[0].when.path: give exactly one of",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"header": {"name": 5, "present": true}}}]}"#,
            "rules[0].when.header.name: invalid type: integer `5`, expected a string",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"header": {"name": "a", "present": "yes"}}}]}"#,
            "rules[0].when.header.present: invalid type: string \"yes\", expected a boolean",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"bot": {"category": 1}}}]}"#,
            "rules[0].when.bot.category: invalid type: integer `1`",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"score": {"model": "bot", "at_least": 1e999}}}]}"#,
            "number out of range",
        ),
        (
            r#"{"rules": [{"action": "block", "status": -1}]}"#,
            "rules[0].status: invalid value: integer `-1`, expected u16",
        ),
        (
            r#"{"rules": [{"action": "pass", "action": "block"}]}"#,
            "duplicate field `action`",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"tls": {"ja4": {"regex": "x"}, "jarm": "y"}}}]}"#,
            "rules[0].when.tls.jarm: unknown field `jarm`",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"bot": {"verified": true}}}]}"#,
            "rules[0].when.bot.verified: unknown field `verified`",
        ),
        (
            r#"{"rules": [{"action": "pass", "when": {"score": {"model": "bot", "above": 0.5}}}]}"#,
            "rules[0].when.score.above: unknown field `above`",
        ),
        (
            r#"{"rules": [{"action": "pass", "wen": {}}]}"#,
            "rules[0].wen: unknown field `wen`",
        ),
        (
            r#"{"lists": {"a": {"file": "x", "format": "y"}}, "rules": [{"action": "pass"}]}"#,
            "lists.a: data did not match any variant",
        ),
        (
            "{\"rules\": [{\"action\": \"pa\u{0}ss\"}]}",
            "rules[0].action: ",
        ),
    ] {
        refused(text, want);
    }
    // Bytes that are not UTF-8 and trailing garbage.
    let e = load(b"{\"rules\": [{\"action\": \"\xff\"}]}")
        .err()
        .unwrap();
    assert!(
        e.starts_with("hostile.json: ") && e.contains("invalid unicode"),
        "{e}"
    );
    refused(
        r#"{"rules": [{"action": "pass"}]} x"#,
        "trailing characters",
    );
}

#[test]
fn list_files_that_are_too_big_or_wrong() {
    let dir = std::env::temp_dir().join(format!("edgeguard-rules-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lines: String = (0..=MAX_LIST_ENTRIES as u32)
        .map(|i| format!("10.{}.{}.{}\n", i >> 16 & 255, i >> 8 & 255, i & 255))
        .collect();
    std::fs::write(dir.join("big.txt"), lines).unwrap();
    std::fs::write(dir.join("binary.txt"), b"\x00\xff\xfe").unwrap();
    std::fs::write(dir.join("empty.txt"), b"# nothing\n\n").unwrap();
    std::fs::write(
        dir.join("bad.json"),
        br#"{"prefixes": [{"ipv4Prefix": "2001:db8::/32"}]}"#,
    )
    .unwrap();
    let ctx = Context::default();
    for (file, want) in [
        ("big.txt", "more than 200000"),
        ("binary.txt", "not UTF-8 text"),
        ("empty.txt", "lists no address"),
        (
            "bad.json",
            "prefixes[0].ipv4Prefix: '2001:db8::/32' is not an IPv4 prefix",
        ),
        ("/dev/zero", "larger than 33554432 bytes"),
    ] {
        let text = format!(
            r#"{{"lists": {{"x": {{"file": "{file}"}}}}, "rules": [{{"when": {{"client": "x"}}, "action": "pass"}}]}}"#
        );
        let e = Rules::parse("hostile.json", &dir, text.as_bytes(), &ctx)
            .map(|_| ())
            .expect_err(file)
            .to_string();
        assert!(
            e.starts_with("hostile.json: lists.x.file: ") && e.contains(want),
            "{file}: {e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // A rules file that never ends.
    let e = Rules::load(Path::new("/dev/zero"), &ctx)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert_eq!(e, format!("/dev/zero: larger than {MAX_FILE} bytes"));
}

#[test]
fn hostile_signal_conditions_are_refused_naming_the_field() {
    let cases: &[(&str, &str)] = &[
        // Numbers JSON can hold but no count or share is.
        (
            r#"{"signal": {"requests": {"min": 1e400}}}"#,
            "rules[0].when.signal.requests.min",
        ),
        (
            r#"{"signal": {"requests": {"max": -0.5}}}"#,
            "rules[0].when.signal.requests.max: -0.5 must be a number of at least 0",
        ),
        (
            r#"{"signal": {"cleared": {"min": 1.0000001}}}"#,
            "rules[0].when.signal.cleared.min: 1.0000001 is a share",
        ),
        (
            r#"{"signal": {"solved": {"min": 0.9, "max": 0.1}}}"#,
            "rules[0].when.signal.solved: no value is at least 0.9 and at most 0.1",
        ),
        // Wrong types and shapes.
        (
            r#"{"signal": {"prefixes": 50}}"#,
            "rules[0].when.signal.prefixes: invalid type: integer `50`",
        ),
        (
            r#"{"signal": {"prefixes": [{"min": 1}]}}"#,
            "rules[0].when.signal.prefixes[0]: invalid type: map",
        ),
        (
            r#"{"signal": {"prefixes": {"min": null}}}"#,
            "rules[0].when.signal.prefixes: give min, max or both",
        ),
        (
            r#"{"signal": {"key": ["ja4"]}}"#,
            "rules[0].when.signal.key: invalid type: sequence",
        ),
        (
            r#"{"signal": {"key": "JA4"}}"#,
            "rules[0].when.signal.key: 'JA4' is not a key",
        ),
        (
            r#"{"signal": {"key": ""}}"#,
            "rules[0].when.signal.key: '' is not a key",
        ),
        (
            r#"{"signal": "spread"}"#,
            "rules[0].when.signal: invalid type: string",
        ),
        (
            r#"{"signal": []}"#,
            "rules[0].when.signal: invalid length 0",
        ),
        (
            r#"{"signal": {"known": 0}}"#,
            "rules[0].when.signal.known: invalid type: integer",
        ),
        (
            r#"{"signal": {"known": false, "solved": {"max": 0}}}"#,
            "rules[0].when.signal.known: a key the fleet does not know has no counts",
        ),
        (
            r#"{"signal": {"ja4": {"prefixes": {"min": 1}}}}"#,
            "rules[0].when.signal.ja4: unknown field `ja4`",
        ),
        (
            r#"{"signal": {"prefixes": {"min": 1, "max": 2, "avg": 1}}}"#,
            "rules[0].when.signal.prefixes.avg: unknown field `avg`",
        ),
    ];
    for (when, want) in cases {
        refused(&rule_with(when), want);
    }
    // What a site writes is fine, and large bounds are bounds.
    load(
        rule_with(r#"{"signal": {"requests": {"min": 1e15}, "solved": {"min": 0, "max": 1}}}"#)
            .as_bytes(),
    )
    .unwrap();
}
