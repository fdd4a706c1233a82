//! The errors of the auth layer: [`InvalidHeader`] from [`AuthHeader`](super::AuthHeader)'s
//! constructors, [`TokenError`] from a [`TokenSource`](super::TokenSource).

use std::fmt;

use tower::BoxError;

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

/// A [`TokenSource`](super::TokenSource) could not give a header.
///
/// Its message is written by the source and names what failed and where (a server, an
/// authorization server's endpoint), never a token or a secret. [`TokenError::login_required`]
/// says that only the operator can fix it (a login), so retrying is pointless.
#[derive(Debug)]
pub struct TokenError {
    login_required: bool,
    message: String,
    source: Option<BoxError>,
}

impl TokenError {
    /// The operator must act (log in, grant a scope): `message` says how.
    pub fn login_required(message: impl Into<String>) -> Self {
        Self {
            login_required: true,
            message: message.into(),
            source: None,
        }
    }

    /// Getting a token failed (an authorization server that did not answer, an answer that
    /// could not be read): `message` says what, `source` why.
    pub fn failed(message: impl Into<String>, source: impl Into<Option<BoxError>>) -> Self {
        Self {
            login_required: false,
            message: message.into(),
            source: source.into(),
        }
    }

    /// Whether only the operator can fix this.
    pub const fn is_login_required(&self) -> bool {
        self.login_required
    }

    /// The message, without the source.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TokenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

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
