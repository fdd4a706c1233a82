//! [`CallGuard`]: a request's claim on its pending entry, which cancels the request when its
//! caller stops waiting, and bounds how long the caller waits.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::{RequestRef, RpcSession};
use crate::client::error::ClientError;
use crate::client::Kind;
use crate::telemetry::Outcome;

/// Removes a request from the table when its caller stops waiting, and sends
/// `notifications/cancelled`. Disarmed once the answer is in.
#[derive(Debug)]
pub(crate) struct CallGuard {
    session: Arc<RpcSession>,
    id: u64,
    /// The request's method.
    method: &'static str,
    armed: bool,
}

/// The receiver of a request's answer decoded into `T`.
pub(crate) type Receiver<T> = oneshot::Receiver<Result<T, ClientError>>;

impl CallGuard {
    pub(super) fn new(session: Arc<RpcSession>, id: u64, method: &'static str) -> Self {
        Self {
            session,
            id,
            method,
            armed: true,
        }
    }

    /// The request: its id and method.
    pub(crate) fn request(&self) -> RequestRef {
        RpcSession::request_ref(self.id, self.method)
    }

    /// The answer arrived: nothing to cancel.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }

    /// The request id.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The server's label.
    pub(crate) fn server(&self) -> Arc<str> {
        Arc::clone(&self.session.server)
    }

    /// The session the request went on.
    pub(crate) fn session(&self) -> &Arc<RpcSession> {
        &self.session
    }

    /// Awaits the answer `rx` of this request for at most `limit`: not answered
    /// in time, it is cancelled (the guard is dropped armed) and fails with
    /// [`ErrorKind::RequestTimeout`](crate::client::ErrorKind::RequestTimeout); a session that ended without answering fails it with
    /// [`ErrorKind::ConnectionClosed`](crate::client::ErrorKind::ConnectionClosed). Every request the client sends on its own (a
    /// `tools/list` page, a task's requests) is bounded this way.
    pub(crate) async fn answer_within<R>(
        mut self,
        rx: Receiver<R>,
        limit: std::time::Duration,
    ) -> Result<R, ClientError> {
        let request = self.request();
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(answer)) => {
                self.disarm();
                answer
            }
            Ok(Err(_)) => Err(ClientError::new(
                self.server(),
                Some(request),
                Kind::ConnectionClosed {
                    detail: "the session ended without answering".into(),
                },
            )),
            Err(_) => {
                let err = ClientError::new(
                    self.server(),
                    Some(request),
                    Kind::RequestTimeout { after: limit },
                );
                // Cancelled as a drop would, but its span says it timed out.
                self.disarm();
                self.session.abandon(self.id, Outcome::Failed(&err));
                Err(err)
            }
        }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.armed {
            self.session.abandon(self.id, Outcome::Abandoned);
        }
    }
}
