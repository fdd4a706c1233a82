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
use super::error::{ClientError, RequestRef};
use super::mrtr::{self, MAX_INPUT_ROUNDS};
use super::rpc::{CallGuard, InputRetry, RpcSession};
use super::tasks;
use crate::client::Kind;
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
    /// The call (sent again, as it is, after each round of input requests).
    call: ToolCall,
    /// `input_required` answers so far.
    rounds: u32,
}

enum State {
    /// Failed before anything was sent, or done: the error to return, taken once.
    Failed(Option<BoxError>),
    /// Waiting for the server to finish starting.
    Starting {
        rx: oneshot::Receiver<Result<Arc<RpcSession>, ClientError>>,
        server: Arc<str>,
    },
    /// Sent; waiting for the answer.
    InFlight {
        rx: oneshot::Receiver<Result<CallAnswer, ClientError>>,
        guard: CallGuard,
    },
    /// The server runs the call as a task: following it to its end ([`tasks`](super::tasks)).
    Task(BoxFuture<'static, Result<ToolResult, ClientError>>),
    /// Answering the server's input requests before the call is sent again.
    Resolving {
        input: BoxFuture<'static, Result<InputRetry, ClientError>>,
        session: Arc<RpcSession>,
    },
}

impl ResponseFuture {
    pub(crate) fn failed(err: BoxError) -> Self {
        Self {
            state: State::Failed(Some(err)),
            call: ToolCall::default(),
            rounds: 0,
        }
    }

    pub(crate) fn starting(
        rx: oneshot::Receiver<Result<Arc<RpcSession>, ClientError>>,
        call: ToolCall,
        server: Arc<str>,
    ) -> Self {
        Self {
            state: State::Starting { rx, server },
            call,
            rounds: 0,
        }
    }

    /// Sends `call` on `session`: in flight, or failed without reaching the server.
    pub(crate) fn send(session: &Arc<RpcSession>, call: ToolCall) -> Self {
        let mut this = Self {
            state: State::Failed(None),
            call,
            rounds: 0,
        };
        this.state = this.sent(session, None);
        this
    }

    /// The state after sending the call on `session` (with a round's answers): in flight, or
    /// failed.
    fn sent(&self, session: &Arc<RpcSession>, retry: Option<&InputRetry>) -> State {
        match session.start_call(&self.call, retry) {
            Ok((rx, guard)) => State::InFlight { rx, guard },
            // A retry after input requests is a new request: the first one reached the server.
            Err(e) => State::Failed(Some(e.boxed(self.rounds == 0))),
        }
    }

    /// Ends the future with `outcome` (the state keeps nothing more to return).
    fn done(
        &mut self,
        outcome: Result<ToolResult, BoxError>,
    ) -> Poll<Result<ToolResult, BoxError>> {
        self.state = State::Failed(None);
        Poll::Ready(outcome)
    }

    /// What follows an answer other than a result to the request `request` (sent on
    /// `session`): the outcome, or the next state (a task followed, input requests answered).
    fn answered(
        &mut self,
        answer: Result<Result<CallAnswer, ClientError>, oneshot::error::RecvError>,
        session: Arc<RpcSession>,
        request: RequestRef,
    ) -> Option<Result<ToolResult, BoxError>> {
        let asked = match answer {
            Ok(Ok(CallAnswer::Complete(result))) => return Some(Ok(result)),
            Ok(Ok(CallAnswer::InputRequired(asked))) => asked,
            Ok(Ok(CallAnswer::Task(created))) => {
                let origin = tasks::Origin {
                    server: Arc::clone(&session.server),
                    call: self.call.clone(),
                    request,
                };
                self.state = State::Task(Box::pin(tasks::follow(session, origin, *created)));
                return None;
            }
            Ok(Err(e)) => {
                let resend = e.is_resendable();
                return Some(Err(e.boxed(resend)));
            }
            Err(_) => {
                let e = ClientError::of(
                    &session.server,
                    Kind::ConnectionClosed {
                        detail: "the session ended without answering".into(),
                    },
                );
                return Some(Err(e.boxed(false)));
            }
        };
        if self.rounds == MAX_INPUT_ROUNDS {
            let e = ClientError::new(
                Arc::clone(&session.server),
                Some(request),
                Kind::InputRounds {
                    rounds: self.rounds,
                },
            );
            return Some(Err(e.boxed(false)));
        }
        self.rounds += 1;
        tracing::debug!(
            server = &*session.server,
            request_id = %request.id,
            inputs = asked.input_requests.len(),
            round = self.rounds,
            "the server asked for input"
        );
        let input = Box::pin(mrtr::resolve(Arc::clone(&session), request, asked));
        self.state = State::Resolving { input, session };
        None
    }
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Failed(_) => "Failed".to_owned(),
            State::Starting { .. } => "Starting".to_owned(),
            State::InFlight { guard, .. } => format!("InFlight(request {})", guard.id()),
            State::Resolving { .. } => format!("Resolving(round {})", self.rounds),
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
        let this = &mut *self;
        loop {
            match &mut this.state {
                State::Failed(err) => {
                    let err = err.take().unwrap_or_else(|| {
                        "the call's future was polled after it completed".into()
                    });
                    return Poll::Ready(Err(err));
                }
                State::Starting { rx, server } => {
                    this.state = match ready!(Pin::new(rx).poll(cx)) {
                        Ok(Ok(session)) => this.sent(&session, None),
                        Ok(Err(e)) => State::Failed(Some(e.boxed(true))),
                        Err(_) => State::Failed(Some(
                            ClientError::new(
                                Arc::clone(server),
                                None,
                                Kind::ConnectionClosed {
                                    detail: "the client was dropped while the server was starting"
                                        .into(),
                                },
                            )
                            .boxed(true),
                        )),
                    };
                }
                State::InFlight { rx, guard } => {
                    let answer = ready!(Pin::new(rx).poll(cx));
                    guard.disarm();
                    // The hot path: a result, with nothing to clone.
                    let answer = match answer {
                        Ok(Ok(CallAnswer::Complete(result))) => return this.done(Ok(result)),
                        other => other,
                    };
                    let (session, request) = (Arc::clone(guard.session()), guard.request());
                    if let Some(outcome) = this.answered(answer, session, request) {
                        return this.done(outcome);
                    }
                }
                State::Task(follow) => {
                    let outcome = ready!(follow.as_mut().poll(cx));
                    // The server ran the call: whatever went wrong since, the retry layer must
                    // not call the tool again.
                    let outcome = outcome
                        .map_err(|e| Box::new(kaged_mcp_layers::retry::Final::new(e)) as BoxError);
                    return this.done(outcome);
                }
                State::Resolving { input, session } => {
                    let session = Arc::clone(session);
                    this.state = match ready!(input.as_mut().poll(cx)) {
                        Ok(retry) => this.sent(&session, Some(&retry)),
                        Err(e) => State::Failed(Some(e.boxed(false))),
                    };
                }
            }
        }
    }
}
