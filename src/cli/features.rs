//! `edgeguard features`.

use std::process::ExitCode;

/// Runs the subcommand with the arguments after its name.
pub fn run(_args: &[String]) -> ExitCode {
    eprintln!("edgeguard features: not implemented in this build");
    ExitCode::FAILURE
}
