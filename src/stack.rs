//! The standard per-server stack: every `tools/call` of one server passes through it.
//!
//! ```text
//! [embedder outer layers] ─▶ Trace ─▶ Stats ─▶ Truncate(result cap) ─▶ Validate(schemas)
//!     ─▶ Timeout(timeout_ms) ─▶ Limit(max_in_flight) ─▶ Retry(backoff, only when safe)
//!     ─▶ [embedder inner layers] ─▶ McpClient
//! ```
//!
//! # Order
//! - **Trace** opens one `mcp.call` span per call (`server`, `tool`, `request_id`, `attempt`,
//!   `outcome`, `latency_ms`) and turns a timeout into [`TimedOut`], which names the server
//!   and the timeout that fired.
//! - **Stats** counts every call that ends as the caller sees it (retries included in its
//!   latency; a call whose caller drops it first is not counted):
//!   calls, tool errors (`isError`), failures, timeouts, and latency quantiles, read through
//!   [`StackSettings::stats`] (the session's `status`).
//! - **Truncate** sits outside the timeout, so what reaches the agent is always capped.
//! - **Validate** ([`crate::validate`]) checks the arguments against the tool's input schema
//!   before the clock starts, the retry below never sees a call it refused (a caller's error
//!   is not retried), and it checks the structured result once per call, whole: it sits
//!   inside the truncation, which cuts only what passed.
//! - **Timeout** wraps the limit and the retry, so `timeout_ms` bounds the whole call as the
//!   caller sees it, a wait for a place and backoff included. Every layer below it is always
//!   ready, so readiness costs no time outside the clock. A call that carries a
//!   [`ProgressHandle`](kaged_mcp_layers::timeout::ProgressHandle) opts into "reset on
//!   progress": `timeout_ms` then bounds the time *between* progress notifications, and
//!   [`StackSettings::progress_cap`] the whole call.
//! - **Limit** lets at most [`StackSettings::max_in_flight`] calls of the server run at once
//!   (`config.toml` `max_in_flight`, default 64); the rest wait their turn inside their
//!   futures, in the order they started waiting (the layer is as ready as the retry below it,
//!   always, so the wait is on
//!   the clock). It wraps the retry: a call keeps its place across its attempts.
//! - **Retry** sends a call again only when it provably never reached the server, or when the
//!   tool is idempotent or read-only and the operator trusts the server's annotations.
//!
//! Embedders add their own layers with [`StackBuilder::outer_layer`] (sees every call first,
//! before tracing) and [`StackBuilder::inner_layer`] (just above the client, once per attempt).
//! The stack is type-erased once, here, into a [`ToolService`].
//!
//! # Example
//! ```
//! use kaged_mcp::stack::{StackBuilder, StackSettings};
//! use kaged_mcp::{client::ToolCall, protocol::ToolResult};
//! use tower::{service_fn, BoxError, ServiceExt};
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! let server = service_fn(|call: ToolCall| async move {
//!     Ok::<_, BoxError>(ToolResult::text(format!("called {}", call.name)))
//! });
//! let stack = StackBuilder::new(StackSettings::new("demo")).build(server);
//! let result = stack.oneshot(ToolCall::new("echo")).await?;
//! assert_eq!(result.joined_text(), "called echo");
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use kaged_mcp_layers::limit::InFlightLimitLayer;
use kaged_mcp_layers::retry::{Final, NotSent, RetryPolicy};
use kaged_mcp_layers::stats::{CallStats, StatsLayer};
use kaged_mcp_layers::timeout::{Elapsed, ElapsedKind, ProgressTimeoutLayer};
use kaged_mcp_layers::truncate::TruncateLayer;
use pin_project::pin_project;
use tower::layer::util::Identity;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Layer, Service, ServiceBuilder};
use tracing::instrument::Instrumented;
use tracing::{field, Instrument, Span};

use crate::client::ToolCall;
use crate::protocol::ToolResult;
use crate::validate::{SchemaViolation, Side, Validation};
use crate::Error;
use kaged_mcp_layers::validate::ValidateLayer;

/// A server's whole stack, type-erased: what the registry stores and calls.
pub type ToolService = BoxCloneSyncService<ToolCall, ToolResult, BoxError>;

/// The knobs of one server's stack.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StackSettings {
    /// The server key, for spans and errors.
    pub server: Arc<str>,
    /// The result cap (`config.toml` `result_max_bytes`).
    pub result_max_bytes: usize,
    /// The per-call timeout (`timeout_ms`, else `default_timeout_ms`).
    pub timeout: Duration,
    /// The total cap of a call that opts into "reset on progress" (`config.toml`
    /// `progress_cap_ms`, default 10 minutes).
    pub progress_cap: Duration,
    /// The most calls of the server running at once; the rest wait (`config.toml`
    /// `max_in_flight`, default 64). The client below has its own fail-fast bound
    /// ([`ClientOptions::max_in_flight`](crate::client::ClientOptions::max_in_flight), 1024):
    /// [`Session`](crate::Session) keeps it above this limit; an embedder that builds the
    /// stack over its own `McpClient` with a limit above 1024 raises it too.
    pub max_in_flight: usize,
    /// The retry policy.
    pub retry: RetryPolicy,
    /// Where the stack counts its calls (shared by every clone of the stack).
    pub stats: Arc<CallStats>,
    /// What the validation layer checks (`local.toml` `validate`, default both).
    pub validate: Validation,
}

impl StackSettings {
    /// The defaults of ADR-0043: a 64 KiB cap, a 30 s timeout, 64 calls in flight and
    /// [`default_retry_policy`].
    pub fn new(server: impl Into<Arc<str>>) -> Self {
        Self {
            server: server.into(),
            result_max_bytes: 65_536,
            timeout: Duration::from_secs(30),
            progress_cap: Duration::from_secs(600),
            max_in_flight: 64,
            retry: default_retry_policy(),
            stats: Arc::new(CallStats::new()),
            validate: Validation::Both,
        }
    }

    /// Sets the result cap.
    pub fn result_max_bytes(mut self, max: usize) -> Self {
        self.result_max_bytes = max;
        self
    }

    /// Sets the per-call timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the total cap of calls that reset their timeout on progress.
    pub fn progress_cap(mut self, cap: Duration) -> Self {
        self.progress_cap = cap;
        self
    }

    /// Sets the most calls running at once.
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max;
        self
    }

    /// Sets the retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Sets what the validation layer checks.
    pub fn validate(mut self, validate: Validation) -> Self {
        self.validate = validate;
        self
    }
}

/// Backoff from 100 ms doubling to 2 s, full jitter, 3 attempts in all, a default
/// [`RetryBudget`](kaged_mcp_layers::retry::RetryBudget) (a fifth of a retry per request, 10 per
/// second, at most 100 saved up) of its own per server.
pub fn default_retry_policy() -> RetryPolicy {
    RetryPolicy::new(Duration::from_millis(100), Duration::from_secs(2))
        .expect("constant backoff bounds are valid")
        .max_attempts(3)
}

type BoxLayer = Arc<dyn Fn(ToolService) -> ToolService + Send + Sync>;

/// Builds the standard stack over a client, with the embedder's layers where they asked.
///
/// See the [module docs](self) for the order and an example.
#[derive(Clone)]
pub struct StackBuilder {
    settings: StackSettings,
    outer: Vec<BoxLayer>,
    inner: Vec<BoxLayer>,
}

impl fmt::Debug for StackBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StackBuilder")
            .field("settings", &self.settings)
            .field("outer_layers", &self.outer.len())
            .field("inner_layers", &self.inner.len())
            .finish()
    }
}

fn boxed<L>(layer: L) -> BoxLayer
where
    L: Layer<ToolService> + Send + Sync + 'static,
    L::Service:
        Service<ToolCall, Response = ToolResult, Error = BoxError> + Clone + Send + Sync + 'static,
    <L::Service as Service<ToolCall>>::Future: Send + 'static,
{
    Arc::new(move |svc: ToolService| ToolService::new(layer.layer(svc)))
}

impl StackBuilder {
    /// A builder with these settings and no embedder layers.
    pub fn new(settings: StackSettings) -> Self {
        Self {
            settings,
            outer: Vec::new(),
            inner: Vec::new(),
        }
    }

    /// Adds a layer outside the whole stack: it sees every call first and its final result
    /// (truncated) or error. Layers added first sit outermost.
    pub fn outer_layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<ToolService> + Send + Sync + 'static,
        L::Service: Service<ToolCall, Response = ToolResult, Error = BoxError>
            + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as Service<ToolCall>>::Future: Send + 'static,
    {
        self.outer.push(boxed(layer));
        self
    }

    /// Adds a layer just above the client, below the retry: it sees every attempt, with the
    /// result as the server sent it. Layers added first sit outermost.
    pub fn inner_layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<ToolService> + Send + Sync + 'static,
        L::Service: Service<ToolCall, Response = ToolResult, Error = BoxError>
            + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as Service<ToolCall>>::Future: Send + 'static,
    {
        self.inner.push(boxed(layer));
        self
    }

    /// Builds the stack over `client`.
    pub fn build<S>(self, client: S) -> ToolService
    where
        S: Service<ToolCall, Response = ToolResult, Error = BoxError>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        let s = self.settings;
        let bottom = if self.inner.is_empty() {
            None
        } else {
            let mut svc = ToolService::new(client.clone());
            for l in self.inner.iter().rev() {
                svc = l(svc);
            }
            Some(svc)
        };
        let top = ServiceBuilder::new()
            .layer(TraceLayer {
                server: s.server.clone(),
            })
            .layer(StatsLayer::new(s.stats))
            .layer(TruncateLayer::new(s.result_max_bytes))
            .layer(ValidateLayer::new(s.validate))
            .layer(ProgressTimeoutLayer::new(
                s.timeout,
                s.progress_cap.max(s.timeout),
            ))
            .layer(InFlightLimitLayer::new(s.max_in_flight))
            .retry(s.retry)
            .layer(Identity::new());
        let mut svc = match bottom {
            Some(b) => ToolService::new(top.service(b)),
            None => ToolService::new(top.service(client)),
        };
        for l in self.outer.iter().rev() {
            svc = l(svc);
        }
        svc
    }
}

/// A call that did not finish within its server's timeout.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TimedOut {
    /// The server.
    pub server: Arc<str>,
    /// The timeout that fired: `timeout_ms`, or the progress cap.
    pub timeout: Duration,
    /// Whether it was the total cap of a call that reported progress.
    pub total_cap: bool,
    /// When the call was an MCP task the server asked to be polled only every so often, and
    /// the timeout came at a poll that found it unchanged: that interval.
    pub poll_interval: Option<Duration>,
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.total_cap {
            "the total cap of"
        } else {
            "the timeout of"
        };
        write!(
            f,
            "server `{}`: no answer within {what} {} ms",
            self.server,
            self.timeout.as_millis()
        )?;
        if let Some(every) = self.poll_interval {
            write!(
                f,
                " (its task, polled every {} ms as the server asked, had not changed)",
                every.as_millis()
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for TimedOut {}

/// Opens the per-call span and names timeouts. Private: it is part of every standard stack.
#[derive(Debug, Clone)]
struct TraceLayer {
    server: Arc<str>,
}

impl<S> Layer<S> for TraceLayer {
    type Service = Trace<S>;
    fn layer(&self, inner: S) -> Trace<S> {
        Trace {
            inner,
            server: self.server.clone(),
        }
    }
}

#[derive(Debug, Clone)]
struct Trace<S> {
    inner: S,
    server: Arc<str>,
}

impl<S> Service<ToolCall> for Trace<S>
where
    S: Service<ToolCall, Response = ToolResult, Error = BoxError>,
{
    type Response = ToolResult;
    type Error = BoxError;
    type Future = TraceFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ToolCall) -> Self::Future {
        let span = tracing::debug_span!(
            "mcp.call",
            server = %self.server,
            tool = %call.name,
            request_id = field::Empty,
            attempt = 0u32,
            outcome = field::Empty,
            latency_ms = field::Empty,
        );
        let inner = {
            let _enter = span.enter();
            self.inner.call(call)
        };
        // No clock reads when nobody listens to the span (a daemon at INFO).
        let start = (!span.is_disabled()).then(Instant::now);
        TraceFuture {
            inner: inner.instrument(span.clone()),
            span,
            start,
            server: self.server.clone(),
        }
    }
}

#[pin_project]
struct TraceFuture<F> {
    #[pin]
    inner: Instrumented<F>,
    span: Span,
    start: Option<Instant>,
    server: Arc<str>,
}

impl<F> Future for TraceFuture<F>
where
    F: Future<Output = Result<ToolResult, BoxError>>,
{
    type Output = Result<ToolResult, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let out = ready!(this.inner.poll(cx));
        // `None` when the span is disabled (no clock was read).
        let latency_ms = this.start.map(|s| s.elapsed().as_secs_f64() * 1000.0);
        if let Some(ms) = latency_ms {
            this.span.record("latency_ms", ms);
        }
        let out = match out {
            Ok(r) => {
                let outcome = if r.is_error { "tool_error" } else { "ok" };
                this.span.record("outcome", outcome);
                Ok(r)
            }
            Err(e) if e.is::<Elapsed>() => {
                this.span.record("outcome", "timeout");
                let (timeout, total_cap, poll_interval) = e
                    .downcast_ref::<Elapsed>()
                    .map(|el| {
                        let total = el.kind() == ElapsedKind::Total;
                        // The server's pace is worth telling when it was at least the
                        // limit: progress could not be seen more often than that.
                        let asked = el.asked_interval().filter(|a| !total && *a >= el.after());
                        (el.after(), total, asked)
                    })
                    .unwrap_or_default();
                Err(Box::new(TimedOut {
                    server: this.server.clone(),
                    timeout,
                    total_cap,
                    poll_interval,
                }) as BoxError)
            }
            Err(e) => {
                this.span.record("outcome", "error");
                Err(e)
            }
        };
        if let Some(latency_ms) = latency_ms {
            let _enter = this.span.enter();
            tracing::debug!(latency_ms, "call finished");
        }
        Poll::Ready(out)
    }
}

/// Turns a stack error into the public [`Error`], once, at the registry edge.
///
/// The retry markers [`NotSent`] and [`Final`] are taken off: they tell the retry policy the
/// request never left, or that its outcome is final, and say nothing the operator needs; the
/// error they wrap does.
pub fn into_error(server: &str, tool: &str, err: BoxError) -> Error {
    let err = match err.downcast::<NotSent>() {
        Ok(marker) => marker.into_inner(),
        Err(other) => other,
    };
    let err = match err.downcast::<Final>() {
        Ok(marker) => marker.into_inner(),
        Err(other) => other,
    };
    let err = match err.downcast::<SchemaViolation>() {
        Ok(v) => {
            let SchemaViolation {
                side,
                violations,
                more,
                ..
            } = *v;
            let (server, tool) = (server.to_owned(), tool.to_owned());
            return match side {
                Side::Arguments => Error::InvalidArguments {
                    server,
                    tool,
                    violations,
                    more,
                },
                Side::Result => Error::InvalidResult {
                    server,
                    tool,
                    violations,
                    more,
                },
            };
        }
        Err(other) => other,
    };
    match err.downcast::<TimedOut>() {
        Ok(t) => Error::Timeout {
            server: server.to_owned(),
            tool: tool.to_owned(),
            timeout: t.timeout,
            poll_interval: t.poll_interval,
        },
        Err(source) => Error::Call {
            server: server.to_owned(),
            tool: tool.to_owned(),
            source,
        },
    }
}
