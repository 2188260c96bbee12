//! Why a template or a locale was refused (a leaf: the template and
//! locale parsers and the pages all name it).

use std::fmt;

/// Why a template or a locale was refused: the message names the file
/// and, where there is one, the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageError(pub String);

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PageError {}
