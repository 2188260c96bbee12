//! What the options name on disk, read after they are parsed: the
//! configuration file (`config`, `edgeguard replay --config`), the
//! challenge's keys (`challenge_secret`) and the verified bots
//! (`verified_bots`). The parsers (`values.rs`) never touch the file
//! system; a file that cannot be used is an error naming the option and
//! the source that named it.

use std::path::Path;
use std::sync::Arc;

use super::error::{ConfigError, ErrorOrigin};
use super::options::Options;
use super::values::Ctx;
use crate::challenge::Keys;
use crate::verified::VerifiedBots;

/// The text of the configuration file at `path`, or an `Io` error naming it.
pub(super) fn read_config(path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| {
        ConfigError::new(
            &path.display().to_string(),
            None,
            format!("cannot read the configuration file: {e}"),
            ErrorOrigin::Io,
        )
    })
}

/// Loads the files that options parsed from one source name (`ctx` is that
/// source's: its errors name it).
pub(super) fn load(o: &mut Options, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
    if let Some(path) = &o.challenge_secret {
        let keys = Keys::load(path).map_err(|e| ctx.file_err("challenge_secret", e))?;
        o.keys = Some(Arc::new(keys));
    }
    if let Some(path) = &o.verified_bots {
        let bots = VerifiedBots::load(path).map_err(|e| ctx.file_err("verified_bots", e))?;
        o.bots = Some(Arc::new(bots));
    }
    Ok(())
}
