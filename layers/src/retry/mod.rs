//! A [`tower::retry::Policy`] that retries only where it is safe, with jittered exponential
//! backoff, an attempt limit and a shared retry budget ([`RetryBudget`] by default, or any
//! tower [`Budget`]).
//!
//! A `tools/call` may have side effects, so [`RetryPolicy`] retries an error only when
//! - the error chain holds a [`NotSent`]: the request provably never reached the server; or
//! - the request is [`RetrySafe`] (`kaged-mcp` says yes only for tools annotated
//!   `idempotentHint` or `readOnlyHint` on servers whose annotations the operator trusts);
//!
//! and never when the chain holds a [`Final`]: the server ran the request to an outcome (an
//! MCP task that failed, was cancelled or was lost), so sending it again would run it again.
//!
//! An `Ok` response is never retried. Each retry then needs an attempt left
//! ([`max_attempts`](RetryPolicy::max_attempts), counting the first call) and a whole retry from
//! the budget (each request deposits a share of one: a fifth with the default
//! [`RetryBudget`]), and waits a [`JitteredBackoff`] delay.
//! A retry emits a DEBUG event with `attempt` (0 is the first call, so the first retry is 1) and
//! `backoff_ms`, and records `attempt` on the current span; giving up on an error emits a DEBUG
//! event with `attempt` and `reason`.
//!
//! The service is tower's own [`Retry`](tower::retry::Retry) (`ServiceBuilder::retry` or
//! [`ServiceBuilderExt::retry_policy`](crate::ServiceBuilderExt::retry_policy)); it needs a
//! `Clone` inner service and a `Clone` request. The policy works on [`BoxError`]: give it a
//! client whose error is `BoxError` (or map the error first).
//!
//! # Example
//! ```
//! # use kaged_mcp_layers::retry::{NotSent, RetryPolicy, RetrySafe};
//! # use std::sync::{atomic::{AtomicU32, Ordering}, Arc};
//! # use std::time::Duration;
//! # use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
//! #[derive(Clone)]
//! struct Call { read_only: bool }
//! impl RetrySafe for Call {
//!     fn retry_safe(&self) -> bool { self.read_only }
//! }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), BoxError> {
//! let calls = Arc::new(AtomicU32::new(0));
//! let seen = calls.clone();
//! // Refuses the connection twice, then answers.
//! let client = service_fn(move |_: Call| {
//!     let n = seen.fetch_add(1, Ordering::SeqCst);
//!     async move {
//!         if n < 2 {
//!             return Err(BoxError::from(NotSent::new("connection refused")));
//!         }
//!         Ok("done")
//!     }
//! });
//! let policy = RetryPolicy::new(Duration::from_millis(100), Duration::from_secs(2))?
//!     .max_attempts(3);
//! let svc = ServiceBuilder::new().retry(policy).service(client);
//! assert_eq!(svc.oneshot(Call { read_only: false }).await?, "done");
//! assert_eq!(calls.load(Ordering::SeqCst), 3);
//! # Ok(()) }
//! ```

mod backoff;
mod budget;
pub mod error;
mod rng;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tower::retry::budget::Budget;
use tower::retry::Policy;
use tower::BoxError;

pub use self::backoff::{Jitter, JitteredBackoff};
pub use self::budget::RetryBudget;
pub use self::error::{Final, NotSent};
pub use self::rng::{JitterRng, XorShiftRng};

use self::error::InvalidBackoff;

/// A request that may say it is safe to send twice.
pub trait RetrySafe {
    /// Whether sending this request again after a failure that may have reached the server is
    /// harmless (an idempotent or read-only call). Say `false` when unsure.
    fn retry_safe(&self) -> bool;
}

/// The default number of attempts, the first call included.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// Retries errors that are safe to retry. See the [module docs](self) for the rule and an
/// example.
///
/// # Clone
/// tower's `Retry` clones the policy for every request: the attempt count is per request, while
/// the budget (an `Arc`) and the default [`XorShiftRng`] are shared by all clones.
#[derive(Clone)]
pub struct RetryPolicy<R = XorShiftRng> {
    backoff: JitteredBackoff<R>,
    max_attempts: u32,
    budget: Arc<dyn Budget + Send + Sync>,
    /// Attempts of the current request that have completed.
    attempts: u32,
}

impl RetryPolicy {
    /// Backoff from `base` doubling up to `max_delay` with [`Jitter::Full`],
    /// [`DEFAULT_MAX_ATTEMPTS`] attempts and a default [`RetryBudget`] of its own.
    ///
    /// # Errors
    /// [`InvalidBackoff`] when `base` is zero or `max_delay` is less than `base`.
    pub fn new(base: Duration, max_delay: Duration) -> Result<Self, InvalidBackoff> {
        Ok(Self::with_backoff(JitteredBackoff::new(base, max_delay)?))
    }
}

impl<R> RetryPolicy<R> {
    /// A policy over an existing `backoff`, with [`DEFAULT_MAX_ATTEMPTS`] attempts and a default
    /// [`RetryBudget`] of its own.
    pub fn with_backoff(backoff: JitteredBackoff<R>) -> Self {
        Self {
            backoff,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            budget: Arc::new(RetryBudget::default()),
            attempts: 0,
        }
    }

    /// Sets the number of attempts, the first call included; 0 counts as 1 (no retry).
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts.max(1);
        self
    }

    /// Sets the jitter mode of the backoff.
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.backoff = self.backoff.jitter(jitter);
        self
    }

    /// Replaces the source of randomness of the backoff.
    pub fn rng<R2: JitterRng>(self, rng: R2) -> RetryPolicy<R2> {
        RetryPolicy {
            backoff: self.backoff.rng(rng),
            max_attempts: self.max_attempts,
            budget: self.budget,
            attempts: self.attempts,
        }
    }

    /// Sets the retry budget, for instance one shared by every server of a daemon: a
    /// [`RetryBudget`], tower's `TpsBudget`, or any other [`Budget`]. Every request deposits
    /// once, every retry withdraws once. An `Arc<RetryBudget>` (or any `Arc<B: Budget>`)
    /// coerces at the call site.
    pub fn budget(mut self, budget: Arc<dyn Budget + Send + Sync>) -> Self {
        self.budget = budget;
        self
    }

    /// The backoff.
    pub const fn backoff(&self) -> &JitteredBackoff<R> {
        &self.backoff
    }
}

impl<R> fmt::Debug for RetryPolicy<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("backoff", &self.backoff)
            .field("max_attempts", &self.max_attempts)
            .field("budget", &"..")
            .field("attempts", &self.attempts)
            .finish()
    }
}

impl<Req, Res, R> Policy<Req, Res, BoxError> for RetryPolicy<R>
where
    Req: RetrySafe + Clone,
    R: JitterRng,
{
    type Future = tokio::time::Sleep;

    fn retry(&mut self, req: &mut Req, result: &mut Result<Res, BoxError>) -> Option<Self::Future> {
        self.attempts = self.attempts.saturating_add(1);
        if self.attempts == 1 {
            self.budget.deposit();
        }
        let err = result.as_ref().err()?;
        // The index of the attempt a retry would make (0 was the first call).
        let attempt = self.attempts;
        let not_sent = NotSent::in_chain(&**err);
        let reason = if Final::in_chain(&**err) {
            "the server ran the request to an outcome (a task): sending it again would run it again"
        } else if !not_sent && !req.retry_safe() {
            "the request may have reached the server and is not retry-safe"
        } else if attempt >= self.max_attempts {
            "no attempts left"
        } else if !self.budget.withdraw() {
            "retry budget exhausted"
        } else {
            let delay = self.backoff.delay(attempt - 1);
            let backoff_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
            tracing::Span::current().record("attempt", attempt);
            tracing::debug!(attempt, backoff_ms, not_sent, error = %err, "retrying");
            return Some(tokio::time::sleep(delay));
        };
        tracing::debug!(attempt = attempt - 1, reason, error = %err, "not retrying");
        None
    }

    fn clone_request(&mut self, req: &Req) -> Option<Req> {
        Some(req.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Call {
        safe: bool,
    }

    impl RetrySafe for Call {
        fn retry_safe(&self) -> bool {
            self.safe
        }
    }

    fn policy() -> RetryPolicy<impl JitterRng + Clone> {
        RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(30))
            .unwrap()
            .rng(|| 1.0)
            .max_attempts(4)
    }

    fn sent_error() -> Result<&'static str, BoxError> {
        Err("connection reset after write".into())
    }

    fn not_sent_error() -> Result<&'static str, BoxError> {
        Err(NotSent::new("spawn failed").into())
    }

    #[tokio::test]
    async fn never_retries_an_ok_response() {
        let mut p = policy();
        let mut ok: Result<&str, BoxError> = Ok("fine");
        assert!(p.retry(&mut Call { safe: true }, &mut ok).is_none());
    }

    #[tokio::test]
    async fn does_not_retry_a_sent_error_of_an_unsafe_request() {
        let mut p = policy();
        assert!(p
            .retry(&mut Call { safe: false }, &mut sent_error())
            .is_none());
    }

    #[tokio::test]
    async fn retries_a_sent_error_of_a_retry_safe_request() {
        let mut p = policy();
        assert!(p
            .retry(&mut Call { safe: true }, &mut sent_error())
            .is_some());
    }

    #[tokio::test]
    async fn retries_not_sent_whatever_the_request() {
        let mut p = policy();
        assert!(p
            .retry(&mut Call { safe: false }, &mut not_sent_error())
            .is_some());
    }

    #[tokio::test]
    async fn retries_not_sent_found_under_another_error() {
        let mut p = policy();
        let nested: BoxError = Box::new(std::io::Error::other(NotSent::new("refused")));
        let mut result: Result<&str, BoxError> = Err(nested);
        assert!(p.retry(&mut Call { safe: false }, &mut result).is_some());
    }

    #[tokio::test]
    async fn stops_after_max_attempts() {
        let mut p = policy(); // 4 attempts: 3 retries
        let req = &mut Call { safe: false };
        for _ in 0..3 {
            assert!(p.retry(req, &mut not_sent_error()).is_some());
        }
        assert!(p.retry(req, &mut not_sent_error()).is_none());
    }

    #[tokio::test]
    async fn zero_max_attempts_means_no_retry() {
        let mut p = policy().max_attempts(0);
        assert!(p
            .retry(&mut Call { safe: true }, &mut not_sent_error())
            .is_none());
    }

    #[tokio::test]
    async fn stops_when_the_budget_is_exhausted() {
        let empty = Arc::new(RetryBudget::new(0.0, 0, 0));
        let mut p = policy().budget(empty);
        assert!(p
            .retry(&mut Call { safe: true }, &mut not_sent_error())
            .is_none());
        // Any tower budget will do.
        let empty = Arc::new(tower::retry::budget::TpsBudget::new(
            Duration::from_secs(1),
            0,
            0.0,
        ));
        let mut p = policy().budget(empty);
        assert!(p
            .retry(&mut Call { safe: true }, &mut not_sent_error())
            .is_none());
    }

    #[tokio::test]
    async fn the_default_budget_earns_a_fifth_of_a_retry_per_request() {
        let budget = Arc::new(RetryBudget::new(0.2, 0, 100));
        while budget.withdraw() {}
        let template = policy().max_attempts(10).budget(budget.clone());
        // Five requests that succeed deposit one retry between them.
        for _ in 0..5 {
            let mut p = template.clone();
            assert!(p
                .retry(&mut Call { safe: true }, &mut Ok::<&str, BoxError>("fine"))
                .is_none());
        }
        let mut p = template.clone();
        assert!(p
            .retry(&mut Call { safe: true }, &mut not_sent_error())
            .is_some());
        assert!(
            p.retry(&mut Call { safe: true }, &mut not_sent_error())
                .is_none(),
            "the one retry earned is spent"
        );
    }

    #[tokio::test]
    async fn clones_start_their_own_attempt_count() {
        let template = policy().max_attempts(2);
        let mut first = template.clone();
        assert!(first
            .retry(&mut Call { safe: true }, &mut sent_error())
            .is_some());
        assert!(first
            .retry(&mut Call { safe: true }, &mut sent_error())
            .is_none());
        let mut second = template.clone();
        assert!(second
            .retry(&mut Call { safe: true }, &mut sent_error())
            .is_some());
    }

    #[test]
    fn clones_the_request() {
        let mut p = policy();
        let req = Call { safe: true };
        assert_eq!(
            Policy::<Call, &str, BoxError>::clone_request(&mut p, &req),
            Some(req)
        );
    }

    #[test]
    fn debug_names_the_rng_type() {
        let p = RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(2)).unwrap();
        let text = format!("{p:?}");
        assert!(text.contains("XorShiftRng"), "{text}");
        assert!(text.contains("max_attempts: 3"), "{text}");
    }
}
