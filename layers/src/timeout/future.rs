//! Response future of [`ProgressTimeout`](super::ProgressTimeout).

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project::pin_project;
use std::sync::Arc;

use tokio::time::Instant;
use tower::BoxError;

use super::alarm::{Alarm, Alarms};
use super::error::{Elapsed, ElapsedKind};
use super::progress::ProgressHandle;

/// Response future for [`ProgressTimeout`](super::ProgressTimeout): the inner call raced
/// against one timer (a slot in the layer's table of deadlines, see the module docs).
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
    sleep: Alarm,
    progress: Option<ProgressHandle>,
    idle: Duration,
    total: Duration,
    cap: Instant,
    start: Instant,
    /// A hold was on when the timer was last armed ([`ProgressHandle::hold_until`]).
    held: bool,
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(
        inner: F,
        alarms: &Arc<Alarms>,
        progress: Option<ProgressHandle>,
        idle: Duration,
        total: Duration,
    ) -> Self {
        let now = Instant::now();
        let cap = deadline(now, total);
        if let Some(p) = &progress {
            p.set_idle_limit(idle);
        }
        Self {
            inner,
            sleep: Alarm::new(alarms, now, deadline(now, idle).min(cap)),
            progress,
            idle,
            total,
            cap,
            start: now,
            held: false,
        }
    }
}

/// When the idle limit ends the call now: `idle` after the last progress (or the start),
/// not before a hold ends (not at all while a person holds it), never after the cap.
fn idle_end(p: &ProgressHandle, start: Instant, idle: Duration, cap: Instant) -> Instant {
    if p.held_for_person() {
        return cap;
    }
    let base = deadline(p.last_progress().unwrap_or(start), idle);
    p.held_until().map_or(base, |h| base.max(h)).min(cap)
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
        let this = self.project();
        if let Poll::Ready(out) = this.inner.poll(cx) {
            return Poll::Ready(out.map_err(Into::into));
        }
        // While a hold is on (and once as it ends), the timer follows it: a hold that ends
        // early wakes this future, which then arms the timer where the idle limit now falls.
        if let Some(p) = this.progress.as_ref() {
            let holding = p.held_until().is_some() || p.held_for_person();
            if holding || *this.held {
                p.register(cx.waker());
                let target = idle_end(p, *this.start, *this.idle, *this.cap);
                if target != this.sleep.deadline() {
                    this.sleep.reset(target);
                }
                *this.held = holding;
            }
        }
        loop {
            ready!(this.sleep.poll(cx));
            // The limit that ends the call: the timer's, or a later one progress allows.
            let mut end = this.sleep.deadline();
            if end < *this.cap {
                if let Some(p) = this.progress.as_ref() {
                    let next = idle_end(p, *this.start, *this.idle, *this.cap);
                    if next > Instant::now() {
                        tracing::trace!(
                            idle_ms = millis(*this.idle),
                            "progress reported; idle timer moved"
                        );
                        this.sleep.reset(next);
                        continue;
                    }
                    end = end.max(next);
                }
            }
            let elapsed = if end >= *this.cap {
                Elapsed::new(ElapsedKind::Total, *this.total)
            } else {
                let idle = Elapsed::new(ElapsedKind::Idle, *this.idle);
                match this
                    .progress
                    .as_ref()
                    .and_then(ProgressHandle::asked_interval)
                {
                    Some(asked) => idle.with_asked_interval(asked),
                    None => idle,
                }
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
