//! [`ProgressTimeout`]: a timeout for calls that may report progress, and its one error type,
//! [`Elapsed`].
//!
//! (For a plain fixed deadline use tower's own `tower::timeout::Timeout`, or
//! `ServiceBuilder::timeout`; its error is tower's `Elapsed`, a different type. It is not
//! re-exported here, so `err.is::<kaged_mcp_layers::timeout::Elapsed>()` means exactly "this
//! layer's timeout fired".)
//!
//! ```compile_fail
//! // One name, one type: tower's plain `Timeout` is not re-exported beside this `Elapsed`.
//! use kaged_mcp_layers::timeout::Timeout;
//! ```
//!
//! [`ProgressTimeout`] is for calls that opt into "reset on progress, with a total cap": the
//! request exposes a [`ProgressHandle`] through [`ProgressAware`], its owner calls
//! [`ProgressHandle::notify`] on each progress report, and the call fails only after `idle`
//! without progress or, in any case, once `total` has passed. A request without a handle gets a
//! plain timeout of `min(idle, total)`. The error is a leaf [`error::Elapsed`] saying which limit
//! was hit. tower's `Timeout` has a single fixed deadline, hence this layer.
//!
//! Both start their clock in `call`, and pass readiness through untimed. [`ProgressTimeout`]
//! gives each call a deadline, moved at most once per idle period (see [`ProgressHandle`]),
//! in a table shared by the service's clones: one task per table sleeps until the earliest
//! deadline and wakes the calls that reach theirs, so a call that ends in time costs a slot
//! written and freed, not a tokio timer made and cancelled. That task parks, with no timer,
//! while no call waits. A timeout emits a DEBUG event with `kind` and `timeout_ms`.
//!
//! # Example
//! ```
//! # use kaged_mcp_layers::timeout::{error::{Elapsed, ElapsedKind}, ProgressAware, ProgressHandle, ProgressTimeoutLayer};
//! # use std::time::Duration;
//! # use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
//! struct Call { progress: ProgressHandle }
//! impl ProgressAware for Call {
//!     fn progress(&self) -> Option<&ProgressHandle> { Some(&self.progress) }
//! }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), BoxError> {
//! // A server that reports progress every second and never finishes.
//! let server = service_fn(|call: Call| async move {
//!     loop {
//!         tokio::time::sleep(Duration::from_secs(1)).await;
//!         call.progress.notify();
//!     }
//!     #[allow(unreachable_code)]
//!     Ok::<(), BoxError>(())
//! });
//! let svc = ServiceBuilder::new()
//!     .layer(ProgressTimeoutLayer::new(Duration::from_secs(5), Duration::from_secs(60)))
//!     .service(server);
//! let err = svc.oneshot(Call { progress: ProgressHandle::new() }).await.unwrap_err();
//! let elapsed = err.downcast_ref::<Elapsed>().unwrap();
//! assert_eq!(elapsed.kind(), ElapsedKind::Total);
//! assert_eq!(err.to_string(), "total cap of 60s reached");
//! # Ok(()) }
//! ```

mod alarm;
pub mod error;
pub mod future;
mod layer;
pub mod progress;

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tower::{BoxError, Service};

pub use self::error::{Elapsed, ElapsedKind};
pub use self::layer::ProgressTimeoutLayer;
pub use self::progress::{PersonHold, Progress, ProgressHandle, ProgressObserver};

/// A request that may carry a [`ProgressHandle`].
pub trait ProgressAware {
    /// The handle the call's owner notifies on progress; `None` for a plain timeout.
    fn progress(&self) -> Option<&ProgressHandle>;
}

/// Fails a call after `idle` without progress, and in any case after `total`.
/// See the [module docs](self) for an example.
///
/// # Clone
/// Cloning clones the inner service; readiness is the inner service's.
#[derive(Debug, Clone)]
pub struct ProgressTimeout<S> {
    inner: S,
    idle: Duration,
    total: Duration,
    /// The deadlines of the calls of this service and its clones.
    alarms: Arc<alarm::Alarms>,
}

impl<S> ProgressTimeout<S> {
    /// Wraps `inner` with an `idle` timeout reset by progress and a `total` cap.
    pub fn new(inner: S, idle: Duration, total: Duration) -> Self {
        Self {
            inner,
            idle,
            total,
            alarms: Arc::default(),
        }
    }

    /// A [`ProgressTimeoutLayer`] with these durations.
    pub const fn layer(idle: Duration, total: Duration) -> ProgressTimeoutLayer {
        ProgressTimeoutLayer::new(idle, total)
    }

    /// A reference to the inner service.
    pub const fn get_ref(&self) -> &S {
        &self.inner
    }

    /// A mutable reference to the inner service.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Req> Service<Req> for ProgressTimeout<S>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    Req: ProgressAware,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = future::ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let progress = req.progress().cloned();
        future::ResponseFuture::new(
            self.inner.call(req),
            &self.alarms,
            progress,
            self.idle,
            self.total,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::pending;
    use tokio_test::{assert_pending, assert_ready_err, assert_ready_ok};
    use tower::{service_fn, ServiceExt};

    struct Call(Option<ProgressHandle>);

    impl ProgressAware for Call {
        fn progress(&self) -> Option<&ProgressHandle> {
            self.0.as_ref()
        }
    }

    const IDLE: Duration = Duration::from_secs(5);
    const TOTAL: Duration = Duration::from_secs(12);

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn hanging() -> ProgressTimeout<impl Service<Call, Response = (), Error = BoxError> + Clone> {
        ProgressTimeout::new(
            service_fn(|_: Call| pending::<Result<(), BoxError>>()),
            IDLE,
            TOTAL,
        )
    }

    fn kind(err: &BoxError) -> ElapsedKind {
        err.downcast_ref::<Elapsed>().expect("an Elapsed").kind()
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_handle_times_out_after_idle() {
        let mut call = tokio_test::task::spawn(hanging().oneshot(Call(None)));
        assert_pending!(call.poll());
        tokio::time::advance(IDLE - Duration::from_millis(1)).await;
        assert_pending!(call.poll());
        tokio::time::advance(Duration::from_millis(1)).await;
        let err = assert_ready_err!(call.poll());
        assert_eq!(kind(&err), ElapsedKind::Idle);
        assert_eq!(err.to_string(), "no progress for 5s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_handle_that_never_fires_times_out_after_idle() {
        let mut call =
            tokio_test::task::spawn(hanging().oneshot(Call(Some(ProgressHandle::new()))));
        assert_pending!(call.poll());
        tokio::time::advance(IDLE).await;
        assert_eq!(kind(&assert_ready_err!(call.poll())), ElapsedKind::Idle);
    }

    #[tokio::test(start_paused = true)]
    async fn progress_moves_the_idle_deadline() {
        let progress = ProgressHandle::new();
        let mut call = tokio_test::task::spawn(hanging().oneshot(Call(Some(progress.clone()))));
        assert_pending!(call.poll());
        tokio::time::advance(secs(3)).await;
        progress.notify(); // idle deadline now 3 + 5 = 8
        tokio::time::advance(secs(2)).await; // t = 5, the first deadline
        assert_pending!(call.poll());
        tokio::time::advance(secs(3) - Duration::from_millis(1)).await;
        assert_pending!(call.poll());
        tokio::time::advance(Duration::from_millis(1)).await; // t = 8
        let err = assert_ready_err!(call.poll());
        assert_eq!(kind(&err), ElapsedKind::Idle);
    }

    #[tokio::test(start_paused = true)]
    async fn steady_progress_stops_at_the_total_cap() {
        let progress = ProgressHandle::new();
        let mut call = tokio_test::task::spawn(hanging().oneshot(Call(Some(progress.clone()))));
        assert_pending!(call.poll());
        for _ in 0..3 {
            tokio::time::advance(secs(3)).await;
            progress.notify();
            assert_pending!(call.poll());
        }
        // t = 9, last progress at 9: idle would allow 14, the cap is 12.
        tokio::time::advance(secs(3) - Duration::from_millis(1)).await;
        progress.notify();
        assert_pending!(call.poll());
        tokio::time::advance(Duration::from_millis(1)).await;
        let err = assert_ready_err!(call.poll());
        assert_eq!(kind(&err), ElapsedKind::Total);
        assert_eq!(err.to_string(), "total cap of 12s reached");
    }

    #[tokio::test(start_paused = true)]
    async fn a_cap_below_idle_wins() {
        let svc = ProgressTimeout::new(
            service_fn(|_: Call| pending::<Result<(), BoxError>>()),
            secs(10),
            secs(4),
        );
        let mut call = tokio_test::task::spawn(svc.oneshot(Call(None)));
        assert_pending!(call.poll());
        tokio::time::advance(secs(4)).await;
        let err = assert_ready_err!(call.poll());
        assert_eq!(kind(&err), ElapsedKind::Total);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_answers_in_time_succeeds() {
        let svc = ProgressTimeout::new(
            service_fn(|_: Call| async {
                tokio::time::sleep(secs(4)).await;
                Ok::<_, BoxError>("done")
            }),
            IDLE,
            TOTAL,
        );
        let mut call = tokio_test::task::spawn(svc.oneshot(Call(None)));
        assert_pending!(call.poll());
        tokio::time::advance(secs(4)).await;
        assert_eq!(assert_ready_ok!(call.poll()), "done");
    }

    #[tokio::test]
    async fn inner_errors_pass_through_boxed() {
        let svc = ProgressTimeout::new(
            service_fn(|_: Call| async { Err::<(), _>(std::io::Error::other("closed")) }),
            IDLE,
            TOTAL,
        );
        let err = svc.oneshot(Call(None)).await.unwrap_err();
        assert!(err.is::<std::io::Error>());
    }

    /// A task's poll holds and releases the idle limit while a person fills the form the task
    /// asked for: the poll's release must not end the person's hold (issue 49 point 4: the
    /// call timed out while the person was still typing), and the limit runs again, from the
    /// form's end, once the person is done.
    #[tokio::test(start_paused = true)]
    async fn a_polls_release_does_not_end_a_persons_hold() {
        let progress = ProgressHandle::new();
        let mut call = tokio_test::task::spawn(hanging().oneshot(Call(Some(progress.clone()))));
        assert_pending!(call.poll());
        let person = progress.hold_for_person();
        assert!(progress.held_for_person());
        // A poll while the person types: held for its interval, then answered.
        progress.hold_until(tokio::time::Instant::now() + secs(2), secs(2));
        tokio::time::advance(secs(1)).await;
        progress.release();
        assert_pending!(call.poll());
        // Past the idle limit (t = 6 s, the limit is 5 s): the person still holds it.
        tokio::time::advance(secs(5)).await;
        assert_pending!(call.poll());
        assert!(progress.held_for_person());
        drop(person);
        assert!(!progress.held_for_person());
        assert_pending!(call.poll());
        tokio::time::advance(IDLE - Duration::from_millis(1)).await;
        assert_pending!(call.poll());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(kind(&assert_ready_err!(call.poll())), ElapsedKind::Idle);
    }

    #[tokio::test(start_paused = true)]
    async fn a_persons_hold_does_not_pass_the_total_cap() {
        let progress = ProgressHandle::new();
        let mut call = tokio_test::task::spawn(hanging().oneshot(Call(Some(progress.clone()))));
        assert_pending!(call.poll());
        let _person = progress.hold_for_person();
        tokio::time::advance(TOTAL).await;
        assert_eq!(kind(&assert_ready_err!(call.poll())), ElapsedKind::Total);
    }

    #[test]
    fn accessors_reach_the_inner_service() {
        let mut t = ProgressTimeout::new(1_u8, IDLE, TOTAL);
        *t.get_mut() += 1;
        assert_eq!(*t.get_ref(), 2);
        assert_eq!(t.into_inner(), 2);
    }
}
