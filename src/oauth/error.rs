//! [`DocumentError`]: what the client met reading where a protected server sends it (resource
//! and authorization server metadata) and registering itself there, typed so that callers
//! match on what happened and the message is written once, from its parts.

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
