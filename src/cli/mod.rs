//! Subcommands of the `edgeguard` binary.

pub mod features;
pub mod predict;
pub mod replay;
pub mod tls;
