//! Fleet fingerprint signals: what the whole fleet saw of one client
//! fingerprint over the last hour, looked up per request.
//!
//! A fingerprint key ([`key`]) names the software a request came from as
//! far as one request shows it: the connection's JA4, or the header-order
//! fingerprint together with the User-Agent family it claims. `edgeguard
//! signals` counts, per key, over a sliding hour, how many requests came,
//! from how many distinct client prefixes, claiming how many User-Agents,
//! how many a model flagged, how many challenges were served and solved,
//! and how many requests carried a clearance. It publishes those counts as
//! a [`snapshot::Snapshot`]: a file (and a compacted Kafka topic) that nginx
//! and replay load and look keys up in without allocating.
//!
//! docs/signals.md describes the fleet setup and what a signal can and
//! cannot tell.

pub mod file;
pub mod key;
pub mod live;
pub mod partials;
pub mod sketch;
pub mod snapshot;
pub mod window;

pub use key::{Kind, KEY_CAP};
pub use live::{Live, Lookup};
pub use snapshot::{Counts, Snapshot, SnapshotError};
pub use window::{Settings, Window};
