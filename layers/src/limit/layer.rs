use tower::Layer;

use super::InFlightLimit;

/// Applies [`InFlightLimit`] to a service; each service it wraps gets a limit of its own (shared
/// by that service's clones). See the [module docs](crate::limit) for an example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlightLimitLayer {
    max: usize,
}

impl InFlightLimitLayer {
    /// A layer letting at most `max` calls through at once.
    pub const fn new(max: usize) -> Self {
        Self { max }
    }

    /// The limit.
    pub const fn max(&self) -> usize {
        self.max
    }
}

impl<S> Layer<S> for InFlightLimitLayer {
    type Service = InFlightLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        InFlightLimit::new(inner, self.max)
    }
}
