//! [`SseConfig`]: what one SSE server needs, and the checks made before anything is sent.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use kaged_mcp_layers::auth::{AuthHeader, StaticToken, TokenSource};
use url::Url;

use crate::transport::http::{validate, InvalidHttpConfig};

/// The default for [`SseConfig::connect_timeout`]: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default for [`SseConfig::endpoint_timeout`]: 10 s.
pub const DEFAULT_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default for [`SseConfig::post_timeout`]: 30 s.
pub const DEFAULT_POST_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach one server over the 2024-11-05 HTTP+SSE transport.
///
/// Build it with [`SseConfig::new`] and the setters, or from the project configuration with
/// [`assemble::sse`](crate::assemble::sse); [`SseTransport::new`](super::SseTransport::new) checks it.
/// `Debug` shows the auth header's name only.
#[derive(Clone)]
#[non_exhaustive]
pub struct SseConfig {
    /// The URL of the event stream (`GET`), `http` or `https`.
    pub url: Url,
    /// Static headers sent on the `GET` and on every `POST`.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Where the authentication header comes from (a static secret, OAuth, an embedder's
    /// credential store); sent on the `GET` and on every `POST`.
    pub auth: Option<Arc<dyn TokenSource>>,
    /// How long connecting and getting the `GET`'s response headers may take.
    pub connect_timeout: Duration,
    /// How long to wait for the `endpoint` event once the stream is open.
    pub endpoint_timeout: Duration,
    /// How long one `POST` may take; past it the message it carried fails.
    pub post_timeout: Duration,
    /// The name of the secret behind `auth` (`api_keys.example`), for the message of a refusal
    /// the server said was about credentials (a 401, a `WWW-Authenticate` challenge); never the
    /// secret itself.
    pub secret_ref: Option<String>,
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
            secret_ref: None,
        }
    }

    /// Adds a static header.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Sets the authentication header.
    pub fn auth(mut self, auth: AuthHeader) -> Self {
        self.auth = Some(Arc::new(StaticToken::new(auth)));
        self
    }

    /// Takes the authentication header from `source` (OAuth, a daemon's credential store),
    /// which may renew it when the server refuses it.
    #[must_use]
    pub fn token_source(mut self, source: Arc<dyn TokenSource>) -> Self {
        self.auth = Some(source);
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
        validate(
            server,
            &self.url,
            &self.headers,
            self.auth.as_ref().map(|a| a.header_name()).as_ref(),
        )
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
            .field("secret_ref", &self.secret_ref)
            .finish()
    }
}

/// An [`SseConfig`] that cannot work: it names the server and what is wrong, never a secret.
pub type InvalidSseConfig = InvalidHttpConfig;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::InvalidKind;
    use http::header;

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
}
