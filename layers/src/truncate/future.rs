//! Response future of [`Truncate`](super::Truncate).

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project::pin_project;

use super::Truncatable;

/// Response future for [`Truncate`](super::Truncate).
#[pin_project]
#[derive(Debug)]
pub struct ResponseFuture<F> {
    #[pin]
    inner: F,
    max_bytes: usize,
}

impl<F> ResponseFuture<F> {
    pub(crate) const fn new(inner: F, max_bytes: usize) -> Self {
        Self { inner, max_bytes }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    T: Truncatable,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut res = ready!(this.inner.poll(cx))?;
        let cut = res.truncate_to(*this.max_bytes);
        if cut > 0 {
            tracing::debug!(
                max_bytes = *this.max_bytes,
                cut_bytes = cut,
                "result truncated"
            );
        }
        Poll::Ready(Ok(res))
    }
}
