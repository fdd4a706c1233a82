//! The timers of [`ProgressTimeout`](super::ProgressTimeout)'s calls: a table of deadlines
//! shared by the layer's clones and one sweeper task, not a tokio timer per call.
//!
//! Making, registering and cancelling a tokio timer (its wheel entry, the runtime handle it
//! clones, its waker) was ~1 000 of the ~14 700 instructions of a call through the standard
//! stack (benches/README.md, "Round 4, session 6"), and nearly every call ends long before its
//! deadline. Here a call writes its deadline and its waker into a slot of the table when it
//! first waits, and frees the slot when it ends.
//!
//! - **The sweeper.** One task per table (spawned on the runtime of the first call that waits)
//!   sleeps until the earliest deadline it saw when it last looked, wakes the calls whose
//!   deadline has passed, and looks again. A call whose deadline is earlier than that wakes it
//!   at once; the calls of one stack share one timeout, so a later call never does. With no
//!   call waiting it parks with no timer: an idle process is not woken. After the last call it
//!   wakes once more, at the deadline it slept for, to find that out.
//! - **A call reads the clock itself** when it is polled again, so seeing its own deadline pass
//!   never waits on the sweeper having run.
//! - **Another runtime.** A call that waits on another runtime than the sweeper's, while that
//!   one still runs (an embedder sharing a stack between two runtimes), gets a tokio timer of its
//!   own, as every call did before; a sweeper whose runtime has shut down is replaced.
//! - **The table's end.** The sweeper holds the table weakly, and dropping the table (the last
//!   clone of the service) aborts it.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use tokio::runtime::{Handle, Id};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};

/// The deadlines of one layer instance's waiting calls, and its sweeper.
#[derive(Debug, Default)]
pub(crate) struct Alarms {
    state: Mutex<State>,
    /// Wakes the sweeper for a deadline earlier than the one it sleeps until.
    earlier: Arc<Notify>,
}

#[derive(Debug, Default)]
struct State {
    slots: Vec<Slot>,
    free: Vec<usize>,
    sweeper: Option<Sweeper>,
}

#[derive(Debug)]
struct Slot {
    deadline: Instant,
    /// `None` once the sweeper woke the call, until it is polled again.
    waker: Option<Waker>,
    used: bool,
}

#[derive(Debug)]
struct Sweeper {
    runtime: Id,
    task: JoinHandle<()>,
    /// The deadline it sleeps until, or will once it looks; `None` when parked.
    armed: Option<Instant>,
}

impl Alarms {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes every call whose deadline has passed; the earliest deadline still ahead.
    fn sweep(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        let mut state = self.lock();
        for slot in state.slots.iter_mut().filter(|s| s.used) {
            if slot.deadline <= now {
                due.extend(slot.waker.take());
            } else {
                next = Some(next.map_or(slot.deadline, |n| n.min(slot.deadline)));
            }
        }
        if let Some(sweeper) = &mut state.sweeper {
            sweeper.armed = next;
        }
        drop(state);
        // Woken outside the lock: a waker may run anything.
        due.into_iter().for_each(Waker::wake);
        next
    }
}

impl Drop for Alarms {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(sweeper) = state.sweeper.take() {
            sweeper.task.abort();
        }
    }
}

/// The sweeper's loop; see the module docs.
async fn sweep(alarms: Weak<Alarms>, earlier: Arc<Notify>) {
    loop {
        // Enabled before looking, so that a call registering after the look is not missed.
        let mut notified = pin!(earlier.notified());
        notified.as_mut().enable();
        let next = match alarms.upgrade() {
            Some(alarms) => alarms.sweep(),
            None => return,
        };
        match next {
            Some(at) => {
                let mut sleep = pin!(tokio::time::sleep_until(at));
                std::future::poll_fn(|cx| {
                    if notified.as_mut().poll(cx).is_ready() || sleep.as_mut().poll(cx).is_ready() {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                })
                .await;
            }
            None => notified.await,
        }
    }
}

/// One call's timer: what [`tokio::time::Sleep`] was to it (`deadline`, `reset`, `poll`).
#[derive(Debug)]
pub(crate) struct Alarm {
    alarms: Arc<Alarms>,
    deadline: Instant,
    /// When the call started: a deadline at or before it has passed at the first poll.
    start: Instant,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Not polled yet.
    New,
    /// Its slot in the table.
    Slot(usize),
    /// A tokio timer of its own (another runtime than the sweeper's).
    Own(Pin<Box<Sleep>>),
}

impl Alarm {
    /// An alarm at `deadline` for a call that started at `start`.
    pub(crate) fn new(alarms: &Arc<Alarms>, start: Instant, deadline: Instant) -> Self {
        Self {
            alarms: Arc::clone(alarms),
            deadline,
            start,
            kind: Kind::New,
        }
    }

    /// The deadline.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Moves the deadline.
    pub(crate) fn reset(&mut self, deadline: Instant) {
        self.deadline = deadline;
        match &mut self.kind {
            Kind::New => {}
            Kind::Own(sleep) => sleep.as_mut().reset(deadline),
            Kind::Slot(key) => {
                let mut state = self.alarms.lock();
                if let Some(slot) = state.slots.get_mut(*key) {
                    slot.deadline = deadline;
                }
                let wake = arm(&mut state, deadline);
                drop(state);
                if wake {
                    self.alarms.earlier.notify_one();
                }
            }
        }
    }

    /// Ready once the deadline has passed.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.kind {
            Kind::Own(sleep) => sleep.as_mut().poll(cx),
            Kind::Slot(key) => {
                if Instant::now() >= self.deadline {
                    return Poll::Ready(());
                }
                let mut state = self.alarms.lock();
                if let Some(slot) = state.slots.get_mut(*key) {
                    if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        let old = slot.waker.replace(cx.waker().clone());
                        drop(state);
                        drop(old);
                    }
                }
                Poll::Pending
            }
            Kind::New => {
                if self.deadline <= self.start {
                    return Poll::Ready(());
                }
                self.register(cx)
            }
        }
    }

    fn register(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let runtime = Handle::current();
        let mut state = self.alarms.lock();
        let spawn = match &state.sweeper {
            None => true,
            Some(s) if s.task.is_finished() => true,
            Some(s) if s.runtime == runtime.id() => false,
            Some(_) => {
                drop(state);
                return self.own(cx);
            }
        };
        if spawn {
            // A runtime without timers fails here, in the call, as a tokio timer of the call's
            // own did; not later in the sweeper, where it would leave every call untimed.
            drop(tokio::time::sleep_until(self.deadline));
            let task = runtime.spawn(sweep(
                Arc::downgrade(&self.alarms),
                Arc::clone(&self.alarms.earlier),
            ));
            state.sweeper = Some(Sweeper {
                runtime: runtime.id(),
                task,
                armed: None,
            });
        }
        let slot = Slot {
            deadline: self.deadline,
            waker: Some(cx.waker().clone()),
            used: true,
        };
        let key = match state.free.pop() {
            Some(key) => {
                state.slots[key] = slot;
                key
            }
            None => {
                state.slots.push(slot);
                state.slots.len() - 1
            }
        };
        self.kind = Kind::Slot(key);
        let wake = arm(&mut state, self.deadline);
        drop(state);
        if wake {
            self.alarms.earlier.notify_one();
        }
        Poll::Pending
    }

    #[cold]
    fn own(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut sleep = Box::pin(tokio::time::sleep_until(self.deadline));
        let polled = sleep.as_mut().poll(cx);
        self.kind = Kind::Own(sleep);
        polled
    }
}

/// Whether the sweeper must be woken for `deadline` (earlier than the one it sleeps until, or
/// it is parked); it then counts as armed for it.
fn arm(state: &mut State, deadline: Instant) -> bool {
    match &mut state.sweeper {
        Some(sweeper) if sweeper.armed.is_none_or(|armed| deadline < armed) => {
            sweeper.armed = Some(deadline);
            true
        }
        _ => false,
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        if let Kind::Slot(key) = self.kind {
            let mut state = self.alarms.lock();
            let waker = state.slots.get_mut(key).and_then(|slot| {
                slot.used = false;
                slot.waker.take()
            });
            state.free.push(key);
            drop(state);
            drop(waker);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// Waits on `alarm` in a task of its own; the task's output is when it was woken.
    fn wait(mut alarm: Alarm) -> JoinHandle<Instant> {
        tokio::spawn(async move {
            std::future::poll_fn(|cx| alarm.poll(cx)).await;
            Instant::now()
        })
    }

    fn armed(alarms: &Alarms) -> Option<Instant> {
        alarms.lock().sweeper.as_ref().and_then(|s| s.armed)
    }

    #[tokio::test(start_paused = true)]
    async fn each_call_is_woken_at_its_own_deadline_by_the_sweeper() {
        let alarms = Arc::new(Alarms::default());
        let t0 = Instant::now();
        // Registered latest first: each earlier deadline wakes the sweeper early.
        let tasks: Vec<_> = [9, 4, 6, 2]
            .into_iter()
            .map(|s| (s, wait(Alarm::new(&alarms, t0, t0 + secs(s)))))
            .collect();
        for (s, task) in tasks {
            assert_eq!(task.await.unwrap() - t0, secs(s));
        }
        // Nobody waits now: the sweeper parked, with no timer.
        tokio::time::sleep(secs(60)).await;
        assert_eq!(armed(&alarms), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_moved_deadline_is_kept_and_an_ended_call_frees_its_slot() {
        let alarms = Arc::new(Alarms::default());
        let t0 = Instant::now();
        let mut moved = Alarm::new(&alarms, t0, t0 + secs(3));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(moved.poll(&mut cx).is_pending());
        moved.reset(t0 + secs(8));
        assert_eq!(moved.deadline(), t0 + secs(8));
        let woken = wait(moved);
        assert_eq!(woken.await.unwrap() - t0, secs(8));
        // A hundred calls that end before their deadline reuse one slot.
        for _ in 0..100 {
            let mut call = Alarm::new(&alarms, Instant::now(), Instant::now() + secs(30));
            assert!(call.poll(&mut cx).is_pending());
        }
        let state = alarms.lock();
        assert!(state.slots.len() <= 2, "{} slots", state.slots.len());
        assert!(state.slots.iter().all(|s| !s.used && s.waker.is_none()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_already_passed_is_ready_at_once_and_registers_nothing() {
        let alarms = Arc::new(Alarms::default());
        let t0 = Instant::now();
        let mut alarm = Alarm::new(&alarms, t0, t0);
        assert!(alarm
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready());
        assert!(alarms.lock().sweeper.is_none());
    }

    #[test]
    fn another_runtime_gets_its_own_timer_and_a_dead_sweeper_is_replaced() {
        let alarms = Arc::new(Alarms::default());
        let first = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let second = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let wait_on = |rt: &tokio::runtime::Runtime| {
            let alarms = Arc::clone(&alarms);
            rt.block_on(async move {
                let t0 = Instant::now();
                let mut alarm = Alarm::new(&alarms, t0, t0 + Duration::from_millis(20));
                std::future::poll_fn(|cx| alarm.poll(cx)).await;
                let own = matches!(alarm.kind, Kind::Own(_));
                (Instant::now() - t0 >= Duration::from_millis(20), own)
            })
        };
        // The first runtime's call spawns the sweeper there.
        assert_eq!(wait_on(&first), (true, false));
        let on_first = alarms.lock().sweeper.as_ref().map(|s| s.runtime);
        assert_eq!(on_first, Some(first.handle().id()));
        // While it runs, a call on the second runtime has a timer of its own.
        assert_eq!(wait_on(&second), (true, true));
        // Once the first runtime is gone, the second gets the sweeper.
        drop(first);
        assert_eq!(wait_on(&second), (true, false));
        let on_second = alarms.lock().sweeper.as_ref().map(|s| s.runtime);
        assert_eq!(on_second, Some(second.handle().id()));
    }

    #[test]
    fn a_runtime_without_timers_fails_the_call_not_the_sweeper() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let alarms = Arc::new(Alarms::default());
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(async {
                let t0 = Instant::now();
                let mut alarm = Alarm::new(&alarms, t0, t0 + secs(1));
                alarm
                    .poll(&mut Context::from_waker(Waker::noop()))
                    .is_pending()
            })
        }));
        assert!(polled.is_err(), "tokio's own timer panics there too");
        assert!(alarms.lock().sweeper.is_none(), "no sweeper left untimed");
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_table_ends_its_sweeper() {
        let alarms = Arc::new(Alarms::default());
        let t0 = Instant::now();
        let mut alarm = Alarm::new(&alarms, t0, t0 + secs(1));
        assert!(alarm
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending());
        drop(alarm);
        tokio::task::yield_now().await; // the sweeper looks and sleeps
        let abort = alarms
            .lock()
            .sweeper
            .as_ref()
            .map(|s| s.task.abort_handle())
            .unwrap();
        drop(alarms);
        tokio::task::yield_now().await;
        assert!(abort.is_finished());
    }
}
