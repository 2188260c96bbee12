//! `edgeguard`: the offline face of the library. Every subcommand runs the same
//! code that nginx runs, so what is validated here is what serves.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod cli;

/// Strip internal headers and score requests for bots, offline, with the
/// code nginx runs.
#[derive(Parser, Debug)]
#[command(name = "edgeguard", version, arg_required_else_help = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Load a configuration file as nginx would, print what loaded
    #[command(long_about = cli::check::LONG_ABOUT)]
    Check(cli::check::Args),
    /// Score JSON Lines documents with a CatBoost model
    #[command(long_about = cli::predict::LONG_ABOUT)]
    Predict(cli::predict::Args),
    /// Print the feature vector of JSON Lines requests
    #[command(long_about = cli::features::LONG_ABOUT)]
    Features(cli::features::Args),
    /// Score recorded traffic with a configuration, report decisions
    #[command(long_about = cli::replay::LONG_ABOUT)]
    Replay(Box<cli::replay::Args>),
    /// Check a rules file, or see which rule recorded requests meet
    #[command(long_about = cli::rules::LONG_ABOUT)]
    Rules(cli::rules::Args),
    /// Send request lines (files, stdin) to a Kafka topic, one per message
    #[command(long_about = cli::ship::LONG_ABOUT)]
    Ship(cli::ship::Args),
    /// Fleet fingerprint signals from the request log: a snapshot file
    #[command(long_about = cli::signals::LONG_ABOUT)]
    Signals(Box<cli::signals::Args>),
    /// Print the JA4 of recorded ClientHellos (hex, one per line)
    #[command(long_about = cli::tls::LONG_ABOUT)]
    Tls(cli::tls::Args),
    /// Print the library version
    Version,
    /// Print a shell completion script: `edgeguard completions bash > /etc/bash_completion.d/edgeguard`
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return cli::usage_error(&e, Cli::command()),
    };
    match cli.command {
        Command::Check(args) => cli::check::run(args),
        Command::Predict(args) => cli::predict::run(args),
        Command::Features(args) => cli::features::run(args),
        Command::Replay(args) => cli::replay::run(*args),
        Command::Rules(args) => cli::rules::run(args),
        Command::Ship(args) => cli::ship::run(args),
        Command::Signals(args) => cli::signals::run(*args),
        Command::Tls(args) => cli::tls::run(args),
        Command::Version => {
            println!("edgeguard {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Command::Completions { shell } => {
            // Into a buffer first: clap_complete panics on a closed stdout.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "edgeguard", &mut script);
            match std::io::Write::write_all(&mut std::io::stdout().lock(), &script) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
    }
}
