//! `edgeguard check --config FILE`: loads a configuration file exactly as
//! nginx loads `configure{ config = FILE }` (`edgeguard::load`, the same
//! path `edgeguard_engine_new` runs) and prints the load report. `nginx -t`
//! runs no Lua, so it cannot tell a broken model or list; this can.

use std::path::PathBuf;
use std::process::ExitCode;

use edgeguard::load::Config;

/// The long description of `--help`.
pub const LONG_ABOUT: &str =
    "Loads FILE as nginx loads configure{ config = FILE }: the options, every
file they name (the internal header list, the models, the challenge keys,
the verified bots, the signals snapshot, the rules), with nginx's failure
policy (a list or a model that does not load refuses the configuration).
Prints what loaded and the warnings nginx logs at every (re)load; on an
error, prints it (naming the file and the field) and exits 1. Run it
before `nginx -s reload`: `nginx -t` runs no Lua.";

#[derive(clap::Args, Debug)]
#[command(override_usage = "edgeguard check --config FILE")]
pub struct Args {
    /// The configuration file (docs/configuration.md)
    #[arg(long, value_name = "FILE", required = true)]
    config: PathBuf,
}

/// Runs `edgeguard check`.
pub fn run(args: Args) -> ExitCode {
    let path = args.config.display().to_string();
    let options = serde_json::json!({ "config": path }).to_string();
    match Config::configure("edgeguard check", None, options.as_bytes()) {
        Ok(loaded) => {
            println!("{path}: ok");
            print!("{}", loaded.report());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("edgeguard check: {e}");
            ExitCode::FAILURE
        }
    }
}
