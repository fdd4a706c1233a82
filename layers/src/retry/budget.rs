//! [`RetryBudget`]: a retry budget whose per-request cost is one atomic add.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use tower::retry::budget::Budget;

/// Thousandths of a retry per retry.
const MILLI: i64 = 1000;

/// A token-bucket retry budget that never reads the clock on the success path.
///
/// tower's [`TpsBudget`](tower::retry::budget::TpsBudget) keeps its deposits in time slots, so
/// every deposit (every request) reads the clock and expires old slots. A retry budget only
/// does real work when something fails, so [`RetryBudget`] is a token bucket that moves the
/// clock reading to [`withdraw`](Budget::withdraw):
///
/// - each request deposits `ratio` of a retry (one relaxed `fetch_add`, no clock);
/// - the bucket also refills with `min_per_sec` retries per second of wall time, computed when a
///   retry is asked for, so a server with little traffic can still be retried;
/// - the balance never counts more than `max_balance` retries: a long run of successes cannot
///   save up an unbounded burst of retries for the next outage.
///
/// The time-based refill uses `std::time::Instant`, so tokio's paused clock does not move it.
///
/// The balance is kept in thousandths of a retry in one `AtomicI64`; deposits may push it past
/// the cap between withdrawals, and each withdrawal clamps it first.
///
/// # Example
/// ```
/// use kaged_mcp_layers::retry::RetryBudget;
/// use tower::retry::budget::Budget;
///
/// // One retry for every ten requests, no time-based refill, at most 2 saved up.
/// let budget = RetryBudget::new(0.1, 0, 2);
/// for _ in 0..100 {
///     budget.deposit();
/// }
/// assert!(budget.withdraw());
/// assert!(budget.withdraw());
/// assert!(!budget.withdraw(), "the balance is capped at 2");
/// ```
pub struct RetryBudget {
    /// Thousandths of a retry available (may exceed `max_milli` until the next withdrawal).
    balance: AtomicI64,
    /// Thousandths of a retry each request deposits.
    deposit_milli: i64,
    /// The cap, in thousandths of a retry.
    max_milli: i64,
    /// Retries per second added by the passing of time.
    min_per_sec: u32,
    /// When the time-based refill was last added.
    refilled_at: Mutex<Instant>,
}

impl RetryBudget {
    /// A budget that allows `ratio` retries per request (clamped to 0–1000; 0.2 means one retry
    /// for every five requests), plus `min_per_sec` retries per second, with at most
    /// `max_balance` retries saved up. It starts full.
    pub fn new(ratio: f32, min_per_sec: u32, max_balance: u32) -> Self {
        let ratio = if ratio.is_finite() {
            ratio.clamp(0.0, 1000.0)
        } else {
            0.0
        };
        // In range: at most 1000 * 1000.
        #[allow(clippy::cast_possible_truncation)]
        let deposit_milli = (f64::from(ratio) * MILLI as f64).round() as i64;
        let max_milli = i64::from(max_balance) * MILLI;
        Self {
            balance: AtomicI64::new(max_milli),
            deposit_milli,
            max_milli,
            min_per_sec,
            refilled_at: Mutex::new(Instant::now()),
        }
    }

    /// Whole retries available now, not counting the time-based refill due since the last
    /// withdrawal (added by the next one).
    pub fn available(&self) -> u32 {
        let milli = self
            .balance
            .load(Ordering::Relaxed)
            .clamp(0, self.max_milli);
        u32::try_from(milli / MILLI).unwrap_or(u32::MAX)
    }

    /// Adds the retries earned by the time since the last refill.
    fn refill(&self) {
        if self.min_per_sec == 0 {
            return;
        }
        let mut at = self
            .refilled_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(*at);
        let earned = elapsed.as_secs_f64() * f64::from(self.min_per_sec) * MILLI as f64;
        if earned >= 1.0 {
            // Bounded by the cap below; the conversion saturates.
            #[allow(clippy::cast_possible_truncation)]
            let earned = earned.min(self.max_milli as f64) as i64;
            self.balance.fetch_add(earned, Ordering::Relaxed);
            *at = now;
        }
    }
}

impl Default for RetryBudget {
    /// 20 % of requests, 10 retries per second, at most 100 saved up: the ratio and the rate of
    /// tower's `TpsBudget::default()`, whose 10 s window also amounts to about 100 retries on
    /// a quiet server.
    fn default() -> Self {
        Self::new(0.2, 10, 100)
    }
}

impl Budget for RetryBudget {
    fn deposit(&self) {
        self.balance
            .fetch_add(self.deposit_milli, Ordering::Relaxed);
    }

    fn withdraw(&self) -> bool {
        self.refill();
        self.balance
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                let b = b.min(self.max_milli);
                (b >= MILLI).then_some(b - MILLI)
            })
            .is_ok()
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("available", &self.available())
            .field("ratio", &(self.deposit_milli as f64 / MILLI as f64))
            .field("min_per_sec", &self.min_per_sec)
            .field("max_balance", &(self.max_milli / MILLI))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_full_and_is_capped() {
        let b = RetryBudget::new(0.5, 0, 3);
        assert_eq!(b.available(), 3);
        for _ in 0..1000 {
            b.deposit();
        }
        assert_eq!(b.available(), 3);
        assert!(b.withdraw() && b.withdraw() && b.withdraw());
        assert!(!b.withdraw());
    }

    #[test]
    fn deposits_earn_their_ratio() {
        let b = RetryBudget::new(0.25, 0, 10);
        while b.withdraw() {}
        for _ in 0..3 {
            b.deposit();
        }
        assert!(!b.withdraw(), "3 × 0.25 is less than one retry");
        b.deposit();
        assert!(b.withdraw(), "4 × 0.25 is one retry");
        assert!(!b.withdraw());
    }

    #[test]
    fn a_zero_ratio_only_refills_with_time() {
        let b = RetryBudget::new(0.0, 0, 1);
        assert!(b.withdraw());
        for _ in 0..10_000 {
            b.deposit();
        }
        assert!(!b.withdraw());
    }

    #[test]
    fn time_refills_at_min_per_sec() {
        let b = RetryBudget::new(0.0, 1000, 5);
        while b.withdraw() {}
        // Pretend the last refill was one second ago: 1000/s, capped at 5.
        *b.refilled_at.lock().unwrap() -= std::time::Duration::from_secs(1);
        let mut got = 0;
        while b.withdraw() {
            got += 1;
            assert!(got <= 6, "the refill must respect the cap");
        }
        assert!((5..=6).contains(&got), "{got}");
    }

    #[test]
    fn nonsense_ratios_are_clamped() {
        let b = RetryBudget::new(f32::NAN, 0, 1);
        assert!(b.withdraw());
        b.deposit();
        assert!(!b.withdraw());
        let b = RetryBudget::new(-3.0, 0, 1);
        assert!(b.withdraw());
        b.deposit();
        assert!(!b.withdraw());
    }
}
