//! What replay hands a consumer of its decisions for each request: the
//! request, the line's own facts, and the gate's effects (a leaf: the
//! worker and `observe` both read it).

use crate::gate::{self, Effects};

/// One request as the primary configuration judged it.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'a> {
    /// The line's own time, Unix seconds: `edgeguard_time` (when access()
    /// judged it), else nginx's `time` (`$time_iso8601`); None: neither.
    pub time: Option<u64>,
    /// The request as the gate read it (method, URI, client, headers, TLS
    /// facts).
    pub request: &'a gate::Incoming<'a>,
    /// The connection's JA4, when the line has one.
    pub ja4: Option<&'a [u8]>,
    /// What the gate made of it.
    pub effects: &'a Effects<'a>,
}

/// What [`observe`] hands each request to.
pub type Observer<'o> = dyn FnMut(&Seen<'_>) + 'o;
