use std::sync::Arc;

use tower::Layer;

use super::{RejectSampling, RejectedCounter};

/// Applies [`RejectSampling`] to a service. See the [module docs](crate::reject_sampling) for an
/// example.
///
/// Every service the layer builds counts into the layer's [`RejectedCounter`].
#[derive(Debug, Clone)]
pub struct RejectSamplingLayer {
    server: Arc<str>,
    counter: RejectedCounter,
}

impl RejectSamplingLayer {
    /// A layer for the server labelled `server` (the key from the configuration, for instance
    /// `"github"`), with a fresh counter.
    pub fn new(server: impl Into<Arc<str>>) -> Self {
        Self::with_counter(server, RejectedCounter::new())
    }

    /// Like [`new`](Self::new), counting into an existing `counter`.
    pub fn with_counter(server: impl Into<Arc<str>>, counter: RejectedCounter) -> Self {
        Self {
            server: server.into(),
            counter,
        }
    }

    /// A handle on the counter shared by this layer and every service it builds.
    pub fn counter(&self) -> RejectedCounter {
        self.counter.clone()
    }

    /// The server label.
    pub fn server(&self) -> &str {
        &self.server
    }
}

impl<S> Layer<S> for RejectSamplingLayer {
    type Service = RejectSampling<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RejectSampling::with_counter(inner, Arc::clone(&self.server), self.counter.clone())
    }
}
