use std::time::Duration;

use tower::Layer;

use super::ProgressTimeout;

/// Applies [`ProgressTimeout`] to a service. See the [module docs](crate::timeout) for an
/// example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressTimeoutLayer {
    idle: Duration,
    total: Duration,
}

impl ProgressTimeoutLayer {
    /// Fails a call after `idle` without progress, and in any case after `total`.
    pub const fn new(idle: Duration, total: Duration) -> Self {
        Self { idle, total }
    }

    /// The idle duration.
    pub const fn idle(&self) -> Duration {
        self.idle
    }

    /// The total cap.
    pub const fn total(&self) -> Duration {
        self.total
    }
}

impl<S> Layer<S> for ProgressTimeoutLayer {
    type Service = ProgressTimeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ProgressTimeout::new(inner, self.idle, self.total)
    }
}
