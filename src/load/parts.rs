//! The Rust engine's parts a configuration names, and the one failure
//! policy: a list or a model that does not load refuses the configuration
//! (at the first start nginx stops with the file and the field; on a
//! reload it keeps the running workers and what they loaded). No part
//! is ever served half loaded, whatever `fail_closed` says: that option is
//! about a request the models could not score, not a file that is broken.

use std::path::Path;
use std::sync::Arc;

use crate::config::{ConfigError, Engine, ErrorOrigin, Options};
use crate::headers::HeaderSet;
use crate::scorer::Scorer;

/// Who loads: the text of a refusal and what is loaded depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// nginx, through the shim: the Rust engine's parts are loaded only
    /// when that engine runs (`engine` "rust" or "shadow"); a refusal is
    /// the operator's message, as the error log shows it.
    Nginx,
    /// The offline tools: the parts are always loaded (they run the Rust
    /// engine whatever `engine` says); a refusal names the file and the
    /// option.
    Offline,
}

/// How nginx's refusal of models that did not load starts.
pub const REFUSED: &str = "models not loaded, so this configuration is refused (on a reload, \
                           nginx keeps the running workers and their models)";

/// Whether `target` loads the Rust engine's parts under `options`.
fn wanted(options: &Options, target: Target) -> bool {
    target == Target::Offline || options.engine() != Engine::Lua
}

/// The internal header list, if one is configured and wanted.
pub(super) fn header_set(
    source: &str,
    options: &Options,
    target: Target,
) -> Result<Option<HeaderSet>, ConfigError> {
    let Some(path) = options
        .internal_headers
        .as_ref()
        .filter(|_| wanted(options, target))
    else {
        return Ok(None);
    };
    HeaderSet::load(path).map(Some).map_err(|e| match target {
        // The list's own message names the file and the line.
        Target::Nginx => ConfigError::whole(e.to_string(), ErrorOrigin::File),
        Target::Offline => ConfigError::new(
            source,
            Some("internal_headers"),
            format!("cannot load: {e}"),
            ErrorOrigin::File,
        ),
    })
}

/// The scorer, if models are configured and wanted.
pub(super) fn scorer(
    source: &str,
    options: &Options,
    target: Target,
) -> Result<Option<Arc<Scorer>>, ConfigError> {
    let Some(models) = options.models.as_ref().filter(|_| wanted(options, target)) else {
        return Ok(None);
    };
    let named: Vec<(&str, &Path)> = models
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_path()))
        .collect();
    Scorer::load(&named)
        .map(|s| Some(Arc::new(s)))
        .map_err(|e| match target {
            Target::Nginx => {
                // Under shadow the Lua engine loads models too: say whose failed.
                let whose = if options.engine() == Engine::Shadow {
                    "rust engine: "
                } else {
                    ""
                };
                ConfigError::whole(format!("{REFUSED}: {whose}{e}"), ErrorOrigin::File)
            }
            Target::Offline => {
                ConfigError::new(source, Some("models"), e.to_string(), ErrorOrigin::File)
            }
        })
}
