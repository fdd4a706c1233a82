//! The Streamable HTTP transport of MCP revisions 2025-03-26, 2025-06-18 and 2025-11-25.
//!
//! One endpoint URL takes every message the client sends as a `POST` with
//! `Accept: application/json, text/event-stream`. What comes back:
//! - to a request: one JSON body (`application/json`), or an event stream
//!   (`text/event-stream`) that may carry the server's own requests and notifications before
//!   the answer; every `message` event is one inbound frame;
//! - to a notification or an answer: `202 Accepted`.
//!
//! A request answered `202 Accepted` (not what the spec says, but seen) waits for its answer on
//! the GET stream; when the server refused that stream, or in 2026-07-28 (which has none), it
//! fails at once.
//!
//! # How this transport maps the spec onto the [transport contract](super)
//! - **Concurrency.** Each request goes out on a `POST` of its own, at once, on a task of its
//!   own: calls never queue behind each other. Notifications and answers go out one at a
//!   time, in order. Requests (and the GET stream) wait only for `notifications/initialized`
//!   to have been POSTed, so it reaches the server before the first `tools/list`. Frames
//!   from several response streams reach the session one at a time, whole, each stream's in
//!   its order.
//! - **Cancellation.** When the session sends `notifications/cancelled` for a request (its
//!   caller gave up), that request's task ends: not sent if it had not gone out yet, its
//!   answer no longer read, its HTTP connection dropped.
//! - **Session.** The `Mcp-Session-Id` of the `initialize` answer goes on every later
//!   message; [`Connection::negotiated`] gives the
//!   `MCP-Protocol-Version` that goes on every message after the handshake. A `404` to a message
//!   that carried the session id means the server ended the session: the request it carried
//!   fails as not delivered and retryable (so do requests whose `POST` had not started, held
//!   until the close), the requests already POSTed get up to 1 s to meet their own answer's
//!   status (each `404` among them fails as not delivered too), and the connection closes with
//!   [`CloseReason::session_expired`](super::CloseReason::session_expired), so the client
//!   starts a new session and the retry layer sends those requests again (a request is never
//!   sent twice when its delivery is unknown: a call whose `POST` had no answer's status when
//!   the session closed fails, delivery unknown). A session that expires before it ever
//!   answered a call counts as a failure, so a server that loses every session at once backs
//!   off.
//! - **The GET stream.** Once the handshake is done (`notifications/initialized` accepted), a
//!   `GET` opens the stream of server-initiated messages; a `405` (or another 4xx) means the
//!   server offers none. Requests wait (at most the connect timeout, once per session) until
//!   that first `GET` was answered, so what a server sends there about a call finds the stream open (the
//!   Python SDK sends a call's sampling request there when it answers in JSON). When it ends, it is opened again after the server's `retry` or a
//!   backoff (1 s, doubling to 60 s), with `Last-Event-ID` when the server gave event ids.
//! - **Resumption.** When a response stream ends before the answer to its request arrived
//!   (and its caller still waits), the transport waits the stream's `retry` interval
//!   (default 1 s, taken within 50 ms … 60 s) and resumes it with a `GET` carrying
//!   `Last-Event-ID`; the request is never sent again. Without an event id, or after [`StreamableHttpConfig::max_resumptions`]
//!   attempts in a row that brought nothing, the request fails, naming why.
//! - **Shutdown.** [`Connection::close`] lets queued notifications
//!   (cancellations) go out, then sends `DELETE` with the session id (`405` is fine). Dropping
//!   the connection ends every task at once.
//! - **Bounds.** A message over the frame limit is not kept: its first bytes (and its last
//!   ones, when it ended) go to [`on_oversize`](super::InboundHandler::on_oversize). An answer
//!   is read no further than the limit: a JSON body whose `Content-Length` is over it is not
//!   read at all, one (or an event of a POST's stream) that passes it is dropped there, and
//!   its request fails at once as too large, never at the call's timeout. An event on the GET
//!   stream is skipped to its end so the stream stays in sync; the request its head names
//!   fails as it passes the limit
//!   ([`on_oversize_passing`](super::InboundHandler::on_oversize_passing)).
//!   Redirects are never followed (every message goes to the configured origin). A `401` or
//!   `403` makes a failed handshake permanent; a refusal names the URL and what the server
//!   said, and the server's secret reference only when the server spoke of credentials (a
//!   `401`, a `WWW-Authenticate` challenge). A `404` before anything was answered asks whether
//!   the endpoint's path is right.
//!
//! The HTTP client is the one the SSE transport uses (see the [`http`](super::http) module):
//! pooled, kept alive, HTTP/2 by ALPN over TLS, the auth header from a layer.
//!
//! # Example
//! ```
//! use kaged_mcp::transport::streamable_http::{StreamableHttpConfig, StreamableHttpTransport};
//! use kaged_mcp::transport::Transport;
//! use kaged_mcp_layers::auth::{AuthHeader, StaticToken, TokenSource};
//!
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = StreamableHttpConfig::new("https://mcp.example.com/mcp".parse()?)
//!     .auth(AuthHeader::bearer("sk-live-…")?);
//! let transport = StreamableHttpTransport::new(config)?;
//! assert_eq!(transport.describe(), "streamable-http: https://mcp.example.com/mcp");
//! # Ok(()) }
//! ```

mod connection;

#[doc(hidden)]
pub use self::connection::param_header;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use kaged_mcp_layers::auth::{AuthHeader, StaticToken, TokenSource};
use url::Url;

use super::http::client::{self, HttpService};
use super::http::{auth_hint, redacted, validate, InvalidHttpConfig, InvalidKind};
use super::{BoxFuture, ConnectContext, Connection, Transport, TransportError};

/// The default for [`StreamableHttpConfig::connect_timeout`]: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default for [`StreamableHttpConfig::post_timeout`]: 30 s.
pub const DEFAULT_POST_TIMEOUT: Duration = Duration::from_secs(30);
/// The default for [`StreamableHttpConfig::max_resumptions`]: 5.
pub const DEFAULT_MAX_RESUMPTIONS: u32 = 5;

/// How to reach one server over Streamable HTTP.
///
/// Build it with [`StreamableHttpConfig::new`] and the setters, or from the project
/// configuration with [`assemble::streamable_http`](crate::assemble::streamable_http);
/// [`StreamableHttpTransport::new`] checks it. `Debug` shows the auth header's name only.
#[derive(Clone)]
#[non_exhaustive]
pub struct StreamableHttpConfig {
    /// The MCP endpoint, `http` or `https`.
    pub url: Url,
    /// Static headers sent with every request.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Where the authentication header comes from (a static secret, OAuth, an embedder's
    /// credential store); sent with every request.
    pub auth: Option<Arc<dyn TokenSource>>,
    /// The name of the secret behind `auth` (`api_keys.example`), for the message of a refusal
    /// the server said was about credentials (a 401, a `WWW-Authenticate` challenge); never the
    /// secret itself.
    pub secret_ref: Option<String>,
    /// How long connecting and getting the response headers of a `GET` or `DELETE` may take.
    pub connect_timeout: Duration,
    /// How long the `POST` of a notification or an answer may take; past it, it is logged as
    /// failed. (A request's `POST` lasts as long as the call: the caller's timeout bounds it,
    /// through the cancellation it sends.)
    pub post_timeout: Duration,
    /// How many times in a row a response stream that ended before its answer is resumed
    /// without bringing an event before the request fails.
    pub max_resumptions: u32,
}

impl StreamableHttpConfig {
    /// A configuration for `url` with no header, no auth and the default timeouts.
    pub fn new(url: Url) -> Self {
        Self {
            url,
            headers: Vec::new(),
            auth: None,
            secret_ref: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            post_timeout: DEFAULT_POST_TIMEOUT,
            max_resumptions: DEFAULT_MAX_RESUMPTIONS,
        }
    }

    /// Adds a static header.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Sets the authentication header.
    #[must_use]
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
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`post_timeout`](Self::post_timeout).
    #[must_use]
    pub fn post_timeout(mut self, timeout: Duration) -> Self {
        self.post_timeout = timeout;
        self
    }

    /// Sets [`max_resumptions`](Self::max_resumptions).
    #[must_use]
    pub fn max_resumptions(mut self, n: u32) -> Self {
        self.max_resumptions = n;
        self
    }
}

impl fmt::Debug for StreamableHttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttpConfig")
            .field("url", &redacted(&self.url))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("auth", &self.auth)
            .field("secret_ref", &self.secret_ref)
            .field("connect_timeout", &self.connect_timeout)
            .field("post_timeout", &self.post_timeout)
            .field("max_resumptions", &self.max_resumptions)
            .finish()
    }
}

/// Connects to an MCP server over Streamable HTTP. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct StreamableHttpTransport {
    inner: Arc<Inner>,
}

/// What every connection of one transport shares: the checked configuration and the client
/// (its connection pool outlives sessions).
struct Inner {
    url: Url,
    /// The same, parsed once for every request.
    uri: http::Uri,
    /// The static headers.
    headers: Vec<(HeaderName, HeaderValue)>,
    auth_hint: String,
    connect_timeout: Duration,
    post_timeout: Duration,
    max_resumptions: u32,
    http: HttpService,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttpTransport")
            .field("url", &redacted(&self.url))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl StreamableHttpTransport {
    /// A transport for `config`; errors name the server by its URL.
    ///
    /// # Errors
    /// [`InvalidHttpConfig`] when the URL is not `http`/`https`, has no host or carries
    /// credentials, or a static header collides with the auth header or with one the transport
    /// sets itself.
    pub fn new(config: StreamableHttpConfig) -> Result<Self, InvalidHttpConfig> {
        let name = redacted(&config.url);
        Self::checked(&name, config)
    }

    /// A transport for `config`, errors naming `server`.
    pub(crate) fn checked(
        server: &str,
        config: StreamableHttpConfig,
    ) -> Result<Self, InvalidHttpConfig> {
        let http = client::client(config.auth.as_ref(), config.connect_timeout);
        Self::over(server, config, http)
    }

    /// A transport for `config` whose requests go to `service` instead of the network: the
    /// server's answers (status, headers, body in whatever chunks) are fed in without a
    /// socket. Exists for the fuzz targets in `fuzz/` (`http_answers`) and their regression
    /// tests; not part of the API. `config.auth` is not used (`service` stands for the whole
    /// client, its layers included).
    ///
    /// # Errors
    /// As for [`new`](Self::new).
    #[doc(hidden)]
    pub fn with_http_service(
        config: StreamableHttpConfig,
        service: tower::util::BoxCloneSyncService<
            http::Request<http_body_util::Full<bytes::Bytes>>,
            http::Response<
                http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, tower::BoxError>,
            >,
            tower::BoxError,
        >,
    ) -> Result<Self, InvalidHttpConfig> {
        let name = redacted(&config.url);
        Self::over(&name, config, service)
    }

    /// A transport for `config`, checked, over the client `http`; errors name `server`.
    fn over(
        server: &str,
        config: StreamableHttpConfig,
        http: HttpService,
    ) -> Result<Self, InvalidHttpConfig> {
        validate(
            server,
            &config.url,
            &config.headers,
            config.auth.as_ref().map(|a| a.header_name()).as_ref(),
        )?;
        let uri = config
            .url
            .as_str()
            .parse::<http::Uri>()
            .map_err(|e| InvalidHttpConfig::new(server, InvalidKind::Url(e.to_string())))?;
        Ok(Self {
            inner: Arc::new(Inner {
                auth_hint: auth_hint(config.secret_ref.as_deref(), config.auth.is_some()),
                url: config.url,
                uri,
                headers: config.headers,
                connect_timeout: config.connect_timeout,
                post_timeout: config.post_timeout,
                max_resumptions: config.max_resumptions,
                http,
            }),
        })
    }

    /// The MCP endpoint.
    pub fn url(&self) -> &Url {
        &self.inner.url
    }
}

impl Transport for StreamableHttpTransport {
    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(
            async move { connection::open(inner, ctx).map(|c| Box::new(c) as Box<dyn Connection>) },
        )
    }

    fn describe(&self) -> String {
        format!("streamable-http: {}", redacted(&self.inner.url))
    }

    fn peer(&self) -> crate::transport::Peer {
        crate::transport::Peer::of_url(&self.inner.url)
    }
    fn speaks_modern(&self) -> bool {
        true
    }

    fn mirrors_headers(&self) -> bool {
        true
    }
}
