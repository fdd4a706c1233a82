//! The connections under requests to `http://` URLs: HTTP/1.1 connections kept per origin,
//! beside hyper-util's pooled client, which keeps serving `https://` (TLS, and HTTP/2 when ALPN
//! chooses it).
//!
//! Why a pool of our own: without TLS every connection here is HTTP/1.1, and a session talks to
//! one origin, so hyper-util's general pool (a SipHash-keyed map of origins, a race of checkout
//! against connect, a lazily built connect future, the connector's extras on every response)
//! was ~8 000 of the ~54 000 instructions a call at 64 in flight (benches/README.md, issue 41).
//! Here an origin is found by comparing its authority in a short list, an idle connection is
//! taken from its end, and it is given back when its answer's body ended.
//!
//! What it keeps of hyper-util's: the same connector (`HttpConnector`, so the connect timeout,
//! `TCP_NODELAY` and keep-alive are the configured ones, and a refused connect reads the same);
//! its error as an operator reads it (`client error (Connect): tcp connect error: …`); the
//! `Host` header it would write (made once per origin); origin-form request targets; a request whose reused connection
//! closed before it was written is sent again on another; an idle connection older than the
//! idle timeout is closed instead of used; no timer and no task of its own (an idle connection
//! costs no wake-up); the idle connections close when the last clone of the client is dropped.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::uri::{Authority, Parts};
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::time::Instant;
use tower::{BoxError, Service};

/// The sending half of one HTTP/1.1 connection.
type Sender = SendRequest<Full<Bytes>>;

/// The HTTP/1.1 connections of `http://` origins. Cheap to clone: the clones share them.
#[derive(Clone)]
pub(crate) struct PlainPool {
    inner: Arc<Inner>,
}

struct Inner {
    connector: HttpConnector,
    /// An idle connection older than this is closed instead of used.
    idle_timeout: Duration,
    /// The idle connections of each origin, the most recently used last.
    origins: Mutex<Vec<Origin>>,
}

struct Origin {
    /// Compared byte for byte (`Authority`'s own `==` ignores case, at ~250 instructions a
    /// compare): a host spelled in another case only gets a list of its own.
    authority: Authority,
    /// Its `Host` header, made once (see [`host_header`]).
    host: Option<HeaderValue>,
    idle: Vec<Idle>,
}

impl Origin {
    fn is(&self, authority: &Authority) -> bool {
        self.authority.as_str() == authority.as_str()
    }
}

struct Idle {
    sender: Sender,
    since: Instant,
}

impl PlainPool {
    /// A pool that connects with `connector` and closes connections idle longer than
    /// `idle_timeout`.
    pub(crate) fn new(connector: HttpConnector, idle_timeout: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                connector,
                idle_timeout,
                origins: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Sends `request` (whose URI is absolute, `http://`) on an idle connection to its origin,
    /// or on a new one.
    pub(crate) async fn send(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<PooledBody>, Error> {
        let target = origin_form(request.uri());
        let uri = std::mem::replace(request.uri_mut(), target);
        let Some(authority) = uri.authority().cloned() else {
            return Err(Error::new(Kind::UserAbsoluteUriRequired, None));
        };
        let (host, mut idle) = self.inner.checkout(&authority);
        // A `Host` the request has is kept (hyper-util's rule).
        if let (Some(host), Ok(entry)) = (host, request.headers_mut().try_entry(HOST)) {
            entry.or_insert(host);
        }
        loop {
            let (mut sender, reused) = match idle.take() {
                Some(sender) => (sender, true),
                None => (self.inner.connect(&uri).await?, false),
            };
            if reused && sender.ready().await.is_err() {
                // It closed as it idled: another one.
                idle = self.inner.checkout(&authority).1;
                continue;
            }
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let back = GiveBack {
                        pool: Arc::downgrade(&self.inner),
                        authority,
                        sender,
                    };
                    return Ok(response.map(|body| PooledBody {
                        body,
                        back: Some(back),
                    }));
                }
                Err(mut e) => match e.take_message() {
                    // Not written: a reused connection closed under it. Sent again on another.
                    Some(unsent) if reused => {
                        request = unsent;
                        idle = self.inner.checkout(&authority).1;
                    }
                    Some(_) => return Err(Error::new(Kind::Canceled, Some(e.into_error().into()))),
                    None => return Err(Error::new(Kind::SendRequest, Some(e.into_error().into()))),
                },
            }
        }
    }
}

impl Inner {
    /// The `Host` header of `authority`'s origin and its most recently idle connection that is
    /// still open and not expired; the others it passes are dropped (closed). The origin is
    /// added at its first request.
    fn checkout(&self, authority: &Authority) -> (Option<HeaderValue>, Option<Sender>) {
        let mut origins = self.origins.lock().unwrap_or_else(PoisonError::into_inner);
        let at = match origins.iter().position(|o| o.is(authority)) {
            Some(at) => at,
            None => {
                origins.push(Origin {
                    authority: authority.clone(),
                    host: host_header(authority),
                    idle: Vec::new(),
                });
                origins.len() - 1
            }
        };
        let origin = &mut origins[at];
        while let Some(idle) = origin.idle.pop() {
            if !idle.sender.is_closed() && idle.since.elapsed() <= self.idle_timeout {
                return (origin.host.clone(), Some(idle.sender));
            }
        }
        (origin.host.clone(), None)
    }

    /// Keeps `sender` as idle for `authority`, unless it closed.
    fn give_back(&self, authority: &Authority, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let mut origins = self.origins.lock().unwrap_or_else(PoisonError::into_inner);
        // The origin was added when the request was sent, and origins are never removed.
        if let Some(origin) = origins.iter_mut().find(|o| o.is(authority)) {
            origin.idle.push(Idle {
                sender,
                since: Instant::now(),
            });
        }
    }

    /// A new connection to `uri`'s origin, its HTTP/1.1 handshake done and its task spawned.
    async fn connect(&self, uri: &Uri) -> Result<Sender, Error> {
        let mut connector = self.connector.clone();
        let io = connector
            .call(uri.clone())
            .await
            .map_err(|e| Error::new(Kind::Connect, Some(e.into())))?;
        let (mut sender, connection) = http1::handshake(io)
            .await
            .map_err(|e| Error::new(Kind::SendRequest, Some(e.into())))?;
        let (failed, failure) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "client connection error");
                let _ = failed.send(e);
            }
        });
        match sender.ready().await {
            Ok(()) => Ok(sender),
            // The connection's own error says more than the closed channel.
            Err(e) => Err(Error::new(
                Kind::SendRequest,
                Some(failure.await.unwrap_or(e).into()),
            )),
        }
    }
}

/// The `Host` header hyper-util's client writes for `authority`: the host, and the port when it
/// is not 80.
fn host_header(authority: &Authority) -> Option<HeaderValue> {
    match authority.port_u16() {
        Some(port) if port != 80 => {
            HeaderValue::from_str(&format!("{}:{port}", authority.host())).ok()
        }
        _ => HeaderValue::from_str(authority.host()).ok(),
    }
}

/// `uri` as an HTTP/1.1 origin-form target: its path and query (`/` when it has none).
fn origin_form(uri: &Uri) -> Uri {
    match uri.path_and_query() {
        Some(path) if path.as_str() != "/" => {
            let mut parts = Parts::default();
            parts.path_and_query = Some(path.clone());
            Uri::from_parts(parts).unwrap_or_default()
        }
        _ => Uri::default(),
    }
}

/// Where a connection goes back to once its answer's body ended.
struct GiveBack {
    pool: Weak<Inner>,
    authority: Authority,
    sender: Sender,
}

impl GiveBack {
    fn give(self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give_back(&self.authority, self.sender);
        }
    }
}

/// An answer's body read from a pooled connection: the connection goes back to the pool when
/// the body ends (read to its end, or dropped once at its end); dropped earlier, or failed, it
/// is closed with the body.
pub(crate) struct PooledBody {
    body: Incoming,
    back: Option<GiveBack>,
}

impl fmt::Debug for PooledBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledBody")
            .field("end_stream", &self.body.is_end_stream())
            .field("pooled", &self.back.is_some())
            .finish()
    }
}

impl hyper::body::Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let frame = ready!(Pin::new(&mut self.body).poll_frame(cx));
        match &frame {
            Some(Err(_)) => self.back = None,
            None => self.give_back(),
            Some(Ok(_)) if self.body.is_end_stream() => self.give_back(),
            Some(Ok(_)) => {}
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl PooledBody {
    /// Gives the connection back, once.
    fn give_back(&mut self) {
        if let Some(back) = self.back.take() {
            back.give();
        }
    }
}

impl Drop for PooledBody {
    fn drop(&mut self) {
        if self.body.is_end_stream() {
            self.give_back();
        }
    }
}

/// Why a request through the pool got no answer; reads as hyper-util's client error does
/// (`client error (Connect)`, then its sources), so an operator's line is the same over either.
#[derive(Debug)]
pub(crate) struct Error {
    kind: Kind,
    source: Option<BoxError>,
}

/// What failed, named as hyper-util names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No connection: refused, unreachable, timed out, not resolved.
    Connect,
    /// The connection failed as the request was sent or answered.
    SendRequest,
    /// The request was not written: its new connection closed first.
    Canceled,
    /// The request's URI has no authority.
    UserAbsoluteUriRequired,
}

impl Error {
    fn new(kind: Kind, source: Option<BoxError>) -> Self {
        Self { kind, source }
    }

    /// Whether no connection could be made (the request never left).
    pub(crate) fn is_connect(&self) -> bool {
        self.kind == Kind::Connect
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client error ({:?})", self.kind)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| &**e as _)
    }
}

#[cfg(test)]
#[path = "pool/tests.rs"]
mod tests;
