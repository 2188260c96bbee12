//! C ABI for the bot scorer.
