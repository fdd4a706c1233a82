//! Response future of [`Validate`](super::Validate).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project::pin_project;
use tower::BoxError;

use super::CheckResponse;

/// Response future for [`Validate`](super::Validate): the call below (its response checked
/// when the request asked for it), or the refusal of a request that failed its check.
#[pin_project]
pub struct ResponseFuture<F, C> {
    #[pin]
    state: State<F, C>,
}

#[pin_project(project = StateProj)]
enum State<F, C> {
    /// The request went down; `check`, if any, checks its response.
    Called {
        #[pin]
        future: F,
        check: Option<C>,
    },
    /// The request failed its check and was not sent; the error is taken when polled.
    Refused { error: Option<BoxError> },
}

impl<F, C> ResponseFuture<F, C> {
    pub(super) const fn new(future: F, check: Option<C>) -> Self {
        Self {
            state: State::Called { future, check },
        }
    }

    pub(super) const fn refused(error: BoxError) -> Self {
        Self {
            state: State::Refused { error: Some(error) },
        }
    }
}

impl<F, C> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Called { check: None, .. } => "Called",
            State::Called { check: Some(_), .. } => "Checked",
            State::Refused { .. } => "Refused",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("future", &std::any::type_name::<F>())
            .finish()
    }
}

impl<F, C, T, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    C: CheckResponse<T>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Called { future, check } => {
                let response = ready!(future.poll(cx)).map_err(Into::into)?;
                match check.take() {
                    Some(check) => Poll::Ready(check.check(&response).map(|()| response)),
                    None => Poll::Ready(Ok(response)),
                }
            }
            StateProj::Refused { error } => Poll::Ready(Err(error
                .take()
                .unwrap_or_else(|| "the validation future was polled after it completed".into()))),
        }
    }
}
