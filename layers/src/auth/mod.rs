//! Adds an authentication header to every request of an HTTP client, from a source that may
//! renew it.
//!
//! [`AuthHeader`] is a header name and a secret value: [`AuthHeader::bearer`] gives
//! `Authorization: Bearer <secret>`, [`AuthHeader::header`] gives `<name>: <secret>`. Its value
//! is marked [sensitive](http::HeaderValue::set_sensitive) when built (so every layer below, a
//! tower-http `Trace` for instance, sees it as sensitive), its `Debug` prints `***`, and a
//! rejected secret yields an [`error::InvalidHeader`] that names the header, never the value.
//!
//! [`AuthLayer`] puts the header of a [`TokenSource`] on every request: [`StaticToken`] for a
//! configured secret, kaged-mcp's OAuth client, or a daemon's own credential store. When the
//! server refuses a request (401, or 403 with `insufficient_scope` in its
//! [`BearerChallenge`]), the source may renew the header and the request is sent again, at most
//! [`MAX_RENEWALS`] times. Both HTTP transports put the layer over their hyper client; this
//! crate has no HTTP client of its own.
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

mod challenge;
pub mod error;
mod future;
mod layer;
mod source;

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use http::{Method, Request, Response, StatusCode, Uri, Version};
use tower::{BoxError, Service, ServiceExt};

pub use self::challenge::BearerChallenge;
pub use self::error::{InvalidHeader, TokenError};
pub use self::future::ResponseFuture;
pub use self::layer::AuthLayer;
pub use self::source::{Refusal, StaticToken, TokenFuture, TokenSource};

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

    /// `Authorization: DPoP <token>`: a DPoP-bound access token (RFC 9449 section 7.1), sent
    /// with a proof that the source gives ([`TokenSource::proof`]).
    ///
    /// # Errors
    /// As [`bearer`](Self::bearer).
    pub fn dpop(token: &str) -> Result<Self, InvalidHeader> {
        check_secret(AUTHORIZATION.as_str(), token)?;
        let mut bytes = Vec::with_capacity("DPoP ".len() + token.len());
        bytes.extend_from_slice(b"DPoP ");
        bytes.extend_from_slice(token.as_bytes());
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

impl PartialEq for AuthHeader {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.value == other.value
    }
}

impl Eq for AuthHeader {}

impl fmt::Debug for AuthHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthHeader")
            .field("name", &self.name)
            .field("value", &format_args!("***"))
            .finish()
    }
}

/// At most this many times one request is resent with a renewed header (a refresh, then a
/// step-up, then one more): a server that keeps refusing gets its refusal back.
pub const MAX_RENEWALS: u32 = 3;

/// Puts its [`TokenSource`]'s header on every request (replacing a header of the same name),
/// and resends a refused request with the header the source renews. Built by [`AuthLayer`].
///
/// A request is refused when the answer is 401, or 403 with a `Bearer` challenge saying
/// `insufficient_scope`; the source decides whether to renew ([`TokenSource::refused`]). The
/// request body must be `Clone` to be resent (`Full<Bytes>` is). Errors of the source and of
/// the inner service come out as [`BoxError`]; a source's is a [`TokenError`].
///
/// # Clone
/// Cloning clones the inner service and shares the source; readiness is the inner service's.
#[derive(Clone)]
pub struct Auth<S> {
    inner: S,
    source: Arc<dyn TokenSource>,
}

impl<S> Auth<S> {
    /// Wraps `inner` so that every request carries `auth`.
    pub fn new(inner: S, auth: AuthHeader) -> Self {
        Self::with_source(inner, Arc::new(StaticToken::new(auth)))
    }

    /// Wraps `inner` so that every request carries the header of `source`.
    pub fn with_source(inner: S, source: Arc<dyn TokenSource>) -> Self {
        Self { inner, source }
    }

    /// An [`AuthLayer`] adding `auth`.
    pub fn layer(auth: AuthHeader) -> AuthLayer {
        AuthLayer::new(auth)
    }

    /// A reference to the inner service.
    pub fn get_ref(&self) -> &S {
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

impl<S: fmt::Debug> fmt::Debug for Auth<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("inner", &self.inner)
            .field("value", &format_args!("***"))
            .finish()
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Auth<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    ReqBody: Clone + Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, Response<ResBody>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: Request<ReqBody>) -> Self::Future {
        if let Some(fixed) = self.source.fixed() {
            // A static secret: the request goes to the inner service now, as it always did.
            set_header(&mut req, Some(&fixed));
            return ResponseFuture::fixed(self.inner.call(req));
        }
        // The ready service goes into the future; a fresh clone stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let source = Arc::clone(&self.source);
        ResponseFuture::renewing(Box::pin(async move {
            let template = Template::of(&req);
            let mut sent = source.header().await?;
            set_header(&mut req, sent.as_ref());
            set_proof(&*source, &mut req, sent.as_ref())?;
            let mut response = inner.call(req).await.map_err(Into::into)?;
            let mut repeats = 0;
            for renewal in 0..MAX_RENEWALS {
                let Some(refusal) = refusal_of(&response, sent.as_ref(), renewal) else {
                    return Ok(response);
                };
                let refusal = refusal.with_repeats(repeats);
                let Some(header) = source.refused(&refusal).await? else {
                    return Ok(response);
                };
                drop(response);
                if sent.as_ref() == Some(&header) {
                    repeats += 1;
                }
                let mut req = template.request();
                set_header(&mut req, Some(&header));
                set_proof(&*source, &mut req, Some(&header))?;
                sent = Some(header);
                response = inner
                    .ready()
                    .await
                    .map_err(Into::into)?
                    .call(req)
                    .await
                    .map_err(Into::into)?;
            }
            Ok(response)
        }))
    }
}

/// What it takes to send a request again: everything but its extensions.
struct Template<B> {
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
    body: B,
}

impl<B: Clone> Template<B> {
    fn of(req: &Request<B>) -> Self {
        Self {
            method: req.method().clone(),
            uri: req.uri().clone(),
            version: req.version(),
            headers: req.headers().clone(),
            body: req.body().clone(),
        }
    }

    fn request(&self) -> Request<B> {
        let mut req = Request::new(self.body.clone());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = self.version;
        *req.headers_mut() = self.headers.clone();
        req
    }
}

fn set_header<B>(req: &mut Request<B>, header: Option<&AuthHeader>) {
    if let Some(h) = header {
        req.headers_mut().insert(h.name.clone(), h.value.clone());
    }
}

/// Sets the source's proof for this sending of `req`, if it gives one.
fn set_proof<B>(
    source: &dyn TokenSource,
    req: &mut Request<B>,
    sent: Option<&AuthHeader>,
) -> Result<(), TokenError> {
    if let Some(p) = source.proof(req.method(), req.uri(), sent)? {
        req.headers_mut().insert(p.name.clone(), p.value.clone());
    }
    Ok(())
}

/// A `DPoP-Nonce` value (RFC 9449 section 8.1: `1*NQCHAR`, here at most 1 KiB), else `None`.
fn dpop_nonce(headers: &HeaderMap) -> Option<String> {
    let v = headers.get("dpop-nonce")?.as_bytes();
    let ok = !v.is_empty()
        && v.len() <= 1024
        && v.iter()
            .all(|&b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
    ok.then(|| String::from_utf8_lossy(v).into_owned())
}

/// The refusal a response is, if it is one: 401, or 403 with `insufficient_scope`.
fn refusal_of<B>(
    response: &Response<B>,
    sent: Option<&AuthHeader>,
    renewal: u32,
) -> Option<Refusal> {
    let status = response.status();
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let challenge = BearerChallenge::find(response.headers());
    let refused = status == StatusCode::UNAUTHORIZED
        || challenge
            .as_ref()
            .is_some_and(BearerChallenge::insufficient_scope);
    refused.then(|| {
        Refusal::new(status, challenge, sent.cloned(), renewal)
            .with_nonce(dpop_nonce(response.headers()))
    })
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

    mod renewal {
        use super::super::*;
        use http::header::WWW_AUTHENTICATE;
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Mutex;
        use tower::{service_fn, Layer, ServiceExt};

        /// Hands out `t0`, and `t<n>` after the n-th refusal.
        #[derive(Debug, Default)]
        struct Counting {
            renewals: AtomicU32,
            seen: Mutex<Vec<(u16, Option<String>, u32)>>,
            none_first: bool,
        }

        impl TokenSource for Counting {
            fn header(&self) -> TokenFuture<'_, Option<AuthHeader>> {
                let n = self.renewals.load(Ordering::SeqCst);
                Box::pin(async move {
                    if self.none_first && n == 0 {
                        return Ok(None);
                    }
                    Ok(Some(AuthHeader::bearer(&format!("t{n}")).unwrap()))
                })
            }

            fn refused<'a>(&'a self, refusal: &'a Refusal) -> TokenFuture<'a, Option<AuthHeader>> {
                self.seen.lock().unwrap().push((
                    refusal.status().as_u16(),
                    refusal.challenge().and_then(|c| c.scope.clone()),
                    refusal.renewal(),
                ));
                let n = self.renewals.fetch_add(1, Ordering::SeqCst) + 1;
                Box::pin(async move { Ok(Some(AuthHeader::bearer(&format!("t{n}")).unwrap())) })
            }
        }

        /// A server accepting only `Bearer <good>`; 403 `insufficient_scope` for `Bearer t1`
        /// when asked. Records the Authorization header of each request it sees.
        fn server(
            good: &'static str,
            step_up: bool,
            log: Arc<Mutex<Vec<Option<String>>>>,
        ) -> impl Service<
            Request<String>,
            Response = Response<String>,
            Error = BoxError,
            Future = impl Send,
        > + Clone
               + Send
               + 'static {
            service_fn(move |req: Request<String>| {
                let log = Arc::clone(&log);
                async move {
                    let auth = req
                        .headers()
                        .get(AUTHORIZATION)
                        .map(|v| v.to_str().unwrap().to_owned());
                    assert_eq!(req.body(), "body", "the body is resent as it was");
                    assert_eq!(req.uri(), "/mcp");
                    log.lock().unwrap().push(auth.clone());
                    let mut response = Response::new(String::new());
                    if auth.as_deref() == Some(good) {
                        return Ok::<_, BoxError>(response);
                    }
                    if step_up && auth.as_deref() == Some("Bearer t1") {
                        *response.status_mut() = StatusCode::FORBIDDEN;
                        response.headers_mut().insert(
                            WWW_AUTHENTICATE,
                            HeaderValue::from_static(
                                "Bearer error=\"insufficient_scope\", scope=\"a b\"",
                            ),
                        );
                        return Ok(response);
                    }
                    *response.status_mut() = StatusCode::UNAUTHORIZED;
                    response.headers_mut().insert(
                        WWW_AUTHENTICATE,
                        HeaderValue::from_static("Bearer scope=\"a\""),
                    );
                    Ok(response)
                }
            })
        }

        fn request() -> Request<String> {
            Request::builder()
                .uri("/mcp")
                .body("body".to_owned())
                .unwrap()
        }

        #[tokio::test]
        async fn a_refused_request_is_resent_with_the_renewed_header() {
            let log = Arc::new(Mutex::new(Vec::new()));
            let source = Arc::new(Counting::default());
            let svc = AuthLayer::with_source(source.clone()).layer(server(
                "Bearer t1",
                false,
                Arc::clone(&log),
            ));
            let response = svc.oneshot(request()).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                *log.lock().unwrap(),
                [Some("Bearer t0".to_owned()), Some("Bearer t1".to_owned())]
            );
            assert_eq!(
                *source.seen.lock().unwrap(),
                [(401, Some("a".to_owned()), 0)]
            );
        }

        #[tokio::test]
        async fn no_header_first_then_a_401_then_a_step_up_on_403() {
            let log = Arc::new(Mutex::new(Vec::new()));
            let source = Arc::new(Counting {
                none_first: true,
                ..Counting::default()
            });
            let svc = AuthLayer::with_source(source.clone()).layer(server(
                "Bearer t2",
                true,
                Arc::clone(&log),
            ));
            let response = svc.oneshot(request()).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                *log.lock().unwrap(),
                [
                    None,
                    Some("Bearer t1".to_owned()),
                    Some("Bearer t2".to_owned())
                ]
            );
            assert_eq!(
                *source.seen.lock().unwrap(),
                [
                    (401, Some("a".to_owned()), 0),
                    (403, Some("a b".to_owned()), 1)
                ]
            );
        }

        #[tokio::test]
        async fn a_server_that_keeps_refusing_gets_max_renewals_resends() {
            let log = Arc::new(Mutex::new(Vec::new()));
            let source = Arc::new(Counting::default());
            let svc = AuthLayer::with_source(source.clone()).layer(server(
                "never",
                false,
                Arc::clone(&log),
            ));
            let response = svc.oneshot(request()).await.unwrap();
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
            assert_eq!(log.lock().unwrap().len() as u32, 1 + MAX_RENEWALS);
        }

        #[tokio::test]
        async fn a_static_secret_is_never_renewed_and_a_plain_403_is_no_refusal() {
            let log = Arc::new(Mutex::new(Vec::new()));
            let svc = AuthLayer::new(AuthHeader::bearer("t9").unwrap()).layer(server(
                "Bearer other",
                false,
                Arc::clone(&log),
            ));
            let response = svc.oneshot(request()).await.unwrap();
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
            assert_eq!(log.lock().unwrap().len(), 1);

            let source = Arc::new(Counting::default());
            let forbidden = service_fn(|_: Request<String>| async {
                let mut r = Response::new(String::new());
                *r.status_mut() = StatusCode::FORBIDDEN;
                Ok::<_, BoxError>(r)
            });
            let svc = AuthLayer::with_source(source.clone()).layer(forbidden);
            let response = svc.oneshot(request()).await.unwrap();
            assert_eq!(response.status(), StatusCode::FORBIDDEN);
            assert!(source.seen.lock().unwrap().is_empty());
        }

        /// Gives `DPoP t`, a proof per sending (`p<n>`), and answers a nonce refusal with the
        /// same header while `repeats` is 0.
        #[derive(Debug, Default)]
        struct Nonces {
            proofs: AtomicU32,
            seen: Mutex<Vec<(Option<String>, u32)>>,
        }

        impl TokenSource for Nonces {
            fn header(&self) -> TokenFuture<'_, Option<AuthHeader>> {
                Box::pin(async { Ok(Some(AuthHeader::dpop("t").unwrap())) })
            }

            fn proof(
                &self,
                _: &Method,
                uri: &Uri,
                sent: Option<&AuthHeader>,
            ) -> Result<Option<AuthHeader>, TokenError> {
                assert_eq!(uri, "/mcp");
                assert!(sent.is_some());
                let n = self.proofs.fetch_add(1, Ordering::SeqCst);
                Ok(Some(AuthHeader::header("DPoP", &format!("p{n}")).unwrap()))
            }

            fn refused<'a>(&'a self, refusal: &'a Refusal) -> TokenFuture<'a, Option<AuthHeader>> {
                self.seen
                    .lock()
                    .unwrap()
                    .push((refusal.nonce().map(str::to_owned), refusal.repeats()));
                let again = refusal.repeats() == 0;
                Box::pin(async move { Ok(again.then(|| refusal.sent().cloned()).flatten()) })
            }
        }

        #[tokio::test]
        async fn a_nonce_refusal_is_resent_once_with_the_same_header_and_a_fresh_proof() {
            let log = Arc::new(Mutex::new(Vec::new()));
            let server = {
                let log = Arc::clone(&log);
                service_fn(move |req: Request<String>| {
                    let log = Arc::clone(&log);
                    async move {
                        let h =
                            |n: &str| req.headers().get(n).map(|v| v.to_str().unwrap().to_owned());
                        log.lock().unwrap().push((h("authorization"), h("dpop")));
                        let mut r = Response::new(String::new());
                        *r.status_mut() = StatusCode::UNAUTHORIZED;
                        r.headers_mut().insert(
                            WWW_AUTHENTICATE,
                            HeaderValue::from_static("DPoP error=\"use_dpop_nonce\""),
                        );
                        r.headers_mut()
                            .insert("dpop-nonce", HeaderValue::from_static("n-1"));
                        Ok::<_, BoxError>(r)
                    }
                })
            };
            let source = Arc::new(Nonces::default());
            let svc = AuthLayer::with_source(source.clone()).layer(server);
            let response = svc.oneshot(request()).await.unwrap();
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
            let auth = Some("DPoP t".to_owned());
            assert_eq!(
                *log.lock().unwrap(),
                [
                    (auth.clone(), Some("p0".to_owned())),
                    (auth, Some("p1".to_owned()))
                ]
            );
            assert_eq!(
                *source.seen.lock().unwrap(),
                [(Some("n-1".to_owned()), 0), (Some("n-1".to_owned()), 1)]
            );
        }

        #[derive(Debug)]
        struct NoLogin;
        impl TokenSource for NoLogin {
            fn header(&self) -> TokenFuture<'_, Option<AuthHeader>> {
                Box::pin(async { Err(TokenError::login_required("run `login x`")) })
            }
        }

        #[tokio::test]
        async fn a_source_error_sends_nothing() {
            let log = Arc::new(Mutex::new(Vec::new()));
            let svc = AuthLayer::with_source(Arc::new(NoLogin)).layer(server(
                "x",
                false,
                Arc::clone(&log),
            ));
            let err = svc.oneshot(request()).await.unwrap_err();
            let token = err.downcast_ref::<TokenError>().unwrap();
            assert!(token.is_login_required());
            assert_eq!(token.to_string(), "run `login x`");
            assert!(log.lock().unwrap().is_empty());
        }
    }
}
