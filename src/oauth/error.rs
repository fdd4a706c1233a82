//! The OAuth client's errors, typed so that callers match on what happened and each message is
//! written once, from its parts: [`DocumentError`] (what the client met reading where a
//! protected server sends it, resource and authorization server metadata, and registering
//! itself there), [`RedirectError`] (the browser login's redirect), [`SetupError`] and
//! [`NoStateDir`] (setting a server's OAuth up from the configuration).

use http::StatusCode;

use super::http::HttpError;

/// Metadata or a registration answer the client could not fetch or cannot use. Each names the
/// URL (redacted: no query, no credentials) and never a header, a body or a secret.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DocumentError {
    /// The request itself failed: unreachable, timed out, an answer over the body limit.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A URL given by configuration, a challenge or a document does not parse.
    #[error("{what} `{value}` is not a URL: {source}")]
    NotAUrl {
        /// What the URL was for, e.g. `resource_metadata`.
        what: String,
        /// The text that is not a URL.
        value: String,
        /// Why it does not parse.
        source: url::ParseError,
    },
    /// A URL that is neither `http` nor `https`.
    #[error("{what} `{url}` is not http or https")]
    NotHttp {
        /// What the URL was for.
        what: String,
        /// The URL, redacted.
        url: String,
    },
    /// An endpoint a secret would be sent to that is neither `https` nor `http` to a loopback
    /// address ([`may_receive_secrets`](crate::config::may_receive_secrets)); nothing was sent.
    #[error(
        "{what} is `{url}`, which is neither https nor http to a loopback address (127.0.0.0/8, \
         ::1, localhost); nothing is sent there: an OAuth endpoint must be served over https"
    )]
    Insecure {
        /// Where the URL was found: the document and its key.
        what: String,
        /// The URL, redacted and escaped.
        url: String,
    },
    /// An authorization server other than the one `auth.issuer` names.
    #[error(
        "{from} names the authorization server {found}, not `{pinned}` that `auth.issuer` names; \
         nothing is sent to it (if the server has moved to an authorization server you trust, \
         change `auth.issuer`)"
    )]
    NotPinned {
        /// Where it was named: the document.
        from: String,
        /// What it names, escaped.
        found: String,
        /// `auth.issuer`, redacted.
        pinned: String,
    },
    /// 2025-03-26 metadata whose issuer is not the origin it came from, where `auth.issuer`
    /// must be checked.
    #[error(
        "{url}: its issuer `{issuer}` is not the origin it was fetched from, so it cannot be \
         checked against `auth.issuer`; nothing is sent to its endpoints"
    )]
    UnverifiedIssuer {
        /// Where the metadata was, redacted.
        url: String,
        /// The issuer it names, escaped.
        issuer: String,
    },
    /// A document answered with a status that is neither a success nor a refusal (4xx).
    #[error("{url}: answered {status}")]
    Status {
        /// Where, redacted.
        url: String,
        /// The status.
        status: StatusCode,
    },
    /// A document that is not a JSON object.
    #[error("{url}: not a JSON object")]
    NotAnObject {
        /// Where, redacted.
        url: String,
    },
    /// A document without a member the client needs.
    #[error("{url}: no `{key}`")]
    Missing {
        /// Where, redacted.
        url: String,
        /// The member, e.g. `token_endpoint`.
        key: &'static str,
    },
    /// Protected resource metadata that names another server (RFC 9728 section 3.3).
    #[error(
        "the protected resource metadata at {url} names the resource `{resource}`, not this \
         server ({server}); refusing to authorize for it"
    )]
    ForeignResource {
        /// Where the metadata was, redacted.
        url: String,
        /// The resource it names.
        resource: String,
        /// This server, redacted.
        server: String,
    },
    /// Authorization server metadata for another issuer (RFC 8414 section 3.3).
    #[error("{url}: its issuer `{found}` is not `{wanted}`")]
    WrongIssuer {
        /// Where the metadata was, redacted.
        url: String,
        /// The issuer it names.
        found: String,
        /// The issuer asked for.
        wanted: String,
    },
    /// No well-known URL of the authorization server answered with metadata.
    #[error("the authorization server {issuer} has no metadata (tried {tried})")]
    NoMetadata {
        /// The issuer, redacted.
        issuer: String,
        /// The URLs tried, comma-separated.
        tried: String,
    },
    /// Metadata without an authorization endpoint, for a login that needs one.
    #[error("the authorization server {issuer} has no authorization_endpoint")]
    NoAuthorizationEndpoint {
        /// The issuer.
        issuer: String,
    },
    /// Dynamic client registration (RFC 7591) answered with a failure.
    #[error("dynamic client registration at {url} answered {status}")]
    RegistrationRefused {
        /// The registration endpoint, redacted.
        url: String,
        /// The status.
        status: StatusCode,
    },
    /// A registration answer without a client id.
    #[error("dynamic client registration at {url}: no client_id in the answer")]
    NoClientId {
        /// The registration endpoint, redacted.
        url: String,
    },
}

/// No directory for OAuth tokens can be named: `config.toml` names none, and neither
/// `XDG_STATE_HOME` nor `HOME` is an absolute path ([`super::token_dir`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", super::store::NO_STATE_DIR)]
pub struct NoStateDir;

/// Why OAuth could not be set up for a server from the configuration
/// ([`super::OAuthSource::for_server`]). Each names the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// OAuth is configured for a server that is not reached over HTTP.
    #[error("server `{server}`: OAuth needs an HTTP transport")]
    NotHttp {
        /// The server's key.
        server: String,
    },
    /// No directory for its tokens can be named.
    #[error("server `{server}`: OAuth tokens: {source}")]
    NoTokenDir {
        /// The server's key.
        server: String,
        /// Why.
        source: NoStateDir,
    },
}

/// Why the browser login's redirect to the loopback listener gave no code
/// ([`super::loopback`]). None carries the code or the state.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RedirectError {
    /// `127.0.0.1` could not be listened on.
    #[error("cannot listen on 127.0.0.1 for the redirect: {0}")]
    Listen(std::io::Error),
    /// The listener failed while waiting.
    #[error("the redirect listener: {0}")]
    Accept(std::io::Error),
    /// The redirect's `iss` is not the authorization server's issuer (RFC 9207).
    #[error("the redirect's iss `{got}` is not the authorization server's issuer `{expected}` (RFC 9207); refusing its code (a mix-up attack, or another server answered)")]
    WrongIssuer {
        /// The redirect's `iss`.
        got: String,
        /// The issuer the metadata published.
        expected: String,
    },
    /// The authorization server says it sends `iss`, and the redirect has none.
    #[error("the authorization server says it sends `iss` (authorization_response_iss_parameter_supported) but the redirect has none (RFC 9207); refusing its code")]
    NoIssuer,
    /// The redirect carries an OAuth error.
    #[error("the authorization server refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// `error`.
        error: String,
        /// `error_description`, when sent.
        description: Option<String>,
    },
    /// The redirect carries neither a code nor an error.
    #[error("the redirect carried no code")]
    NoCode,
}
