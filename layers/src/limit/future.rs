//! Response future of [`InFlightLimit`](super::InFlightLimit).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use pin_project::pin_project;
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};
use tower::Service;

/// Waiting for a place: `Semaphore::acquire_owned`, boxed (only calls over the limit pay for
/// it).
type Acquire = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

const DONE: &str = "InFlightLimit's ResponseFuture polled after it completed";

/// Response future for [`InFlightLimit`](super::InFlightLimit): waits for a place if the
/// limit was reached, then drives the inner service (`poll_ready`, `call`) and its future,
/// holding the place until the call ends or the future is dropped.
#[pin_project]
pub struct ResponseFuture<S, Req>
where
    S: Service<Req>,
{
    #[pin]
    state: State<S, Req>,
}

#[pin_project(project = StateProj)]
enum State<S, Req>
where
    S: Service<Req>,
{
    Waiting {
        acquire: Acquire,
        inner: Option<S>,
        req: Option<Req>,
    },
    /// Its turn came: the inner service (a clone, not yet polled) is made ready and called.
    Ready {
        inner: S,
        req: Option<Req>,
        /// `None` only if the semaphore was closed, which this crate never does.
        permit: Option<OwnedSemaphorePermit>,
    },
    Running {
        #[pin]
        future: S::Future,
        permit: Option<OwnedSemaphorePermit>,
    },
    /// The inner service failed to become ready: the error was returned, the place freed.
    Failed,
}

impl<S, Req> ResponseFuture<S, Req>
where
    S: Service<Req>,
{
    /// A call that got its place at once and was sent.
    #[inline]
    pub(crate) fn running(future: S::Future, permit: OwnedSemaphorePermit) -> Self {
        Self {
            state: State::Running {
                future,
                permit: Some(permit),
            },
        }
    }

    /// A call over the limit: it waits for a place among `permits`.
    pub(crate) fn waiting(inner: S, req: Req, permits: Arc<Semaphore>) -> Self {
        Self {
            state: State::Waiting {
                acquire: Box::pin(permits.acquire_owned()),
                inner: Some(inner),
                req: Some(req),
            },
        }
    }
}

impl<S, Req> Future for ResponseFuture<S, Req>
where
    S: Service<Req>,
{
    type Output = Result<S::Response, S::Error>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let mut state = self.as_mut().project().state;
            match state.as_mut().project() {
                StateProj::Waiting {
                    acquire,
                    inner,
                    req,
                } => {
                    let permit = ready!(acquire.as_mut().poll(cx)).ok();
                    let inner = inner.take().expect(DONE);
                    let req = req.take();
                    state.set(State::Ready { inner, req, permit });
                }
                StateProj::Ready { inner, req, permit } => {
                    if let Err(e) = ready!(inner.poll_ready(cx)) {
                        // Frees the place now, and never sends the request.
                        state.set(State::Failed);
                        return Poll::Ready(Err(e));
                    }
                    let future = inner.call(req.take().expect(DONE));
                    let permit = permit.take();
                    state.set(State::Running { future, permit });
                }
                StateProj::Failed => panic!("{DONE}"),
                StateProj::Running { future, permit } => {
                    let output = ready!(future.poll(cx));
                    // The place is free as soon as the call ended.
                    *permit = None;
                    return Poll::Ready(output);
                }
            }
        }
    }
}

impl<S, Req> fmt::Debug for ResponseFuture<S, Req>
where
    S: Service<Req>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Waiting { .. } => "waiting for a place",
            State::Ready { .. } => "holding a place",
            State::Running { .. } => "running",
            State::Failed => "failed",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}
