//! Where the auth layer gets its header: a [`TokenSource`].
//!
//! A source gives the header for each request ([`TokenSource::header`]) and is told when the
//! server refused one ([`TokenSource::refused`]: a 401, or a 403 whose challenge says
//! `insufficient_scope`), so it can refresh, re-authorize or give up. [`StaticToken`] is the
//! configured secret: it never changes, so a refusal goes back to the caller as it came.
//! kaged-mcp's OAuth client is another source; a daemon can plug in its own credential store
//! the same way.
//!
//! The layer never retries by itself: it resends a refused request only with the header the
//! source returned, and at most [`MAX_RENEWALS`](super::MAX_RENEWALS) times. A 401 or 403 means
//! the server did not process the request, so resending it is always safe.

use std::fmt;
use std::future::{ready, Future};
use std::pin::Pin;

use http::header::{HeaderName, AUTHORIZATION};
use http::{Method, StatusCode, Uri};

use super::challenge::BearerChallenge;
use super::error::TokenError;
use super::AuthHeader;

/// The future a [`TokenSource`] returns.
pub type TokenFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, TokenError>> + Send + 'a>>;

/// Gives the auth layer its header, and hears when the server refused it.
///
/// Implementations must keep secrets out of their `Debug` and of every [`TokenError`] message.
///
/// # Example
/// A source reading the daemon's own credential store:
/// ```
/// use kaged_mcp_layers::auth::{AuthHeader, Refusal, TokenError, TokenFuture, TokenSource};
///
/// #[derive(Debug)]
/// struct Vault;
/// impl Vault {
///     async fn current(&self) -> Option<String> { Some("t0k".into()) }
/// }
///
/// impl TokenSource for Vault {
///     fn header(&self) -> TokenFuture<'_, Option<AuthHeader>> {
///         Box::pin(async move {
///             let token = self.current().await.ok_or_else(|| {
///                 TokenError::login_required("no token in the vault: run `vault login`")
///             })?;
///             AuthHeader::bearer(&token)
///                 .map(Some)
///                 .map_err(|e| TokenError::failed("the vault's token is unusable", Some(e.into())))
///         })
///     }
/// }
/// ```
pub trait TokenSource: fmt::Debug + Send + Sync + 'static {
    /// The header for the next request; `None` sends it without one (a client that has no
    /// token yet and learns where to get one from the server's 401).
    ///
    /// # Errors
    /// A [`TokenError`]: the request is not sent and the caller gets the error.
    fn header(&self) -> TokenFuture<'_, Option<AuthHeader>>;

    /// The server refused a request: `Ok(Some(header))` resends it with `header`, `Ok(None)`
    /// gives the refusal (the response) to the caller. The default gives up.
    ///
    /// # Errors
    /// A [`TokenError`]: the caller gets it instead of the response.
    fn refused<'a>(&'a self, refusal: &'a Refusal) -> TokenFuture<'a, Option<AuthHeader>> {
        let _ = refusal;
        Box::pin(ready(Ok(None)))
    }

    /// A header that never changes (a configured secret): the layer sets it and calls the
    /// inner service at once, inside `call`, with no future of its own to wait on first.
    /// The default is `None`: the header is asked for with [`header`](Self::header).
    fn fixed(&self) -> Option<AuthHeader> {
        None
    }

    /// A header bound to this one sending of a request (a DPoP proof, RFC 9449: signed over
    /// the request's `method` and `uri`, and over the access token in `sent`, the header the
    /// request carries), asked for each time the request is sent, resends included. The
    /// default is `None`.
    ///
    /// # Errors
    /// A [`TokenError`]: the request is not sent and the caller gets the error.
    fn proof(
        &self,
        method: &Method,
        uri: &Uri,
        sent: Option<&AuthHeader>,
    ) -> Result<Option<AuthHeader>, TokenError> {
        let _ = (method, uri, sent);
        Ok(None)
    }

    /// The name of the header this source gives (`Authorization` unless it says otherwise), so
    /// a transport can refuse a static header of the same name.
    fn header_name(&self) -> HeaderName {
        AUTHORIZATION
    }
}

/// A refused request, as a [`TokenSource`] sees it.
#[derive(Clone)]
pub struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) challenge: Option<BearerChallenge>,
    pub(crate) sent: Option<AuthHeader>,
    pub(crate) renewal: u32,
    pub(crate) nonce: Option<String>,
    pub(crate) repeats: u32,
}

impl Refusal {
    /// A refusal, for sources' own tests.
    pub fn new(
        status: StatusCode,
        challenge: Option<BearerChallenge>,
        sent: Option<AuthHeader>,
        renewal: u32,
    ) -> Self {
        Self {
            status,
            challenge,
            sent,
            renewal,
            nonce: None,
            repeats: 0,
        }
    }

    /// The same refusal, with the `DPoP-Nonce` the response carried (RFC 9449 section 9).
    #[must_use]
    pub fn with_nonce(mut self, nonce: Option<String>) -> Self {
        self.nonce = nonce;
        self
    }

    /// The same refusal, for a request already resent `repeats` times with the header it had.
    #[must_use]
    pub const fn with_repeats(mut self, repeats: u32) -> Self {
        self.repeats = repeats;
        self
    }

    /// The response's `DPoP-Nonce` header, when it had one that is a valid nonce (printable
    /// ASCII but `"` and `\`, at most 1 KiB).
    pub fn nonce(&self) -> Option<&str> {
        self.nonce.as_deref()
    }

    /// How many times this request was already resent with the header it carried before
    /// (renewing nothing: to answer a nonce), 0 the first time.
    pub const fn repeats(&self) -> u32 {
        self.repeats
    }

    /// 401 or 403.
    pub const fn status(&self) -> StatusCode {
        self.status
    }

    /// The response's `Bearer` challenge, if it had one.
    pub const fn challenge(&self) -> Option<&BearerChallenge> {
        self.challenge.as_ref()
    }

    /// The header the refused request carried (`None`: it had none). A source compares it
    /// with its current one: if they differ, another request already renewed it.
    pub const fn sent(&self) -> Option<&AuthHeader> {
        self.sent.as_ref()
    }

    /// How many times this request was already resent with a renewed header (0 the first time).
    pub const fn renewal(&self) -> u32 {
        self.renewal
    }
}

impl fmt::Debug for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refusal")
            .field("status", &self.status)
            .field("challenge", &self.challenge)
            .field("sent", &self.sent)
            .field("renewal", &self.renewal)
            .field("nonce", &self.nonce)
            .field("repeats", &self.repeats)
            .finish()
    }
}

/// A fixed header (a configured secret). A refusal goes back to the caller.
#[derive(Debug, Clone)]
pub struct StaticToken(AuthHeader);

impl StaticToken {
    /// The source that always gives `header`.
    pub const fn new(header: AuthHeader) -> Self {
        Self(header)
    }

    /// Its header.
    pub const fn header(&self) -> &AuthHeader {
        &self.0
    }
}

impl TokenSource for StaticToken {
    fn header(&self) -> TokenFuture<'_, Option<AuthHeader>> {
        Box::pin(ready(Ok(Some(self.0.clone()))))
    }

    fn fixed(&self) -> Option<AuthHeader> {
        Some(self.0.clone())
    }

    fn header_name(&self) -> HeaderName {
        self.0.name().clone()
    }
}
