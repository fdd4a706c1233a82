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
//! attempt with [`ErrorKind::UnsupportedProtocolVersion`]), and sends
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
//! - When the server dies, every call in flight fails at once with [`ErrorKind::Exited`]
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
//!   and otherwise fails fast with [`ErrorKind::BackingOff`], saying when the next attempt
//!   is; the first call after it starts the server again.
//! - After [`ClientOptions::max_consecutive_failures`] (5) the server is
//!   [`ServerState::Failed`]: calls fail fast with [`ErrorKind::ServerFailed`] until
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
mod catalog;
mod dialect;
pub mod elicitation;
pub mod era;
pub mod era_memory;
mod error;
mod future;
mod inbound;
mod listen;
mod logging;
pub mod mrtr;
mod options;
mod pages;
mod prompts;
mod request;
mod resources;
pub mod roots;
mod router;
mod rpc;
pub mod server_requests;
mod skills;
mod state;
mod supervisor;
pub mod tasks;

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
pub use self::catalog::{MAX_TOOLS, MAX_TOOL_PAGES};
pub use self::era::{Era, EraPreference};
pub use self::era_memory::EraMemory;
pub(crate) use self::error::without_server;
pub(crate) use self::error::Kind;
pub use self::error::{ClientError, ErrorClass, ErrorKind, RequestRef, SkillCheck};
pub use self::future::ResponseFuture;
pub use self::listen::{LISTEN_FIRST_PAUSE, LISTEN_MAX_PAUSE, LISTEN_STEADY};
pub use self::mrtr::MAX_INPUT_ROUNDS;
pub use self::options::{ClientOptions, DEFAULT_NOISE_GRACE};
pub use self::pages::{MAX_ITEMS, MAX_PAGES};
pub use self::resources::{ServerChange, CHANGES_CAPACITY};
pub use self::roots::Root;
#[doc(hidden)]
pub use self::skills::checks as skill_checks;
pub use self::skills::{LoadedSkill, SkillContent};
pub use self::state::ServerState;
use self::supervisor::{session_close_requested, Acquire, Supervisor};
pub use self::tasks::{TaskCounts, Unconfirmed, UnconfirmedCancel};

use self::rpc::RpcSession;
use self::server_requests::ServerRequestService;
use crate::protocol::lifecycle::is_supported_version;
use crate::protocol::modern::{param_headers, ModernMeta, MODERN_PROTOCOL_VERSION};
use crate::protocol::{Implementation, InitializeResult, ToolInfo};
use crate::transport::{is_transient_status, CloseReason, ConnectContext, Connection, Transport};

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
    /// How many `roots/list` the client answered (see [`roots`]: the start waits for one).
    roots_answered: roots::RootsAnswered,
    /// The `_meta` entries of a modern request, serialized once (`None` only if they could
    /// not be: then the client speaks legacy).
    modern_meta: Option<Arc<ModernMeta>>,
    /// The `x-mcp-header` parameters of the tools last listed: the catalog's, so every
    /// session (a restart's too) mirrors them.
    param_headers: dialect::ParamHeaders,
    /// The tasks being followed, and their counters (shared by every session).
    tasks: Arc<tasks::TaskBoard>,
    /// The resources subscribed to, and where every session sends the changes it hears.
    subscriptions: Arc<resources::Subscriptions>,
    /// The features' notification handlers and per-session state, given to every session.
    router: Arc<router::Router>,
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
        let roots_answered = roots::RootsAnswered::default();
        let server_requests = server_requests::stack(
            &server,
            options.server_request_handler.clone(),
            options.elicitation_handler.clone(),
            options
                .roots
                .as_deref()
                .map(|roots| (roots, roots_answered.clone())),
            sampling_refused.clone(),
        );
        let (tools_changed, _) = watch::channel(0);
        let capabilities =
            tasks::modern_capabilities(options.capabilities(), options.tasks.enabled());
        let modern_meta = match ModernMeta::new(
            MODERN_PROTOCOL_VERSION,
            &capabilities,
            &options.client_info,
            options.log_level,
        ) {
            Ok(meta) => Some(Arc::new(meta)),
            Err(e) => {
                tracing::warn!(server = &*server, error = %e, "the client's _meta cannot be serialized; the server is spoken to in the legacy era");
                None
            }
        };
        let request_timeout = options.request_timeout;
        // A legacy server remembered from an earlier run is not probed (see [`era_memory`]).
        let recalled = match (&options.era_memory, options.era) {
            (Some(memory), EraPreference::Auto) => memory.recall(),
            _ => None,
        };
        let tools_changed = Arc::new(tools_changed);
        let subscriptions = Arc::default();
        let task_board = Arc::new(tasks::TaskBoard::new(request_timeout));
        // The features: each registers its notification handlers and per-session state.
        let mut router = router::Router::default();
        catalog::register(&mut router, &tools_changed);
        tasks::register(&mut router, &task_board);
        resources::register(&mut router, &subscriptions);
        prompts::register(&mut router, &subscriptions);
        logging::register(&mut router);
        listen::register(&mut router, &tools_changed, &subscriptions);
        skills::register(&mut router);
        let client = Self {
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
                    last_reason: None,
                    stdout_noise: None,
                    init: None,
                    era: recalled,
                    era_remembered: recalled.is_some(),
                    tools_fresh_until: None,
                }),
                tools_changed,
                restarts: std::sync::atomic::AtomicU64::new(0),
                restart_rng: XorShiftRng::new(),
                sampling_refused,
                server_requests,
                roots_answered,
                modern_meta,
                param_headers: dialect::ParamHeaders::default(),
                tasks: task_board,
                subscriptions,
                router: Arc::new(router),
            }),
        };
        client.shared.tasks.bind(Arc::downgrade(&client.shared));
        client
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

    /// The server's state now.
    pub fn state(&self) -> ServerState {
        self.shared.lock().state
    }

    /// The first line the server wrote that was not a JSON-RPC message (bounded to 200
    /// characters, control characters removed, token-shaped runs hidden), if it wrote one: what a program that is not
    /// an MCP server, or one that logs to stdout, said. Named in a start-up failure.
    pub fn stdout_noise(&self) -> Option<String> {
        self.shared.lock().stdout_noise.clone()
    }

    /// The last failure, if any (kept after a successful restart until the next one).
    pub fn last_error(&self) -> Option<String> {
        self.shared.lock().last_error.clone()
    }

    /// The last failure as the operator's line ([`ClientError::reason`]): what happened,
    /// without the server's name or the chain of causes [`last_error`](Self::last_error) keeps.
    pub fn last_reason(&self) -> Option<String> {
        self.shared.lock().last_reason.clone()
    }

    /// Consecutive failures to start or keep the server up: the count that marks it
    /// [`ServerState::Failed`] at [`ClientOptions::max_consecutive_failures`] (a permanent
    /// refusal marks it failed at once); 0 once it ran well.
    pub fn consecutive_failures(&self) -> u32 {
        self.shared.lock().failures
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
    /// later calls fail fast with [`ErrorKind::Disabled`] until [`reenable`](Self::reenable).
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

    /// [`shutdown`](Self::shutdown) bounded by `deadline`, for a one-shot command or an
    /// interrupt, which cannot wait the transport's own grace periods: each polite step (stdio:
    /// close stdin and wait, then SIGTERM and wait) gets a third of it, then SIGKILL; whatever
    /// is left at `deadline` is torn down at once (the connection dropped: SIGKILL to the
    /// process group). What is queued (a cancelled call's `notifications/cancelled` or
    /// `tasks/cancel`) is written before stdin closes; an HTTP session is ended (`DELETE`)
    /// within the deadline.
    pub async fn shutdown_within(&self, deadline: Duration) {
        let (session, connection) = self.shared.stop(ServerState::Disabled);
        if let Some(connection) = connection {
            let close = connection.close_within(deadline / 3);
            if tokio::time::timeout(deadline, close).await.is_err() {
                tracing::debug!(
                    server = &*self.shared.server,
                    deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
                    "the server did not shut down within the deadline; torn down"
                );
            }
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

    /// The tasks this server ran for this client's calls: in flight now, and how they ended
    /// (see [`tasks`]).
    pub fn task_counts(&self) -> TaskCounts {
        self.shared.tasks.counts()
    }

    /// Waits at most `limit` until every `tasks/cancel` this client sent (for a call dropped
    /// before its task ended: interrupted, timed out) got its answer or failed; `true` when
    /// none is awaited any more. A command that gave up on a task waits here before it shuts
    /// the server down, so the cancel is answered on a session still open.
    pub async fn settle_cancels(&self, limit: Duration) -> bool {
        self.shared.tasks.settle_cancels(limit).await
    }

    /// Takes the `tasks/cancel` requests this client sent that the server did not confirm:
    /// refused, not sent, or not answered (one still awaited counts as not answered: call
    /// [`settle_cancels`](Self::settle_cancels) first). Each is told once. Those tasks may
    /// still run on the server.
    pub fn unconfirmed_cancels(&self) -> Vec<UnconfirmedCancel> {
        self.shared.tasks.unconfirmed_cancels(&self.shared.server)
    }

    /// Whether the server, as last started, runs `tools/call` as a task for this client: its
    /// era's capability says so (2025-11-25 `capabilities.tasks.requests.tools.call`, the
    /// 2026-07-28 tasks extension) and [`ClientOptions::tasks`] is not `off`. `false` before
    /// the first start.
    pub fn runs_tool_tasks(&self) -> bool {
        if !self.shared.options.tasks.enabled() {
            return false;
        }
        let sup = self.shared.lock();
        match (&sup.init, sup.era) {
            (Some(init), Some(era)) => {
                tasks::server_runs_tool_tasks(&init.capabilities, era == Era::Modern)
            }
            _ => false,
        }
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

#[cfg(test)]
mod protocol_tests;
#[cfg(test)]
mod start_tests;
#[cfg(test)]
mod tests;
