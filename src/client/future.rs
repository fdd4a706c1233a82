//! [`ResponseFuture`]: the named future of a tool call.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures::future::BoxFuture;
use tokio::sync::oneshot;
use tower::BoxError;

use super::call::ToolCall;
use super::error::ClientError;
use super::mrtr::{self, MAX_INPUT_ROUNDS};
use super::rpc::{CallGuard, InputRetry, RpcSession};
use super::tasks;
use crate::protocol::{CallAnswer, ToolResult};

/// The future of [`McpClient::call`](super::McpClient): waits for the server to be ready if it
/// is starting, then for the answer. When the server answers `resultType: "input_required"`
/// (2026-07-28 multi round-trip requests), it answers the server's input requests and sends
/// the call again with them (see [`mrtr`](super::mrtr)), until a result comes.
///
/// Dropping it before the answer arrives removes the request from the session and sends
/// `notifications/cancelled` for it; a late answer is dropped quietly. It is `Unpin`; it holds
/// no boxed future except while it answers input requests or follows a task.
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
        rx: oneshot::Receiver<Result<CallAnswer, ClientError>>,
        guard: CallGuard,
        call: ToolCall,
        /// `input_required` answers so far.
        rounds: u32,
    },
    /// The server runs the call as a task: following it to its end ([`tasks`](super::tasks)).
    Task(BoxFuture<'static, Result<ToolResult, ClientError>>),
    /// Answering the server's input requests before the call is sent again.
    Resolving {
        input: BoxFuture<'static, Result<InputRetry, ClientError>>,
        session: Arc<RpcSession>,
        call: ToolCall,
        rounds: u32,
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
    pub(crate) fn send(session: &Arc<RpcSession>, call: ToolCall) -> Self {
        Self::send_round(session, call, None, 0)
    }

    fn send_round(
        session: &Arc<RpcSession>,
        call: ToolCall,
        retry: Option<&InputRetry>,
        rounds: u32,
    ) -> Self {
        match session.start_call(&call, retry) {
            Ok((rx, guard)) => Self {
                state: State::InFlight {
                    rx,
                    guard,
                    call,
                    rounds,
                },
            },
            // A retry after input requests is a new request: the first one reached the server.
            Err(e) => Self::failed(e.boxed(rounds == 0)),
        }
    }
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Failed(_) => "Failed".to_owned(),
            State::Starting { .. } => "Starting".to_owned(),
            State::InFlight { guard, .. } => format!("InFlight(request {})", guard.id()),
            State::Resolving { rounds, .. } => format!("Resolving(round {rounds})"),
            State::Task(_) => "Task".to_owned(),
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
                State::Starting { rx, server, .. } => {
                    let started = ready!(Pin::new(rx).poll(cx));
                    let server = Arc::clone(server);
                    let State::Starting { call, .. } =
                        std::mem::replace(&mut self.state, State::Failed(None))
                    else {
                        unreachable!("the state was Starting")
                    };
                    *self = match started {
                        Ok(Ok(session)) => Self::send(&session, call),
                        Ok(Err(e)) => Self::failed(e.boxed(true)),
                        Err(_) => Self::failed(
                            ClientError::ConnectionClosed {
                                server,
                                request: None,
                                detail: "the client was dropped while the server was starting"
                                    .into(),
                            }
                            .boxed(true),
                        ),
                    };
                }
                State::InFlight {
                    rx, guard, rounds, ..
                } => {
                    let answer = ready!(Pin::new(rx).poll(cx));
                    guard.disarm();
                    let asked = match answer {
                        Ok(Ok(CallAnswer::Complete(result))) => {
                            self.state = State::Failed(None);
                            return Poll::Ready(Ok(result));
                        }
                        Ok(Ok(CallAnswer::InputRequired(asked))) => asked,
                        Ok(Ok(CallAnswer::Task(created))) => {
                            let session = Arc::clone(guard.session());
                            let request = guard.request();
                            let State::InFlight { call, .. } =
                                std::mem::replace(&mut self.state, State::Failed(None))
                            else {
                                unreachable!("the state was InFlight")
                            };
                            let origin = tasks::Origin {
                                server: Arc::clone(&session.server),
                                call,
                                request,
                            };
                            self.state =
                                State::Task(Box::pin(tasks::follow(session, origin, *created)));
                            continue;
                        }
                        Ok(Err(e)) => {
                            let resend = e.is_resendable();
                            self.state = State::Failed(None);
                            return Poll::Ready(Err(e.boxed(resend)));
                        }
                        Err(_) => {
                            let e = ClientError::ConnectionClosed {
                                server: guard.server(),
                                request: None,
                                detail: "the session ended without answering".into(),
                            };
                            self.state = State::Failed(None);
                            return Poll::Ready(Err(e.boxed(false)));
                        }
                    };
                    let request = guard.request();
                    let rounds = *rounds + 1;
                    let session = Arc::clone(guard.session());
                    if rounds > MAX_INPUT_ROUNDS {
                        self.state = State::Failed(None);
                        return Poll::Ready(Err(ClientError::InputRounds {
                            server: Arc::clone(&session.server),
                            request,
                            rounds: rounds - 1,
                        }
                        .boxed(false)));
                    }
                    tracing::debug!(
                        server = &*session.server,
                        request_id = guard.id(),
                        inputs = asked.input_requests.len(),
                        round = rounds,
                        "the server asked for input"
                    );
                    let State::InFlight { call, .. } =
                        std::mem::replace(&mut self.state, State::Failed(None))
                    else {
                        unreachable!("the state was InFlight")
                    };
                    self.state = State::Resolving {
                        input: Box::pin(mrtr::resolve(Arc::clone(&session), request, asked)),
                        session,
                        call,
                        rounds,
                    };
                }
                State::Task(follow) => {
                    let outcome = ready!(follow.as_mut().poll(cx));
                    self.state = State::Failed(None);
                    // The server ran the call: whatever went wrong since, the retry layer must
                    // not call the tool again.
                    return Poll::Ready(outcome.map_err(|e| {
                        Box::new(kaged_mcp_layers::retry::Final::new(e)) as BoxError
                    }));
                }
                State::Resolving { input, .. } => {
                    let resolved = ready!(input.as_mut().poll(cx));
                    let State::Resolving {
                        session,
                        call,
                        rounds,
                        ..
                    } = std::mem::replace(&mut self.state, State::Failed(None))
                    else {
                        unreachable!("the state was Resolving")
                    };
                    *self = match resolved {
                        Ok(retry) => Self::send_round(&session, call, Some(&retry), rounds),
                        Err(e) => Self::failed(e.boxed(false)),
                    };
                }
            }
        }
    }
}
