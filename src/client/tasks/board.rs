//! The tasks a client follows, shared by its sessions ([`TaskBoard`]): a [`Watch`] per task
//! (woken by a status notification, reporting changes to the call's progress handle, found by
//! its progress token), the counters `status` shows ([`TaskCounts`]), and the way to the
//! client's next session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use kaged_mcp_layers::timeout::{Progress, ProgressHandle};
use tokio::sync::Notify;

use super::super::error::ClientError;
use super::super::rpc::RpcSession;
use super::super::Shared;
use super::ledger::{Ledger, UnconfirmedCancel};
use crate::client::Kind;
use crate::protocol::tasks::{TaskState, TaskStatus};

/// How many tasks a server ran for this client: see [`McpClient::task_counts`](crate::client::McpClient::task_counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskCounts {
    /// Tasks being followed now.
    pub in_flight: u64,
    /// Tasks that ended `completed` (with a result, `isError` or not).
    pub completed: u64,
    /// Tasks that ended with an error: `failed` with a JSON-RPC error, lost, or given up by
    /// the client (a 2025-11-25 task that ended `failed` with a tool result counts as
    /// completed: the call returns that result).
    pub failed: u64,
    /// Tasks cancelled: by the server, or by the client when the call was dropped.
    pub cancelled: u64,
}

/// What the client's sessions share about tasks: the tasks being followed (to wake them on a
/// status notification and to route their progress), the counters, the way to a new session.
pub(crate) struct TaskBoard {
    watches: Mutex<HashMap<String, Arc<Watch>>>,
    pub(super) in_flight: AtomicU64,
    pub(super) completed: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) cancelled: AtomicU64,
    /// The client, to reach a session after the one a task was created on ended (set once the
    /// client exists: it holds the board).
    client: OnceLock<Weak<Shared>>,
    /// Bound on each request of a task and on the `tasks/cancel` acknowledgement.
    pub(super) request_timeout: Duration,
    /// The `tasks/cancel` requests sent and not confirmed yet.
    pub(super) cancels: Ledger,
}

impl std::fmt::Debug for TaskBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskBoard")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

/// One task being followed.
pub(super) struct Watch {
    /// Notified by a status notification for the task.
    pub(super) wake: Notify,
    pub(super) progress: Option<ProgressHandle>,
    /// The session generation and request id of the `tools/call` that created it: its
    /// progress token.
    token: (u64, u64),
    /// The status and message last reported, so a notification and the poll that follows it
    /// report a change once, and the newest `lastUpdatedAt` seen, so a stale state (a poll's
    /// answer that a status notification overtook) does not take the status back.
    last: Mutex<Reported>,
}

/// What a [`Watch`] last reported, and the newest state it saw.
#[derive(Debug, Default)]
struct Reported {
    /// The status and message last reported.
    status: Option<(TaskStatus, Option<String>)>,
    /// The newest `lastUpdatedAt` seen.
    newest: Option<String>,
}

impl Watch {
    /// A watch reporting to `progress`, found by the progress token `token`.
    pub(super) fn new(progress: Option<ProgressHandle>, token: (u64, u64)) -> Self {
        Self {
            wake: Notify::new(),
            progress,
            token,
            last: Mutex::new(Reported::default()),
        }
    }

    /// Reports `state` to the call's progress handle when its status or message changed. A
    /// poll that finds nothing new is not progress: a task stuck in `working` times out like a
    /// call whose server went quiet.
    pub(super) fn report(&self, state: &TaskState) {
        let Some(handle) = &self.progress else { return };
        let changed = {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            let Reported {
                status: reported,
                newest,
            } = &mut *last;
            // ISO 8601 times of one server compare as text.
            let stale = matches!(
                (&state.last_updated_at, &*newest),
                (Some(at), Some(seen)) if at < seen
            );
            if let Some(at) = &state.last_updated_at {
                if !stale {
                    *newest = Some(at.clone());
                }
            }
            let now = (state.status, state.status_message.clone());
            if stale || reported.as_ref() == Some(&now) {
                false
            } else {
                *reported = Some(now);
                true
            }
        };
        if changed {
            report(handle, state);
        }
    }
}

impl TaskBoard {
    /// A board whose task requests are bounded by `request_timeout`.
    pub(crate) fn new(request_timeout: Duration) -> Self {
        Self {
            watches: Mutex::default(),
            in_flight: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            client: OnceLock::new(),
            request_timeout,
            cancels: Ledger::default(),
        }
    }

    /// Ties the board to its client (once, at the client's creation).
    pub(crate) fn bind(&self, client: Weak<Shared>) {
        let _ = self.client.set(client);
    }

    /// The counters now.
    pub(crate) fn counts(&self) -> TaskCounts {
        TaskCounts {
            in_flight: self.in_flight.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
        }
    }

    /// Waits at most `limit` until every `tasks/cancel` sent got its answer or failed; `true`
    /// when none is awaited any more.
    pub(crate) async fn settle_cancels(&self, limit: Duration) -> bool {
        self.cancels.wait(limit).await
    }

    /// Takes the `tasks/cancel` requests of `server` not confirmed (see
    /// [`McpClient::unconfirmed_cancels`](crate::client::McpClient::unconfirmed_cancels)).
    pub(crate) fn unconfirmed_cancels(&self, server: &str) -> Vec<UnconfirmedCancel> {
        self.cancels.take(server)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Watch>>> {
        self.watches.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A status notification for `state.task_id`: the follower polls at once, and the call's
    /// progress hears of it. Unknown tasks are ignored.
    pub(crate) fn status_notified(&self, state: &TaskState) {
        let watch = self.lock().get(&state.task_id).cloned();
        if let Some(watch) = watch {
            watch.report(state);
            watch.wake.notify_one();
        }
    }

    /// The progress handle of the task whose `tools/call` was request `id` of session
    /// `generation` (its progress token outlives the request).
    pub(crate) fn progress_for_token(&self, generation: u64, id: u64) -> Option<ProgressHandle> {
        self.lock()
            .values()
            .find(|w| w.token == (generation, id))
            .and_then(|w| w.progress.clone())
    }

    /// A session to go on with after `stale` ended (or failed a request): the client's current
    /// one, started again if need be.
    pub(super) async fn next_session(
        &self,
        stale: &Arc<RpcSession>,
    ) -> Result<Arc<RpcSession>, ClientError> {
        if !stale.is_closed() {
            return Ok(Arc::clone(stale));
        }
        let Some(client) = self.client.get().and_then(Weak::upgrade) else {
            return Err(ClientError::of(
                &stale.server,
                Kind::ConnectionClosed {
                    detail: "the client was dropped".into(),
                },
            ));
        };
        client.session().await
    }
}

/// Hands a task's status to the call's progress handle: its status and message as a
/// [`Progress`] whose `message` reads `working: <the server's words>`.
fn report(handle: &ProgressHandle, state: &TaskState) {
    if handle.is_observed() {
        let message = match &state.status_message {
            Some(m) if !m.is_empty() => format!("{}: {m}", state.status),
            _ => state.status.to_string(),
        };
        handle.report(&Progress::task_status(state.status.as_str(), message));
    } else {
        handle.notify();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: &str, message: &str, at: Option<&str>) -> TaskState {
        let mut s: TaskState = serde_json::from_value(serde_json::json!({
            "taskId": "t", "status": status, "statusMessage": message,
        }))
        .unwrap();
        s.last_updated_at = at.map(str::to_owned);
        s
    }

    #[test]
    fn a_change_is_reported_once_and_a_stale_state_never_takes_it_back() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&seen);
        let handle = ProgressHandle::observed(Arc::new(move |p: &Progress| {
            keep.lock()
                .unwrap()
                .push(p.message.clone().unwrap_or_default());
        }));
        let watch = Watch::new(Some(handle), (0, 0));
        watch.report(&state(
            "working",
            "Gathering",
            Some("2026-12-02T10:00:01.000Z"),
        ));
        watch.report(&state(
            "working",
            "Gathering",
            Some("2026-12-02T10:00:01.000Z"),
        ));
        // A notification of the next step, then the answer of a poll sent before it.
        watch.report(&state(
            "working",
            "Analyzing",
            Some("2026-12-02T10:00:02.000Z"),
        ));
        watch.report(&state(
            "working",
            "Gathering",
            Some("2026-12-02T10:00:01.000Z"),
        ));
        // No time: taken as it comes (a 2026-07-28 creation answer has none).
        watch.report(&state("working", "Synthesizing", None));
        watch.report(&state(
            "completed",
            "Done",
            Some("2026-12-02T10:00:04.000Z"),
        ));
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "working: Gathering",
                "working: Analyzing",
                "working: Synthesizing",
                "completed: Done"
            ]
        );
    }
}
