//! One Streamable HTTP session: the outbound path (a task per request, one ordered queue for
//! notifications and answers), the response readers (JSON body or event stream, resumed with
//! `Last-Event-ID`), the GET stream, session expiry and shutdown.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::FutureExt;
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use kaged_mcp_layers::retry::{Jitter, JitteredBackoff};
use serde::Deserialize;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Inner;
use crate::protocol::{JsonRpcError, RequestId};
use crate::transport::http::client::Body;
use crate::transport::http::queue::PostQueue;
use crate::transport::http::{chain, drain, empty_body, exchange, redacted, Exchange, Outcome};
use crate::transport::sse::{EventParser, SseItem, OVERSIZE_HEAD, OVERSIZE_TAIL};
use crate::transport::{
    BoxFuture, CloseReason, ConnectContext, Connection, InboundHandler, Outbound, OversizeFrame,
    RequestHead, SendError, SendFailure, TransportError,
};

/// `Mcp-Session-Id`.
static SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
static PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method` (2026-07-28: every request).
static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (2026-07-28: `tools/call`, `resources/read`, `prompts/get`).
static MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// `Last-Event-ID`.
static LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// What a POST accepts.
static ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
static ACCEPT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
static JSON: HeaderValue = HeaderValue::from_static("application/json");

/// The wait before resuming a response stream when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// A server's `retry` is taken within these bounds (`retry: 0` must not make a busy loop, nor
/// a huge one park a stream for the session's life).
const MIN_RETRY: Duration = Duration::from_millis(50);
const MAX_RETRY: Duration = Duration::from_secs(60);
/// The first wait before opening the GET stream again; it doubles up to [`MAX_GET_BACKOFF`],
/// each wait drawn between half of that and all of it.
const FIRST_GET_BACKOFF: Duration = Duration::from_secs(1);
const MAX_GET_BACKOFF: Duration = Duration::from_secs(60);
/// How long shutdown waits for queued notifications (cancellations) to go out.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Starts a session: nothing is sent until the client's first message.
pub(super) fn open(
    inner: Arc<Inner>,
    ctx: ConnectContext,
) -> Result<StreamableConnection, TransportError> {
    let runtime = Handle::try_current().map_err(|_| {
        TransportError::new(format!(
            "server `{}`: the Streamable HTTP transport needs a Tokio runtime",
            ctx.server
        ))
    })?;
    let span = tracing::debug_span!("mcp.http", server = %ctx.server);
    let conn = Arc::new(Conn {
        inner,
        server: Arc::clone(&ctx.server),
        limit: ctx.frame_limit,
        runtime,
        span,
        cancel: CancellationToken::new(),
        handler: Mutex::new(Some(Arc::clone(&ctx.handler))),
        awaiting: Arc::downgrade(&ctx.handler),
        session: Mutex::new(SessionHeaders::default()),
        queue: PostQueue::new(),
        initialized_seq: AtomicU64::new(0),
        get_settled: watch::channel(false).0,
        no_get_stream: AtomicBool::new(false),
        requests: Mutex::new(HashMap::new()),
        modern: AtomicBool::new(false),
    });
    ctx.handler
        .on_open(Arc::new(HttpOutbound(Arc::clone(&conn))) as Arc<dyn Outbound>);
    conn.spawn(Arc::clone(&conn).post_ordered());
    Ok(StreamableConnection {
        conn: CloseOnDrop {
            conn: Some(conn),
            reason: "the connection was dropped",
        },
    })
}

/// What every task of one session shares.
struct Conn {
    inner: Arc<Inner>,
    server: Arc<str>,
    limit: usize,
    runtime: Handle,
    span: tracing::Span,
    /// Cancelled when the session ends: every task stops.
    cancel: CancellationToken,
    /// The session, until `on_closed`; held while a frame is delivered, so frames from several
    /// streams reach it one at a time and never after `on_closed`. (So the handler must not
    /// close or drop this connection from inside `on_frame`: the session never does.)
    handler: Mutex<Option<Arc<dyn InboundHandler>>>,
    /// The same handler, for [`InboundHandler::awaits`] without the delivery lock (weak: the
    /// session owns this connection's outbound half).
    awaiting: Weak<dyn InboundHandler>,
    session: Mutex<SessionHeaders>,
    /// Notifications and answers waiting to be POSTed, in order, by one worker task.
    queue: PostQueue,
    /// The sequence number `notifications/initialized` gets (the first notification queued
    /// after [`Connection::negotiated`]); 0 before. Requests and the GET stream wait until it
    /// was POSTed.
    initialized_seq: AtomicU64,
    /// Set once the first GET of the session was answered (a stream, a refusal, or an error):
    /// requests wait for it (at most the connect timeout), so a server's messages about a call
    /// can ride a stream that is open before the call, and a server that answers a pending
    /// call on any GET cannot take a resumption's place.
    get_settled: watch::Sender<bool>,
    /// The server answered the GET that it offers no stream (`405` and the like): an answer
    /// can come only on a request's own response.
    no_get_stream: AtomicBool,
    /// The requests in flight: each one's task ends when its token is cancelled (the session
    /// ended, or the caller gave up and `notifications/cancelled` went out for it).
    requests: Mutex<HashMap<RequestId, Arc<InFlight>>>,
    /// The session's latest request declared its own protocol version (the 2026-07-28 era):
    /// closing a request's response is its cancellation, no notification is POSTed.
    modern: AtomicBool,
}

/// One request's task, as the connection sees it.
#[derive(Debug)]
struct InFlight {
    /// Ends the task (a child of the session's token).
    cancel: CancellationToken,
    /// Its POST was started: it may have reached the server.
    posted: AtomicBool,
}

/// The headers a session adds to every message once it knows them.
#[derive(Debug, Default)]
struct SessionHeaders {
    id: Option<HeaderValue>,
    protocol: Option<HeaderValue>,
    /// The GET stream was started.
    listening: bool,
}

/// How a response stream ended.
enum StreamEnd {
    /// The answer came (or no one waits for it any more).
    Done,
    /// The stream ended or failed before the answer; the text says how.
    Cut(String),
}

impl Conn {
    fn lock_handler(&self) -> MutexGuard<'_, Option<Arc<dyn InboundHandler>>> {
        self.handler.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_session(&self) -> MutexGuard<'_, SessionHeaders> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_requests(&self) -> MutexGuard<'_, HashMap<RequestId, Arc<InFlight>>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts request `id`'s task: it ends with the answer, with the session, or when the
    /// caller gives up (see [`Conn::cancelled`]).
    fn spawn_request(self: &Arc<Self>, id: RequestId, body: Bytes, mirror: Option<Mirror>) {
        let flight = Arc::new(InFlight {
            cancel: self.cancel.child_token(),
            posted: AtomicBool::new(false),
        });
        self.lock_requests().insert(id.clone(), Arc::clone(&flight));
        let forget = Forget {
            conn: Arc::clone(self),
            id: id.clone(),
        };
        let task = Arc::clone(self).post_request(body, id, mirror, Arc::clone(&flight));
        self.runtime.spawn(
            async move {
                let _forget = forget;
                tokio::select! {
                    biased;
                    () = flight.cancel.cancelled() => {}
                    () = task => {}
                }
            }
            .instrument(self.span.clone()),
        );
    }

    /// The caller of request `id` gave up: its task stops (never sent if it was still
    /// waiting, its answer no longer read).
    fn cancelled(&self, id: &RequestId) {
        if let Some(flight) = self.lock_requests().get(id) {
            flight.cancel.cancel();
        }
    }

    fn is_closed(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let cancel = self.cancel.clone();
        self.runtime.spawn(
            async move {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => {}
                    () = task => {}
                }
            }
            .instrument(self.span.clone()),
        );
    }

    /// Ends the session once: no frame is delivered after this, every task stops.
    fn close(&self, reason: CloseReason) {
        self.cancel.cancel();
        let handler = self.lock_handler().take();
        self.queue.close();
        if let Some(handler) = handler {
            tracing::debug!(server = %self.server, reason = %reason.message, "Streamable HTTP session closed");
            handler.on_closed(reason);
        }
    }

    fn deliver(&self, frame: &[u8]) {
        if let Some(handler) = &*self.lock_handler() {
            handler.on_frame(frame);
        }
    }

    fn oversize(&self, frame: OversizeFrame<'_>) {
        tracing::warn!(
            server = %self.server,
            len = frame.len,
            limit = frame.limit,
            "message over the frame limit discarded"
        );
        if let Some(handler) = &*self.lock_handler() {
            handler.on_oversize(frame);
        }
    }

    /// Fails request `id`, naming why.
    fn fail(&self, id: &RequestId, failure: SendFailure) {
        tracing::debug!(server = %self.server, request_id = %id, problem = %failure.message, "request failed in the transport");
        if let Some(handler) = &*self.lock_handler() {
            handler.on_send_failed(id, failure);
        }
    }

    fn awaits(&self, id: &RequestId) -> bool {
        !self.is_closed() && self.awaiting.upgrade().is_some_and(|h| h.awaits(id))
    }

    /// The server ended the session (a 404 to a message carrying its id): the request that
    /// met it fails as not delivered and retryable, then the session closes so the client
    /// starts a new one at once.
    fn expire(&self, id: Option<&RequestId>, verb: &str) {
        tracing::info!(server = %self.server, "the server ended the session (404); a new one will be started");
        // Requests whose POST never started provably did not reach the server: they fail as
        // not delivered, so the retry layer sends them again on the next session. (Those in
        // flight may have been processed: they fail with the session, delivery unknown.)
        let unsent: Vec<RequestId> = self
            .lock_requests()
            .iter()
            .filter(|(rid, f)| !f.posted.load(Ordering::Acquire) && Some(*rid) != id)
            .map(|(rid, _)| rid.clone())
            .collect();
        // First end every task and refuse new messages, so nothing more goes to the old session.
        self.cancel.cancel();
        let expired = SendFailure::expired;
        if let Some(id) = id {
            self.fail(
                id,
                expired(format!(
                    "the session expired ({verb} answered 404 Not Found); a new one is started"
                )),
            );
        }
        for id in &unsent {
            self.fail(
                id,
                expired(
                    "the session expired before the request went out; a new one is started".into(),
                ),
            );
        }
        self.close(
            CloseReason::new(format!(
                "ended the session ({verb} answered 404 Not Found); a new one is started"
            ))
            .session_expired(),
        );
    }

    /// A request to the endpoint with the static headers, the session's headers, `accept`, and
    /// the request's mirrored fields (which name its own protocol version) if it has them.
    fn request(
        &self,
        method: Method,
        accept: &HeaderValue,
        body: Bytes,
        last_event_id: Option<&str>,
        mirror: Option<&Mirror>,
    ) -> Result<(Request<Full<Bytes>>, bool), http::Error> {
        let mut builder = Request::builder()
            .method(method)
            .uri(self.inner.uri.clone())
            .header(header::ACCEPT, accept.clone());
        if !body.is_empty() {
            builder = builder.header(header::CONTENT_TYPE, JSON.clone());
        }
        for (name, value) in &self.inner.headers {
            builder = builder.header(name, value);
        }
        let with_session = {
            let session = self.lock_session();
            if let Some(id) = &session.id {
                builder = builder.header(&SESSION_ID, id.clone());
            }
            if mirror.is_none() {
                if let Some(v) = &session.protocol {
                    builder = builder.header(&PROTOCOL_VERSION, v.clone());
                }
            }
            session.id.is_some()
        };
        if let Some(mirror) = mirror {
            builder = builder
                .header(&PROTOCOL_VERSION, mirror.version.clone())
                .header(&MCP_METHOD, mirror.method.clone());
            if let Some(name) = &mirror.name {
                builder = builder.header(&MCP_NAME, name.clone());
            }
            for (name, value) in &mirror.params {
                builder = builder.header(name, value.clone());
            }
        }
        if let Some(last) = last_event_id {
            if let Ok(v) = HeaderValue::from_str(last) {
                builder = builder.header(&LAST_EVENT_ID, v);
            }
        }
        Ok((builder.body(Full::new(body))?, with_session))
    }

    /// Keeps the session id of the first successful answer that gives one (a refusal is no
    /// session: mcp 1.x mints an id on the `400` it answers a request without one).
    fn note_session(&self, response: &Response<Body>) {
        if !response.status().is_success() {
            return;
        }
        if let Some(id) = response.headers().get(&SESSION_ID) {
            let mut session = self.lock_session();
            if session.id.is_none() {
                let mut id = id.clone();
                id.set_sensitive(true);
                session.id = Some(id);
            }
        }
    }

    fn has_session(&self) -> bool {
        self.lock_session().id.is_some()
    }

    // --- requests ------------------------------------------------------------------------

    /// POSTs request `id` and reads its answer.
    async fn post_request(
        self: Arc<Self>,
        body: Bytes,
        id: RequestId,
        mirror: Option<Mirror>,
        flight: Arc<InFlight>,
    ) {
        self.initialized().await;
        self.get_answered().await;
        flight.posted.store(true, Ordering::Release);
        let how = Exchange {
            what: "the POST",
            timeout: None,
            idempotent: false,
            url: &self.inner.url,
        };
        let make = || {
            self.request(
                Method::POST,
                &ACCEPT_BOTH,
                body.clone(),
                None,
                mirror.as_ref(),
            )
        };
        let response = match exchange(&self.inner.http, how, make).await {
            Outcome::Answered(response) => response,
            Outcome::Expired => return self.expire(Some(&id), "the POST"),
            // A modern server answers a request it refuses (unsupported version, header
            // mismatch, unknown method) with a 4xx whose body is the JSON-RPC error: the
            // session gets that error, which tells a modern server from a legacy one.
            Outcome::Refused { status, response }
                if mirror.is_some() && status.is_client_error() =>
            {
                let json = matches!(content_type(&response), ContentType::Json);
                let body = response.into_body();
                if json {
                    if let Some(error) = read_error_body(body).await {
                        return self.deliver_error(&id, &error, status);
                    }
                } else {
                    drain_soon(body).await;
                }
                let failure = Outcome::Refused {
                    status,
                    response: Response::new(empty_body()),
                };
                return self.fail(&id, failure.into_failure("the POST", &self.inner.auth_hint));
            }
            mut refused => {
                if let Outcome::Redirect { status, .. } = &refused {
                    tracing::warn!(server = %self.server, status = %status, "redirect refused");
                }
                if let Some(body) = refused.take_body() {
                    drain_soon(body).await;
                }
                return self.fail(&id, refused.into_failure("the POST", &self.inner.auth_hint));
            }
        };
        self.note_session(&response);
        let status = response.status();
        if status == StatusCode::ACCEPTED {
            // A request's answer may then come only on the GET stream: 2026-07-28 has none, and
            // a legacy server may have refused it. Waiting would only end at the timeout.
            let nowhere = if mirror.is_some() {
                Some("in 2026-07-28 a request's answer comes only on its own response (there is no GET stream)")
            } else if self.no_get_stream.load(Ordering::Acquire) {
                Some("the server offers no GET stream for it to come on")
            } else {
                None
            };
            if let Some(why) = nowhere {
                tracing::warn!(server = %self.server, request_id = %id, "a request was answered 202 Accepted without an answer");
                return self.fail(
                    &id,
                    SendFailure::unknown(format!(
                        "the POST of a request was answered `202 Accepted` with no answer; \
                             {why}, so none will come"
                    ))
                    .status(202),
                );
            }
            tracing::debug!(server = %self.server, request_id = %id, "request accepted without an answer; it may come on the GET stream");
            return;
        }
        match content_type(&response) {
            ContentType::Json => self.read_json(response.into_body(), &id).await,
            ContentType::EventStream => {
                let resumable = mirror.is_none();
                self.read_answer_stream(response.into_body(), &id, resumable)
                    .await
            }
            ContentType::Other(ct) => self.fail(
                &id,
                SendFailure::unknown(format!(
                    "the POST was answered `Content-Type: {}`, neither application/json \
                         nor text/event-stream; is this the MCP endpoint?",
                    ct.escape_debug()
                )),
            ),
        }
    }

    /// Delivers the JSON-RPC error a refused POST's body held, as the answer to request `id`.
    fn deliver_error(&self, id: &RequestId, error: &JsonRpcError, status: StatusCode) {
        tracing::debug!(server = %self.server, request_id = %id, status = %status, code = error.code, "the POST was refused with a JSON-RPC error");
        let frame = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error});
        let refused = || {
            Outcome::Refused {
                status,
                response: Response::new(empty_body()),
            }
            .into_failure("the POST", &self.inner.auth_hint)
        };
        match serde_json::to_vec(&frame) {
            Ok(bytes) => self.deliver(&bytes),
            Err(_) => self.fail(id, refused()),
        }
        if self.awaits(id) {
            self.fail(id, refused());
        }
    }

    /// Reads a JSON answer: delivered whole, or reported over the limit with its first and last
    /// bytes. Past the limit the body is read on only while the request's caller waits.
    async fn read_json(&self, mut body: Body, id: &RequestId) {
        let mut first: Option<Bytes> = None;
        let mut rest = BytesMut::new();
        let mut over: Option<Over> = None;
        loop {
            let frame = match body.frame().await {
                None => break,
                Some(Ok(frame)) => frame,
                Some(Err(e)) => {
                    if self.awaits(id) {
                        self.fail(
                            id,
                            SendFailure::unknown(format!(
                                "the answer's body failed before its end: {}",
                                chain(&*e)
                            )),
                        );
                    }
                    return;
                }
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if let Some(over) = &mut over {
                over.push(&data);
                if !self.awaits(id) {
                    return;
                }
                continue;
            }
            // The body so far is `first` alone (the common one-chunk case, not copied) or, once
            // a second chunk came, `rest` alone.
            let held = first.as_ref().map_or(rest.len(), Bytes::len);
            if held + data.len() > self.limit {
                let mut o = Over::default();
                match first.take() {
                    Some(f) => o.push(&f),
                    None => o.push(&rest),
                }
                o.push(&data);
                rest = BytesMut::new();
                over = Some(o);
                if !self.awaits(id) {
                    return;
                }
                continue;
            }
            if let Some(f) = first.take() {
                rest.extend_from_slice(&f);
                rest.extend_from_slice(&data);
            } else if rest.is_empty() {
                first = Some(data);
            } else {
                rest.extend_from_slice(&data);
            }
        }
        if let Some(over) = over {
            if !self.awaits(id) {
                return;
            }
            return self.oversize(OversizeFrame {
                head: &over.head,
                tail: &over.tail,
                len: over.len,
                limit: self.limit,
            });
        }
        let whole: &[u8] = match &first {
            Some(f) => f,
            None => &rest,
        };
        if whole.iter().all(u8::is_ascii_whitespace) {
            if self.awaits(id) {
                self.fail(
                    id,
                    SendFailure::unknown("the POST was answered with an empty JSON body"),
                );
            }
            return;
        }
        self.deliver(whole);
        if self.awaits(id) {
            // Delivered, yet the request still waits: the body answered something else (an
            // error without an id, say). No other answer will come on this POST.
            self.fail(
                id,
                SendFailure::unknown("the POST's JSON body did not answer the request"),
            );
        }
    }

    /// Reads an answer's event stream, resuming it with `Last-Event-ID` while it ends before
    /// the answer, if it is `resumable` (2026-07-28 streams are not: a cut one fails its
    /// request at once).
    async fn read_answer_stream(&self, body: Body, id: &RequestId, resumable: bool) {
        let mut parser = EventParser::new(self.limit);
        let mut body = body;
        let mut fruitless = 0;
        loop {
            let (end, got_events) = self.pump(&mut body, &mut parser, Some(id)).await;
            let why = match end {
                StreamEnd::Done => return,
                StreamEnd::Cut(why) => why,
            };
            if !self.awaits(id) {
                return;
            }
            if !resumable {
                return self.fail(
                    id,
                    SendFailure::unknown(format!(
                        "the response stream {why} before the answer (2026-07-28 streams \
                             are not resumed)"
                    )),
                );
            }
            if got_events {
                fruitless = 0;
            }
            let Some(last) = parser.last_event_id().map(str::to_owned) else {
                return self.fail(
                    id,
                    SendFailure::unknown(format!(
                        "the response stream {why} before the answer, and the server gave \
                             no event id to resume it from"
                    )),
                );
            };
            fruitless += 1;
            if fruitless > self.inner.max_resumptions {
                return self.fail(
                    id,
                    SendFailure::unknown(format!(
                        "the response stream {why} before the answer; {} attempts to \
                             resume it brought nothing",
                        self.inner.max_resumptions
                    )),
                );
            }
            let wait = parser.retry().map_or(DEFAULT_RETRY, clamp_retry);
            tracing::debug!(server = %self.server, request_id = %id, retry_ms = wait.as_millis() as u64, "response stream cut before its answer; resuming");
            tokio::time::sleep(wait).await;
            match self.resume(&last).await {
                Ok(next) => {
                    body = next;
                    // A resumed stream is a new stream: its events carry on the ids.
                    let retry = parser.retry();
                    parser = EventParser::new(self.limit);
                    parser.seed(Some(last), retry);
                }
                Err(Resume::Expired) => return self.expire(None, "the GET resuming a stream"),
                Err(Resume::Failed(why)) if fruitless < self.inner.max_resumptions => {
                    tracing::debug!(server = %self.server, request_id = %id, problem = %why, "resuming the response stream failed; trying again");
                    // Parse nothing new: the next attempt resumes from the same event id.
                    body = empty_body();
                }
                Err(Resume::Failed(why)) => {
                    return self.fail(
                        id,
                        SendFailure::unknown(format!(
                            "the response stream ended before the answer, and resuming it \
                                 failed: {why}"
                        )),
                    )
                }
            }
        }
    }

    /// A GET with `Last-Event-ID: last`.
    async fn resume(&self, last: &str) -> Result<Body, Resume> {
        let how = Exchange {
            what: "the GET",
            timeout: Some(self.inner.connect_timeout),
            idempotent: true,
            url: &self.inner.url,
        };
        let make = || self.request(Method::GET, &ACCEPT_STREAM, Bytes::new(), Some(last), None);
        let response = match exchange(&self.inner.http, how, make).await {
            Outcome::Answered(response) => response,
            Outcome::Expired => return Err(Resume::Expired),
            mut refused => {
                if let Some(body) = refused.take_body() {
                    drain_soon(body).await;
                }
                let failure = refused.into_failure("the GET", &self.inner.auth_hint);
                return Err(Resume::Failed(failure.message().to_owned()));
            }
        };
        if !matches!(content_type(&response), ContentType::EventStream) {
            return Err(Resume::Failed(
                "the GET was not answered with an event stream".into(),
            ));
        }
        Ok(response.into_body())
    }

    /// Delivers the events of `body` until it ends or, when `id` is given, until no one waits
    /// for that request's answer any more. Returns how it ended and whether any event came.
    async fn pump(
        &self,
        body: &mut Body,
        parser: &mut EventParser,
        id: Option<&RequestId>,
    ) -> (StreamEnd, bool) {
        let mut items = Vec::new();
        let mut got_events = false;
        loop {
            let frame = match body.frame().await {
                None => return (StreamEnd::Cut("ended".into()), got_events),
                Some(Err(e)) => {
                    return (
                        StreamEnd::Cut(format!("failed ({})", chain(&*e))),
                        got_events,
                    )
                }
                Some(Ok(frame)) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            parser.push(&data, &mut items);
            got_events |= !items.is_empty();
            self.deliver_items(&mut items);
            if let Some(id) = id {
                if !self.awaits(id) {
                    // Answered (or abandoned): read what is left of a finished stream so its
                    // connection is reused; a stream left open is dropped.
                    drain_soon(std::mem::replace(body, empty_body())).await;
                    return (StreamEnd::Done, got_events);
                }
            }
        }
    }

    fn deliver_items(&self, items: &mut Vec<SseItem>) {
        for item in items.drain(..) {
            match item {
                SseItem::Event(e) if e.event == "message" => {
                    if !e.data.trim().is_empty() {
                        self.deliver(e.data.as_bytes());
                    }
                }
                SseItem::Event(e) => {
                    tracing::debug!(server = %self.server, event = %e.event.escape_debug(), "event of an unknown type ignored");
                }
                SseItem::Oversized(o) => {
                    if matches!(o.event.as_deref(), None | Some("message" | "")) {
                        self.oversize(OversizeFrame {
                            head: &o.head,
                            tail: &o.tail,
                            len: o.len,
                            limit: self.limit,
                        });
                    }
                }
            }
        }
    }

    // --- the GET stream ------------------------------------------------------------------

    /// Keeps the stream of server-initiated messages open while the session lives.
    async fn listen(self: Arc<Self>) {
        // Not before `notifications/initialized` was POSTed: a server may refuse a stream
        // before it.
        self.initialized().await;
        // Equal jitter: between half the doubling pause and all of it.
        let mut backoff = JitteredBackoff::new(FIRST_GET_BACKOFF, MAX_GET_BACKOFF)
            .expect("the GET pauses are valid")
            .jitter(Jitter::Equal);
        let mut attempt = 0;
        let mut last: Option<String> = None;
        let mut retry: Option<Duration> = None;
        loop {
            let opened = self.open_get(last.as_deref()).await;
            self.get_settled.send_replace(true);
            match opened {
                Ok(mut body) => {
                    tracing::debug!(server = %self.server, "GET stream open");
                    let mut parser = EventParser::new(self.limit);
                    parser.seed(last.clone(), retry);
                    let (end, got_events) = self.pump(&mut body, &mut parser, None).await;
                    if let StreamEnd::Cut(why) = end {
                        tracing::debug!(server = %self.server, "GET stream {why}");
                    }
                    last = parser.last_event_id().map(str::to_owned);
                    retry = parser.retry();
                    if got_events {
                        attempt = 0;
                    }
                }
                Err(Listen::NotOffered(status)) => {
                    tracing::debug!(server = %self.server, status = %status, "the server offers no GET stream");
                    self.no_get_stream.store(true, Ordering::Release);
                    return;
                }
                Err(Listen::Expired) => return self.expire(None, "the GET"),
                Err(Listen::Failed(why)) => {
                    tracing::warn!(server = %self.server, problem = %why, backoff_ms = backoff.ceiling(attempt).as_millis() as u64, "GET stream could not be opened; trying again");
                }
            }
            let pause = backoff.delay(attempt);
            let wait = retry.map_or(pause, |r| clamp_retry(r).max(pause));
            tokio::time::sleep(wait).await;
            attempt = attempt.saturating_add(1);
        }
    }

    async fn open_get(&self, last: Option<&str>) -> Result<Body, Listen> {
        let how = Exchange {
            what: "the GET",
            timeout: Some(self.inner.connect_timeout),
            idempotent: true,
            url: &self.inner.url,
        };
        let make = || self.request(Method::GET, &ACCEPT_STREAM, Bytes::new(), last, None);
        let outcome = exchange(&self.inner.http, how, make).await;
        let response = match outcome {
            Outcome::Answered(response) => response,
            Outcome::Expired => return Err(Listen::Expired),
            mut refused => {
                if let Some(body) = refused.take_body() {
                    drain_soon(body).await;
                }
                // A refusal that passes, or no answer, is tried again; any other (405, 401,
                // a redirect) says there is no stream to have.
                return Err(match refused.status() {
                    Some(status) if !refused.is_transient() => Listen::NotOffered(status),
                    _ => Listen::Failed(
                        refused
                            .into_failure("the GET", &self.inner.auth_hint)
                            .message()
                            .to_owned(),
                    ),
                });
            }
        };
        if !matches!(content_type(&response), ContentType::EventStream) {
            return Err(Listen::NotOffered(response.status()));
        }
        Ok(response.into_body())
    }

    /// Waits until `notifications/initialized` was POSTed (at once before the handshake is
    /// done, when there is nothing to wait for yet).
    async fn initialized(&self) {
        self.queue
            .wait_sent(self.initialized_seq.load(Ordering::Acquire))
            .await;
    }

    /// After the handshake, waits (at most the connect timeout, which also bounds the GET)
    /// until the first GET was answered; at once before the handshake and once it was.
    async fn get_answered(&self) {
        if self.initialized_seq.load(Ordering::Acquire) == 0 || *self.get_settled.borrow() {
            return;
        }
        let mut settled = self.get_settled.subscribe();
        let _ = tokio::time::timeout(self.inner.connect_timeout, settled.wait_for(|s| *s)).await;
    }

    // --- notifications and answers -----------------------------------------------------------

    /// POSTs the queued notifications and answers one at a time, in order, while the session
    /// lives.
    async fn post_ordered(self: Arc<Self>) {
        while let Some(queued) = self.queue.next().await {
            if let Err(problem) = self.post_other(queued.frame).await {
                tracing::warn!(server = %self.server, problem = %problem, "POST of a notification or an answer failed");
            }
            self.queue.sent(queued.seq);
        }
    }

    async fn post_other(&self, frame: Bytes) -> Result<(), String> {
        let how = Exchange {
            what: "the POST",
            timeout: Some(self.inner.post_timeout),
            idempotent: false,
            url: &self.inner.url,
        };
        let make = || self.request(Method::POST, &ACCEPT_BOTH, frame.clone(), None, None);
        match exchange(&self.inner.http, how, make).await {
            Outcome::Answered(response) => {
                drain_soon(response.into_body()).await;
                Ok(())
            }
            Outcome::Expired => {
                self.expire(None, "the POST");
                Err("the session expired".into())
            }
            mut refused => {
                if let Some(body) = refused.take_body() {
                    drain_soon(body).await;
                }
                Err(refused
                    .into_failure("the POST", &self.inner.auth_hint)
                    .message()
                    .to_owned())
            }
        }
    }

    /// Sends `DELETE` with the session id; any answer is fine.
    async fn delete(&self) {
        if !self.has_session() {
            return;
        }
        let how = Exchange {
            what: "the DELETE",
            timeout: Some(self.inner.connect_timeout),
            idempotent: true,
            url: &self.inner.url,
        };
        let make = || self.request(Method::DELETE, &ACCEPT_BOTH, Bytes::new(), None, None);
        match exchange(&self.inner.http, how, make).await {
            Outcome::Answered(response) => {
                tracing::debug!(server = %self.server, status = %response.status(), "session deleted");
                drain_soon(response.into_body()).await;
            }
            mut other => {
                if let Some(body) = other.take_body() {
                    drain_soon(body).await;
                }
                let failure = other.into_failure("the DELETE", &self.inner.auth_hint);
                tracing::debug!(server = %self.server, problem = %failure.message(), "DELETE failed");
            }
        }
    }

    /// Waits (bounded) until every queued notification and answer was POSTed.
    async fn flush(&self) {
        let target = self.queue.last_queued();
        let _ = tokio::time::timeout(FLUSH_TIMEOUT, self.queue.wait_sent(target)).await;
    }
}

/// A server's `retry` within [`MIN_RETRY`, `MAX_RETRY`].
fn clamp_retry(retry: Duration) -> Duration {
    retry.clamp(MIN_RETRY, MAX_RETRY)
}

/// Removes a request from [`Conn::requests`] when its task ends, however it ends.
struct Forget {
    conn: Arc<Conn>,
    id: RequestId,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.conn.lock_requests().remove(&self.id);
    }
}

/// Ends the session when dropped: [`Connection::close`]'s future, even when it is dropped
/// before it finishes, and the connection itself.
struct CloseOnDrop {
    conn: Option<Arc<Conn>>,
    reason: &'static str,
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.close(CloseReason::new(self.reason).requested());
        }
    }
}

enum Resume {
    Expired,
    Failed(String),
}

enum Listen {
    NotOffered(StatusCode),
    Expired,
    Failed(String),
}

/// The first and last bytes of a body over the frame limit, and its length.
#[derive(Default)]
struct Over {
    head: Vec<u8>,
    tail: Vec<u8>,
    len: u64,
}

impl Over {
    fn push(&mut self, data: &[u8]) {
        self.len += data.len() as u64;
        let room = OVERSIZE_HEAD.saturating_sub(self.head.len());
        let (to_head, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(to_head);
        let rest = &rest[rest.len().saturating_sub(OVERSIZE_TAIL)..];
        let drop = (self.tail.len() + rest.len()).saturating_sub(OVERSIZE_TAIL);
        self.tail.drain(..drop.min(self.tail.len()));
        self.tail.extend_from_slice(rest);
    }
}

enum ContentType {
    Json,
    EventStream,
    Other(String),
}

fn content_type(response: &Response<Body>) -> ContentType {
    let ct = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = ct.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        ContentType::Json
    } else if essence.eq_ignore_ascii_case("text/event-stream") {
        ContentType::EventStream
    } else {
        ContentType::Other(ct.to_owned())
    }
}

/// The most bytes of a refused POST's body read for its JSON-RPC error.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The JSON-RPC error in a refused POST's body (`{"jsonrpc", "id", "error"}`, whatever its
/// id), if it holds one within [`MAX_ERROR_BODY`] bytes and a second.
async fn read_error_body(mut body: Body) -> Option<JsonRpcError> {
    #[derive(Deserialize)]
    struct ErrorResponse {
        error: JsonRpcError,
    }
    let mut bytes = BytesMut::new();
    let read = async {
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.ok()?.into_data() else {
                continue;
            };
            if bytes.len() + data.len() > MAX_ERROR_BODY {
                return None;
            }
            bytes.extend_from_slice(&data);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(1), read)
        .await
        .ok()??;
    serde_json::from_slice::<ErrorResponse>(&bytes)
        .ok()
        .map(|r| r.error)
}

/// Reads what is left of a body so its connection is reused: at once when its end is already
/// there, else for at most a second (a stream the server keeps open is dropped).
async fn drain_soon(mut body: Body) {
    match body.frame().now_or_never() {
        Some(None) => {}
        Some(Some(_)) | None => {
            let _ = tokio::time::timeout(Duration::from_secs(1), drain(body)).await;
        }
    }
}

/// A request's fields mirrored into headers (2026-07-28): its protocol version, its method and
/// its name.
#[derive(Debug, Clone)]
struct Mirror {
    version: HeaderValue,
    method: HeaderValue,
    name: Option<HeaderValue>,
    /// `Mcp-Param-*`.
    params: Vec<(HeaderName, HeaderValue)>,
}

impl Mirror {
    /// The headers of a request that declares its own protocol version; `None` for one that
    /// does not (a legacy session's), or whose version or method cannot be a header value.
    fn of(head: &RequestHead<'_>) -> Option<Self> {
        let version = HeaderValue::from_str(head.protocol_version?).ok()?;
        let method = HeaderValue::from_str(head.method).ok()?;
        let name = head
            .name
            .and_then(|n| HeaderValue::from_str(&header_safe(n)).ok());
        let params = head
            .params
            .iter()
            .filter_map(|(name, value)| {
                let name = HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes()).ok()?;
                let value = HeaderValue::from_str(&header_safe(value)).ok()?;
                Some((name, value))
            })
            .collect();
        Some(Self {
            version,
            method,
            name,
            params,
        })
    }
}

/// `value` as a header value: as is when it is plain visible ASCII (spaces inside allowed),
/// else (non-ASCII, control characters, leading or trailing whitespace, or the sentinel's own
/// shape) `=?base64?<base64 of the UTF-8>?=`, as the 2026-07-28 Streamable HTTP binding says.
fn header_safe(value: &str) -> std::borrow::Cow<'_, str> {
    use base64::Engine as _;
    let plain = !value.is_empty()
        && value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && (!value.starts_with("=?base64?") || !value.ends_with("?="));
    if plain {
        std::borrow::Cow::Borrowed(value)
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        std::borrow::Cow::Owned(format!("=?base64?{encoded}?="))
    }
}

/// The sending half given to the session.
struct HttpOutbound(Arc<Conn>);

impl HttpOutbound {
    fn encode(
        &self,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<Vec<u8>, SendError> {
        if self.0.is_closed() {
            return Err(SendError::Closed);
        }
        let mut frame = Vec::with_capacity(256);
        write(&mut frame).map_err(SendError::Encode)?;
        Ok(frame)
    }
}

impl Outbound for HttpOutbound {
    /// A notification or an answer: POSTed in order by the session's worker.
    fn send_with(
        &self,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        let frame = self.encode(write)?;
        self.0.queue.push(None, frame).map(drop)
    }

    /// A request: POSTed on a task of its own, which reads its answer.
    fn send_request(
        &self,
        id: &RequestId,
        head: &RequestHead<'_>,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        let frame = self.encode(write)?;
        let mirror = Mirror::of(head);
        // The era of the session's latest request (the probe's era does not stay when the
        // session falls back to `initialize`).
        self.0.modern.store(mirror.is_some(), Ordering::Relaxed);
        self.0.spawn_request(id.clone(), Bytes::from(frame), mirror);
        Ok(())
    }

    /// Stops the request's task; in a legacy session the notification is POSTed too, in a
    /// modern one the response stream, now closed, was the signal (2026-07-28).
    fn send_cancel(
        &self,
        request: &RequestId,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        self.0.cancelled(request);
        if self.0.modern.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.send_with(write)
    }
}

/// An open Streamable HTTP session. Dropping it ends every task at once.
pub(super) struct StreamableConnection {
    /// Its `conn` is `None` once [`Connection::close`] took it.
    conn: CloseOnDrop,
}

impl fmt::Debug for StreamableConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("StreamableConnection");
        if let Some(conn) = &self.conn.conn {
            d.field("server", &conn.server)
                .field("url", &redacted(&conn.inner.url));
        }
        d.finish_non_exhaustive()
    }
}

impl Connection for StreamableConnection {
    fn close(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        // Closed by this guard when the future ends, or when it is dropped before.
        let guard = CloseOnDrop {
            conn: self.conn.conn.take(),
            reason: "closed by the client",
        };
        Box::pin(async move {
            let Some(conn) = guard.conn.clone() else {
                return;
            };
            conn.flush().await;
            conn.cancel.cancel();
            conn.delete().await;
            drop(guard);
        })
    }

    fn negotiated(&self, protocol_version: &str) {
        let Some(conn) = &self.conn.conn else { return };
        let start = {
            let mut session = conn.lock_session();
            session.protocol = HeaderValue::from_str(protocol_version).ok();
            // `notifications/initialized` is the next notification the session queues.
            conn.initialized_seq
                .store(conn.queue.last_queued() + 1, Ordering::Release);
            !std::mem::replace(&mut session.listening, true)
        };
        if start {
            conn.spawn(Arc::clone(conn).listen());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_mirrored_plain_or_in_the_base64_sentinel() {
        assert_eq!(header_safe("execute_sql"), "execute_sql");
        assert_eq!(header_safe("a b"), "a b");
        // The examples of the 2026-07-28 Streamable HTTP binding, "Value Encoding".
        assert_eq!(
            header_safe("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(header_safe(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_safe("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            header_safe("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn only_a_request_that_declares_its_version_is_mirrored() {
        assert!(Mirror::of(&RequestHead::new("tools/call").name(Some("echo"))).is_none());
        let m = Mirror::of(
            &RequestHead::new("tools/call")
                .name(Some("echo"))
                .protocol_version(Some("2026-07-28")),
        )
        .unwrap();
        assert_eq!(m.version, "2026-07-28");
        assert_eq!(m.method, "tools/call");
        assert_eq!(m.name.unwrap(), "echo");
    }
}
