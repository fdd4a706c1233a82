//! Response future of [`Auth`](super::Auth): the inner service's own future for a fixed header
//! (no allocation), a boxed one for a source that is asked, and may renew, per request.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project::pin_project;
use tower::BoxError;

/// The future of a request whose header a source is asked for (and may renew).
pub(crate) type Renewing<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

/// Response future for [`Auth`](super::Auth).
#[pin_project]
pub struct ResponseFuture<F, T> {
    #[pin]
    kind: Kind<F, T>,
}

#[pin_project(project = KindProj)]
enum Kind<F, T> {
    /// A fixed header was set and the inner service called: its future, as it is.
    Fixed {
        #[pin]
        future: F,
    },
    /// The source is asked, and the request perhaps resent.
    Renewing { future: Renewing<T> },
}

impl<F, T> ResponseFuture<F, T> {
    pub(crate) const fn fixed(future: F) -> Self {
        Self {
            kind: Kind::Fixed { future },
        }
    }

    pub(crate) fn renewing(future: Renewing<T>) -> Self {
        Self {
            kind: Kind::Renewing { future },
        }
    }
}

impl<F, T> fmt::Debug for ResponseFuture<F, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Fixed { .. } => "Fixed",
            Kind::Renewing { .. } => "Renewing",
        };
        f.debug_struct("ResponseFuture")
            .field("kind", &kind)
            .finish()
    }
}

impl<F, T, E> Future for ResponseFuture<F, T>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Fixed { future } => future.poll(cx).map_err(Into::into),
            KindProj::Renewing { future } => future.as_mut().poll(cx),
        }
    }
}
