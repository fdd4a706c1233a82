//! The pool against a raw HTTP/1.1 server on a socket.

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

/// How many connections the pool keeps idle, over all its origins.
fn idle(pool: &PlainPool) -> usize {
    let origins = pool.inner.origins.lock().unwrap();
    origins.iter().map(|o| o.idle.len()).sum()
}

/// Waits (an event, not a time) until none of the pool's idle connections is open: the
/// connection's task saw the server's close.
async fn idle_ones_closed(pool: &PlainPool) {
    let open = || {
        let origins = pool.inner.origins.lock().unwrap();
        origins
            .iter()
            .flat_map(|o| &o.idle)
            .any(|i| !i.sender.is_closed())
    };
    while open() {
        tokio::task::yield_now().await;
    }
}

/// Waits until `server` has seen `n` connections end.
async fn ended(server: &Server, n: usize) {
    while server.ended.load(Ordering::SeqCst) < n {
        tokio::task::yield_now().await;
    }
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

#[test]
fn the_host_header_is_hyper_util_s() {
    let host = |authority: &str| {
        host_header(&authority.parse().unwrap()).map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(host("127.0.0.1:8080").as_deref(), Some("127.0.0.1:8080"));
    // Port 80 is left out, as hyper-util does.
    assert_eq!(host("example.com:80").as_deref(), Some("example.com"));
    assert_eq!(host("example.com").as_deref(), Some("example.com"));
    assert_eq!(host("[::1]:3000").as_deref(), Some("[::1]:3000"));
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
            idle_ones_closed(&pool).await;
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
    // Not given back (a connection count alone holds either way: one given back is found
    // unready and replaced), and closed: the server sees it end.
    assert_eq!(idle(&pool), 0);
    ended(&server, 1).await;
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
    ended(&server, 1).await;
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

/// A server that accepts, reads one request's head, tells the test, and then does what `then`
/// says with the stream (`None`: keeps it open, saying nothing).
async fn raw_server(
    then: Option<&'static [u8]>,
) -> (
    u16,
    tokio::sync::mpsc::UnboundedReceiver<&'static str>,
    tokio::task::JoinHandle<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
        }
        let _ = tx.send("request");
        if let Some(answer) = then {
            stream.write_all(answer).await.unwrap();
            return; // closes the stream
        }
        let mut chunk = [0u8; 4096];
        while !matches!(stream.read(&mut chunk).await, Ok(0) | Err(_)) {}
        let _ = tx.send("closed");
    });
    (port, rx, task)
}

/// A server that promises 1 000 bytes and closes after 10: the body ends in an error (never a
/// short body read as whole), and the connection is not given back.
#[tokio::test]
async fn a_server_closing_mid_body_fails_the_body_and_the_connection_is_not_kept() {
    let (port, _seen, _task) = raw_server(Some(
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789",
    ))
    .await;
    let pool = pool();
    let response = pool.send(post(port, "/mcp")).await.unwrap();
    let error = response.into_body().collect().await.unwrap_err();
    let io = std::error::Error::source(&error).and_then(|e| e.downcast_ref::<std::io::Error>());
    assert_eq!(
        io.map(std::io::Error::kind),
        Some(std::io::ErrorKind::UnexpectedEof),
        "{error:?}"
    );
    assert_eq!(idle(&pool), 0);
}

/// A request whose caller gives up before the answer: its connection is closed (the server
/// sees its end) and not kept; the pool goes on serving on a new one.
#[tokio::test]
async fn a_cancelled_request_closes_its_connection() {
    let (port, mut seen, _task) = raw_server(None).await;
    let pool = pool();
    let sending = tokio::spawn({
        let pool = pool.clone();
        async move { pool.send(post(port, "/mcp")).await.map(|_| ()) }
    });
    assert_eq!(seen.recv().await, Some("request"));
    sending.abort();
    assert!(sending.await.unwrap_err().is_cancelled());
    assert_eq!(seen.recv().await, Some("closed"));
    assert_eq!(idle(&pool), 0);
    let server = serve(After::KeepAlive, b"ok").await;
    assert_eq!(text(&pool, post(server.port, "/mcp")).await, "ok");
}

/// Several origins, requests interleaved: each origin keeps its own connection, with its own
/// `Host`; the same port under another host name is another origin.
#[tokio::test]
async fn several_origins_each_keep_their_own_connection_and_host() {
    let (a, b) = (
        serve(After::KeepAlive, b"a").await,
        serve(After::KeepAlive, b"b").await,
    );
    let pool = pool();
    let by_name = |port: u16| {
        let mut request = post(port, "/mcp");
        *request.uri_mut() = format!("http://localhost:{port}/mcp").parse().unwrap();
        request
    };
    for _ in 0..3 {
        assert_eq!(text(&pool, post(a.port, "/mcp")).await, "a");
        assert_eq!(text(&pool, post(b.port, "/mcp")).await, "b");
        assert_eq!(text(&pool, by_name(a.port)).await, "a");
    }
    assert_eq!(a.connections.load(Ordering::SeqCst), 2);
    assert_eq!(b.connections.load(Ordering::SeqCst), 1);
    assert_eq!(idle(&pool), 3);
    assert_eq!(pool.inner.origins.lock().unwrap().len(), 3);
    let hosts = |server: &Server| -> Vec<String> {
        let heads = server.heads.lock().unwrap();
        heads
            .iter()
            .map(|h| {
                h.lines()
                    .find(|l| l.starts_with("host: "))
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let (ip_a, name_a) = (
        format!("host: 127.0.0.1:{}", a.port),
        format!("host: localhost:{}", a.port),
    );
    assert_eq!(
        hosts(&a),
        [&ip_a, &name_a, &ip_a, &name_a, &ip_a, &name_a].map(String::clone)
    );
    assert_eq!(hosts(&b), vec![format!("host: 127.0.0.1:{}", b.port); 3]);
}

/// The pool dropped while an answer's body is being read: the body still reads to its end,
/// and its connection, with no pool to go back to, is closed.
#[tokio::test]
async fn a_body_outlives_its_dropped_pool_and_then_closes_its_connection() {
    static LONG: [u8; 256 * 1024] = [b'y'; 256 * 1024];
    let server = serve(After::KeepAlive, &LONG).await;
    let pool = pool();
    let mut body = pool
        .send(post(server.port, "/mcp"))
        .await
        .unwrap()
        .into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert!(first.len() < LONG.len());
    drop(pool);
    let rest = body.collect().await.unwrap().to_bytes();
    assert_eq!(first.len() + rest.len(), LONG.len());
    ended(&server, 1).await;
}

/// A request put on a reused connection that the server closed while it idled, before the
/// connection's task saw the close: hyper hands the request back unwritten, and the pool sends
/// it on a new connection instead of failing it.
///
/// Made deterministic on the current-thread runtime: the server (a thread, not a task) closes
/// the idle connection and says so before the client does anything; `yield_now` lets the
/// runtime's I/O driver see the close (which readies the connection's socket and wakes its
/// task) and resumes this test before that task runs; the request is then queued on the
/// reused connection, whose task, run next, reads the end before it takes the request.
#[tokio::test]
async fn a_request_on_a_reused_connection_found_closed_is_sent_on_a_new_one() {
    use std::io::{Read as _, Write as _};
    use std::sync::mpsc;

    /// Reads one request (head and its two-byte `{}` body) and answers it `200 ok`.
    fn answer_one(stream: &mut std::net::TcpStream) {
        let mut buf = Vec::new();
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") || !buf.ends_with(b"{}") {
            let mut chunk = [0u8; 1024];
            let n = stream.read(&mut chunk).unwrap();
            assert!(n > 0, "the client closed before its request");
            buf.extend_from_slice(&chunk[..n]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap();
    }

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (close, closing) = mpsc::channel::<()>();
    let (closed, has_closed) = mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (mut first, _) = listener.accept().unwrap();
        answer_one(&mut first);
        closing.recv().unwrap();
        first.shutdown(std::net::Shutdown::Both).unwrap();
        drop(first);
        closed.send(()).unwrap();
        let (mut second, _) = listener.accept().unwrap();
        answer_one(&mut second);
        // No third connection: the server ends with the test's pool.
    });

    let pool = pool();
    assert_eq!(text(&pool, post(port, "/mcp")).await, "ok");
    // The connection is idle in the pool; the server closes it, and this thread blocks (no
    // task runs) until it has.
    close.send(()).unwrap();
    has_closed.recv().unwrap();
    tokio::task::yield_now().await;
    assert_eq!(text(&pool, post(port, "/mcp")).await, "ok");
    server.join().unwrap();
}

/// Each origin has its own connections: a request to a second server never goes on the
/// first one's idle connection.
#[tokio::test]
async fn each_origin_gets_its_own_connections() {
    let a = serve(After::KeepAlive, b"a").await;
    let b = serve(After::KeepAlive, b"b").await;
    let pool = pool();
    for _ in 0..2 {
        assert_eq!(text(&pool, post(a.port, "/mcp")).await, "a");
        assert_eq!(text(&pool, post(b.port, "/mcp")).await, "b");
    }
    assert_eq!(a.connections.load(Ordering::SeqCst), 1);
    assert_eq!(b.connections.load(Ordering::SeqCst), 1);
}

/// A body read frame by frame says what hyper's says (its size, whether it ended, its
/// `Debug`), and its connection goes back only at its end: a request sent while it is being
/// read gets a connection of its own, and the next one after it reuses one.
#[tokio::test]
async fn a_body_being_read_keeps_its_connection_until_its_end() {
    static LONG: [u8; 256 * 1024] = [b'x'; 256 * 1024];
    let server = serve(After::KeepAlive, &LONG).await;
    let pool = pool();
    let mut body = pool
        .send(post(server.port, "/mcp"))
        .await
        .unwrap()
        .into_body();
    assert_eq!(body.size_hint().exact(), Some(LONG.len() as u64));
    assert!(!body.is_end_stream());
    assert_eq!(
        format!("{body:?}"),
        "PooledBody { end_stream: false, pooled: true }"
    );
    let first = body.frame().await.unwrap().unwrap();
    let mut read = first.data_ref().unwrap().len();
    assert!(read < LONG.len());
    let meanwhile = {
        let pool = pool.clone();
        tokio::spawn(async move { text(&pool, post(server.port, "/mcp")).await.len() })
    };
    while let Some(frame) = body.frame().await {
        read += frame.unwrap().data_ref().map_or(0, |d| d.len());
    }
    assert_eq!(read, LONG.len());
    assert!(body.is_end_stream());
    assert_eq!(meanwhile.await.unwrap(), LONG.len());
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    assert_eq!(
        text(&pool, post(server.port, "/mcp")).await.len(),
        LONG.len()
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

/// An empty answer has ended before any frame is read: dropping it unread gives its
/// connection back.
#[tokio::test]
async fn an_empty_body_dropped_unread_gives_its_connection_back() {
    let server = serve(After::KeepAlive, b"").await;
    let pool = pool();
    for _ in 0..3 {
        let response = pool.send(post(server.port, "/mcp")).await.unwrap();
        assert!(response.body().is_end_stream());
        drop(response);
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

/// A server that takes the request and closes without an answer is a failure of the
/// exchange, not of the connect (a caller must not take the request as never sent).
#[tokio::test]
async fn a_server_closing_without_an_answer_is_not_a_connect_error() {
    use std::io::Read as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            let mut chunk = [0u8; 1024];
            let n = stream.read(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    });
    let error = pool().send(post(port, "/mcp")).await.unwrap_err();
    server.join().unwrap();
    assert!(!error.is_connect(), "{error:?}");
    let chain = crate::transport::http::chain(&error);
    assert!(chain.starts_with("client error (SendRequest)"), "{chain}");
}
