//! Adds an authentication header to every request of an HTTP client.
//!
//! [`AuthHeader`] is the header built once from configuration: [`AuthHeader::bearer`] gives
//! `Authorization: Bearer <secret>`, [`AuthHeader::header`] gives `<name>: <secret>`. Its value
//! is marked [sensitive](http::HeaderValue::set_sensitive) when built, its `Debug` prints `***`,
//! and a rejected secret yields an [`error::InvalidHeader`] that names the header, never the
//! value.
//!
//! [`AuthLayer`] reuses tower-http: [`SetRequestHeader`] in overriding mode (a header of the same
//! name set by the caller is replaced) over [`SetSensitiveRequestHeaders`] (so every layer below,
//! a tower-http `Trace` for instance, sees the header as sensitive). The SSE transport puts it
//! over its hyper client.
//!
//! [`SetRequestHeader`]: tower_http::set_header::SetRequestHeader
//! [`SetSensitiveRequestHeaders`]: tower_http::sensitive_headers::SetSensitiveRequestHeaders
//!
//! # Example
//! ```
//! # use kaged_mcp_layers::auth::{AuthHeader, AuthLayer};
//! # use http::{header::AUTHORIZATION, Request, Response};
//! # use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! let client = service_fn(|req: Request<()>| async move {
//!     let value = &req.headers()[AUTHORIZATION];
//!     assert!(value.is_sensitive());
//!     Ok::<_, BoxError>(Response::new(value.to_str()?.len()))
//! });
//! let auth = AuthHeader::bearer("s3cr3t")?;
//! assert_eq!(format!("{auth:?}"), r#"AuthHeader { name: "authorization", value: *** }"#);
//! let svc = ServiceBuilder::new().layer(AuthLayer::new(auth)).service(client);
//! let response = svc.oneshot(Request::new(())).await?;
//! assert_eq!(*response.body(), "Bearer s3cr3t".len());
//! # Ok(()) }
//! ```

pub mod error;
mod layer;

use std::fmt;
use std::task::{Context, Poll};

use http::header::{HeaderName, HeaderValue, AUTHORIZATION};
use http::{Request, Response};
use tower::Service;
use tower_http::sensitive_headers::SetSensitiveRequestHeaders;
use tower_http::set_header::SetRequestHeader;

pub use self::error::InvalidHeader;
pub use self::layer::AuthLayer;

use self::error::InvalidHeaderKind;

/// An authentication header: a name and a secret value, marked sensitive.
///
/// `Debug` prints the name and `***`. See the [module docs](self) for an example.
#[derive(Clone)]
pub struct AuthHeader {
    name: HeaderName,
    value: HeaderValue,
}

impl AuthHeader {
    /// `Authorization: Bearer <secret>`.
    ///
    /// # Errors
    /// [`InvalidHeader`] when `secret` is empty or holds CR, LF or another byte a header value
    /// may not carry. The error does not contain the secret.
    pub fn bearer(secret: &str) -> Result<Self, InvalidHeader> {
        check_secret(AUTHORIZATION.as_str(), secret)?;
        let mut bytes = Vec::with_capacity("Bearer ".len() + secret.len());
        bytes.extend_from_slice(b"Bearer ");
        bytes.extend_from_slice(secret.as_bytes());
        Self::from_parts(AUTHORIZATION, &bytes)
    }

    /// `<name>: <secret>`, for instance `X-API-Key: <secret>`. Header names are case-insensitive
    /// and stored lower-case.
    ///
    /// # Errors
    /// [`InvalidHeader`] when `name` is not a valid header name, or `secret` is empty or holds
    /// CR, LF or another byte a header value may not carry. The error does not contain the secret.
    pub fn header(name: &str, secret: &str) -> Result<Self, InvalidHeader> {
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| InvalidHeader::new(name, InvalidHeaderKind::Name))?;
        check_secret(header_name.as_str(), secret)?;
        Self::from_parts(header_name, secret.as_bytes())
    }

    fn from_parts(name: HeaderName, bytes: &[u8]) -> Result<Self, InvalidHeader> {
        let mut value = HeaderValue::from_bytes(bytes)
            .map_err(|_| InvalidHeader::new(name.as_str(), InvalidHeaderKind::ValueByte))?;
        value.set_sensitive(true);
        Ok(Self { name, value })
    }

    /// The header name (lower-case).
    pub const fn name(&self) -> &HeaderName {
        &self.name
    }
}

/// Classifies a bad secret without ever copying it into the error.
fn check_secret(name: &str, secret: &str) -> Result<(), InvalidHeader> {
    if secret.is_empty() {
        return Err(InvalidHeader::new(name, InvalidHeaderKind::EmptyValue));
    }
    if secret.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(InvalidHeader::new(name, InvalidHeaderKind::LineBreak));
    }
    if secret
        .bytes()
        .any(|b| (b < 0x20 && b != b'\t') || b == 0x7f)
    {
        return Err(InvalidHeader::new(name, InvalidHeaderKind::ValueByte));
    }
    Ok(())
}

impl fmt::Debug for AuthHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthHeader")
            .field("name", &self.name)
            .field("value", &format_args!("***"))
            .finish()
    }
}

type Inner<S> = SetRequestHeader<SetSensitiveRequestHeaders<S>, HeaderValue>;

/// Sets the [`AuthHeader`] on every request, replacing a header of the same name, and marks
/// that header sensitive for the layers below. Built by [`AuthLayer`].
///
/// # Clone
/// Cloning clones the inner service; readiness is the inner service's.
#[derive(Clone)]
pub struct Auth<S> {
    inner: Inner<S>,
}

impl<S> Auth<S> {
    /// Wraps `inner` so that every request carries `auth`.
    pub fn new(inner: S, auth: AuthHeader) -> Self {
        let sensitive = SetSensitiveRequestHeaders::new(inner, [auth.name.clone()]);
        Self::from_inner(sensitive, auth)
    }

    fn from_inner(sensitive: SetSensitiveRequestHeaders<S>, auth: AuthHeader) -> Self {
        Self {
            inner: SetRequestHeader::overriding(sensitive, auth.name, auth.value),
        }
    }

    /// An [`AuthLayer`] adding `auth`.
    pub fn layer(auth: AuthHeader) -> AuthLayer {
        AuthLayer::new(auth)
    }

    /// A reference to the inner service.
    pub fn get_ref(&self) -> &S {
        self.inner.get_ref().get_ref()
    }

    /// A mutable reference to the inner service.
    pub fn get_mut(&mut self) -> &mut S {
        self.inner.get_mut().get_mut()
    }

    /// Consumes `self`, returning the inner service.
    pub fn into_inner(self) -> S {
        self.inner.into_inner().into_inner()
    }
}

impl<S: fmt::Debug> fmt::Debug for Auth<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("inner", self.get_ref())
            .field("value", &format_args!("***"))
            .finish()
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Auth<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "tok-9f8e7d";

    #[test]
    fn bearer_builds_a_sensitive_authorization_header() {
        let auth = AuthHeader::bearer(SECRET).unwrap();
        assert_eq!(auth.name(), AUTHORIZATION);
        assert_eq!(auth.value, format!("Bearer {SECRET}").as_str());
        assert!(auth.value.is_sensitive());
    }

    #[test]
    fn header_builds_a_sensitive_named_header() {
        let auth = AuthHeader::header("X-API-Key", SECRET).unwrap();
        assert_eq!(auth.name().as_str(), "x-api-key");
        assert_eq!(auth.value, SECRET);
        assert!(auth.value.is_sensitive());
    }

    #[test]
    fn debug_prints_the_name_and_stars() {
        let auth = AuthHeader::header("X-API-Key", SECRET).unwrap();
        let text = format!("{auth:?} {auth:#?}");
        assert!(text.contains("x-api-key"), "{text}");
        assert!(text.contains("***"), "{text}");
        assert!(!text.contains(SECRET), "{text}");
    }

    #[test]
    fn rejects_line_breaks_without_echoing_the_secret() {
        for bad in [format!("{SECRET}\n"), format!("{SECRET}\r\nX-Evil: 1")] {
            let err = AuthHeader::bearer(&bad).unwrap_err();
            assert_eq!(err.kind(), InvalidHeaderKind::LineBreak);
            assert_eq!(err.name(), "authorization");
            let text = format!("{err} {err:?}");
            assert!(!text.contains(SECRET), "{text}");
        }
    }

    #[test]
    fn rejects_control_bytes_and_empty_secrets() {
        let err = AuthHeader::header("x-api-key", "a\u{0}b").unwrap_err();
        assert_eq!(err.kind(), InvalidHeaderKind::ValueByte);
        let err = AuthHeader::header("x-api-key", "a\u{7f}b").unwrap_err();
        assert_eq!(err.kind(), InvalidHeaderKind::ValueByte);
        let err = AuthHeader::bearer("").unwrap_err();
        assert_eq!(err.kind(), InvalidHeaderKind::EmptyValue);
    }

    #[test]
    fn accepts_tabs_and_non_ascii_bytes_in_a_secret() {
        assert!(AuthHeader::header("x-api-key", "a\tb").is_ok());
        assert!(AuthHeader::header("x-api-key", "clé").is_ok());
    }

    #[test]
    fn rejects_a_bad_header_name() {
        for name in ["", "X API Key", "x-api-key\n", "é"] {
            let err = AuthHeader::header(name, SECRET).unwrap_err();
            assert_eq!(err.kind(), InvalidHeaderKind::Name, "{name:?}");
            assert!(!err.to_string().contains(SECRET));
        }
    }

    #[test]
    fn debug_of_the_service_hides_the_value() {
        let svc = Auth::new("inner", AuthHeader::bearer(SECRET).unwrap());
        let text = format!(
            "{svc:?} {:?}",
            Auth::<()>::layer(AuthHeader::bearer(SECRET).unwrap())
        );
        assert!(text.contains("inner"), "{text}");
        assert!(!text.contains(SECRET), "{text}");
    }

    #[test]
    fn accessors_reach_the_inner_service() {
        let mut svc = Auth::new(1_u8, AuthHeader::bearer(SECRET).unwrap());
        *svc.get_mut() += 1;
        assert_eq!(*svc.get_ref(), 2);
        assert_eq!(svc.into_inner(), 2);
    }
}
