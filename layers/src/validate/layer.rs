//! [`ValidateLayer`].

use tower::Layer;

use super::Validate;

/// Wraps a service in [`Validate`] with a policy `P`. See the [module docs](super) for an
/// example.
#[derive(Debug, Clone, Copy, Default)]
pub struct ValidateLayer<P = ()> {
    policy: P,
}

impl<P> ValidateLayer<P> {
    /// The layer, handing `policy` to every request's check.
    pub const fn new(policy: P) -> Self {
        Self { policy }
    }
}

impl<S, P: Clone> Layer<S> for ValidateLayer<P> {
    type Service = Validate<S, P>;

    fn layer(&self, inner: S) -> Validate<S, P> {
        Validate::new(inner, self.policy.clone())
    }
}
