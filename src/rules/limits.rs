//! What a rules file may hold. Each limit is far above what a real file
//! needs and keeps a hostile or broken one from costing memory or time at
//! load (every request pays nothing for them: rules are compiled once).

/// Rules after presets are expanded.
pub const MAX_RULES: usize = 1024;
/// Bytes of a rules file.
pub const MAX_FILE: u64 = 8 << 20;
/// Strings in one condition's list (`exact`, `contains`, `method`, ...).
pub const MAX_VALUES: usize = 4096;
/// Bytes of one string in a condition.
pub const MAX_STRING: usize = 4096;
/// Bytes of one regular expression's text.
pub const MAX_PATTERN: usize = 4096;
/// Compiled size of one regular expression (`RegexBuilder::size_limit`).
pub const REGEX_SIZE_LIMIT: usize = 256 << 10;
/// Cache of one regular expression's lazy DFA, per thread
/// (`RegexBuilder::dfa_size_limit`).
pub const REGEX_DFA_LIMIT: usize = 128 << 10;
/// Nesting of groups and repetitions in one regular expression.
pub const REGEX_NEST_LIMIT: u32 = 32;
/// Regular expressions in a file.
pub const MAX_REGEXES: usize = 128;
/// Named address lists.
pub const MAX_LISTS: usize = 64;
/// Entries of one address list.
pub const MAX_LIST_ENTRIES: usize = 200_000;
/// Bytes of one address-list file.
pub const MAX_LIST_FILE: u64 = 32 << 20;
/// Bytes of a rule's, a list's or a bot's name.
pub const MAX_NAME: usize = 64;
/// Bytes of a tag.
pub const MAX_TAG: usize = 32;
