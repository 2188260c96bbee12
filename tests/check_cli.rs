//! `edgeguard check --config FILE`: the configuration loaded as nginx loads
//! `configure{ config = FILE }` (src/load/), its report printed, an error
//! naming the file and the field with exit status 1.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn check(config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .args(["check", "--config"])
        .arg(config)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

/// A configuration file in a fresh directory, naming the shipped files.
fn config(name: &str, json: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("edgeguard-check-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = json.replace("ROOT", &root.display().to_string());
    let path = dir.join("edgeguard.json");
    std::fs::write(&path, json).unwrap();
    path
}

#[test]
fn a_good_file_prints_what_loaded() {
    let path = config(
        "good",
        r#"{"models": {"bot": "ROOT/models/bot.json"},
            "internal_headers": "ROOT/nginx-conf/internal-headers.txt"}"#,
    );
    let out = check(&path);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!("{}: ok\n", path.display())),
        "{stdout}"
    );
    assert!(stdout.contains("engine: rust\n"), "{stdout}");
    assert!(
        stdout.contains("model bot: ") && stdout.contains("models/bot.json"),
        "{stdout}"
    );
    assert!(stdout.contains("internal-headers.txt ("), "{stdout}");
}

#[test]
fn a_broken_file_names_the_file_and_field() {
    let path = config("field", r#"{"mode": "deny"}"#);
    let out = check(&path);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{}: mode: must be", path.display())),
        "{err}"
    );
    // A model that does not load refuses the configuration, as in nginx.
    let path = config("model", r#"{"models": {"bot": "/nonexistent/bot.json"}}"#);
    let out = check(&path);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("models not loaded, so this configuration is refused"),
        "{err}"
    );
    assert!(err.contains("/nonexistent/bot.json"), "{err}");
}
