//! Bounds the calls in flight through a service; further calls wait their turn.
//!
//! [`InFlightLimit`] lets at most `max` calls run through its inner service at once, counted
//! across all its clones (one limit per server in the standard stack). A call over the limit
//! waits, in its response future, for one to finish, in the order the calls started waiting
//! (first polled; `tokio`'s semaphore is fair). Unlike tower's
//! `ConcurrencyLimit`, readiness is the inner service's alone: the wait happens inside the
//! future, so a timeout layered outside bounds it like the rest of the call, and a caller that
//! gives up (drops the future) leaves the queue. A call that had to wait is reported with a
//! DEBUG event carrying `max_in_flight`.
//!
//! The hot path, a call under the limit, takes a permit of a `tokio` semaphore without waiting
//! and calls the inner service at once; the permit goes back when the call's future ends or is
//! dropped. Only a call that must wait clones the inner service (to make it ready and call it
//! when its turn comes) and boxes its wait.
//!
//! # Example
//! ```
//! # use std::time::Duration;
//! # use kaged_mcp_layers::limit::InFlightLimitLayer;
//! # use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), BoxError> {
//! let slow = service_fn(|n: u32| async move {
//!     tokio::time::sleep(Duration::from_secs(1)).await;
//!     Ok::<_, BoxError>(n)
//! });
//! let svc = ServiceBuilder::new().layer(InFlightLimitLayer::new(2)).service(slow);
//! let started = tokio::time::Instant::now();
//! let calls = (0..4).map(|n| svc.clone().oneshot(n));
//! let answers = futures::future::join_all(calls).await;
//! assert_eq!(answers.into_iter().collect::<Result<Vec<_>, _>>()?, [0, 1, 2, 3]);
//! // Two at a time: the last two waited for the first two.
//! assert_eq!(started.elapsed(), Duration::from_secs(2));
//! # Ok(()) }
//! ```
//!
//! # Order
//! In the standard stack the limit sits inside the timeout (waiting counts against
//! `timeout_ms`) and outside the retry (a call keeps its place across its attempts).

pub mod future;
mod layer;

use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::Semaphore;
use tower::Service;

pub use self::layer::InFlightLimitLayer;

/// Lets at most `max` calls through at once; see the [module docs](self).
///
/// # Clone
/// Clones share the limit: it bounds the calls of every clone together.
#[derive(Debug, Clone)]
pub struct InFlightLimit<S> {
    inner: S,
    permits: Arc<Semaphore>,
    max: usize,
}

impl<S> InFlightLimit<S> {
    /// Wraps `inner`, letting at most `max` calls run at once (`max` is at least 1 and at most
    /// [`Semaphore::MAX_PERMITS`]; values outside are taken to the nearest bound).
    pub fn new(inner: S, max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            inner,
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// The limit.
    pub const fn max(&self) -> usize {
        self.max
    }

    /// How many more calls may start now without waiting.
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }

    /// A reference to the inner service.
    pub const fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Consumes `self`, returning the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> InFlightLimit<S> {
    /// A call over the limit: a clone of the service goes with it, made ready and called when
    /// its turn comes (so the wait holds none of the inner service's readiness: a `Buffer` or
    /// `ConcurrencyLimit` below keeps its slots for calls that run); `self` stays ready.
    #[cold]
    fn wait<Req>(&mut self, req: Req) -> future::ResponseFuture<S, Req>
    where
        S: Service<Req> + Clone,
    {
        tracing::debug!(
            max_in_flight = self.max,
            "calls in flight at the limit; waiting"
        );
        future::ResponseFuture::waiting(self.inner.clone(), req, Arc::clone(&self.permits))
    }
}

impl<S, Req> Service<Req> for InFlightLimit<S>
where
    S: Service<Req> + Clone,
{
    type Response = S::Response;
    type Error = S::Error; // adds no failure: a call waits, it is never refused
    type Future = future::ResponseFuture<S, Req>;

    /// The inner service's readiness; never waits for a place (the response future does).
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, req: Req) -> Self::Future {
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => future::ResponseFuture::running(self.inner.call(req), permit),
            Err(_) => self.wait(req),
        }
    }
}
