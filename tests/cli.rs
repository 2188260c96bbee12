//! The `edgeguard` binary's own surface (clap): version, help, shell
//! completions, usage errors. Each subcommand's behaviour has its own tests
//! (features_cli, model_cli, replay_pipeline).

use std::process::{Command, Output};

fn edgeguard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_edgeguard"))
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

#[test]
fn version_flag_and_command_agree() {
    let want = format!("edgeguard {}\n", env!("CARGO_PKG_VERSION"));
    for args in [&["--version"][..], &["version"], &["-V"]] {
        let out = edgeguard(args);
        assert!(out.status.success(), "{args:?}");
        assert_eq!(text(&out.stdout), want, "{args:?}");
    }
}

#[test]
fn help_lists_every_command_and_no_command_is_a_usage_error() {
    let out = edgeguard(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for cmd in ["predict", "features", "replay", "version", "completions"] {
        assert!(help.contains(cmd), "{cmd}: {help}");
    }
    let none = edgeguard(&[]);
    assert_eq!(none.status.code(), Some(2));
    assert!(text(&none.stderr).contains("replay"), "help on stderr");
    let unknown = edgeguard(&["frobnicate"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("frobnicate"));
}

#[test]
fn subcommand_help_documents_the_options() {
    let out = edgeguard(&["replay", "--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for opt in [
        "--config",
        "--compare",
        "--threads",
        "--output",
        "--ordered",
        "--summary",
        "--max-line",
        "--no-progress",
    ] {
        assert!(help.contains(opt), "{opt}: {help}");
    }
    assert!(
        help.contains("log_format edgeguard_json"),
        "the long description"
    );
    let out = edgeguard(&["help", "predict"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("--prediction-type"));
}

#[test]
fn completions_for_each_shell_name_the_commands_and_options() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = edgeguard(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = text(&out.stdout);
        for word in ["edgeguard", "replay", "features", "predict", "no-progress"] {
            assert!(script.contains(word), "{shell}: {word}");
        }
    }
    let out = edgeguard(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("tcsh"));
}

#[test]
fn usage_errors_name_the_command_and_option_and_exit_2() {
    for (args, want) in [
        (&["replay"][..], "edgeguard replay: --config is required"),
        (
            &["replay", "--config"],
            "edgeguard replay: --config needs a value",
        ),
        (
            &["replay", "--config", "c.json", "--max-line", "-3"],
            "edgeguard replay: --max-line",
        ),
        (
            &["features", "--bogus"],
            "edgeguard features: unknown option --bogus",
        ),
        (
            &["predict", "--model"],
            "edgeguard predict: --model needs a value",
        ),
    ] {
        let out = edgeguard(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert!(err.contains("\nusage: edgeguard "), "{args:?}: {err}");
    }
}
