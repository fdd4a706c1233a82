//! Error of [`AuthHeader`](super::AuthHeader)'s constructors.

use std::fmt;

/// A header name or secret that cannot make an authentication header.
///
/// It names the header and says what is wrong; it never holds the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHeader {
    name: String,
    kind: InvalidHeaderKind,
}

/// What is wrong in an [`InvalidHeader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidHeaderKind {
    /// The header name is not a valid HTTP header name.
    Name,
    /// The secret is empty.
    EmptyValue,
    /// The secret holds CR or LF (often a trailing newline from a file).
    LineBreak,
    /// The secret holds a control byte other than tab.
    ValueByte,
}

impl InvalidHeader {
    pub(crate) fn new(name: &str, kind: InvalidHeaderKind) -> Self {
        Self {
            name: name.to_owned(),
            kind,
        }
    }

    /// The header name as configured.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What is wrong.
    pub const fn kind(&self) -> InvalidHeaderKind {
        self.kind
    }
}

impl fmt::Display for InvalidHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name.escape_debug();
        match self.kind {
            InvalidHeaderKind::Name => write!(f, "invalid auth header name \"{name}\""),
            InvalidHeaderKind::EmptyValue => {
                write!(f, "auth header \"{name}\": the secret is empty")
            }
            InvalidHeaderKind::LineBreak => write!(
                f,
                "auth header \"{name}\": the secret contains CR or LF (a trailing newline?)"
            ),
            InvalidHeaderKind::ValueByte => write!(
                f,
                "auth header \"{name}\": the secret contains a control character"
            ),
        }
    }
}

impl std::error::Error for InvalidHeader {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_header_and_the_fault() {
        let err = InvalidHeader::new("x-api-key", InvalidHeaderKind::LineBreak);
        assert_eq!(
            err.to_string(),
            "auth header \"x-api-key\": the secret contains CR or LF (a trailing newline?)"
        );
        let err = InvalidHeader::new("bad\nname", InvalidHeaderKind::Name);
        assert_eq!(err.to_string(), "invalid auth header name \"bad\\nname\"");
    }
}
