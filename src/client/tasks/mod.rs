//! Following a task: a `tools/call` the server answered with a task, driven to its end so that
//! everything above the client sees one call and one [`ToolResult`].
//!
//! # Which calls become tasks
//! [`ClientOptions::tasks`](super::ClientOptions::tasks) (`local.toml` `[mcp.<key>] tasks`):
//! - **2025-11-25**: a call whose [`ToolCall::task`] is set (the session sets it from the
//!   tool's `execution.taskSupport` and the mode) carries `params.task` with
//!   [`ClientOptions::task_ttl`](super::ClientOptions::task_ttl); the server answers
//!   `{"task": …}`.
//! - **2026-07-28**: unless the mode is `off`, every request declares the tasks extension in
//!   its `_meta` capabilities, and the server may answer any `tools/call` with a task
//!   (`resultType: "task"`); with `off`, a server that can only run a tool as a task refuses
//!   it with -32021, which becomes [`ErrorKind::MissingCapability`].
//!
//! # The loop
//! - `tasks/get` at the server's `pollInterval`, clamped to [`POLL_MIN`]..[`POLL_MAX`] (a 0
//!   does not spin, an hour does not stall), [`DEFAULT_POLL`] when it names none; woken
//!   early (never sooner than [`POLL_MIN`] after the last one) by a
//!   `notifications/tasks/status` for the task (2025-11-25; a 2026-07-28
//!   `notifications/tasks`, which a server sends only on a `subscriptions/listen` the client
//!   does not open for tasks, would be heard the same way). Each `tasks/get` is bounded by
//!   [`ClientOptions::request_timeout`](super::ClientOptions::request_timeout); over
//!   Streamable HTTP a 2026-07-28 one names the task in `Mcp-Name`.
//! - Each change of status or status message and each `notifications/progress` of the call
//!   (its progress token stays valid for the whole task) reaches the call's
//!   [`ProgressHandle`]: it keeps a progress-aware timeout alive (within the stack's progress
//!   cap) and shows on `kaged-mcp call`'s progress line. A poll that finds nothing new is not
//!   progress: a task stuck in `working` times out like a quiet server, but only at a poll:
//!   when the server's `pollInterval` is longer than what is left of the idle limit, the
//!   limit is held over the wait and the poll's answer
//!   ([`ProgressHandle::hold_until`](kaged_mcp_layers::timeout::ProgressHandle::hold_until)),
//!   so it never fires between two polls the server asked for, and a timeout that comes at a
//!   poll says the server's interval was the pace.
//! - `input_required`: 2025-11-25 sends `tasks/result` at once, and the server's requests
//!   (`elicitation/create` with the task's `related-task` `_meta`) arrive on the connection and
//!   pass the server-request stack as any other (elicitation to the embedder's handler,
//!   sampling refused, the rest refused); 2026-07-28 answers the inlined `inputRequests` as a
//!   multi round-trip answer ([`mrtr`](super::mrtr)), each key once, with `tasks/update`.
//! - The end: `completed` is the tool's result (an `isError: true` result is a tool error, as
//!   from a plain call); `failed` is [`ErrorKind::TaskFailed`] (2025-11-25 reads the outcome
//!   with `tasks/result`, which may also be a result with `isError: true`); `cancelled` is
//!   [`ErrorKind::TaskCancelled`].
//!
//! # Nothing runs twice, nothing is left running
//! - The tool is called once, and the error of a call whose task was created is marked
//!   [`Final`](kaged_mcp_layers::retry::Final), so the retry layer never calls it again. A
//!   `tasks/get`, `tasks/result` or `tasks/update` that fails on the way (a cut connection,
//!   an expired HTTP session, no answer in time, a JSON-RPC error other than -32602) is asked
//!   again after a pause, on a new session if the old one ended, [`MAX_POLL_FAILURES`] times
//!   in a row at most; then the call fails with [`ErrorKind::TaskLost`]. A task the server
//!   no longer knows (-32602) or a stdio server that exited (its tasks died with it) fails
//!   the call at once, with `TaskLost`. Answers the handlers gave are sent again as they are:
//!   nobody is asked twice.
//! - A call that is dropped before the task ended (its timeout fired, its caller gave up) or
//!   that the client gave up on (input it refuses, requests that kept failing) sends
//!   `tasks/cancel` for it, on the current session or, if that ended, on the next one; the
//!   acknowledgement is awaited in the background for at most the request timeout. A
//!   `tools/call` whose caller gave up before the answer and that comes back as a task (the
//!   session remembers the last 64 such calls) has its task cancelled too.
//!
//! [`ProgressHandle`]: kaged_mcp_layers::timeout::ProgressHandle

mod board;
mod cancel;
mod ledger;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

pub(crate) use self::board::TaskBoard;
pub use self::board::TaskCounts;
use self::board::Watch;
use self::cancel::Ticket;
use self::cancel::{cancel_orphan, late_task_id};
pub use self::ledger::{Unconfirmed, UnconfirmedCancel};
use super::call::ToolCall;
use super::error::{ClientError, RequestRef};
use super::router::Router;
use super::rpc::RpcSession;
use crate::client::{ErrorKind, Kind};
use crate::protocol::method::{
    GetTask, Progress, Request, TaskResult, TaskStatus as TaskStatusChanged, TasksChanged,
    UpdateTask,
};
use crate::protocol::notifications::ProgressParams;
use crate::protocol::tasks::{TaskIdParams, TaskState, TaskStatus, TaskUpdateParams};
use crate::protocol::{CallAnswer, InputRequired, ToolResult};
use crate::transport::RequestHead;

/// The shortest wait between two `tasks/get` of one task, whatever the server asks.
pub const POLL_MIN: Duration = Duration::from_millis(50);
/// The longest wait between two `tasks/get` of one task, whatever the server asks.
pub const POLL_MAX: Duration = Duration::from_secs(5);
/// The wait between two `tasks/get` when the server names no `pollInterval`.
pub const DEFAULT_POLL: Duration = Duration::from_millis(500);
/// `tasks/get` requests of one task that may fail in a row (cut, expired, unanswered) before
/// the call fails.
pub const MAX_POLL_FAILURES: u32 = 5;

/// The wait before the next `tasks/get`.
pub(crate) fn poll_interval(state: &TaskState) -> Duration {
    match state.poll_interval {
        // Clamped before the conversion, which would panic on a value too large for a
        // `Duration`.
        Some(ms) if ms.is_finite() && ms >= 0.0 => {
            let ms = ms.clamp(
                POLL_MIN.as_secs_f64() * 1000.0,
                POLL_MAX.as_secs_f64() * 1000.0,
            );
            Duration::from_secs_f64(ms / 1000.0)
        }
        _ => DEFAULT_POLL,
    }
}

/// The `tools/call` a task came from, as the follower needs it.
pub(crate) struct Origin {
    /// The server's label.
    pub(crate) server: Arc<str>,
    /// The call (its name and progress handle).
    pub(crate) call: ToolCall,
    /// The `tools/call` request that created the task.
    pub(crate) request: RequestRef,
}

/// The head of a task request `method` about `task_id` on `session`: the task id is the
/// request's name (mirrored by Streamable HTTP as `Mcp-Name`), the modern version declared.
pub(super) fn task_head<'a, R: Request>(
    task_id: &'a str,
    session: &'a RpcSession,
) -> RequestHead<'a> {
    RequestHead::new(R::METHOD)
        .name(Some(task_id))
        .protocol_version(session.declared_version())
}

/// Registers progress and task status: `notifications/progress` reaches the request its token
/// names (our request id), or the task call that holds it after its request was answered; a
/// task's status notification wakes its follower.
pub(super) fn register(router: &mut Router, tasks: &Arc<TaskBoard>) {
    // The client's board, shared by its sessions, is each session's state.
    let tasks = Arc::clone(tasks);
    router.session_state_with(move || Arc::clone(&tasks));
    // A call given up on that comes back as a task: nobody follows it, so it is cancelled.
    router.late_answer(|session, result| match late_task_id(result) {
        Some(task_id) => {
            cancel_orphan(session, task_id);
            true
        }
        None => false,
    });
    router.notification::<Progress, ProgressParams>(|session, params| {
        let Some(id) = params.progress_token.as_u64() else {
            return;
        };
        let handle = session
            .progress_of(id)
            .or_else(|| board(session)?.progress_for_token(session.generation, id));
        if let Some(handle) = handle {
            if handle.is_observed() {
                handle.report(&kaged_mcp_layers::timeout::Progress::new(
                    params.progress,
                    params.total,
                    params.message,
                ));
            } else {
                handle.notify();
            }
        }
    });
    for status in [
        status_changed::<TaskStatusChanged>,
        status_changed::<TasksChanged>,
    ] {
        status(router);
    }
}

/// Registers the task status notification `N` (one per era).
fn status_changed<N: crate::protocol::method::Notification>(router: &mut Router) {
    router.notification::<N, TaskState>(|session, state| {
        if let Some(board) = board(session) {
            board.status_notified(&state);
        }
    });
}

/// The tasks the client follows (shared by its sessions): every session of a client holds
/// them as its state ([`register`]); a session built without the client's features has none.
pub(super) fn board(session: &RpcSession) -> Option<&Arc<TaskBoard>> {
    session.state::<Arc<TaskBoard>>()
}

/// Follows the task `created` (the answer to `origin`, sent on `session`) to its end: see the
/// [module docs](self).
pub(crate) async fn follow(
    session: Arc<RpcSession>,
    origin: Origin,
    created: TaskState,
) -> Result<ToolResult, ClientError> {
    let Some(board) = board(&session).map(Arc::clone) else {
        return Err(ClientError::new(
            Arc::clone(&origin.server),
            Some(origin.request.clone()),
            Kind::TaskLost {
                task_id: Box::from(created.task_id.as_str()),
                detail: "this session follows no tasks".into(),
            },
        ));
    };
    let task_id: Arc<str> = Arc::from(created.task_id.as_str());
    let token = origin
        .request
        .id
        .as_u64()
        .map_or((u64::MAX, u64::MAX), |id| (session.generation, id));
    let watch = Arc::new(Watch::new(origin.call.progress.clone(), token));
    let mut ticket = Ticket::new(&board, &task_id, Arc::clone(&watch), &session);
    tracing::debug!(
        server = &*session.server,
        tool = %origin.call.name,
        task_id = %task_id,
        status = %created.status,
        "tools/call runs as a task"
    );
    watch.report(&created);
    let follower = Follower {
        board: &board,
        watch: &watch,
        task_id: &task_id,
        origin: &origin,
        modern: session.is_modern(),
        gone: AtomicBool::new(false),
    };
    let outcome = follower.run(session, created, &mut ticket).await;
    ticket.end(&outcome, follower.gone.load(Ordering::Relaxed));
    outcome
}

/// What one follow needs at hand.
struct Follower<'a> {
    board: &'a Arc<TaskBoard>,
    watch: &'a Arc<Watch>,
    task_id: &'a Arc<str>,
    origin: &'a Origin,
    modern: bool,
    /// Set when the task is known to be gone from the server (it no longer knows it, or the
    /// process that ran it exited): there is nothing to cancel.
    gone: AtomicBool,
}

impl Follower<'_> {
    async fn run(
        &self,
        mut session: Arc<RpcSession>,
        mut state: TaskState,
        ticket: &mut Ticket,
    ) -> Result<ToolResult, ClientError> {
        let mut answered: HashSet<String> = HashSet::new();
        // Answers given by the handlers but not yet acknowledged by the server: sent again as
        // they are (the user is not asked twice).
        let mut unsent: Option<Map<String, Value>> = None;
        // `tasks/get` failures in a row, and `tasks/result` (or `tasks/update`) failures in a
        // row: a good `tasks/get` does not clear the second count, so a request that keeps
        // failing while the task waits for input still ends the call.
        let (mut failures, mut result_failures) = (0u32, 0u32);
        // Whether `state` is a `tasks/get` answer (else the creation answer): a 2026-07-28
        // task that ended carries its outcome in a `tasks/get` answer only.
        let mut from_get = false;
        let mut last_get: Option<tokio::time::Instant> = None;
        loop {
            let inline = !self.modern
                || from_get
                || state.result.is_some()
                || state.error.is_some()
                || state.status == TaskStatus::Cancelled;
            if state.status.is_terminal() && inline {
                return self.outcome(&mut session, state, ticket).await;
            }
            if state.status == TaskStatus::InputRequired {
                let answer = if self.modern {
                    let asked = state.input_requests.take().unwrap_or_default();
                    let fresh: Map<String, Value> = asked
                        .into_iter()
                        .filter(|(k, _)| {
                            !answered.contains(k)
                                && !unsent.as_ref().is_some_and(|u| u.contains_key(k))
                        })
                        .collect();
                    if !fresh.is_empty() {
                        let mut responses = self.resolve(&session, fresh).await?;
                        if let Some(earlier) = unsent.take() {
                            responses.extend(earlier);
                        }
                        unsent = Some(responses);
                    }
                    match unsent.take() {
                        None => {
                            self.pause(&state, last_get).await;
                            Ok(None)
                        }
                        Some(responses) => match self.update(&session, &responses).await {
                            Ok(()) => {
                                answered.extend(responses.into_iter().map(|(k, _)| k));
                                Ok(None)
                            }
                            Err(e) => {
                                unsent = Some(responses);
                                Err(e)
                            }
                        },
                    }
                } else {
                    // The server's requests arrive while `tasks/result` waits; its answer is
                    // the outcome.
                    self.legacy_result(&session, false).await.map(Some)
                };
                match answer {
                    Ok(Some(outcome)) => return outcome,
                    Ok(None) => result_failures = 0,
                    Err(e) => {
                        self.lost_or_again(&e, &mut result_failures)?;
                        self.pause(&state, last_get).await;
                        ticket.next_session(&mut session).await?;
                    }
                }
            } else if !state.status.is_terminal() {
                self.pause(&state, last_get).await;
            }
            last_get = Some(tokio::time::Instant::now());
            let got = self.get(&session).await;
            // The poll a hold covered is answered: from here the idle limit counts again
            // (a poll that saw no change after the limit passed ends the call now).
            if let Some(h) = &self.watch.progress {
                h.release();
            }
            match got {
                Ok(next) => {
                    failures = 0;
                    from_get = true;
                    self.watch.report(&next);
                    state = next;
                }
                Err(e) => {
                    self.lost_or_again(&e, &mut failures)?;
                    ticket.next_session(&mut session).await?;
                }
            }
        }
    }

    /// Waits the poll interval, or less when a status notification arrives, but never less
    /// than [`POLL_MIN`] since the last `tasks/get` (`last_get`): a server that floods
    /// notifications is not polled faster.
    async fn pause(&self, state: &TaskState, last_get: Option<tokio::time::Instant>) {
        let wait = poll_interval(state);
        self.hold_for(wait);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = self.watch.wake.notified() => {
                if let Some(last) = last_get {
                    tokio::time::sleep_until(last + POLL_MIN).await;
                }
            }
        }
    }

    /// The server asked to be polled only after `wait`: when the call's idle limit would
    /// pass before that poll (and its answer) could see a change, the limit is held until
    /// then, so it never fires between two polls the server asked for. Not when the last
    /// poll already found the task unchanged past the limit: the call then times out, at the
    /// server's pace, saying so ([`ProgressHandle::hold_until`]).
    fn hold_for(&self, wait: Duration) {
        let Some(h) = &self.watch.progress else {
            return;
        };
        let Some(idle) = h.idle_limit() else {
            return;
        };
        let now = tokio::time::Instant::now();
        let limit = h.last_progress().unwrap_or_else(|| h.created()) + idle;
        if limit <= now || limit >= now + wait {
            return;
        }
        h.hold_until(now + wait + self.board.request_timeout, wait);
    }

    /// Whether a failed `tasks/get` or `tasks/result` may be asked again: `Ok` counts it,
    /// `Err` is the call's end.
    fn lost_or_again(&self, e: &ClientError, failures: &mut u32) -> Result<(), ClientError> {
        let lost = |detail: String| {
            ClientError::new(
                Arc::clone(&self.origin.server),
                Some(self.origin.request.clone()),
                Kind::TaskLost {
                    task_id: Box::from(&**self.task_id),
                    detail: detail.into(),
                },
            )
        };
        match e.parts() {
            Kind::JsonRpc { code, message, .. }
                if *code == crate::protocol::jsonrpc::INVALID_PARAMS =>
            {
                self.gone.store(true, Ordering::Relaxed);
                let method = e.request().map_or("the request", |r| r.method);
                Err(lost(format!(
                    "the server no longer knows it ({method} answered JSON-RPC error {code}: {message})"
                )))
            }
            Kind::MissingCapability { .. } => {
                self.gone.store(true, Ordering::Relaxed);
                Err(lost(e.reason()))
            }
            Kind::Exited { .. } => {
                self.gone.store(true, Ordering::Relaxed);
                Err(lost(format!(
                    "the server exited and its tasks with it: {}",
                    e.reason()
                )))
            }
            // Worth asking again: the request failed on the way, or the server refused it
            // for now (an internal error, a rate limit); the task may well be running.
            Kind::SendFailed { .. }
            | Kind::ConnectionClosed { .. }
            | Kind::RequestTimeout { .. }
            | Kind::BackingOff { .. }
            | Kind::JsonRpc { .. } => {
                *failures += 1;
                tracing::debug!(
                    server = &*self.origin.server,
                    task_id = %self.task_id,
                    failures = *failures,
                    error = %e,
                    "asking for the task failed; asked again"
                );
                if *failures >= MAX_POLL_FAILURES {
                    Err(lost(format!(
                        "{MAX_POLL_FAILURES} requests for it failed in a row, the last: {}",
                        e.reason()
                    )))
                } else {
                    Ok(())
                }
            }
            _ => Err(e.clone()),
        }
    }

    /// One `tasks/get`, bounded by the request timeout.
    async fn get(&self, session: &Arc<RpcSession>) -> Result<TaskState, ClientError> {
        let params = TaskIdParams {
            task_id: self.task_id,
            meta: session.meta(),
        };
        let head = task_head::<GetTask>(self.task_id, session);
        let (rx, guard) = session.request::<GetTask>(head, Some(&params))?;
        guard.answer_within(rx, self.board.request_timeout).await
    }

    /// 2026-07-28: the answers to `inputs`, from the same handlers as a multi round-trip
    /// call's ([`mrtr`](super::mrtr)).
    async fn resolve(
        &self,
        session: &Arc<RpcSession>,
        inputs: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        tracing::debug!(
            server = &*session.server,
            task_id = %self.task_id,
            inputs = inputs.len(),
            "the task asks for input"
        );
        let asked = InputRequired {
            input_requests: inputs,
            request_state: None,
        };
        let retry =
            super::mrtr::resolve(Arc::clone(session), self.origin.request.clone(), asked).await?;
        Ok(retry.responses)
    }

    /// 2026-07-28: sends `responses` with `tasks/update`.
    async fn update(
        &self,
        session: &Arc<RpcSession>,
        responses: &Map<String, Value>,
    ) -> Result<(), ClientError> {
        let params = TaskUpdateParams {
            task_id: self.task_id,
            input_responses: responses,
            meta: session.meta(),
        };
        let head = task_head::<UpdateTask>(self.task_id, session);
        let (rx, guard) = session.request::<UpdateTask>(head, Some(&params))?;
        guard
            .answer_within(rx, self.board.request_timeout)
            .await
            .map(drop)
    }

    /// 2025-11-25: `tasks/result`, which waits for the end: the tool's result, or the JSON-RPC
    /// error it ended with ([`ErrorKind::TaskFailed`]). `Err` of the outer result: the request
    /// itself failed on the way (asked again by the caller). `bounded`: the task has ended, so
    /// the answer is due at once and waited for at most the request timeout (while the task
    /// waits for input, `tasks/result` waits with it, unbounded).
    async fn legacy_result(
        &self,
        session: &Arc<RpcSession>,
        bounded: bool,
    ) -> Result<Result<ToolResult, ClientError>, ClientError> {
        let params = TaskIdParams {
            task_id: self.task_id,
            meta: session.meta(),
        };
        let head = task_head::<TaskResult>(self.task_id, session);
        let (rx, mut guard) = session.request::<TaskResult>(head, Some(&params))?;
        let request = guard.request();
        let answer = if bounded {
            match guard.answer_within(rx, self.board.request_timeout).await {
                Err(e) if e.kind() != ErrorKind::JsonRpc => return Err(e),
                answered => Ok(answered),
            }
        } else {
            let answer = rx.await;
            guard.disarm();
            answer
        };
        match answer {
            Ok(Ok(CallAnswer::Complete(result))) => Ok(Ok(result)),
            Ok(Ok(_)) => Ok(Err(session.protocol_violation(
                Some(request),
                "tasks/result answered something other than a tool result".into(),
            ))),
            Ok(Err(e)) if e.kind() == ErrorKind::JsonRpc => {
                let (code, message, data) = (
                    e.code().unwrap_or_default(),
                    e.message().unwrap_or_default(),
                    e.data().cloned(),
                );
                Ok(Err(ClientError::new(
                    Arc::clone(&session.server),
                    Some(self.origin.request.clone()),
                    Kind::TaskFailed {
                        task_id: Box::from(&**self.task_id),
                        code,
                        message: message.into(),
                        data: data.map(Box::new),
                    },
                )))
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ClientError::new(
                Arc::clone(&session.server),
                Some(request),
                Kind::ConnectionClosed {
                    detail: "the session ended without answering".into(),
                },
            )),
        }
    }

    /// The end of a task in a terminal state.
    async fn outcome(
        &self,
        session: &mut Arc<RpcSession>,
        state: TaskState,
        ticket: &mut Ticket,
    ) -> Result<ToolResult, ClientError> {
        let server = Arc::clone(&session.server);
        if state.status == TaskStatus::Cancelled {
            return Err(ClientError::new(
                server,
                Some(self.origin.request.clone()),
                Kind::TaskCancelled {
                    task_id: Box::from(&**self.task_id),
                    message: state.status_message.map(String::into_boxed_str),
                },
            ));
        }
        if self.modern {
            return match state.status {
                TaskStatus::Completed => {
                    let raw = state.result.ok_or_else(|| {
                        session.protocol_violation(
                            Some(self.origin.request.clone()),
                            format!("task {} completed without a result", self.task_id),
                        )
                    })?;
                    serde_json::from_value::<ToolResult>(raw).map_err(|e| {
                        session.protocol_violation(
                            Some(self.origin.request.clone()),
                            format!(
                                "the result of task {} is not a tool result: {e}",
                                self.task_id
                            ),
                        )
                    })
                }
                _ => {
                    let error = state
                        .error
                        .unwrap_or_else(|| crate::protocol::tasks::TaskError {
                            code: 0,
                            message: state.status_message.clone().unwrap_or_default(),
                            data: None,
                        });
                    Err(ClientError::new(
                        server,
                        Some(self.origin.request.clone()),
                        Kind::TaskFailed {
                            task_id: Box::from(&**self.task_id),
                            code: error.code,
                            message: error.message.into(),
                            data: error.data.map(Box::new),
                        },
                    ))
                }
            };
        }
        // 2025-11-25: the outcome is read with `tasks/result`, asked again like `tasks/get`
        // (after a pause).
        let mut failures = 0u32;
        loop {
            match self.legacy_result(session, true).await {
                Ok(answer) => return answer,
                Err(e) => {
                    self.lost_or_again(&e, &mut failures)?;
                    tokio::time::sleep(poll_interval(&state)).await;
                    ticket.next_session(session).await?;
                }
            }
        }
    }
}

/// The client's capabilities as a 2026-07-28 request declares them: `capabilities`, plus the
/// tasks extension under `extensions` when `tasks` is on.
pub(crate) fn modern_capabilities(
    mut capabilities: Map<String, Value>,
    tasks: bool,
) -> Map<String, Value> {
    if tasks {
        crate::protocol::lifecycle::declare_extension(
            &mut capabilities,
            crate::protocol::tasks::TASKS_EXTENSION,
        );
    }
    capabilities
}

/// Whether a server runs `tools/call` as a task for this client: a 2025-11-25 server declares
/// `capabilities.tasks.requests.tools.call`; a 2026-07-28 server declares the extension under
/// `capabilities.extensions`.
pub(crate) fn server_runs_tool_tasks(capabilities: &Value, modern: bool) -> bool {
    if modern {
        capabilities
            .get("extensions")
            .and_then(|e| e.get(crate::protocol::tasks::TASKS_EXTENSION))
            .is_some()
    } else {
        capabilities
            .get("tasks")
            .and_then(|t| t.get("requests"))
            .and_then(|r| r.get("tools"))
            .and_then(|t| t.get("call"))
            .is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(poll: Option<f64>) -> TaskState {
        let mut s: TaskState =
            serde_json::from_str(r#"{"taskId":"t","status":"working"}"#).unwrap();
        s.poll_interval = poll;
        s
    }

    #[test]
    fn the_poll_interval_is_the_servers_within_bounds() {
        assert_eq!(
            poll_interval(&state(Some(250.0))),
            Duration::from_millis(250)
        );
        assert_eq!(poll_interval(&state(Some(0.0))), POLL_MIN);
        assert_eq!(poll_interval(&state(Some(3_600_000.0))), POLL_MAX);
        assert_eq!(poll_interval(&state(Some(1e300))), POLL_MAX);
        assert_eq!(poll_interval(&state(Some(f64::MAX))), POLL_MAX);
        assert_eq!(poll_interval(&state(Some(f64::INFINITY))), DEFAULT_POLL);
        assert_eq!(poll_interval(&state(Some(-5.0))), DEFAULT_POLL);
        assert_eq!(poll_interval(&state(Some(f64::NAN))), DEFAULT_POLL);
        assert_eq!(poll_interval(&state(None)), DEFAULT_POLL);
    }

    #[test]
    fn a_server_runs_tool_tasks_by_its_eras_capability() {
        let legacy = serde_json::json!({"tasks": {"requests": {"tools": {"call": {}}}}});
        assert!(server_runs_tool_tasks(&legacy, false));
        assert!(!server_runs_tool_tasks(&legacy, true));
        assert!(!server_runs_tool_tasks(
            &serde_json::json!({"tasks": {"list": {}}}),
            false
        ));
        let modern = serde_json::json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        assert!(server_runs_tool_tasks(&modern, true));
        assert!(!server_runs_tool_tasks(&modern, false));
    }

    #[test]
    fn the_extension_is_declared_only_when_tasks_are_on() {
        let on = modern_capabilities(Map::new(), true);
        assert_eq!(
            Value::Object(on),
            serde_json::json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
        assert!(modern_capabilities(Map::new(), false).is_empty());
    }
}
