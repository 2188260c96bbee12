//! `edgeguard`: the offline face of the library. Every subcommand runs the same
//! code that nginx runs, so what is validated here is what serves.

use std::process::ExitCode;

mod cli;

const USAGE: &str = "usage: edgeguard <command> [options]

commands:
  predict    score JSON Lines documents with a CatBoost model
  features   print the feature vector of JSON Lines requests
  replay     score recorded traffic with a configuration, report decisions
  tls        print the JA4 of recorded ClientHellos (hex, one per line)
  version    print the library version
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    match args.first().map(String::as_str) {
        Some("predict") => cli::predict::run(rest),
        Some("features") => cli::features::run(rest),
        Some("replay") => cli::replay::run(rest),
        Some("tls") => cli::tls::run(rest),
        Some("version" | "--version") => {
            println!("edgeguard {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some("help" | "--help" | "-h") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprint!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
