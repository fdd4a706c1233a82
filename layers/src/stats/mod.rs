//! Counts every call and its outcome, and estimates its latency quantiles, in bounded memory:
//! the numbers an operator reads for a daemon that runs for weeks.
//!
//! [`Stats`] records, per call: that it happened, whether it succeeded, ended in a result the
//! response itself marks as an error ([`Outcome::is_error`]: an MCP `isError` result), timed
//! out (this crate's [`timeout::Elapsed`](crate::timeout::Elapsed) or tower's), or failed
//! otherwise; and its latency in a fixed log-scale histogram (4 buckets per power of two from
//! 1 µs to about 78 hours, 153 counters: 1.2 KiB whatever the traffic), from which
//! [`CallStats::snapshot`] reads p50 and p99 at most 25 % high (a bucket's upper bound).
//!
//! The cost per call: two clock reads and three relaxed atomic additions; no lock, no
//! allocation. No existing tower layer keeps quantiles in bounded memory (tower's `load`
//! module keeps a moving average for balancing), hence this one.
//!
//! # Example
//! ```
//! # use std::sync::Arc;
//! # use kaged_mcp_layers::stats::{CallStats, Outcome, StatsLayer};
//! # use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
//! struct Answer(bool);
//! impl Outcome for Answer {
//!     fn is_error(&self) -> bool { self.0 }
//! }
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! let stats = Arc::new(CallStats::new());
//! let svc = ServiceBuilder::new()
//!     .layer(StatsLayer::new(stats.clone()))
//!     .service(service_fn(|fail: bool| async move { Ok::<_, BoxError>(Answer(fail)) }));
//! svc.clone().oneshot(false).await?;
//! svc.oneshot(true).await?;
//! let s = stats.snapshot();
//! assert_eq!((s.calls, s.errors, s.failures, s.timeouts), (2, 1, 0, 0));
//! assert!(s.p50.is_some());
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use pin_project::pin_project;
use tower::{BoxError, Layer, Service};

/// A response that may itself report a failure (an MCP result with `isError: true`).
pub trait Outcome {
    /// Whether the response reports an error.
    fn is_error(&self) -> bool;
}

/// Sub-buckets per power of two.
const SUB: u32 = 4;
/// The first bucket ends at 2^FIRST ns (~1 µs); the last is open-ended.
const FIRST: u32 = 10;
/// Powers of two covered: 2^10 ns .. 2^48 ns (~78 h; the last bucket takes the rest).
const POWERS: u32 = 38;
/// Bucket 0 (under 2^FIRST ns), then SUB per power of two.
const BUCKETS: usize = (POWERS * SUB) as usize + 1;

/// The counters of one service: shared by its clones, read with [`CallStats::snapshot`].
pub struct CallStats {
    calls: AtomicU64,
    errors: AtomicU64,
    failures: AtomicU64,
    timeouts: AtomicU64,
    latency: [AtomicU64; BUCKETS],
}

impl fmt::Debug for CallStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallStats")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

impl Default for CallStats {
    fn default() -> Self {
        Self::new()
    }
}

/// What [`CallStats`] counted so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StatsSnapshot {
    /// Calls that ended (however they ended).
    pub calls: u64,
    /// Calls answered with a response that reports an error ([`Outcome::is_error`]).
    pub errors: u64,
    /// Calls that failed, timeouts excluded.
    pub failures: u64,
    /// Calls that timed out.
    pub timeouts: u64,
    /// The median latency (a bucket's upper bound), `None` before the first call.
    pub p50: Option<Duration>,
    /// The 99th percentile latency (a bucket's upper bound), `None` before the first call.
    pub p99: Option<Duration>,
}

impl CallStats {
    /// Counters at zero.
    pub fn new() -> Self {
        Self {
            calls: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            latency: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts one call that took `latency`; `outcome` says how it ended.
    fn record(&self, latency: Duration, outcome: Ended) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let counter = match outcome {
            Ended::Ok => None,
            Ended::Error => Some(&self.errors),
            Ended::Failure => Some(&self.failures),
            Ended::Timeout => Some(&self.timeouts),
        };
        if let Some(c) = counter {
            c.fetch_add(1, Ordering::Relaxed);
        }
        self.latency[bucket(latency)].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts and the latency quantiles now.
    pub fn snapshot(&self) -> StatsSnapshot {
        let counts: Vec<u64> = self
            .latency
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        let quantile = |q: f64| -> Option<Duration> {
            if total == 0 {
                return None;
            }
            // The smallest bucket whose cumulative count reaches q of the total.
            let rank = ((total as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            counts.iter().enumerate().find_map(|(i, c)| {
                seen += c;
                (seen >= rank).then(|| upper_bound(i))
            })
        };
        StatsSnapshot {
            calls: self.calls.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            p50: quantile(0.5),
            p99: quantile(0.99),
        }
    }
}

/// The bucket of `latency`: below 2^FIRST ns the first, then SUB per power of two.
fn bucket(latency: Duration) -> usize {
    let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
    let power = 63 - ns.leading_zeros(); // floor(log2 ns)
    if power < FIRST {
        return 0;
    }
    // The SUB sub-buckets split [2^power, 2^(power+1)) evenly.
    let sub = ((ns >> power.saturating_sub(2)) & u64::from(SUB - 1)) as u32;
    let index = (power - FIRST) * SUB + sub + 1;
    (index as usize).min(BUCKETS - 1)
}

/// The upper bound of bucket `i`.
fn upper_bound(i: usize) -> Duration {
    if i == 0 {
        return Duration::from_nanos(1 << FIRST);
    }
    let i = (i - 1) as u32;
    let power = FIRST + i / SUB;
    let sub = u64::from(i % SUB) + 1;
    // [2^p + (sub-1)·2^(p-2), 2^p + sub·2^(p-2)): the upper bound is 2^p·(1 + sub/4).
    Duration::from_nanos((1u64 << power) + sub * (1u64 << (power - 2)))
}

#[derive(Debug, Clone, Copy)]
enum Ended {
    Ok,
    Error,
    Failure,
    Timeout,
}

/// Counts the calls of the service it wraps into a [`CallStats`]. See the
/// [module docs](self) for an example.
#[derive(Debug, Clone)]
pub struct StatsLayer {
    stats: Arc<CallStats>,
}

impl StatsLayer {
    /// Counts into `stats`.
    pub fn new(stats: Arc<CallStats>) -> Self {
        Self { stats }
    }
}

impl<S> Layer<S> for StatsLayer {
    type Service = Stats<S>;
    fn layer(&self, inner: S) -> Stats<S> {
        Stats {
            inner,
            stats: Arc::clone(&self.stats),
        }
    }
}

/// Counts calls and their outcomes. See the [module docs](self) for an example.
#[derive(Debug, Clone)]
pub struct Stats<S> {
    inner: S,
    stats: Arc<CallStats>,
}

impl<S> Stats<S> {
    /// The counters.
    pub fn stats(&self) -> &Arc<CallStats> {
        &self.stats
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Req> Service<Req> for Stats<S>
where
    S: Service<Req>,
    S::Response: Outcome,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = future::ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        future::ResponseFuture {
            start: Instant::now(),
            inner: self.inner.call(req),
            stats: Arc::clone(&self.stats),
        }
    }
}

/// The response future of [`Stats`].
pub mod future {
    use super::*;

    /// Response future for [`Stats`].
    #[pin_project]
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        pub(super) inner: F,
        pub(super) start: Instant,
        pub(super) stats: Arc<CallStats>,
    }

    impl<F, T, E> Future for ResponseFuture<F>
    where
        F: Future<Output = Result<T, E>>,
        T: Outcome,
        E: Into<BoxError>,
    {
        type Output = Result<T, BoxError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = self.project();
            let result = ready!(this.inner.poll(cx)).map_err(Into::into);
            let ended = match &result {
                Ok(r) if r.is_error() => Ended::Error,
                Ok(_) => Ended::Ok,
                Err(e)
                    if e.is::<crate::timeout::Elapsed>()
                        || e.is::<tower::timeout::error::Elapsed>() =>
                {
                    Ended::Timeout
                }
                Err(_) => Ended::Failure,
            };
            this.stats.record(this.start.elapsed(), ended);
            Poll::Ready(result)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_bounds_cover_their_values() {
        let mut last = 0;
        for ns in [
            1u64,
            500,
            1023,
            1024,
            1300,
            2047,
            2048,
            10_000,
            1_000_000,
            5_000_000_000,
        ] {
            let b = bucket(Duration::from_nanos(ns));
            assert!(b >= last, "{ns}");
            last = b;
            assert!(
                upper_bound(b) >= Duration::from_nanos(ns),
                "{ns}: {:?}",
                upper_bound(b)
            );
            if b > 0 {
                // Within one bucket of the truth: at most 25 % above.
                assert!(
                    upper_bound(b).as_nanos() as f64 <= ns as f64 * 1.25 + 1.0,
                    "{ns}"
                );
            }
        }
        assert_eq!(bucket(Duration::from_secs(1_000_000)), BUCKETS - 1);
    }

    #[test]
    fn quantiles_come_from_the_histogram() {
        let s = CallStats::new();
        for _ in 0..98 {
            s.record(Duration::from_millis(1), Ended::Ok);
        }
        s.record(Duration::from_millis(100), Ended::Failure);
        s.record(Duration::from_secs(2), Ended::Timeout);
        let snap = s.snapshot();
        assert_eq!(
            (snap.calls, snap.errors, snap.failures, snap.timeouts),
            (100, 0, 1, 1)
        );
        let p50 = snap.p50.unwrap();
        assert!(
            p50 >= Duration::from_millis(1) && p50 <= Duration::from_micros(1250),
            "{p50:?}"
        );
        let p99 = snap.p99.unwrap();
        assert!(
            p99 >= Duration::from_millis(100) && p99 <= Duration::from_millis(125),
            "{p99:?}"
        );
        assert_eq!(CallStats::new().snapshot().p50, None);
    }
}
