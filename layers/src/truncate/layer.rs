use tower::Layer;

use super::Truncate;

/// Applies [`Truncate`] to a service. See the [module docs](crate::truncate) for an example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncateLayer {
    max_bytes: usize,
}

impl TruncateLayer {
    /// A layer capping every response at `max_bytes`.
    pub const fn new(max_bytes: usize) -> Self {
        Self { max_bytes }
    }

    /// The cap, in bytes.
    pub const fn max_bytes(&self) -> usize {
        self.max_bytes
    }
}

impl<S> Layer<S> for TruncateLayer {
    type Service = Truncate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Truncate::new(inner, self.max_bytes)
    }
}
