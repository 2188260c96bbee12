//! What the options name on disk, read after they are parsed: the
//! configuration file (`config`, `edgeguard replay --config`), the
//! challenge's keys (`challenge_secret`) and the verified bots
//! (`verified_bots`). The parsers (`values.rs`) never touch the file
//! system; a file that cannot be used is an error naming the option and
//! the source that named it.

use std::path::Path;
use std::sync::Arc;

use super::error::{ConfigError, ErrorOrigin};
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

/// The challenge's keys at `path` (`challenge_secret`); `ctx` is the source
/// that named it: its errors name it.
pub(super) fn keys(path: &Path, ctx: &Ctx<'_>) -> Result<Arc<Keys>, ConfigError> {
    let keys = Keys::load(path).map_err(|e| ctx.file_err("challenge_secret", e))?;
    Ok(Arc::new(keys))
}

/// The verified bots at `path` (`verified_bots`), errors as [`keys`].
pub(super) fn bots(path: &Path, ctx: &Ctx<'_>) -> Result<Arc<VerifiedBots>, ConfigError> {
    let bots = VerifiedBots::load(path).map_err(|e| ctx.file_err("verified_bots", e))?;
    Ok(Arc::new(bots))
}
