//! The legacy HTTP+SSE transport of MCP revision 2024-11-05.
//!
//! [`SseTransport::connect`](crate::transport::Transport::connect) sends `GET <url>` with
//! `Accept: text/event-stream`, waits for the first `endpoint` event, resolves its data against
//! the URL and checks that the result is on the same origin (scheme, host and port: a server
//! cannot send the auth header elsewhere), then hands the session its outbound half. From then
//! on every `message` event is one inbound frame, and every outbound frame is one
//! `POST <endpoint>` with `Content-Type: application/json`, sent in order by a writer task.
//!
//! - Any 2xx answer to a POST means accepted (servers answer 202). Another status, a POST
//!   timeout or a network error fails the request it carried at once, through
//!   [`InboundHandler::on_send_failed`](super::InboundHandler::on_send_failed) (the client's
//!   error is `ErrorKind::SendFailed`, naming the server, the request, the status, the URL
//!   and what the server said; a 401 or a `WWW-Authenticate` challenge says authentication
//!   was refused, a plain 403 only that the server refused). A refused connection or a 4xx status means the
//!   server did not process the request (`not_delivered`); after a refused connection, 408,
//!   425 or 429 the retry layer may send it again (`retryable`); after a 5xx or a timeout
//!   nobody knows. A failed notification or answer is logged.
//! - A 401 or 403 on the `GET`, and an endpoint on a foreign origin, fail `connect` with an
//!   error whose [source](std::error::Error::source) is an [`std::io::Error`] of kind
//!   [`PermissionDenied`](std::io::ErrorKind::PermissionDenied): retrying cannot help.
//!   Timeouts: [`SseConfig::connect_timeout`] bounds connecting and the `GET`'s response
//!   headers, [`SseConfig::endpoint_timeout`] the wait for the `endpoint` event.
//! - The stream is parsed by a parser of this module (its module doc says why not a crate):
//!   LF, CRLF and CR line endings, comments, multi-line `data`, `retry`, a leading BOM, any
//!   chunking. An event over the frame limit is skipped without being buffered and reported with
//!   [`InboundHandler::on_oversize`](crate::transport::InboundHandler::on_oversize) at its end;
//!   as it passes the limit,
//!   [`on_oversize_passing`](crate::transport::InboundHandler::on_oversize_passing) fails the
//!   request its head names at once (an event may never end).
//! - When the stream ends or fails, the session hears it at once through `on_closed`; calls in
//!   flight fail. A reconnect is a new `connect`: a new stream, a new endpoint, a new session
//!   (the client runs `initialize` again), under the client's supervision and backoff.
//!
//! The HTTP client: hyper-util over rustls (HTTP/1.1 and HTTP/2 by ALPN), the auth header added by
//! [`AuthLayer`](kaged_mcp_layers::auth::AuthLayer), sensitive headers marked by tower-http.
//! Static `headers` and the auth header go on the `GET` and on every `POST`.
//!
//! # Example
//! ```
//! use kaged_mcp::transport::sse::{SseConfig, SseTransport};
//! use kaged_mcp::transport::Transport;
//! use kaged_mcp_layers::auth::AuthHeader;
//!
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = SseConfig::new("https://mcp.example.com/sse".parse()?)
//!     .header("x-feature-flag".parse()?, "mcp-beta".parse()?)
//!     .auth(AuthHeader::bearer("sk-live-…")?);
//! let transport = SseTransport::new(config)?;
//! assert_eq!(transport.describe(), "sse: https://mcp.example.com/sse");
//! # Ok(()) }
//! ```

mod config;
mod connection;
mod endpoint;

/// The event-stream parser, for the fuzz targets in `fuzz/` and their regression tests only:
/// not part of the API, no stability promise.
#[doc(hidden)]
pub use super::http::event_stream::{
    EventParser, OversizedEvent, SseEvent, SseItem, OVERSIZE_HEAD, OVERSIZE_TAIL,
};

use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use url::Url;

pub use self::config::{
    InvalidSseConfig, SseConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_ENDPOINT_TIMEOUT,
    DEFAULT_POST_TIMEOUT,
};
use super::http::client::{self, HttpService};
pub use super::http::InvalidKind;
use super::http::{auth_hint, redacted};
use super::{BoxFuture, ConnectContext, Connection, Transport, TransportError};

/// Connects to an MCP server over HTTP+SSE (2024-11-05). See the [module docs](self).
#[derive(Debug, Clone)]
pub struct SseTransport {
    inner: Arc<Inner>,
}

/// What every connection of one transport shares: the checked configuration and the client
/// (its connection pool outlives reconnects).
struct Inner {
    url: Url,
    headers: Vec<(HeaderName, HeaderValue)>,
    connect_timeout: Duration,
    endpoint_timeout: Duration,
    post_timeout: Duration,
    auth_hint: String,
    http: HttpService,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport")
            .field("url", &redacted(&self.url))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl SseTransport {
    /// A transport for `config`; errors name the server by its URL.
    ///
    /// # Errors
    /// [`InvalidSseConfig`] when the URL is not `http`/`https`, has no host or carries
    /// credentials, or a static header collides with the auth header or with one the transport
    /// sets itself.
    pub fn new(config: SseConfig) -> Result<Self, InvalidSseConfig> {
        let name = redacted(&config.url);
        Self::checked(&name, config)
    }

    /// A transport for `config`, errors naming `server`.
    pub(crate) fn checked(server: &str, config: SseConfig) -> Result<Self, InvalidSseConfig> {
        config.validate(server)?;
        let http = client::client(config.auth.as_ref(), config.connect_timeout);
        Ok(Self {
            inner: Arc::new(Inner {
                url: config.url,
                headers: config.headers,
                connect_timeout: config.connect_timeout,
                endpoint_timeout: config.endpoint_timeout,
                post_timeout: config.post_timeout,
                auth_hint: auth_hint(config.secret_ref.as_deref(), config.auth.is_some()),
                http,
            }),
        })
    }

    /// The URL of the event stream.
    pub fn url(&self) -> &Url {
        &self.inner.url
    }
}

impl Transport for SseTransport {
    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            connection::open(inner, ctx)
                .await
                .map(|c| Box::new(c) as Box<dyn Connection>)
        })
    }

    fn describe(&self) -> String {
        format!("sse: {}", redacted(&self.inner.url))
    }

    fn peer(&self) -> crate::transport::Peer {
        crate::transport::Peer::of_url(&self.inner.url)
    }
}
