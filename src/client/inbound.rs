//! Decoding an inbound frame in one pass, typed by the request it answers.
//!
//! The frame's keys are visited in whatever order the server wrote them. When `"result"` is
//! reached and the `"id"` is already known (the usual `{"jsonrpc","id","result"}` order), the
//! pending entry is taken and `result` is decoded straight into the type that request expects
//! ([`CallAnswer`], [`ListToolsResult`], [`InitializeResult`], [`DiscoverResult`]): no
//! intermediate `Value`, no trial-and-error untagged enum. When `"result"` comes before `"id"` (server-everything writes
//! `{"result":…,"jsonrpc":"2.0","id":N}`), it is kept as a borrowed `RawValue` and decoded once
//! the id is known: a second pass over those bytes, the only one.
//!
//! A pending entry is only taken for a message that has `result` (or `error`) and no `method`,
//! so a server request whose id collides with one of ours is never mistaken for an answer.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::RequestRef;
use super::rpc::{Expect, Pending, RpcSession};
use crate::protocol::jsonrpc::CowStr;
use crate::protocol::{CallAnswer, JsonRpcError, RequestId, ToolResult};
use crate::telemetry::Outcome;

/// A decoded inbound frame, as far as the session still needs it.
#[derive(Debug)]
pub(crate) enum Frame<'a> {
    /// A response already routed to its caller (or a late one, dropped).
    Done,
    /// A request from the server.
    Request {
        id: RequestId,
        method: String,
        params: Option<&'a RawValue>,
    },
    /// A notification from the server.
    Notification {
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    /// A response still to route: `result` came before `id`, or it is an error.
    Response {
        id: Option<RequestId>,
        result: Option<&'a RawValue>,
        error: Option<JsonRpcError>,
    },
    /// Not a JSON-RPC message.
    Invalid(&'static str),
}

/// Frames up to this long are checked as UTF-8 once, whole, and parsed as text (see
/// [`decode`]); longer ones are parsed as bytes, where each long string is checked once on its
/// own path.
const WHOLE_CHECK_MAX: usize = 4096;

/// Decodes one frame for `session`, completing the pending request it answers when it can.
///
/// Parsing bytes, serde_json checks every string's UTF-8 on its own (about eight per answer,
/// each with a fixed cost); a small frame is checked once and parsed as `&str`, where it skips
/// them. A frame that is not UTF-8 is parsed as bytes, as every frame was before, so it fails
/// (or not) exactly as it did.
pub(crate) fn decode<'a>(
    session: &RpcSession,
    bytes: &'a [u8],
) -> Result<Frame<'a>, serde_json::Error> {
    crate::protocol::content::json_bytes_path(|| {
        if bytes.len() <= WHOLE_CHECK_MAX {
            if let Ok(text) = std::str::from_utf8(bytes) {
                if !session.is_modern() {
                    if let Some(answer) = crate::protocol::quick::legacy_call_answer(text) {
                        if route_quick(session, answer) {
                            return Ok(Frame::Done);
                        }
                    }
                }
                let mut de = serde_json::Deserializer::from_str(text);
                let frame = FrameSeed { session }.deserialize(&mut de)?;
                de.end()?;
                return Ok(frame);
            }
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let frame = FrameSeed { session }.deserialize(&mut de)?;
        de.end()?;
        Ok(frame)
    })
}

/// Routes an answer [`quick`](crate::protocol::quick) read to its pending request, as
/// [`complete_in_place`] does; `false` when no request waits for it (the frame then goes the
/// serde way, which tells a late answer to an abandoned call from an unknown one).
fn route_quick(session: &RpcSession, answer: crate::protocol::quick::QuickAnswer<'_>) -> bool {
    let Some((num, pending)) = session.take_pending(&RequestId::from(answer.id)) else {
        return false;
    };
    match pending.expect {
        Expect::CallTool(tx) => {
            pending.telemetry.end(Answer::outcome(&answer.result));
            let _ = tx.send(Ok(CallAnswer::Complete(answer.result)));
            session.note_answer(pending.method);
        }
        // Another type than a `ToolResult`: read from the result's text by its own type.
        Expect::TaskCall(_) | Expect::Other(_) => {
            complete_from_str(session, num, pending, answer.raw_result);
        }
    }
    true
}

/// The first bytes of a line, for a log message.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    const MAX: usize = 200;
    let cut = bytes.len().min(MAX);
    let mut text = String::from_utf8_lossy(&bytes[..cut]).into_owned();
    if bytes.len() > MAX {
        text.push_str(&format!("… ({} bytes)", bytes.len()));
    }
    text
}

/// Completes `pending` from the raw text of its `result`.
pub(crate) fn complete_from_str(session: &RpcSession, id: u64, pending: Pending, raw: &str) {
    let request = RequestRef {
        id: RequestId::from(id),
        method: pending.method,
    };
    let violation = |e: serde_json::Error| {
        session.protocol_violation(Some(request.clone()), format!("invalid result: {e}"))
    };
    let telemetry = pending.telemetry;
    let (tx, any_answer) = match pending.expect {
        Expect::Other(completion) => return completion.complete(raw, &violation, telemetry),
        Expect::CallTool(tx) => (tx, false),
        Expect::TaskCall(tx) => (tx, true),
    };
    let result = crate::protocol::content::json_bytes_path(|| {
        if any_answer || session.is_modern() {
            serde_json::from_str::<CallAnswer>(raw)
        } else {
            serde_json::from_str::<ToolResult>(raw).map(CallAnswer::Complete)
        }
    });
    if result.is_ok() {
        session.note_answer(pending.method);
    }
    telemetry.end(call_outcome(&result));
    let _ = tx.send(result.map_err(violation));
}

/// How a `tools/call` answer ends its request's telemetry.
fn call_outcome<E>(answer: &Result<CallAnswer, E>) -> Outcome<'static> {
    match answer {
        Ok(answer) => answer.outcome(),
        Err(_) => Outcome::Invalid,
    }
}

/// A decoded `tools/call` answer, as its request's telemetry ends.
trait Answer {
    fn outcome(&self) -> Outcome<'static>;
}

impl Answer for ToolResult {
    #[inline]
    fn outcome(&self) -> Outcome<'static> {
        if self.is_error {
            Outcome::ToolError
        } else {
            Outcome::Answered
        }
    }
}

impl Answer for CallAnswer {
    #[inline]
    fn outcome(&self) -> Outcome<'static> {
        match self {
            CallAnswer::Complete(result) => result.outcome(),
            _ => Outcome::Answered,
        }
    }
}

/// Decodes the `result` value now under the map cursor into what `pending` expects.
fn complete_in_place<'de, A: MapAccess<'de>>(
    session: &RpcSession,
    id: u64,
    pending: Pending,
    map: &mut A,
) -> Result<(), A::Error> {
    let request = RequestRef {
        id: RequestId::from(id),
        method: pending.method,
    };
    let violation = |e: &A::Error| {
        session.protocol_violation(Some(request.clone()), format!("invalid result: {e}"))
    };
    let telemetry = pending.telemetry;
    macro_rules! route {
        ($tx:expr, $ty:ty) => {
            route!($tx, $ty => std::convert::identity)
        };
        ($tx:expr, $ty:ty => $wrap:expr) => {
            match map.next_value::<$ty>() {
                Ok(value) => {
                    telemetry.end(Answer::outcome(&value));
                    let _ = $tx.send(Ok($wrap(value)));
                    Ok(())
                }
                Err(e) => {
                    let err = violation(&e);
                    telemetry.end(Outcome::Failed(&err));
                    let _ = $tx.send(Err(err));
                    Err(e)
                }
            }
        };
    }
    let method = pending.method;
    let routed = match pending.expect {
        // Handed over raw (borrowed from the frame) and decoded by the requester's type.
        Expect::Other(completion) => match map.next_value::<&serde_json::value::RawValue>() {
            Ok(raw) => {
                let violation = |e: serde_json::Error| {
                    session
                        .protocol_violation(Some(request.clone()), format!("invalid result: {e}"))
                };
                completion.complete(raw.get(), &violation, telemetry);
                return Ok(());
            }
            Err(e) => {
                completion.fail(violation(&e), telemetry);
                return Err(e);
            }
        },
        // A legacy result has no `resultType`: decoded straight into `ToolResult`.
        Expect::CallTool(tx) if !session.is_modern() => {
            route!(tx, ToolResult => CallAnswer::Complete)
        }
        Expect::CallTool(tx) | Expect::TaskCall(tx) => route!(tx, CallAnswer),
    };
    if routed.is_ok() {
        session.note_answer(method);
    }
    routed
}

struct FrameSeed<'s> {
    session: &'s RpcSession,
}

impl<'de> DeserializeSeed<'de> for FrameSeed<'_> {
    type Value = Frame<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Frame<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

enum Key {
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "id" => Key::Id,
                    "method" => Key::Method,
                    "params" => Key::Params,
                    "result" => Key::Result,
                    "error" => Key::Error,
                    _ => Key::Other,
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> Visitor<'de> for FrameSeed<'_> {
    type Value = Frame<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Frame<'de>, A::Error> {
        // `Some(None)` is an explicit `"id": null`.
        let mut id: Option<Option<RequestId>> = None;
        let mut method: Option<Cow<'de, str>> = None;
        let mut params: Option<&'de RawValue> = None;
        let mut result: Option<&'de RawValue> = None;
        let mut error: Option<JsonRpcError> = None;
        let mut routed = false;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id => id = Some(map.next_value()?),
                Key::Method => method = Some(map.next_value::<CowStr<'de>>()?.0),
                Key::Params => params = Some(map.next_value()?),
                Key::Result => match (&id, &method) {
                    (Some(Some(rid)), None) if !routed => {
                        routed = true;
                        match self.session.take_pending(rid) {
                            Some((num, pending)) => {
                                complete_in_place(self.session, num, pending, &mut map)?;
                            }
                            None if self.session.take_abandoned_call(rid) => {
                                // A late answer to a call its caller gave up on, which may
                                // have started a task nobody follows.
                                let late = map.next_value::<serde_json::Value>()?;
                                self.session.late_answer(&late);
                            }
                            None => {
                                // A late answer to a call its caller gave up on.
                                map.next_value::<IgnoredAny>()?;
                            }
                        }
                    }
                    _ => result = Some(map.next_value()?),
                },
                Key::Error => error = Some(map.next_value()?),
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match (method, id) {
            (Some(_), _) if routed => Frame::Invalid("both method and result"),
            (Some(method), Some(Some(id))) => Frame::Request {
                id,
                method: method.into_owned(),
                params,
            },
            (Some(method), None) => Frame::Notification { method, params },
            (Some(_), Some(None)) => Frame::Invalid("a request with a null id"),
            (None, _) if routed => Frame::Done,
            (None, Some(id)) if result.is_some() || error.is_some() => {
                Frame::Response { id, result, error }
            }
            (None, _) => Frame::Invalid("neither a method nor a result or error with an id"),
        })
    }
}

// --- finding the id of an oversized frame ---------------------------------------------------

/// Finds the top-level `"id"` of a JSON-RPC message of which only `head` (its start) and
/// `tail` (its end) are known.
pub(crate) fn find_request_id(head: &[u8], tail: &[u8]) -> Option<RequestId> {
    id_in_head(head).or_else(|| id_in_tail(tail))
}

/// Scans the start of the message, tracking nesting, for the key `"id"` at depth 1.
fn id_in_head(head: &[u8]) -> Option<RequestId> {
    let mut depth = 0usize;
    let mut expect_key = false;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 1 => expect_key = true,
            b'"' => {
                let end = string_end(head, i)?;
                if depth == 1 && expect_key && &head[i + 1..end] == b"id" {
                    return value_after_colon(&head[end + 1..]);
                }
                expect_key = false;
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Looks for `"id": <value>` near the end, accepting a candidate only if everything after it
/// closes exactly the top-level object.
fn id_in_tail(tail: &[u8]) -> Option<RequestId> {
    let last = tail.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if tail[last] != b'}' {
        return None;
    }
    let mut search = tail.len();
    while let Some(pos) = memchr::memmem::rfind(&tail[..search], b"\"id\"") {
        search = pos;
        if closes_top_level(&tail[pos..=last]) {
            if let Some(id) = value_after_colon(&tail[pos + 4..]) {
                return Some(id);
            }
        }
    }
    None
}

/// Whether `bytes` (starting inside the top-level object) ends exactly with its closing brace.
fn closes_top_level(bytes: &[u8]) -> bool {
    let mut depth = 1usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => match string_end(bytes, i) {
                Some(end) => i = end,
                None => return false,
            },
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i == bytes.len() - 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// The index of the quote closing the string that opens at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Parses `: <number or string>` at the start of `bytes`.
fn value_after_colon(bytes: &[u8]) -> Option<RequestId> {
    let rest = trim_start(bytes);
    let rest = trim_start(rest.strip_prefix(b":")?);
    match rest.first()? {
        b'"' => {
            let end = string_end(rest, 0)?;
            let text: String = serde_json::from_slice(&rest[..=end]).ok()?;
            Some(RequestId::String(text))
        }
        b'-' | b'0'..=b'9' => {
            let len = rest
                .iter()
                .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                .unwrap_or(rest.len());
            serde_json::from_slice(&rest[..len]).ok()
        }
        _ => None,
    }
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let n = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &bytes[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_id_at_the_start() {
        let head = br#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"xxxx"#;
        assert_eq!(find_request_id(head, b""), Some(RequestId::Number(42)));
        let head = br#"{ "id" : "abc", "result": {"#;
        assert_eq!(
            find_request_id(head, b""),
            Some(RequestId::String("abc".into()))
        );
    }

    #[test]
    fn ignores_an_id_nested_in_the_result() {
        let head = br#"{"result":{"id":7,"content":[{"id":8,"text":"xxxx"#;
        assert_eq!(id_in_head(head), None);
        let head = br#"{"result":{"text":"\"id\":9, xx"#;
        assert_eq!(id_in_head(head), None);
    }

    #[test]
    fn finds_the_id_at_the_end_when_result_comes_first() {
        let tail = br#"xxxxxxxx"}]},"jsonrpc":"2.0","id":5}"#;
        assert_eq!(
            find_request_id(b"{\"result\":{\"content\":[", tail),
            Some(RequestId::Number(5))
        );
        let tail = br#"xx","id":3}]},"jsonrpc":"2.0","id":0}"#;
        assert_eq!(id_in_tail(tail), Some(RequestId::Number(0)));
    }

    #[test]
    fn refuses_a_nested_id_at_the_end() {
        let tail = br#"xx","meta":{"id":3}}}"#;
        assert_eq!(id_in_tail(tail), None);
        assert_eq!(id_in_tail(b"xxxx"), None);
    }
}
