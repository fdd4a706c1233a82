//! `http_answers`: the answers of a Streamable HTTP server (status × `Content-Type` × headers ×
//! body: JSON, an event stream, empty, cut, batches, wrong ids, refusals) as a real
//! [`McpClient`] over the real `StreamableHttpTransport` handles them.
//!
//! The transport is built with `StreamableHttpTransport::with_http_service` (`#[doc(hidden)]`,
//! for these checks): its HTTP client is an in-memory service standing for the server, so
//! everything from the exchange's classification of an answer to the call's result runs as it
//! does over a socket, without one. The service answers the handshake itself (`initialize`, or
//! `server/discover` in the 2026-07-28 era; `tools/list`; `202` to notifications and answers;
//! `405` to the GET stream; `200` to `DELETE`) and answers the `tools/call` POST, then any
//! later `tools/call` POST or `GET` with `Last-Event-ID` (a resumption), with the fuzz input's
//! answers in turn (then `500` to a POST and `405` to a GET).
//!
//! Input: byte 0 bit 0 picks the era (set: 2026-07-28); bytes 1–2 the frame limit
//! (512 + 0..=16383: the handshake's answers always fit); bytes 3–4 seed the chunk sizes, byte 5 caps them (1 + 64 × b). The rest is
//! the answers, separated by NUL bytes. An answer is a head, an empty line, and a body. The
//! head's first line is `STATUS [CONTENT-TYPE]`; its other lines are headers (`Name: value`) or
//! directives: `@repeat N` (the body's part between the first two `@@` is repeated N times, up
//! to 2 MiB in all: a huge body from a small input), `@error` (the body fails after its last
//! byte), `@trailers` (a trailers frame ends it). `@id` in a body stands for the id of the
//! request it answers.
//!
//! Each input runs twice: the bodies whole (one chunk) and in pseudo-random chunks of 0 to the
//! cap (at least 1/16384 of the body, so a huge body is not fed byte by byte). Checks:
//! - no panic;
//! - no hang: the call ends, with a result or an error that holds a `ClientError` naming the
//!   server, on tokio's paused clock, and never by a timeout (every answer is finite, so every
//!   call must end by the answer, or by a failure the transport reports);
//! - the same outcome (the call's result or error, and the requests the server saw) whatever
//!   the chunking;
//! - bounded memory, when the fuzz target gives a [`Memory`] meter: during the chunked run the
//!   client holds at most [`memory_bound`] bytes at once, however long the body (a body past the
//!   frame limit takes the oversize path, it is not buffered whole).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use kaged_mcp::client::{ClientError, ClientOptions, EraPreference, McpClient, ToolCall};
use kaged_mcp::transport::streamable_http::{StreamableHttpConfig, StreamableHttpTransport};
use serde_json::{json, Value};
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service};

/// The server's label in the client; every error must name it.
const SERVER: &str = "fuzz";
/// The longest body the input may ask for (`@repeat`): twice the most [`memory_bound`] allows,
/// and few enough events (tens of thousands) for an input to run in a second or two.
const MAX_BODY: usize = 2 << 20;
/// The most chunks a body is cut into, about: past it chunks grow.
const MAX_CHUNKS: usize = 16 * 1024;
/// How long a call may take on the paused clock before it counts as a hang: past every bound
/// of the transport (resumptions: 2 × 60 s at most).
const HANG: Duration = Duration::from_secs(3600);

/// A meter of the bytes the current thread holds, for the bounded-memory check: `reset` starts
/// a measure, `peak` is the most held at once since (the fuzz target's counting allocator).
#[derive(Debug, Clone, Copy)]
pub struct Memory {
    /// Starts a measure.
    pub reset: fn(),
    /// The most bytes held at once since `reset`.
    pub peak: fn() -> usize,
}

/// The most the client may hold at once while it reads answers with frame limit `limit`: its
/// fixed costs (about 40 KiB measured), and what one frame costs at most: the body as read,
/// the event's data, the decoded result, whose `Value`s take up to about 32 times the bytes
/// they were read from (an array of one-digit numbers: 32 bytes a `Value` for 2 bytes of text,
/// in a `Vec` that doubles), and the harness's `Debug` text of it. At most 1.07 MiB (the limit
/// is at most 16 895): half a body of [`MAX_BODY`] buffered whole.
pub fn memory_bound(limit: usize) -> usize {
    (256 << 10) + 48 * limit
}

/// One answer of the input.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    status: u16,
    content_type: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    prefix: Vec<u8>,
    middle: Vec<u8>,
    repeat: usize,
    suffix: Vec<u8>,
    error_at_end: bool,
    trailers: bool,
}

/// The parsed input.
#[derive(Debug, Clone)]
pub struct Script {
    /// The 2026-07-28 era.
    pub modern: bool,
    /// The client's frame limit.
    pub limit: usize,
    seed: u32,
    max_chunk: usize,
    answers: Vec<Answer>,
}

/// The input as a [`Script`]; `None` when it is too short.
pub fn script(data: &[u8]) -> Option<Script> {
    if data.len() < 6 {
        return None;
    }
    Some(Script {
        modern: data[0] & 1 == 1,
        limit: 512 + usize::from(u16::from_le_bytes([data[1], data[2]]) & 0x3fff),
        seed: u32::from(u16::from_le_bytes([data[3], data[4]])) | 1,
        max_chunk: 1 + usize::from(data[5]) * 64,
        answers: data[6..].split(|b| *b == 0).map(answer).collect(),
    })
}

fn answer(text: &[u8]) -> Answer {
    let (head, body) = match find(text, b"\n\n") {
        Some(i) => (&text[..i], &text[i + 2..]),
        None => (text, &[][..]),
    };
    let mut lines = head.split(|b| *b == b'\n');
    let first = lines.next().unwrap_or_default();
    let (status, ct) = match first.iter().position(|b| *b == b' ') {
        Some(i) => (&first[..i], Some(first[i + 1..].to_vec())),
        None => (first, None),
    };
    let mut a = Answer {
        status: std::str::from_utf8(status)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(200),
        content_type: ct,
        ..Answer::default()
    };
    for line in lines {
        if let Some(n) = line.strip_prefix(b"@repeat ") {
            a.repeat = std::str::from_utf8(n)
                .ok()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
        } else if line == b"@error" {
            a.error_at_end = true;
        } else if line == b"@trailers" {
            a.trailers = true;
        } else if let Some(i) = line.iter().position(|b| *b == b':') {
            let value = &line[i + 1..];
            let value = value.strip_prefix(b" ").unwrap_or(value);
            a.headers.push((line[..i].to_vec(), value.to_vec()));
        }
    }
    match find(body, b"@@").and_then(|i| find(&body[i + 2..], b"@@").map(|j| (i, i + 2 + j))) {
        Some((i, j)) if a.repeat > 0 => {
            a.prefix = body[..i].to_vec();
            a.middle = body[i + 2..j].to_vec();
            a.suffix = body[j + 2..].to_vec();
        }
        _ => {
            a.prefix = body.to_vec();
            a.repeat = 0;
        }
    }
    a
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn replace_id(bytes: &[u8], id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(i) = find(rest, b"@id") {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(id.as_bytes());
        rest = &rest[i + 3..];
    }
    out.extend_from_slice(rest);
    out
}

/// How a body is cut into chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// One chunk.
    Whole,
    /// Chunks of 0 to `max` bytes, sizes from an xorshift seeded with `seed`.
    Random {
        /// The xorshift's state.
        seed: u32,
        /// The largest chunk.
        max: usize,
    },
}

/// A body generated chunk by chunk from an [`Answer`] (so a huge one is never held whole by
/// the harness).
struct GenBody {
    prefix: Vec<u8>,
    middle: Vec<u8>,
    repeat: usize,
    suffix: Vec<u8>,
    len: usize,
    pos: usize,
    chunking: Chunking,
    error_at_end: bool,
    trailers: bool,
    ended: bool,
}

impl GenBody {
    fn new(a: &Answer, id: &str, chunking: Chunking) -> Self {
        let prefix = replace_id(&a.prefix, id);
        let middle = replace_id(&a.middle, id);
        let suffix = replace_id(&a.suffix, id);
        let fixed = prefix.len() + suffix.len();
        let repeat = if middle.is_empty() {
            0
        } else {
            a.repeat.min(MAX_BODY.saturating_sub(fixed) / middle.len())
        };
        let len = fixed + middle.len() * repeat;
        Self {
            prefix,
            middle,
            repeat,
            suffix,
            len,
            pos: 0,
            chunking,
            error_at_end: a.error_at_end,
            trailers: a.trailers,
            ended: false,
        }
    }

    /// The body's bytes `range`.
    fn bytes(&self, start: usize, end: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(end - start);
        let mid_end = self.prefix.len() + self.middle.len() * self.repeat;
        let mut i = start;
        while i < end {
            if i < self.prefix.len() {
                let stop = end.min(self.prefix.len());
                out.extend_from_slice(&self.prefix[i..stop]);
                i = stop;
            } else if i < mid_end {
                let off = (i - self.prefix.len()) % self.middle.len();
                let stop = end.min(i + self.middle.len() - off);
                out.extend_from_slice(&self.middle[off..off + (stop - i)]);
                i = stop;
            } else {
                let off = i - mid_end;
                out.extend_from_slice(&self.suffix[off..off + (end - i)]);
                i = end;
            }
        }
        out
    }
}

impl http_body::Body for GenBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.pos < this.len {
            let n = match &mut this.chunking {
                Chunking::Whole => this.len - this.pos,
                Chunking::Random { seed, max } => {
                    *seed ^= *seed << 13;
                    *seed ^= *seed >> 17;
                    *seed ^= *seed << 5;
                    let n = *seed as usize % (*max + 1);
                    // At most about 16 Ki chunks a body: a huge one in 1-byte chunks would
                    // only measure the cost of a frame.
                    let floor = this.len / MAX_CHUNKS;
                    if n == 0 && floor == 0 {
                        // An empty data frame changes nothing.
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::new()))));
                    }
                    n.max(floor).max(1)
                }
            };
            let end = (this.pos + n).min(this.len);
            let chunk = this.bytes(this.pos, end);
            this.pos = end;
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))));
        }
        if this.ended {
            return Poll::Ready(None);
        }
        this.ended = true;
        if this.trailers {
            let mut t = HeaderMap::new();
            t.insert("x-fuzz", HeaderValue::from_static("end"));
            this.trailers = false;
            this.ended = false;
            return Poll::Ready(Some(Ok(Frame::trailers(t))));
        }
        if this.error_at_end {
            return Poll::Ready(Some(Err("the fuzz body fails here".into())));
        }
        Poll::Ready(None)
    }
}

type Body = UnsyncBoxBody<Bytes, BoxError>;

/// The in-memory server. See the [module docs](self).
struct Server {
    answers: VecDeque<Answer>,
    chunking: Chunking,
    /// The id of the latest `tools/call`.
    call_id: String,
    /// What the client sent: `POST method`, `GET`, `GET resume`, `DELETE`.
    seen: Vec<String>,
}

fn full(status: u16, ct: Option<&'static str>, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *r.status_mut() = StatusCode::from_u16(status).expect("a status");
    if let Some(ct) = ct {
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    r
}

fn json_answer(id: &Value, result: Value) -> Response<Body> {
    let frame = json!({"jsonrpc": "2.0", "id": id, "result": result});
    full(
        200,
        Some("application/json"),
        frame.to_string().into_bytes(),
    )
}

impl Server {
    fn next(&mut self) -> Option<Response<Body>> {
        let a = self.answers.pop_front()?;
        let body = GenBody::new(&a, &self.call_id, self.chunking);
        let mut r = Response::new(body.boxed_unsync());
        *r.status_mut() = StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK);
        if let Some(ct) = a
            .content_type
            .as_deref()
            .and_then(|ct| HeaderValue::from_bytes(ct).ok())
        {
            r.headers_mut().insert(CONTENT_TYPE, ct);
        }
        for (name, value) in &a.headers {
            if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
                r.headers_mut().append(n, v);
            }
        }
        Some(r)
    }

    fn answer(&mut self, method: &Method, has_last_event_id: bool, body: &[u8]) -> Response<Body> {
        match *method {
            Method::GET if has_last_event_id => {
                self.seen.push("GET resume".into());
                self.next().unwrap_or_else(|| full(405, None, Vec::new()))
            }
            Method::GET => {
                self.seen.push("GET".into());
                full(405, None, Vec::new())
            }
            Method::POST => {
                let msg: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                let method = msg.get("method").and_then(Value::as_str);
                let id = msg.get("id").cloned();
                self.seen
                    .push(format!("POST {}", method.unwrap_or("(answer)")));
                let (Some(method), Some(id)) = (method, id) else {
                    return full(202, None, Vec::new());
                };
                match method {
                    "initialize" => {
                        let mut r = json_answer(
                            &id,
                            json!({
                                "protocolVersion": "2025-11-25",
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "fuzz", "version": "1"}
                            }),
                        );
                        r.headers_mut()
                            .insert("mcp-session-id", HeaderValue::from_static("s-1"));
                        r
                    }
                    "server/discover" => json_answer(
                        &id,
                        json!({
                            "resultType": "complete",
                            "supportedVersions": ["2026-07-28"],
                            "capabilities": {"tools": {}},
                            "_meta": {"io.modelcontextprotocol/serverInfo":
                                      {"name": "fuzz", "version": "1"}}
                        }),
                    ),
                    "tools/list" => json_answer(
                        &id,
                        json!({"tools": [{
                            "name": "echo",
                            "inputSchema": {"type": "object", "properties": {
                                "region": {"type": "string", "x-mcp-header": "Region"},
                                "text": {"type": "string"}
                            }}
                        }]}),
                    ),
                    "tools/call" => {
                        self.call_id = id.to_string();
                        self.next()
                            .unwrap_or_else(|| full(500, None, b"no more answers".to_vec()))
                    }
                    _ => {
                        let frame = json!({"jsonrpc": "2.0", "id": id,
                                           "error": {"code": -32601, "message": "not here"}});
                        full(
                            200,
                            Some("application/json"),
                            frame.to_string().into_bytes(),
                        )
                    }
                }
            }
            _ => {
                self.seen.push(method.to_string());
                full(200, None, Vec::new())
            }
        }
    }
}

/// What one run came to: the call's outcome and what the server saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// `Ok(<the result's Debug>)` or `Err(<the error's text>)`.
    pub call: Result<String, String>,
    /// The requests the server saw, in order.
    pub seen: Vec<String>,
}

/// Runs `script` once with its bodies cut by `chunking`.
pub fn run(script: &Script, chunking: Chunking) -> Run {
    let server = Arc::new(Mutex::new(Server {
        answers: script.answers.iter().cloned().collect(),
        chunking,
        call_id: "null".into(),
        seen: Vec::new(),
    }));
    let service = {
        let server = Arc::clone(&server);
        tower::service_fn(move |req: Request<Full<Bytes>>| {
            let server = Arc::clone(&server);
            async move {
                let has_last = req.headers().contains_key("last-event-id");
                let method = req.method().clone();
                let body = req.into_body().collect().await?.to_bytes();
                let mut server = server.lock().expect("not poisoned");
                Ok::<_, BoxError>(server.answer(&method, has_last, &body))
            }
        })
    };
    let config = StreamableHttpConfig::new("http://127.0.0.1:9/mcp".parse().expect("a URL"))
        .max_resumptions(2);
    let transport =
        StreamableHttpTransport::with_http_service(config, BoxCloneSyncService::new(service))
            .expect("a valid transport");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let era = if script.modern {
        EraPreference::Modern
    } else {
        EraPreference::Legacy
    };
    let call = runtime.block_on(async {
        let options = ClientOptions::default()
            .frame_limit(script.limit)
            .era(era)
            .initialize_timeout(Duration::from_secs(5))
            .request_timeout(Duration::from_secs(30));
        let client = McpClient::new(SERVER, transport, options);
        let call =
            ToolCall::new("echo").with_json_arguments(json!({"region": "eu-west-1", "text": "hi"}));
        let mut service = client.clone();
        let outcome = match tokio::time::timeout(HANG, service.call(call)).await {
            Err(_elapsed) => panic!("the call never ended (a hang)"),
            Ok(Ok(result)) => Ok(format!("{result:?}")),
            Ok(Err(e)) => Err(check_error(&e)),
        };
        tokio::time::timeout(HANG, client.shutdown())
            .await
            .expect("shutdown ends");
        outcome
    });
    let seen = std::mem::take(&mut server.lock().expect("not poisoned").seen);
    Run { call, seen }
}

/// The error's text, checked: it holds a `ClientError` naming the server, and is no timeout
/// (every answer is finite: a call must end by it).
fn check_error(e: &BoxError) -> String {
    let text = e.to_string();
    let inner: &(dyn std::error::Error + 'static) = &**e;
    let Some(client_error) = ClientError::find(inner) else {
        panic!("a call failed with an error that holds no ClientError: {text}");
    };
    assert!(
        client_error.to_string().contains(&format!("`{SERVER}`")),
        "a client error that does not name the server: {client_error}"
    );
    assert!(
        client_error.kind() != kaged_mcp::client::ErrorKind::RequestTimeout,
        "the call ended by its timeout: no answer and no failure came (a hang): {text}"
    );
    text
}

/// Runs the checks of the [module docs](self) over `data`; `memory` meters the chunked run.
pub fn http_answers(data: &[u8], memory: Option<Memory>) -> Option<Run> {
    let script = script(data)?;
    let whole = run(&script, Chunking::Whole);
    if let Some(m) = memory {
        (m.reset)();
    }
    let chunked = run(
        &script,
        Chunking::Random {
            seed: script.seed,
            max: script.max_chunk,
        },
    );
    if let Some(m) = memory {
        let peak = (m.peak)();
        assert!(
            peak <= memory_bound(script.limit),
            "the client held {peak} bytes at once with a frame limit of {} (bound {})",
            script.limit,
            memory_bound(script.limit)
        );
    }
    assert_eq!(
        whole, chunked,
        "the outcome depends on how the bodies were cut (chunks up to {})",
        script.max_chunk
    );
    Some(whole)
}
