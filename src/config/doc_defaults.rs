//! The defaults docs/configuration.md's option table gives, against what
//! the options resolve to when not given (scripts/check-doc-facts.py runs
//! this test in `make lint`, on the docs of `EDGEGUARD_DOCS_ROOT`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::options::{Options, DEFAULT_LOG_LEVEL, OPTIONS};

/// The default of an option its resolved value leaves out, from where the
/// code keeps it.
fn elsewhere(o: &Options, name: &str) -> Option<Value> {
    match name {
        "log_level" => Some(DEFAULT_LOG_LEVEL.into()),
        "challenge_prefix_v4" => o.challenge().map(|c| c.prefix_v4.into()),
        "challenge_prefix_v6" => o.challenge().map(|c| c.prefix_v6.into()),
        _ => None,
    }
}

/// nginx's levels as `ngx.NAME` (ngx_log.h), as the table writes them.
const LEVELS: [&str; 9] = [
    "STDERR", "EMERG", "ALERT", "CRIT", "ERR", "WARN", "NOTICE", "INFO", "DEBUG",
];

/// A documented default as JSON when it is a literal (`` `"log"` ``,
/// `403`, `86 400`, `` `false` ``, `` `ngx.INFO` ``); `None` for words.
fn literal(cell: &str) -> Option<Value> {
    let cell = cell.trim();
    if let Some(inner) = cell.strip_prefix('`').and_then(|c| c.strip_suffix('`')) {
        if let Some(level) = inner.strip_prefix("ngx.") {
            return LEVELS.iter().position(|l| *l == level).map(Value::from);
        }
        return serde_json::from_str(inner).ok();
    }
    let digits: String = cell
        .chars()
        .filter(|c| !matches!(c, ' ' | '\u{202f}' | '\u{a0}'))
        .collect();
    digits.parse::<u64>().ok().map(Value::from)
}

/// The option table's rows: (line, option, default cell).
fn rows(doc: &str) -> Vec<(usize, String, String)> {
    let mut header: Option<Vec<String>> = None;
    let mut out = Vec::new();
    for (i, line) in doc.lines().enumerate() {
        let Some(body) = line.trim().strip_prefix('|') else {
            header = None;
            continue;
        };
        let cells: Vec<String> = body
            .trim_end_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect();
        let Some(h) = &header else {
            header = Some(cells);
            continue;
        };
        let (Some(name), Some(default)) = (
            h.iter().position(|c| c == "option"),
            h.iter().position(|c| c == "default"),
        ) else {
            continue;
        };
        if cells.iter().all(|c| c.chars().all(|ch| "-: ".contains(ch))) {
            continue;
        }
        if let (Some(n), Some(d)) = (cells.get(name), cells.get(default)) {
            out.push((i + 1, n.trim_matches('`').to_owned(), d.clone()));
        }
    }
    out
}

/// What the options resolve to with every feature that has defaults
/// turned on (a challenge, signals, verified bots, the client memory;
/// shadow mode for `shadow_primary`), and which options that took.
fn resolved(dir: &Path) -> (serde_json::Map<String, Value>, Options, Vec<&'static str>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::write(dir.join("keys"), format!("{}\n", "ab".repeat(32))).unwrap();
    std::fs::write(
        dir.join("signals.json"),
        r#"{"format":"edgeguard-signals","version":1,"generated":5,"window":3600,"entries":[]}"#,
    )
    .unwrap();
    let on = serde_json::json!({
        "models": { "bot": root.join("models/bot.json") },
        "challenge_secret": dir.join("keys"),
        "signals": dir.join("signals.json"),
        "verified_bots": root.join("nginx-conf/verified-bots.json"),
        "client_memory": "1m",
    });
    let given = vec![
        "models",
        "challenge_secret",
        "signals",
        "verified_bots",
        "client_memory",
    ];
    let configure = |json: &Value| {
        Options::configure("doc_defaults", None, json.to_string().as_bytes())
            .unwrap_or_else(|e| panic!("{json}: {e}"))
    };
    let resolve = |o: &Options| -> serde_json::Map<String, Value> {
        serde_json::from_str(&o.resolved_json()).unwrap()
    };
    let options = configure(&on);
    let mut out = resolve(&options);
    for (k, v) in resolve(&configure(&serde_json::json!({ "engine": "shadow" }))) {
        out.entry(k).or_insert(v);
    }
    (out, options, given)
}

fn mismatches(doc_name: &str, doc: &str, dir: &Path) -> Vec<String> {
    let (values, options, given) = resolved(dir);
    let mut out = Vec::new();
    for (line, name, cell) in rows(doc) {
        if !OPTIONS.iter().any(|o| o.name == name) || given.contains(&name.as_str()) {
            continue; // an unknown option is check-doc-facts.py's to report
        }
        let got = values
            .get(&name)
            .cloned()
            .or_else(|| elsewhere(&options, &name));
        let at = format!("DOC: {doc_name}:{line}: option `{name}`");
        match (literal(&cell), got) {
            (Some(want), Some(got)) if want != got => {
                out.push(format!("{at}: default {cell}, but it resolves to {got}"));
            }
            (Some(_), None) => {
                out.push(format!("{at}: default {cell}, but it resolves to no value"));
            }
            (None, Some(got)) if cell.starts_with("none") => {
                out.push(format!("{at}: default none, but it resolves to {got}"));
            }
            _ => {}
        }
    }
    out
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("edgeguard-doc-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn documented_defaults_are_the_resolved_ones() {
    let root = std::env::var_os("EDGEGUARD_DOCS_ROOT")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let doc = std::fs::read_to_string(root.join("docs/configuration.md")).unwrap();
    let dir = scratch("defaults");
    let bad = mismatches("docs/configuration.md", &doc, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(rows(&doc).len() >= OPTIONS.len(), "no option table");
    assert!(bad.is_empty(), "\n{}", bad.join("\n"));
}

#[test]
fn a_wrong_default_is_found() {
    let doc = "| option | type | default | scope | meaning |\n|---|---|---|---|---|\n\
               | `mode` | s | `\"block\"` | C | x |\n| `status` | n | 403 | C | x |\n\
               | `challenge_ttl` | n | 86 400 | C F | x |\n| `log_level` | n | `ngx.WARN` | C | x |\n\
               | `metrics_dict` | s | none | C | x |\n| `vars` | b | `false` | C | x |\n";
    let dir = scratch("wrong");
    let bad = mismatches("t.md", doc, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        bad,
        [
            "DOC: t.md:3: option `mode`: default `\"block\"`, but it resolves to \"log\"",
            "DOC: t.md:6: option `log_level`: default `ngx.WARN`, but it resolves to 7",
        ]
    );
}
