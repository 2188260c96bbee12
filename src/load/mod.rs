//! The load path: options in, a loaded engine out, for nginx (through
//! `edgeguard_engine_new`) and the offline tools (`edgeguard replay`,
//! `signals`, `kafka`) alike.
//!
//! ```text
//!   options (configure{} table, or a file)     crate::config: parsed,
//!      │                                        checked, files they name read
//!      ▼
//!   parts.rs    the internal header list, the scorer (the Rust engine's
//!               parts; the one failure policy: a list or a model that does
//!               not load refuses the start and the reload)
//!      ▼
//!   Config      the options, the parts, the base Location (what a request
//!               without access{} runs under) and the load report
//!      │
//!      └─ location_for(access{})   a location's options over the base,
//!                                  bound to the same parts
//! ```
//!
//! Signals, verified bots, rules and the challenge's keys are read while
//! the options are parsed (`Options::configure`, `Options::parse_file`)
//! and bound into each [`Location`]; their fail-open/closed settings are
//! options too. A new load-time part (a client memory, say) is added in
//! [`Config::assemble`], beside the list and the scorer, and reported in
//! [`Report`].

#![forbid(unsafe_code)]

mod parts;
mod report;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{ConfigError, Options};
use crate::gate::{Location, Models, Policy};
use crate::headers::HeaderSet;
use crate::scorer::Scorer;

pub use parts::{Target, REFUSED};
pub use report::Report;

/// A loaded configuration: the options, the header set, the scorer, the
/// base location they make, and what was loaded.
#[derive(Debug)]
pub struct Config {
    path: PathBuf,
    options: Options,
    headers: Option<Arc<HeaderSet>>,
    scorer: Option<Arc<Scorer>>,
    location: Arc<Location>,
    report: Report,
}

impl Config {
    /// Reads the file at `path` and loads what it names (offline).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Self::load_with_signals(path, None)
    }

    /// [`Config::load`] with the signals snapshot at `signals` (none: the
    /// file's own `signals`, if any) in place of the file's.
    pub fn load_with_signals(path: &Path, signals: Option<&Path>) -> Result<Config, ConfigError> {
        let source = path.display().to_string();
        let mut options = Options::load_file(path)?;
        if let Some(s) = signals {
            options.set_signals(&source, s)?;
        }
        Self::assemble(&source, options, Target::Offline)
    }

    /// Parses configuration text (offline); relative paths are resolved
    /// against `base`, `source` names the text in errors.
    pub fn parse(source: &str, base: &Path, text: &[u8]) -> Result<Config, ConfigError> {
        Self::assemble(
            source,
            Options::parse_file(source, base, text)?,
            Target::Offline,
        )
    }

    /// Loads what `configure{}`'s options (JSON `text`, relative paths
    /// against `base`) name, as nginx runs them.
    pub fn configure(
        source: &str,
        base: Option<&Path>,
        text: &[u8],
    ) -> Result<Config, ConfigError> {
        Self::assemble(
            source,
            Options::configure(source, base, text)?,
            Target::Nginx,
        )
    }

    /// Loads the parts `options` name for `target`, in the order nginx
    /// always loaded them: the list, then the models; then binds the base
    /// location. A new load-time part goes here.
    pub fn assemble(
        source: &str,
        mut options: Options,
        target: Target,
    ) -> Result<Config, ConfigError> {
        // The client memory: nginx's master opens it shared, before the
        // workers fork (a reload asking for the same one gets it back);
        // offline, a memory of the run's own, rebuilt from the log in order.
        options = match target {
            Target::Nginx => options.with_shared_memory(source)?,
            Target::Offline => options.with_private_memory(source)?,
        };
        if target == Target::Offline {
            // Offline, the snapshot the file names is read once: the
            // answers of one run never change under it.
            if let Some(f) = &options.fleet {
                options.fleet = Some(Arc::new(f.frozen()));
            }
        }
        let headers = parts::header_set(source, &options, target)?.map(Arc::new);
        let scorer = parts::scorer(source, &options, target)?;
        let location = Arc::new(bind(source, &options, scorer.as_ref(), headers.as_deref())?);
        let report = Report::new(&options, headers.as_deref(), scorer.as_deref());
        Ok(Config {
            path: PathBuf::from(source),
            options,
            headers,
            scorer,
            location,
            report,
        })
    }

    /// A location's configuration: the `access{}` options in `text` over
    /// this one's, bound to the same list and scorer. `source` names the
    /// text in errors (always the caller's: misuse).
    pub fn location_for(
        &self,
        source: &str,
        text: &[u8],
    ) -> Result<(Options, Location), ConfigError> {
        let options = self.options.with_access(source, text)?;
        let location = bind(
            source,
            &options,
            self.scorer.as_ref(),
            self.headers.as_deref(),
        )?;
        Ok((options, location))
    }

    /// Where the configuration came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options resolved.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The internal header set, if configured.
    pub fn headers(&self) -> Option<&HeaderSet> {
        self.headers.as_deref()
    }

    /// The internal header set, shared.
    pub fn shared_headers(&self) -> Option<&Arc<HeaderSet>> {
        self.headers.as_ref()
    }

    /// The scorer, if models are configured and this target loads them.
    pub fn scorer(&self) -> Option<&Scorer> {
        self.scorer.as_deref()
    }

    /// The scorer, shared.
    pub fn shared_scorer(&self) -> Option<&Arc<Scorer>> {
        self.scorer.as_ref()
    }

    /// The number of models (0 without a scorer).
    pub fn model_count(&self) -> usize {
        self.location.model_count()
    }

    /// The decision rule.
    pub fn policy(&self) -> &Policy {
        self.location.policy()
    }

    /// What the gate runs requests under when no `access{}` options are given.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The base location, shared.
    pub fn shared_location(&self) -> &Arc<Location> {
        &self.location
    }

    /// What was loaded, and the warnings for the operator.
    pub fn report(&self) -> &Report {
        &self.report
    }
}

/// Binds `options` into a location with the loaded parts.
fn bind(
    source: &str,
    options: &Options,
    scorer: Option<&Arc<Scorer>>,
    headers: Option<&HeaderSet>,
) -> Result<Location, ConfigError> {
    let models = match scorer {
        Some(s) => Models::Scorer(Arc::clone(s)),
        None => Models::Given(&[]),
    };
    // The score header's spellings join the list: a name that cannot be
    // one is refused when the options are parsed, so this is the list's.
    Location::new(options, models, headers).map_err(|e| {
        ConfigError::new(
            source,
            Some("score_header"),
            e.to_string(),
            crate::config::ErrorOrigin::File,
        )
    })
}

#[cfg(test)]
mod tests;
