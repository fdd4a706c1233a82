//! Response future of [`RejectSampling`](super::RejectSampling).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project::pin_project;
use tower::BoxError;

use super::Rejected;

/// Response future for [`RejectSampling`](super::RejectSampling): either the inner call or an
/// immediate refusal.
///
/// # Panics
/// Polling it again after it returned `Ready` panics, as for most futures.
#[pin_project]
pub struct ResponseFuture<F> {
    #[pin]
    kind: Kind<F>,
}

#[pin_project(project = KindProj)]
enum Kind<F> {
    Called {
        #[pin]
        future: F,
    },
    // Boxed once on the (rare) refusal path so the common future stays small.
    Rejected {
        error: Option<BoxError>,
    },
}

impl<F> ResponseFuture<F> {
    pub(crate) const fn called(future: F) -> Self {
        Self {
            kind: Kind::Called { future },
        }
    }

    pub(crate) fn rejected(error: Rejected) -> Self {
        Self {
            kind: Kind::Rejected {
                error: Some(Box::new(error)),
            },
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Called { .. } => "Called",
            Kind::Rejected { .. } => "Rejected",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("future", &std::any::type_name::<F>())
            .finish()
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Called { future } => Poll::Ready(ready!(future.poll(cx)).map_err(Into::into)),
            KindProj::Rejected { error } => Poll::Ready(Err(error
                .take()
                .expect("ResponseFuture polled after completion"))),
        }
    }
}
