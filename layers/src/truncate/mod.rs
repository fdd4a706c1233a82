//! Caps the size of every response; the response type implements [`Truncatable`].
//!
//! [`Truncate`] forwards each request untouched and, when the inner future resolves with `Ok`,
//! calls [`Truncatable::truncate_to`] on the response with the configured `max_bytes`. What the
//! bytes of a response are, and what marker a cut response carries, is the response type's
//! business: `kaged-mcp` implements [`Truncatable`] for its `ToolResult`; this crate implements
//! it for [`String`] (cut on a character boundary, no marker). Errors pass through untouched.
//!
//! A cut is reported with a DEBUG event carrying `max_bytes` and `cut_bytes`.
//!
//! # Example
//! ```
//! # use kaged_mcp_layers::truncate::TruncateLayer;
//! # use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! let echo = service_fn(|_: ()| async { Ok::<_, BoxError>(String::from("héllo")) });
//! let svc = ServiceBuilder::new().layer(TruncateLayer::new(4)).service(echo);
//! assert_eq!(svc.oneshot(()).await?, "hél"); // 4 bytes, cut on a char boundary
//! # Ok(()) }
//! ```
//!
//! # Order
//! In the standard stack `Truncate` sits outside the timeout and the retry, so whatever reaches
//! the agent is capped, whichever attempt produced it.

pub mod future;
mod layer;

use std::task::{Context, Poll};

use tower::Service;

pub use self::layer::TruncateLayer;

/// A response that can be cut to `max_bytes`; `truncate_to` returns the number of bytes removed
/// (0 when the value already fits, and then it is left untouched).
pub trait Truncatable {
    /// Cuts `self` to at most `max_bytes` (plus whatever marker the type appends) and returns
    /// the number of bytes removed.
    fn truncate_to(&mut self, max_bytes: usize) -> usize;
}

impl Truncatable for String {
    /// Cuts at the last character boundary at or below `max_bytes`; appends no marker.
    fn truncate_to(&mut self, max_bytes: usize) -> usize {
        if self.len() <= max_bytes {
            return 0;
        }
        let mut cut = max_bytes;
        while !self.is_char_boundary(cut) {
            cut -= 1;
        }
        let removed = self.len() - cut;
        self.truncate(cut);
        removed
    }
}

/// Caps responses at `max_bytes`. See the [module docs](self) for an example.
///
/// # Clone
/// Cloning clones the inner service; `Truncate` itself holds no readiness state.
#[derive(Debug, Clone)]
pub struct Truncate<S> {
    inner: S,
    max_bytes: usize,
}

impl<S> Truncate<S> {
    /// Wraps `inner`, capping each of its responses at `max_bytes`.
    pub const fn new(inner: S, max_bytes: usize) -> Self {
        Self { inner, max_bytes }
    }

    /// A [`TruncateLayer`] capping responses at `max_bytes`.
    pub const fn layer(max_bytes: usize) -> TruncateLayer {
        TruncateLayer::new(max_bytes)
    }

    /// The cap, in bytes.
    pub const fn max_bytes(&self) -> usize {
        self.max_bytes
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

impl<S, Req> Service<Req> for Truncate<S>
where
    S: Service<Req>,
    S::Response: Truncatable,
{
    type Response = S::Response;
    type Error = S::Error; // adds no failure, so the inner error passes through
    type Future = future::ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        future::ResponseFuture::new(self.inner.call(req), self.max_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tower::{service_fn, BoxError, ServiceExt};

    #[test]
    fn cuts_text_at_char_boundary() {
        let mut s = String::from("héllo"); // 'é' occupies bytes 1..3
        assert_eq!(s.truncate_to(2), 5);
        assert_eq!(s, "h");
    }

    #[test]
    fn leaves_text_that_fits_untouched() {
        let mut s = String::from("héllo");
        assert_eq!(s.truncate_to(6), 0);
        assert_eq!(s, "héllo");
        assert_eq!(s.truncate_to(100), 0);
        assert_eq!(s, "héllo");
    }

    #[test]
    fn cuts_everything_at_zero_bytes() {
        let mut s = String::from("abc");
        assert_eq!(s.truncate_to(0), 3);
        assert!(s.is_empty());
    }

    #[tokio::test]
    async fn service_caps_ok_responses() {
        let svc = Truncate::new(
            service_fn(|n: usize| async move { Ok::<_, BoxError>("x".repeat(n)) }),
            3,
        );
        assert_eq!(svc.clone().oneshot(10).await.unwrap(), "xxx");
        assert_eq!(svc.oneshot(2).await.unwrap(), "xx");
    }

    #[tokio::test]
    async fn service_passes_errors_through() {
        let svc = Truncate::new(
            service_fn(|()| async { Err::<String, BoxError>("boom".into()) }),
            3,
        );
        assert_eq!(svc.oneshot(()).await.unwrap_err().to_string(), "boom");
    }

    #[test]
    fn accessors_reach_the_inner_service() {
        let mut t = Truncate::new(7_u8, 10);
        assert_eq!(t.max_bytes(), 10);
        *t.get_mut() += 1;
        assert_eq!(*t.get_ref(), 8);
        assert_eq!(t.into_inner(), 8);
    }

    proptest! {
        #[test]
        fn truncated_text_is_a_valid_prefix_within_the_cap(s in "\\PC*", max in 0usize..64) {
            let original = s.clone();
            let mut cut = s;
            let removed = cut.truncate_to(max);
            prop_assert!(cut.len() <= max);
            prop_assert!(original.starts_with(cut.as_str()));
            prop_assert!(std::str::from_utf8(cut.as_bytes()).is_ok());
            prop_assert_eq!(removed, original.len() - cut.len());
            if original.len() > max {
                // At most one partial character (< 4 bytes) is given up below the cap.
                prop_assert!(max - cut.len() < 4);
            } else {
                prop_assert_eq!(&cut, &original);
            }
        }

        #[test]
        fn text_of_exactly_max_bytes_is_untouched(s in "\\PC{0,40}") {
            let mut same = s.clone();
            prop_assert_eq!(same.truncate_to(s.len()), 0);
            prop_assert_eq!(same, s);
        }
    }
}
