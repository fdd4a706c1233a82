//! Leaving nothing running: the [`Ticket`] a follow holds (registered on the board while it
//! lives, counted when it ends, cancelling the task when dropped before the task ended), and
//! `tasks/cancel` for a task nobody follows any more.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::de::IgnoredAny;
use serde_json::Value;

use super::super::error::ClientError;
use super::super::rpc::{CallGuard, RpcSession};
use super::board::{TaskBoard, Watch};
use super::ledger::Unconfirmed;
use crate::client::ErrorKind;
use crate::protocol::method::CancelTask;
use crate::protocol::tasks::TaskIdParams;
use crate::protocol::ToolResult;

/// A task being followed: registered on the board (status notifications, progress, the
/// counters) while it lives; dropped before the task ended, it sends `tasks/cancel`.
pub(super) struct Ticket {
    board: Arc<TaskBoard>,
    task_id: Arc<str>,
    /// The session to send `tasks/cancel` on (the latest the follower used).
    pub(super) session: Arc<RpcSession>,
    /// Still to cancel if dropped: the task did not end and is not gone.
    armed: bool,
    /// The outcome was counted ([`end`](Self::end)); a ticket dropped before counts the task
    /// cancelled.
    counted: bool,
}

impl Ticket {
    pub(super) fn new(
        board: &Arc<TaskBoard>,
        task_id: &Arc<str>,
        watch: Arc<Watch>,
        session: &Arc<RpcSession>,
    ) -> Self {
        board.lock().insert(task_id.to_string(), watch);
        board.in_flight.fetch_add(1, Ordering::Relaxed);
        Self {
            board: Arc::clone(board),
            task_id: Arc::clone(task_id),
            session: Arc::clone(session),
            armed: true,
            counted: false,
        }
    }

    /// Goes on with the client's next session when `session` ended (see
    /// [`TaskBoard::next_session`]); `tasks/cancel` then goes there too.
    pub(super) async fn next_session(
        &mut self,
        session: &mut Arc<RpcSession>,
    ) -> Result<(), ClientError> {
        *session = self.board.next_session(session).await?;
        self.session = Arc::clone(session);
        Ok(())
    }

    /// The follow ended with `outcome` (`gone`: the task is gone from the server): counted;
    /// a task that did not end on the server (the client gave up: input it refuses, requests
    /// for it that kept failing) is still cancelled when the ticket drops.
    pub(super) fn end(&mut self, outcome: &Result<ToolResult, ClientError>, gone: bool) {
        self.counted = true;
        let (counter, ended) = match outcome {
            Ok(_) => (&self.board.completed, true),
            Err(e) if e.kind() == ErrorKind::TaskCancelled => (&self.board.cancelled, true),
            Err(e) if e.kind() == ErrorKind::TaskFailed => (&self.board.failed, true),
            Err(_) => (&self.board.failed, gone),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if ended {
            self.armed = false;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.board.lock().remove(&*self.task_id);
        self.board.in_flight.fetch_sub(1, Ordering::Relaxed);
        if !self.counted {
            self.board.cancelled.fetch_add(1, Ordering::Relaxed);
        }
        if !self.armed {
            return;
        }
        cancel(
            Arc::clone(&self.board),
            Arc::clone(&self.session),
            Arc::clone(&self.task_id),
        );
    }
}

/// Sends `tasks/cancel` for `task_id`: on `session`, or on the client's next one if it ended;
/// the acknowledgement is awaited in the background (bounded) and logged at DEBUG, and the
/// board's ledger keeps the cancel until it is confirmed (see [`super::ledger`]).
fn cancel(board: Arc<TaskBoard>, session: Arc<RpcSession>, task_id: Arc<str>) {
    tracing::debug!(server = &*session.server, task_id = %task_id, "the call was dropped; cancelling its task");
    let seq = board.cancels.open(&task_id);
    // Queued at once when the session is open (a process that exits right after still writes
    // it: stdio's shutdown flushes what is queued); only the acknowledgement is awaited.
    let queued = if session.is_closed() {
        None
    } else {
        match send_cancel(&session, &task_id) {
            Ok(queued) => Some(queued),
            Err(e) => {
                board.cancels.settle(seq, Err(Unconfirmed::of(&e, false)));
                return;
            }
        }
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        // No runtime to wait on: forget it (its guard, dropped armed, would send
        // `notifications/cancelled` for the cancel itself).
        if let Some((_, mut guard)) = queued {
            guard.disarm();
            session.forget(guard.id());
        }
        board.cancels.settle(
            seq,
            Err(Unconfirmed::NotSent {
                detail: "no runtime to await its answer on".into(),
            }),
        );
        return;
    };
    runtime.spawn(async move {
        let limit = board.request_timeout;
        let (rx, guard) = match queued {
            Some(queued) => queued,
            None => {
                let next = async {
                    let session = board.next_session(&session).await?;
                    send_cancel(&session, &task_id)
                };
                match next.await {
                    Ok(queued) => queued,
                    Err(e) => {
                        tracing::debug!(server = &*session.server, task_id = %task_id, error = %e, "tasks/cancel not sent");
                        board.cancels.settle(seq, Err(Unconfirmed::of(&e, false)));
                        return;
                    }
                }
            }
        };
        match guard.answer_within(rx, limit).await {
            Ok(_) => {
                tracing::debug!(server = &*session.server, task_id = %task_id, "task cancelled");
                board.cancels.settle(seq, Ok(()));
            }
            Err(e) => {
                tracing::debug!(server = &*session.server, task_id = %task_id, error = %e, "tasks/cancel failed");
                board.cancels.settle(seq, Err(Unconfirmed::of(&e, true)));
            }
        }
    });
}

/// A task nobody follows (its `tools/call` was answered after its caller gave up): cancelled
/// like a dropped follow's, and counted cancelled.
pub(crate) fn cancel_orphan(session: &Arc<RpcSession>, task_id: &str) {
    tracing::debug!(
        server = &*session.server,
        task_id,
        "a call given up on was answered with a task"
    );
    let Some(board) = super::board(session).map(Arc::clone) else {
        return;
    };
    board.cancelled.fetch_add(1, Ordering::Relaxed);
    cancel(board, Arc::clone(session), Arc::from(task_id));
}

/// The id of the task a late `tools/call` answer (its `result`) created, if it is one: a
/// 2025-11-25 `{"task": {"taskId": …}}` or a 2026-07-28 `resultType: "task"`.
pub(crate) fn late_task_id(result: &Value) -> Option<&str> {
    match result.get("resultType").and_then(Value::as_str) {
        Some("task") => result.get("taskId").and_then(Value::as_str),
        None => result.get("task")?.get("taskId").and_then(Value::as_str),
        Some(_) => None,
    }
}

/// Queues `tasks/cancel` for `task_id` on `session`.
fn send_cancel(
    session: &Arc<RpcSession>,
    task_id: &str,
) -> Result<
    (
        tokio::sync::oneshot::Receiver<Result<IgnoredAny, ClientError>>,
        CallGuard,
    ),
    ClientError,
> {
    let params = TaskIdParams {
        task_id,
        meta: session.meta(),
    };
    let head = super::task_head::<CancelTask>(task_id, session);
    session.request::<CancelTask>(head, Some(&params))
}
