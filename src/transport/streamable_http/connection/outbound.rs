//! The sending half the session holds: each request on a task of its own, notifications and
//! answers through the ordered queue and its worker, and the fields a 2026-07-28 request
//! mirrors into headers.

use super::*;

/// The sending half given to the session.
pub(super) struct HttpOutbound(pub(super) Arc<Conn>);

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

/// A request's fields mirrored into headers (2026-07-28): its protocol version, its method and
/// its name.
#[derive(Debug, Clone)]
pub(super) struct Mirror {
    pub(super) version: HeaderValue,
    pub(super) method: HeaderValue,
    pub(super) name: Option<HeaderValue>,
    /// `Mcp-Param-*`.
    pub(super) params: Vec<(HeaderName, HeaderValue)>,
}

impl Mirror {
    /// The headers of a request that declares its own protocol version; `None` for one that
    /// does not (a legacy session's), or whose version or method cannot be a header value.
    pub(super) fn of(head: &RequestHead<'_>) -> Option<Self> {
        let version = HeaderValue::from_str(head.protocol_version?).ok()?;
        let method = HeaderValue::from_str(head.method).ok()?;
        let name = head
            .name
            .and_then(|n| HeaderValue::from_str(&header_safe(n)).ok());
        let params = head
            .params
            .iter()
            .filter_map(|(name, value)| param_header(name, value))
            .collect();
        Some(Self {
            version,
            method,
            name,
            params,
        })
    }
}

/// The `Mcp-Param-{name}` header a 2026-07-28 request carries for a parameter's `value`
/// (encoded by [`header_safe`]); `None`, and the header left out, when `name` cannot be part of
/// a header name. Public (hidden) for the fuzz targets in `fuzz/` (`modern_shapes`) and their
/// regression tests; not part of the API.
#[doc(hidden)]
pub fn param_header(name: &str, value: &str) -> Option<(HeaderName, HeaderValue)> {
    let name = HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes()).ok()?;
    let value = HeaderValue::from_str(&header_safe(value)).ok()?;
    Some((name, value))
}

/// `value` as a header value: as is when it is plain visible ASCII (spaces inside allowed),
/// else (non-ASCII, control characters, leading or trailing whitespace, or the sentinel's own
/// shape) `=?base64?<base64 of the UTF-8>?=`, as the 2026-07-28 Streamable HTTP binding says.
pub(super) fn header_safe(value: &str) -> std::borrow::Cow<'_, str> {
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

impl Conn {
    /// Starts request `id`'s task: it ends with the answer, with the session, or when the
    /// caller gives up (see [`Conn::cancelled`]).
    pub(super) fn spawn_request(
        self: &Arc<Self>,
        id: RequestId,
        body: Bytes,
        mirror: Option<Mirror>,
    ) {
        let flight = Arc::new(InFlight {
            cancel: self.cancel.child_token(),
            posted: AtomicBool::new(false),
            headed: AtomicBool::new(false),
        });
        self.lock_requests().insert(id.clone(), Arc::clone(&flight));
        let forget = Forget {
            conn: Arc::clone(self),
            id: id.clone(),
        };
        // Boxed: the POST's future (hyper's request, the answer's stream) is kilobytes, and the
        // task would otherwise be moved whole at each step of its spawn (made, instrumented,
        // placed in the task's cell, its stage replaced by the output): one allocation for
        // about a thousand instructions of copying per request at 64 in flight (issue 41).
        let task = Box::pin(Arc::clone(self).post_request(body, id, mirror, Arc::clone(&flight)));
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
    pub(super) fn cancelled(&self, id: &RequestId) {
        if let Some(flight) = self.lock_requests().get(id) {
            flight.cancel.cancel();
        }
    }

    /// POSTs the queued notifications and answers one at a time, in order, while the session
    /// lives.
    pub(super) async fn post_ordered(self: Arc<Self>) {
        while let Some(queued) = self.queue.next().await {
            if let Err(problem) = self.post_other(queued.frame).await {
                tracing::warn!(server = %self.server, problem = %problem, "POST of a notification or an answer failed");
            }
            self.queue.sent(queued.seq);
        }
    }

    pub(super) async fn post_other(self: &Arc<Self>, frame: Bytes) -> Result<(), String> {
        let how = Exchange {
            what: "the POST",
            timeout: Some(self.inner.post_timeout),
            idempotent: false,
            url: &self.inner.url,
            first: None,
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
                    .to_string())
            }
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
