//! The `otel` feature's half of telemetry: a request's W3C trace context into its
//! `params._meta` through the global propagator, and the two client histograms through the
//! global meter provider (both from the `opentelemetry` API crate: the embedder installs the
//! SDK, the exporter and the propagator it wants; until then both are no-ops).
//!
//! Cost: a session asks the propagator once, when it starts, whether it writes anything; with
//! the no-op one its requests do no propagation work. The metrics, off until
//! [`set_metrics`](super::set_metrics) turns them on, cost a clock read at each end of a
//! request, one allocation for its attributes (the session's own are built once and shared)
//! and the record.

use crate::protocol::method::{CallTool, GetPrompt, Initialize, Request as _};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use opentelemetry::metrics::Histogram;
use opentelemetry::propagation::Injector;
use opentelemetry::{global, InstrumentationScope, KeyValue};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::attributes as attr;
use super::{ErrorType, SessionTelemetry};
use crate::transport::{Peer, RequestHead};

/// The `_meta` entries of the trace context of `span`, as the global propagator writes them;
/// when that span is not an OpenTelemetry span (disabled, or enabled only for another layer),
/// of the caller's current `tracing` span, or else of the current OpenTelemetry context (an
/// embedder on OpenTelemetry's own spans). `None` when there is nothing to write (the no-op
/// propagator, no valid context).
pub(super) fn trace_context(span: Option<&tracing::Span>) -> Option<Vec<(String, String)>> {
    use opentelemetry::baggage::BaggageExt as _;
    use opentelemetry::trace::TraceContextExt as _;
    let valid = |cx: &opentelemetry::Context| cx.span().span_context().is_valid();
    let mut cx = match span {
        Some(span) if !span.is_disabled() => span.context(),
        _ => opentelemetry::Context::new(),
    };
    if !valid(&cx) {
        let current = tracing::Span::current();
        if !current.is_disabled() {
            cx = current.context();
        }
    }
    if !valid(&cx) {
        cx = opentelemetry::Context::current();
        if !valid(&cx) && cx.baggage().is_empty() {
            return None;
        }
    }
    let mut entries = Vec::new();
    global::get_text_map_propagator(|p| p.inject_context(&cx, &mut MetaInjector(&mut entries)));
    (!entries.is_empty()).then_some(entries)
}

/// Whether the global propagator writes anything: not the default no-op one, which names no
/// field. Asked once per session, when it starts.
pub(super) fn propagates() -> bool {
    global::get_text_map_propagator(|p| p.fields().next().is_some())
}

/// Collects what a propagator writes (an empty `tracestate` is left out).
struct MetaInjector<'a>(&'a mut Vec<(String, String)>);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if !value.is_empty() {
            self.0.push((key.to_owned(), value));
        }
    }
}

/// Whether the histograms are recorded (see [`super::set_metrics`]).
static METRICS: AtomicBool = AtomicBool::new(false);

pub(super) fn set_metrics(on: bool) {
    METRICS.store(on, Ordering::Relaxed);
}

pub(super) fn metrics() -> bool {
    METRICS.load(Ordering::Relaxed)
}

/// The instrumentation scope of kaged-mcp's metrics.
fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("kaged-mcp")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// A session's histograms (from the global meter provider when the session starts), its
/// start, and the attributes all its records share.
pub(super) struct SessionMetrics {
    operation: Histogram<f64>,
    session: Histogram<f64>,
    started: Instant,
    ended: AtomicBool,
    /// The version and the peer's attributes, built once the version is agreed.
    common: OnceLock<Vec<KeyValue>>,
}

impl fmt::Debug for SessionMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionMetrics")
            .field("started", &self.started)
            .finish_non_exhaustive()
    }
}

impl SessionMetrics {
    /// The session's metrics, or `None` when they are off.
    pub(super) fn new() -> Option<Self> {
        if !metrics() {
            return None;
        }
        let meter = global::meter_with_scope(scope());
        let histogram = |name: &'static str, what: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(what)
                .with_boundaries(attr::DURATION_BUCKETS.to_vec())
                .build()
        };
        Some(Self {
            operation: histogram(
                attr::OPERATION_DURATION,
                "The duration of an MCP request or notification, from sent to answered.",
            ),
            session: histogram(
                attr::SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP client.",
            ),
            started: Instant::now(),
            ended: AtomicBool::new(false),
            common: OnceLock::new(),
        })
    }

    /// Records the session's duration, once.
    pub(super) fn session_ended(&self, session: &SessionTelemetry, error: Option<&'static str>) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut attributes = self.common_for(session, session.version());
        if let Some(error) = error {
            attributes.push(KeyValue::new(attr::ERROR_TYPE, error));
        }
        self.session
            .record(self.started.elapsed().as_secs_f64(), &attributes);
    }

    /// The attributes every record of `session` carries: the protocol `version` and where
    /// the server is; room for `RESERVE` more.
    fn common_for(&self, session: &SessionTelemetry, version: Option<&str>) -> Vec<KeyValue> {
        const RESERVE: usize = 5;
        let agreed = session.version.get();
        if let (Some(agreed), Some(version)) = (agreed, version) {
            if **agreed == *version {
                let common = self.common.get_or_init(|| common(session, Some(agreed)));
                let mut attributes = Vec::with_capacity(common.len() + RESERVE);
                attributes.extend_from_slice(common);
                return attributes;
            }
        }
        let mut attributes = common(session, version.map(Arc::from).as_ref());
        attributes.reserve(RESERVE);
        attributes
    }
}

/// The version and the peer's attributes (their strings shared, not copied, when cloned).
fn common(session: &SessionTelemetry, version: Option<&Arc<str>>) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(5);
    if let Some(version) = version {
        attributes.push(KeyValue::new(
            attr::MCP_PROTOCOL_VERSION,
            Arc::clone(version),
        ));
    }
    match &session.peer {
        Peer::Pipe => attributes.push(KeyValue::new(attr::NETWORK_TRANSPORT, "pipe")),
        Peer::Http { address, port } => {
            attributes.push(KeyValue::new(attr::NETWORK_TRANSPORT, "tcp"));
            attributes.push(KeyValue::new(attr::NETWORK_PROTOCOL_NAME, "http"));
            attributes.push(KeyValue::new(attr::SERVER_ADDRESS, Arc::clone(address)));
            attributes.push(KeyValue::new(attr::SERVER_PORT, i64::from(*port)));
        }
        Peer::Unknown => {}
    }
    attributes
}

/// What a request's duration is recorded with, from the moment it is queued.
#[derive(Debug)]
pub(super) struct RequestTiming {
    session: Arc<SessionTelemetry>,
    method: &'static str,
    /// The protocol version the request declares (a modern request, `initialize`), when it
    /// declares one of ours; otherwise the session's, read when it ends.
    version: Option<&'static str>,
    /// The tool or prompt, with its attribute's name.
    target: Option<(&'static str, String)>,
    started: Instant,
}

impl RequestTiming {
    /// The timing of a request on `session`, when the session records metrics.
    pub(super) fn start(
        session: &Arc<SessionTelemetry>,
        method: &'static str,
        head: &RequestHead<'_>,
    ) -> Option<Self> {
        session.metrics.as_ref()?;
        let key = match method {
            CallTool::METHOD => Some(attr::GEN_AI_TOOL_NAME),
            GetPrompt::METHOD => Some(attr::GEN_AI_PROMPT_NAME),
            _ => None,
        };
        let declared = match method {
            Initialize::METHOD => Some(crate::protocol::LATEST_PROTOCOL_VERSION),
            _ => head.protocol_version,
        };
        let version = declared.and_then(|v| {
            crate::protocol::SUPPORTED_MODERN_VERSIONS
                .iter()
                .chain(crate::protocol::SUPPORTED_PROTOCOL_VERSIONS)
                .find(|known| **known == v)
                .copied()
        });
        Some(Self {
            session: Arc::clone(session),
            method,
            version,
            target: key.zip(head.name).map(|(k, n)| (k, n.to_owned())),
            started: Instant::now(),
        })
    }

    /// Records the request's duration, with `error` when it failed.
    pub(super) fn end(self, error: Option<&ErrorType<'_>>) {
        let elapsed = self.started.elapsed().as_secs_f64();
        let Some(metrics) = &self.session.metrics else {
            return;
        };
        let version = self.version.or_else(|| self.session.version());
        let mut attributes = metrics.common_for(&self.session, version);
        attributes.push(KeyValue::new(attr::MCP_METHOD_NAME, self.method));
        if let Some((key, name)) = self.target {
            if key == attr::GEN_AI_TOOL_NAME {
                attributes.push(KeyValue::new(attr::GEN_AI_OPERATION_NAME, "execute_tool"));
            }
            attributes.push(KeyValue::new(key, name));
        }
        if let Some(error) = error {
            attributes.push(KeyValue::new(attr::ERROR_TYPE, error.kind.to_string()));
            if let Some(code) = error.code {
                attributes.push(KeyValue::new(
                    attr::RPC_RESPONSE_STATUS_CODE,
                    code.to_string(),
                ));
            }
        }
        metrics.operation.record(elapsed, &attributes);
    }
}
