//! One JSON-RPC session over one connection: request ids, the pending table, the send path and
//! what happens to every inbound message.
//!
//! The hot path (`ARCHITECTURE.md`, "The hot path"):
//! - a request gets the next id of a counter, a `oneshot` in the pending table (a synchronous
//!   mutex, never held across an await, with a multiplicative hasher for our own ids), and is
//!   serialized straight into the transport's outbound buffer, which never awaits;
//! - the transport's reader task calls [`InboundHandler::on_frame`], which decodes the frame in
//!   one pass typed by the pending entry (see [`super::inbound`]) and completes the `oneshot`:
//!   no channel, no task hop;
//! - a caller that stops waiting drops its [`CallGuard`], which removes the entry and queues
//!   `notifications/cancelled` (never for `initialize`); a late answer finds no entry and is
//!   dropped quietly.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use futures::FutureExt;
use kaged_mcp_layers::timeout::ProgressHandle;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use tower::{Service, ServiceExt};

mod completion;
mod guard;
mod requests;
mod route;
mod traced;
mod write;

pub(crate) use self::completion::Completion;
pub(crate) use self::guard::{CallGuard, Receiver};

pub(crate) use self::requests::{AnswerReceiver, InputRetry};
use self::traced::with_trace_context;
use self::write::{write_request, write_request_with};
use super::dialect::{Dialect, ParamHeaders};
use super::error::{ClientError, RequestRef};
use super::inbound::{self, Frame};
use super::router::{Router, SessionState};
use super::server_requests::{self, ServerRequestService};
use crate::client::Kind;
use crate::protocol::answer::Answer;
use crate::protocol::jsonrpc::{OutgoingNotification, OutgoingResponse, Version2};
use crate::protocol::lifecycle::InitializeParams;
use crate::protocol::method::{self, Notification as _, Request};
use crate::protocol::modern::{
    DiscoverParams, ModernMeta, RequestMeta, MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::protocol::notifications::CancelledParams;
use crate::protocol::tasks::TaskMetadata;
use crate::protocol::tools::{CallToolParams, LegacyCallToolParams, ProgressMeta};
use crate::protocol::{
    CallAnswer, DiscoverResult, Implementation, InitializeResult, JsonRpcError, RequestId,
    ServerRequest,
};
use crate::telemetry::{Outcome, RequestTelemetry, SessionTelemetry};
use crate::transport::{
    CloseReason, InboundHandler, Outbound, OversizeFrame, RequestHead, SendError, SendFailure,
};

use super::call::ToolCall;

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<crate::protocol::jsonrpc::IdHasher>>;

/// What a pending request expects back, and where it goes.
#[derive(Debug)]
pub(crate) enum Expect {
    /// `tools/call`, the hot path: its `result` is decoded in place, straight into its type
    /// (a legacy session's into `ToolResult`).
    CallTool(oneshot::Sender<Result<CallAnswer, ClientError>>),
    /// A legacy session's `tools/call` that asked for a task (`params.task`): its `result` may
    /// be a `CreateTaskResult`, so it is decoded as any [`CallAnswer`].
    TaskCall(oneshot::Sender<Result<CallAnswer, ClientError>>),
    /// Any other kind (see [`RpcSession::request`]): its `result` is handed over raw and
    /// decoded into the type its requester waits for.
    Other(Completion),
}

/// A request waiting for its answer.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) method: &'static str,
    pub(crate) expect: Expect,
    pub(crate) progress: Option<ProgressHandle>,
    /// The request's span and timing, ended with the request.
    pub(crate) telemetry: RequestTelemetry,
}

impl Pending {
    /// Completes the request with an error.
    pub(crate) fn fail(self, err: ClientError) {
        match self.expect {
            Expect::CallTool(tx) | Expect::TaskCall(tx) => {
                self.telemetry.end(Outcome::Failed(&err));
                drop(tx.send(Err(err)));
            }
            Expect::Other(completion) => completion.fail(err, self.telemetry),
        }
    }
}

#[derive(Debug)]
struct Table {
    map: IdMap<Pending>,
    /// Set once the connection ended: no more requests.
    closed: Option<CloseReason>,
}

/// One session. See the [module docs](self).
pub(crate) struct RpcSession {
    /// This session, for the tasks that answer slow server requests.
    this: Weak<RpcSession>,
    pub(crate) server: Arc<str>,
    /// The supervisor's generation this session belongs to.
    pub(crate) generation: u64,
    next_id: AtomicU64,
    table: Mutex<Table>,
    outbound: OnceLock<Arc<dyn Outbound>>,
    /// Hears the session's end and a refused era (the supervisor, holding its client weakly).
    events: OnEvent,
    server_requests: ServerRequestService,
    max_in_flight: usize,
    /// What the connection has shown so far.
    seen: Seen,
    /// The era's state: what every request carries and mirrors (see [`Dialect`]).
    dialect: Dialect,
    /// An elicitation handler is plugged in.
    elicitation: bool,
    /// What a `tools/call` needs of tasks: the client's board, what a call asks for, the
    /// abandoned calls a late task answer may belong to.
    calls: CallTasks,
    /// What every request's span and metrics say of the session (see [`crate::telemetry`]).
    telemetry: Arc<SessionTelemetry>,
    /// The features' notification handlers (the client's).
    router: Arc<Router>,
    /// The features' state for this session.
    state: SessionState,
    /// Set once the connection ended (and `table.closed` says how).
    ended: tokio::sync::watch::Sender<bool>,
}

/// What the connection has shown so far.
#[derive(Debug, Default)]
struct Seen {
    /// Lines skipped as undecodable or invalid.
    skipped: AtomicU64,
    /// The server answered a `tools/call` on this connection (a result that decoded, or a
    /// JSON-RPC error): it works.
    answered_call: AtomicBool,
    /// Well-formed answers received on this connection, to any request: a request that
    /// could not connect proves the server unreachable only if no answer came after it.
    answers: AtomicU64,
    /// Lines that were JSON-RPC messages (answers, requests, notifications).
    messages: AtomicU64,
    /// The first line that was not a JSON-RPC message (cleaned as [`SessionEvent::Noise`]),
    /// once one came.
    noise: tokio::sync::watch::Sender<Option<Arc<str>>>,
}

/// What a session's `tools/call`s need of tasks.
#[derive(Debug)]
struct CallTasks {
    /// `params.task` of a 2025-11-25 task-augmented call.
    metadata: TaskMetadata,
    /// A modern request declares the tasks extension (`tasks` is not `off`).
    declared: bool,
    /// The last `tools/call`s whose caller gave up before the answer and that the server may
    /// have answered with a task: a late task answer to one is cancelled (bounded).
    abandoned: Mutex<std::collections::VecDeque<u64>>,
}

/// How many abandoned `tools/call` ids a session remembers, to cancel a task that answers one
/// late.
const ABANDONED_CALLS: usize = 64;

impl std::fmt::Debug for RpcSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcSession")
            .field("server", &self.server)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// What a session tells whoever runs it: see [`OnEvent`].
#[derive(Debug)]
pub(crate) enum SessionEvent<'a> {
    /// The connection ended (after every request in flight failed).
    Closed(&'a CloseReason),
    /// A modern session's request was refused its protocol version (-32022): the session must
    /// end and the era be found again. The callback must not drop the connection inline (it
    /// runs inside the transport's `on_frame`).
    EraRefused,
    /// A request could not reach the server at all: no connection could be made (HTTP). The
    /// server is down: the session ends as if its connection had, so the state says so. The
    /// callback must not drop the connection inline.
    Unreachable {
        /// What the request met.
        failure: &'a crate::transport::SendFailure,
        /// [`RpcSession::answers`] when it failed: an answer since proves the server
        /// reachable, and the session stays.
        answers: u64,
    },
    /// The first line of this session that was not a JSON-RPC message (bounded, control
    /// characters removed): a program that is not an MCP server, or one that prints to stdout.
    Noise(&'a str),
}

/// Hears a session's [`SessionEvent`]s: called from the transport's reader task, so it must
/// return quickly, never block, never await. The session knows nothing of what listens (the
/// supervisor gives one holding its client weakly).
pub(crate) type OnEvent = Arc<dyn Fn(&RpcSession, SessionEvent<'_>) + Send + Sync>;

/// What a session needs to know of its client's options and transport.
#[derive(Debug, Clone)]
pub(crate) struct SessionSettings {
    /// The bound on requests in flight.
    pub(crate) max_in_flight: usize,
    /// An elicitation handler is plugged in.
    pub(crate) elicitation: bool,
    /// The transport mirrors `x-mcp-header` parameters (Streamable HTTP).
    pub(crate) mirrors_headers: bool,
    /// The client's map of annotated parameters.
    pub(crate) param_headers: ParamHeaders,
    /// How long a server should keep a task the client asks for.
    pub(crate) task_ttl: std::time::Duration,
    /// A modern request declares the tasks extension.
    pub(crate) tasks_declared: bool,
    /// The session's telemetry (where the server is: the transport's peer).
    pub(crate) telemetry: Arc<SessionTelemetry>,
    /// The client's features: their notification handlers and per-session state.
    pub(crate) router: Arc<Router>,
}

impl RpcSession {
    pub(crate) fn new(
        server: Arc<str>,
        generation: u64,
        events: OnEvent,
        server_requests: ServerRequestService,
        settings: SessionSettings,
    ) -> Arc<Self> {
        let SessionSettings {
            max_in_flight,
            elicitation,
            mirrors_headers,
            param_headers,
            task_ttl,
            tasks_declared,
            telemetry,
            router,
        } = settings;
        Arc::new_cyclic(|this| Self {
            this: this.clone(),
            server,
            generation,
            next_id: AtomicU64::new(0),
            table: Mutex::new(Table {
                map: IdMap::default(),
                closed: None,
            }),
            outbound: OnceLock::new(),
            events,
            server_requests,
            max_in_flight,
            seen: Seen::default(),
            dialect: Dialect::new(mirrors_headers, param_headers),
            elicitation,
            calls: CallTasks {
                metadata: TaskMetadata {
                    ttl: u64::try_from(task_ttl.as_millis()).unwrap_or(u64::MAX),
                },
                declared: tasks_declared,
                abandoned: Mutex::new(std::collections::VecDeque::new()),
            },
            telemetry,
            state: router.new_state(),
            router,
            ended: tokio::sync::watch::Sender::new(false),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // Entries are inserted and removed whole; a poisoned table is still consistent.
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn request_ref(id: u64, method: &'static str) -> RequestRef {
        RequestRef {
            id: RequestId::from(id),
            method,
        }
    }

    pub(super) fn closed_error(
        &self,
        reason: &CloseReason,
        request: Option<RequestRef>,
    ) -> ClientError {
        if reason.requested {
            ClientError::new(
                Arc::clone(&self.server),
                request,
                Kind::ConnectionClosed {
                    detail: reason.message.clone(),
                },
            )
        } else {
            ClientError::new(
                Arc::clone(&self.server),
                request,
                Kind::Exited {
                    reason: reason.message.clone(),
                    exit_status: reason.exit_status(),
                    stderr_tail: reason.stderr_tail().to_owned(),
                },
            )
        }
    }

    /// Registers a request and queues it. On `Err` nothing reached the server.
    /// `head` says what the transport may mirror of the request (its `params.name`, the
    /// protocol version it declares in its own `_meta`, the values of its `x-mcp-header`
    /// parameters); its method is `method`.
    fn send_request(
        &self,
        method: &'static str,
        head: RequestHead<'_>,
        expect: Expect,
        progress: Option<ProgressHandle>,
        write_params: &mut dyn FnMut(u64, &mut Vec<u8>) -> io::Result<()>,
    ) -> Result<u64, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let telemetry = RequestTelemetry::start(&self.telemetry, method, id, &head);
        // A traced request is written here, outside the table's and the transport's locks,
        // with its trace context spliced into `params._meta`; the transport then copies it.
        let traced = match telemetry.trace_context() {
            Some(entries) => {
                let mut plain = Vec::new();
                match write_params(id, &mut plain) {
                    Ok(()) => Some(with_trace_context(&plain, &entries)),
                    // Failed the same way below, where an untraced request fails.
                    Err(_) => None,
                }
            }
            None => None,
        };
        let refused = {
            let mut table = self.table();
            if let Some(reason) = &table.closed {
                // A server that exited is reported as such (its exit status, its stderr).
                let err = self.closed_error(reason, Some(Self::request_ref(id, method)));
                Err((err, telemetry))
            } else if table.map.len() >= self.max_in_flight {
                let err = ClientError::of(
                    &self.server,
                    Kind::TooManyInFlight {
                        limit: self.max_in_flight,
                    },
                );
                Err((err, telemetry))
            } else {
                table.map.insert(
                    id,
                    Pending {
                        method,
                        expect,
                        progress,
                        telemetry,
                    },
                );
                Ok(())
            }
        };
        refused.map_err(|(err, telemetry)| {
            telemetry.end(Outcome::Failed(&err));
            err
        })?;
        let sent = match self.outbound.get() {
            Some(out) => out.send_request(&RequestId::from(id), &head, &mut |buf| match &traced {
                Some(bytes) => {
                    buf.extend_from_slice(bytes);
                    Ok(())
                }
                None => write_params(id, buf),
            }),
            None => Err(SendError::Closed),
        };
        if let Err(e) = sent {
            let err = ClientError::new(
                Arc::clone(&self.server),
                Some(Self::request_ref(id, method)),
                Kind::ConnectionClosed {
                    detail: format!("the request could not be queued: {e}"),
                },
            );
            let removed = self.table().map.remove(&id);
            if let Some(pending) = removed {
                pending.telemetry.end(Outcome::Failed(&err));
            }
            return Err(err);
        }
        Ok(id)
    }

    /// Queues a notification; errors are only logged (a notification has no answer).
    pub(crate) fn notify_with<P: Serialize>(&self, method: &str, params: Option<P>) {
        let Some(out) = self.outbound.get() else {
            return;
        };
        let msg = OutgoingNotification {
            jsonrpc: Version2,
            method,
            params,
        };
        if let Err(e) =
            out.send_with(&mut |buf| serde_json::to_writer(buf, &msg).map_err(io::Error::from))
        {
            tracing::debug!(server = &*self.server, method, error = %e, "notification not sent");
        }
    }

    /// Sends a request of kind `R` with `params` (which carry the era's `_meta` when the
    /// request kind has any: see [`RequestMeta`]) whose answer decodes into `R::Result`: the
    /// one place every request kind but the hot `tools/call` goes through. `head` says what the
    /// transport may mirror of it. The caller awaits the receiver; dropping the [`CallGuard`]
    /// before the answer cancels the request (see [`forget`](Self::forget) for one not to
    /// cancel).
    pub(crate) fn request<R: Request>(
        self: &Arc<Self>,
        head: RequestHead<'_>,
        params: Option<&impl Serialize>,
    ) -> Result<(Receiver<R::Result>, CallGuard), ClientError> {
        self.request_as::<R, R::Result>(head, params)
    }

    /// [`request`](Self::request) for a kind a 2026-07-28 server may answer `input_required`:
    /// the answer is its result or what the server asks for first (see [`super::mrtr`]).
    pub(crate) fn request_answer<R: Request>(
        self: &Arc<Self>,
        head: RequestHead<'_>,
        params: Option<&impl Serialize>,
    ) -> Result<(requests::AnswerReceiver<R::Result>, CallGuard), ClientError> {
        self.request_as::<R, Answer<R::Result>>(head, params)
    }

    /// A request of kind `R` whose answer decodes into `T` (its result, or a wrapper of it).
    fn request_as<R: Request, T: DeserializeOwned + Send + 'static>(
        self: &Arc<Self>,
        head: RequestHead<'_>,
        params: Option<&impl Serialize>,
    ) -> Result<(Receiver<T>, CallGuard), ClientError> {
        let (id, rx) = self.send_typed(R::METHOD, head, params, &mut |_| {})?;
        Ok((rx, CallGuard::new(Arc::clone(self), id, R::METHOD)))
    }

    /// [`request`](Self::request) without the guard: the caller owns the request's fate
    /// (`initialize` is never cancelled, the probe's `server/discover` is forgotten, a
    /// `subscriptions/listen` lives as long as the session). `on_id` is told the request's id
    /// before it can reach the server.
    pub(crate) fn send_typed<R, P>(
        &self,
        method: &'static str,
        head: RequestHead<'_>,
        params: Option<&P>,
        on_id: &mut dyn FnMut(u64),
    ) -> Result<(u64, oneshot::Receiver<Result<R, ClientError>>), ClientError>
    where
        R: DeserializeOwned + Send + 'static,
        P: Serialize,
    {
        let (tx, rx) = oneshot::channel();
        let id = self.send_request(
            method,
            head,
            Expect::Other(Completion::new(tx)),
            None,
            &mut |id, buf| {
                on_id(id);
                write_request(buf, id, method, params)
            },
        )?;
        Ok((id, rx))
    }

    /// The `_meta` a request of this session carries: the era's entries in a modern session.
    pub(crate) fn meta(&self) -> RequestMeta<'_> {
        self.dialect.meta()
    }

    /// The protocol version a request of this session declares in its own `_meta` (modern),
    /// for its [`RequestHead`].
    pub(crate) fn declared_version(&self) -> Option<&str> {
        self.dialect.declared_version()
    }

    /// The connection ended: no more requests.
    pub(crate) fn is_closed(&self) -> bool {
        self.table().closed.is_some()
    }

    /// The features' state for this session (see [`Router::session_state`]).
    pub(crate) fn state<T: 'static>(&self) -> Option<&T> {
        self.state.get::<T>()
    }

    /// The progress handle of request `id`, while it waits for its answer. It leaves the
    /// table's lock before anyone is told: an observer runs the embedder's code, which must be
    /// free to use the client.
    pub(crate) fn progress_of(&self, id: u64) -> Option<ProgressHandle> {
        self.table().map.get(&id).and_then(|p| p.progress.clone())
    }

    /// The session's protocol dialect: the era's `_meta`, the mirrored `x-mcp-header`s.
    pub(crate) fn dialect(&self) -> &Dialect {
        &self.dialect
    }

    /// Whether the session speaks the modern era.
    pub(crate) fn is_modern(&self) -> bool {
        self.dialect.is_modern()
    }

    /// Whether an elicitation handler is plugged in.
    pub(crate) fn has_elicitation(&self) -> bool {
        self.elicitation
    }

    /// The session's telemetry (its protocol version and session digest are set once agreed).
    pub(crate) fn telemetry(&self) -> &SessionTelemetry {
        &self.telemetry
    }

    /// The server→client request stack (for the input requests of a multi round-trip answer).
    pub(crate) fn server_requests(&self) -> ServerRequestService {
        self.server_requests.clone()
    }

    /// Drops request `id` without telling the server.
    pub(crate) fn forget(&self, id: u64) {
        let removed = self.table().map.remove(&id);
        if let Some(pending) = removed {
            pending.telemetry.end(Outcome::Abandoned);
        }
    }

    /// Sends `notifications/initialized`.
    pub(crate) fn initialized(&self) {
        self.notify_with::<()>(method::Initialized::METHOD, None);
    }

    /// The client gave up on request `id` with `err` (an `initialize` out of time): its
    /// telemetry ends with that error, and the server is told as for any abandoned request
    /// (not at all for `initialize`).
    pub(crate) fn gave_up(&self, id: u64, err: &ClientError) {
        self.abandon(id, Outcome::Failed(err));
    }

    /// A caller stopped waiting for `id` (its telemetry ends with `outcome`): forget it and
    /// tell the server.
    pub(crate) fn abandon(&self, id: u64, outcome: Outcome<'_>) {
        let removed = self.table().map.remove(&id);
        let Some(pending) = removed else { return };
        pending.telemetry.end(outcome);
        if pending.method == method::Initialize::METHOD {
            return;
        }
        let may_be_a_task = match &pending.expect {
            Expect::TaskCall(_) => true,
            Expect::CallTool(_) => self.dialect.is_modern() && self.calls.declared,
            Expect::Other(_) => false,
        };
        if may_be_a_task {
            let mut abandoned = self
                .calls
                .abandoned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if abandoned.len() == ABANDONED_CALLS {
                abandoned.pop_front();
            }
            abandoned.push_back(id);
        }
        tracing::debug!(
            server = &*self.server,
            request_id = id,
            method = pending.method,
            "caller stopped waiting; sending notifications/cancelled"
        );
        let Some(out) = self.outbound.get() else {
            return;
        };
        let msg = OutgoingNotification {
            jsonrpc: Version2,
            method: method::Cancelled::METHOD,
            params: Some(CancelledParams {
                request_id: id,
                reason: "the client stopped waiting",
            }),
        };
        let sent = out.send_cancel(&RequestId::from(id), &mut |buf| {
            serde_json::to_writer(buf, &msg).map_err(io::Error::from)
        });
        if let Err(e) = sent {
            tracing::debug!(server = &*self.server, request_id = id, error = %e, "notifications/cancelled not sent");
        }
    }

    /// Whether `id` is a `tools/call` whose caller gave up and that may come back as a task
    /// (then forgotten: one late answer is looked at).
    pub(crate) fn take_abandoned_call(&self, id: &RequestId) -> bool {
        let Some(id) = id.as_u64() else { return false };
        let mut abandoned = self
            .calls
            .abandoned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match abandoned.iter().position(|a| *a == id) {
            Some(at) => {
                abandoned.remove(at);
                true
            }
            None => false,
        }
    }

    /// A late answer to an abandoned `tools/call`, its `result`: the features look at it (one
    /// that created a task nobody follows has it cancelled); `true` when one acted on it.
    pub(crate) fn late_answer(&self, result: &Value) -> bool {
        self.handle()
            .is_some_and(|session| self.router.on_late_answer(&session, result))
    }

    /// Takes the pending entry of request `id` (answered, failed or given up).
    pub(crate) fn take_pending(&self, id: &RequestId) -> Option<(u64, Pending)> {
        let id = id.as_u64()?;
        self.table().map.remove(&id).map(|p| (id, p))
    }

    /// Notes a well-formed answer (a result that decoded, or a JSON-RPC error) to a request
    /// of `method`: an answered `tools/call` shows the server works on this connection.
    pub(crate) fn note_answer(&self, method: &str) {
        self.seen.answers.fetch_add(1, Ordering::Relaxed);
        if method == method::CallTool::METHOD {
            self.seen.answered_call.store(true, Ordering::Relaxed);
        }
    }

    /// How many well-formed answers the server sent on this connection so far.
    pub(crate) fn answers(&self) -> u64 {
        self.seen.answers.load(Ordering::Relaxed)
    }

    /// Resolves with the first line this session read that was not a JSON-RPC message when
    /// `grace` has passed since it and no JSON-RPC message came, before it or since: what a
    /// program that is not an MCP server printed. Pending for ever otherwise.
    pub(crate) async fn not_mcp(&self, grace: std::time::Duration) -> Arc<str> {
        let mut noise = self.seen.noise.subscribe();
        let line = noise
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|l| l.clone());
        if let Some(line) = line {
            tokio::time::sleep(grace).await;
            if self.seen.messages.load(Ordering::Acquire) == 0 {
                return line;
            }
        }
        std::future::pending().await
    }

    /// Whether the server answered a `tools/call` on this connection.
    pub(crate) fn answered_a_call(&self) -> bool {
        self.seen.answered_call.load(Ordering::Relaxed)
    }

    pub(crate) fn protocol_violation(
        &self,
        request: Option<RequestRef>,
        detail: String,
    ) -> ClientError {
        ClientError::new(
            Arc::clone(&self.server),
            request,
            Kind::ProtocolViolation { detail },
        )
    }

    /// This session, owned (for a task that outlives a callback's borrow).
    pub(crate) fn handle(&self) -> Option<Arc<RpcSession>> {
        self.this.upgrade()
    }

    /// Fails every pending request and refuses new ones.
    fn close(&self, reason: &CloseReason) {
        let (drained, first): (Vec<(u64, Pending)>, bool) = {
            let mut table = self.table();
            let first = table.closed.is_none();
            if first {
                table.closed = Some(reason.clone());
            }
            (table.map.drain().collect(), first)
        };
        if first {
            self.ended.send_replace(true);
            self.telemetry.ended(match () {
                () if reason.requested => None,
                () if reason.exit_status().is_some() => Some("server_exited"),
                () => Some("connection_closed"),
            });
        }
        for (id, mut pending) in drained {
            let request = Self::request_ref(id, pending.method);
            if reason.requested && pending.method == method::Listen::METHOD {
                // A subscription lives as long as its session: closing it is its normal end.
                std::mem::replace(&mut pending.telemetry, RequestTelemetry::none())
                    .end(Outcome::Answered);
            }
            pending.fail(self.closed_error(reason, Some(request)));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
