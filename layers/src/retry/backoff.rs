//! Exponential backoff with full or equal jitter.

use std::fmt;
use std::time::Duration;

use tower::retry::backoff::{Backoff, MakeBackoff};

use super::error::InvalidBackoff;
use super::rng::{JitterRng, XorShiftRng};

/// How a delay is randomised below its exponential ceiling `d = min(base · 2ⁿ, max)`.
///
/// See <https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/>.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Jitter {
    /// Exactly `d`.
    None,
    /// Uniform in `[0, d]`: spreads retries the most.
    #[default]
    Full,
    /// `d/2` plus uniform in `[0, d/2]`: never shorter than half the ceiling.
    Equal,
}

/// Exponential backoff: the ceiling starts at `base`, doubles per retry and stops at `max`;
/// [`Jitter`] draws the delay below it from a [`JitterRng`].
///
/// [`RetryPolicy`](super::RetryPolicy) asks it for [`delay`](Self::delay). It also implements
/// tower's [`Backoff`] (each [`next_backoff`](Backoff::next_backoff) sleeps the next delay) and
/// [`MakeBackoff`] (a copy starting over), for loops outside a retry layer such as restarting a
/// crashed server.
///
/// tower's own `ExponentialBackoff` adds its jitter on top of the ceiling and clones its
/// generator state into every session, so it fits neither full/equal jitter nor many concurrent
/// requests; its traits are reused here.
///
/// ```
/// # use kaged_mcp_layers::retry::{Jitter, JitteredBackoff};
/// # use std::time::Duration;
/// let mut backoff = JitteredBackoff::new(Duration::from_secs(1), Duration::from_secs(60))?
///     .jitter(Jitter::None);
/// let delays: Vec<u64> = (0..8).map(|n| backoff.delay(n).as_secs()).collect();
/// assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
/// # Ok::<_, kaged_mcp_layers::retry::error::InvalidBackoff>(())
/// ```
#[derive(Clone)]
pub struct JitteredBackoff<R = XorShiftRng> {
    base: Duration,
    max: Duration,
    jitter: Jitter,
    rng: R,
    iterations: u32,
}

impl JitteredBackoff {
    /// Backoff from `base` doubling up to `max`, with [`Jitter::Full`] and an [`XorShiftRng`].
    ///
    /// # Errors
    /// [`InvalidBackoff`] when `base` is zero or `max` is less than `base`.
    pub fn new(base: Duration, max: Duration) -> Result<Self, InvalidBackoff> {
        if base.is_zero() {
            return Err(InvalidBackoff::BASE_ZERO);
        }
        if max < base {
            return Err(InvalidBackoff::MAX_BELOW_BASE);
        }
        Ok(Self {
            base,
            max,
            jitter: Jitter::default(),
            rng: XorShiftRng::new(),
            iterations: 0,
        })
    }
}

impl<R> JitteredBackoff<R> {
    /// Sets the jitter mode.
    pub const fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// Replaces the source of randomness.
    pub fn rng<R2: JitterRng>(self, rng: R2) -> JitteredBackoff<R2> {
        JitteredBackoff {
            base: self.base,
            max: self.max,
            jitter: self.jitter,
            rng,
            iterations: self.iterations,
        }
    }

    /// The ceiling before retry number `retry` (0 for the first retry): `min(base · 2^retry, max)`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        2_u32
            .checked_pow(retry)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.max, |d| d.min(self.max))
    }

    /// Starts the [`Backoff`] sequence over.
    pub const fn reset(&mut self) {
        self.iterations = 0;
    }
}

impl<R: JitterRng> JitteredBackoff<R> {
    /// The delay before retry number `retry` (0 for the first retry), jittered below
    /// [`ceiling`](Self::ceiling). Always within `[0, max]` (full), `[base/2, max]` (equal) or
    /// exactly the ceiling (none).
    pub fn delay(&mut self, retry: u32) -> Duration {
        let ceiling = self.ceiling(retry);
        match self.jitter {
            Jitter::None => ceiling,
            Jitter::Full => scale(ceiling, self.unit()),
            Jitter::Equal => {
                let half = ceiling / 2;
                half + scale(half, self.unit())
            }
        }
    }

    fn unit(&mut self) -> f64 {
        let x = self.rng.next_f64();
        if x.is_nan() {
            0.0
        } else {
            x.clamp(0.0, 1.0)
        }
    }
}

/// `d · unit` for `unit` in `[0, 1]`, never above `d` and never panicking on huge durations.
fn scale(d: Duration, unit: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * unit).map_or(d, |scaled| scaled.min(d))
}

impl<R> fmt::Debug for JitteredBackoff<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JitteredBackoff")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("jitter", &self.jitter)
            .field("rng", &std::any::type_name::<R>())
            .field("iterations", &self.iterations)
            .finish()
    }
}

impl<R: JitterRng> Backoff for JitteredBackoff<R> {
    type Future = tokio::time::Sleep;

    fn next_backoff(&mut self) -> Self::Future {
        let delay = self.delay(self.iterations);
        self.iterations = self.iterations.saturating_add(1);
        tokio::time::sleep(delay)
    }
}

impl<R: JitterRng + Clone> MakeBackoff for JitteredBackoff<R> {
    type Backoff = Self;

    fn make_backoff(&mut self) -> Self::Backoff {
        let mut fresh = self.clone();
        fresh.reset();
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn ceilings_double_and_stop_at_the_maximum() {
        let backoff = JitteredBackoff::new(secs(1), secs(5)).unwrap();
        let got: Vec<_> = [0, 1, 2, 3, 31, 32, u32::MAX]
            .iter()
            .map(|&n| backoff.ceiling(n))
            .collect();
        assert_eq!(
            got,
            [
                secs(1),
                secs(2),
                secs(4),
                secs(5),
                secs(5),
                secs(5),
                secs(5)
            ]
        );
    }

    #[test]
    fn full_jitter_scales_the_ceiling() {
        let mut backoff = JitteredBackoff::new(secs(1), secs(60))
            .unwrap()
            .rng(|| 0.25);
        assert_eq!(backoff.delay(2), Duration::from_secs(1)); // 4s · 0.25
    }

    #[test]
    fn equal_jitter_keeps_half_the_ceiling() {
        let mut low = JitteredBackoff::new(secs(1), secs(60))
            .unwrap()
            .jitter(Jitter::Equal)
            .rng(|| 0.0);
        assert_eq!(low.delay(2), secs(2));
        let mut high = low.clone().rng(|| 1.0);
        assert_eq!(high.delay(2), secs(4));
    }

    #[test]
    fn a_broken_source_cannot_exceed_the_ceiling() {
        for bad in [f64::NAN, f64::INFINITY, -3.0, 7.5] {
            let mut backoff = JitteredBackoff::new(secs(1), secs(8))
                .unwrap()
                .rng(move || bad);
            let d = backoff.delay(10);
            assert!(d <= secs(8), "{bad} gave {d:?}");
        }
    }

    #[test]
    fn rejects_zero_base_and_max_below_base() {
        assert_eq!(
            JitteredBackoff::new(Duration::ZERO, secs(1)).unwrap_err(),
            InvalidBackoff::BASE_ZERO
        );
        assert_eq!(
            JitteredBackoff::new(secs(2), secs(1)).unwrap_err(),
            InvalidBackoff::MAX_BELOW_BASE
        );
        assert!(JitteredBackoff::new(secs(1), secs(1)).is_ok());
    }

    #[test]
    fn huge_durations_do_not_panic() {
        let mut backoff = JitteredBackoff::new(Duration::MAX, Duration::MAX)
            .unwrap()
            .rng(|| 1.0);
        assert!(backoff.delay(5) <= Duration::MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn tower_backoff_sleeps_the_sequence_and_make_backoff_starts_over() {
        let mut maker = JitteredBackoff::new(secs(1), secs(3))
            .unwrap()
            .jitter(Jitter::None);
        let mut backoff = maker.make_backoff();
        for expected in [1, 2, 3, 3] {
            let start = tokio::time::Instant::now();
            backoff.next_backoff().await;
            assert_eq!(start.elapsed(), secs(expected));
        }
        let mut fresh = maker.make_backoff();
        let start = tokio::time::Instant::now();
        fresh.next_backoff().await;
        assert_eq!(start.elapsed(), secs(1));
    }

    #[test]
    fn debug_names_the_source_type() {
        let backoff = JitteredBackoff::new(secs(1), secs(2)).unwrap();
        assert!(format!("{backoff:?}").contains("XorShiftRng"));
    }

    fn jitter_mode() -> impl Strategy<Value = Jitter> {
        prop_oneof![Just(Jitter::None), Just(Jitter::Full), Just(Jitter::Equal)]
    }

    proptest! {
        #[test]
        fn jittered_delay_stays_within_its_bounds(
            base_ms in 1u64..100_000,
            extra_ms in 0u64..10_000_000,
            retry in 0u32..80,
            unit in prop_oneof![any::<f64>(), 0.0f64..=1.0],
            jitter in jitter_mode(),
        ) {
            let base = Duration::from_millis(base_ms);
            let max = base + Duration::from_millis(extra_ms);
            let mut backoff = JitteredBackoff::new(base, max).unwrap().jitter(jitter).rng(move || unit);
            let delay = backoff.delay(retry);
            prop_assert!(delay <= max);
            prop_assert!(delay <= backoff.ceiling(retry));
            match jitter {
                Jitter::None => prop_assert_eq!(delay, backoff.ceiling(retry)),
                Jitter::Full => {}
                Jitter::Equal => prop_assert!(delay >= base / 2),
            }
        }

        #[test]
        fn ceiling_is_monotonic_and_capped(base_ms in 1u64..10_000, extra_ms in 0u64..1_000_000, retry in 0u32..70) {
            let base = Duration::from_millis(base_ms);
            let max = base + Duration::from_millis(extra_ms);
            let backoff = JitteredBackoff::new(base, max).unwrap();
            prop_assert!(backoff.ceiling(retry) >= base);
            prop_assert!(backoff.ceiling(retry) <= max);
            prop_assert!(backoff.ceiling(retry + 1) >= backoff.ceiling(retry));
        }
    }
}
