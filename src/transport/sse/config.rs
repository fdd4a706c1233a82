//! [`SseConfig`]: what one SSE server needs, and the checks made before anything is sent.

use std::fmt;
use std::time::Duration;

use http::header::{self, HeaderName, HeaderValue};
use kaged_mcp_layers::auth::{AuthHeader, InvalidHeader};
use url::Url;

use crate::config::{AuthConfig, AuthKind, Secret, SseServerConfig};

/// The default for [`SseConfig::connect_timeout`]: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default for [`SseConfig::endpoint_timeout`]: 10 s.
pub const DEFAULT_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default for [`SseConfig::post_timeout`]: 30 s.
pub const DEFAULT_POST_TIMEOUT: Duration = Duration::from_secs(30);

/// Headers the transport sets itself or that frame the HTTP message; a static header may not
/// name them.
const RESERVED: [HeaderName; 6] = [
    header::HOST,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::CONNECTION,
    header::CONTENT_TYPE,
    header::ACCEPT,
];

/// How to reach one server over the 2024-11-05 HTTP+SSE transport.
///
/// Build it with [`SseConfig::new`] and the setters, or from the project configuration with
/// [`SseConfig::from_config`]; [`SseTransport::new`](super::SseTransport::new) checks it.
/// `Debug` shows the auth header's name only.
#[derive(Clone)]
pub struct SseConfig {
    /// The URL of the event stream (`GET`), `http` or `https`.
    pub url: Url,
    /// Static headers sent on the `GET` and on every `POST`.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The authentication header, sent on the `GET` and on every `POST`.
    pub auth: Option<AuthHeader>,
    /// How long connecting and getting the `GET`'s response headers may take.
    pub connect_timeout: Duration,
    /// How long to wait for the `endpoint` event once the stream is open.
    pub endpoint_timeout: Duration,
    /// How long one `POST` may take; past it the message it carried fails.
    pub post_timeout: Duration,
}

impl SseConfig {
    /// A configuration for `url` with no header, no auth and the default timeouts.
    pub fn new(url: Url) -> Self {
        Self {
            url,
            headers: Vec::new(),
            auth: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            endpoint_timeout: DEFAULT_ENDPOINT_TIMEOUT,
            post_timeout: DEFAULT_POST_TIMEOUT,
        }
    }

    /// The configuration of the `mcp.<server>` entry `sse`, with its `auth` block and the
    /// secret it refers to (resolved by the caller from `local.toml`).
    ///
    /// # Errors
    /// [`InvalidSseConfig`] when the secret cannot make a header (empty, a line break, a
    /// control byte) or `auth` is given without its secret. The error names the server and
    /// never holds the secret.
    pub fn from_config(
        server: &str,
        sse: &SseServerConfig,
        auth: Option<(&AuthConfig, &Secret)>,
    ) -> Result<Self, InvalidSseConfig> {
        let mut config = Self::new(sse.url.clone());
        config.headers = sse.headers.clone();
        if let Some((auth, secret)) = auth {
            let header = match auth.kind {
                AuthKind::Bearer => AuthHeader::bearer(secret.expose()),
                AuthKind::Header => AuthHeader::header(auth.header_name.as_str(), secret.expose()),
            }
            .map_err(|e| InvalidSseConfig::new(server, InvalidKind::Auth(e)))?;
            config.auth = Some(header);
        }
        Ok(config)
    }

    /// Adds a static header.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Sets the authentication header.
    pub fn auth(mut self, auth: AuthHeader) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Sets [`connect_timeout`](Self::connect_timeout).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`endpoint_timeout`](Self::endpoint_timeout).
    pub fn endpoint_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint_timeout = timeout;
        self
    }

    /// Sets [`post_timeout`](Self::post_timeout).
    pub fn post_timeout(mut self, timeout: Duration) -> Self {
        self.post_timeout = timeout;
        self
    }

    /// Checks what can be checked before connecting.
    pub(crate) fn validate(&self, server: &str) -> Result<(), InvalidSseConfig> {
        let err = |kind| Err(InvalidSseConfig::new(server, kind));
        if !matches!(self.url.scheme(), "http" | "https") {
            return err(InvalidKind::Scheme(self.url.scheme().to_owned()));
        }
        if self.url.host().is_none() {
            return err(InvalidKind::NoHost);
        }
        if !self.url.username().is_empty() || self.url.password().is_some() {
            return err(InvalidKind::Credentials);
        }
        for (name, _) in &self.headers {
            if self.auth.as_ref().is_some_and(|a| a.name() == name) {
                return err(InvalidKind::Collision(name.clone()));
            }
            if RESERVED.contains(name) {
                return err(InvalidKind::Reserved(name.clone()));
            }
        }
        Ok(())
    }
}

impl fmt::Debug for SseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseConfig")
            .field("url", &super::redacted(&self.url))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("auth", &self.auth)
            .field("connect_timeout", &self.connect_timeout)
            .field("endpoint_timeout", &self.endpoint_timeout)
            .field("post_timeout", &self.post_timeout)
            .finish()
    }
}

/// An [`SseConfig`] that cannot work: it names the server and what is wrong, never a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidSseConfig {
    server: String,
    kind: InvalidKind,
}

/// What is wrong in an [`InvalidSseConfig`].
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
    /// framing headers).
    Reserved(HeaderName),
    /// The secret cannot make an auth header.
    Auth(InvalidHeader),
}

impl InvalidSseConfig {
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

impl fmt::Display for InvalidSseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let server = &self.server;
        match &self.kind {
            InvalidKind::Scheme(s) => write!(
                f,
                "server `{server}`: the SSE url must be http or https, not `{s}`"
            ),
            InvalidKind::NoHost => write!(f, "server `{server}`: the SSE url has no host"),
            InvalidKind::Credentials => write!(
                f,
                "server `{server}`: the SSE url carries a user name or password, which is never \
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
        }
    }
}

impl std::error::Error for InvalidSseConfig {
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
    use crate::config::SecretRef;

    const SECRET: &str = "tok-0a1b2c";

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn kind(config: SseConfig) -> InvalidKind {
        config.validate("srv").unwrap_err().kind().clone()
    }

    #[test]
    fn only_http_and_https_urls_with_a_host_and_no_credentials_are_accepted() {
        assert!(SseConfig::new(url("https://h.example/sse"))
            .validate("srv")
            .is_ok());
        assert!(SseConfig::new(url("http://127.0.0.1:9/sse"))
            .validate("srv")
            .is_ok());
        assert_eq!(
            kind(SseConfig::new(url("ws://h/sse"))),
            InvalidKind::Scheme("ws".into())
        );
        assert_eq!(
            kind(SseConfig::new(url("http://u:p@h/sse"))),
            InvalidKind::Credentials
        );
        let err = SseConfig::new(url("http://u:p@h/sse"))
            .validate("db")
            .unwrap_err();
        assert!(err.to_string().starts_with("server `db`: "), "{err}");
        assert!(!err.to_string().contains("u:p"), "{err}");
    }

    #[test]
    fn a_static_header_may_not_collide_with_auth_or_reserved_headers() {
        let base = SseConfig::new(url("https://h/sse"));
        let with = |name: &str| {
            base.clone()
                .header(name.parse().unwrap(), HeaderValue::from_static("v"))
                .auth(AuthHeader::bearer(SECRET).unwrap())
        };
        assert_eq!(
            kind(with("Authorization")),
            InvalidKind::Collision(header::AUTHORIZATION)
        );
        assert_eq!(
            kind(with("content-type")),
            InvalidKind::Reserved(header::CONTENT_TYPE)
        );
        assert_eq!(kind(with("host")), InvalidKind::Reserved(header::HOST));
        assert!(with("x-feature-flag").validate("srv").is_ok());
        let custom = base
            .header("x-api-key".parse().unwrap(), HeaderValue::from_static("v"))
            .auth(AuthHeader::header("X-API-Key", SECRET).unwrap());
        let err = custom.validate("api").unwrap_err();
        assert_eq!(
            err.to_string(),
            "server `api`: the static header `x-api-key` collides with the auth header; remove \
             it from `headers`"
        );
    }

    #[test]
    fn from_config_builds_bearer_and_custom_headers_and_debug_hides_the_secret() {
        let sse = SseServerConfig {
            url: url("https://h/sse"),
            headers: vec![("x-flag".parse().unwrap(), HeaderValue::from_static("1"))],
        };
        let secret = Secret::new(SECRET);
        let bearer = AuthConfig {
            kind: AuthKind::Bearer,
            header_name: header::AUTHORIZATION,
            secret_ref: SecretRef::parse("api.key").unwrap(),
        };
        let config = SseConfig::from_config("gh", &sse, Some((&bearer, &secret))).unwrap();
        assert_eq!(config.auth.as_ref().unwrap().name(), header::AUTHORIZATION);
        assert_eq!(config.headers.len(), 1);
        let text = format!("{config:?}");
        assert!(!text.contains(SECRET), "{text}");
        assert!(
            text.contains("authorization") && text.contains("x-flag"),
            "{text}"
        );

        let custom = AuthConfig {
            kind: AuthKind::Header,
            header_name: "x-api-key".parse().unwrap(),
            ..bearer.clone()
        };
        let config = SseConfig::from_config("gh", &sse, Some((&custom, &secret))).unwrap();
        assert_eq!(config.auth.unwrap().name().as_str(), "x-api-key");

        let bad = Secret::new(format!("{SECRET}\n"));
        let err = SseConfig::from_config("gh", &sse, Some((&bearer, &bad))).unwrap_err();
        assert!(matches!(err.kind(), InvalidKind::Auth(_)));
        assert!(err.to_string().starts_with("server `gh`: "), "{err}");
        assert!(!err.to_string().contains(SECRET), "{err}");
    }
}
