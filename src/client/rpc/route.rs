//! Where each inbound message goes: an answer to its pending request (see
//! [`inbound`](super::super::inbound) for the one-pass decode), a server request through the
//! server-request stack, a notification to its handler (progress, log messages, list changes,
//! subscription acknowledgements), and the transport's reports (oversize, a failed send, the
//! end of the connection) to the session's [`InboundHandler`] methods.

use super::*;
use crate::client::{ErrorKind, Kind};

/// How long a request that could not be sent waits for the connection's end to learn whether,
/// and how, the server exited (see [`RpcSession::exit_behind`]).
const EXIT_STATUS_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

impl RpcSession {
    /// What a request that could not be sent because the connection closed should report:
    /// when the connection ended without the client asking (the server exited), that end with
    /// its exit status and stderr, waited for at most [`EXIT_STATUS_WAIT`] (the transport may
    /// close its writer before it has reaped the process); any other error as it is.
    pub(crate) async fn exit_behind(&self, err: ClientError) -> ClientError {
        if err.kind() != ErrorKind::ConnectionClosed {
            return err;
        }
        let request = err.request();
        let mut ended = self.ended.subscribe();
        let _ = tokio::time::timeout(EXIT_STATUS_WAIT, ended.wait_for(|e| *e)).await;
        match &self.table().closed {
            Some(reason) if !reason.requested => self.closed_error(reason, request.cloned()),
            _ => err,
        }
    }

    fn handle_frame(&self, bytes: &[u8]) {
        let frame = match inbound::decode(self, bytes) {
            Ok(frame) => frame,
            Err(e) => {
                if let Some(skipped_total) = self.count_skipped(bytes) {
                    tracing::warn!(
                        server = &*self.server,
                        error = %e,
                        line = %crate::transport::redact_tokens(&inbound::excerpt(bytes)),
                        skipped_total,
                        "server sent a line that could not be decoded; skipped"
                    );
                }
                return;
            }
        };
        if !matches!(frame, Frame::Invalid(_)) {
            self.seen.messages.fetch_add(1, Ordering::Release);
        }
        match frame {
            Frame::Done => {}
            Frame::Request { id, method, params } => self.handle_server_request(id, method, params),
            Frame::Notification { method, params } => self.handle_notification(&method, params),
            Frame::Response { id, result, error } => self.handle_late_decoded(&id, result, error),
            Frame::Invalid(why) => {
                if let Some(skipped_total) = self.count_skipped(bytes) {
                    tracing::warn!(
                        server = &*self.server,
                        problem = why,
                        line = %crate::transport::redact_tokens(&inbound::excerpt(bytes)),
                        skipped_total,
                        "server sent an invalid JSON-RPC message; skipped"
                    );
                }
            }
        }
    }

    /// Counts a skipped line; `Some(total)` when it deserves a WARN event (the first ten, then
    /// every power of two), so a server spewing garbage cannot flood the log.
    fn count_skipped(&self, bytes: &[u8]) -> Option<u64> {
        let total = self.seen.skipped.fetch_add(1, Ordering::Relaxed) + 1;
        if total == 1 {
            let line = crate::transport::text::clean(&String::from_utf8_lossy(bytes), 200);
            (self.events)(self, SessionEvent::Noise(&line));
            self.seen.noise.send_replace(Some(line.into()));
        }
        (total <= 10 || total.is_power_of_two()).then_some(total)
    }

    /// A response whose `result` came before its `id`, or an error response.
    fn handle_late_decoded(
        &self,
        id: &Option<RequestId>,
        result: Option<&serde_json::value::RawValue>,
        error: Option<JsonRpcError>,
    ) {
        let Some(id) = id else {
            if let Some(error) = error {
                tracing::warn!(server = &*self.server, code = error.code, message = %error.message, "server reported an error without a request id");
            }
            return;
        };
        let Some((num, pending)) = self.take_pending(id) else {
            if self.take_abandoned_call(id) {
                let late = result.and_then(|r| serde_json::from_str::<Value>(r.get()).ok());
                if late.as_ref().is_some_and(|late| self.late_answer(late)) {
                    return;
                }
            }
            tracing::debug!(server = &*self.server, request_id = %id, "answer to a request no one waits for; dropped");
            return;
        };
        let request = Self::request_ref(num, pending.method);
        if let Some(error) = error {
            self.note_answer(pending.method);
            if error.code == UNSUPPORTED_PROTOCOL_VERSION
                && pending.method != method::Discover::METHOD
                && self.dialect.is_modern()
            {
                self.era_refused();
            }
            if error.code == MISSING_REQUIRED_CLIENT_CAPABILITY {
                let required = error
                    .data
                    .as_ref()
                    .and_then(|d| d.get("requiredCapabilities"))
                    .map_or_else(|| error.message.clone(), Value::to_string)
                    .into_boxed_str();
                let hint = required
                    .contains(crate::protocol::tasks::TASKS_EXTENSION)
                    .then(|| self.tasks_hint());
                pending.fail(ClientError::new(
                    Arc::clone(&self.server),
                    Some(request),
                    Kind::MissingCapability {
                        required,
                        hint: hint.flatten(),
                    },
                ));
                return;
            }
            pending.fail(ClientError::new(
                Arc::clone(&self.server),
                Some(request),
                Kind::JsonRpc {
                    code: error.code,
                    message: error.message,
                    data: error.data,
                },
            ));
            return;
        }
        let Some(raw) = result else { return };
        inbound::complete_from_str(self, num, pending, raw.get());
    }

    /// What to change when the server asks for the tasks extension: declare it (`tasks` is
    /// `off`), or speak the era that has it (a 2025-11-25 session declares no extension).
    fn tasks_hint(&self) -> Option<Box<str>> {
        let server = &self.server;
        if !self.dialect.is_modern() {
            Some(
                format!(
                    "the tool runs only as a 2026-07-28 task, and a 2025-11-25 session does not declare \
                     the tasks extension: set era = \"modern\" under [mcp.{server}] in local.toml"
                )
                .into(),
            )
        } else if !self.calls.declared {
            Some(
                format!(
                    "the tool runs only as a task: set tasks = \"required\" under [mcp.{server}] in local.toml"
                )
                .into(),
            )
        } else {
            None
        }
    }

    /// A modern session's request was refused as `UnsupportedProtocolVersion`: the server no
    /// longer speaks the version the probe found. The supervisor ends this session (counted
    /// as a failure, so a server that keeps doing it backs off) and forgets the era, so the
    /// next start finds it again. Done on a task: the connection must not be dropped from
    /// inside `on_frame`.
    fn era_refused(&self) {
        tracing::warn!(
            server = &*self.server,
            "the server refused protocol version 2026-07-28 (-32022) in a modern session; it is probed again at the next start"
        );
        (self.events)(self, SessionEvent::EraRefused);
    }

    fn handle_notification(&self, method: &str, params: Option<&serde_json::value::RawValue>) {
        self.router.dispatch(self, method, params);
    }

    fn handle_server_request(
        &self,
        id: RequestId,
        method: String,
        params: Option<&serde_json::value::RawValue>,
    ) {
        let params = params.and_then(|p| serde_json::from_str::<Value>(p.get()).ok());
        let request = ServerRequest {
            id: id.clone(),
            method,
            params,
        };
        let mut svc = self.server_requests.clone();
        // The stack is normally ready at once and answers at once (ping, refusals): answer
        // inline, from the reader, through the non-blocking send path. Otherwise finish it on a
        // task of its own; the reader never waits.
        let mut answer = match svc.ready().now_or_never() {
            Some(Ok(ready)) => ready.call(request),
            _ => {
                let Some(session) = self.this.upgrade() else {
                    return;
                };
                tokio::spawn(async move {
                    let result = match svc.ready().await {
                        Ok(ready) => ready.call(request).await,
                        Err(e) => Err(e),
                    };
                    session.answer(&id, result);
                });
                return;
            }
        };
        match (&mut answer).now_or_never() {
            Some(result) => self.answer(&id, result),
            None => {
                let Some(session) = self.this.upgrade() else {
                    return;
                };
                tokio::spawn(async move {
                    let result = answer.await;
                    session.answer(&id, result);
                });
            }
        }
    }

    fn answer(&self, id: &RequestId, result: Result<Value, tower::BoxError>) {
        let Some(out) = self.outbound.get() else {
            return;
        };
        let (result, error) = match result {
            Ok(value) => (Some(value), None),
            Err(e) => (None, Some(server_requests::to_jsonrpc_error(&e))),
        };
        let msg = OutgoingResponse {
            jsonrpc: Version2,
            id,
            result: result.as_ref(),
            error: error.as_ref(),
        };
        if let Err(e) =
            out.send_with(&mut |buf| serde_json::to_writer(buf, &msg).map_err(io::Error::from))
        {
            tracing::debug!(server = &*self.server, request_id = %id, error = %e, "answer to a server request not sent");
        }
    }
}

impl RpcSession {
    /// Fails request `id`, if it is still pending, with the frame `frame` was too large.
    fn fail_too_large(&self, id: Option<&RequestId>, frame: &OversizeFrame<'_>) {
        let Some((num, pending)) = id.and_then(|id| self.take_pending(id)) else {
            return;
        };
        let request = RpcSession::request_ref(num, pending.method);
        pending.fail(ClientError::new(
            Arc::clone(&self.server),
            Some(request),
            Kind::FrameTooLarge {
                limit: frame.limit,
                len: frame.len,
                stopped: frame.stopped,
            },
        ));
    }
}

impl InboundHandler for RpcSession {
    fn on_open(&self, outbound: Arc<dyn Outbound>) {
        let _ = self.outbound.set(outbound);
    }

    fn on_frame(&self, frame: &[u8]) {
        self.handle_frame(frame);
    }

    fn on_frame_bytes(&self, frame: bytes::Bytes) {
        crate::protocol::content::sharing_from(&frame, || self.handle_frame(&frame));
    }

    fn on_oversize(&self, frame: OversizeFrame<'_>) {
        let id = inbound::find_request_id(frame.head, frame.tail);
        tracing::warn!(
            server = &*self.server,
            len = frame.len,
            limit = frame.limit,
            stopped = frame.stopped,
            request_id = id.as_ref().or(frame.request).map(tracing::field::display),
            "server sent a message over the frame limit; discarded"
        );
        self.fail_too_large(id.as_ref(), &frame);
        // The message was read for this request (its own body, dropped): no other answer to
        // it will come.
        if frame.request != id.as_ref() {
            self.fail_too_large(frame.request, &frame);
        }
    }

    fn on_oversize_passing(&self, frame: OversizeFrame<'_>) {
        let id = inbound::find_request_id(frame.head, &[]);
        if id.is_some() {
            tracing::debug!(
                server = &*self.server,
                len = frame.len,
                limit = frame.limit,
                request_id = id.as_ref().map(tracing::field::display),
                "a message passing the frame limit fails its request at once"
            );
        }
        self.fail_too_large(id.as_ref(), &frame);
    }

    fn on_send_failed(&self, id: &RequestId, failure: SendFailure) {
        let Some((num, pending)) = self.take_pending(id) else {
            return; // answered, abandoned or failed already
        };
        let request = RpcSession::request_ref(num, pending.method);
        // The caller gets the error: a log line here would say it twice (DEBUG).
        tracing::debug!(
            server = &*self.server,
            request_id = num,
            method = pending.method,
            not_delivered = failure.not_delivered(),
            retryable = failure.is_retryable(),
            problem = %failure,
            "sending the request failed; it fails"
        );
        let unreachable = failure
            .is_unreachable()
            .then(|| (failure.clone(), self.answers()));
        pending.fail(ClientError::new(
            Arc::clone(&self.server),
            Some(request),
            Kind::SendFailed { failure },
        ));
        if let Some((failure, answers)) = unreachable {
            (self.events)(
                self,
                SessionEvent::Unreachable {
                    failure: &failure,
                    answers,
                },
            );
        }
    }

    fn awaits(&self, id: &RequestId) -> bool {
        id.as_u64()
            .is_some_and(|id| self.table().map.contains_key(&id))
    }

    fn on_closed(&self, reason: CloseReason) {
        self.close(&reason);
        (self.events)(self, SessionEvent::Closed(&reason));
    }
}
