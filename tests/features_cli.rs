//! `edgeguard features` as a program: output shape, names, NaN as null,
//! version spellings, and bad lines reported with their number.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use edgeguard::features::{Cat, Float, CAT_FEATURES, FLOAT_FEATURES};
use serde_json::Value;

fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .arg("features")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn edgeguard");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn names_follow_the_schema() {
    for flag in ["--header", "--names"] {
        let out = run(&[flag], "");
        assert!(out.status.success());
        let v = &lines(&out)[0];
        let floats: Vec<&str> = v["float"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        let cats: Vec<&str> = v["cat"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert_eq!(
            floats,
            FLOAT_FEATURES.iter().map(|f| f.name).collect::<Vec<_>>()
        );
        assert_eq!(
            cats,
            CAT_FEATURES.iter().map(|f| f.name).collect::<Vec<_>>()
        );
    }
}

#[test]
fn vectors_for_every_version_spelling() {
    let mut input = String::new();
    for version in [
        r#""1.1""#,
        "1.1",
        r#""HTTP/1.0""#,
        "2",
        r#""HTTP/2.0""#,
        r#""3""#,
    ] {
        input.push_str(&format!(
            r#"{{"method":"GET","uri":"/a.css?b=1","version":{version},"client":"203.0.113.7","headers":[["host","x"],["accept","text/css,*/*;q=0.1"]],"automated":0}}"#
        ));
        input.push('\n');
    }
    let out = run(&[], &input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = lines(&out);
    let versions: Vec<f64> = got
        .iter()
        .map(|v| v["float"][Float::HttpVersion.index()].as_f64().unwrap())
        .collect();
    assert_eq!(versions.len(), 6);
    for (got, want) in versions.iter().zip([1.1, 1.1, 1.0, 2.0, 2.0, 3.0]) {
        assert!((got - want).abs() < 1e-6, "{got} != {want}");
    }
    let v = &got[0];
    assert_eq!(v["float"].as_array().unwrap().len(), FLOAT_FEATURES.len());
    assert_eq!(v["cat"].as_array().unwrap().len(), CAT_FEATURES.len());
    assert!(
        v["float"][Float::UaLen.index()].is_null(),
        "NaN prints as null"
    );
    assert_eq!(v["cat"][Cat::UriExt.index()], "css");
    assert_eq!(v["cat"][Cat::UaFamily.index()], "none");
}

#[test]
fn bad_lines_are_named_and_fail_the_run() {
    let input = concat!(
        r#"{"method":"GET","uri":"/","version":"1.1","headers":[]}"#,
        "\n{\"method\":\"GET\"}\n",
        r#"{"method":"GET","uri":"/","version":"1.7","headers":[]}"#,
        "\n\n",
        r#"{"method":"GET","uri":"/","version":"2","headers":[["host"]]}"#,
        "\n",
        r#"{"method":"GET","uri":"/","version":2,"headers":[["host","x"]]}"#,
        "\n",
    );
    let out = run(&[], input);
    assert!(!out.status.success());
    assert_eq!(lines(&out).len(), 2, "good lines are still printed");
    let err = String::from_utf8(out.stderr).unwrap();
    for n in [2, 3, 5] {
        assert!(err.contains(&format!("line {n}:")), "{err}");
    }
    assert!(
        !err.contains("line 1:") && !err.contains("line 4:") && !err.contains("line 6:"),
        "{err}"
    );
}

#[test]
fn unknown_option_is_a_usage_error() {
    let out = run(&["--bogus"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
}

/// `edgeguard features | edgeguard predict` on the traffic fixture gives
/// official CatBoost's predictions of the shipped models: the two commands
/// agree on the format and the schema order.
#[test]
fn features_feed_predict() {
    let root = env!("CARGO_MANIFEST_DIR");
    let fixture =
        std::fs::read_to_string(format!("{root}/tests/fixtures/traffic/sample.jsonl")).unwrap();
    // The current schema's columns (the models' order), with their table.
    let bot = format!("{root}/models/bot.json");
    let schema = edgeguard::features::SCHEMA_VERSION.to_string();
    let vectors = run(&["--schema", &schema, "--orders", &bot], &fixture);
    assert!(vectors.status.success());
    let rows: Vec<Value> = fixture
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for model in ["bot", "spoof"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_edgeguard"))
            .args(["predict", "--model", &format!("{root}/models/{model}.json")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&vectors.stdout)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Vec<f64> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect();
        assert_eq!(got.len(), rows.len());
        for (i, (g, row)) in got.iter().zip(&rows).enumerate() {
            let want = row["expected_raw"][model].as_f64().unwrap();
            assert!(
                (g - want).abs() <= 1e-9 * want.abs().max(1.0),
                "line {}: {model} {g} != {want}",
                i + 1
            );
        }
    }
}

/// `--learn-orders` prints the table of the people's requests it reads;
/// `--orders` takes that text (or a model) back; `--schema` keeps one
/// version's columns.
#[test]
fn learns_orders_and_reads_them_back() {
    let chrome = r#"{"method":"GET","uri":"/","version":"2","headers":[["host","x"],["sec-ch-ua","\"Chromium\";v=\"156\""],["user-agent","Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"],["accept","*/*"]]}"#;
    let out = run(
        &["--learn-orders", "--min-count", "1"],
        &format!("{chrome}\n{chrome}\n"),
    );
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    assert_eq!(table.trim(), "chromium:Ca Cu hC ha hu ua");
    assert_eq!(
        String::from_utf8(run(&["--learn-orders", "--min-count", "3"], chrome).stdout)
            .unwrap()
            .trim(),
        ""
    );
    let dir = std::env::temp_dir().join(format!("edgeguard-orders-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("orders.txt");
    // User-Agent before sec-ch-ua: the reverse of what was learnt.
    let reversed = chrome.replace(
        r#"["sec-ch-ua","\"Chromium\";v=\"156\""],["user-agent""#,
        r#"["user-agent""#,
    );
    let reversed = reversed.replace(
        r#"["accept","*/*"]"#,
        r#"["sec-ch-ua","\"Chromium\";v=\"156\""],["accept","*/*"]"#,
    );
    std::fs::write(&path, table.trim()).unwrap();
    let out = run(
        &["--schema", "2", "--orders", path.to_str().unwrap()],
        &format!("{chrome}\n{reversed}\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Value =
        serde_json::from_slice(&run(&["--names", "--schema", "2"], "").stdout).unwrap();
    let at = names["float"]
        .as_array()
        .unwrap()
        .iter()
        .position(|n| n == "order_reversed_pairs")
        .unwrap();
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0]["float"].as_array().unwrap().len(),
        names["float"].as_array().unwrap().len()
    );
    assert_eq!(lines[0]["float"][at], 0.0);
    // (u, C) where only C before u was seen; (C, a) stays in order.
    assert_eq!(lines[1]["float"][at], 1.0);
    assert!(!names["float"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == "order_inversions"));
    // Schema 1 has no learnt orders; an unreadable table is refused by name.
    let v1: Value = serde_json::from_slice(&run(&["--names", "--schema", "1"], "").stdout).unwrap();
    assert!(v1["float"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == "order_inversions"));
    assert!(!v1["float"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == "order_reversed_pairs"));
    std::fs::write(&path, "blink:ua").unwrap();
    // (No input: the command exits before reading it, so a write could race.)
    let out = run(&["--orders", path.to_str().unwrap()], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("orders.txt") && err.contains("unknown engine `blink`"),
        "{err}"
    );
    let out = run(&["--schema", "9", "--names"], "");
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--learn-orders --software` learns what a schema-4 table holds: the
/// orders of Chromium and Firefox only, among the headers a browser sends
/// because of what it is (no cookie, referer, cache-control, ...).
#[test]
fn learns_software_orders() {
    let chrome = r#"{"method":"GET","uri":"/","version":"2","headers":[["host","x"],["cache-control","max-age=0"],["user-agent","Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"],["accept","*/*"],["referer","https://x/"],["cookie","a=1"]]}"#;
    let safari = r#"{"method":"GET","uri":"/","version":"2","headers":[["host","x"],["accept","*/*"],["user-agent","Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15"]]}"#;
    let input = format!("{chrome}\n{safari}\n");
    let all = run(&["--learn-orders"], &input);
    let all = String::from_utf8(all.stdout).unwrap();
    assert!(all.contains("webkit:") && all.contains("hk"), "{all}");
    let software = run(&["--learn-orders", "--software"], &input);
    assert!(software.status.success());
    assert_eq!(
        String::from_utf8(software.stdout).unwrap().trim(),
        "chromium:ha hu ua"
    );
}

/// `--names` lists the evidence features (schema 4's monotone ones) among
/// the names it prints.
#[test]
fn names_list_the_evidence() {
    let v: Value = serde_json::from_slice(&run(&["--names", "--schema", "4"], "").stdout).unwrap();
    let mut evidence: Vec<&str> = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    evidence.sort_unstable();
    let mut want = edgeguard::features::EVIDENCE.to_vec();
    want.sort_unstable();
    assert_eq!(evidence, want);
    for name in &evidence {
        assert!(v["float"].as_array().unwrap().iter().any(|n| n == name));
    }
    let cats: Vec<&str> = v["cat"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(cats, ["ua_claim"]);
    let v3: Value = serde_json::from_slice(&run(&["--names", "--schema", "3"], "").stdout).unwrap();
    assert!(v3["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n != "engine_headers_missing"));
}

/// The TLS features of schema 3 come from the line's `edgeguard_ja4` and
/// `edgeguard_tls_family`, as replay reads them; without, null and `none`.
#[test]
fn tls_fields_give_the_tls_features() {
    let head = r#""method":"GET","uri":"/","version":"1.1","client":"127.0.0.1","headers":[["host","x"],["user-agent","Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"]]"#;
    let input = format!(
        "{{{head},\"edgeguard_ja4\":\"t13d1812h1_85036bcba153_b26ce05bbdd6\",\"edgeguard_tls_family\":\"openssl\"}}\n{{{head}}}\n"
    );
    let out = run(&["--schema", "3"], &input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Value =
        serde_json::from_slice(&run(&["--names", "--schema", "3"], "").stdout).unwrap();
    let at = |kind: &str, name: &str| {
        names[kind]
            .as_array()
            .unwrap()
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (tls, plain) = (&lines[0], &lines[1]);
    assert_eq!(tls["float"][at("float", "tls_cipher_count")], 18.0);
    assert_eq!(tls["float"][at("float", "tls_family_mismatch")], 1.0);
    assert_eq!(tls["float"][at("float", "tls_browser_no_h2")], 1.0);
    assert_eq!(tls["cat"][at("cat", "tls_family")], "openssl");
    assert_eq!(tls["cat"][at("cat", "tls_ja4_a")], "t13d1812h1");
    assert!(plain["float"][at("float", "tls_cipher_count")].is_null());
    assert_eq!(plain["cat"][at("cat", "tls_family")], "none");
    assert_eq!(plain["cat"][at("cat", "tls_ja4")], "");
    // Schema 2 has none of them.
    let v2: Value = serde_json::from_slice(&run(&["--names", "--schema", "2"], "").stdout).unwrap();
    assert!(!v2.to_string().contains("tls_"), "{v2}");
}
