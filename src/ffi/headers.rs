//! C ABI for internal header sets.
