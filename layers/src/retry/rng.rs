//! Randomness for jitter: a trait for closures and values, and a small shared xorshift.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of numbers in `[0, 1]` for jitter.
///
/// Implemented for closures `FnMut() -> f64` (handy in tests: `|| 0.5`) and for
/// [`XorShiftRng`]. A value outside `[0, 1]` is clamped into it, NaN counts as 0, so a broken
/// source can never push a delay past its cap.
///
/// # Clone
/// A [`RetryPolicy`](super::RetryPolicy) is cloned for every request, and its source with it.
/// A source that keeps its state by value therefore repeats the same numbers for every request;
/// share the state (as [`XorShiftRng`] does) when that matters.
pub trait JitterRng {
    /// The next number, in `[0, 1]`.
    fn next_f64(&mut self) -> f64;
}

impl<F: FnMut() -> f64> JitterRng for F {
    fn next_f64(&mut self) -> f64 {
        self()
    }
}

/// The default [`JitterRng`]: xorshift64* over one atomic state shared by all clones, so
/// concurrent requests draw different numbers. Seeded from the clock and the process's hash
/// seed; not for cryptography.
#[derive(Clone)]
pub struct XorShiftRng {
    state: Arc<AtomicU64>,
}

impl XorShiftRng {
    /// A generator seeded from the current time and the process's random hash seed.
    pub fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(nanos);
        Self::with_seed(hasher.finish())
    }

    /// A generator with a fixed seed (0 is replaced by a fixed non-zero constant).
    pub fn with_seed(seed: u64) -> Self {
        let seed = if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        };
        Self {
            state: Arc::new(AtomicU64::new(seed)),
        }
    }

    fn next_u64(&self) -> u64 {
        let step = |mut x: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let prev = self
            .state
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(step(x)))
            .unwrap_or_else(|x| x); // the closure always returns Some
        step(prev).wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl Default for XorShiftRng {
    fn default() -> Self {
        Self::new()
    }
}

impl JitterRng for XorShiftRng {
    fn next_f64(&mut self) -> f64 {
        // The top 53 bits, scaled to [0, 1).
        (self.next_u64() >> 11) as f64 * (1.0 / (1_u64 << 53) as f64)
    }
}

impl fmt::Debug for XorShiftRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XorShiftRng").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift_stays_in_the_unit_interval() {
        let mut rng = XorShiftRng::with_seed(1);
        for _ in 0..10_000 {
            let x = rng.next_f64();
            assert!((0.0..1.0).contains(&x), "{x}");
        }
    }

    #[test]
    fn clones_share_one_sequence() {
        let mut a = XorShiftRng::with_seed(42);
        let mut b = a.clone();
        let first = a.next_f64();
        let second = b.next_f64();
        assert_ne!(first, second);
        let mut fresh = XorShiftRng::with_seed(42);
        assert_eq!(fresh.next_f64(), first);
        assert_eq!(fresh.next_f64(), second);
    }

    #[test]
    fn zero_seed_does_not_get_stuck() {
        let mut rng = XorShiftRng::with_seed(0);
        let a = rng.next_f64();
        let b = rng.next_f64();
        assert_ne!(a, b);
    }

    #[test]
    fn closures_are_sources() {
        let mut n = 0.0;
        let mut source = move || {
            n += 0.25;
            n
        };
        assert_eq!(JitterRng::next_f64(&mut source), 0.25);
        assert_eq!(JitterRng::next_f64(&mut source), 0.5);
    }
}
