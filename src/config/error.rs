//! Configuration errors: every one names the file, the key path and, for YAML, the line and
//! column, so an operator can go straight to the mistake.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a configuration file a value sits: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Location {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One problem in one configuration file.
///
/// `Display` reads `FILE:LINE:COL: KEY.PATH: message` (the location is left out where the
/// format has none, the key path where the problem is the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The file the problem is in.
    pub file: PathBuf,
    /// The dotted key path, such as `mcp.github.auth.secret_ref`; empty for the whole file.
    pub key_path: String,
    /// Line and column, where the format tells them.
    pub location: Option<Location>,
    /// What is wrong, in words.
    pub message: String,
}

impl ConfigError {
    /// A new error about `key_path` in `file`.
    pub fn new(
        file: impl Into<PathBuf>,
        key_path: impl Into<String>,
        location: Option<Location>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            file: file.into(),
            key_path: key_path.into(),
            location,
            message: message.into(),
        }
    }

    /// The file this error is about.
    pub fn file(&self) -> &Path {
        &self.file
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(loc) = self.location {
            write!(f, ":{loc}")?;
        }
        if !self.key_path.is_empty() {
            write!(f, ": {}", self.key_path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// All the problems found while loading a configuration; never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    errors: Vec<ConfigError>,
}

impl ConfigErrors {
    /// Wraps a non-empty list of errors; `None` when the list is empty.
    pub fn from_vec(errors: Vec<ConfigError>) -> Option<Self> {
        if errors.is_empty() {
            None
        } else {
            Some(Self { errors })
        }
    }

    /// The errors, in the order they were found.
    pub fn errors(&self) -> &[ConfigError] {
        &self.errors
    }

    /// An iterator over the errors.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        Self { errors: vec![e] }
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}
