//! A minimal JSON-RPC session straight over a [`Transport`], for the SSE transport's own tests.
//!
//! [`Recorder`] is the [`InboundHandler`]: it records frames, oversize reports and the close
//! reason, answers the server's `ping` with `{}` and every other server request with -32601
//! (from inside `on_frame`, as the session does). [`Session`] sends requests and waits for their
//! answers. Waits are bounded by [`PATIENCE`], a guard against a hung test, not a timing check.
#![allow(dead_code)] // each test crate uses a different part

pub(crate) mod mini;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kaged_mcp::protocol::RequestId;
use kaged_mcp::transport::{
    CloseReason, ConnectContext, Connection, InboundHandler, Outbound, OversizeFrame, RequestHead,
    SendError, SendFailure, Transport, TransportError,
};
use serde_json::{json, Value};
use tokio::sync::watch;

/// The longest any wait here lasts before the test fails (a hang guard, not an assertion).
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// An oversize report as received.
#[derive(Debug, Clone)]
pub(crate) struct Oversize {
    pub(crate) head: Vec<u8>,
    pub(crate) tail: Vec<u8>,
    pub(crate) len: u64,
    pub(crate) limit: usize,
}

#[derive(Default)]
struct State {
    outbound: Option<Arc<dyn Outbound>>,
    opened: usize,
    frames: Vec<Value>,
    server_requests: Vec<Value>,
    oversize: Vec<Oversize>,
    closed: Vec<CloseReason>,
    frame_after_close: bool,
}

/// The handler: records everything, answers server requests.
pub(crate) struct Recorder {
    state: Mutex<State>,
    changed: watch::Sender<u64>,
}

impl Recorder {
    fn new() -> Self {
        Self {
            state: Mutex::new(State::default()),
            changed: watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Waits until `check` finds something, at most [`PATIENCE`].
    async fn wait_for<T>(&self, what: &str, mut check: impl FnMut(&State) -> Option<T>) -> T {
        let mut rx = self.changed.subscribe();
        let wait = async {
            loop {
                if let Some(found) = check(&self.lock()) {
                    return found;
                }
                rx.changed().await.expect("the recorder lives");
            }
        };
        match tokio::time::timeout(PATIENCE, wait).await {
            Ok(found) => found,
            Err(_) => panic!(
                "waited {PATIENCE:?} for {what}; state: {:?}",
                self.summary()
            ),
        }
    }

    fn summary(&self) -> String {
        let s = self.lock();
        format!(
            "opened {}, {} frames, {} server requests, {} oversize, closed {:?}",
            s.opened,
            s.frames.len(),
            s.server_requests.len(),
            s.oversize.len(),
            s.closed.iter().map(|r| &r.message).collect::<Vec<_>>()
        )
    }

    /// The server requests answered so far.
    pub(crate) fn server_requests(&self) -> Vec<Value> {
        self.lock().server_requests.clone()
    }

    /// How many times `on_closed` was called, and whether a frame came after it.
    pub(crate) fn close_calls(&self) -> (usize, bool) {
        let s = self.lock();
        (s.closed.len(), s.frame_after_close)
    }

    /// The frames received that are not server requests.
    pub(crate) fn frames(&self) -> Vec<Value> {
        self.lock().frames.clone()
    }

    /// How many times `on_open` was called.
    pub(crate) fn opened(&self) -> usize {
        self.lock().opened
    }
}

impl InboundHandler for Recorder {
    fn on_open(&self, outbound: Arc<dyn Outbound>) {
        let mut s = self.lock();
        s.outbound = Some(outbound);
        s.opened += 1;
        drop(s);
        self.bump();
    }

    fn on_frame(&self, frame: &[u8]) {
        let value: Value =
            serde_json::from_slice(frame).unwrap_or_else(|e| json!({ "not_json": e.to_string() }));
        let mut s = self.lock();
        if !s.closed.is_empty() {
            s.frame_after_close = true;
        }
        let is_request = value.get("method").is_some() && value.get("id").is_some();
        if is_request {
            s.server_requests.push(value.clone());
            let outbound = s.outbound.clone();
            drop(s);
            let answer = if value["method"] == "ping" {
                json!({ "jsonrpc": "2.0", "id": value["id"], "result": {} })
            } else {
                json!({ "jsonrpc": "2.0", "id": value["id"],
                        "error": { "code": -32601, "message": "Method not found" } })
            };
            if let Some(out) = outbound {
                let _ = out.send(answer.to_string().as_bytes());
            }
        } else {
            s.frames.push(value);
            drop(s);
        }
        self.bump();
    }

    fn on_oversize(&self, frame: OversizeFrame<'_>) {
        self.lock().oversize.push(Oversize {
            head: frame.head.to_vec(),
            tail: frame.tail.to_vec(),
            len: frame.len,
            limit: frame.limit,
        });
        self.bump();
    }

    /// Recorded as a frame `{"id": …, "send_failed": {"message", "not_delivered"}}`, so
    /// [`Session::request`] returns it as the request's outcome.
    fn on_send_failed(&self, id: &RequestId, failure: SendFailure) {
        let mut s = self.lock();
        if !s.closed.is_empty() {
            s.frame_after_close = true;
        }
        s.frames.push(json!({
            "id": id,
            "send_failed": {
                "message": failure.message(),
                "not_delivered": failure.not_delivered(),
                "retryable": failure.is_retryable(),
            },
        }));
        drop(s);
        self.bump();
    }

    fn on_closed(&self, reason: CloseReason) {
        self.lock().closed.push(reason);
        self.bump();
    }
}

/// A session over one connection.
pub(crate) struct Session {
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) connection: Option<Box<dyn Connection>>,
    next_id: AtomicI64,
}

impl Session {
    /// Connects `transport` as `server` with `frame_limit`.
    pub(crate) async fn connect(
        transport: &dyn Transport,
        server: &str,
        frame_limit: usize,
    ) -> Result<Session, TransportError> {
        let recorder = Arc::new(Recorder::new());
        let ctx = ConnectContext::new(
            Arc::from(server),
            frame_limit,
            Arc::clone(&recorder) as Arc<dyn InboundHandler>,
        );
        let connection = transport.connect(ctx).await?;
        assert_eq!(
            recorder.opened(),
            1,
            "on_open is called once, before connect resolves"
        );
        Ok(Session {
            recorder,
            connection: Some(connection),
            next_id: AtomicI64::new(0),
        })
    }

    /// The connection's sending half.
    pub(crate) fn outbound(&self) -> Arc<dyn Outbound> {
        self.recorder
            .lock()
            .outbound
            .clone()
            .expect("on_open gave an outbound")
    }

    /// Sends one message: as a request when it has an `id` and a `method` (the session says
    /// what each frame is; the transport never looks), else as a notification or an answer.
    pub(crate) fn send(&self, message: &Value) -> Result<(), SendError> {
        let out = self
            .recorder
            .lock()
            .outbound
            .clone()
            .expect("on_open gave an outbound");
        let bytes = message.to_string();
        let mut write = |buf: &mut Vec<u8>| {
            buf.extend_from_slice(bytes.as_bytes());
            Ok(())
        };
        match (message["method"].as_str(), message.get("id")) {
            (Some(method), Some(id)) => {
                let id: RequestId = serde_json::from_value(id.clone()).expect("a request id");
                out.send_request(&id, &RequestHead::new(method), &mut write)
            }
            _ => out.send_with(&mut write),
        }
    }

    /// Sends a request and waits for the message answering it (`result` or `error`).
    pub(crate) async fn request(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .unwrap_or_else(|e| panic!("sending {method}: {e}"));
        self.answer(id, method).await
    }

    /// Waits for the answer to request `id`.
    pub(crate) async fn answer(&self, id: i64, what: &str) -> Value {
        self.recorder
            .wait_for(&format!("the answer to {what} (id {id})"), |s| {
                s.frames
                    .iter()
                    .find(|f| f.get("id") == Some(&json!(id)) && f.get("method").is_none())
                    .cloned()
            })
            .await
    }

    /// Waits for a received frame that `matches`.
    pub(crate) async fn wait_frame(&self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        self.recorder
            .wait_for(what, |s| s.frames.iter().find(|f| matches(f)).cloned())
            .await
    }

    /// The next request id this session will use.
    pub(crate) fn peek_id(&self) -> i64 {
        self.next_id.load(Ordering::Relaxed)
    }

    /// `initialize` then `notifications/initialized`; returns the `initialize` result.
    pub(crate) async fn initialize(&self) -> Value {
        let answer = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2024-11-05",
                    "capabilities": {},
                    "clientInfo": { "name": "kaged-mcp-sse-tests", "version": "0" }
                }),
            )
            .await;
        let result = answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("initialize failed: {answer}"));
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .expect("send initialized");
        result
    }

    /// `tools/list` (one page); returns the tool names.
    pub(crate) async fn tool_names(&self) -> Vec<String> {
        let answer = self.request("tools/list", json!({})).await;
        answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list failed: {answer}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// `tools/call`; returns the whole answer message.
    pub(crate) async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }

    /// The text of the first content block of a `tools/call` answer.
    pub(crate) fn text(answer: &Value) -> String {
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {answer}"))
            .to_owned()
    }

    /// Waits until the connection reports closed.
    pub(crate) async fn closed(&self) -> CloseReason {
        self.recorder
            .wait_for("on_closed", |s| s.closed.first().cloned())
            .await
    }

    /// Waits for the `n`th oversize report (from 1).
    pub(crate) async fn oversize(&self, n: usize) -> Oversize {
        self.recorder
            .wait_for("an oversize report", |s| s.oversize.get(n - 1).cloned())
            .await
    }

    /// Closes the connection gracefully.
    pub(crate) async fn close(mut self) -> Arc<Recorder> {
        if let Some(c) = self.connection.take() {
            c.close().await;
        }
        self.recorder.clone()
    }
}

/// The `io::ErrorKind` a transport error carries as its source, if any.
pub(crate) fn io_kind(err: &TransportError) -> Option<std::io::ErrorKind> {
    let source = std::error::Error::source(err)?;
    // `TransportError` keeps its source as an `Arc<io::Error>`.
    source
        .downcast_ref::<Arc<std::io::Error>>()
        .map(|e| e.kind())
        .or_else(|| source.downcast_ref::<std::io::Error>().map(|e| e.kind()))
}

/// The entries `sse_fault_server.py --log` wrote.
pub(crate) fn read_log(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON log line"))
        .collect()
}
