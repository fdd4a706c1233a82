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
//! `Host` header it would write; origin-form request targets; a request whose reused connection
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
        let uri = request.uri().clone();
        let Some(authority) = uri.authority().cloned() else {
            return Err(Error::new(Kind::UserAbsoluteUriRequired, None));
        };
        if !request.headers().contains_key(HOST) {
            let host = match uri.port_u16() {
                Some(port) if port != 80 => {
                    HeaderValue::from_str(&format!("{}:{port}", authority.host()))
                }
                _ => HeaderValue::from_str(authority.host()),
            };
            if let Ok(host) = host {
                request.headers_mut().insert(HOST, host);
            }
        }
        *request.uri_mut() = origin_form(&uri);
        loop {
            let (mut sender, reused) = match self.inner.checkout(&authority) {
                Some(sender) => (sender, true),
                None => (self.inner.connect(&uri).await?, false),
            };
            if reused && sender.ready().await.is_err() {
                // It closed as it idled: another one.
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
                    Some(unsent) if reused => request = unsent,
                    Some(_) => return Err(Error::new(Kind::Canceled, Some(e.into_error().into()))),
                    None => return Err(Error::new(Kind::SendRequest, Some(e.into_error().into()))),
                },
            }
        }
    }
}

impl Inner {
    /// The most recently idle connection to `authority` that is still open and not expired;
    /// the others it passes are dropped (closed).
    fn checkout(&self, authority: &Authority) -> Option<Sender> {
        let mut origins = self.origins.lock().unwrap_or_else(PoisonError::into_inner);
        let origin = origins.iter_mut().find(|o| o.is(authority))?;
        while let Some(idle) = origin.idle.pop() {
            if !idle.sender.is_closed() && idle.since.elapsed() <= self.idle_timeout {
                return Some(idle.sender);
            }
        }
        None
    }

    /// Keeps `sender` as idle for `authority`, unless it closed.
    fn give_back(&self, authority: Authority, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let idle = Idle {
            sender,
            since: Instant::now(),
        };
        let mut origins = self.origins.lock().unwrap_or_else(PoisonError::into_inner);
        match origins.iter_mut().find(|o| o.is(&authority)) {
            Some(origin) => origin.idle.push(idle),
            None => origins.push(Origin {
                authority,
                idle: vec![idle],
            }),
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
            pool.give_back(self.authority, self.sender);
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
            None => {
                if let Some(back) = self.back.take() {
                    back.give();
                }
            }
            Some(Ok(_)) => {
                if self.body.is_end_stream() {
                    if let Some(back) = self.back.take() {
                        back.give();
                    }
                }
            }
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

impl Drop for PooledBody {
    fn drop(&mut self) {
        if self.body.is_end_stream() {
            if let Some(back) = self.back.take() {
                back.give();
            }
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
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// How the test server ends a connection after each answer.
    #[derive(Clone, Copy)]
    enum After {
        /// Keeps it open for the next request.
        KeepAlive,
        /// Says `Connection: close` and closes it.
        Close,
        /// Closes it without saying so (as a server whose keep-alive ran out).
        Vanish,
    }

    /// A raw HTTP/1.1 server on 127.0.0.1: answers each request `200` with `body`, counts its
    /// connections, and keeps each request's head.
    struct Server {
        port: u16,
        connections: Arc<AtomicUsize>,
        heads: Arc<Mutex<Vec<String>>>,
        /// Connections it saw end (EOF from the client).
        ended: Arc<AtomicUsize>,
    }

    async fn serve(after: After, body: &'static [u8]) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let ended = Arc::new(AtomicUsize::new(0));
        let (c, h, e) = (connections.clone(), heads.clone(), ended.clone());
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                c.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(answer(stream, after, body, h.clone(), e.clone()));
            }
        });
        Server {
            port,
            connections,
            heads,
            ended,
        }
    }

    async fn answer(
        mut stream: TcpStream,
        after: After,
        body: &'static [u8],
        heads: Arc<Mutex<Vec<String>>>,
        ended: Arc<AtomicUsize>,
    ) {
        let mut buf = Vec::new();
        loop {
            let end = loop {
                if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at + 4;
                }
                let mut chunk = [0u8; 4096];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => {
                        ended.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            };
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            while buf.len() < end + length {
                let mut chunk = [0u8; 4096];
                let n = stream.read(&mut chunk).await.unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            buf.drain(..end + length);
            heads.lock().unwrap().push(head);
            let close = if matches!(after, After::Close) {
                "Connection: close\r\n"
            } else {
                ""
            };
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{close}\r\n",
                body.len()
            );
            stream.write_all(answer.as_bytes()).await.unwrap();
            stream.write_all(body).await.unwrap();
            if !matches!(after, After::KeepAlive) {
                return;
            }
        }
    }

    fn pool() -> PlainPool {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        PlainPool::new(http, Duration::from_secs(4))
    }

    fn post(port: u16, path: &str) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(Bytes::from_static(b"{}")));
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = format!("http://127.0.0.1:{port}{path}").parse().unwrap();
        request
    }

    async fn text(pool: &PlainPool, request: Request<Full<Bytes>>) -> String {
        let response = pool.send(request).await.unwrap();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn one_connection_carries_sequential_requests_with_host_and_origin_form() {
        let server = serve(After::KeepAlive, b"ok").await;
        let pool = pool();
        for _ in 0..5 {
            assert_eq!(text(&pool, post(server.port, "/mcp?x=1")).await, "ok");
        }
        assert_eq!(server.connections.load(Ordering::SeqCst), 1);
        let heads = server.heads.lock().unwrap().clone();
        assert_eq!(heads.len(), 5);
        for head in &heads {
            assert!(head.starts_with("POST /mcp?x=1 HTTP/1.1\r\n"), "{head}");
            let hosts: Vec<&str> = head
                .lines()
                .filter(|l| l.to_ascii_lowercase().starts_with("host:"))
                .collect();
            assert_eq!(
                hosts,
                [format!("host: 127.0.0.1:{}", server.port)],
                "{head}"
            );
        }
        // A Host the request has is kept, not doubled.
        let mut own = post(server.port, "/");
        own.headers_mut()
            .insert(HOST, HeaderValue::from_static("example.test"));
        assert_eq!(text(&pool, own).await, "ok");
        let last = server.heads.lock().unwrap().last().cloned().unwrap();
        assert!(last.starts_with("POST / HTTP/1.1\r\n"), "{last}");
        assert_eq!(last.matches("host:").count(), 1, "{last}");
        assert!(last.contains("host: example.test\r\n"), "{last}");
    }

    #[tokio::test]
    async fn concurrent_requests_each_get_a_connection_and_all_are_reused() {
        let server = serve(After::KeepAlive, b"ok").await;
        let pool = pool();
        for _ in 0..3 {
            let all = (0..8).map(|_| text(&pool, post(server.port, "/mcp")));
            for answer in futures::future::join_all(all).await {
                assert_eq!(answer, "ok");
            }
        }
        assert_eq!(server.connections.load(Ordering::SeqCst), 8);
    }

    #[tokio::test]
    async fn a_connection_the_server_closes_is_not_used_again() {
        for after in [After::Close, After::Vanish] {
            let server = serve(after, b"ok").await;
            let pool = pool();
            for _ in 0..4 {
                assert_eq!(text(&pool, post(server.port, "/mcp")).await, "ok");
                // Let the connection's task see the close (a request sent before that is
                // sent again on a new connection: the next test).
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(server.connections.load(Ordering::SeqCst), 4);
        }
    }

    /// A server that closes each connection right after its answer, requests sent back to back:
    /// however the pool learns of the close (the connection was closed as it was given back, or
    /// is found closed as it is taken), the request goes on a new connection and none fails.
    #[tokio::test]
    async fn back_to_back_requests_to_a_server_that_closes_each_connection_all_succeed() {
        let server = serve(After::Vanish, b"ok").await;
        let pool = pool();
        for _ in 0..20 {
            assert_eq!(text(&pool, post(server.port, "/mcp")).await, "ok");
        }
        assert_eq!(server.heads.lock().unwrap().len(), 20);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_idle_past_the_timeout_is_closed_instead_of_used() {
        let server = serve(After::KeepAlive, b"ok").await;
        let pool = pool();
        assert_eq!(text(&pool, post(server.port, "/mcp")).await, "ok");
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(text(&pool, post(server.port, "/mcp")).await, "ok");
        assert_eq!(server.connections.load(Ordering::SeqCst), 1);
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(text(&pool, post(server.port, "/mcp")).await, "ok");
        assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_body_dropped_before_its_end_closes_its_connection() {
        static LONG: [u8; 256 * 1024] = [b'x'; 256 * 1024];
        let server = serve(After::KeepAlive, &LONG).await;
        let pool = pool();
        let mut body = pool
            .send(post(server.port, "/mcp"))
            .await
            .unwrap()
            .into_body();
        let first = body.frame().await.unwrap().unwrap();
        assert!(first.data_ref().is_some_and(|d| d.len() < LONG.len()));
        drop(body);
        assert_eq!(
            text(&pool, post(server.port, "/mcp")).await.len(),
            LONG.len()
        );
        assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn dropping_the_pool_closes_its_idle_connections() {
        let server = serve(After::KeepAlive, b"ok").await;
        let pool = pool();
        assert_eq!(text(&pool, post(server.port, "/mcp")).await, "ok");
        assert_eq!(server.ended.load(Ordering::SeqCst), 0);
        drop(pool);
        tokio::time::timeout(Duration::from_secs(10), async {
            while server.ended.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the idle connection was closed");
    }

    #[tokio::test]
    async fn a_refused_connect_reads_as_hyper_util_s_and_is_a_connect_error() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let error = pool().send(post(port, "/mcp")).await.unwrap_err();
        assert!(error.is_connect());
        let chain = crate::transport::http::chain(&error);
        assert!(
            chain.starts_with("client error (Connect): tcp connect error")
                && chain.contains("Connection refused"),
            "{chain}"
        );
        let boxed: BoxError = error.into();
        assert!(crate::transport::http::never_connected(boxed.as_ref()));
    }
}
