//! [`ProgressHandle`]: how a call in flight tells its timeout that it is making progress.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

/// A cheap, clonable handle a call's owner [`notify`](Self::notify)s whenever the server
/// reports progress (an MCP `notifications/progress` for the call's token).
///
/// `notify` records the time in two atomics and wakes nobody: the
/// [`ProgressTimeout`](super::ProgressTimeout) future reads the last progress time only when its
/// idle timer fires, and then moves the timer once. A burst of notifications therefore costs no
/// wake-up and at most one timer reset per idle period, and needs no extra task.
///
/// Times come from [`tokio::time::Instant`], so paused test time applies.
#[derive(Clone)]
pub struct ProgressHandle {
    shared: Arc<Shared>,
}

/// What a server said of a call's progress (an MCP `notifications/progress`), for whoever
/// watches the call ([`ProgressHandle::observed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far; increases with each notification.
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// The server's words, if any.
    pub message: Option<String>,
    /// When the report is a status change of the task running the call (MCP tasks): the
    /// task's status (`working`, `input_required`, …); `progress` is then 0 and `total`
    /// `None`, and `message` reads `<status>: <the server's words>`.
    pub status: Option<String>,
}

/// Sees each [`Progress`] of a call: called on the connection's reader (outside the client's
/// locks, so it may use the client), so it must be quick: hand the report on, do not wait.
pub type ProgressObserver = Arc<dyn Fn(&Progress) + Send + Sync>;

struct Shared {
    origin: Instant,
    /// Nanoseconds from `origin` to the last notification, plus one; 0 when never notified.
    last: AtomicU64,
    count: AtomicU64,
    observer: Option<ProgressObserver>,
}

impl ProgressHandle {
    /// A handle that has seen no progress.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                origin: Instant::now(),
                last: AtomicU64::new(0),
                count: AtomicU64::new(0),
                observer: None,
            }),
        }
    }

    /// A handle whose every [`report`](Self::report) is also handed to `observer` (a command
    /// line showing a long call's progress, a daemon relaying it to its agent).
    pub fn observed(observer: ProgressObserver) -> Self {
        Self {
            shared: Arc::new(Shared {
                origin: Instant::now(),
                last: AtomicU64::new(0),
                count: AtomicU64::new(0),
                observer: Some(observer),
            }),
        }
    }

    /// Whether [`report`](Self::report) has anyone to tell: when not, the caller need not
    /// build a [`Progress`].
    pub fn is_observed(&self) -> bool {
        self.shared.observer.is_some()
    }

    /// Records progress now ([`notify`](Self::notify)) and hands `progress` to the observer.
    pub fn report(&self, progress: &Progress) {
        self.notify();
        if let Some(observer) = &self.shared.observer {
            observer(progress);
        }
    }

    /// Records progress now.
    pub fn notify(&self) {
        let since = self.shared.origin.elapsed();
        let nanos = u64::try_from(since.as_nanos())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1);
        self.shared.last.fetch_max(nanos, Ordering::Relaxed);
        self.shared.count.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times [`notify`](Self::notify) was called, on this handle or a clone.
    pub fn notifications(&self) -> u64 {
        self.shared.count.load(Ordering::Relaxed)
    }

    /// When progress was last recorded, `None` if never.
    pub fn last_progress(&self) -> Option<Instant> {
        match self.shared.last.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(self.shared.origin + Duration::from_nanos(nanos - 1)),
        }
    }
}

impl Default for ProgressHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ProgressHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressHandle")
            .field("notifications", &self.notifications())
            .field("last_progress", &self.last_progress())
            .field("observed", &self.is_observed())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn records_the_time_of_the_last_notification() {
        let handle = ProgressHandle::new();
        assert_eq!(handle.last_progress(), None);
        tokio::time::advance(Duration::from_secs(2)).await;
        let clone = handle.clone();
        clone.notify();
        let at = Instant::now();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(handle.last_progress(), Some(at));
        assert_eq!(handle.notifications(), 1);
        handle.notify();
        assert_eq!(clone.last_progress(), Some(at + Duration::from_secs(1)));
        assert_eq!(clone.notifications(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_observed_handle_hands_each_report_on_and_counts_it() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let handle = ProgressHandle::observed(Arc::new(move |p: &Progress| {
            sink.lock().unwrap().push(p.clone());
        }));
        assert!(handle.is_observed() && !ProgressHandle::new().is_observed());
        let p = Progress {
            progress: 1.0,
            total: Some(3.0),
            message: Some("step 1".into()),
            status: None,
        };
        handle.clone().report(&p);
        assert_eq!(*seen.lock().unwrap(), vec![p]);
        assert_eq!(handle.notifications(), 1);
        assert!(handle.last_progress().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_notification_at_creation_counts() {
        let handle = ProgressHandle::new();
        handle.notify();
        assert_eq!(handle.last_progress(), Some(handle.shared.origin));
    }
}
