//! Checks each request before it is sent, and its response when it comes back, by the rules the
//! request carries: the request implements [`Validated`] (`kaged-mcp` does it for a tool call,
//! whose tool's compiled schemas travel with it), so the layer knows no schema language.
//!
//! - A request whose check fails is **not sent**: the call fails at once with the check's
//!   error (a caller's error, never retried).
//! - A request that returns a [`CheckResponse`] has its response checked on the way back; a
//!   response that fails it becomes the check's error.
//! - A request with nothing to check passes through untouched, and so does its response.
//! - The layer may hold a policy `P` (what to check, say), which it hands to every request's
//!   check; `()` when there is none.
//!
//! No schema is compiled here or per call: what the request carries was built before (when the
//! catalog changed, in `kaged-mcp`).
//!
//! # Example
//! ```
//! # use kaged_mcp_layers::validate::{CheckResponse, Validated, ValidateLayer};
//! # use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
//! struct Call { n: i64 }
//! struct NotEmpty;
//! impl CheckResponse<String> for NotEmpty {
//!     fn check(&self, response: &String) -> Result<(), BoxError> {
//!         if response.is_empty() { Err("an empty answer".into()) } else { Ok(()) }
//!     }
//! }
//! impl Validated<String> for Call {
//!     type Check = NotEmpty;
//!     fn validate(&mut self, _: &()) -> Result<Option<NotEmpty>, BoxError> {
//!         if self.n < 0 { return Err("n must not be negative".into()) }
//!         Ok(Some(NotEmpty))
//!     }
//! }
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! let echo = service_fn(|c: Call| async move { Ok::<_, BoxError>("x".repeat(c.n as usize)) });
//! let svc = ServiceBuilder::new().layer(ValidateLayer::new(())).service(echo);
//! assert_eq!(svc.clone().oneshot(Call { n: 2 }).await?, "xx");
//! assert_eq!(svc.clone().oneshot(Call { n: -1 }).await.unwrap_err().to_string(), "n must not be negative");
//! assert_eq!(svc.oneshot(Call { n: 0 }).await.unwrap_err().to_string(), "an empty answer");
//! # Ok(()) }
//! ```

use std::task::{Context, Poll};

use tower::{BoxError, Service};

pub mod future;
mod layer;

pub use self::layer::ValidateLayer;

/// A request that can check itself, and say what checks its response (a response of type
/// `Res`), under the layer's policy `P`.
pub trait Validated<Res, P = ()> {
    /// What checks the response.
    type Check: CheckResponse<Res>;

    /// Checks the request under `policy` (it may be changed in place, e.g. normalised); `Err`
    /// refuses it and it is not sent. `Ok(Some(check))` has the response checked by `check`.
    ///
    /// # Errors
    /// Why the request may not be sent.
    fn validate(&mut self, policy: &P) -> Result<Option<Self::Check>, BoxError>;
}

/// Checks one response.
pub trait CheckResponse<Res> {
    /// `Err` turns the response into that error.
    ///
    /// # Errors
    /// Why the response is refused.
    fn check(&self, response: &Res) -> Result<(), BoxError>;
}

/// Checks requests and responses by the rules each request carries. See the
/// [module docs](self) for an example.
#[derive(Debug, Clone)]
pub struct Validate<S, P = ()> {
    inner: S,
    policy: P,
}

impl<S, P> Validate<S, P> {
    /// Validates the requests of `inner` under `policy`.
    pub const fn new(inner: S, policy: P) -> Self {
        Self { inner, policy }
    }

    /// A [`ValidateLayer`] with `policy`.
    pub const fn layer(policy: P) -> ValidateLayer<P> {
        ValidateLayer::new(policy)
    }

    /// The policy.
    pub const fn policy(&self) -> &P {
        &self.policy
    }

    /// The inner service.
    pub const fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, taken out.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, P, Req> Service<Req> for Validate<S, P>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    Req: Validated<S::Response, P>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = future::ResponseFuture<S::Future, Req::Check>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: Req) -> Self::Future {
        match req.validate(&self.policy) {
            Err(error) => future::ResponseFuture::refused(error),
            Ok(check) => future::ResponseFuture::new(self.inner.call(req), check),
        }
    }
}
