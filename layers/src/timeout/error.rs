//! Error of [`ProgressTimeout`](super::ProgressTimeout).

use std::fmt;
use std::time::Duration;

/// Which limit a [`ProgressTimeout`](super::ProgressTimeout) call ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElapsedKind {
    /// No progress for the idle duration.
    Idle,
    /// The total cap, however much progress was reported.
    Total,
}

/// A call stopped by [`ProgressTimeout`](super::ProgressTimeout); found in a
/// [`BoxError`](tower::BoxError) with `err.is::<Elapsed>()`.
///
/// `Display` reads "no progress for 5s" or "total cap of 1m reached" (durations in `Debug`
/// form: `5s`, `1.5s`, `250ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Elapsed {
    after: Duration,
    kind: ElapsedKind,
    asked: Option<Duration>,
}

impl Elapsed {
    /// A timeout of `kind` after `after`.
    pub const fn new(kind: ElapsedKind, after: Duration) -> Self {
        Self {
            after,
            kind,
            asked: None,
        }
    }

    /// The same timeout, reached at a look the server asked to be made only every `asked`
    /// ([`ProgressHandle::hold_until`](super::ProgressHandle::hold_until)): the call could
    /// not be seen to progress more often than that.
    pub const fn with_asked_interval(self, asked: Duration) -> Self {
        Self {
            asked: Some(asked),
            ..self
        }
    }

    /// The wait between looks the server asked for, when it bounded how often progress could
    /// be seen (`Display` tells it when it was at least the limit).
    pub const fn asked_interval(&self) -> Option<Duration> {
        self.asked
    }

    /// The limit that was reached: the idle duration or the total cap.
    pub const fn after(&self) -> Duration {
        self.after
    }

    /// Which limit was reached.
    pub const fn kind(&self) -> ElapsedKind {
        self.kind
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.asked) {
            (ElapsedKind::Idle, Some(asked)) if asked >= self.after => write!(
                f,
                "no progress for {:?}, seen at the server's pace: it asked to be polled every {asked:?}, and nothing had changed when it was",
                self.after
            ),
            (ElapsedKind::Idle, _) => write!(f, "no progress for {:?}", self.after),
            (ElapsedKind::Total, _) => write!(f, "total cap of {:?} reached", self.after),
        }
    }
}

impl std::error::Error for Elapsed {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_says_which_limit_was_reached() {
        let idle = Elapsed::new(ElapsedKind::Idle, Duration::from_secs(5));
        assert_eq!(idle.to_string(), "no progress for 5s");
        let total = Elapsed::new(ElapsedKind::Total, Duration::from_secs(60));
        assert_eq!(total.to_string(), "total cap of 60s reached");
        let short = Elapsed::new(ElapsedKind::Idle, Duration::from_millis(1500));
        assert_eq!(short.to_string(), "no progress for 1.5s");
    }
}
