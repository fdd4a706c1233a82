//! [`ResponseFuture`]: the named future of a tool call.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::sync::oneshot;
use tower::BoxError;

use super::call::ToolCall;
use super::error::ClientError;
use super::rpc::{CallGuard, RpcSession};
use crate::protocol::ToolResult;

/// The future of [`McpClient::call`](super::McpClient): waits for the server to be ready if it
/// is starting, then for the answer.
///
/// Dropping it before the answer arrives removes the request from the session and sends
/// `notifications/cancelled` for it; a late answer is dropped quietly. It is `Unpin` and holds
/// no boxed future.
pub struct ResponseFuture {
    state: State,
}

enum State {
    /// Failed before anything was sent, or already done.
    Failed(Option<BoxError>),
    /// Waiting for the server to finish starting.
    Starting {
        rx: oneshot::Receiver<Result<Arc<RpcSession>, ClientError>>,
        call: ToolCall,
        server: Arc<str>,
    },
    /// Sent; waiting for the answer.
    InFlight {
        rx: oneshot::Receiver<Result<ToolResult, ClientError>>,
        guard: CallGuard,
    },
}

impl ResponseFuture {
    pub(crate) fn failed(err: BoxError) -> Self {
        Self {
            state: State::Failed(Some(err)),
        }
    }

    pub(crate) fn starting(
        rx: oneshot::Receiver<Result<Arc<RpcSession>, ClientError>>,
        call: ToolCall,
        server: Arc<str>,
    ) -> Self {
        Self {
            state: State::Starting { rx, call, server },
        }
    }

    /// Sends `call` on `session`: in flight, or failed without reaching the server.
    pub(crate) fn send(session: &Arc<RpcSession>, call: &ToolCall) -> Self {
        match session.start_call(call) {
            Ok((rx, guard)) => Self {
                state: State::InFlight { rx, guard },
            },
            Err(e) => Self::failed(e.boxed(true)),
        }
    }
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Failed(_) => "Failed".to_owned(),
            State::Starting { .. } => "Starting".to_owned(),
            State::InFlight { guard, .. } => format!("InFlight(request {})", guard.id()),
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}

impl Future for ResponseFuture {
    type Output = Result<ToolResult, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match &mut self.state {
                State::Failed(err) => {
                    return Poll::Ready(Err(err
                        .take()
                        .expect("ResponseFuture polled after completion")));
                }
                State::Starting { rx, call, server } => {
                    let next = match ready!(Pin::new(rx).poll(cx)) {
                        Ok(Ok(session)) => Self::send(&session, call),
                        Ok(Err(e)) => Self::failed(e.boxed(true)),
                        Err(_) => Self::failed(
                            ClientError::ConnectionClosed {
                                server: Arc::clone(server),
                                request: None,
                                detail: "the client was dropped while the server was starting"
                                    .into(),
                            }
                            .boxed(true),
                        ),
                    };
                    *self = next;
                }
                State::InFlight { rx, guard } => {
                    let answer = ready!(Pin::new(rx).poll(cx));
                    guard.disarm();
                    let result = match answer {
                        Ok(Ok(result)) => Ok(result),
                        Ok(Err(e)) => {
                            let resend = e.worth_resending();
                            Err(e.boxed(resend))
                        }
                        Err(_) => Err(ClientError::ConnectionClosed {
                            server: guard.server(),
                            request: None,
                            detail: "the session ended without answering".into(),
                        }
                        .boxed(false)),
                    };
                    self.state = State::Failed(None);
                    return Poll::Ready(result);
                }
            }
        }
    }
}
