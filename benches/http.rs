//! `tools/call` round trips over Streamable HTTP: kaged-mcp's full default stack against two
//! anchors, all three talking to the same local server, in the same run:
//! - **`rmcp`**: the official Rust SDK's Streamable HTTP client
//!   (`StreamableHttpClientTransport::from_config`, feature
//!   `transport-streamable-http-client-reqwest`, its default reqwest client) with
//!   `max_concurrent_requests` 64 (≥ every scenario's calls in flight), asking for protocol
//!   `2025-11-25`. That client is built with `pool_max_idle_per_host(0)`: every POST opens a
//!   fresh TCP connection (one `connect` per call under `strace`);
//! - **`bare`**: hyper-util's pooled HTTP/1.1 client (`TCP_NODELAY`) POSTing pre-built request
//!   bodies (the bytes kaged-mcp writes for the same `tools/call`, checked byte for byte but the
//!   id before measuring) with the same headers (`Accept: application/json, text/event-stream`,
//!   `Content-Type: application/json`, `MCP-Protocol-Version: 2025-11-25`), reading each answer
//!   whole and decoding nothing: the limit, no MCP library at all.
//!
//! # The server
//! A minimal Streamable HTTP server in this file, on a thread of its own with its own
//! current-thread tokio runtime: hyper 1's HTTP/1.1 server (keep-alive, `TCP_NODELAY`) on
//! `127.0.0.1`, endpoint `POST /mcp`, stateless (no `Mcp-Session-Id`), every answer
//! `application/json`. `initialize` → protocol `2025-11-25`; notifications and answers → `202`;
//! `tools/list` → one tool `echo`; `tools/call` → one text block holding the `message` argument
//! (copied as the raw JSON string, no unescaping) followed by `pad` bytes `x` (a static buffer);
//! `ping` → `{}`; `GET` and `DELETE` → `405`. A request is decoded by a small borrowing serde
//! struct, so the server never is the bottleneck (its CPU per call is in the table).
//!
//! # Scenarios
//! | name | calls in flight | result text |
//! |---|---|---|
//! | `sequential` | 1 | `hello` |
//! | `in_flight_16` | 16 | `hello` |
//! | `in_flight_64` | 64 | `hello` |
//! | `result_64k` | 1 | `hello` + 65 536 bytes (`pad: 65536`) |
//!
//! Each runs on a current-thread and on a multi-thread tokio runtime. The calls are made by one
//! task spawned on the runtime, keeping N futures in flight in a `FuturesUnordered` (a closed
//! loop: a call starts as soon as one ends), exactly as in `benches/stdio.rs`.
//!
//! kaged-mcp calls go through the standard stack as the registry dispatches them:
//! `stack.clone().oneshot(call)` on `StackBuilder::new(StackSettings::new("bench")).build(client)`
//! (Trace → Truncate (64 KiB cap: the 64 KiB result is cut to the cap and the marker appended)
//! → Timeout → Limit → Retry) over `McpClient` on `StreamableHttpTransport`. rmcp calls are
//! `peer.call_tool(..)`. Both build the call's arguments (`{"message": "hello"[, "pad": n]}`)
//! per call; the bare client clones a pre-built body.
//!
//! # Two phases
//! 1. **criterion**: one benchmark per runtime, scenario and client; one iteration is N calls,
//!    so criterion's throughput is calls/s.
//! 2. **the ratio table**, measured apart in interleaved rounds: per placement, runtime and
//!    scenario, `support::ROUNDS` (10) rounds of about `support::ROUND_TIME` (200 ms) per client, the order of the three
//!    clients changing every round (the six orders in turn). It prints, per client, the median
//!    calls/s over the rounds, the median latency over every call, and the CPU time per call
//!    of the client (this process, all threads but the server's, from
//!    `/proc/self/task/*/schedstat`) and of the server (its thread), then the ratios of the
//!    medians kaged/bare, rmcp/bare and kaged/rmcp, and the issue's target for kaged/bare.
//!    `KAGED_HTTP_ROUNDS=<n>` sets the number of rounds (0 skips the table);
//!    `KAGED_HTTP_ONLY=<text>` measures only the rows whose `placement/runtime/scenario`
//!    contains `<text>`. The table is not measured in test mode (`cargo test --benches`) nor
//!    with `--profile-time`.
//!
//! # Placement
//! As in `benches/stdio.rs` (see its docs and `benches/README.md`): `shared_core` pins the
//! process (its runtime's threads and, by inheritance, the server's thread) to one CPU, so a
//! wake-up is a context switch and the figures measure the work per call; `free` lets the
//! scheduler place the threads (the ratio table only). The targets are judged on `shared_core`.
//! `KAGED_HTTP_PLACEMENT=shared_core|free|both` (default `both`).
//!
//! Profile one client with criterion's filter and `--profile-time` (no table then):
//! `KAGED_HTTP_PLACEMENT=shared_core target/release/deps/http-<hash> --bench --profile-time 5
//! current_thread/sequential/kaged`; or count a fixed number of calls of one client with
//! `KAGED_HTTP_PROFILE="kaged multi_thread sequential 100000"` (see [`profile_mode`]).
//!
//! Run with `cargo bench --bench http -- --warm-up-time 1 --measurement-time 2`.

#[path = "support/mod.rs"]
mod support;

use support::{median_f64, median_u64, micros, round_calls, table_rounds, Flavor, Placement};

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput};
use futures::stream::{FuturesUnordered, StreamExt};
use http::header::{HeaderName, HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kaged_mcp::client::{ClientOptions, McpClient, ToolCall};
use kaged_mcp::stack::{StackBuilder, StackSettings, ToolService};
use kaged_mcp::transport::streamable_http::{StreamableHttpConfig, StreamableHttpTransport};
use nix::sched::{sched_getaffinity, CpuSet};
use nix::unistd::Pid;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::runtime::Runtime;
use tower::ServiceExt as _;

/// The text every client sends.
const MESSAGE: &str = "hello";
/// rmcp's `max_concurrent_requests`: at least the most calls any scenario keeps in flight.
const RMCP_MAX_CONCURRENT: usize = 64;
/// The protocol revision every client speaks (the server answers `initialize` with it).
const PROTOCOL: &str = "2025-11-25";

/// One scenario of the benchmark.
#[derive(Debug, Clone, Copy)]
struct Scenario {
    name: &'static str,
    in_flight: usize,
    pad: u64,
    /// The kaged/bare calls-per-second ratio the issue asks for.
    target: f64,
    /// The same target as a kaged/rmcp ratio, as the issue derived it from its own rmcp figures.
    target_vs_rmcp: f64,
}

const SCENARIOS: [Scenario; 4] = [
    Scenario {
        name: "sequential",
        in_flight: 1,
        pad: 0,
        target: 0.6,
        target_vs_rmcp: 2.0,
    },
    Scenario {
        name: "in_flight_16",
        in_flight: 16,
        pad: 0,
        target: 0.5,
        target_vs_rmcp: 4.5,
    },
    Scenario {
        name: "in_flight_64",
        in_flight: 64,
        pad: 0,
        target: 0.5,
        target_vs_rmcp: 4.5,
    },
    Scenario {
        name: "result_64k",
        in_flight: 1,
        pad: 65_536,
        target: 0.6,
        target_vs_rmcp: 2.4,
    },
];

// --- the server --------------------------------------------------------------------------------

/// What the server reads of a JSON-RPC message: borrowed, nothing unescaped.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a str>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    arguments: Option<EchoArgs<'a>>,
}

#[derive(Deserialize)]
struct EchoArgs<'a> {
    /// The JSON string as sent, quotes and escapes included.
    #[serde(borrow)]
    message: &'a RawValue,
    #[serde(default)]
    pad: usize,
}

/// The server's shared state.
struct ServerState {
    /// `x` bytes the `pad` argument draws from.
    padding: Vec<u8>,
    /// While set, the body of every `tools/call` is kept in `captured` (for the check).
    capture: AtomicBool,
    captured: Mutex<Vec<Bytes>>,
}

const INITIALIZE_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"bench","version":"1"}}"#;
const TOOLS_RESULT: &str = r#"{"tools":[{"name":"echo","description":"Echo the message back, followed by `pad` bytes","inputSchema":{"type":"object","properties":{"message":{"type":"string"},"pad":{"type":"integer"}},"required":["message"]}}]}"#;
/// The most `pad` the server honours.
const MAX_PAD: usize = 1 << 20;

type ServerResponse = Response<Full<Bytes>>;

fn empty(status: StatusCode) -> ServerResponse {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn json_response(body: Vec<u8>) -> ServerResponse {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}`.
fn result_body(id: &RawValue, result: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + id.get().len() + result.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.get().as_bytes());
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result.as_bytes());
    out.push(b'}');
    out
}

/// The answer to `tools/call` `echo`: one text block, the message's JSON string with `pad`
/// bytes `x` before its closing quote.
fn echo_body(id: &RawValue, args: &EchoArgs<'_>, padding: &[u8]) -> Vec<u8> {
    let message = args.message.get().as_bytes();
    let pad = &padding[..args.pad.min(padding.len())];
    let mut out = Vec::with_capacity(80 + id.get().len() + message.len() + pad.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.get().as_bytes());
    out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    out.extend_from_slice(&message[..message.len() - 1]);
    out.extend_from_slice(pad);
    out.extend_from_slice(br#""}]}}"#);
    out
}

fn error_body(id: &RawValue, code: i32, message: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{code},"message":"{message}"}}}}"#,
        id.get()
    )
    .into_bytes()
}

/// One POSTed message in, one answer out.
fn answer(state: &ServerState, body: &Bytes) -> ServerResponse {
    let Ok(message) = serde_json::from_slice::<Message<'_>>(body) else {
        return empty(StatusCode::BAD_REQUEST);
    };
    let (Some(method), Some(id)) = (message.method, message.id) else {
        // A notification or an answer.
        return empty(StatusCode::ACCEPTED);
    };
    match method {
        "tools/call" => {
            if state.capture.load(Ordering::Relaxed) {
                if let Ok(mut captured) = state.captured.lock() {
                    captured.push(body.clone());
                }
            }
            match message.params.and_then(|p| p.arguments) {
                Some(args) if args.message.get().starts_with('"') => {
                    json_response(echo_body(id, &args, &state.padding))
                }
                _ => json_response(error_body(id, -32602, "echo needs a string `message`")),
            }
        }
        "initialize" => json_response(result_body(id, INITIALIZE_RESULT)),
        "tools/list" => json_response(result_body(id, TOOLS_RESULT)),
        "ping" => json_response(result_body(id, "{}")),
        _ => json_response(error_body(id, -32601, "method not found")),
    }
}

async fn serve_request(
    state: Arc<ServerState>,
    req: Request<Incoming>,
) -> Result<ServerResponse, Infallible> {
    if req.uri().path() != "/mcp" {
        return Ok(empty(StatusCode::NOT_FOUND));
    }
    if req.method() != Method::POST {
        let mut response = empty(StatusCode::METHOD_NOT_ALLOWED);
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return Ok(response);
    }
    let body = match req.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return Ok(empty(StatusCode::BAD_REQUEST)),
    };
    Ok(answer(&state, &body))
}

/// The server: its thread, address and state.
struct Server {
    addr: SocketAddr,
    /// The thread id of the server's thread (its CPU time is the server's).
    tid: u32,
    state: Arc<ServerState>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Starts the server on a thread of its own (which inherits the caller's CPU affinity).
    fn start() -> Server {
        let state = Arc::new(ServerState {
            padding: vec![b'x'; MAX_PAD],
            capture: AtomicBool::new(false),
            captured: Mutex::new(Vec::new()),
        });
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind a local listener");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the listener's address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("bench-server".into())
            .spawn(move || {
                let tid = std::fs::read_link("/proc/thread-self")
                    .ok()
                    .and_then(|p| p.file_name()?.to_str()?.parse::<u32>().ok())
                    .unwrap_or(0);
                tid_tx.send(tid).expect("the benchmark waits for the tid");
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the server's runtime");
                rt.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                    let accept = async {
                        loop {
                            let Ok((stream, _)) = listener.accept().await else {
                                continue;
                            };
                            let _ = stream.set_nodelay(true);
                            let state = Arc::clone(&shared);
                            tokio::spawn(async move {
                                let service =
                                    service_fn(move |req| serve_request(Arc::clone(&state), req));
                                let _ = http1::Builder::new()
                                    .keep_alive(true)
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            });
                        }
                    };
                    tokio::select! {
                        () = accept => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime ends every connection task.
            })
            .expect("the server's thread");
        let tid = tid_rx.recv().expect("the server's tid");
        Server {
            addr,
            tid,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn cpu_ns(&self) -> u64 {
        schedstat_ns(&format!("/proc/self/task/{}/schedstat", self.tid))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

// --- the three clients -------------------------------------------------------------------------

/// The arguments of one `echo` call.
fn arguments(pad: u64) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("message".into(), json!(MESSAGE));
    if pad > 0 {
        args.insert("pad".into(), json!(pad));
    }
    args
}

/// kaged-mcp: the full default stack over an `McpClient` on `url`, started.
async fn kaged(url: &str) -> (ToolService, McpClient) {
    let config = StreamableHttpConfig::new(url.parse().expect("the server's url"));
    let transport = StreamableHttpTransport::new(config).expect("a valid transport");
    let client = McpClient::new("bench", transport, ClientOptions::default());
    client
        .start()
        .await
        .expect("kaged-mcp initializes the server");
    (
        StackBuilder::new(StackSettings::new("bench")).build(client.clone()),
        client,
    )
}

async fn kaged_call(stack: &ToolService, pad: u64) -> usize {
    let call = ToolCall::new("echo").with_arguments(arguments(pad));
    let result = stack
        .clone()
        .oneshot(call)
        .await
        .expect("kaged-mcp: tools/call succeeds");
    result.content.len()
}

/// rmcp: its Streamable HTTP client (reqwest) on `url`, initialized with protocol 2025-11-25.
async fn rmcp(url: &str) -> RunningService<RoleClient, ClientConfig> {
    let config = StreamableHttpClientTransportConfig::with_uri(url)
        .max_concurrent_requests(RMCP_MAX_CONCURRENT);
    let transport = StreamableHttpClientTransport::from_config(config);
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("rmcp-bench", "0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
    .serve(transport)
    .await
    .expect("rmcp initializes the server")
}

async fn rmcp_call(peer: &Peer<RoleClient>, pad: u64) -> usize {
    let params = CallToolRequestParams::new("echo").with_arguments(arguments(pad));
    let result = peer
        .call_tool(params)
        .await
        .expect("rmcp: tools/call succeeds");
    result.content.len()
}

/// The bare client: hyper-util's pooled client (HTTP/1.1, keep-alive, `TCP_NODELAY`) and what it
/// POSTs.
#[derive(Clone)]
struct Bare {
    client: Client<HttpConnector, Full<Bytes>>,
    uri: Uri,
}

static ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
static JSON: HeaderValue = HeaderValue::from_static("application/json");
static PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
static PROTOCOL_VALUE: HeaderValue = HeaderValue::from_static(PROTOCOL);

impl Bare {
    fn new(url: &str) -> Self {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(http);
        Self {
            client,
            uri: url.parse().expect("the server's uri"),
        }
    }

    /// The body the bare client POSTs: what kaged-mcp writes for `echo` with
    /// [`arguments`]`(pad)` (checked byte for byte by [`check_answers`]), as request 2.
    fn body(pad: u64) -> Bytes {
        Self::body_with_id(2, pad)
    }

    fn body_with_id(id: u64, pad: u64) -> Bytes {
        let mut out = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":"#
        )
        .into_bytes();
        serde_json::to_writer(&mut out, &arguments(pad)).expect("a JSON body");
        out.extend_from_slice(b"}}");
        Bytes::from(out)
    }

    async fn call(&self, body: Bytes) -> Bytes {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.uri.clone();
        let headers = req.headers_mut();
        headers.insert(ACCEPT, ACCEPT_BOTH.clone());
        headers.insert(CONTENT_TYPE, JSON.clone());
        headers.insert(PROTOCOL_VERSION.clone(), PROTOCOL_VALUE.clone());
        let response = self
            .client
            .request(req)
            .await
            .expect("bare: the POST succeeds");
        assert_eq!(response.status(), StatusCode::OK, "bare: the POST's status");
        response
            .into_body()
            .collect()
            .await
            .expect("bare: the whole body")
            .to_bytes()
    }
}

async fn bare_call(bare: &Bare, body: Bytes) -> usize {
    bare.call(body).await.len()
}

/// Checks once that the three clients get the echo back and that the bare client's body is the
/// one kaged-mcp sends; prints what each sent and received.
async fn check_answers(clients: &Clients, server: &Server, pad: u64, verbose: bool) {
    server.state.capture.store(true, Ordering::Relaxed);
    let call = ToolCall::new("echo").with_arguments(arguments(pad));
    let k = clients
        .stack
        .clone()
        .oneshot(call)
        .await
        .expect("kaged-mcp answer");
    let k_text = k.joined_text();
    let params = CallToolRequestParams::new("echo").with_arguments(arguments(pad));
    let r = clients.peer.call_tool(params).await.expect("rmcp answer");
    let r_text = r.content[0].as_text().expect("a text block").text.clone();
    let bare_body = Bare::body(pad);
    let b = clients.bare.call(bare_body.clone()).await;
    server.state.capture.store(false, Ordering::Relaxed);
    let captured = std::mem::take(&mut *server.state.captured.lock().expect("the capture"));
    assert!(k_text.starts_with(MESSAGE), "{k_text:.40}");
    assert!(r_text.starts_with(MESSAGE), "{r_text:.40}");
    assert!(
        b.starts_with(
            br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hello"#
        ),
        "{:.80}",
        String::from_utf8_lossy(&b)
    );
    // kaged-mcp's request, rmcp's, the bare client's.
    if let [kb, rb, bb] = captured.as_slice() {
        let shape = |b: &Bytes| {
            let v: Value = serde_json::from_slice(b).expect("a JSON request");
            (v["method"].clone(), v["params"]["arguments"].clone())
        };
        assert_eq!(shape(rb), shape(bb), "the bare body is rmcp's call");
        assert_eq!(bb, &bare_body);
        let kaged_id = serde_json::from_slice::<Value>(kb).expect("a JSON request")["id"]
            .as_u64()
            .expect("a numeric id");
        assert_eq!(
            kb,
            &Bare::body_with_id(kaged_id, pad),
            "the bare body is kaged-mcp's, byte for byte but the id"
        );
        if !verbose {
            return;
        }
        println!(
            "pad {pad}: requests: kaged-mcp {} bytes {}, rmcp {} bytes {}, bare {} bytes {}",
            kb.len(),
            String::from_utf8_lossy(kb),
            rb.len(),
            String::from_utf8_lossy(rb),
            bb.len(),
            String::from_utf8_lossy(bb),
        );
    } else {
        panic!("the server saw {} tools/call, not 3", captured.len());
    }
    if !verbose {
        return;
    }
    println!(
        "pad {pad}: kaged-mcp received {} bytes of text (truncated: {}), rmcp {} bytes, \
         bare a {}-byte body",
        k_text.len(),
        k.truncated,
        r_text.len(),
        b.len()
    );
}

// --- the closed loop ---------------------------------------------------------------------------

/// Makes `calls` calls with `in_flight` of them running at a time; returns the elapsed time
/// and the latency of each call in nanoseconds.
async fn closed_loop<F, Fut>(calls: u64, in_flight: usize, mut call: F) -> (Duration, Vec<u64>)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = usize>,
{
    let mut latencies = Vec::with_capacity(usize::try_from(calls).unwrap_or(0));
    let timed = |fut: Fut| {
        let start = Instant::now();
        async move {
            std::hint::black_box(fut.await);
            u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }
    };
    let start = Instant::now();
    if in_flight <= 1 {
        for _ in 0..calls {
            latencies.push(timed(call()).await);
        }
        return (start.elapsed(), latencies);
    }
    let mut running = FuturesUnordered::new();
    let mut issued = 0;
    while issued < calls && running.len() < in_flight {
        running.push(timed(call()));
        issued += 1;
    }
    while let Some(latency) = running.next().await {
        latencies.push(latency);
        if issued < calls {
            running.push(timed(call()));
            issued += 1;
        }
    }
    (start.elapsed(), latencies)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Kaged,
    Rmcp,
    Bare,
}

const WHICH: [Which; 3] = [Which::Kaged, Which::Rmcp, Which::Bare];

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Kaged => "kaged",
            Which::Rmcp => "rmcp",
            Which::Bare => "bare",
        }
    }
}

/// The clients of one runtime.
struct Clients {
    stack: ToolService,
    kaged: McpClient,
    peer: Peer<RoleClient>,
    bare: Bare,
}

impl Clients {
    /// Runs `calls` calls of `scenario` on a task of `rt`, from outside the runtime.
    fn run(
        &self,
        rt: &Runtime,
        which: Which,
        scenario: Scenario,
        calls: u64,
    ) -> (Duration, Vec<u64>) {
        rt.block_on(self.run_async(which, scenario, calls))
    }

    /// Runs `calls` calls of `scenario` on a task of its own, as an agent's task would.
    fn run_async(
        &self,
        which: Which,
        scenario: Scenario,
        calls: u64,
    ) -> impl Future<Output = (Duration, Vec<u64>)> + 'static {
        let (n, pad) = (scenario.in_flight, scenario.pad);
        let stack = self.stack.clone();
        let peer = self.peer.clone();
        let bare = self.bare.clone();
        async move {
            let task =
                match which {
                    Which::Kaged => tokio::spawn(async move {
                        closed_loop(calls, n, || kaged_call(&stack, pad)).await
                    }),
                    Which::Rmcp => tokio::spawn(async move {
                        closed_loop(calls, n, || rmcp_call(&peer, pad)).await
                    }),
                    Which::Bare => tokio::spawn(async move {
                        let body = Bare::body(pad);
                        closed_loop(calls, n, || bare_call(&bare, body.clone())).await
                    }),
                };
            task.await.expect("the benchmark task")
        }
    }
}

// --- phase 1: criterion ------------------------------------------------------------------------

fn criterion_phase(c: &mut Criterion, rt: &Runtime, clients: &Clients, flavor: Flavor) {
    for scenario in SCENARIOS {
        let mut group = c.benchmark_group(format!("{}/{}", flavor.name(), scenario.name));
        let n = scenario.in_flight as u64;
        group.throughput(Throughput::Elements(n));
        for which in WHICH {
            group.bench_function(which.name(), |b| {
                b.to_async(rt).iter_custom(|iters| {
                    let run = clients.run_async(which, scenario, iters * n);
                    async move { run.await.0 }
                });
            });
        }
        group.finish();
    }
}

// --- phase 2: the ratio table ------------------------------------------------------------------

/// What one client measured in the rounds of one runtime and scenario.
#[derive(Debug)]
struct Measured {
    /// Median calls/s over the rounds.
    rate: f64,
    /// Median latency over every call.
    p50: Duration,
    /// Median CPU time per call of this process, the server's thread excepted.
    client_cpu: Duration,
    /// Median CPU time per call of the server's thread.
    server_cpu: Duration,
}

/// One line of the ratio table: kaged, rmcp, bare.
#[derive(Debug)]
struct Row {
    placement: Placement,
    flavor: Flavor,
    scenario: Scenario,
    measured: [Measured; 3],
}

/// The CPU time in a `schedstat` file, in nanoseconds; 0 when unreadable.
fn schedstat_ns(path: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0)
}

/// CPU time so far of every thread of this process, in nanoseconds.
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .map(|task| schedstat_ns(&task.path().join("schedstat").to_string_lossy()))
        .sum()
}

/// The six orders of the three clients, one per round in turn.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [2, 1, 0],
    [1, 2, 0],
    [0, 2, 1],
    [2, 0, 1],
    [1, 0, 2],
];

fn table_phase(
    rt: &Runtime,
    clients: &Clients,
    server: &Server,
    placement: Placement,
    flavor: Flavor,
    rounds: usize,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let only = std::env::var("KAGED_HTTP_ONLY").unwrap_or_default();
    for scenario in SCENARIOS {
        let label = format!("{}/{}/{}", placement.name(), flavor.name(), scenario.name);
        if !label.contains(&only) {
            continue;
        }
        // Warm up and size the rounds: one short run each.
        let size = WHICH.map(|w| {
            let calls = 20 * scenario.in_flight as u64;
            let (elapsed, _) = clients.run(rt, w, scenario, calls);
            round_calls(calls as f64 / elapsed.as_secs_f64(), scenario.in_flight)
        });
        let mut rates: [Vec<f64>; 3] = Default::default();
        let mut latencies: [Vec<u64>; 3] = Default::default();
        let mut client_cpu: [Vec<u64>; 3] = Default::default();
        let mut server_cpu: [Vec<u64>; 3] = Default::default();
        for round in 0..rounds {
            for i in ORDERS[round % ORDERS.len()] {
                let (all_before, server_before) = (process_cpu_ns(), server.cpu_ns());
                let (elapsed, lat) = clients.run(rt, WHICH[i], scenario, size[i]);
                let (all_after, server_after) = (process_cpu_ns(), server.cpu_ns());
                let server_ns = server_after.saturating_sub(server_before);
                let client_ns = all_after
                    .saturating_sub(all_before)
                    .saturating_sub(server_ns);
                rates[i].push(size[i] as f64 / elapsed.as_secs_f64());
                latencies[i].extend(lat);
                client_cpu[i].push(client_ns / size[i]);
                server_cpu[i].push(server_ns / size[i]);
            }
        }
        let measured: [Measured; 3] = std::array::from_fn(|i| Measured {
            rate: median_f64(&mut rates[i]),
            p50: Duration::from_nanos(median_u64(&mut latencies[i])),
            client_cpu: Duration::from_nanos(median_u64(&mut client_cpu[i])),
            server_cpu: Duration::from_nanos(median_u64(&mut server_cpu[i])),
        });
        eprintln!(
            "table: {label}: kaged {:.0} calls/s, rmcp {:.0} calls/s, bare {:.0} calls/s",
            measured[0].rate, measured[1].rate, measured[2].rate
        );
        rows.push(Row {
            placement,
            flavor,
            scenario,
            measured,
        });
    }
    rows
}

fn print_table(rows: &[Row]) {
    println!();
    println!("Calls/s: median over the rounds; p50: median latency of one call; CPU: client (this");
    println!(
        "process but the server's thread) / server (its thread), per call. Ratios of calls/s;"
    );
    println!("target: kaged/bare (the issue's; as kaged/rmcp in brackets).");
    println!();
    println!(
        "| placement | runtime | scenario | kaged calls/s | kaged p50 | kaged CPU client / server \
         | rmcp calls/s | rmcp p50 | rmcp CPU client / server | bare calls/s | bare p50 \
         | bare CPU client / server | kaged/bare | rmcp/bare | kaged/rmcp | target | met |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for row in rows {
        let [k, r, b] = &row.measured;
        let kb = k.rate / b.rate;
        let cell = |m: &Measured| {
            format!(
                "{:.0} | {:.1} µs | {:.2} / {:.2} µs",
                m.rate,
                micros(m.p50),
                micros(m.client_cpu),
                micros(m.server_cpu)
            )
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | ≥ {:.1} (≥ {:.1}) | {} |",
            row.placement.name(),
            row.flavor.name(),
            row.scenario.name,
            cell(k),
            cell(r),
            cell(b),
            kb,
            r.rate / b.rate,
            k.rate / r.rate,
            row.scenario.target,
            row.scenario.target_vs_rmcp,
            if kb >= row.scenario.target {
                "yes"
            } else {
                "no"
            },
        );
    }
}

/// `KAGED_HTTP_PROFILE="<client> <runtime> <scenario> <calls>"`: runs that many calls of one
/// client alone in the first placement chosen (after 1 000 calls of warm-up), prints its
/// calls/s and CPU per call, and exits; for `perf`, `strace -c` or `valgrind --tool=callgrind`.
fn profile_mode(spec: &str, all_cpus: &CpuSet) {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let [client, runtime, scenario, calls] = words.as_slice() else {
        panic!("KAGED_HTTP_PROFILE=\"<kaged|rmcp|bare> <current_thread|multi_thread> <scenario> <calls>\"");
    };
    let which = *WHICH
        .iter()
        .find(|w| w.name() == *client)
        .expect("a client: kaged, rmcp or bare");
    let flavor = [Flavor::CurrentThread, Flavor::MultiThread]
        .into_iter()
        .find(|f| f.name() == *runtime)
        .expect("a runtime: current_thread or multi_thread");
    let scenario = SCENARIOS
        .into_iter()
        .find(|s| s.name == *scenario)
        .expect("a scenario");
    let n = scenario.in_flight as u64;
    let calls: u64 = calls.parse::<u64>().expect("a number of calls") / n * n;
    let placement = Placement::chosen("KAGED_HTTP")[0];
    placement.apply(all_cpus);
    let server = Server::start();
    let rt = flavor.runtime();
    let url = server.url();
    let ((stack, kaged_client), rmcp_service) =
        rt.block_on(async { (kaged(&url).await, rmcp(&url).await) });
    let clients = Clients {
        stack,
        kaged: kaged_client,
        peer: rmcp_service.peer().clone(),
        bare: Bare::new(&url),
    };
    clients.run(&rt, which, scenario, 1000 / n * n);
    let (all_before, server_before) = (process_cpu_ns(), server.cpu_ns());
    let (elapsed, _) = clients.run(&rt, which, scenario, calls);
    let (all_after, server_after) = (process_cpu_ns(), server.cpu_ns());
    let server_ns = server_after - server_before;
    let client_ns = (all_after - all_before).saturating_sub(server_ns);
    println!(
        "profile {}/{}/{}/{}: {calls} calls in {elapsed:.2?}, {:.0} calls/s; CPU per call: \
         client {:.2} µs, server {:.2} µs",
        placement.name(),
        flavor.name(),
        scenario.name,
        which.name(),
        calls as f64 / elapsed.as_secs_f64(),
        client_ns as f64 / calls as f64 / 1e3,
        server_ns as f64 / calls as f64 / 1e3,
    );
    rt.block_on(async {
        clients.kaged.shutdown().await;
        drop(clients);
        let _ = rmcp_service.cancel().await;
    });
}

fn main() {
    if let Ok(spec) = std::env::var("KAGED_HTTP_PROFILE") {
        let all_cpus = sched_getaffinity(Pid::from_raw(0)).expect("sched_getaffinity");
        return profile_mode(&spec, &all_cpus);
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        // Plotting took ~5 s per benchmark here, longer than measuring it.
        .without_plots()
        .configure_from_args();
    let rounds = table_rounds("KAGED_HTTP");
    let all_cpus = sched_getaffinity(Pid::from_raw(0)).expect("sched_getaffinity");
    let mut rows = Vec::new();
    for (i, placement) in Placement::chosen("KAGED_HTTP").into_iter().enumerate() {
        placement.apply(&all_cpus);
        for flavor in [Flavor::CurrentThread, Flavor::MultiThread] {
            // Started after `apply`, so the server's thread and the runtime's threads inherit
            // the placement.
            let server = Server::start();
            let rt = flavor.runtime();
            let url = server.url();
            let ((stack, kaged_client), rmcp_service) =
                rt.block_on(async { (kaged(&url).await, rmcp(&url).await) });
            let clients = Clients {
                stack,
                kaged: kaged_client,
                peer: rmcp_service.peer().clone(),
                bare: Bare::new(&url),
            };
            if i == 0 {
                for scenario in SCENARIOS {
                    rt.block_on(check_answers(
                        &clients,
                        &server,
                        scenario.pad,
                        flavor == Flavor::CurrentThread,
                    ));
                }
                if let Some(info) = rmcp_service.peer().peer_info() {
                    println!(
                        "rmcp negotiated {:?}; kaged-mcp {:?}",
                        info.protocol_version,
                        clients.kaged.protocol_version()
                    );
                }
                criterion_phase(&mut c, &rt, &clients, flavor);
            }
            if rounds > 0 {
                rows.extend(table_phase(
                    &rt, &clients, &server, placement, flavor, rounds,
                ));
            }
            rt.block_on(async {
                clients.kaged.shutdown().await;
                drop(clients);
                let _ = rmcp_service.cancel().await;
            });
            drop(rt);
            drop(server);
        }
    }
    // Give the main thread back every CPU it started with.
    Placement::Free.apply(&all_cpus);
    c.final_summary();
    if !rows.is_empty() {
        print_table(&rows);
    }
}
