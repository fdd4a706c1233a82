//! One scripted in-memory transport for tests: of kaged-mcp itself, of its fuzz targets, and of
//! an embedder's code built on it (the `test-util` feature), the way `tower-test`'s mock is the
//! one mock of tower.
//!
//! [`MockTransport`] runs a scripted server inside the test's process: every frame the client
//! sends is parsed and handed to the script, which answers through the session's handler
//! synchronously (so tests need no sleeps), reports an oversized message, closes the
//! connection, or expires the session. It records every message the client sent, on every
//! connection, and counts connections; it can refuse to connect. Time-dependent behaviour
//! (timeouts, backoff) runs on tokio's paused clock.
//!
//! # Example
//! ```
//! use kaged_mcp::client::{ClientOptions, McpClient};
//! use kaged_mcp::test_util::{Act, MockTransport};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let server = MockTransport::new(|msg| match msg["method"].as_str() {
//!     Some("initialize") => vec![Act::reply(msg, json!({"protocolVersion": "2025-11-25",
//!         "capabilities": {"tools": {}}, "serverInfo": {"name": "mock", "version": "1"}}))],
//!     Some("tools/list") => vec![Act::reply(msg, json!({"tools": [
//!         {"name": "echo", "inputSchema": {"type": "object"}}]}))],
//!     _ => vec![],
//! });
//! let options = ClientOptions::default().era(kaged_mcp::client::EraPreference::Legacy);
//! let client = McpClient::new("mock", server.clone(), options);
//! let tools = client.list_tools().await.unwrap();
//! assert_eq!(tools[0].name, "echo");
//! assert_eq!(server.seen_methods(), ["initialize", "notifications/initialized", "tools/list"]);
//! # }
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{json, Value};

use crate::transport::{
    BoxFuture, CloseReason, ConnectContext, Connection, InboundHandler, Outbound, OversizeFrame,
    ProcessExit, SendError, Transport, TransportError,
};

/// What the scripted server does with one message the client sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Act {
    /// Sends this message to the client (encoded as compact JSON).
    Reply(Value),
    /// Sends these bytes as one message (odd key orders, garbage).
    Raw(Vec<u8>),
    /// Reports a message over the frame limit, with these edges and length.
    Oversize {
        /// Its first bytes.
        head: Vec<u8>,
        /// Its last bytes.
        tail: Vec<u8>,
        /// Its whole length.
        len: u64,
    },
    /// Ends the connection, as a server process that exits (the reason's message; the last
    /// stderr line is `mock stderr line`).
    Close(String),
    /// Ends the session as a Streamable HTTP server does with a `404`: the client starts a new
    /// one.
    Expire,
}

impl Act {
    /// The answer to the request `request` with `result`.
    pub fn reply(request: &Value, result: Value) -> Self {
        Self::Reply(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
    }

    /// The JSON-RPC error answering the request `request`.
    pub fn error(request: &Value, code: i64, message: &str) -> Self {
        Self::Reply(json!({"jsonrpc": "2.0", "id": request["id"],
            "error": {"code": code, "message": message}}))
    }

    /// Ends the connection for `reason`.
    pub fn close(reason: impl Into<String>) -> Self {
        Self::Close(reason.into())
    }
}

type Script = dyn Fn(&Value) -> Vec<Act> + Send + Sync;

/// A scripted server behind the [`Transport`] trait. See the [module docs](self).
///
/// # Clone
/// Clones share the script, the record and the counters: keep one to look at what the client
/// sent after handing the other to it.
#[derive(Clone)]
pub struct MockTransport {
    script: Arc<Script>,
    connects: Arc<AtomicUsize>,
    refuse: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl fmt::Debug for MockTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockTransport")
            .field("connects", &self.connects())
            .field("seen", &lock(&self.seen).len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MockTransport {
    /// A server that answers each message the client sends with what `script` returns for it.
    pub fn new(script: impl Fn(&Value) -> Vec<Act> + Send + Sync + 'static) -> Self {
        Self {
            script: Arc::new(script),
            connects: Arc::default(),
            refuse: Arc::default(),
            seen: Arc::default(),
        }
    }

    /// Every message the client sent, on every connection, in order.
    pub fn seen(&self) -> Vec<Value> {
        lock(&self.seen).clone()
    }

    /// The method of every message the client sent (`<answer>` for an answer).
    pub fn seen_methods(&self) -> Vec<String> {
        lock(&self.seen)
            .iter()
            .map(|m| {
                m.get("method")
                    .and_then(Value::as_str)
                    .unwrap_or("<answer>")
                    .to_owned()
            })
            .collect()
    }

    /// How many connections were asked for (refused ones included).
    pub fn connects(&self) -> usize {
        self.connects.load(Ordering::SeqCst)
    }

    /// From now on, `connect` fails (`true`: "mock: no such program") or succeeds again.
    pub fn refuse(&self, refuse: bool) {
        self.refuse.store(refuse, Ordering::SeqCst);
    }
}

impl Transport for MockTransport {
    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
        self.connects.fetch_add(1, Ordering::SeqCst);
        let refuse = self.refuse.load(Ordering::SeqCst);
        let out = Arc::new(MockOutbound {
            handler: Arc::clone(&ctx.handler),
            script: Arc::clone(&self.script),
            seen: Arc::clone(&self.seen),
            limit: ctx.frame_limit,
            closed: AtomicBool::new(false),
        });
        Box::pin(async move {
            if refuse {
                return Err(TransportError::new("mock: no such program"));
            }
            ctx.handler.on_open(Arc::clone(&out) as Arc<dyn Outbound>);
            Ok(Box::new(MockConnection(out)) as Box<dyn Connection>)
        })
    }

    fn describe(&self) -> String {
        "mock".into()
    }
}

/// The sending half: runs the script on each message.
struct MockOutbound {
    handler: Arc<dyn InboundHandler>,
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<Value>>>,
    limit: usize,
    closed: AtomicBool,
}

impl MockOutbound {
    fn close(&self, message: &str, requested: bool) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            let mut reason = CloseReason::new(message).process(ProcessExit {
                status: None,
                stderr_tail: "mock stderr line".into(),
            });
            reason.requested = requested;
            self.handler.on_closed(reason);
        }
    }
}

impl Outbound for MockOutbound {
    fn send_with(
        &self,
        write: &mut dyn FnMut(&mut Vec<u8>) -> std::io::Result<()>,
    ) -> Result<(), SendError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(SendError::Closed);
        }
        let mut buf = Vec::new();
        write(&mut buf).map_err(SendError::Encode)?;
        let msg: Value = serde_json::from_slice(&buf).map_err(|e| SendError::Encode(e.into()))?;
        lock(&self.seen).push(msg.clone());
        for act in (self.script)(&msg) {
            match act {
                Act::Reply(v) => self.handler.on_frame(v.to_string().as_bytes()),
                Act::Raw(bytes) => self.handler.on_frame(&bytes),
                Act::Oversize { head, tail, len } => self.handler.on_oversize(OversizeFrame {
                    head: &head,
                    tail: &tail,
                    len,
                    limit: self.limit,
                }),
                Act::Close(why) => self.close(&why, false),
                Act::Expire => {
                    if !self.closed.swap(true, Ordering::SeqCst) {
                        self.handler
                            .on_closed(CloseReason::new("ended the session").session_expired());
                    }
                }
            }
        }
        Ok(())
    }
}

/// The connection: closing or dropping it ends the session as asked for by the client.
struct MockConnection(Arc<MockOutbound>);

impl fmt::Debug for MockConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MockConnection")
    }
}

impl Connection for MockConnection {
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move { self.0.close("shut down by the client", true) })
    }
}

impl Drop for MockConnection {
    fn drop(&mut self) {
        self.0.close("dropped", true);
    }
}
