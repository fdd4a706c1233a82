//! Errors of the [`retry`](super) module.

use std::error::Error;
use std::fmt;
use std::io;

use tower::BoxError;

/// Wraps an error that proves the request never reached the server: the process could not be
/// spawned, the transport was not connected, the connection was refused before the write.
///
/// [`RetryPolicy`](super::RetryPolicy) retries such an error whatever the request, finding it
/// anywhere in the [`source`](Error::source) chain. `Display` says what happened; the cause is
/// the [`source`](Error::source).
///
/// ```
/// # use kaged_mcp_layers::retry::NotSent;
/// # use tower::BoxError;
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// let err: BoxError = NotSent::new(refused).into();
/// assert!(err.is::<NotSent>());
/// assert!(NotSent::in_chain(&*err));
/// ```
#[derive(Debug)]
pub struct NotSent {
    source: BoxError,
}

impl NotSent {
    /// Marks `source` as a failure that happened before the request was sent.
    pub fn new(source: impl Into<BoxError>) -> Self {
        Self {
            source: source.into(),
        }
    }

    /// The wrapped error.
    pub fn get_ref(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.source
    }

    /// Consumes `self`, returning the wrapped error.
    pub fn into_inner(self) -> BoxError {
        self.source
    }

    /// Whether `err` or any error in its [`source`](Error::source) chain is a `NotSent`.
    ///
    /// A [`std::io::Error`] wrapping a custom error reports that error's source, not the error
    /// itself; the walk looks into it with [`io::Error::get_ref`](std::io::Error::get_ref), so
    /// `io::Error::other(NotSent::new(e))` is found too.
    pub fn in_chain(err: &(dyn Error + 'static)) -> bool {
        let mut next = Some(err);
        while let Some(err) = next {
            if err.is::<Self>() {
                return true;
            }
            next = match err.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
                Some(custom) => Some(custom),
                None => err.source(),
            };
        }
        false
    }
}

impl fmt::Display for NotSent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request was not sent to the server")
    }
}

impl Error for NotSent {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}

/// Wraps an error that ends the call whatever the request: the server took the call and ran
/// it to an outcome (an MCP task that failed, was cancelled or was lost), so sending it again
/// would run the tool again.
///
/// [`RetryPolicy`](super::RetryPolicy) never retries such an error, even for a request marked
/// [`RetrySafe`](super::RetrySafe), finding it anywhere in the [`source`](Error::source)
/// chain. `Display` is the wrapped error's; so is the [`source`](Error::source).
///
/// ```
/// # use kaged_mcp_layers::retry::Final;
/// # use tower::BoxError;
/// let lost = std::io::Error::other("the task was lost");
/// let err: BoxError = Final::new(lost).into();
/// assert!(Final::in_chain(&*err));
/// assert_eq!(err.to_string(), "the task was lost");
/// ```
#[derive(Debug)]
pub struct Final {
    source: BoxError,
}

impl Final {
    /// Marks `source` as the call's final outcome.
    pub fn new(source: impl Into<BoxError>) -> Self {
        Self {
            source: source.into(),
        }
    }

    /// The wrapped error.
    pub fn get_ref(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.source
    }

    /// Consumes `self`, returning the wrapped error.
    pub fn into_inner(self) -> BoxError {
        self.source
    }

    /// Whether `err` or any error in its [`source`](Error::source) chain is a `Final`.
    pub fn in_chain(err: &(dyn Error + 'static)) -> bool {
        let mut next = Some(err);
        while let Some(err) = next {
            if err.is::<Self>() {
                return true;
            }
            next = err.source();
        }
        false
    }
}

impl fmt::Display for Final {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.source, f)
    }
}

impl Error for Final {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}

/// A backoff configuration that cannot work: a zero base, or a maximum below the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidBackoff(&'static str);

impl InvalidBackoff {
    pub(crate) const BASE_ZERO: Self = Self("the base delay must be non-zero");
    pub(crate) const MAX_BELOW_BASE: Self =
        Self("the maximum delay must not be less than the base delay");
}

impl fmt::Display for InvalidBackoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid backoff: {}", self.0)
    }
}

impl Error for InvalidBackoff {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(NotSent);
    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("call failed")
        }
    }
    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn finds_not_sent_deep_in_a_chain() {
        let err: BoxError = Outer(NotSent::new("spawn failed")).into();
        assert!(!err.is::<NotSent>());
        assert!(NotSent::in_chain(&*err));
    }

    #[test]
    fn finds_not_sent_inside_an_io_error() {
        let err = io::Error::other(NotSent::new("connection refused"));
        assert!(NotSent::in_chain(&err));
        let outer: BoxError = Box::new(io::Error::other(Outer(NotSent::new("spawn failed"))));
        assert!(NotSent::in_chain(&*outer));
    }

    #[test]
    fn does_not_find_not_sent_where_there_is_none() {
        let err: BoxError = "broken pipe after write".into();
        assert!(!NotSent::in_chain(&*err));
        let wrapped = std::io::Error::other(err);
        assert!(!NotSent::in_chain(&wrapped));
    }

    #[test]
    fn keeps_the_cause_as_source() {
        let err = NotSent::new("connection refused");
        assert_eq!(err.to_string(), "the request was not sent to the server");
        assert_eq!(err.source().unwrap().to_string(), "connection refused");
        assert_eq!(err.get_ref().to_string(), "connection refused");
        assert_eq!(err.into_inner().to_string(), "connection refused");
    }
}
