//! Reading an event stream (an answer's, or the GET stream's) and delivering its messages;
//! what a response's `Content-Type` says, and draining a body so its connection is reused.

use super::*;

/// How a response stream ended.
pub(super) enum StreamEnd {
    /// The answer came (or no one waits for it any more).
    Done,
    /// The stream ended or failed before the answer; the text says how.
    Cut(String),
}

impl Conn {
    /// Delivers the events of `body` until it ends or, when `id` is given, until no one waits
    /// for that request's answer any more: nothing after the answer is delivered, wherever the
    /// body's chunks end. Returns how it ended and whether any event came.
    pub(super) async fn pump(
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
            self.deliver_items(&mut items, id);
            if let Some(passing) = parser.take_passing() {
                let frame =
                    OversizeFrame::new(&passing.head, &passing.tail, passing.len, self.limit)
                        .passed_limit();
                match id {
                    // A request's own stream is read no further: the event may never end, and
                    // the request's answer cannot come after it.
                    Some(id) => {
                        *body = empty_body();
                        if self.awaits(id) {
                            self.oversize(frame.for_request(id));
                        }
                        return (StreamEnd::Done, true);
                    }
                    // The GET stream skips it to its end and goes on.
                    None if is_message(passing.event.as_deref()) => self.oversize_passing(frame),
                    None => {}
                }
            }
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

    /// Delivers `items` in order; when `until` is given, stops after the one that answered that
    /// request (or once no one waits for it), and the rest is dropped.
    pub(super) fn deliver_items(&self, items: &mut Vec<SseItem>, until: Option<&RequestId>) {
        for item in items.drain(..) {
            if until.is_some_and(|id| !self.awaits(id)) {
                break;
            }
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
                    if is_message(o.event.as_deref()) {
                        let frame = OversizeFrame::new(&o.head, &o.tail, o.len, self.limit);
                        match until {
                            // On a request's own stream, told as one that passes the limit in
                            // pieces is: the report does not depend on how the body was cut.
                            Some(id) => self.oversize(frame.passed_limit().for_request(id)),
                            None => self.oversize(frame),
                        }
                    }
                }
            }
        }
    }
}

/// Whether an event of type `event` (`None`: no `event:` field) carries a message.
fn is_message(event: Option<&str>) -> bool {
    matches!(event, None | Some("message" | ""))
}

pub(super) enum ContentType {
    Json,
    EventStream,
    Other(String),
}

pub(super) fn content_type(response: &Response<Body>) -> ContentType {
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

/// Reads what is left of a body so its connection is reused: at once when its end is already
/// there, else for at most a second (a stream the server keeps open is dropped).
pub(super) async fn drain_soon(mut body: Body) {
    match body.frame().now_or_never() {
        Some(None) => {}
        Some(Some(_)) | None => {
            let _ = tokio::time::timeout(Duration::from_secs(1), drain(body)).await;
        }
    }
}
