//! Refuses `sampling/createMessage` requests a server sends to the client.
//!
//! This layer sits on the server→client request stack. A request whose
//! [`JsonRpcMethod::method`] is [`SAMPLING_METHOD`] is answered with an
//! [`error::Rejected`] without reaching the inner service: MCP servers may not spend the
//! operator's tokens or steer an agent through the daemon's model. Every other method passes
//! through. Each refusal adds one to a shared [`RejectedCounter`] and emits a WARN event with the
//! fields `server`, `method`, `request_id` and `rejected_total`.
//!
//! The caller (`kaged-mcp`) finds the refusal with `err.is::<Rejected>()` and answers the server
//! with a JSON-RPC error.
//!
//! This is written by hand rather than as a `tower::filter::Filter` predicate so that the layer,
//! its counter and its future carry their own names, and no extra tower feature is needed.
//!
//! # Example
//! ```
//! # use kaged_mcp_layers::reject_sampling::{error::Rejected, JsonRpcMethod, RejectSamplingLayer};
//! # use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};
//! struct Req(&'static str);
//! impl JsonRpcMethod for Req {
//!     fn method(&self) -> &str { self.0 }
//!     fn request_id(&self) -> Option<String> { Some("7".into()) }
//! }
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! let layer = RejectSamplingLayer::new("github");
//! let counter = layer.counter();
//! let mut svc = ServiceBuilder::new()
//!     .layer(layer)
//!     .service(service_fn(|_: Req| async { Ok::<_, BoxError>("pong") }));
//!
//! assert_eq!(svc.ready().await?.call(Req("ping")).await?, "pong");
//! let err = svc.ready().await?.call(Req("sampling/createMessage")).await.unwrap_err();
//! assert!(err.is::<Rejected>());
//! assert_eq!(counter.get(), 1);
//! # Ok(()) }
//! ```

pub mod error;
pub mod future;
mod layer;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{BoxError, Service};

pub use self::error::Rejected;
pub use self::layer::RejectSamplingLayer;

/// The method this layer refuses.
pub const SAMPLING_METHOD: &str = "sampling/createMessage";

/// A JSON-RPC request, as far as [`RejectSampling`] needs to look into it.
pub trait JsonRpcMethod {
    /// The JSON-RPC `method`.
    fn method(&self) -> &str;

    /// The JSON-RPC `id` rendered for logs and errors, `None` for a notification.
    ///
    /// Called only when a request is refused.
    fn request_id(&self) -> Option<String>;
}

/// The number of requests refused, shared by a [`RejectSamplingLayer`], every service it built
/// and their clones.
#[derive(Debug, Clone, Default)]
pub struct RejectedCounter(Arc<AtomicU64>);

impl RejectedCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of requests refused so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Adds one and returns the new total.
    fn increment(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// Refuses `sampling/createMessage`, passes every other request to `S`.
/// See the [module docs](self) for an example.
///
/// # Clone
/// Clones share the server label and the [`RejectedCounter`]; readiness is the inner service's.
#[derive(Clone)]
pub struct RejectSampling<S> {
    inner: S,
    server: Arc<str>,
    counter: RejectedCounter,
}

impl<S> RejectSampling<S> {
    /// Wraps `inner` for the server labelled `server`, with a fresh counter.
    pub fn new(inner: S, server: impl Into<Arc<str>>) -> Self {
        Self::with_counter(inner, server, RejectedCounter::new())
    }

    /// Like [`new`](Self::new), counting into an existing `counter` (for instance one shared by
    /// every server of a daemon).
    pub fn with_counter(inner: S, server: impl Into<Arc<str>>, counter: RejectedCounter) -> Self {
        Self {
            inner,
            server: server.into(),
            counter,
        }
    }

    /// A [`RejectSamplingLayer`] for the server labelled `server`.
    pub fn layer(server: impl Into<Arc<str>>) -> RejectSamplingLayer {
        RejectSamplingLayer::new(server)
    }

    /// The number of requests refused by this service, its clones and its layer.
    pub fn rejected_count(&self) -> u64 {
        self.counter.get()
    }

    /// The shared counter.
    pub const fn counter(&self) -> &RejectedCounter {
        &self.counter
    }

    /// The server label used in events and errors.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// A reference to the inner service.
    pub const fn get_ref(&self) -> &S {
        &self.inner
    }

    /// A mutable reference to the inner service.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: fmt::Debug> fmt::Debug for RejectSampling<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RejectSampling")
            .field("inner", &self.inner)
            .field("server", &self.server)
            .field("rejected_total", &self.counter.get())
            .finish()
    }
}

impl<S, Req> Service<Req> for RejectSampling<S>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    Req: JsonRpcMethod,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = future::ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        if req.method() != SAMPLING_METHOD {
            return future::ResponseFuture::called(self.inner.call(req));
        }
        // The inner service's readiness goes unused; like `tower::filter`, we release nothing,
        // the next `poll_ready` reuses it.
        let request_id = req.request_id();
        let rejected_total = self.counter.increment();
        tracing::warn!(
            server = &*self.server,
            method = SAMPLING_METHOD,
            request_id = request_id.as_deref(),
            rejected_total,
            "server requested sampling; refused"
        );
        future::ResponseFuture::rejected(Rejected::new(
            Arc::clone(&self.server),
            SAMPLING_METHOD,
            request_id,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{service_fn, ServiceExt};

    #[derive(Debug)]
    struct Req {
        method: &'static str,
        id: Option<u64>,
    }

    impl JsonRpcMethod for Req {
        fn method(&self) -> &str {
            self.method
        }
        fn request_id(&self) -> Option<String> {
            self.id.map(|id| id.to_string())
        }
    }

    fn echo() -> impl Service<Req, Response = &'static str, Error = BoxError> + Clone {
        service_fn(|r: Req| async move { Ok::<_, BoxError>(r.method) })
    }

    #[tokio::test]
    async fn refuses_sampling_without_calling_the_inner_service() {
        let called = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&called);
        let inner = service_fn(move |_: Req| {
            seen.fetch_add(1, Ordering::Relaxed);
            async { Ok::<_, BoxError>("answered") }
        });
        let svc = RejectSampling::new(inner, "github");
        let err = svc
            .oneshot(Req {
                method: SAMPLING_METHOD,
                id: Some(0),
            })
            .await
            .unwrap_err();
        let rejected = err.downcast_ref::<Rejected>().expect("a Rejected error");
        assert_eq!(rejected.method(), SAMPLING_METHOD);
        assert_eq!(rejected.request_id(), Some("0"));
        assert_eq!(rejected.server(), "github");
        assert_eq!(called.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn passes_other_methods_through() {
        let mut svc = RejectSampling::new(echo(), "github");
        for method in [
            "ping",
            "roots/list",
            "sampling/createMessages",
            "Sampling/createMessage",
        ] {
            let got = svc
                .ready()
                .await
                .unwrap()
                .call(Req { method, id: None })
                .await
                .unwrap();
            assert_eq!(got, method);
        }
        assert_eq!(svc.rejected_count(), 0);
    }

    #[tokio::test]
    async fn clones_and_layer_share_one_counter() {
        let layer = RejectSamplingLayer::new("s");
        let counter = layer.counter();
        let a = tower::Layer::layer(&layer, echo());
        let b = a.clone();
        let sampling = || Req {
            method: SAMPLING_METHOD,
            id: None,
        };
        assert!(a.clone().oneshot(sampling()).await.is_err());
        assert!(b.clone().oneshot(sampling()).await.is_err());
        assert_eq!(a.rejected_count(), 2);
        assert_eq!(b.counter().get(), 2);
        assert_eq!(counter.get(), 2);
    }

    #[tokio::test]
    async fn with_counter_counts_into_the_given_counter() {
        let shared = RejectedCounter::new();
        let a = RejectSampling::with_counter(echo(), "a", shared.clone());
        let b = RejectSampling::with_counter(echo(), "b", shared.clone());
        let req = || Req {
            method: SAMPLING_METHOD,
            id: Some(1),
        };
        assert!(a.oneshot(req()).await.is_err());
        assert!(b.oneshot(req()).await.is_err());
        assert_eq!(shared.get(), 2);
    }

    #[test]
    fn debug_shows_label_and_total() {
        let svc = RejectSampling::new((), "github");
        let text = format!("{svc:?}");
        assert!(text.contains("github"), "{text}");
        assert!(text.contains("rejected_total: 0"), "{text}");
    }
}
