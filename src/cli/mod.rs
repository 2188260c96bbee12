//! Subcommands of the `edgeguard` binary. Arguments are parsed by clap
//! (derive, in `main.rs` and each subcommand's `Args`); this module only words
//! its usage errors the way edgeguard always has (`edgeguard replay: --config
//! is required`), which scripts and tests match.

use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};

pub mod check;
pub mod features;
pub mod kafka;
pub mod predict;
pub mod replay;
pub mod rules;
pub mod ship;
pub mod signals;
pub mod tls;

/// A value parser: a positive whole number.
pub(crate) fn positive(v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("needs a positive number, got {v:?}"))
}

/// The flag of an error's context (`--config <CONFIG>` -> `--config`).
fn flag(e: &clap::Error) -> Option<String> {
    let text = match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(s) => s.clone(),
        ContextValue::Strings(v) => v.first()?.clone(),
        _ => return None,
    };
    Some(text.split([' ', '=']).next().unwrap_or(&text).to_owned())
}

/// The one-line message of a usage error in `subcommand`, or None for the
/// errors clap words best itself (help, version, an unknown subcommand).
pub(crate) fn message(subcommand: &str, e: &clap::Error) -> Option<String> {
    let value = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let flag = flag(e);
    Some(match e.kind() {
        ErrorKind::UnknownArgument if subcommand == "predict" => {
            format!("unknown argument {:?}", flag?)
        }
        ErrorKind::UnknownArgument => format!("unknown option {}", flag?),
        ErrorKind::MissingRequiredArgument => format!("{} is required", flag?),
        ErrorKind::InvalidValue if value.as_deref() == Some("") => {
            format!("{} needs a value", flag?)
        }
        ErrorKind::ValueValidation | ErrorKind::InvalidValue => {
            let why = std::error::Error::source(e).map_or_else(
                || format!("invalid value {:?}", value.unwrap_or_default()),
                ToString::to_string,
            );
            format!("{}: {why}", flag?)
        }
        _ => return None,
    })
}

/// Reports a parse failure: help and version go to stdout (exit 0); usage
/// errors name the subcommand and the option, then the usage line of `cmd`
/// (the program's command, whose subcommand failed; exit 2).
pub fn usage_error(e: &clap::Error, mut cmd: clap::Command) -> ExitCode {
    let code = ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    let subcommand = std::env::args().nth(1).unwrap_or_default();
    let Some(msg) = message(&subcommand, e) else {
        // Printing to a closed stream is not worth a second error.
        let _ = e.print();
        return code;
    };
    cmd.build();
    let usage = match cmd.find_subcommand_mut(&subcommand) {
        Some(sub) => sub.render_usage(),
        None => cmd.render_usage(),
    }
    .to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage);
    eprintln!("edgeguard {subcommand}: {msg}\n\nusage: {usage}\n\nFor more information, try 'edgeguard {subcommand} --help'.");
    code
}

#[cfg(test)]
pub(crate) mod tests {
    use clap::Parser;

    use crate::Cli;

    /// The message `edgeguard ARGS...` fails with.
    pub(crate) fn error_of(args: &[&str]) -> String {
        let e = Cli::try_parse_from(std::iter::once("edgeguard").chain(args.iter().copied()))
            .expect_err("refused");
        super::message(args[0], &e).unwrap_or_else(|| e.to_string())
    }

    #[test]
    fn help_and_version_are_not_errors() {
        for args in [&["--version"][..], &["--help"], &["replay", "--help"]] {
            let e = Cli::try_parse_from(std::iter::once("edgeguard").chain(args.iter().copied()))
                .unwrap_err();
            assert_eq!(e.exit_code(), 0, "{args:?}");
            assert!(super::message(args[0], &e).is_none());
        }
        let e = Cli::try_parse_from(["edgeguard", "--version"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("edgeguard {}\n", env!("CARGO_PKG_VERSION"))
        );
    }

    #[test]
    fn usage_errors_keep_their_wording() {
        assert_eq!(
            error_of(&["predict", "--frobnicate"]),
            "unknown argument \"--frobnicate\""
        );
        assert_eq!(error_of(&["features", "--bogus"]), "unknown option --bogus");
        assert_eq!(error_of(&["predict"]), "--model is required");
        assert!(
            error_of(&["predict", "--model", "m.json", "--prediction-type", "odds"])
                .contains("unknown prediction type \"odds\"")
        );
        let e = Cli::try_parse_from(["edgeguard", "frobnicate"]).unwrap_err();
        assert_eq!(e.exit_code(), 2, "an unknown command is a usage error");
    }
}
