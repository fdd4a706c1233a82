//! Telemetry in the shape operators' backends already read: the OpenTelemetry semantic
//! conventions for MCP (`docs/gen-ai/mcp.md` in open-telemetry/semantic-conventions-genai,
//! status: development), for every request the client sends.
//!
//! - **Spans.** Each request (`initialize`, `server/discover`, `tools/list`, `tools/call`,
//!   `tasks/*`, …) gets one `tracing` span, `mcp.request` (level INFO, target
//!   `kaged_mcp::telemetry`), from the moment it is queued until its answer, its failure or
//!   its caller giving up. It carries the fields `tracing-opentelemetry` maps: `otel.name`
//!   (`{mcp.method.name} {target}`, the target being the tool or the prompt, never a URI),
//!   `otel.kind = "client"`, and on failure `otel.status_description` (the server's message)
//!   or `otel.status_code = "error"`; and the conventions' attributes, listed in
//!   [`attributes`]. An embedder's existing `tracing` setup sees it like any span; with no
//!   subscriber interested, nothing is computed (every field is evaluated only for an enabled
//!   span) and it costs what a disabled span costs. The span is never entered: its duration is
//!   the request's.
//! - **Context** (feature `otel`): the W3C trace context of that span (or, when it is not an
//!   OpenTelemetry span, of the caller's current `tracing` span, or else of OpenTelemetry's
//!   current context) is written into the request's `params._meta` through the embedder's
//!   global propagator (`opentelemetry::global`), beside the entries already there, never
//!   replacing one. The propagator is looked at when a session starts: with the default
//!   no-op one (install yours first), its requests do no propagation work.
//! - **Metrics** (feature `otel`, once [`set_metrics`] turns them on):
//!   `mcp.client.operation.duration` per request and `mcp.client.session.duration` per server
//!   session, histograms in seconds with the conventions' buckets, through the global meter
//!   provider.
//! - **`mcp.session.id`** is never the raw `Mcp-Session-Id` (a credential for the session):
//!   it is [`session_digest`]'s SHA-256 digest, and only for a 2025-era Streamable HTTP
//!   session (the conventions leave it out of 2026-07-28 sessions, which have none).

use crate::protocol::method::{
    CallTool, GetPrompt, Initialize, ReadResource, Request as _, SubscribeResource,
    UnsubscribeResource,
};
use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::transport::{Peer, RequestHead};

#[cfg(feature = "otel")]
mod otel;

pub mod attributes;

/// Turns the two histograms on or off for the sessions started from now on (feature `otel`;
/// off until turned on). They go to the global meter provider: install it, then turn them on,
/// before starting the sessions. Off, a request does no metric work at all (on, it reads the
/// clock at each end and builds its attributes, which a no-op provider then drops: some 15 %
/// of a call's instructions, see `benches/README.md`). The `kaged-mcp` command line turns
/// them on when it exports metrics.
#[cfg(feature = "otel")]
pub fn set_metrics(on: bool) {
    otel::set_metrics(on);
}

/// The target of the request spans, for filters (`RUST_LOG=kaged_mcp::telemetry=info`).
pub const TARGET: &str = "kaged_mcp::telemetry";

/// What telemetry reads of a failed request (the client's error implements it, so telemetry
/// needs nothing of the client).
pub(crate) trait Failure: std::fmt::Debug {
    /// `error.type`: the JSON-RPC code as text, or one low-cardinality word.
    fn error_type(&self) -> std::borrow::Cow<'static, str>;
    /// The JSON-RPC code the server sent and its message, for a JSON-RPC error.
    fn json_rpc(&self) -> Option<(i64, Option<&str>)>;
}

/// How a request ended, for its span and its duration.
#[derive(Debug)]
pub(crate) enum Outcome<'a> {
    /// Answered with a result.
    Answered,
    /// A `tools/call` answered with `isError: true`.
    ToolError,
    /// Failed: a JSON-RPC error, the connection's end, a result that does not decode.
    Failed(&'a dyn Failure),
    /// The caller stopped waiting before the answer (`notifications/cancelled` was sent).
    Abandoned,
    /// Answered with a result that does not decode.
    Invalid,
}

/// What every request of one server session shares, for its span and metrics: where the
/// server is, the protocol version agreed, the digest of the session id.
#[derive(Debug)]
pub(crate) struct SessionTelemetry {
    peer: Peer,
    /// The protocol version the session speaks, once agreed.
    version: OnceLock<Arc<str>>,
    /// [`session_digest`] of the session id (2025-era Streamable HTTP).
    session_id: OnceLock<Arc<str>>,
    /// The global propagator writes something (not the default no-op one) when the session
    /// started: its requests carry their trace context.
    #[cfg(feature = "otel")]
    propagates: bool,
    /// The session's histograms, when metrics are on.
    #[cfg(feature = "otel")]
    metrics: Option<otel::SessionMetrics>,
}

impl SessionTelemetry {
    /// A session with a server reached through `peer`; its duration starts now.
    pub(crate) fn new(peer: Peer) -> Self {
        Self {
            #[cfg(feature = "otel")]
            metrics: otel::SessionMetrics::new(),
            #[cfg(feature = "otel")]
            propagates: otel::propagates(),
            peer,
            version: OnceLock::new(),
            session_id: OnceLock::new(),
        }
    }

    /// The session agreed on `version`; the transport gave it the session id digest `digest`.
    pub(crate) fn agreed(&self, version: &str, digest: Option<Arc<str>>) {
        let _ = self.version.set(Arc::from(version));
        if let Some(digest) = digest {
            let _ = self.session_id.set(digest);
        }
    }

    /// The protocol version agreed, if any yet.
    pub(crate) fn version(&self) -> Option<&str> {
        self.version.get().map(|v| &**v)
    }

    /// The span of request `id` of `method`, whose head is `head`.
    pub(crate) fn request_span(
        &self,
        method: &'static str,
        id: u64,
        head: &RequestHead<'_>,
    ) -> tracing::Span {
        // Every field below is evaluated only when the span is enabled.
        tracing::info_span!(
            target: TARGET,
            "mcp.request",
            otel.name = %SpanName { method, target: target_of(method, head) },
            otel.kind = "client",
            mcp.method.name = method,
            mcp.protocol.version = self.version_of(method, head),
            jsonrpc.request.id = %id,
            gen_ai.operation.name = tool_of(method, head).map(|_| "execute_tool"),
            gen_ai.tool.name = tool_of(method, head),
            gen_ai.prompt.name = (method == GetPrompt::METHOD).then_some(head.name).flatten(),
            // Without the user info and the query, where credentials travel.
            mcp.resource.uri = uri_of(method, head).map(crate::transport::text::redact_uri).as_deref(),
            mcp.session.id = self.session_id.get().map(|s| &**s),
            network.transport = self.transport(),
            network.protocol.name = self.protocol_name(),
            server.address = self.address(),
            server.port = self.port().map(i64::from),
            error.type = tracing::field::Empty,
            rpc.response.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        )
    }

    /// The session ended (`error`: how, when it was not asked to): its duration is recorded.
    pub(crate) fn ended(&self, error: Option<&'static str>) {
        #[cfg(feature = "otel")]
        if let Some(metrics) = &self.metrics {
            metrics.session_ended(self, error);
        }
        #[cfg(not(feature = "otel"))]
        let _ = error;
    }

    /// The protocol version of a request: the one it declares (modern), the session's, or
    /// the one `initialize` asks for.
    fn version_of<'a>(&'a self, method: &str, head: &RequestHead<'a>) -> Option<&'a str> {
        head.protocol_version
            .or_else(|| self.version())
            .or_else(|| {
                (method == Initialize::METHOD).then_some(crate::protocol::LATEST_PROTOCOL_VERSION)
            })
    }

    /// `network.transport`.
    fn transport(&self) -> Option<&'static str> {
        match self.peer {
            Peer::Pipe => Some("pipe"),
            Peer::Http { .. } => Some("tcp"),
            Peer::Unknown => None,
        }
    }

    /// `network.protocol.name`.
    fn protocol_name(&self) -> Option<&'static str> {
        matches!(self.peer, Peer::Http { .. }).then_some("http")
    }

    /// `server.address`.
    fn address(&self) -> Option<&str> {
        match &self.peer {
            Peer::Http { address, .. } => Some(address),
            _ => None,
        }
    }

    /// `server.port`.
    fn port(&self) -> Option<u16> {
        match &self.peer {
            Peer::Http { port, .. } => Some(*port),
            _ => None,
        }
    }
}

/// One request's telemetry, from the moment it is queued until it ends: its span and, with
/// the `otel` feature, what its duration is recorded with. Nothing at all (one null pointer in
/// the pending entry, no allocation) when the span is disabled and `otel` is off: the common
/// case of the hot path.
#[derive(Debug)]
pub(crate) struct RequestTelemetry(
    Option<Box<Active>>,
    /// The session propagates trace context (feature `otel`).
    #[cfg(feature = "otel")]
    bool,
);

/// What a [`RequestTelemetry`] keeps when there is something to keep.
#[derive(Debug)]
struct Active {
    span: tracing::Span,
    /// The request is the 2026-07-28 era probe (`server/discover`), which a legacy server
    /// refuses as the expected way to say it is one.
    probe: bool,
    #[cfg(feature = "otel")]
    timing: Option<otel::RequestTiming>,
}

impl RequestTelemetry {
    /// The telemetry of request `id` of `method` on `session` (see
    /// [`SessionTelemetry::request_span`]).
    #[inline]
    pub(crate) fn start(
        session: &Arc<SessionTelemetry>,
        method: &'static str,
        id: u64,
        head: &RequestHead<'_>,
    ) -> Self {
        // The level check inline (one atomic load: no subscriber takes INFO, the usual case of
        // a daemon's hot path); the span's own callsite check only past it.
        let span = if tracing::level_enabled!(tracing::Level::INFO) {
            session.request_span(method, id, head)
        } else {
            tracing::Span::none()
        };
        #[cfg(feature = "otel")]
        let timing = otel::RequestTiming::start(session, method, head);
        #[cfg(feature = "otel")]
        let idle = timing.is_none();
        #[cfg(not(feature = "otel"))]
        let idle = true;
        #[cfg(feature = "otel")]
        let propagates = session.propagates;
        if idle && span.is_disabled() {
            return Self(
                None,
                #[cfg(feature = "otel")]
                propagates,
            );
        }
        Self(
            Some(Box::new(Active {
                span,
                probe: method == crate::protocol::method::Discover::METHOD,
                #[cfg(feature = "otel")]
                timing,
            })),
            #[cfg(feature = "otel")]
            propagates,
        )
    }

    /// Telemetry that records nothing (what is left where a request's own was taken).
    pub(crate) fn none() -> Self {
        Self(
            None,
            #[cfg(feature = "otel")]
            false,
        )
    }

    /// Whether the request's span is disabled (no subscriber is interested in it).
    #[cfg(test)]
    pub(crate) fn span_is_disabled(&self) -> bool {
        self.0.as_ref().is_none_or(|a| a.span.is_disabled())
    }

    /// The `_meta` entries of the request's trace context (feature `otel`; `None` when there
    /// is nothing to propagate).
    pub(crate) fn trace_context(&self) -> Option<Vec<(String, String)>> {
        #[cfg(feature = "otel")]
        return self
            .1
            .then(|| otel::trace_context(self.0.as_ref().map(|a| &a.span)))
            .flatten();
        #[cfg(not(feature = "otel"))]
        None
    }

    /// The request ended with `outcome`: its span says how (then closes, when `self` is
    /// dropped) and its duration is recorded.
    #[inline]
    pub(crate) fn end(self, outcome: Outcome<'_>) {
        if let Some(active) = self.0 {
            active.end(outcome);
        }
    }
}

impl Active {
    // Out of line: the decode of an answer inlines `RequestTelemetry::end`, which must stay a
    // null check there (the hot path has no subscriber and, often, no `otel`).
    #[inline(never)]
    fn end(self, outcome: Outcome<'_>) {
        let error = ErrorType::of(&outcome);
        if !self.span.is_disabled() {
            if let Some(error) = &error {
                self.span.record("error.type", error.kind.as_ref());
                if let Some(code) = error.code {
                    self.span
                        .record("rpc.response.status_code", tracing::field::display(code));
                }
                // A legacy server's JSON-RPC refusal of the era probe (-32601 method not
                // found, or -32602 as the PyPI `mcp` 1.x answers) is how it says which era it
                // speaks: the expected path, so no ERROR status (the code stays on the span as
                // the answer's). A modern error code is a real failure.
                let expected = self.probe
                    && error
                        .code
                        .is_some_and(|c| !crate::protocol::modern::is_modern_error(c));
                match error.message {
                    _ if expected => &self.span,
                    // Sets the status to ERROR with the server's message: its first
                    // `STATUS_DESCRIPTION_MAX` bytes, token-like runs hidden (servers echo
                    // arguments, credentials included, into their messages).
                    Some(message) => self.span.record(
                        "otel.status_description",
                        crate::transport::redact_tokens(clip(message, STATUS_DESCRIPTION_MAX))
                            .as_str(),
                    ),
                    None => self.span.record("otel.status_code", "error"),
                };
            }
        }
        #[cfg(feature = "otel")]
        if let Some(timing) = self.timing {
            timing.end(error.as_ref());
        }
    }
}

/// The longest status description a span carries, in bytes.
const STATUS_DESCRIPTION_MAX: usize = 512;

/// `text` cut to at most `max` bytes, at a character boundary.
fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What `error.type` (and `rpc.response.status_code`) say of a failed request.
#[derive(Debug)]
pub(crate) struct ErrorType<'a> {
    /// `error.type`: the JSON-RPC code as text, `tool_error`, or one low-cardinality word.
    pub(crate) kind: std::borrow::Cow<'static, str>,
    /// `rpc.response.status_code`: the JSON-RPC code, when the server sent one.
    pub(crate) code: Option<i64>,
    /// The span's status description: the server's message, when it sent one.
    pub(crate) message: Option<&'a str>,
}

impl<'a> ErrorType<'a> {
    /// `None` for a request that succeeded.
    pub(crate) fn of(outcome: &Outcome<'a>) -> Option<Self> {
        let (kind, code, message) = match outcome {
            Outcome::Answered => return None,
            Outcome::ToolError => ("tool_error".into(), None, None),
            Outcome::Abandoned => ("cancelled".into(), None, None),
            Outcome::Invalid => ("protocol_violation".into(), None, None),
            Outcome::Failed(e) => match e.json_rpc() {
                Some((code, message)) => (e.error_type(), Some(code), message),
                None => (e.error_type(), None, None),
            },
        };
        Some(Self {
            kind,
            code,
            message,
        })
    }
}

/// `{mcp.method.name} {target}`, or the method alone.
struct SpanName<'a> {
    method: &'a str,
    target: Option<&'a str>,
}

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.target {
            Some(target) => write!(f, "{} {target}", self.method),
            None => f.write_str(self.method),
        }
    }
}

/// The tool a request is about: `params.name` of a `tools/call`.
fn tool_of<'a>(method: &str, head: &RequestHead<'a>) -> Option<&'a str> {
    (method == CallTool::METHOD).then_some(head.name).flatten()
}

/// The low-cardinality target of a span's name: the tool or the prompt (never a URI).
fn target_of<'a>(method: &str, head: &RequestHead<'a>) -> Option<&'a str> {
    matches!(method, CallTool::METHOD | GetPrompt::METHOD)
        .then_some(head.name)
        .flatten()
}

/// The resource a request is about: `params.uri` of a resource request (in its head's name).
fn uri_of<'a>(method: &str, head: &RequestHead<'a>) -> Option<&'a str> {
    matches!(
        method,
        ReadResource::METHOD | SubscribeResource::METHOD | UnsubscribeResource::METHOD
    )
    .then_some(head.name)
    .flatten()
}

#[cfg(feature = "http")]
pub use crate::transport::http::session_digest;

#[cfg(test)]
mod tests;
