//! One Streamable HTTP session, split the way `tower::buffer` splits a handle from its worker:
//! this module holds the connection's state (the session's headers and id, the requests in
//! flight, expiry, DELETE and shutdown); the session's sending half and the ordered queue's
//! worker are in [`outbound`], a request's POST and answer in [`request`], the reading of an
//! event stream in [`stream`], the GET stream in [`listen`].

use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasherDefault;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::FutureExt;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use kaged_mcp_layers::retry::{Jitter, JitteredBackoff};
use serde::Deserialize;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

mod listen;
mod outbound;
mod request;
mod stream;

pub use self::outbound::param_header;
use self::outbound::*;
use self::request::*;
use self::stream::*;
use super::Inner;
use crate::protocol::jsonrpc::IdHasher;
use crate::protocol::{JsonRpcError, RequestId};
use crate::transport::http::client::Body;
use crate::transport::http::event_stream::{EventParser, SseItem};
use crate::transport::http::queue::PostQueue;
use crate::transport::http::{chain, drain, empty_body, exchange, redacted, Exchange, Outcome};
use crate::transport::oversize::HeadTail;
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

/// How long shutdown waits for queued notifications (cancellations) to go out, and for the
/// requests still awaited (a `tasks/cancel` a dropped call sent) to be answered.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);
/// Once the server ended the session, how long the requests already POSTed to it may take to
/// get their answer's status (a `404` proves one was not processed) before the session closes.
const EXPIRY_GRACE: Duration = Duration::from_secs(1);

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
        requests: Mutex::default(),
        modern: AtomicBool::new(false),
        expiring: AtomicBool::new(false),
        headed: tokio::sync::Notify::new(),
        settled: tokio::sync::Notify::new(),
        reached: AtomicBool::new(false),
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
    requests: Mutex<Requests>,
    /// The session's latest request declared its own protocol version (the 2026-07-28 era):
    /// closing a request's response is its cancellation, no notification is POSTed.
    modern: AtomicBool,
    /// The server ended the session (see [`Conn::expire`]): nothing more is POSTed to it.
    expiring: AtomicBool,
    /// Told each time a request's POST gets its answer's status (or fails).
    headed: tokio::sync::Notify,
    /// Told each time a request's task ends (answered, failed, given up).
    settled: tokio::sync::Notify,
    /// A POST of the session was answered `2xx`: the URL is an MCP endpoint, so a `404`
    /// without a session id no longer questions its path.
    reached: AtomicBool,
}

/// The requests in flight, by the client's own ids (hashed as the session's pending map is).
type Requests = HashMap<RequestId, Arc<InFlight>, BuildHasherDefault<IdHasher>>;

/// One request's task, as the connection sees it.
#[derive(Debug)]
struct InFlight {
    /// Ends the task (a child of the session's token).
    cancel: CancellationToken,
    /// Its POST was started: it may have reached the server.
    posted: AtomicBool,
    /// Its POST's exchange ended: an answer's status, or a failure, came.
    headed: AtomicBool,
}

/// The headers a session adds to every message once it knows them.
#[derive(Default)]
struct SessionHeaders {
    id: Option<HeaderValue>,
    protocol: Option<HeaderValue>,
    /// The headers of a request's plain POST (see [`Conn::request`]), made at the first one
    /// after `id` or `protocol` last changed.
    post: Option<HeaderMap>,
    /// The GET stream was started.
    listening: bool,
}

impl fmt::Debug for SessionHeaders {
    /// Never a header's value: `post` holds the static headers, which may carry a secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionHeaders")
            .field("id", &self.id.is_some())
            .field("protocol", &self.protocol)
            .field("post", &self.post.is_some())
            .field("listening", &self.listening)
            .finish()
    }
}

impl Conn {
    fn lock_handler(&self) -> MutexGuard<'_, Option<Arc<dyn InboundHandler>>> {
        self.handler.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_session(&self) -> MutexGuard<'_, SessionHeaders> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_requests(&self) -> MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// [`deliver`](Self::deliver) for a frame held whole as `Bytes`, which the handler may
    /// keep slices of.
    fn deliver_bytes(&self, frame: Bytes) {
        if let Some(handler) = &*self.lock_handler() {
            handler.on_frame_bytes(frame);
        }
    }

    fn oversize(&self, frame: OversizeFrame<'_>) {
        tracing::warn!(
            server = %self.server,
            len = frame.len,
            limit = frame.limit,
            stopped = frame.stopped,
            request_id = frame.request.map(tracing::field::display),
            "message over the frame limit discarded"
        );
        if let Some(handler) = &*self.lock_handler() {
            handler.on_oversize(frame);
        }
    }

    /// A message on the GET stream passed the frame limit; the stream skips the rest of it.
    fn oversize_passing(&self, frame: OversizeFrame<'_>) {
        tracing::debug!(
            server = %self.server,
            len = frame.len,
            limit = frame.limit,
            "message passing the frame limit; skipping the rest of it"
        );
        if let Some(handler) = &*self.lock_handler() {
            handler.on_oversize_passing(frame);
        }
    }

    /// Fails request `id`, naming why.
    fn fail(&self, id: &RequestId, failure: SendFailure) {
        tracing::debug!(server = %self.server, request_id = %id, problem = %failure, "request failed in the transport");
        if let Some(handler) = &*self.lock_handler() {
            handler.on_send_failed(id, failure);
        }
    }

    fn awaits(&self, id: &RequestId) -> bool {
        !self.is_closed() && self.awaiting.upgrade().is_some_and(|h| h.awaits(id))
    }

    /// The server ended the session (a 404 to a message carrying its id): the request that
    /// met it fails as not delivered and retryable, nothing more is POSTed, then the session
    /// closes so the client starts a new one.
    ///
    /// A 404 proves a request was not processed, and a server that ends a session answers 404
    /// to every request still on its way: so the requests already POSTed get (at most
    /// [`EXPIRY_GRACE`]) to meet their own answer's status before the session closes. Each
    /// that meets a 404 fails as not delivered too, and the retry layer sends it again on the
    /// next session; one answered normally is read on. (Closing at the first 404 would fail
    /// them all as "delivery unknown", never resent: a burst of lost calls at every expiry
    /// or server restart under load.)
    fn expire(self: &Arc<Self>, id: Option<&RequestId>, verb: &str) {
        if let Some(id) = id {
            self.fail(
                id,
                SendFailure::expired(format!(
                    "the session expired ({verb} answered 404 Not Found); a new one is started"
                )),
            );
        }
        if self.expiring.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::info!(server = %self.server, "the server ended the session (404); a new one will be started");
        // Requests whose POST never started provably did not reach the server: they fail as
        // not delivered, so the retry layer sends them again on the next session. (One that
        // would start its POST from now on sees `expiring` and is held until the close, which
        // fails it the same way.)
        self.fail_unsent(id);
        let conn = Arc::clone(self);
        let reason =
            format!("ended the session ({verb} answered 404 Not Found); a new one is started");
        self.runtime.spawn(
            async move {
                let until = tokio::time::Instant::now() + EXPIRY_GRACE;
                loop {
                    let headed = conn.headed.notified();
                    if conn.is_closed() || !conn.awaiting_status() {
                        break;
                    }
                    if tokio::time::timeout_at(until, headed).await.is_err() {
                        break;
                    }
                }
                // First end every task and refuse new messages, so nothing more goes to the
                // old session; requests still in flight fail with it (delivery unknown).
                conn.fail_unsent(None);
                conn.cancel.cancel();
                conn.close(CloseReason::new(reason).session_expired());
            }
            .instrument(self.span.clone()),
        );
    }

    /// Fails every request (but `except`) whose POST has not started, as not delivered, and
    /// stops its task.
    fn fail_unsent(&self, except: Option<&RequestId>) {
        let unsent: Vec<(RequestId, Arc<InFlight>)> = self
            .lock_requests()
            .iter()
            .filter(|(rid, f)| !f.posted.load(Ordering::SeqCst) && Some(*rid) != except)
            .map(|(rid, f)| (rid.clone(), Arc::clone(f)))
            .collect();
        for (id, flight) in &unsent {
            flight.cancel.cancel();
            self.fail(id, unsent_expired());
        }
    }

    /// Some request was POSTed and has no answer's status yet.
    fn awaiting_status(&self) -> bool {
        self.lock_requests()
            .values()
            .any(|f| f.posted.load(Ordering::Acquire) && !f.headed.load(Ordering::Acquire))
    }

    /// A request to the endpoint with the static headers, the session's headers, `accept`, and
    /// the request's mirrored fields (which name its own protocol version) if it has them.
    ///
    /// Built in place rather than through `http::request::Builder`, which moves its whole
    /// request head through a closure at each header; every header is appended, as the
    /// builder's `header` does. A request's POST with no header of its own (a legacy session's,
    /// not a resumption) takes a clone of the session's headers made once (`post` below,
    /// made again when the session id or version changes): hashing ~5 headers into a new map
    /// was ~1 900 instructions a request at 64 in flight (issue 41).
    fn request(
        &self,
        method: Method,
        accept: &HeaderValue,
        body: Bytes,
        last_event_id: Option<&str>,
        mirror: Option<&Mirror>,
    ) -> Result<(Request<Full<Bytes>>, bool), http::Error> {
        let json = !body.is_empty();
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = self.inner.uri.clone();
        let plain = json && mirror.is_none() && last_event_id.is_none() && *accept == ACCEPT_BOTH;
        let (mut headers, with_session) = {
            let mut session = self.lock_session();
            let with_session = session.id.is_some();
            if plain {
                let headers = match &session.post {
                    Some(headers) => headers.clone(),
                    None => {
                        let headers = self.headers(accept, true, &session, true)?;
                        session.post = Some(headers.clone());
                        headers
                    }
                };
                (headers, with_session)
            } else {
                (
                    self.headers(accept, json, &session, mirror.is_none())?,
                    with_session,
                )
            }
        };
        if let Some(mirror) = mirror {
            headers.try_append(&PROTOCOL_VERSION, mirror.version.clone())?;
            headers.try_append(&MCP_METHOD, mirror.method.clone())?;
            if let Some(name) = &mirror.name {
                headers.try_append(&MCP_NAME, name.clone())?;
            }
            for (name, value) in &mirror.params {
                headers.try_append(name, value.clone())?;
            }
        }
        if let Some(last) = last_event_id {
            if let Ok(v) = HeaderValue::from_str(last) {
                headers.try_append(&LAST_EVENT_ID, v)?;
            }
        }
        *request.headers_mut() = headers;
        Ok((request, with_session))
    }

    /// The headers every request of the session starts with: `accept`, the JSON content type if
    /// `json`, the static headers, the session id, and the negotiated protocol version if
    /// `with_protocol`. (`Host` is the HTTP client's: made once per origin.)
    fn headers(
        &self,
        accept: &HeaderValue,
        json: bool,
        session: &SessionHeaders,
        with_protocol: bool,
    ) -> Result<HeaderMap, http::Error> {
        let mut headers = HeaderMap::new();
        headers.try_append(header::ACCEPT, accept.clone())?;
        if json {
            headers.try_append(header::CONTENT_TYPE, JSON.clone())?;
        }
        for (name, value) in &self.inner.headers {
            headers.try_append(name, value.clone())?;
        }
        if let Some(id) = &session.id {
            headers.try_append(&SESSION_ID, id.clone())?;
        }
        if with_protocol {
            if let Some(v) = &session.protocol {
                headers.try_append(&PROTOCOL_VERSION, v.clone())?;
            }
        }
        Ok(headers)
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
                session.post = None;
            }
        }
    }

    fn has_session(&self) -> bool {
        self.lock_session().id.is_some()
    }

    /// Sends `DELETE` with the session id; any answer is fine, and a redirect or a refusal of
    /// the credentials is said (WARN).
    async fn delete(&self) {
        if !self.has_session() {
            return;
        }
        let how = Exchange {
            what: "the DELETE",
            timeout: Some(self.inner.connect_timeout),
            idempotent: true,
            url: &self.inner.url,
            first: None,
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
                if failure.is_permanent() {
                    // A redirect (never followed) or a refusal of the credentials: something
                    // for the operator to fix, and the server may keep the session until it
                    // expires.
                    tracing::warn!(server = %self.server, problem = %failure, "DELETE refused; the session was not ended");
                } else {
                    tracing::debug!(server = %self.server, problem = %failure, "DELETE failed");
                }
            }
        }
    }

    /// Waits, at most `limit`, until every queued notification and answer was POSTed and
    /// every request still awaited got its answer: what the client sent before it closed the
    /// session reaches the server before the session ends, as stdio writes what was queued
    /// before it closes stdin (an interrupted call's `tasks/cancel`, issue 49). A request
    /// whose caller gave up is not waited for.
    async fn flush(&self, limit: Duration) {
        let target = self.queue.last_queued();
        let requests = async {
            loop {
                let settled = self.settled.notified();
                tokio::pin!(settled);
                // Registered before the check, so an end between the two is not missed.
                settled.as_mut().enable();
                if !self.awaiting_answers() {
                    return;
                }
                settled.await;
            }
        };
        let both = futures::future::join(self.queue.wait_sent(target), requests);
        if tokio::time::timeout(limit, both).await.is_err() {
            tracing::debug!(server = %self.server, "closing with messages not yet delivered");
        }
    }

    /// Some request is in flight whose caller still awaits its answer.
    fn awaiting_answers(&self) -> bool {
        let live: Vec<RequestId> = self
            .lock_requests()
            .iter()
            .filter(|(_, f)| !f.cancel.is_cancelled())
            .map(|(id, _)| id.clone())
            .collect();
        live.iter().any(|id| self.awaits(id))
    }
}

/// How a request fails that was never POSTed to a session the server ended.
fn unsent_expired() -> SendFailure {
    SendFailure::expired("the session expired before the request went out; a new one is started")
}

/// Removes a request from [`Conn::requests`] when its task ends, however it ends.
struct Forget {
    conn: Arc<Conn>,
    id: RequestId,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.conn.lock_requests().remove(&self.id);
        self.conn.settled.notify_waiters();
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
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        self.close_within(FLUSH_TIMEOUT)
    }

    /// Delivers what was sent before (at most `grace`: see [`Conn::flush`]), then ends every
    /// task and the session (`DELETE`).
    fn close_within(mut self: Box<Self>, grace: Duration) -> BoxFuture<'static, ()> {
        // Closed by this guard when the future ends, or when it is dropped before.
        let guard = CloseOnDrop {
            conn: self.conn.conn.take(),
            reason: "closed by the client",
        };
        Box::pin(async move {
            let Some(conn) = guard.conn.clone() else {
                return;
            };
            conn.flush(grace.min(FLUSH_TIMEOUT)).await;
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
            session.post = None;
            // `notifications/initialized` is the next notification the session queues.
            conn.initialized_seq
                .store(conn.queue.last_queued() + 1, Ordering::Release);
            !std::mem::replace(&mut session.listening, true)
        };
        if start {
            conn.spawn(Arc::clone(conn).listen());
        }
    }

    fn session_digest(&self) -> Option<Arc<str>> {
        let conn = self.conn.conn.as_ref()?;
        let session = conn.lock_session();
        let id = session.id.as_ref()?;
        Some(crate::transport::http::session_digest(id.as_bytes()))
    }
}
