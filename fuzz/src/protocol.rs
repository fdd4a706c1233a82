//! `protocol_types`: the MCP payload types of `kaged_mcp::protocol`, each decoded straight
//! from the fuzz input with `serde_json`, as an embedder reading a stored result would.

use kaged_mcp::protocol::content::ContentBlock;
use kaged_mcp::protocol::notifications::LoggingMessageParams;
use kaged_mcp::protocol::{
    ElicitParams, InitializeResult, JsonRpcError, ListToolsResult, ProgressParams, RequestId,
    ToolResult,
};
use serde_json::Value;

use crate::truncate::check_truncate;

/// `protocol_types`: one inbound frame, decoded with `serde_json` as each protocol type.
///
/// The frame is decoded as a JSON-RPC envelope and its `result`, `error`, `id` and `params`
/// are read as every type the client expects there; each payload type is also read straight
/// from the bytes. Nothing may panic. A [`ToolResult`] that decodes is re-encoded and must
/// decode again to the same value, and is truncated with [`check_truncate`].
pub fn protocol_types(data: &[u8]) {
    // The cap for the truncation check comes from the frame's first byte, so the fuzzer can
    // reach both the untouched and the cut paths.
    let cap = data.first().map_or(0, |b| usize::from(*b));

    if let Ok(result) = serde_json::from_slice::<ToolResult>(data) {
        check_tool_result(&result, cap);
    }
    let _ = serde_json::from_slice::<ListToolsResult>(data);
    let _ = serde_json::from_slice::<InitializeResult>(data);
    let _ = serde_json::from_slice::<JsonRpcError>(data);
    let _ = serde_json::from_slice::<RequestId>(data);
    let _ = serde_json::from_slice::<ContentBlock>(data);
    let _ = serde_json::from_slice::<ProgressParams>(data);
    let _ = serde_json::from_slice::<LoggingMessageParams>(data);
    let _ = serde_json::from_slice::<ElicitParams>(data);

    quick_reads_as_serde_reads(data);

    let Ok(Value::Object(frame)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Some(id) = frame.get("id") {
        if let Ok(id) = serde_json::from_value::<RequestId>(id.clone()) {
            let _ = id.as_u64();
            assert!(!id.to_string().is_empty(), "an id that displays as nothing");
        }
    }
    if let Some(result) = frame.get("result") {
        if let Ok(r) = serde_json::from_value::<ToolResult>(result.clone()) {
            check_tool_result(&r, cap);
        }
        if let Ok(list) = serde_json::from_value::<ListToolsResult>(result.clone()) {
            for tool in &list.tools {
                let _ = tool.is_retry_safe();
            }
        }
        let _ = serde_json::from_value::<InitializeResult>(result.clone());
    }
    if let Some(error) = frame.get("error") {
        if let Ok(e) = serde_json::from_value::<JsonRpcError>(error.clone()) {
            let _ = e.to_string();
        }
    }
    if let Some(params) = frame.get("params") {
        let _ = serde_json::from_value::<ProgressParams>(params.clone());
        let _ = serde_json::from_value::<LoggingMessageParams>(params.clone());
        let _ = serde_json::from_value::<ElicitParams>(params.clone());
    }
}

/// A decoded [`ToolResult`] encodes and decodes back to itself (numbers that are not integers
/// within one ulp: `serde_json` without its `float_roundtrip` feature may read its own output
/// one ulp off, see README.md "Findings"), and truncates correctly.
pub fn check_tool_result(result: &ToolResult, cap: usize) {
    check_truncate(result, cap);
    let json = serde_json::to_vec(result).expect("a decoded ToolResult encodes");
    let again: ToolResult = serde_json::from_slice(&json).unwrap_or_else(|e| {
        panic!(
            "a decoded ToolResult does not decode after encoding: {e}\n{}",
            String::from_utf8_lossy(&json)
        )
    });
    if &again != result {
        let a = serde_json::to_value(&again).expect("encodes");
        let b = serde_json::to_value(result).expect("encodes");
        assert!(
            same_within_one_ulp(&a, &b),
            "decode(encode(r)) != r\n   r: {result:?}\nback: {again:?}"
        );
    }
}

/// Whether two JSON values are equal, floating-point numbers allowed one ulp apart.
pub fn same_within_one_ulp(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x != y => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() && x.signum() == y.signum() => {
                x.to_bits().abs_diff(y.to_bits()) <= 1
            }
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_within_one_ulp(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_within_one_ulp(v, w)))
        }
        _ => a == b,
    }
}

/// The client's hand-written reader of the commonest `tools/call` answer
/// (`kaged_mcp::protocol::quick`): whatever frame it reads, serde reads the same id and result,
/// from the frame and from the result's own text.
pub fn quick_reads_as_serde_reads(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(quick) = kaged_mcp::protocol::quick::legacy_call_answer(text) else {
        return;
    };
    let frame: Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("the quick reader read what serde refuses ({e}): {text}"));
    assert_eq!(
        frame.get("id").and_then(Value::as_u64),
        Some(quick.id),
        "another id: {text}"
    );
    let whole: ToolResult = serde_json::from_value(frame["result"].clone())
        .unwrap_or_else(|e| panic!("serde refuses the result ({e}): {text}"));
    assert_eq!(whole, quick.result, "another result: {text}");
    let raw: ToolResult = serde_json::from_str(quick.raw_result)
        .unwrap_or_else(|e| panic!("serde refuses the raw result ({e}): {text}"));
    assert_eq!(raw, quick.result, "another raw result: {text}");
}
