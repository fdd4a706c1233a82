use std::sync::Arc;

use http::header::HeaderName;
use tower::Layer;
use tower_http::sensitive_headers::SetSensitiveRequestHeaders;

use super::{Auth, AuthHeader};

/// Applies [`Auth`] to an HTTP client: `ServiceBuilder::new().layer(AuthLayer::new(auth))`.
/// See the [module docs](crate::auth) for an example.
///
/// `Debug` prints the header name and `***`.
#[derive(Debug, Clone)]
pub struct AuthLayer {
    header: AuthHeader,
    sensitive: Arc<[HeaderName]>,
}

impl AuthLayer {
    /// A layer adding `header` to every request.
    pub fn new(header: AuthHeader) -> Self {
        let sensitive = Arc::from([header.name.clone()]);
        Self { header, sensitive }
    }

    /// The header this layer adds (its value stays hidden).
    pub const fn header(&self) -> &AuthHeader {
        &self.header
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let sensitive = SetSensitiveRequestHeaders::from_shared(inner, Arc::clone(&self.sensitive));
        Auth::from_inner(sensitive, self.header.clone())
    }
}
