//! `kaged-mcp demo-server`: a small, fast MCP server on stdin/stdout.
//!
//! The bundled example project (`examples/demo/`) spawns it, so the quickstart needs nothing
//! beyond the Rust toolchain; the benchmarks use it as their echo server. Tools: `echo`
//! (`{"message", "pad"?}`: `Echo: <message>` plus `pad` bytes), `add` (`{"a", "b"}`),
//! `lorem` (`{"bytes"}`: that many bytes of text, to see the result cap at work),
//! `slow` (`{"ms"}`: answers after a delay; requests are served one at a time) and `crash`
//! (the process exits with status 3 without answering, to watch the client restart it).
//! It speaks both eras: `initialize` (2024-11-05 … 2025-11-25) and 2026-07-28
//! (`server/discover`, requests without a handshake).

use std::io::{BufRead, BufWriter, Write};

use serde_json::value::RawValue;
use serde_json::{json, Value};

const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

pub(super) fn run() -> u8 {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(256 * 1024, stdout.lock());
    let mut line = String::new();
    let mut input = std::io::BufReader::with_capacity(64 * 1024, stdin.lock());
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) => return 0,
            Ok(_) => {}
            Err(e) => {
                eprintln!("demo-server: stdin: {e}");
                return 1;
            }
        }
        let Some(reply) = handle(line.trim()) else {
            continue;
        };
        let written = out.write_all(&reply);
        // Flush only when no further request is already waiting: bursts coalesce.
        let flushed = if input.buffer().is_empty() {
            out.flush()
        } else {
            Ok(())
        };
        if written.and(flushed).is_err() {
            return 0;
        }
    }
}

/// The envelope of a request, borrowed from the line: decoded once, `params` left raw.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// `tools/call` params of the hot path: `echo` with a borrowed message.
#[derive(serde::Deserialize)]
struct EchoCall<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    arguments: Option<EchoArgs<'a>>,
}

#[derive(serde::Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow)]
    message: Option<std::borrow::Cow<'a, str>>,
    pad: Option<u64>,
}

/// Answers one line; `None` for notifications and blank lines. `echo` calls take a fast path
/// (borrowed decoding, reply written from a template) so the benchmarks measure the client,
/// not this server.
fn handle(line: &str) -> Option<Vec<u8>> {
    if line.is_empty() {
        return None;
    }
    let Ok(env) = serde_json::from_str::<Envelope<'_>>(line) else {
        return Some(to_line(&json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "parse error"}})));
    };
    let id = env.id?;
    if env.method.as_deref() == Some("tools/call") {
        if let Some(Ok(call)) = env
            .params
            .map(|p| serde_json::from_str::<EchoCall<'_>>(p.get()))
        {
            if call.name == "echo" {
                if let Some(EchoArgs {
                    message: Some(m),
                    pad,
                }) = call.arguments
                {
                    return Some(echo_reply(id, &m, pad.unwrap_or(0)));
                }
            }
        }
    }
    let params: Value = env
        .params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    let id: Value = serde_json::from_str(id.get()).unwrap_or(Value::Null);
    let method = env.method.as_deref().unwrap_or("");
    let result = match method {
        "initialize" => {
            let asked = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let version = if VERSIONS.contains(&asked) {
                asked
            } else {
                "2025-11-25"
            };
            Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "kaged-mcp-demo", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "A demo server bundled with kaged-mcp."
            }))
        }
        // Dual-era: the 2026-07-28 probe is answered, and every request is served whether or
        // not `initialize` came first (the server keeps no session state).
        "server/discover" => Ok(json!({
            "resultType": "complete",
            "supportedVersions": VERSIONS.iter().chain(&["2026-07-28"]).collect::<Vec<_>>(),
            "capabilities": {"tools": {"listChanged": false}},
            "_meta": {"io.modelcontextprotocol/serverInfo":
                {"name": "kaged-mcp-demo", "version": env!("CARGO_PKG_VERSION")}},
            "instructions": "A demo server bundled with kaged-mcp.",
            "ttlMs": 0,
            "cacheScope": "public"
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools()})),
        "tools/call" => Ok(call(&params)),
        other => Err(json!({"code": -32601, "message": format!("method not found: {other}")})),
    };
    Some(to_line(&match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
    }))
}

fn to_line(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap_or_default();
    out.push(b'\n');
    out
}

fn echo_reply(id: &RawValue, message: &str, pad: u64) -> Vec<u8> {
    let pad = pad.min(1 << 26) as usize;
    let mut out = Vec::with_capacity(message.len() + pad + 128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.get().as_bytes());
    out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    // Serializing a &str into a Vec cannot fail. The padding ('.', nothing to escape) goes
    // inside the same JSON string, written raw by memset: the closing quote comes off and back.
    let _ = serde_json::to_writer(&mut out, &format!("Echo: {message}"));
    out.pop();
    out.resize(out.len() + pad, b'.');
    out.extend_from_slice(b"\"}],\"isError\":false}}\n");
    out
}

fn tools() -> Value {
    json!([
        {"name": "echo", "description": "Echoes a message back, optionally padded with `pad` bytes.",
         "inputSchema": {"type": "object", "properties": {
             "message": {"type": "string"}, "pad": {"type": "integer", "minimum": 0}},
             "required": ["message"]},
         "annotations": {"readOnlyHint": true, "idempotentHint": true}},
        {"name": "add", "description": "Adds two numbers.",
         "inputSchema": {"type": "object", "properties": {
             "a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
         "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}},
         "annotations": {"readOnlyHint": true}},
        {"name": "lorem", "description": "Returns `bytes` bytes of lorem ipsum.",
         "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer", "minimum": 0}},
             "required": ["bytes"]}},
        {"name": "slow", "description": "Answers after `ms` milliseconds.",
         "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}},
             "required": ["ms"]}},
        {"name": "crash", "description": "Exits the server process without answering (to see the client restart it).",
         "inputSchema": {"type": "object", "properties": {}},
         "annotations": {"destructiveHint": true}}
    ])
}

fn text(t: String) -> Value {
    json!({"content": [{"type": "text", "text": t}], "isError": false})
}

fn error(t: String) -> Value {
    json!({"content": [{"type": "text", "text": t}], "isError": true})
}

fn call(params: &Value) -> Value {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    match name {
        "echo" => match args.get("message").and_then(Value::as_str) {
            Some(m) => {
                let pad = args
                    .get("pad")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    .min(1 << 26);
                let mut t = format!("Echo: {m}");
                t.extend(std::iter::repeat_n('.', pad as usize));
                text(t)
            }
            None => error("echo: `message` (a string) is required".into()),
        },
        "add" => match (
            args.get("a").and_then(Value::as_f64),
            args.get("b").and_then(Value::as_f64),
        ) {
            (Some(a), Some(b)) => {
                let sum = a + b;
                json!({"content": [{"type": "text", "text": format!("{sum}")}],
                       "structuredContent": {"sum": sum}, "isError": false})
            }
            _ => error("add: `a` and `b` (numbers) are required".into()),
        },
        "lorem" => match args.get("bytes").and_then(Value::as_u64) {
            Some(n) => {
                const WORDS: &str = "lorem ipsum dolor sit amet consectetur adipiscing elit ";
                let n = n.min(1 << 26) as usize;
                let t: String = WORDS.chars().cycle().take(n).collect();
                text(t)
            }
            None => error("lorem: `bytes` (an integer) is required".into()),
        },
        "slow" => match args.get("ms").and_then(Value::as_u64) {
            Some(ms) => {
                std::thread::sleep(std::time::Duration::from_millis(ms.min(600_000)));
                text(format!("slept {ms} ms"))
            }
            None => error("slow: `ms` (an integer) is required".into()),
        },
        "crash" => {
            eprintln!("demo-server: crash tool called; exiting with status 3");
            std::process::exit(3);
        }
        other => error(format!("unknown tool: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(line: &str) -> Option<Value> {
        super::handle(line).map(|b| serde_json::from_slice(&b).unwrap())
    }

    #[test]
    fn answers_initialize_with_the_asked_version_when_known() {
        let r = handle(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#).unwrap();
        assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
        let r = handle(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#).unwrap();
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    }

    #[test]
    fn echoes_with_padding_and_ignores_notifications() {
        let r = handle(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi","pad":3}}}"#).unwrap();
        assert_eq!(r["id"], "a");
        assert_eq!(r["result"]["content"][0]["text"], "Echo: hi...");
        assert!(handle(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_none());
    }

    #[test]
    fn unknown_methods_get_method_not_found() {
        let r = handle(r#"{"jsonrpc":"2.0","id":2,"method":"resources/list"}"#).unwrap();
        assert_eq!(r["error"]["code"], -32601);
    }
}
