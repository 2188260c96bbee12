//! The client memory: what each client did across requests, in memory
//! every nginx worker shares, so the gate can see what one request cannot.
//!
//! A script that copies a browser's head sends the browser's bytes; it does
//! not copy the visit. A browser that opens a page fetches its stylesheets,
//! scripts and images, sends back the cookies it was given and reads before
//! the next navigation; a crawler fetches documents at a steady rate over
//! many distinct paths. This module keeps those numbers per client
//! ([`key`]: address prefix × head fingerprint), in a fixed-size table of
//! fixed-size records ([`table`]) that nginx's master makes once and its
//! workers inherit through `fork`, found again on reload by name
//! ([`registry`]).
//!
//! - [`record`]: one client's numbers, how a request updates them, the
//!   window they age through, and the merge of two records;
//! - [`cookie`]: the signed cookie whose return the record counts;
//! - [`fetch`]: the request's class (navigation or sub-resource);
//! - [`arrival`]: whether a navigation came from a link or from nowhere;
//! - [`sketch`]: distinct paths in 128 bits;
//! - [`view`]: the copy the gate reads;
//! - [`table`]: the shared table (buckets, locks, eviction, gauges);
//! - [`registry`]: one table per name and size for the process's life.
//!
//! The gate's `clients` stage observes every request (`gate::clients`);
//! docs/behaviour.md says how rules and the `behaviour_crawl` detection
//! read it.
//! Safe code but for [`shm`], the mapping and a prefetch hint, audited
//! like `model::simd`: kept beside the table so the memory's owner imports
//! nothing from the C boundary above it.

#![deny(unsafe_code)]

pub mod arrival;
pub mod cookie;
pub mod fetch;
pub mod key;
pub mod record;
pub mod registry;
#[allow(unsafe_code)]
pub mod shm;
pub mod sketch;
pub mod table;
pub mod view;

pub use fetch::Fetch;
pub use key::{ClientKey, HashKey, Prefix, Width};
pub use record::{Challenge, Event, Snapshot, Window};
pub use sketch::PathSketch;
pub use table::Config;
pub use table::{ClientMemory, Gauges, Slot};
pub use view::ClientView;
