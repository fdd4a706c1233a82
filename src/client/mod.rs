//! The MCP client: one supervised session per server, as a `tower::Service`.
//!
//! [`McpClient`] is a cheap, clonable handle (`Send + Sync`) on one server. It implements
//! `Service<ToolCall, Response = ToolResult, Error = BoxError>` with an always-ready
//! `poll_ready`: waiting (for a start-up in progress) happens inside the call's
//! [`ResponseFuture`], where the caller's timeout covers it. Many calls may be in flight on one
//! connection; they are correlated by id.
//!
//! # Session
//! The client starts the server on first use (or on [`McpClient::start`]): it connects the
//! [`Transport`] and finds the protocol era ([`era`]). By default it sends `server/discover`
//! first: a modern (2026-07-28) server answers it, and every later request carries the
//! version, the client's capabilities and identity in `_meta`. Otherwise (a legacy server, or
//! [`EraPreference::Legacy`]) it sends `initialize` offering protocol `2025-11-25`, accepts an
//! answer of `2024-11-05`, `2025-03-26`, `2025-06-18` or `2025-11-25` (any other ends the
//! attempt with [`ClientError::UnsupportedProtocolVersion`]), and sends
//! `notifications/initialized`. It advertises no capability (never sampling), except form-mode
//! elicitation when an [`elicitation`] handler is plugged in. Server→client requests pass the
//! stack described in [`server_requests`], and so do the input requests of a modern
//! `tools/call` answered `input_required` ([`mrtr`]); `notifications/progress` goes to the
//! waiting call's [`ProgressHandle`](kaged_mcp_layers::timeout::ProgressHandle),
//! `notifications/message` to `tracing` at the matching level, and
//! `notifications/tools/list_changed` (on a modern server's `subscriptions/listen` stream, or a
//! legacy server's own) bumps the generation watched through [`McpClient::tools_changed`], as
//! does a tool list whose `ttlMs` expired ([`McpClient::refresh_tools_if_stale`]).
//!
//! # Supervision (ADR-0043 §3)
//! - When the server dies, every call in flight fails at once with [`ClientError::Exited`]
//!   naming the server (with the exit status and the last stderr bytes).
//! - A failure (an attempt that fails before `initialize` is answered, or a crash within
//!   [`ClientOptions::stable_after`] of it) counts; the end of a connection that lived longer,
//!   or on which the server answered a `tools/call`, starts a new count (so a server that
//!   works between crashes, or an SSE stream a proxy cuts every few seconds, is restarted
//!   after 1 s each time and never marked failed). After the n-th consecutive failure the
//!   next start may begin after a delay drawn between half of `backoff_base · 2ⁿ⁻¹` and all
//!   of it (1 s, 2 s, 4 s, 8 s … capped at 60 s; [`ClientOptions::backoff_jitter`]), so
//!   servers that failed together do not restart in step. The era a start found is kept
//!   across restarts unless the failure was about it.
//!   A call before that waits for the restart when the backoff still to run is at most
//!   [`ClientOptions::wait_for_restart`] (the session sets it to the server's call timeout),
//!   and otherwise fails fast with [`ClientError::BackingOff`], saying when the next attempt
//!   is; the first call after it starts the server again.
//! - After [`ClientOptions::max_consecutive_failures`] (5) the server is
//!   [`ServerState::Failed`]: calls fail fast with [`ClientError::ServerFailed`] until
//!   [`McpClient::reenable`].
//! - Errors that prove the request never reached the server are wrapped in
//!   [`NotSent`](kaged_mcp_layers::retry::NotSent) (see [`ClientError`]).
//!
//! State changes are logged at INFO, misbehaving servers at WARN, a server marked failed at
//! ERROR; each call emits one DEBUG event and records `request_id` on the current span.
//!
//! # Processes
//! Dropping the last handle drops the connection: a stdio server's process group is killed at
//! once (synchronously, also outside a runtime). [`McpClient::shutdown`] ends it gracefully.
//!
//! # Example
//! ```no_run
//! use kaged_mcp::client::{ClientOptions, McpClient, ToolCall};
//! use kaged_mcp::transport::{StdioConfig, StdioTransport};
//! use tower::{Service, ServiceExt};
//!
//! # async fn run() -> Result<(), tower::BoxError> {
//! let transport = StdioTransport::new(StdioConfig::new("python3").args(["server.py"]));
//! let mut client = McpClient::new("local", transport, ClientOptions::default());
//! for tool in client.list_tools().await? {
//!     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
//! }
//! let call = ToolCall::new("echo").with_json_arguments(serde_json::json!({"message": "hi"}));
//! let result = client.ready().await?.call(call).await?;
//! println!("{}", result.joined_text());
//! # Ok(()) }
//! ```

mod call;
pub mod elicitation;
pub mod era;
mod error;
mod future;
mod inbound;
pub mod mrtr;
mod options;
mod rpc;
pub mod server_requests;
mod state;

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use kaged_mcp_layers::reject_sampling::RejectedCounter;
use kaged_mcp_layers::retry::{Jitter, JitteredBackoff, XorShiftRng};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tower::{BoxError, Service};

pub use self::call::ToolCall;
pub use self::era::{Era, EraPreference};
pub use self::error::{ClientError, RequestRef};
pub use self::future::ResponseFuture;
pub use self::mrtr::MAX_INPUT_ROUNDS;
pub use self::options::ClientOptions;
pub use self::state::ServerState;

use self::rpc::RpcSession;
use self::server_requests::ServerRequestService;
use crate::protocol::lifecycle::{client_capabilities, is_supported_version};
use crate::protocol::modern::{param_headers, ModernMeta, MODERN_PROTOCOL_VERSION};
use crate::protocol::{Implementation, InitializeResult, ToolInfo};
use crate::transport::{is_transient_status, CloseReason, ConnectContext, Connection, Transport};

/// The most `tools/list` pages followed.
pub const MAX_TOOL_PAGES: usize = 100;
/// The most tools accepted from one server.
pub const MAX_TOOLS: usize = 10_000;

/// The pause before a `subscriptions/listen` stream that ended is opened again; it doubles
/// with each stream that ends within [`LISTEN_STEADY`], up to [`LISTEN_MAX_PAUSE`], and each
/// pause is drawn between half of that and all of it (equal jitter).
pub const LISTEN_FIRST_PAUSE: Duration = Duration::from_secs(1);

/// The longest pause before a `subscriptions/listen` stream is opened again.
pub const LISTEN_MAX_PAUSE: Duration = Duration::from_secs(60);

/// A `subscriptions/listen` stream that lasted this long was a working one: the next pause
/// is [`LISTEN_FIRST_PAUSE`] again (a proxy that cuts idle streams every 30 s costs a 1 s gap
/// each time), and a JSON-RPC error that ends it is no refusal.
pub const LISTEN_STEADY: Duration = Duration::from_secs(10);

/// Whether `error`, ending a `subscriptions/listen` that lasted `lasted`, means the server (or
/// what stands before it) refuses the subscription, so asking again would only repeat it: a
/// JSON-RPC error within [`LISTEN_STEADY`], or an HTTP refusal (`401`/`403` and any other
/// `4xx` but `408`, `425` and `429`, or `202` with no answer). A cut, an error after a working
/// stream, a `5xx` or a request that could not be sent are not.
fn listen_refused(error: &ClientError, lasted: Duration) -> bool {
    match error {
        ClientError::JsonRpc { .. } => lasted < LISTEN_STEADY,
        ClientError::SendFailed { failure, .. } => {
            failure.is_permanent()
                || match failure.http_status() {
                    Some(202) => true,
                    Some(status) => (400..500).contains(&status) && !is_transient_status(status),
                    None => false,
                }
        }
        _ => false,
    }
}

/// Whether a failed start was about the protocol era, so the era it assumed must be found
/// again: a refused protocol version (-32022, [`ClientError::UnsupportedProtocolVersion`],
/// [`ClientError::NoCommonVersion`]), a server that is not modern when told to be
/// ([`ClientError::NotModern`]), or a handshake the server answered with an error (a modern-only
/// server refusing `initialize`, a `server/discover` refused in the modern way).
fn about_the_era(error: &ClientError) -> bool {
    match error {
        ClientError::UnsupportedProtocolVersion { .. }
        | ClientError::NoCommonVersion { .. }
        | ClientError::NotModern { .. } => true,
        ClientError::JsonRpc { code, request, .. } => {
            *code == crate::protocol::modern::UNSUPPORTED_PROTOCOL_VERSION
                || matches!(request.method, "initialize" | rpc::DISCOVER)
        }
        _ => false,
    }
}

/// A supervised session with one MCP server. See the [module docs](self).
///
/// # Clone
/// Clones share the session; the server stops when the last clone is dropped.
#[derive(Clone)]
pub struct McpClient {
    shared: Arc<Shared>,
}

/// What every clone shares.
pub(crate) struct Shared {
    server: Arc<str>,
    transport: Box<dyn Transport>,
    options: ClientOptions,
    sup: Mutex<Supervisor>,
    tools_changed: Arc<watch::Sender<u64>>,
    /// Start attempts after the first (restarts after a failure or a lost connection).
    restarts: std::sync::atomic::AtomicU64,
    /// Draws the jitter of restart delays.
    restart_rng: XorShiftRng,
    sampling_refused: RejectedCounter,
    server_requests: ServerRequestService,
    /// The `_meta` entries of a modern request, serialized once (`None` only if they could
    /// not be: then the client speaks legacy).
    modern_meta: Option<Arc<ModernMeta>>,
    /// The `x-mcp-header` parameters of the tools last listed: the catalog's, so every
    /// session (a restart's too) mirrors them.
    param_headers: rpc::ParamHeaders,
}

/// The supervision state, behind a synchronous mutex never held across an await.
struct Supervisor {
    state: ServerState,
    /// Bumped by every start attempt, shutdown and disable; stale events are ignored.
    generation: u64,
    session: Option<Arc<RpcSession>>,
    connection: Option<Box<dyn Connection>>,
    attempt_running: bool,
    waiters: Vec<oneshot::Sender<Result<Arc<RpcSession>, ClientError>>>,
    failures: u32,
    next_attempt: Option<Instant>,
    ready_at: Option<Instant>,
    last_error: Option<String>,
    init: Option<Arc<InitializeResult>>,
    /// The era of the last successful start, kept for the client's life (see [`era`]).
    era: Option<Era>,
    /// Until when the last `tools/list` is fresh, by its pages' `ttlMs` (2026-07-28 cache
    /// hints); `None` when it named no positive ttl, or once its expiry was signalled.
    tools_fresh_until: Option<Instant>,
}

impl Supervisor {
    /// Whether `session` is the ready one (not an older one, nor a probe's that never was).
    fn is_ready_with(&self, session: &RpcSession) -> bool {
        self.state == ServerState::Ready
            && self
                .session
                .as_ref()
                .is_some_and(|s| std::ptr::eq(Arc::as_ptr(s), session))
    }
}

/// How a call gets its session.
enum Acquire {
    Ready(Arc<RpcSession>),
    Wait(oneshot::Receiver<Result<Arc<RpcSession>, ClientError>>),
    Fail(ClientError),
}

impl McpClient {
    /// A client for the server labelled `server` (the configuration key), reached through
    /// `transport`. Lazy: nothing starts until the first call, [`list_tools`](Self::list_tools)
    /// or [`start`](Self::start).
    pub fn new(
        server: impl Into<String>,
        transport: impl Transport,
        options: ClientOptions,
    ) -> Self {
        let server: Arc<str> = Arc::from(server.into());
        let sampling_refused = RejectedCounter::new();
        let server_requests = server_requests::stack(
            &server,
            options.server_request_handler.clone(),
            options.elicitation_handler.clone(),
            sampling_refused.clone(),
        );
        let (tools_changed, _) = watch::channel(0);
        let capabilities = client_capabilities(options.elicitation_handler.is_some());
        let modern_meta = match ModernMeta::new(
            MODERN_PROTOCOL_VERSION,
            &capabilities,
            &options.client_info,
        ) {
            Ok(meta) => Some(Arc::new(meta)),
            Err(e) => {
                tracing::warn!(server = &*server, error = %e, "the client's _meta cannot be serialized; the server is spoken to in the legacy era");
                None
            }
        };
        Self {
            shared: Arc::new(Shared {
                server,
                transport: Box::new(transport),
                options,
                sup: Mutex::new(Supervisor {
                    state: ServerState::Idle,
                    generation: 0,
                    session: None,
                    connection: None,
                    attempt_running: false,
                    waiters: Vec::new(),
                    failures: 0,
                    next_attempt: None,
                    ready_at: None,
                    last_error: None,
                    init: None,
                    era: None,
                    tools_fresh_until: None,
                }),
                tools_changed: Arc::new(tools_changed),
                restarts: std::sync::atomic::AtomicU64::new(0),
                restart_rng: XorShiftRng::new(),
                sampling_refused,
                server_requests,
                modern_meta,
                param_headers: rpc::ParamHeaders::default(),
            }),
        }
    }

    /// The server's label.
    pub fn server(&self) -> &str {
        &self.shared.server
    }

    /// The transport's description (`stdio: node server.js`, …).
    pub fn transport_description(&self) -> String {
        self.shared.transport.describe()
    }

    /// Starts the server now, if it is not running, and waits until it is ready.
    ///
    /// # Errors
    /// Whatever kept the server from starting, naming it.
    pub async fn start(&self) -> Result<(), ClientError> {
        self.shared.session().await.map(drop)
    }

    /// Lists the server's tools, following `nextCursor` to the end. Each page is bounded by
    /// [`ClientOptions::request_timeout`].
    ///
    /// A failure is kept as the server's [`last_error`](Self::last_error), as a failed call's
    /// is in the stack's statistics: whoever keeps the catalog keeps the old one.
    ///
    /// # Errors
    /// [`ClientError::Pagination`] when a cursor comes back twice, after more than
    /// [`MAX_TOOL_PAGES`] pages or more than [`MAX_TOOLS`] tools;
    /// [`ClientError::RequestTimeout`] when a page is not answered in time; any error of the
    /// session.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        let listed = self.list_tools_unnoted().await;
        if let Err(e) = &listed {
            self.shared.lock().last_error = Some(e.to_string());
        }
        listed
    }

    async fn list_tools_unnoted(&self) -> Result<Vec<ToolInfo>, ClientError> {
        let session = self.shared.session().await?;
        let pagination = |detail: String| ClientError::Pagination {
            server: Arc::clone(&self.shared.server),
            detail,
        };
        let mut tools = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let received = Instant::now();
        // The shortest positive ttl of the pages; none if a page named none (or 0).
        let mut ttl: Option<Duration> = Some(Duration::MAX);
        for page in 1..=MAX_TOOL_PAGES {
            let (rx, mut guard) = session.list_tools_page(cursor.as_deref())?;
            let limit = self.shared.options.request_timeout;
            // On a timeout the guard, dropped, cancels the request.
            let answer = tokio::time::timeout(limit, rx)
                .await
                .map_err(|_| ClientError::RequestTimeout {
                    server: Arc::clone(&self.shared.server),
                    request: RequestRef {
                        id: crate::protocol::RequestId::from(guard.id()),
                        method: "tools/list",
                    },
                    after: limit,
                })?
                .map_err(|_| ClientError::ConnectionClosed {
                    server: Arc::clone(&self.shared.server),
                    request: None,
                    detail: "the session ended during tools/list".into(),
                });
            guard.disarm();
            let result = answer??;
            ttl = match (ttl, result.ttl_ms) {
                (Some(t), Some(ms)) if ms > 0 => Some(t.min(Duration::from_millis(ms))),
                _ => None,
            };
            tools.extend(result.tools);
            if tools.len() > MAX_TOOLS {
                return Err(pagination(format!("more than {MAX_TOOLS} tools")));
            }
            match result.next_cursor {
                Some(next) if !next.is_empty() => {
                    if !seen.insert(next.clone()) {
                        return Err(pagination(format!(
                            "the cursor {next:?} came back twice (page {page})"
                        )));
                    }
                    cursor = Some(next);
                }
                _ => {
                    self.shared.lock().tools_fresh_until =
                        ttl.and_then(|ttl| received.checked_add(ttl));
                    if session.mirrors_param_headers() {
                        tools = self.with_param_headers(&session, tools);
                    }
                    return Ok(tools);
                }
            }
        }
        Err(pagination(format!("more than {MAX_TOOL_PAGES} pages")))
    }

    /// Whether the last tool list is stale by the server's own cache hint (2026-07-28
    /// `ttlMs`): when it is, the list's expiry is signalled once through
    /// [`tools_changed`](Self::tools_changed), as a `notifications/tools/list_changed` would be,
    /// so whoever keeps the catalog reads it again. Call it where the list is needed (the
    /// session does when its catalog is read); the client never polls on its own (the
    /// specification asks a client not to treat the ttl as a polling interval). `false` for a
    /// list that named no positive ttl (legacy servers, `ttlMs: 0`), which is read again on
    /// list-change notifications only (and when the session enables the server again).
    pub fn refresh_tools_if_stale(&self) -> bool {
        let mut sup = self.shared.lock();
        match sup.tools_fresh_until {
            Some(until) if Instant::now() >= until => {
                sup.tools_fresh_until = None;
                drop(sup);
                tracing::debug!(
                    server = &*self.shared.server,
                    "the tool list's ttl expired; it is read again"
                );
                self.shared
                    .tools_changed
                    .send_modify(|g| *g = g.wrapping_add(1));
                true
            }
            _ => false,
        }
    }

    /// Keeps the `x-mcp-header` parameters of `tools` on `session` and leaves out every tool
    /// whose annotations are invalid, with a WARN naming it and why (2026-07-28 Streamable
    /// HTTP: a client must not offer such a tool).
    fn with_param_headers(&self, session: &RpcSession, tools: Vec<ToolInfo>) -> Vec<ToolInfo> {
        let mut headers = std::collections::HashMap::new();
        let kept = tools
            .into_iter()
            .filter(|tool| match param_headers(&tool.input_schema) {
                Ok(found) if found.is_empty() => true,
                Ok(found) => {
                    headers.insert(tool.name.clone(), Arc::from(found));
                    true
                }
                Err(why) => {
                    tracing::warn!(server = &*self.shared.server, tool = %tool.name, reason = %why, "tool left out: its x-mcp-header annotations are invalid");
                    false
                }
            })
            .collect();
        session.set_param_headers(headers);
        kept
    }

    /// The server's state now.
    pub fn state(&self) -> ServerState {
        self.shared.lock().state
    }

    /// The last failure, if any (kept after a successful restart until the next one).
    pub fn last_error(&self) -> Option<String> {
        self.shared.lock().last_error.clone()
    }

    /// Lifts [`ServerState::Failed`] or [`ServerState::Disabled`]: the failure count starts
    /// over and the next call starts the server at once.
    pub fn reenable(&self) {
        let mut sup = self.shared.lock();
        if matches!(sup.state, ServerState::Failed | ServerState::Disabled) {
            sup.state = ServerState::Idle;
            sup.failures = 0;
            sup.next_attempt = None;
            tracing::info!(server = &*self.shared.server, "MCP server re-enabled");
        }
    }

    /// Disables the server: the session (if any) is torn down at once, calls in flight fail,
    /// later calls fail fast with [`ClientError::Disabled`] until [`reenable`](Self::reenable).
    pub fn disable(&self) {
        let (session, connection) = self.shared.stop(ServerState::Disabled);
        if let Some(session) = session {
            session_close_requested(&session, "the server was disabled");
        }
        drop(connection);
    }

    /// Shuts the server down gracefully (stdio: close stdin, wait, SIGTERM, SIGKILL) and waits
    /// until it is gone. Calls in flight fail; the state becomes [`ServerState::Disabled`], so
    /// nothing restarts it until [`reenable`](Self::reenable).
    pub async fn shutdown(&self) {
        let (session, connection) = self.shared.stop(ServerState::Disabled);
        if let Some(connection) = connection {
            connection.close().await;
        }
        if let Some(session) = session {
            session_close_requested(&session, "shut down by the client");
        }
    }

    /// A receiver of the tools generation, bumped on each `notifications/tools/list_changed`.
    pub fn tools_changed(&self) -> watch::Receiver<u64> {
        self.shared.tools_changed.subscribe()
    }

    /// The server's `serverInfo` from the last successful `initialize`.
    pub fn server_info(&self) -> Option<Implementation> {
        self.shared
            .lock()
            .init
            .as_ref()
            .map(|i| i.server_info.clone())
    }

    /// The protocol revision agreed in the last successful `initialize`.
    pub fn protocol_version(&self) -> Option<String> {
        self.shared
            .lock()
            .init
            .as_ref()
            .map(|i| i.protocol_version.clone())
    }

    /// The era the server was last spoken to in (see [`era`]); `None` before the first start.
    pub fn era(&self) -> Option<Era> {
        self.shared.lock().era
    }

    /// The whole answer to the last successful `initialize` (capabilities, instructions). A
    /// modern server's `server/discover` answer in the same shape: the version chosen, its
    /// capabilities, its `serverInfo` from `_meta`, its instructions.
    pub fn initialize_result(&self) -> Option<Arc<InitializeResult>> {
        self.shared.lock().init.clone()
    }

    /// How many times the server was started again after the first start (after a crash, a
    /// lost connection, an expired session or a failed attempt).
    pub fn restarts(&self) -> u64 {
        self.shared
            .restarts
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many `sampling/createMessage` requests this server sent and the client refused.
    pub fn sampling_refused_count(&self) -> u64 {
        self.shared.sampling_refused.get()
    }

    /// The process id (and process group id) of the server, when it runs as a process.
    pub fn process_id(&self) -> Option<u32> {
        self.shared
            .lock()
            .connection
            .as_ref()
            .and_then(|c| c.process_id())
    }
}

/// Fails what is in flight on `session` after the client ended it.
fn session_close_requested(session: &RpcSession, detail: &str) {
    use crate::transport::InboundHandler;
    session.on_closed(CloseReason::new(detail).requested());
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.shared.server)
            .field("transport", &self.shared.transport.describe())
            .field("state", &self.state())
            .finish()
    }
}

impl Service<ToolCall> for McpClient {
    type Response = crate::protocol::ToolResult;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: ToolCall) -> ResponseFuture {
        match self.shared.acquire() {
            Acquire::Ready(session) => ResponseFuture::send(&session, call),
            Acquire::Wait(rx) => {
                ResponseFuture::starting(rx, call, Arc::clone(&self.shared.server))
            }
            Acquire::Fail(e) => ResponseFuture::failed(e.boxed(true)),
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Supervisor> {
        // Every critical section leaves the state consistent; a poisoned lock is still usable.
        self.sup
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The ready session, waiting for a start-up when needed.
    async fn session(self: &Arc<Self>) -> Result<Arc<RpcSession>, ClientError> {
        match self.acquire() {
            Acquire::Ready(session) => Ok(session),
            Acquire::Fail(e) => Err(e),
            Acquire::Wait(rx) => rx.await.unwrap_or_else(|_| {
                Err(ClientError::ConnectionClosed {
                    server: Arc::clone(&self.server),
                    request: None,
                    detail: "the start-up was abandoned".into(),
                })
            }),
        }
    }

    /// The session for a call: ready, being started (wait), or not to be had (fail fast).
    fn acquire(self: &Arc<Self>) -> Acquire {
        let mut sup = self.lock();
        match sup.state {
            ServerState::Ready => {
                if let Some(session) = &sup.session {
                    return Acquire::Ready(Arc::clone(session));
                }
            }
            ServerState::Failed => {
                return Acquire::Fail(ClientError::ServerFailed {
                    server: Arc::clone(&self.server),
                    failures: sup.failures,
                    last_error: sup.last_error.clone().unwrap_or_default(),
                });
            }
            ServerState::Disabled => {
                return Acquire::Fail(ClientError::Disabled {
                    server: Arc::clone(&self.server),
                });
            }
            ServerState::Idle | ServerState::Starting | ServerState::Restarting => {}
        }
        if !sup.attempt_running {
            // The restart may begin at once, or after the rest of the backoff when the call
            // may wait that long (its timeout still bounds it); else the call fails at once,
            // saying when the next attempt is.
            let mut delay = None;
            if let Some(at) = sup.next_attempt {
                let now = Instant::now();
                if now < at {
                    if at - now > self.options.wait_for_restart {
                        return Acquire::Fail(ClientError::BackingOff {
                            server: Arc::clone(&self.server),
                            retry_in: at - now,
                            last_error: sup.last_error.clone().unwrap_or_default(),
                        });
                    }
                    delay = Some(at);
                }
            }
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return Acquire::Fail(ClientError::NoRuntime {
                    server: Arc::clone(&self.server),
                });
            };
            sup.attempt_running = true;
            sup.generation += 1;
            let new_state = if sup.failures == 0 && sup.ready_at.is_none() {
                ServerState::Starting
            } else {
                ServerState::Restarting
            };
            let restart = new_state == ServerState::Restarting;
            self.set_state(&mut sup, new_state);
            let generation = sup.generation;
            match delay {
                None => {
                    self.count_restart(restart);
                    drop(runtime.spawn(Arc::clone(self).attempt(generation)));
                }
                Some(at) => {
                    // Weak: a client dropped while the backoff runs starts nothing.
                    let this = Arc::downgrade(self);
                    drop(runtime.spawn(async move {
                        tokio::time::sleep_until(at).await;
                        let Some(this) = this.upgrade() else { return };
                        // Shut down, disabled or re-enabled meanwhile: that answered the
                        // waiters.
                        if this.lock().generation != generation {
                            return;
                        }
                        this.count_restart(restart);
                        this.attempt(generation).await;
                    }));
                }
            }
        }
        let (tx, rx) = oneshot::channel();
        sup.waiters.push(tx);
        Acquire::Wait(rx)
    }

    /// Counts a start attempt that is a restart (see [`McpClient::restarts`]).
    fn count_restart(&self, restart: bool) {
        if restart {
            self.restarts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn set_state(&self, sup: &mut Supervisor, state: ServerState) {
        if sup.state != state {
            tracing::info!(server = &*self.server, from = %sup.state, to = %state, "MCP server state");
            sup.state = state;
        }
    }

    /// One start attempt: connect, `initialize`, `notifications/initialized`.
    async fn attempt(self: Arc<Self>, generation: u64) {
        let result = self.connect_and_initialize(generation).await;
        let mut sup = self.lock();
        if sup.generation != generation {
            // Shut down or disabled meanwhile; `stop` already answered the waiters.
            return;
        }
        sup.attempt_running = false;
        let waiters = std::mem::take(&mut sup.waiters);
        match result {
            Ok((session, init, era)) => {
                tracing::info!(
                    server = &*self.server,
                    era = %era,
                    protocol_version = %init.protocol_version,
                    server_name = %init.server_info.name,
                    server_version = %init.server_info.version,
                    "MCP server ready"
                );
                sup.session = Some(Arc::clone(&session));
                sup.init = Some(Arc::new(init));
                sup.era = Some(era);
                sup.ready_at = Some(Instant::now());
                sup.next_attempt = None;
                self.set_state(&mut sup, ServerState::Ready);
                drop(sup);
                for waiter in waiters {
                    let _ = waiter.send(Ok(Arc::clone(&session)));
                }
            }
            Err(e) => {
                let connection = sup.connection.take();
                sup.session = None;
                // The era is found again at the next start only when the failure is about it
                // (a server that changed); a server that crashes at start keeps the era its
                // probe found, so each restart spawns it once, not twice.
                if about_the_era(&e) {
                    sup.era = None;
                }
                let permanent = match &e {
                    ClientError::ConnectFailed { source, .. } => source.is_permanent(),
                    ClientError::SendFailed { failure, .. } => failure.is_permanent(),
                    _ => false,
                };
                if permanent {
                    // Refused (auth, foreign endpoint): no restart loop, failed at once.
                    sup.failures = self.options.max_consecutive_failures.saturating_sub(1);
                }
                self.register_failure(&mut sup, e.to_string());
                drop(sup);
                drop(connection);
                for waiter in waiters {
                    let _ = waiter.send(Err(e.clone()));
                }
            }
        }
    }

    /// Opens a connection with a new session on it.
    async fn connect(self: &Arc<Self>, generation: u64) -> Result<Arc<RpcSession>, ClientError> {
        let session = RpcSession::new(
            Arc::clone(&self.server),
            generation,
            Arc::downgrade(self),
            self.server_requests.clone(),
            Arc::clone(&self.tools_changed),
            rpc::SessionSettings {
                max_in_flight: self.options.max_in_flight,
                elicitation: self.options.elicitation_handler.is_some(),
                mirrors_headers: self.transport.mirrors_headers(),
                param_headers: Arc::clone(&self.param_headers),
            },
        );
        let ctx = ConnectContext {
            server: Arc::clone(&self.server),
            frame_limit: self.options.frame_limit,
            handler: Arc::clone(&session) as _,
        };
        let connection =
            self.transport
                .connect(ctx)
                .await
                .map_err(|source| ClientError::ConnectFailed {
                    server: Arc::clone(&self.server),
                    source,
                })?;
        let replaced = {
            let mut sup = self.lock();
            if sup.generation != generation {
                return Err(ClientError::Disabled {
                    server: Arc::clone(&self.server),
                });
            }
            sup.connection.replace(connection)
        };
        // A probe's connection the server closed: gone for good.
        drop(replaced);
        Ok(session)
    }

    /// One start: connect, find the era (see [`era`]), and in the legacy era `initialize`.
    async fn connect_and_initialize(
        self: &Arc<Self>,
        generation: u64,
    ) -> Result<(Arc<RpcSession>, InitializeResult, Era), ClientError> {
        let preference = self.options.era;
        let remembered = self.lock().era;
        let meta = match (&self.modern_meta, self.transport.speaks_modern()) {
            (Some(meta), true) => Some(Arc::clone(meta)),
            _ => None,
        };
        let probe_with = match preference {
            EraPreference::Legacy => None,
            EraPreference::Modern => match &meta {
                Some(meta) => Some(meta),
                None => {
                    return Err(ClientError::NotModern {
                        server: Arc::clone(&self.server),
                        detail: format!(
                            "its transport ({}) carries only legacy MCP",
                            self.transport.describe()
                        ),
                    })
                }
            },
            EraPreference::Auto if remembered == Some(Era::Legacy) => None,
            EraPreference::Auto => meta.as_ref(),
        };
        let mut session = self.connect(generation).await?;
        if let Some(meta) = probe_with {
            let started = std::time::Instant::now();
            match era::probe(&session, meta, self.options.probe_timeout).await {
                era::Probe::Modern(init) => {
                    tracing::info!(
                        server = &*self.server,
                        protocol_version = %init.protocol_version,
                        probe_ms = started.elapsed().as_millis() as u64,
                        "server/discover: the server speaks the modern era"
                    );
                    session.speak_modern(Arc::clone(meta));
                    if init.capabilities["tools"]["listChanged"] == true {
                        self.listen_for_tool_changes(&session);
                    }
                    return Ok((session, init, Era::Modern));
                }
                era::Probe::Failed(e) => {
                    self.lock().era = None;
                    return Err(e);
                }
                era::Probe::Legacy { why, closed } => {
                    if preference == EraPreference::Modern {
                        return Err(ClientError::NotModern {
                            server: Arc::clone(&self.server),
                            detail: why,
                        });
                    }
                    tracing::info!(
                        server = &*self.server,
                        reason = %why,
                        probe_ms = started.elapsed().as_millis() as u64,
                        reconnect = closed,
                        "server/discover: the server speaks the legacy era; initialize follows"
                    );
                    // Kept whatever comes of this start, unless its failure is about the era.
                    {
                        let mut sup = self.lock();
                        if sup.generation == generation {
                            sup.era = Some(Era::Legacy);
                        }
                    }
                    if closed {
                        session = self.connect(generation).await?;
                    }
                }
            }
        }
        let init = self.initialize(&session).await?;
        Ok((session, init, Era::Legacy))
    }

    /// Keeps a `subscriptions/listen` stream open for a modern server that offers list
    /// changes, for the life of `session`. A stream that ends while the session lives (the
    /// server ended it, or the transport cut it: an idle timeout, a proxy), or that could not
    /// be sent, is opened again after a pause ([`LISTEN_FIRST_PAUSE`], doubling up to
    /// [`LISTEN_MAX_PAUSE`]; the first again after a stream that lasted [`LISTEN_STEADY`]);
    /// its acknowledgement has the tool list read again, since a change may have come in the
    /// gap. A refusal ([`listen_refused`]) ends it for the session.
    fn listen_for_tool_changes(&self, session: &Arc<RpcSession>) {
        let server = Arc::clone(&self.server);
        let session = Arc::downgrade(session);
        tokio::spawn(async move {
            // Equal jitter: between half the doubling pause and all of it.
            let mut backoff = JitteredBackoff::new(LISTEN_FIRST_PAUSE, LISTEN_MAX_PAUSE)
                .expect("the listen pauses are valid")
                .jitter(Jitter::Equal);
            let mut retry = 0;
            let mut reopened = false;
            loop {
                let Some(live) = session.upgrade() else {
                    return;
                };
                let opened = Instant::now();
                let sent = live.listen_for_tool_changes(reopened);
                drop(live);
                let outcome = match sent {
                    Ok(rx) => match rx.await {
                        Ok(outcome) => outcome,
                        Err(_) => return,
                    },
                    // Not sent (the bound on requests in flight, a full stdio pipe, or the
                    // session's end, seen just below): tried again like a cut.
                    Err(e) => Err(e),
                };
                match session.upgrade() {
                    Some(live) if !live.is_closed() => {}
                    _ => return,
                }
                let lasted = opened.elapsed();
                if lasted >= LISTEN_STEADY {
                    retry = 0;
                }
                let pause = backoff.delay(retry);
                let pause_ms = pause.as_millis() as u64;
                match &outcome {
                    Err(e) if listen_refused(e, lasted) => {
                        tracing::warn!(server = &*server, error = %e, "the server refused subscriptions/listen; tool changes are seen at the ttl or a restart");
                        return;
                    }
                    Ok(_) => tracing::info!(
                        server = &*server,
                        pause_ms,
                        "the server ended the tools/list_changed subscription; opening it again"
                    ),
                    Err(e) => tracing::info!(
                        server = &*server,
                        error = %e,
                        pause_ms,
                        "the tools/list_changed subscription was cut; opening it again"
                    ),
                }
                tokio::time::sleep(pause).await;
                retry = retry.saturating_add(1);
                reopened = true;
            }
        });
    }

    /// The legacy handshake: `initialize`, `notifications/initialized`.
    async fn initialize(
        self: &Arc<Self>,
        session: &Arc<RpcSession>,
    ) -> Result<InitializeResult, ClientError> {
        let rx = session.initialize(
            &self.options.client_info,
            self.options.elicitation_handler.is_some(),
        )?;
        let init = match tokio::time::timeout(self.options.initialize_timeout, rx).await {
            Ok(Ok(answer)) => answer?,
            Ok(Err(_)) => {
                return Err(ClientError::ConnectionClosed {
                    server: Arc::clone(&self.server),
                    request: None,
                    detail: "the session ended during initialize".into(),
                })
            }
            Err(_) => {
                return Err(ClientError::InitializeTimeout {
                    server: Arc::clone(&self.server),
                    after: self.options.initialize_timeout,
                })
            }
        };
        if !is_supported_version(&init.protocol_version) {
            tracing::warn!(server = &*self.server, version = %init.protocol_version, "server chose an unsupported protocol version");
            return Err(ClientError::UnsupportedProtocolVersion {
                server: Arc::clone(&self.server),
                version: init.protocol_version,
            });
        }
        if let Some(connection) = &self.lock().connection {
            connection.negotiated(&init.protocol_version);
        }
        session.initialized();
        Ok(init)
    }

    /// Counts a failure: the next attempt after a backoff, or the failed state.
    fn register_failure(&self, sup: &mut Supervisor, error: String) {
        sup.failures = sup.failures.saturating_add(1);
        sup.last_error = Some(error);
        if sup.failures >= self.options.max_consecutive_failures {
            sup.next_attempt = None;
            tracing::error!(
                server = &*self.server,
                failures = sup.failures,
                last_error = sup.last_error.as_deref().unwrap_or(""),
                "MCP server marked failed; calls fail fast until it is re-enabled"
            );
            self.set_state(sup, ServerState::Failed);
        } else {
            let delay = self
                .options
                .restart_delay(sup.failures, self.restart_rng.clone());
            sup.next_attempt = Some(Instant::now() + delay);
            tracing::info!(
                server = &*self.server,
                failures = sup.failures,
                backoff_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                last_error = sup.last_error.as_deref().unwrap_or(""),
                "MCP server will be restarted on the next call after the backoff"
            );
            self.set_state(sup, ServerState::Restarting);
        }
    }

    /// The connection of `session` ended. Only the ready session's end counts: a session that
    /// never became the ready one (an era probe whose server exited on it, say) is no crash.
    pub(crate) fn session_closed(&self, session: &RpcSession, reason: &CloseReason) {
        let mut sup = self.lock();
        if !sup.is_ready_with(session) {
            return;
        }
        let connection = sup.connection.take();
        let answered = sup.session.take().is_some_and(|s| s.answered_a_call());
        let lived = sup
            .ready_at
            .map(|at| at.elapsed())
            .unwrap_or(Duration::ZERO);
        if reason.session_expired && (answered || lived >= self.options.stable_after) {
            // Not a failure: the server ended a session that worked and expects a new one,
            // which the next call starts at once. (One that expires before it ever answered a
            // call, behind a load balancer without sticky sessions say, counts as a failure
            // below, so it backs off and is marked failed in the end.)
            tracing::info!(server = &*self.server, reason = %reason.message, "MCP server ended the session; a new one starts on the next call");
            sup.failures = 0;
            sup.next_attempt = None;
            self.set_state(&mut sup, ServerState::Restarting);
            drop(sup);
            drop(connection);
            return;
        }
        // A connection that lived long, or on which the server answered a call, worked: its
        // end starts a new count (a proxy that cuts SSE streams every few seconds, or a server
        // that dies after each answer, stays usable instead of being marked failed).
        if lived >= self.options.stable_after || answered {
            sup.failures = 0;
        }
        tracing::warn!(server = &*self.server, reason = %reason.message, "MCP server connection ended");
        self.register_failure(&mut sup, format!("{reason}"));
        drop(sup);
        drop(connection);
    }

    /// The ready `session` was refused its protocol version mid-life (see
    /// `RpcSession::era_refused`): it ends, as a failure, and the era is found again at the
    /// next start.
    pub(crate) fn era_refused(&self, session: &RpcSession) {
        let mut sup = self.lock();
        if !sup.is_ready_with(session) {
            return;
        }
        sup.era = None;
        sup.session = None;
        let connection = sup.connection.take();
        self.register_failure(
            &mut sup,
            format!(
                "MCP server `{}` refused protocol version {MODERN_PROTOCOL_VERSION} in a \
                 modern session (-32022); its era is found again at the next start",
                self.server
            ),
        );
        drop(sup);
        drop(connection);
    }

    /// Moves to `state` (disabled), ending the session and answering waiters.
    fn stop(&self, state: ServerState) -> (Option<Arc<RpcSession>>, Option<Box<dyn Connection>>) {
        let mut sup = self.lock();
        sup.generation += 1;
        sup.attempt_running = false;
        sup.next_attempt = None;
        let session = sup.session.take();
        let connection = sup.connection.take();
        let waiters = std::mem::take(&mut sup.waiters);
        self.set_state(&mut sup, state);
        drop(sup);
        for waiter in waiters {
            let _ = waiter.send(Err(ClientError::Disabled {
                server: Arc::clone(&self.server),
            }));
        }
        (session, connection)
    }
}

#[cfg(test)]
mod tests;
