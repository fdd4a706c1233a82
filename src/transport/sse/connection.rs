//! One SSE connection: opening the stream, the reader task, the POST writer task and the
//! outbound queue between the session and the writer.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::Method;
use http_body_util::BodyExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::Instrument;
use url::Url;

use super::endpoint::{self, EndpointError};
use super::Inner;
use crate::protocol::RequestId;
use crate::transport::http::client::{request, Body, HttpService};
use crate::transport::http::event_stream::{EventParser, SseItem};
use crate::transport::http::queue::PostQueue;
use crate::transport::http::{chain, drain, exchange, redacted, Exchange, Outcome};
use crate::transport::{
    CloseReason, ConnectContext, Connection, InboundHandler, Outbound, OversizeFrame, RequestHead,
    SendError, SendFailure, TransportError,
};

/// Opens the event stream, waits for the endpoint, and starts the reader and writer.
pub(super) async fn open(
    inner: Arc<Inner>,
    ctx: ConnectContext,
) -> Result<SseConnection, TransportError> {
    let server = Arc::clone(&ctx.server);
    let shown = redacted(&inner.url);
    let mut body = get_stream(&inner, &server, &shown).await?;
    let mut parser = EventParser::new(ctx.frame_limit);
    let (endpoint, rest) =
        wait_for_endpoint(&inner, &server, &shown, &mut body, &mut parser).await?;
    Ok(start(&inner, &ctx, body, parser, endpoint, rest))
}

/// An error about `server`'s stream that names the server.
fn fail(server: &str, what: String) -> TransportError {
    TransportError::new(format!("server `{server}`: {what}"))
}

/// Step 1: GETs the stream within the connect timeout and checks that it is an event stream.
async fn get_stream(inner: &Inner, server: &str, shown: &str) -> Result<Body, TransportError> {
    let mut headers = inner.headers.clone();
    headers.push((
        header::ACCEPT,
        HeaderValue::from_static("text/event-stream"),
    ));
    headers.push((header::CACHE_CONTROL, HeaderValue::from_static("no-cache")));
    let get = || request(Method::GET, &inner.url, &headers, Bytes::new()).map(|r| (r, false));
    let how = Exchange {
        what: "the GET",
        timeout: Some(inner.connect_timeout),
        idempotent: true,
        url: &inner.url,
        first: Some("/sse"),
    };
    let response = match exchange(&inner.http, how, get).await {
        Outcome::Answered(response) => response,
        refused => {
            if let Some(status) = refused.status() {
                tracing::warn!(server = %server, status = %status, "the GET of the event stream was refused");
            }
            return Err(refused.into_connect_error(server, "the GET", shown, &inner.auth_hint));
        }
    };
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
    {
        return Err(fail(
            server,
            format!(
                "GET {shown} answered `Content-Type: {}`, not text/event-stream; is this the SSE URL?",
                content_type.escape_debug()
            ),
        ));
    }
    Ok(response.into_body())
}

/// Step 2: waits (bounded) for the endpoint event and resolves it; returns the endpoint and the
/// items that came after it, for the reader.
async fn wait_for_endpoint(
    inner: &Inner,
    server: &str,
    shown: &str,
    body: &mut Body,
    parser: &mut EventParser,
) -> Result<(Url, Vec<SseItem>), TransportError> {
    let mut items = Vec::new();
    let wait = read_until_endpoint(body, parser, &mut items);
    let at = match tokio::time::timeout(inner.endpoint_timeout, wait).await {
        Err(_) => {
            return Err(TransportError::io(
                format!(
                    "server `{server}`: no endpoint event on {shown} within {} ms",
                    inner.endpoint_timeout.as_millis()
                ),
                io::Error::from(io::ErrorKind::TimedOut),
            ))
        }
        Ok(Err(what)) => return Err(fail(server, format!("{what} ({shown})"))),
        Ok(Ok(at)) => at,
    };
    let rest = items.split_off(at + 1);
    let Some(SseItem::Event(event)) = items.pop() else {
        unreachable!("`at` is the position of an endpoint event");
    };
    for early in &items {
        tracing::warn!(server = %server, item = ?kind_of(early), "event before the endpoint event ignored");
    }
    let endpoint = endpoint::resolve(&inner.url, &event.data).map_err(|e| match e {
        EndpointError::Foreign(_) => TransportError::io(
            format!("server `{server}`: {e} (the stream is {shown})"),
            io::Error::new(io::ErrorKind::PermissionDenied, "foreign endpoint"),
        )
        .permanent(),
        EndpointError::Invalid(_) => fail(server, e.to_string()),
    })?;
    tracing::debug!(
        server = %server,
        endpoint = %endpoint.path(),
        retry_ms = ?parser.retry().map(|d| d.as_millis()),
        "SSE stream open"
    );
    Ok((endpoint, rest))
}

/// Reads the stream into `items` until one is the endpoint event; its position, or why the
/// stream ended first.
async fn read_until_endpoint(
    body: &mut Body,
    parser: &mut EventParser,
    items: &mut Vec<SseItem>,
) -> Result<usize, String> {
    loop {
        match body.frame().await {
            None => return Err("the event stream ended before the endpoint event".to_owned()),
            Some(Err(e)) => {
                return Err(format!(
                    "the event stream failed before the endpoint event: {}",
                    chain(&*e)
                ))
            }
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                parser.push(&data, items);
                if let Some(i) = items.iter().position(is_endpoint) {
                    return Ok(i);
                }
            }
        }
    }
}

/// Step 3: wires the session to the stream: hands it the outbound queue and spawns the reader
/// (given `rest` first) and the writer.
fn start(
    inner: &Inner,
    ctx: &ConnectContext,
    body: Body,
    parser: EventParser,
    endpoint: Url,
    rest: Vec<SseItem>,
) -> SseConnection {
    let server = Arc::clone(&ctx.server);
    let shared = Arc::new(PostQueue::new());
    ctx.handler
        .on_open(Arc::new(SseOutbound(Arc::clone(&shared))) as Arc<dyn Outbound>);
    let (failed_tx, failed_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let span = tracing::debug_span!("mcp.sse", server = %server);
    let reader = Reader {
        server: Arc::clone(&server),
        body,
        parser,
        limit: ctx.frame_limit,
        failed: failed_rx,
        stop: stop_rx,
        guard: CloseGuard {
            shared: Arc::clone(&shared),
            handler: Some(Arc::clone(&ctx.handler)),
        },
    };
    let reader = tokio::spawn(reader.run(rest).instrument(span.clone()));
    let writer = Writer {
        server: Arc::clone(&server),
        shared: Arc::clone(&shared),
        http: inner.http.clone(),
        endpoint,
        headers: inner.headers.clone(),
        timeout: inner.post_timeout,
        auth_hint: inner.auth_hint.clone(),
        failed: failed_tx,
    };
    let writer = tokio::spawn(writer.run().instrument(span));
    SseConnection {
        server,
        shared,
        stop: Some(stop_tx),
        reader: Some(reader),
        writer: Some(writer),
    }
}

fn is_endpoint(item: &SseItem) -> bool {
    matches!(item, SseItem::Event(e) if e.event == "endpoint")
}

fn kind_of(item: &SseItem) -> &str {
    match item {
        SseItem::Event(e) => &e.event,
        SseItem::Oversized(_) => "oversized",
    }
}

/// The sending half given to the session: queues a frame for the writer.
struct SseOutbound(Arc<PostQueue>);

impl SseOutbound {
    fn queue(
        &self,
        request: Option<&RequestId>,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        if self.0.is_closed() {
            return Err(SendError::Closed);
        }
        let mut frame = Vec::new();
        write(&mut frame).map_err(SendError::Encode)?;
        self.0.push(request.cloned(), frame).map(drop)
    }
}

impl Outbound for SseOutbound {
    fn send_with(
        &self,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        self.queue(None, write)
    }

    fn send_request(
        &self,
        id: &RequestId,
        _: &RequestHead<'_>,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        self.queue(Some(id), write)
    }
}

/// Reads the event stream and hands messages to the session.
struct Reader {
    server: Arc<str>,
    body: Body,
    parser: EventParser,
    limit: usize,
    /// Requests whose POST failed, from the writer, so the session hears of them from this
    /// task like everything else (and never after `on_closed`).
    failed: mpsc::UnboundedReceiver<(RequestId, SendFailure)>,
    stop: oneshot::Receiver<()>,
    guard: CloseGuard,
}

impl Reader {
    async fn run(mut self, mut items: Vec<SseItem>) {
        self.deliver(&mut items);
        self.passing();
        let reason = loop {
            tokio::select! {
                biased;
                _ = &mut self.stop => break closed("closed by the client", true),
                Some((id, failure)) = self.failed.recv() => {
                    if let Some(handler) = &self.guard.handler {
                        handler.on_send_failed(&id, failure);
                    }
                }
                frame = self.body.frame() => match frame {
                    None => break closed("the event stream ended", false),
                    Some(Err(e)) => {
                        break closed(&format!("the event stream failed: {}", chain(&*e)), false)
                    }
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            self.parser.push(&data, &mut items);
                            self.deliver(&mut items);
                            self.passing();
                        }
                    }
                },
            }
        };
        tracing::debug!(server = %self.server, reason = %reason.message, "SSE stream closed");
        self.guard.finish(reason);
    }

    fn deliver(&self, items: &mut Vec<SseItem>) {
        let Some(handler) = &self.guard.handler else {
            items.clear();
            return;
        };
        for item in items.drain(..) {
            match item {
                SseItem::Event(e) if e.event == "message" => {
                    if e.data.trim().is_empty() {
                        tracing::debug!(server = %self.server, "empty message event ignored");
                        continue;
                    }
                    handler.on_frame(e.data.as_bytes());
                }
                SseItem::Event(e) if e.event == "endpoint" => {
                    tracing::warn!(server = %self.server, "a second endpoint event was ignored");
                }
                SseItem::Event(e) => {
                    tracing::debug!(server = %self.server, event = %e.event.escape_debug(), "event of an unknown type ignored");
                }
                SseItem::Oversized(o) => {
                    tracing::warn!(
                        server = %self.server,
                        len = o.len,
                        limit = self.limit,
                        "event over the frame limit discarded"
                    );
                    if matches!(o.event.as_deref(), None | Some("message" | "")) {
                        handler
                            .on_oversize(OversizeFrame::new(&o.head, &o.tail, o.len, self.limit));
                    }
                }
            }
        }
    }

    /// An event passing the frame limit: the session fails the request its head names at
    /// once (the event may never end); the stream skips the rest of it.
    fn passing(&mut self) {
        let Some(o) = self.parser.take_passing() else {
            return;
        };
        tracing::debug!(
            server = %self.server,
            len = o.len,
            limit = self.limit,
            "event passing the frame limit; skipping the rest of it"
        );
        if let (Some(handler), None | Some("message" | "")) =
            (&self.guard.handler, o.event.as_deref())
        {
            let frame = OversizeFrame::new(&o.head, &o.tail, o.len, self.limit);
            handler.on_oversize_passing(frame.passed_limit());
        }
    }
}

fn closed(message: &str, requested: bool) -> CloseReason {
    let reason = CloseReason::new(message);
    if requested {
        reason.requested()
    } else {
        reason
    }
}

/// Calls `on_closed` once: when the reader ends, or when its task is dropped (aborted, or the
/// runtime shut down).
struct CloseGuard {
    shared: Arc<PostQueue>,
    handler: Option<Arc<dyn InboundHandler>>,
}

impl CloseGuard {
    fn finish(&mut self, reason: CloseReason) {
        self.shared.close();
        if let Some(handler) = self.handler.take() {
            handler.on_closed(reason);
        }
    }
}

impl Drop for CloseGuard {
    fn drop(&mut self) {
        self.finish(closed("the connection was dropped", true));
    }
}

/// POSTs queued frames to the endpoint, one at a time and in order (so `initialize`,
/// `notifications/initialized` and the first requests reach the server in the order sent).
struct Writer {
    server: Arc<str>,
    shared: Arc<PostQueue>,
    http: HttpService,
    endpoint: Url,
    headers: Vec<(HeaderName, HeaderValue)>,
    timeout: Duration,
    auth_hint: String,
    failed: mpsc::UnboundedSender<(RequestId, SendFailure)>,
}

impl Writer {
    async fn run(mut self) {
        self.headers.push((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
        while let Some(queued) = self.shared.next().await {
            if let Err(failure) = self.post(queued.frame).await {
                self.failed(queued.request, failure);
            }
            self.shared.sent(queued.seq);
        }
    }

    /// One POST; `Err` says what went wrong, naming no secret, whether the server provably did
    /// not process the frame (refused connection, 4xx status) and whether sending it again may
    /// help.
    async fn post(&self, frame: Bytes) -> Result<(), SendFailure> {
        let how = Exchange {
            what: "the POST",
            timeout: Some(self.timeout),
            idempotent: false,
            url: &self.endpoint,
            first: None,
        };
        let make = || {
            request(Method::POST, &self.endpoint, &self.headers, frame.clone()).map(|r| (r, false))
        };
        match exchange(&self.http, how, make).await {
            Outcome::Answered(response) => {
                // Read the (short) body so the connection goes back to the pool; never log it.
                let _ = tokio::time::timeout(self.timeout, drain(response.into_body())).await;
                Ok(())
            }
            mut refused => {
                if let Some(body) = refused.take_body() {
                    let _ = tokio::time::timeout(self.timeout, drain(body)).await;
                }
                Err(refused.into_failure("the POST", &self.auth_hint))
            }
        }
    }

    /// A POST failed: a request fails at once (through the reader task); anything else is
    /// logged.
    fn failed(&self, request: Option<RequestId>, failure: SendFailure) {
        let server = &self.server;
        match request {
            Some(id) => {
                tracing::debug!(server = %server, request_id = %id, problem = %failure, "POST failed");
                // Gone only when the reader ended, and then the session failed it already.
                let _ = self.failed.send((id, failure));
            }
            None => {
                tracing::warn!(server = %server, problem = %failure, "POST of a notification or an answer failed");
            }
        }
    }
}

/// How long a close waits for what was queued before it to be POSTed.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// An open SSE connection. Dropping it ends the stream and the writer at once.
pub(super) struct SseConnection {
    server: Arc<str>,
    shared: Arc<PostQueue>,
    stop: Option<oneshot::Sender<()>>,
    reader: Option<JoinHandle<()>>,
    writer: Option<JoinHandle<()>>,
}

impl fmt::Debug for SseConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseConnection")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Connection for SseConnection {
    fn close(self: Box<Self>) -> crate::transport::BoxFuture<'static, ()> {
        self.close_within(FLUSH_TIMEOUT)
    }

    /// POSTs what was queued before (a cancelled call's `notifications/cancelled`, an
    /// interrupted task's `tasks/cancel`), at most `grace` (and [`FLUSH_TIMEOUT`]), then ends
    /// the stream and the writer. (Before issue 49 the queue was dropped at once: the server
    /// never heard of those cancellations.)
    fn close_within(
        mut self: Box<Self>,
        grace: Duration,
    ) -> crate::transport::BoxFuture<'static, ()> {
        let stop = self.stop.take();
        let reader = self.reader.take();
        let writer = self.writer.take();
        let shared = Arc::clone(&self.shared);
        let server = Arc::clone(&self.server);
        let conn = self;
        Box::pin(async move {
            let last = shared.last_queued();
            let flushed = tokio::time::timeout(grace.min(FLUSH_TIMEOUT), shared.wait_sent(last));
            if flushed.await.is_err() {
                tracing::debug!(server = %server, "closing with messages not yet POSTed");
            }
            if let Some(stop) = stop {
                let _ = stop.send(());
            }
            if let Some(reader) = reader {
                let _ = reader.await;
            }
            shared.close();
            if let Some(writer) = writer {
                writer.abort();
            }
            // Dropped only now: its drop closes the queue, which must wait for the flush.
            drop(conn);
        })
    }
}

impl Drop for SseConnection {
    fn drop(&mut self) {
        self.shared.close();
        for task in [self.reader.take(), self.writer.take()]
            .into_iter()
            .flatten()
        {
            task.abort();
        }
    }
}
