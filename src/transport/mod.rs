//! Pluggable transports: how the client's JSON-RPC frames reach a server and come back.
//!
//! A [`Transport`] opens [`Connection`]s. The client session ([`crate::client`]) supplies an
//! [`InboundHandler`] when it connects, and the transport calls it directly from the task that
//! reads the server's output: no channel between the bytes and the session, the handler routes a
//! response straight to the waiting caller. Outbound, the transport hands the session an
//! [`Outbound`] whose [`send_with`](Outbound::send_with) never awaits: a frame is queued whole
//! or not at all, and the transport writes it out on its own.
//!
//! Three transports fit this shape (build any configured one with
//! [`assemble::transport`](crate::assemble::transport)):
//! - [`stdio::StdioTransport`]: a child process, newline-delimited JSON on stdin/stdout, one
//!   reader task owning stdout, writes coalesced on a shared buffer.
//! - [`streamable_http::StreamableHttpTransport`] (MCP 2025-03-26 and later): each outbound
//!   frame is one `POST` to one endpoint, a request's answer comes back on its own response
//!   (a JSON body or an event stream), the session id and the protocol version go on every
//!   request, a `GET` stream carries what the server sends on its own.
//! - [`sse::SseTransport`] (MCP 2024-11-05 HTTP+SSE): `GET` opens the event stream, the first
//!   `endpoint` event names the POST URL, each outbound frame is one `POST`, each `message`
//!   event is one inbound frame; a reconnect is a new session, that is a new `connect`.
//!
//! What the two HTTP transports share lives in [`http`].
//!
//! # Writing a transport
//! The contract, in the order things happen:
//!
//! 1. [`Transport::connect`] is called with a [`ConnectContext`]: the server's label (for
//!    logs and errors), the frame limit, and the [`InboundHandler`]. It resolves once the
//!    connection can carry frames both ways (stdio: the process is spawned; SSE: the `endpoint`
//!    event arrived), or fails with a [`TransportError`]. A failure means nothing was sent.
//! 2. Before delivering any inbound frame, and before `connect` resolves, the transport calls
//!    [`InboundHandler::on_open`] exactly once with its [`Outbound`]. The session may write
//!    from inside `on_frame` (answers to `ping`), so the outbound must exist first.
//! 3. Each inbound message is passed whole to [`InboundHandler::on_frame`]: one JSON value,
//!    without the line terminator (stdio) or the `data:` prefixes (SSE, lines joined with
//!    `\n`). Call it from one task at a time, in arrival order. It never blocks and never
//!    awaits; it may call [`Outbound::send_with`].
//! 4. A message longer than [`ConnectContext::frame_limit`] is not buffered: the transport keeps
//!    its first bytes and its last bytes (see [`OversizeFrame`]), discards the rest, calls
//!    [`InboundHandler::on_oversize`] and goes on with the next message. The session uses the
//!    head and tail to find the request id and fail that one call. Nothing waits for the end of
//!    a message over the limit that answers one request on a body of its own (a Streamable
//!    HTTP POST's JSON body or event stream: a declared `Content-Length` over the limit, or the
//!    bytes read passing it): that body is dropped at once and the report names the request
//!    ([`OversizeFrame::request`], [`OversizeFrame::stopped`]). On a stream shared by many
//!    messages (stdio, the SSE stream, the GET stream) the message is skipped to its end so
//!    the stream stays in sync; as it passes the limit an event stream calls
//!    [`InboundHandler::on_oversize_passing`], so the request its head names fails at once.
//! 5. When the connection ends for any reason (the process exited, the stream closed, an I/O
//!    error, [`Connection::close`]), the transport calls [`InboundHandler::on_closed`] exactly
//!    once, after the last `on_frame`, with a [`CloseReason`]. Every later
//!    [`Outbound::send_with`] returns [`SendError::Closed`].
//! 6. [`Connection::close`] shuts down gracefully; dropping the [`Connection`] tears it down at
//!    once, synchronously (stdio: SIGKILL to the process group), even outside a runtime.
//!
//! An outbound frame is everything [`Outbound::send_with`]'s closure appends: one JSON value,
//! no terminator. stdio appends `\n`; SSE sends it as a POST body (`Content-Type:
//! application/json`). `send_with` must not await and must not block on the peer: queue the
//! frame and let a task of the transport write it. A frame is queued whole or not at all;
//! [`SendError`] means the frame was not queued, so the request never reached the server.
//!
//! # Example
//! A transport that answers every request itself, to show the flow (tests use one like it):
//! ```
//! use std::sync::{Arc, Mutex};
//! use kaged_mcp::transport::*;
//!
//! #[derive(Debug, Default)]
//! struct Loopback;
//!
//! #[derive(Debug)]
//! struct LoopConnection;
//! impl Connection for LoopConnection {
//!     fn close(self: Box<Self>) -> BoxFuture<'static, ()> { Box::pin(async {}) }
//! }
//!
//! /// Echoes every frame back to the handler (a real transport writes it to the server).
//! struct LoopOutbound(Mutex<Option<Arc<dyn InboundHandler>>>);
//! impl Outbound for LoopOutbound {
//!     fn send_with(&self, write: &mut dyn FnMut(&mut Vec<u8>) -> std::io::Result<()>)
//!         -> Result<(), SendError> {
//!         let mut frame = Vec::new();
//!         write(&mut frame).map_err(SendError::Encode)?;
//!         let handler = self.0.lock().unwrap().clone().ok_or(SendError::Closed)?;
//!         handler.on_frame(&frame);
//!         Ok(())
//!     }
//! }
//!
//! impl Transport for Loopback {
//!     fn connect(&self, ctx: ConnectContext) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
//!         Box::pin(async move {
//!             let out = Arc::new(LoopOutbound(Mutex::new(Some(ctx.handler.clone()))));
//!             ctx.handler.on_open(out);
//!             Ok(Box::new(LoopConnection) as Box<dyn Connection>)
//!         })
//!     }
//!     fn describe(&self) -> String { "loopback".into() }
//! }
//! ```

mod failure;
#[cfg(feature = "http")]
pub mod http;
mod oversize;
#[cfg(feature = "http")]
pub mod sse;
pub mod stdio;
#[cfg(feature = "http")]
pub mod streamable_http;
pub mod text;

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use crate::protocol::RequestId;

pub use self::failure::{is_transient_status, SendFailure};
pub use self::stdio::{StdioConfig, StdioTransport};
pub use self::text::redact_tokens;

impl Transport for Box<dyn Transport> {
    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
        (**self).connect(ctx)
    }

    fn describe(&self) -> String {
        (**self).describe()
    }

    fn speaks_modern(&self) -> bool {
        (**self).speaks_modern()
    }

    fn mirrors_headers(&self) -> bool {
        (**self).mirrors_headers()
    }

    fn peer(&self) -> Peer {
        (**self).peer()
    }
}

/// Where a transport's connections go, as telemetry names it (`network.transport`,
/// `network.protocol.name`, `server.address`, `server.port`: see [`crate::telemetry`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Peer {
    /// A child process over its standard streams (`network.transport = "pipe"`).
    Pipe,
    /// An HTTP server (`network.transport = "tcp"`, `network.protocol.name = "http"`): its
    /// URL's host and port (the scheme's default when the URL names none). Never the path or
    /// the query, which may carry a secret.
    Http {
        /// The URL's host.
        address: Arc<str>,
        /// The URL's port.
        port: u16,
    },
    /// A transport that does not say.
    Unknown,
}

impl Peer {
    /// The peer of an HTTP transport whose endpoint is `url`.
    pub fn of_url(url: &url::Url) -> Self {
        match (url.host_str(), url.port_or_known_default()) {
            (Some(host), Some(port)) => Peer::Http {
                address: Arc::from(host.trim_start_matches('[').trim_end_matches(']')),
                port,
            },
            _ => Peer::Unknown,
        }
    }
}

/// A boxed, sendable future (connecting and closing happen once per session, not per call).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The default frame limit: 16 MiB.
pub const DEFAULT_FRAME_LIMIT: usize = 16 * 1024 * 1024;

/// Opens connections to one MCP server. See the [module docs](self) for the contract.
pub trait Transport: Send + Sync + 'static {
    /// Opens a new connection. Calls `ctx.handler.on_open` before resolving.
    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>>;

    /// A short description for logs and errors, e.g. `stdio: node server.js` or
    /// `sse: https://host/sse` (never a secret).
    fn describe(&self) -> String;

    /// Whether this transport can carry the 2026-07-28 ("modern") revision: stdio and
    /// Streamable HTTP can; the 2024-11-05 HTTP+SSE transport carries only the legacy,
    /// `initialize`-based revisions. When `false`, the client never probes for the modern
    /// era. The default is `false`: a transport opts in.
    fn speaks_modern(&self) -> bool {
        false
    }

    /// Whether this transport mirrors request fields into headers of its own (2026-07-28
    /// Streamable HTTP: `Mcp-Method`, `Mcp-Name`, and the `Mcp-Param-*` of tool parameters
    /// annotated `x-mcp-header`). When `true`, a modern session works out each tool's
    /// annotated parameters at `tools/list`, leaves out the tools whose annotations are
    /// invalid, and hands the values to [`RequestHead::params`]. The default is `false`.
    fn mirrors_headers(&self) -> bool {
        false
    }

    /// Where this transport's connections go, for telemetry. The default is
    /// [`Peer::Unknown`].
    fn peer(&self) -> Peer {
        Peer::Unknown
    }
}

/// What [`Transport::connect`] is given.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConnectContext {
    /// The server's label (the configuration key), for logs and errors.
    pub server: Arc<str>,
    /// The longest inbound message to accept, in bytes; longer ones go to
    /// [`InboundHandler::on_oversize`].
    pub frame_limit: usize,
    /// Where inbound messages go.
    pub handler: Arc<dyn InboundHandler>,
}

impl ConnectContext {
    /// The context of a connection to `server`, accepting inbound messages up to
    /// `frame_limit` bytes and handing them to `handler` (what the client gives a transport;
    /// a test driving a transport directly builds its own).
    pub fn new(server: Arc<str>, frame_limit: usize, handler: Arc<dyn InboundHandler>) -> Self {
        Self {
            server,
            frame_limit,
            handler,
        }
    }
}

impl fmt::Debug for ConnectContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectContext")
            .field("server", &self.server)
            .field("frame_limit", &self.frame_limit)
            .finish_non_exhaustive()
    }
}

/// An open connection, owned by the client's supervisor. See the [module docs](self).
///
/// Dropping it tears the connection down at once and synchronously, also outside a runtime.
pub trait Connection: Send + Sync + fmt::Debug + 'static {
    /// Shuts the connection down gracefully (stdio: close stdin, wait, SIGTERM, wait, SIGKILL
    /// to the process group) and resolves when it is gone.
    fn close(self: Box<Self>) -> BoxFuture<'static, ()>;

    /// [`close`](Self::close) with `grace` in place of the transport's own grace periods (a
    /// one-shot command or an interrupt, which cannot wait the daemon's): stdio closes stdin
    /// and waits `grace` for the exit, then SIGTERM and `grace` again, then SIGKILL. The
    /// default is `close`, for a transport without grace periods of its own; the caller bounds
    /// it either way (dropping the future drops the connection, which tears it down at once).
    fn close_within(self: Box<Self>, grace: Duration) -> BoxFuture<'static, ()> {
        let _ = grace;
        self.close()
    }

    /// The server's process id (and process group id), for a transport that runs a process.
    fn process_id(&self) -> Option<u32> {
        None
    }

    /// Tells the connection the protocol revision the session agreed on (`2025-11-25`), once,
    /// right after the handshake and before anything else is sent. A transport that must name
    /// it on every message (Streamable HTTP's `MCP-Protocol-Version` header) keeps it; the
    /// others ignore it.
    fn negotiated(&self, protocol_version: &str) {
        let _ = protocol_version;
    }

    /// A digest of the session id the server gave this connection (Streamable HTTP's
    /// `Mcp-Session-Id`), for telemetry's `mcp.session.id`: the session id is a credential
    /// for the session, so the raw value never leaves the transport. Read once, after
    /// [`negotiated`](Self::negotiated). The default (no session id) is `None`.
    fn session_digest(&self) -> Option<Arc<str>> {
        None
    }
}

/// The sending half of a connection, shared by the session and the transport's tasks.
///
/// The session says what each frame is by the method it queues it with: a request
/// ([`send_request`](Self::send_request), with its id and head), the cancellation of one
/// ([`send_cancel`](Self::send_cancel)), anything else: a notification or an answer to the
/// server ([`send_with`](Self::send_with)). A transport never looks into a frame's bytes to
/// find out.
pub trait Outbound: Send + Sync + 'static {
    /// Queues one notification or answer: `write` appends one JSON value to the buffer it is
    /// given. Never awaits, never blocks on the peer. On `Err` nothing was queued and nothing
    /// will be sent.
    ///
    /// # Errors
    /// [`SendError::Closed`] when the connection is closed or closing, [`SendError::Full`]
    /// when the peer stopped reading and the queue is at its bound, [`SendError::Encode`] when
    /// `write` failed.
    fn send_with(
        &self,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError>;

    /// Queues request `id`: like [`send_with`](Self::send_with), with what the transport may
    /// need to know of the request besides its bytes: its id (a transport that reads each
    /// answer on a response of its own, or reports a failed send of it through
    /// [`InboundHandler::on_send_failed`]) and its [`RequestHead`] (a transport that mirrors
    /// request fields into its own headers: Streamable HTTP in the 2026-07-28 revision). The
    /// default ignores both.
    ///
    /// # Errors
    /// As for [`send_with`](Self::send_with).
    fn send_request(
        &self,
        id: &RequestId,
        head: &RequestHead<'_>,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        let _ = (id, head);
        self.send_with(write)
    }

    /// Queues the `notifications/cancelled` that `write` appends, for request `request` whose
    /// caller gave up. A transport that runs each request on a task of its own (Streamable
    /// HTTP) stops that task; where the protocol revision says closing the request's response
    /// is the cancellation (2026-07-28 over Streamable HTTP), it sends nothing. The default
    /// queues it like any notification.
    ///
    /// # Errors
    /// As for [`send_with`](Self::send_with).
    fn send_cancel(
        &self,
        request: &RequestId,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        let _ = request;
        self.send_with(write)
    }

    /// Queues the already-encoded frame `frame`. See [`send_with`](Self::send_with).
    ///
    /// # Errors
    /// As for [`send_with`](Self::send_with).
    fn send(&self, frame: &[u8]) -> Result<(), SendError> {
        self.send_with(&mut |buf| {
            buf.extend_from_slice(frame);
            Ok(())
        })
    }
}

/// What a transport may need to know of a request besides its bytes: the fields the
/// 2026-07-28 Streamable HTTP binding mirrors into HTTP headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestHead<'a> {
    /// The JSON-RPC method (`tools/call`, `server/discover`, ...).
    pub method: &'a str,
    /// `params.name` of a `tools/call` (or `params.uri` of a `resources/read`), if any.
    pub name: Option<&'a str>,
    /// The protocol version the request declares in its own `_meta`
    /// (`io.modelcontextprotocol/protocolVersion`): set for modern-era requests, which carry
    /// their version on every request; `None` in a legacy session, whose version was agreed
    /// once by `initialize` (see [`Connection::negotiated`]).
    pub protocol_version: Option<&'a str>,
    /// The values of a `tools/call`'s parameters annotated `x-mcp-header`, as
    /// `(name, value)`: sent as `Mcp-Param-{name}: {value}` (Base64-sentinel encoded where the
    /// value is not plain ASCII) by a transport that mirrors headers.
    pub params: &'a [(String, String)],
}

impl<'a> RequestHead<'a> {
    /// The head of a request of `method`, with no name and no per-request version.
    pub fn new(method: &'a str) -> Self {
        Self {
            method,
            name: None,
            protocol_version: None,
            params: &[],
        }
    }

    /// With the values of the parameters to mirror into `Mcp-Param-*` headers.
    #[must_use]
    pub fn params(mut self, params: &'a [(String, String)]) -> Self {
        self.params = params;
        self
    }

    /// With `params.name` (or `params.uri`).
    #[must_use]
    pub fn name(mut self, name: Option<&'a str>) -> Self {
        self.name = name;
        self
    }

    /// With the protocol version the request declares in its `_meta`.
    #[must_use]
    pub fn protocol_version(mut self, version: Option<&'a str>) -> Self {
        self.protocol_version = version;
        self
    }
}

/// Receives what a connection reads. Implemented by the client session.
///
/// Every method is called from the transport's reader task and must return quickly: no
/// blocking, no awaiting.
pub trait InboundHandler: Send + Sync + 'static {
    /// Called once, before any other method, with the connection's sending half.
    fn on_open(&self, outbound: Arc<dyn Outbound>);

    /// One inbound message (one JSON value, terminator stripped).
    fn on_frame(&self, frame: &[u8]);

    /// One inbound message the transport holds whole as [`Bytes`](bytes::Bytes) (Streamable
    /// HTTP's JSON body). The handler may keep slices of it rather than copy them (the client
    /// session keeps a long text of a result so: [`Text`](crate::protocol::Text)). The default
    /// hands it to [`on_frame`](Self::on_frame).
    fn on_frame_bytes(&self, frame: bytes::Bytes) {
        self.on_frame(&frame);
    }

    /// A message longer than the frame limit was discarded.
    fn on_oversize(&self, frame: OversizeFrame<'_>);

    /// A message on a stream shared by many messages (an event stream) has just passed the
    /// frame limit: `frame` holds its first bytes and the length read so far
    /// ([`OversizeFrame::stopped`] is set). The transport skips the rest of it, which may never
    /// end, and reports it with [`on_oversize`](Self::on_oversize) if it does. The session fails
    /// the request its head names at once. The default does nothing.
    fn on_oversize_passing(&self, frame: OversizeFrame<'_>) {
        let _ = frame;
    }

    /// A request the session queued could not be delivered (SSE: its POST failed), or its
    /// answer can no longer come (Streamable HTTP: the response stream ended before the answer
    /// and cannot be resumed). The session fails that request at once with a transport error
    /// naming it. Not called for notifications or answers, nor after
    /// [`on_closed`](Self::on_closed).
    fn on_send_failed(&self, id: &RequestId, failure: SendFailure);

    /// Whether someone still waits for the answer to request `id`: `false` once it was
    /// answered, failed or abandoned by its caller. A transport that reads each answer on a
    /// stream of its own (Streamable HTTP) asks when that stream ends, to know whether to
    /// resume it, and after a body that should have answered it, to know whether it did. The
    /// default says someone waits, always: such a handler may then hear
    /// [`on_send_failed`](Self::on_send_failed) for a request it saw answered, and must
    /// ignore it.
    fn awaits(&self, id: &RequestId) -> bool {
        let _ = id;
        true
    }

    /// The connection ended. Called once, after the last `on_frame`.
    fn on_closed(&self, reason: CloseReason);
}

/// What is left of a discarded oversized message: enough to find its request id, which sits
/// near the start (`{"jsonrpc":"2.0","id":…`) or near the end (`…,"jsonrpc":"2.0","id":N}`).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct OversizeFrame<'a> {
    /// Its first bytes (a few KiB).
    pub head: &'a [u8],
    /// Its last bytes (a few hundred); empty if the head already holds the whole tail.
    pub tail: &'a [u8],
    /// Its full length in bytes; when [`stopped`](Self::stopped), the length it declared
    /// (`Content-Length`), or the limit plus one when it was read until it passed the limit
    /// ([`passed_limit`](Self::passed_limit)): it is at least that long.
    pub len: u64,
    /// The limit it exceeded.
    pub limit: usize,
    /// Reading stopped at the limit, before the message's end (a body declared or read past
    /// the limit is not read on): `len` is a lower bound and `tail` the last bytes read.
    pub stopped: bool,
    /// The request this message was read for, when the transport knows it (a Streamable HTTP
    /// POST's own answer): no other answer to it will come, so the session fails it even if
    /// the edges name no request.
    pub request: Option<&'a RequestId>,
}

impl<'a> OversizeFrame<'a> {
    /// The report of a message of `len` bytes over `limit`, with its first and last bytes, read
    /// to its end and not tied to a request.
    pub fn new(head: &'a [u8], tail: &'a [u8], len: u64, limit: usize) -> Self {
        Self {
            head,
            tail,
            len,
            limit,
            stopped: false,
            request: None,
        }
    }

    /// Marks the message as not read to its end (see [`stopped`](Self::stopped)).
    #[must_use]
    pub fn stopped_at_limit(mut self) -> Self {
        self.stopped = true;
        self
    }

    /// Marks the message as read until it passed the limit, and no further: its length is
    /// known only to be over the limit, so [`len`](Self::len) is the limit plus one, whatever
    /// the transport's chunks happened to hold (the report does not depend on how the body
    /// was cut).
    #[must_use]
    pub fn passed_limit(mut self) -> Self {
        self.stopped = true;
        self.len = self.limit as u64 + 1;
        self
    }

    /// Ties the message to request `id` (see [`request`](Self::request)).
    #[must_use]
    pub fn for_request(mut self, id: &'a RequestId) -> Self {
        self.request = Some(id);
        self
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CloseReason {
    /// What happened, for the error message: "exited with exit status: 3", "stdout closed",
    /// "event stream ended", …
    pub message: String,
    /// `true` when the client asked for it ([`Connection::close`] or drop).
    pub requested: bool,
    /// The server ended the session in an orderly way and expects a new one (Streamable HTTP:
    /// a 404 to a request carrying the session id). The client starts a new session on the
    /// next call at once, without counting a failure or waiting out a backoff.
    pub session_expired: bool,
    /// How the server's process ended, for a transport that runs one.
    pub process: Option<ProcessExit>,
}

/// How a server's process ended: see [`CloseReason::process`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ProcessExit {
    /// The exit status, when it could be read.
    pub status: Option<ExitStatus>,
    /// The last bytes the process wrote to stderr, lossily decoded; empty if none.
    pub stderr_tail: String,
}

impl CloseReason {
    /// A connection that ended for the reason `message`, not asked for by the client.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            ..Self::default()
        }
    }

    /// Marks the end as asked for by the client.
    #[must_use]
    pub fn requested(mut self) -> Self {
        self.requested = true;
        self
    }

    /// Marks the end as the server ending the session (see [`CloseReason::session_expired`]).
    #[must_use]
    pub fn session_expired(mut self) -> Self {
        self.session_expired = true;
        self
    }

    /// Attaches how the server's process ended.
    #[must_use]
    pub fn process(mut self, process: ProcessExit) -> Self {
        self.process = Some(process);
        self
    }

    /// The exit status of the server's process, if it ran one and the status is known.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.process.as_ref().and_then(|p| p.status)
    }

    /// The last stderr bytes of the server's process; empty if none.
    pub fn stderr_tail(&self) -> &str {
        self.process.as_ref().map_or("", |p| p.stderr_tail.as_str())
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        let tail = self.stderr_tail();
        if !tail.is_empty() {
            write!(f, "; last stderr:\n{}", tail.trim_end())?;
        }
        Ok(())
    }
}

/// A frame could not be queued; the request never reached the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The connection is closed or closing.
    #[error("connection closed")]
    Closed,
    /// The peer stopped reading and the outbound queue reached its bound.
    #[error("outbound queue full ({0} bytes): the server is not reading")]
    Full(usize),
    /// The frame could not be encoded.
    #[error("could not encode the frame: {0}")]
    Encode(#[source] io::Error),
}

/// A connection could not be opened. Nothing was sent to the server.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct TransportError {
    message: String,
    #[source]
    source: Option<Arc<io::Error>>,
    permanent: bool,
}

impl TransportError {
    /// An error with a message and no underlying I/O error.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
            permanent: false,
        }
    }

    /// An error caused by `source`.
    pub fn io(message: impl Into<String>, source: io::Error) -> Self {
        Self {
            message: message.into(),
            source: Some(Arc::new(source)),
            permanent: false,
        }
    }

    /// Marks the error as one that trying again cannot fix: the server refused us (an HTTP 401
    /// or 403, an endpoint or a redirect to another origin). The client then marks the server
    /// failed at once instead of restarting it with backoff.
    #[must_use]
    pub fn permanent(mut self) -> Self {
        self.permanent = true;
        self
    }

    /// The message, without the source.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether trying again cannot help; see [`TransportError::permanent`].
    pub fn is_permanent(&self) -> bool {
        self.permanent
    }
}
