use std::fmt;
use std::sync::Arc;

use tower::Layer;

use super::{Auth, AuthHeader, StaticToken, TokenSource};

/// Applies [`Auth`] to an HTTP client: `ServiceBuilder::new().layer(AuthLayer::new(auth))`,
/// or [`AuthLayer::with_source`] for a header that changes (OAuth, a daemon's credential
/// store). See the [module docs](crate::auth) for an example.
///
/// `Debug` never prints a header value.
#[derive(Clone)]
pub struct AuthLayer {
    source: Arc<dyn TokenSource>,
}

impl AuthLayer {
    /// A layer adding `header` to every request.
    pub fn new(header: AuthHeader) -> Self {
        Self::with_source(Arc::new(StaticToken::new(header)))
    }

    /// A layer adding the header of `source` to every request, and resending a refused one
    /// with the header `source` renews.
    pub fn with_source(source: Arc<dyn TokenSource>) -> Self {
        Self { source }
    }
}

impl fmt::Debug for AuthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthLayer")
            .field("value", &format_args!("***"))
            .finish()
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Auth::with_source(inner, Arc::clone(&self.source))
    }
}
