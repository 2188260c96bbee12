//! Internal header sets: which request headers must never reach an origin.
