//! One scripted in-memory transport for tests: of kaged-mcp itself, of its fuzz targets, and of
//! an embedder's code built on it (the `test-util` feature), the way `tower-test`'s mock is the
//! one mock of tower.
//!
//! [`MockTransport`] runs a scripted server inside the test's process: every frame the client
//! sends is parsed and handed to the script, which answers through the session's handler
//! synchronously (so tests need no sleeps), reports an oversized message, closes the
//! connection, or expires the session; [`MockTransport::push`] sends the server's own messages
//! (notifications, late answers) at any time. It records every message the client sent, on
//! every connection, and counts connections; it can refuse to connect, or stop accepting after
//! a number of them. Time-dependent behaviour (timeouts, backoff) runs on tokio's paused clock.
//!
//! # Panics
//! On a bug of the client under test: a frame it writes that is not one JSON-RPC 2.0 object
//! on one line (a raw newline breaks stdio framing).
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
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

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
    max_connects: usize,
    seen: Arc<Mutex<Vec<Value>>>,
    /// The open connection's sending half (weak: the session holds it).
    live: Arc<Mutex<Weak<MockOutbound>>>,
    /// The transport carries the 2026-07-28 revision ([`MockTransport::modern`]).
    modern: bool,
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
            max_connects: usize::MAX,
            seen: Arc::default(),
            live: Arc::default(),
            modern: false,
        }
    }

    /// Carries the 2026-07-28 revision too (as stdio and Streamable HTTP do): the client may
    /// probe with `server/discover` and speak the modern era.
    #[must_use]
    pub fn modern(mut self) -> Self {
        self.modern = true;
        self
    }

    /// Accepts at most `n` connections; later ones fail ("mock: no more connections").
    #[must_use]
    pub fn max_connects(mut self, n: usize) -> Self {
        self.max_connects = n;
        self
    }

    /// Runs `acts` on the open connection, as messages the server sends on its own; `false`
    /// when no connection is open.
    pub fn push(&self, acts: Vec<Act>) -> bool {
        let live = lock(&self.live).upgrade();
        match live {
            Some(out) if !out.closed.load(Ordering::SeqCst) => {
                out.run(acts);
                true
            }
            _ => false,
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
    fn speaks_modern(&self) -> bool {
        self.modern
    }

    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
        let n = self.connects.fetch_add(1, Ordering::SeqCst) + 1;
        let refused = if self.refuse.load(Ordering::SeqCst) {
            Some("mock: no such program")
        } else if n > self.max_connects {
            Some("mock: no more connections")
        } else {
            None
        };
        let out = Arc::new(MockOutbound {
            handler: Mutex::new(Some(Arc::clone(&ctx.handler))),
            script: Arc::clone(&self.script),
            seen: Arc::clone(&self.seen),
            limit: ctx.frame_limit,
            closed: AtomicBool::new(false),
        });
        if refused.is_none() {
            *lock(&self.live) = Arc::downgrade(&out);
        }
        Box::pin(async move {
            if let Some(why) = refused {
                return Err(TransportError::new(why));
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
    /// Taken on close, which breaks the cycle session → outbound → session.
    handler: Mutex<Option<Arc<dyn InboundHandler>>>,
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<Value>>>,
    limit: usize,
    closed: AtomicBool,
}

impl MockOutbound {
    fn handler(&self) -> Option<Arc<dyn InboundHandler>> {
        lock(&self.handler).clone()
    }

    /// Ends the connection once, with `reason`.
    fn end(&self, reason: CloseReason) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            let handler = lock(&self.handler).take();
            if let Some(handler) = handler {
                handler.on_closed(reason);
            }
        }
    }

    fn close(&self, message: &str, requested: bool) {
        let mut reason = CloseReason::new(message).process(ProcessExit {
            status: None,
            stderr_tail: "mock stderr line".into(),
        });
        reason.requested = requested;
        self.end(reason);
    }

    /// Runs `acts` in order, until one closes the connection.
    fn run(&self, acts: Vec<Act>) {
        for act in acts {
            let Some(handler) = self.handler() else {
                return;
            };
            match act {
                Act::Reply(v) => handler.on_frame(v.to_string().as_bytes()),
                Act::Raw(bytes) => handler.on_frame(&bytes),
                Act::Oversize { head, tail, len } => {
                    handler.on_oversize(OversizeFrame::new(&head, &tail, len, self.limit));
                }
                Act::Close(why) => self.close(&why, false),
                Act::Expire => self.end(CloseReason::new("ended the session").session_expired()),
            }
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
        let msg: Value = serde_json::from_slice(&buf).unwrap_or_else(|e| {
            panic!(
                "the client wrote a frame that is not JSON ({e}): {}",
                String::from_utf8_lossy(&buf)
            )
        });
        assert_eq!(
            msg.get("jsonrpc"),
            Some(&json!("2.0")),
            "the client wrote a frame without \"jsonrpc\":\"2.0\": {msg}"
        );
        assert!(
            !buf.contains(&b'\n'),
            "the client wrote a frame with a raw newline (breaks stdio framing): {msg}"
        );
        lock(&self.seen).push(msg.clone());
        self.run((self.script)(&msg));
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
