//! [`ProgressHandle`]: how a call in flight tells its timeout that it is making progress.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;
use std::time::Duration;

use tokio::time::Instant;

/// A cheap, clonable handle a call's owner [`notify`](Self::notify)s whenever the server
/// reports progress (an MCP `notifications/progress` for the call's token).
///
/// `notify` records the time in two atomics and wakes nobody: the
/// [`ProgressTimeout`](super::ProgressTimeout) future reads the last progress time only when its
/// idle timer fires, and then moves the timer once. A burst of notifications therefore costs no
/// wake-up and at most one deadline moved per idle period.
///
/// Times come from [`tokio::time::Instant`], so paused test time applies.
#[derive(Clone)]
pub struct ProgressHandle {
    shared: Arc<Shared>,
}

/// What a server said of a call's progress (an MCP `notifications/progress`), for whoever
/// watches the call ([`ProgressHandle::observed`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

impl Progress {
    /// A report of `progress` out of `total`, with the server's `message`.
    pub fn new(progress: f64, total: Option<f64>, message: Option<String>) -> Self {
        Self {
            progress,
            total,
            message,
            status: None,
        }
    }

    /// A status change of the task running the call: `status` (`working`, …), and `message`
    /// as [`Progress::status`] describes it.
    pub fn task_status(status: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            progress: 0.0,
            total: None,
            message: Some(message.into()),
            status: Some(status.into()),
        }
    }
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
    /// Nanoseconds from `origin` to the end of a hold ([`ProgressHandle::hold_until`]), plus
    /// one; 0 when no hold.
    hold: AtomicU64,
    /// The wait the server asked for that the last hold covered, in milliseconds plus one; 0
    /// when none was ever held.
    asked_ms: AtomicU64,
    /// The idle limit the call is measured against, in nanoseconds plus one (set by the
    /// timeout when the call starts); 0 when no timeout watches the handle.
    idle: AtomicU64,
    /// How many people the call waits for now ([`ProgressHandle::hold_for_person`]); the
    /// idle limit is off while it is not 0.
    people: AtomicU64,
    /// The timeout's waker while a hold is on, so that a hold that ends early wakes it.
    waker: Mutex<Option<Waker>>,
}

impl Shared {
    fn new(observer: Option<ProgressObserver>) -> Self {
        Self {
            origin: Instant::now(),
            last: AtomicU64::new(0),
            count: AtomicU64::new(0),
            observer,
            hold: AtomicU64::new(0),
            asked_ms: AtomicU64::new(0),
            idle: AtomicU64::new(0),
            people: AtomicU64::new(0),
            waker: Mutex::new(None),
        }
    }

    fn nanos_to(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.origin);
        u64::try_from(since.as_nanos())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1)
    }

    fn instant(&self, nanos: u64) -> Option<Instant> {
        (nanos != 0).then(|| self.origin + Duration::from_nanos(nanos - 1))
    }
}

impl ProgressHandle {
    /// A handle that has seen no progress.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared::new(None)),
        }
    }

    /// A handle whose every [`report`](Self::report) is also handed to `observer` (a command
    /// line showing a long call's progress, a daemon relaying it to its agent).
    pub fn observed(observer: ProgressObserver) -> Self {
        Self {
            shared: Arc::new(Shared::new(Some(observer))),
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
        self.shared
            .instant(self.shared.last.load(Ordering::Relaxed))
    }

    /// When the handle was made: the start of the call's silence until its first progress.
    pub fn created(&self) -> Instant {
        self.shared.origin
    }

    /// The caller waits, at the server's request, until `until` before it can see progress
    /// again (an MCP task's `pollInterval` of `asked`, the poll's own answer included): the
    /// idle limit does not end the call before then. A hold replaces the previous one; it
    /// ends at `until` or at [`release`](Self::release). Whoever holds decides when silence
    /// is established: hold only while the last look could have seen progress and the idle
    /// limit had not passed, or a call that makes none never times out (the total cap still
    /// ends it). A timeout that fires after a hold says the server's interval was the reason.
    pub fn hold_until(&self, until: Instant, asked: Duration) {
        let ms = u64::try_from(asked.as_millis()).unwrap_or(u64::MAX - 1);
        self.shared
            .asked_ms
            .store(ms.saturating_add(1), Ordering::Relaxed);
        self.shared
            .hold
            .store(self.shared.nanos_to(until), Ordering::Release);
        self.wake();
    }

    /// Ends the hold now (the poll it covered was answered).
    pub fn release(&self) {
        if self.shared.hold.swap(0, Ordering::AcqRel) != 0 {
            self.wake();
        }
    }

    /// When the current hold ends, `None` without one.
    pub fn held_until(&self) -> Option<Instant> {
        self.shared
            .instant(self.shared.hold.load(Ordering::Acquire))
    }

    /// The call waits for a person (a form the server asked the client to fill): the idle
    /// limit does not run until the returned guard drops (the total cap still does). Apart
    /// from [`hold_until`](Self::hold_until): a poll answered while the person types
    /// ([`release`](Self::release)) does not end this hold, and a timeout after it does not
    /// blame the server's interval. When the last person's guard drops, progress is recorded
    /// ([`notify`](Self::notify)): the idle limit starts again from there.
    #[must_use = "the hold ends when the guard drops"]
    pub fn hold_for_person(&self) -> PersonHold {
        self.shared.people.fetch_add(1, Ordering::AcqRel);
        self.wake();
        PersonHold(self.clone())
    }

    /// Whether a person holds the idle limit now ([`hold_for_person`](Self::hold_for_person)).
    pub fn held_for_person(&self) -> bool {
        self.shared.people.load(Ordering::Acquire) != 0
    }

    /// The server's asked wait that a hold last covered, `None` if the handle was never held.
    pub fn asked_interval(&self) -> Option<Duration> {
        match self.shared.asked_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms - 1)),
        }
    }

    /// The idle limit a [`ProgressTimeout`](super::ProgressTimeout) measures this call
    /// against, once the call started under one.
    pub fn idle_limit(&self) -> Option<Duration> {
        match self.shared.idle.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos - 1)),
        }
    }

    pub(super) fn set_idle_limit(&self, idle: Duration) {
        let nanos = u64::try_from(idle.as_nanos()).unwrap_or(u64::MAX - 1);
        self.shared
            .idle
            .store(nanos.saturating_add(1), Ordering::Relaxed);
    }

    /// Keeps `waker` to wake when a hold changes (the timeout registers while one is on).
    pub(super) fn register(&self, waker: &Waker) {
        let mut slot = self
            .shared
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Some(w) if w.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
    }

    fn wake(&self) {
        let waker = self
            .shared
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// A person's hold on a call's idle limit ([`ProgressHandle::hold_for_person`]): it ends, and
/// the idle limit starts again, when this drops.
#[derive(Debug)]
pub struct PersonHold(ProgressHandle);

impl Drop for PersonHold {
    fn drop(&mut self) {
        let handle = &self.0;
        handle.notify();
        handle.shared.people.fetch_sub(1, Ordering::AcqRel);
        handle.wake();
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
