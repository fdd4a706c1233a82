//! The checks made on an HTTP server's URL and static headers before anything is sent, and
//! the error that names what is wrong.

use std::fmt;

use http::header::{self, HeaderName, HeaderValue};
use kaged_mcp_layers::auth::InvalidHeader;
use url::Url;

/// Headers the transports set themselves or that frame the HTTP message; a static header may
/// not name them.
const RESERVED: [HeaderName; 6] = [
    header::HOST,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::CONNECTION,
    header::CONTENT_TYPE,
    header::ACCEPT,
];

/// Headers of Streamable HTTP that the transport sets itself (lower case, as `HeaderName`s are):
/// a static one of the same name would be sent twice. `Mcp-Param-*` too (2026-07-28).
const RESERVED_MCP: [&str; 5] = [
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "mcp-method",
    "mcp-name",
];
const RESERVED_MCP_PREFIX: &str = "mcp-param-";

/// Checks `url`, `headers` and `auth` of the server labelled `server`.
pub(crate) fn validate(
    server: &str,
    url: &Url,
    headers: &[(HeaderName, HeaderValue)],
    auth_name: Option<&HeaderName>,
) -> Result<(), InvalidHttpConfig> {
    let err = |kind| Err(InvalidHttpConfig::new(server, kind));
    if !matches!(url.scheme(), "http" | "https") {
        return err(InvalidKind::Scheme(url.scheme().to_owned()));
    }
    if url.host().is_none() {
        return err(InvalidKind::NoHost);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return err(InvalidKind::Credentials);
    }
    for (name, _) in headers {
        if auth_name == Some(name) {
            return err(InvalidKind::Collision(name.clone()));
        }
        if RESERVED.contains(name)
            || RESERVED_MCP.contains(&name.as_str())
            || name.as_str().starts_with(RESERVED_MCP_PREFIX)
        {
            return err(InvalidKind::Reserved(name.clone()));
        }
    }
    Ok(())
}

/// An HTTP server's configuration that cannot work: it names the server and what is wrong,
/// never a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHttpConfig {
    server: String,
    kind: InvalidKind,
}

/// What is wrong in an [`InvalidHttpConfig`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidKind {
    /// The URL's scheme is not `http` or `https`.
    Scheme(String),
    /// The URL has no host.
    NoHost,
    /// The URL carries a user name or password (they would never be sent; use `auth`).
    Credentials,
    /// A static header has the auth header's name.
    Collision(HeaderName),
    /// A static header names one the transport sets itself (`Content-Type`, `Accept`, `Host`,
    /// framing headers, `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`).
    Reserved(HeaderName),
    /// The secret cannot make an auth header.
    Auth(InvalidHeader),
    /// The URL is not one an HTTP request can carry (the reason).
    Url(String),
    /// `auth: {type: oauth}` was given no token source (built by the session).
    NoTokenSource,
}

impl InvalidHttpConfig {
    pub(crate) fn new(server: &str, kind: InvalidKind) -> Self {
        Self {
            server: server.to_owned(),
            kind,
        }
    }

    /// The server's label.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// What is wrong.
    pub fn kind(&self) -> &InvalidKind {
        &self.kind
    }
}

impl fmt::Display for InvalidHttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let server = &self.server;
        match &self.kind {
            InvalidKind::Scheme(s) => write!(
                f,
                "server `{server}`: the url must be http or https, not `{s}`"
            ),
            InvalidKind::NoHost => write!(f, "server `{server}`: the url has no host"),
            InvalidKind::Credentials => write!(
                f,
                "server `{server}`: the url carries a user name or password, which is never \
                 sent; put the secret in local.toml and use `auth`"
            ),
            InvalidKind::Collision(h) => write!(
                f,
                "server `{server}`: the static header `{h}` collides with the auth header; \
                 remove it from `headers`"
            ),
            InvalidKind::Reserved(h) => write!(
                f,
                "server `{server}`: the static header `{h}` is set by the transport itself; \
                 remove it from `headers`"
            ),
            InvalidKind::Auth(e) => write!(f, "server `{server}`: {e}"),
            InvalidKind::Url(why) => write!(f, "server `{server}`: the url is not usable: {why}"),
            InvalidKind::NoTokenSource => write!(
                f,
                "server `{server}`: `auth: {{type: oauth}}` needs a token source (the session \
                 builds one; a transport built by hand takes `token_source`)"
            ),
        }
    }
}

impl std::error::Error for InvalidHttpConfig {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            InvalidKind::Auth(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_the_transport_sets_are_refused_as_static_headers() {
        let url = Url::parse("https://example.com/mcp").unwrap();
        for name in [
            "Mcp-Session-Id",
            "Mcp-Method",
            "mcp-name",
            "Mcp-Param-Region",
            "Host",
        ] {
            let headers = [(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_static("x"),
            )];
            let e = validate("s", &url, &headers, None).unwrap_err().to_string();
            assert!(e.contains("is set by the transport itself"), "{name}: {e}");
        }
        let ok = [(
            HeaderName::from_static("x-tenant"),
            HeaderValue::from_static("x"),
        )];
        assert!(validate("s", &url, &ok, None).is_ok());
    }
}
