//! Response future of [`ProgressTimeout`](super::ProgressTimeout).

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project::pin_project;
use tokio::time::{Instant, Sleep};
use tower::BoxError;

use super::error::{Elapsed, ElapsedKind};
use super::progress::ProgressHandle;

/// Response future for [`ProgressTimeout`](super::ProgressTimeout): the inner call raced
/// against one timer.
///
/// The timer is armed at `min(start + idle, start + total)`. When it fires before the cap, the
/// future looks at the [`ProgressHandle`]: if progress came less than `idle` ago, it moves the
/// timer to `min(last + idle, start + total)` and waits again; otherwise the call fails with
/// [`ElapsedKind::Idle`]. When it fires at the cap, the call fails with [`ElapsedKind::Total`].
#[pin_project]
#[derive(Debug)]
pub struct ResponseFuture<F> {
    #[pin]
    inner: F,
    #[pin]
    sleep: Sleep,
    progress: Option<ProgressHandle>,
    idle: Duration,
    total: Duration,
    cap: Instant,
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(
        inner: F,
        progress: Option<ProgressHandle>,
        idle: Duration,
        total: Duration,
    ) -> Self {
        let now = Instant::now();
        let cap = deadline(now, total);
        Self {
            inner,
            sleep: tokio::time::sleep_until(deadline(now, idle).min(cap)),
            progress,
            idle,
            total,
            cap,
        }
    }
}

/// `from + after`, or about 30 years from `from` when that overflows.
fn deadline(from: Instant, after: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);
    from.checked_add(after)
        .unwrap_or_else(|| from + FAR.min(after))
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(out) = this.inner.poll(cx) {
            return Poll::Ready(out.map_err(Into::into));
        }
        loop {
            ready!(this.sleep.as_mut().poll(cx));
            // The limit that ends the call: the timer's, or a later one progress allows.
            let mut end = this.sleep.deadline();
            if end < *this.cap {
                let last = this
                    .progress
                    .as_ref()
                    .and_then(ProgressHandle::last_progress);
                if let Some(next) = last.map(|at| deadline(at, *this.idle).min(*this.cap)) {
                    if next > Instant::now() {
                        tracing::trace!(
                            idle_ms = millis(*this.idle),
                            "progress reported; idle timer moved"
                        );
                        this.sleep.as_mut().reset(next);
                        continue;
                    }
                    end = end.max(next);
                }
            }
            let elapsed = if end >= *this.cap {
                Elapsed::new(ElapsedKind::Total, *this.total)
            } else {
                Elapsed::new(ElapsedKind::Idle, *this.idle)
            };
            tracing::debug!(
                kind = ?elapsed.kind(),
                timeout_ms = millis(elapsed.after()),
                "call timed out"
            );
            return Poll::Ready(Err(elapsed.into()));
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
