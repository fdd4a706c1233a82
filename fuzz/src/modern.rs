//! `modern_shapes`: the result shapes of the 2026-07-28 revision decoded from arbitrary JSON,
//! and the `Mcp-Param-*` headers of its Streamable HTTP binding.
//!
//! Decoding: the input, and the `result` of the input read as a JSON-RPC envelope, are decoded
//! with `serde_json` as [`CallAnswer`] (`resultType` `complete` or `input_required`, with
//! `inputRequests` and `requestState`, or a task: `resultType: "task"` flat, or a 2025-11-25
//! `{"task": …}`), [`DiscoverResult`] and [`ListToolsResult`] (its cache
//! hints `ttlMs` and `cacheScope`). Checks: no panic; a value decoded from bytes decodes from a
//! `serde_json::Value` of those bytes too (when they are one: `serde_json` skips the strings of
//! ignored fields without checking them); a decoded value written back in its wire
//! shape ([`encode_call_answer`], [`encode_discover`], [`encode_list`]) decodes to itself
//! (numbers that are not integers within one ulp: finding F1); a `complete` answer holds
//! the [`ToolResult`] a legacy decode of the same bytes gives, when both decode.
//!
//! Headers: the `Mcp-Param-{name}: value` header of
//! `kaged_mcp::transport::streamable_http::param_header` (the transport's own, exposed
//! `#[doc(hidden)]` for these checks) for (a) the parameters [`param_headers`] finds in the
//! input's `inputSchema` with their values in its `arguments` ([`param_header_value`]), and
//! (b) names and values built with [`arbitrary`] from the input. Checks: every value is either
//! refused (only when the name cannot be in a header name; never a name `param_headers`
//! accepted) or encoded into a valid `http::HeaderValue` of visible ASCII without leading or
//! trailing whitespace that decodes back, plain or from the `=?base64?…?=` sentinel, to
//! exactly the value; a plain value never looks like the sentinel; a mirrored argument is the
//! string as is, the boolean as `true`/`false`, the integer in decimal within ±(2^53 − 1).

use arbitrary::Unstructured;
use base64::Engine as _;
use http::header::{HeaderName, HeaderValue};
use kaged_mcp::protocol::modern::{param_header_value, param_headers};
use kaged_mcp::protocol::{CallAnswer, DiscoverResult, ListToolsResult, ToolResult};
use kaged_mcp::transport::streamable_http::param_header;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use crate::protocol::same_within_one_ulp;

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// Runs the checks of the [module docs](self) over `data`.
pub fn modern_shapes(data: &[u8]) {
    shapes(data);
    if let Ok(Value::Object(frame)) = serde_json::from_slice::<Value>(data) {
        if let Some(result) = frame.get("result") {
            let bytes = serde_json::to_vec(result).expect("a Value encodes");
            shapes(&bytes);
        }
        let tool = frame.get("params").unwrap_or(&Value::Null);
        schema_headers(
            tool.get("inputSchema").or_else(|| frame.get("inputSchema")),
            tool.get("arguments").or_else(|| frame.get("arguments")),
        );
    }
    let mut u = Unstructured::new(data);
    while let (Ok(name), Ok(value)) = (u.arbitrary::<String>(), u.arbitrary::<String>()) {
        check_param(&name, &value, false);
        if u.is_empty() {
            break;
        }
    }
}

fn shapes(bytes: &[u8]) {
    if let Some(answer) = decoded::<CallAnswer>(bytes) {
        let again = round_trip(&answer, encode_call_answer, "CallAnswer");
        if let (CallAnswer::Complete(result), Ok(legacy)) =
            (&again, serde_json::from_slice::<ToolResult>(bytes))
        {
            assert!(
                same(
                    &serde_json::to_value(result),
                    &serde_json::to_value(&legacy)
                ),
                "a complete answer and the legacy decode differ: {result:?} / {legacy:?}"
            );
        }
    }
    if let Some(d) = decoded::<DiscoverResult>(bytes) {
        let _ = d.server_info();
        round_trip(&d, encode_discover, "DiscoverResult");
    }
    if let Some(list) = decoded::<ListToolsResult>(bytes) {
        round_trip(&list, encode_list, "ListToolsResult");
    }
}

fn same(a: &serde_json::Result<Value>, b: &serde_json::Result<Value>) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => same_within_one_ulp(a, b),
        _ => false,
    }
}

/// `T` decoded from `bytes`, which a `Value` of the same bytes must decode to too.
fn decoded<T: DeserializeOwned + std::fmt::Debug>(bytes: &[u8]) -> Option<T> {
    let t: T = serde_json::from_slice(bytes).ok()?;
    // `serde_json` does not check the UTF-8 (nor the escapes) of a string it skips, the value
    // of a field the type ignores: such bytes decode as `T` and are no `Value`.
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return Some(t);
    };
    if let Err(e) = serde_json::from_value::<T>(value.clone()) {
        panic!(
            "{} decodes from bytes but not from their Value: {e}\n{t:?}\n{value}",
            std::any::type_name::<T>()
        );
    }
    Some(t)
}

/// Writes `t` in its wire shape and decodes it: the same value (within one ulp), which is
/// returned.
fn round_trip<T: DeserializeOwned + std::fmt::Debug>(
    t: &T,
    encode: fn(&T) -> Value,
    what: &str,
) -> T {
    let wire = encode(t);
    let again: T = serde_json::from_value(wire.clone())
        .unwrap_or_else(|e| panic!("a decoded {what} does not decode once written: {e}\n{wire}"));
    let rewired = encode(&again);
    assert!(
        same_within_one_ulp(&wire, &rewired),
        "a decoded {what} changes once written and read:\n{t:?}\n{again:?}\n{wire}"
    );
    again
}

/// A [`CallAnswer`] as a server writes it.
pub fn encode_call_answer(a: &CallAnswer) -> Value {
    match a {
        CallAnswer::Complete(result) => {
            let mut v = serde_json::to_value(result).expect("a ToolResult encodes");
            v["resultType"] = json!("complete");
            v
        }
        CallAnswer::InputRequired(ir) => {
            let mut v = json!({
                "resultType": "input_required",
                "inputRequests": ir.input_requests,
            });
            if let Some(state) = &ir.request_state {
                v["requestState"] = json!(state);
            }
            v
        }
        // Written in the 2025-11-25 shape, which carries every field a task may have (the
        // 2026-07-28 flat shape has no inlined outcome at creation).
        CallAnswer::Task(t) => {
            let mut task = Map::new();
            task.insert("taskId".into(), json!(t.task_id));
            task.insert("status".into(), json!(t.status));
            if let Some(m) = &t.status_message {
                task.insert("statusMessage".into(), json!(m));
            }
            if let Some(p) = t.poll_interval {
                task.insert("pollInterval".into(), json!(p));
            }
            if let Some(ttl) = t.ttl {
                task.insert("ttl".into(), json!(ttl));
            }
            if let Some(r) = &t.result {
                task.insert("result".into(), r.clone());
            }
            if let Some(e) = &t.error {
                task.insert(
                    "error".into(),
                    json!({"code": e.code, "message": e.message, "data": e.data}),
                );
            }
            if let Some(i) = &t.input_requests {
                task.insert("inputRequests".into(), json!(i));
            }
            json!({ "task": task })
        }
        other => panic!("an answer this encoder does not know: {other:?}"),
    }
}

/// A [`DiscoverResult`] as a server writes it.
pub fn encode_discover(d: &DiscoverResult) -> Value {
    let mut v = Map::new();
    v.insert("supportedVersions".into(), json!(d.supported_versions));
    v.insert("capabilities".into(), d.capabilities.clone());
    if let Some(i) = &d.instructions {
        v.insert("instructions".into(), json!(i));
    }
    if let Some(t) = &d.result_type {
        v.insert("resultType".into(), json!(t));
    }
    if let Some(m) = &d.meta {
        v.insert("_meta".into(), m.clone());
    }
    Value::Object(v)
}

/// A [`ListToolsResult`] as a server writes it.
pub fn encode_list(l: &ListToolsResult) -> Value {
    let mut v = Map::new();
    v.insert("tools".into(), json!(l.tools));
    if let Some(c) = &l.next_cursor {
        v.insert("nextCursor".into(), json!(c));
    }
    if let Some(t) = l.ttl_ms {
        v.insert("ttlMs".into(), json!(t));
    }
    if let Some(s) = &l.cache_scope {
        v.insert("cacheScope".into(), json!(s));
    }
    Value::Object(v)
}

/// The parameters `schema` annotates, mirrored from `arguments`.
fn schema_headers(schema: Option<&Value>, arguments: Option<&Value>) {
    let Some(schema) = schema else { return };
    let Ok(headers) = param_headers(schema) else {
        return;
    };
    let empty = Map::new();
    let arguments = arguments.and_then(Value::as_object).unwrap_or(&empty);
    for h in &headers {
        let Some(text) = param_header_value(arguments, h) else {
            continue;
        };
        let mut at = arguments;
        let (last, parents) = h.path.split_last().expect("a parameter has a path");
        for p in parents {
            at = at[p].as_object().expect("param_header_value found it");
        }
        match &at[last] {
            Value::String(s) => assert_eq!(&text, s),
            Value::Bool(b) => assert_eq!(text, b.to_string()),
            Value::Number(n) => {
                let i = n.as_i64().expect("an integer");
                assert!(i.unsigned_abs() < 1 << 53, "{i} is outside the safe range");
                assert_eq!(text, i.to_string());
            }
            other => panic!("{other} was mirrored as {text:?}"),
        }
        check_param(&h.name, &text, true);
    }
}

/// The header of parameter `name` with `value`: refused only for a name that cannot be in a
/// header name (never when `valid_name`), else valid and decoding back to `value`.
pub fn check_param(name: &str, value: &str, valid_name: bool) {
    let Some((header, encoded)) = param_header(name, value) else {
        assert!(
            !valid_name,
            "the header of the valid parameter name {name:?} was left out"
        );
        assert!(
            HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes()).is_err(),
            "a header was left out for its value {value:?}, not its name {name:?}"
        );
        return;
    };
    assert_eq!(
        header.as_str(),
        format!("mcp-param-{}", name.to_ascii_lowercase())
    );
    assert_eq!(decode(&encoded), value, "encoded as {encoded:?}");
}

/// What a server reads from a `Mcp-Param-*` header value: the Base64 sentinel decoded, else
/// the value as is. Panics when the value could not be sent as it is.
pub fn decode(v: &HeaderValue) -> String {
    let text = v
        .to_str()
        .unwrap_or_else(|_| panic!("a header value that is not visible ASCII: {v:?}"));
    assert!(
        !text.starts_with([' ', '\t']) && !text.ends_with([' ', '\t']),
        "a value with whitespace at an end does not survive HTTP: {text:?}"
    );
    assert!(!text.is_empty(), "an empty header value");
    match text
        .strip_prefix(PREFIX)
        .and_then(|t| t.strip_suffix(SUFFIX))
    {
        Some(b64) if text.len() >= PREFIX.len() + SUFFIX.len() => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap_or_else(|e| panic!("a sentinel that is not Base64: {text:?}: {e}"));
            String::from_utf8(bytes).expect("a sentinel of UTF-8")
        }
        _ => text.to_owned(),
    }
}
