//! [`ServiceBuilderExt`]: this crate's layers as [`ServiceBuilder`] methods.

use std::sync::Arc;
use std::time::Duration;

use tower::layer::util::Stack;
use tower::retry::RetryLayer;
use tower::ServiceBuilder;

#[cfg(feature = "auth")]
use crate::auth::{AuthHeader, AuthLayer};
use crate::limit::InFlightLimitLayer;
use crate::reject_sampling::RejectSamplingLayer;
use crate::retry::RetryPolicy;
use crate::timeout::ProgressTimeoutLayer;
use crate::truncate::TruncateLayer;

mod sealed {
    #[allow(unreachable_pub)]
    pub trait Sealed<L> {}
    impl<L> Sealed<L> for tower::ServiceBuilder<L> {}
}

/// Adds this crate's layers to [`ServiceBuilder`], beside tower's own (`timeout`, `retry`,
/// `concurrency_limit`, ...). Sealed: implemented only for `ServiceBuilder`.
///
/// As with every `ServiceBuilder` method, the first layer added is the outermost: it sees the
/// request first and the response last.
///
/// # Example
/// ```
/// # use kaged_mcp_layers::{retry::{NotSent, RetryPolicy, RetrySafe}, ServiceBuilderExt};
/// # use std::time::Duration;
/// # use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
/// #[derive(Clone)]
/// struct Call;
/// impl RetrySafe for Call {
///     fn retry_safe(&self) -> bool { false }
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
/// let client = service_fn(|_: Call| async { Ok::<_, BoxError>(String::from("a long answer")) });
/// let policy = RetryPolicy::new(Duration::from_millis(100), Duration::from_secs(5))?;
/// let svc = ServiceBuilder::new()
///     .truncate(6)
///     .timeout(Duration::from_secs(30))
///     .retry_policy(policy)
///     .service(client);
/// assert_eq!(svc.oneshot(Call).await?, "a long");
/// # Ok(()) }
/// ```
pub trait ServiceBuilderExt<L>: sealed::Sealed<L> + Sized {
    /// Caps responses at `max_bytes`; see [`truncate`](crate::truncate).
    fn truncate(self, max_bytes: usize) -> ServiceBuilder<Stack<TruncateLayer, L>>;

    /// Refuses `sampling/createMessage` from the server labelled `server`; see
    /// [`reject_sampling`](crate::reject_sampling). To read the counter, build a
    /// [`RejectSamplingLayer`] yourself and add it with `.layer(..)`.
    fn reject_sampling(
        self,
        server: impl Into<Arc<str>>,
    ) -> ServiceBuilder<Stack<RejectSamplingLayer, L>>;

    /// Fails a call after `idle` without progress, and in any case after `total`; see
    /// [`timeout`](crate::timeout).
    fn progress_timeout(
        self,
        idle: Duration,
        total: Duration,
    ) -> ServiceBuilder<Stack<ProgressTimeoutLayer, L>>;

    /// Lets at most `max` calls through at once, the rest waiting in their futures; see
    /// [`limit`](crate::limit).
    fn in_flight_limit(self, max: usize) -> ServiceBuilder<Stack<InFlightLimitLayer, L>>;

    /// Retries what is safe to retry, through tower's [`Retry`](tower::retry::Retry); see
    /// [`retry`](crate::retry).
    fn retry_policy<R>(
        self,
        policy: RetryPolicy<R>,
    ) -> ServiceBuilder<Stack<RetryLayer<RetryPolicy<R>>, L>>;

    /// Adds an authentication header to every HTTP request; see [`auth`](crate::auth).
    #[cfg(feature = "auth")]
    fn auth(self, header: AuthHeader) -> ServiceBuilder<Stack<AuthLayer, L>>;
}

impl<L> ServiceBuilderExt<L> for ServiceBuilder<L> {
    fn truncate(self, max_bytes: usize) -> ServiceBuilder<Stack<TruncateLayer, L>> {
        self.layer(TruncateLayer::new(max_bytes))
    }

    fn reject_sampling(
        self,
        server: impl Into<Arc<str>>,
    ) -> ServiceBuilder<Stack<RejectSamplingLayer, L>> {
        self.layer(RejectSamplingLayer::new(server))
    }

    fn progress_timeout(
        self,
        idle: Duration,
        total: Duration,
    ) -> ServiceBuilder<Stack<ProgressTimeoutLayer, L>> {
        self.layer(ProgressTimeoutLayer::new(idle, total))
    }

    fn in_flight_limit(self, max: usize) -> ServiceBuilder<Stack<InFlightLimitLayer, L>> {
        self.layer(InFlightLimitLayer::new(max))
    }

    fn retry_policy<R>(
        self,
        policy: RetryPolicy<R>,
    ) -> ServiceBuilder<Stack<RetryLayer<RetryPolicy<R>>, L>> {
        self.layer(RetryLayer::new(policy))
    }

    #[cfg(feature = "auth")]
    fn auth(self, header: AuthHeader) -> ServiceBuilder<Stack<AuthLayer, L>> {
        self.layer(AuthLayer::new(header))
    }
}
