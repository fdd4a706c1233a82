//! One request: its POST, its answer as a JSON body or as an event stream, and the
//! resumption of that stream with `Last-Event-ID` when it is cut before the answer.

use super::*;
use crate::transport::http::exchange::Refusal;

/// The wait before resuming a response stream when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// A server's `retry` is taken within these bounds (`retry: 0` must not make a busy loop, nor
/// a huge one park a stream for the session's life).
const MIN_RETRY: Duration = Duration::from_millis(50);
const MAX_RETRY: Duration = Duration::from_secs(60);

impl Conn {
    /// POSTs request `id` and reads its answer.
    pub(super) async fn post_request(
        self: Arc<Self>,
        body: Bytes,
        id: RequestId,
        mirror: Option<Mirror>,
        flight: Arc<InFlight>,
    ) {
        self.initialized().await;
        self.get_answered().await;
        // Once the server ended the session nothing more goes to it: the request is held
        // until the session closes, which fails it as not delivered (`fail_unsent`), so the
        // retry layer sends it again once the next session is there (failing it now would
        // only have it retried, and refused, while this one drains).
        if !self.mark_posted(&flight) {
            return std::future::pending().await;
        }
        let Some(response) = self.post(body, &id, mirror.as_ref(), &flight).await else {
            return;
        };
        self.note_session(&response);
        if response.status() == StatusCode::ACCEPTED {
            return self.accepted(&id, mirror.is_some());
        }
        self.read_answer(response, &id, mirror.is_none()).await;
    }

    /// Marks the request's POST started, unless the server ended the session before or just
    /// as it was marked (`false`: the request is to be held).
    fn mark_posted(&self, flight: &InFlight) -> bool {
        if self.expiring.load(Ordering::SeqCst) {
            return false;
        }
        flight.posted.store(true, Ordering::SeqCst);
        if self.expiring.load(Ordering::SeqCst) {
            flight.posted.store(false, Ordering::SeqCst);
            self.headed.notify_waiters();
            return false;
        }
        true
    }

    /// Sends the POST and marks the request headed; the answer, or `None` when there is none
    /// (the session expired, or the request was failed or answered by the refusal).
    async fn post(
        self: &Arc<Self>,
        body: Bytes,
        id: &RequestId,
        mirror: Option<&Mirror>,
        flight: &InFlight,
    ) -> Option<Response<Body>> {
        let how = Exchange {
            what: "the POST",
            timeout: None,
            idempotent: false,
            url: &self.inner.url,
            // Until a POST was answered, a request is the handshake's (`initialize`, or the
            // `server/discover` probe), sent before any session id.
            first: (!self.reached.load(Ordering::Acquire)).then_some("/mcp"),
        };
        let make = || self.request(Method::POST, &ACCEPT_BOTH, body.clone(), None, mirror);
        let outcome = exchange(&self.inner.http, how, make).await;
        flight.headed.store(true, Ordering::Release);
        self.headed.notify_waiters();
        match outcome {
            Outcome::Answered(response) => {
                self.reached.store(true, Ordering::Release);
                Some(response)
            }
            Outcome::Expired => {
                self.expire(Some(id), "the POST");
                None
            }
            // A modern server answers a request it refuses (unsupported version, header
            // mismatch, unknown method) with a 4xx whose body is the JSON-RPC error: the
            // session gets that error, which tells a modern server from a legacy one.
            Outcome::Refused(refusal) if mirror.is_some() && refusal.status.is_client_error() => {
                self.refused_with_error(refusal, id).await;
                None
            }
            refused => {
                self.refused(refused, id).await;
                None
            }
        }
    }

    /// A modern server's 4xx: the JSON-RPC error its JSON body holds answers request `id`;
    /// without one, the refusal fails it.
    async fn refused_with_error(&self, mut refusal: Refusal, id: &RequestId) {
        let json = matches!(content_type(&refusal.response), ContentType::Json);
        let body = refusal.take_body();
        let status = refusal.status;
        let error = if json {
            read_error_body(&refusal.start, body).await
        } else {
            drain_soon(body).await;
            None
        };
        let failure = Outcome::Refused(refusal).into_failure("the POST", &self.inner.auth_hint);
        match error {
            Some(error) => self.deliver_error(id, &error, status, failure),
            None => self.fail(id, failure),
        }
    }

    /// Any other POST that got no answer: a redirect is logged, a refusal's body drained, and
    /// request `id` fails.
    async fn refused(&self, mut refused: Outcome, id: &RequestId) {
        if let Outcome::Redirect { status, .. } = &refused {
            tracing::warn!(server = %self.server, status = %status, "redirect refused");
        }
        if let Some(body) = refused.take_body() {
            drain_soon(body).await;
        }
        self.fail(id, refused.into_failure("the POST", &self.inner.auth_hint));
    }

    /// A `202 Accepted` to request `id`: its answer may come on the GET stream, unless the
    /// session is `modern` or has no GET stream, when the request fails at once.
    fn accepted(&self, id: &RequestId, modern: bool) {
        // A request's answer may then come only on the GET stream: 2026-07-28 has none, and
        // a legacy server may have refused it. Waiting would only end at the timeout.
        let nowhere = if modern {
            Some("in 2026-07-28 a request's answer comes only on its own response (there is no GET stream)")
        } else if self.no_get_stream.load(Ordering::Acquire) {
            Some("the server offers no GET stream for it to come on")
        } else {
            None
        };
        if let Some(why) = nowhere {
            tracing::warn!(server = %self.server, request_id = %id, "a request was answered 202 Accepted without an answer");
            return self.fail(
                id,
                SendFailure::unknown(format!(
                    "the POST of a request was answered `202 Accepted` with no answer; \
                         {why}, so none will come"
                ))
                .status(202),
            );
        }
        tracing::debug!(server = %self.server, request_id = %id, "request accepted without an answer; it may come on the GET stream");
    }

    /// Reads the answer to request `id` as its content type says: a JSON body, or an event
    /// stream (resumed when cut if `resumable`).
    async fn read_answer(
        self: &Arc<Self>,
        response: Response<Body>,
        id: &RequestId,
        resumable: bool,
    ) {
        match content_type(&response) {
            ContentType::Json => self.read_json(response, id).await,
            ContentType::EventStream => {
                self.read_answer_stream(response.into_body(), id, resumable)
                    .await
            }
            ContentType::Other(ct) => self.fail(
                id,
                SendFailure::unknown(format!(
                    "the POST was answered `Content-Type: {}`, neither application/json \
                         nor text/event-stream; is this the MCP endpoint?",
                    ct.escape_debug()
                )),
            ),
        }
    }

    /// Delivers the JSON-RPC error a refused POST's body held, as the answer to request `id`;
    /// the request fails as `refused` if that did not answer it.
    fn deliver_error(
        &self,
        id: &RequestId,
        error: &JsonRpcError,
        status: StatusCode,
        refused: SendFailure,
    ) {
        tracing::debug!(server = %self.server, request_id = %id, status = %status, code = error.code, "the POST was refused with a JSON-RPC error");
        let frame = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error});
        match serde_json::to_vec(&frame) {
            Ok(bytes) => self.deliver(&bytes),
            Err(_) => return self.fail(id, refused),
        }
        if self.awaits(id) {
            self.fail(id, refused);
        }
    }

    /// Reads a JSON answer: delivered whole, or reported over the limit with its first bytes
    /// and the request failed at once: a body whose declared `Content-Length` is over the
    /// limit is not read at all, one that passes it is read no further (it may never end).
    async fn read_json(&self, response: Response<Body>, id: &RequestId) {
        let declared = response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if let Some(len) = declared.filter(|&len| len > self.limit as u64) {
            // Dropped unread: its connection is closed, not reused.
            drop(response);
            if self.awaits(id) {
                let frame = OversizeFrame::new(&[], &[], len, self.limit);
                self.oversize(frame.stopped_at_limit().for_request(id));
            }
            return;
        }
        let mut body = response.into_body();
        let mut first: Option<Bytes> = None;
        let mut rest = BytesMut::new();
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
            // The body so far is `first` alone (the common one-chunk case, not copied) or, once
            // a second chunk came, `rest` alone.
            let held = first.as_ref().map_or(rest.len(), Bytes::len);
            if held + data.len() > self.limit {
                // Read no further: the body is dropped (and its connection closed) unread.
                drop(body);
                let mut over = HeadTail::default();
                match first.take() {
                    Some(f) => over.push(&f),
                    None => over.push(&rest),
                }
                over.push(&data);
                if self.awaits(id) {
                    let frame = over.frame(self.limit).passed_limit();
                    self.oversize(frame.for_request(id));
                }
                return;
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
        let whole: Bytes = match first {
            Some(f) => f,
            None => rest.freeze(),
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
        self.deliver_bytes(whole);
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
    async fn read_answer_stream(self: &Arc<Self>, body: Body, id: &RequestId, resumable: bool) {
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
            first: None,
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
                return Err(Resume::Failed(failure.to_string()));
            }
        };
        if !matches!(content_type(&response), ContentType::EventStream) {
            return Err(Resume::Failed(
                "the GET was not answered with an event stream".into(),
            ));
        }
        Ok(response.into_body())
    }
}

/// A server's `retry` within [`MIN_RETRY`, `MAX_RETRY`].
pub(super) fn clamp_retry(retry: Duration) -> Duration {
    retry.clamp(MIN_RETRY, MAX_RETRY)
}

enum Resume {
    Expired,
    Failed(String),
}

/// The most bytes of a refused POST's body read for its JSON-RPC error.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The JSON-RPC error in a refused POST's body (`{"jsonrpc", "id", "error"}`, whatever its
/// id), if it holds one within [`MAX_ERROR_BODY`] bytes and a second; `start` is what the
/// exchange read of it already, `body` the rest.
async fn read_error_body(start: &[u8], mut body: Body) -> Option<JsonRpcError> {
    #[derive(Deserialize)]
    struct ErrorResponse {
        error: JsonRpcError,
    }
    if start.len() > MAX_ERROR_BODY {
        return None;
    }
    let mut bytes = BytesMut::from(start);
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
