//! The HTTP client under both HTTP transports: for `http://` our own HTTP/1.1 pool
//! ([`super::pool`]), for `https://` hyper-util's pooled client over rustls; both under
//! tower-http's layers.
//!
//! From the outside in: the auth header ([`AuthLayer`] over the server's token source: a
//! static secret or OAuth; it resends a request the server refused with a renewed header),
//! tower-http's sensitive-header marking for `Authorization`, `Proxy-Authorization` and `Cookie`
//! (a static header of one of those names is hidden too), a tower-http `Trace` at DEBUG (it
//! never prints headers; only in a client built while DEBUG is enabled), then [`Origins`]:
//! `http://` to [`PlainPool`] (HTTP/1.1), `https://` to the `hyper-util` client (rustls with
//! the Mozilla roots, ring; HTTP/1.1 and HTTP/2, chosen by ALPN).

use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::uri::Scheme;
use http::{Method, Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;

use kaged_mcp_layers::auth::{AuthLayer, TokenSource};

use super::pool::{PlainPool, PooledBody};
use crate::transport::BoxFuture;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, ServiceBuilder};
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::trace::{DefaultOnFailure, DefaultOnRequest, DefaultOnResponse, TraceLayer};
use tracing::Level;
use url::Url;

/// How long a connection may idle before it is closed instead of used: below the 5 s
/// keep-alive of Node's and uvicorn's servers, so an idle connection is dropped here before the
/// server closes it under a new request.
const IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// A response body, boxed once.
pub(crate) type Body = UnsyncBoxBody<Bytes, BoxError>;

/// The layered client, erased once where it is stored.
pub(crate) type HttpService = BoxCloneSyncService<Request<Full<Bytes>>, Response<Body>, BoxError>;

/// A response body from either pool: hyper-util's (`https://`) or [`PlainPool`]'s (`http://`).
type RawBody = Either<Incoming, PooledBody>;

/// The bottom of the stack: `http://` requests to [`PlainPool`], the others (`https://`) to
/// hyper-util's client.
#[derive(Clone)]
struct Origins {
    plain: PlainPool,
    tls: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl tower::Service<Request<Full<Bytes>>> for Origins {
    type Response = Response<RawBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response<RawBody>, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Full<Bytes>>) -> Self::Future {
        if request.uri().scheme() == Some(&Scheme::HTTP) {
            let plain = self.plain.clone();
            return Box::pin(async move {
                match plain.send(request).await {
                    Ok(response) => Ok(response.map(Either::Right)),
                    Err(e) => Err(e.into()),
                }
            });
        }
        let answer = self.tls.request(request);
        Box::pin(async move {
            match answer.await {
                Ok(response) => Ok(response.map(Either::Left)),
                Err(e) => Err(e.into()),
            }
        })
    }
}

/// Builds the layered client. Needs no runtime; requests need a Tokio runtime.
pub(crate) fn client(
    auth: Option<&Arc<dyn TokenSource>>,
    connect_timeout: Duration,
) -> HttpService {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    // A half-open connection (a long GET stream whose peer vanished) is noticed.
    http.set_keepalive(Some(Duration::from_secs(30)));
    let plain = PlainPool::new(http.clone(), IDLE_TIMEOUT);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    let tls = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(IDLE_TIMEOUT)
        .build::<_, Full<Bytes>>(https);
    let client = Origins { plain, tls };
    // One stack, over a response body of either type (hyper's, or the trace layer's wrapper).
    macro_rules! layers {
        () => {
            ServiceBuilder::new()
                .map_err(BoxError::from)
                .map_response(box_body)
                .option_layer(auth.cloned().map(AuthLayer::with_source))
                .map_err(BoxError::from)
                .layer(SetSensitiveRequestHeadersLayer::new([
                    header::AUTHORIZATION,
                    header::PROXY_AUTHORIZATION,
                    header::COOKIE,
                ]))
        };
    }
    if !exchanges_traced() {
        return BoxCloneSyncService::new(layers!().service(client));
    }
    let traced = layers!().layer(
        TraceLayer::new_for_http()
            .make_span_with(span_without_query)
            .on_request(DefaultOnRequest::new().level(Level::DEBUG))
            .on_response(DefaultOnResponse::new().level(Level::DEBUG))
            // The caller's error names the server and the URL; an ERROR here would say it
            // again without them.
            .on_failure(DefaultOnFailure::new().level(Level::DEBUG)),
    );
    BoxCloneSyncService::new(traced.service(client))
}

/// Whether the client built now traces each exchange (a span and two DEBUG events): only when
/// the most verbose level any subscriber may enable, over all its directives (span-scoped ones
/// such as `[mcp.call]=debug` among them), reaches DEBUG as the client is built. Left out, the
/// layer cost ~1 500 instructions per request with nothing to print: its clock read, its span,
/// and its wrappers of the response future and body (benches/README.md, issue 41). The CLI
/// settles its log level before it builds a client; an embedder that raises its level later
/// sees the exchanges of the clients built after.
fn exchanges_traced() -> bool {
    use tracing::level_filters::LevelFilter;
    LevelFilter::current() >= LevelFilter::DEBUG
}

/// Why [`fetch`] got no answer.
#[cfg_attr(not(any(feature = "oauth", feature = "otlp")), allow(dead_code))]
#[derive(Debug)]
pub(crate) enum FetchError {
    /// The answer is longer than the limit: refused once its `Content-Length` says so, or
    /// once the bytes read would pass it (never more than `limit` bytes and one frame held).
    TooLarge { limit: usize },
    /// The request or the reading of its answer failed: the error and its sources.
    Failed(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge { limit } => {
                write!(f, "the answer is longer than the limit of {limit} bytes")
            }
            Self::Failed(reason) => f.write_str(reason),
        }
    }
}

/// Sends `req` through `client` and reads its whole answer, at most `max_body` bytes of it.
/// For the requests the crate makes outside a session (OAuth's, the CLI's OTLP exports): an
/// MCP session streams its answers instead. The caller bounds the time. (Only those features
/// call it.)
#[cfg_attr(not(any(feature = "oauth", feature = "otlp")), allow(dead_code))]
pub(crate) async fn fetch(
    client: HttpService,
    req: Request<Full<Bytes>>,
    max_body: usize,
) -> Result<Response<Bytes>, FetchError> {
    let response = match tower::ServiceExt::oneshot(client, req).await {
        Ok(r) => r,
        Err(e) => return Err(FetchError::Failed(super::chain(e.as_ref()))),
    };
    let too_large = FetchError::TooLarge { limit: max_body };
    let (parts, mut body) = response.into_parts();
    // A declared length over the limit is refused before a byte of the body is read.
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_body as u64) {
        return Err(too_large);
    }
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(f) => f,
            Err(e) => {
                return Err(FetchError::Failed(format!(
                    "reading the answer: {}",
                    super::chain(e.as_ref())
                )))
            }
        };
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > max_body {
                return Err(too_large);
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(Response::from_parts(parts, Bytes::from(bytes)))
}

/// The request's span: method and path, never the query (it may carry a token) nor headers.
fn span_without_query<B>(request: &Request<B>) -> tracing::Span {
    tracing::debug_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
        version = ?request.version(),
    )
}

/// Erases the response body's type (the trace layer's wrapper over hyper's).
fn box_body<B>(response: Response<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    response.map(|b| b.map_err(Into::into).boxed_unsync())
}

/// A request to `url` with the static `headers`.
pub(crate) fn request(
    method: Method,
    url: &Url,
    headers: &[(HeaderName, HeaderValue)],
    body: Bytes,
) -> Result<Request<Full<Bytes>>, http::Error> {
    let mut builder = Request::builder().method(method).uri(url.as_str());
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    builder.body(Full::new(body))
}

#[cfg(test)]
mod trace_tests {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::exchanges_traced;

    /// Only the cases that turn the layer on are asserted: the level is the most verbose one
    /// of every subscriber alive in the process, and other tests of this binary hold theirs
    /// (at TRACE) on other threads.
    #[test]
    fn exchanges_are_traced_when_debug_is_enabled_as_the_client_is_built() {
        let at = tracing_subscriber::registry().with(LevelFilter::DEBUG);
        tracing::subscriber::with_default(at, || assert!(exchanges_traced()));
        for directives in ["tower_http=debug", "warn,[mcp.call]=debug"] {
            let filter = tracing_subscriber::EnvFilter::new(directives);
            tracing::subscriber::with_default(tracing_subscriber::registry().with(filter), || {
                assert!(exchanges_traced(), "{directives}")
            });
        }
    }
}
