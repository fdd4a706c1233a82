//! `jsonrpc_decode`: inbound frames through the client session, the way a transport delivers
//! them.
//!
//! The client decodes an inbound frame in `client::inbound::decode`, which is crate-private; the
//! public way to reach it is the [`Transport`] trait. So this harness plugs a scripted transport
//! into a real [`McpClient`]: every request the client writes is answered with the next *group*
//! of frames from the fuzz input, delivered through [`InboundHandler::on_frame`] (or
//! [`InboundHandler::on_oversize`] for a frame over the limit, with head and tail as the stdio
//! transport keeps them). When the input has no group left, the connection closes.
//!
//! Input format: frames separated by `\n`; an empty line (`\n\n`) ends a group. Group 0 answers
//! `initialize` (id 0), group 1 the first `tools/list` (id 1), and so on; the ids are the
//! client's counter, starting at 0 on each connection.
//!
//! The script: `list_tools`, then three `tools/call`s (one asking for progress), then whatever
//! groups are left are delivered unprompted (late answers, notifications, server requests), then
//! `shutdown`. Time runs on tokio's paused clock, so a call nobody answers ends at its timeout
//! at once, and its drop sends `notifications/cancelled`.
//!
//! Checks: nothing panics; every frame the client writes is one JSON-RPC 2.0 object; every call
//! ends; every error names the server; a result obeys the truncation invariants.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use kaged_mcp::client::{ClientError, ClientOptions, McpClient, ToolCall};
use kaged_mcp::transport::{
    BoxFuture, CloseReason, ConnectContext, Connection, InboundHandler, Outbound, OversizeFrame,
    SendError, Transport, TransportError,
};
use kaged_mcp_layers::timeout::ProgressHandle;
use serde_json::{json, Value};
use tower::{BoxError, Service};

use crate::truncate::check_truncate;

/// The server's label in the client; every error must name it.
const SERVER: &str = "fuzz";
/// The frame limit given to the client: small, so the fuzzer reaches the oversize path.
const FRAME_LIMIT: usize = 1024;
/// How much of an oversized frame's start and end the scripted transport keeps (the stdio
/// transport keeps 4 KiB and 512 B; scaled down with the limit).
const OVERSIZE_HEAD: usize = 256;
const OVERSIZE_TAIL: usize = 64;
/// The most connections one input may open (a restart after a close is a new one).
const MAX_CONNECTS: usize = 4;
/// A call's timeout; on the paused clock it costs no real time.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Splits the input into groups of frames. See the [module docs](self).
pub fn groups(data: &[u8]) -> VecDeque<Vec<Vec<u8>>> {
    let mut groups = VecDeque::new();
    let mut current: Vec<Vec<u8>> = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        if line.is_empty() {
            groups.push_back(std::mem::take(&mut current));
        } else {
            current.push(line.to_vec());
        }
    }
    if !current.is_empty() {
        groups.push_back(current);
    }
    groups
}

/// How the script went, for tests of the harness itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Tools listed (0 when `list_tools` failed).
    pub tools: usize,
    /// Calls that returned a result.
    pub results: usize,
    /// Calls (and `list_tools`) that failed with an error.
    pub errors: usize,
    /// Calls (and `list_tools`) that timed out.
    pub timeouts: usize,
}

/// Runs the script of the [module docs](self) over `data`.
pub fn jsonrpc_decode(data: &[u8]) -> Outcome {
    let mut outcome = Outcome::default();
    let script = Arc::new(Script {
        groups: Mutex::new(groups(data)),
        connects: Mutex::new(0),
        live: Mutex::new(Weak::new()),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(async {
        let outcome = &mut outcome;
        let options = ClientOptions::default()
            .frame_limit(FRAME_LIMIT)
            .initialize_timeout(Duration::from_secs(5));
        let client = McpClient::new(SERVER, FuzzTransport(Arc::clone(&script)), options);
        match tokio::time::timeout(CALL_TIMEOUT, client.list_tools()).await {
            Ok(Ok(tools)) => {
                for tool in &tools {
                    let _ = tool.is_retry_safe();
                }
                outcome.tools = tools.len();
            }
            Ok(Err(e)) => {
                check_client_error(&e);
                outcome.errors += 1;
            }
            Err(_elapsed) => outcome.timeouts += 1,
        }
        for i in 0..3_u64 {
            let mut call = ToolCall::new("echo").with_json_arguments(json!({ "i": i }));
            let progress = ProgressHandle::new();
            if i == 1 {
                call = call.with_progress(progress.clone());
            }
            let mut service = client.clone();
            match tokio::time::timeout(CALL_TIMEOUT, service.call(call)).await {
                Ok(Ok(result)) => {
                    check_truncate(&result, 64);
                    outcome.results += 1;
                }
                Ok(Err(e)) => {
                    check_boxed_error(&e);
                    outcome.errors += 1;
                }
                Err(_elapsed) => outcome.timeouts += 1,
            }
        }
        // Whatever is left arrives unprompted, as late answers and notifications would.
        script.deliver_rest();
        let _ = client.state();
        let _ = client.last_error();
        tokio::time::timeout(CALL_TIMEOUT, client.shutdown())
            .await
            .expect("shutdown of a scripted connection never waits");
    });
    outcome
}

fn check_client_error(e: &ClientError) {
    let text = e.to_string();
    assert!(
        text.contains(&format!("`{SERVER}`")),
        "a client error that does not name the server: {text}"
    );
}

fn check_boxed_error(e: &BoxError) {
    let text = e.to_string();
    assert!(!text.is_empty(), "an error without a message: {e:?}");
    let inner: &(dyn std::error::Error + 'static) = &**e;
    match ClientError::find(inner) {
        Some(client_error) => check_client_error(client_error),
        None => panic!(
            "a call failed with an error that holds no ClientError: {text} (source: {:?})",
            inner.source().map(ToString::to_string)
        ),
    }
}

/// What is left of the input, shared by every connection.
struct Script {
    groups: Mutex<VecDeque<Vec<Vec<u8>>>>,
    connects: Mutex<usize>,
    /// The open connection's sending half (weak: the session already holds it).
    live: Mutex<Weak<FuzzOutbound>>,
}

impl Script {
    fn next_group(&self) -> Option<Vec<Vec<u8>>> {
        self.groups.lock().expect("not poisoned").pop_front()
    }

    /// Delivers every remaining group to the live connection, if any.
    fn deliver_rest(&self) {
        let live = self.live.lock().expect("not poisoned").upgrade();
        if let Some(out) = live {
            while let Some(group) = self.next_group() {
                if out.closed.load(Ordering::SeqCst) {
                    break;
                }
                out.deliver(&group);
            }
        }
    }
}

/// A transport that answers from the fuzz input.
struct FuzzTransport(Arc<Script>);

impl Transport for FuzzTransport {
    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
        let script = Arc::clone(&self.0);
        Box::pin(async move {
            {
                let mut connects = script.connects.lock().expect("not poisoned");
                *connects += 1;
                if *connects > MAX_CONNECTS {
                    return Err(TransportError::new("no more connections in this input"));
                }
            }
            let out = Arc::new(FuzzOutbound {
                handler: Mutex::new(Some(Arc::clone(&ctx.handler))),
                script: Arc::clone(&script),
                limit: ctx.frame_limit,
                closed: AtomicBool::new(false),
            });
            *script.live.lock().expect("not poisoned") = Arc::downgrade(&out);
            ctx.handler.on_open(Arc::clone(&out) as Arc<dyn Outbound>);
            Ok(Box::new(FuzzConnection(out)) as Box<dyn Connection>)
        })
    }

    fn describe(&self) -> String {
        "fuzz: scripted frames".into()
    }
}

struct FuzzOutbound {
    /// Taken on close, which breaks the cycle session → outbound → session.
    handler: Mutex<Option<Arc<dyn InboundHandler>>>,
    script: Arc<Script>,
    limit: usize,
    closed: AtomicBool,
}

impl FuzzOutbound {
    fn handler(&self) -> Option<Arc<dyn InboundHandler>> {
        self.handler.lock().expect("not poisoned").clone()
    }

    fn close(&self, message: &str, requested: bool) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            let handler = self.handler.lock().expect("not poisoned").take();
            if let Some(handler) = handler {
                let mut reason = CloseReason::new(message);
                reason.requested = requested;
                handler.on_closed(reason);
            }
        }
    }

    fn deliver(&self, group: &[Vec<u8>]) {
        for frame in group {
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let Some(handler) = self.handler() else {
                return;
            };
            if frame.len() > self.limit {
                let head = &frame[..OVERSIZE_HEAD.min(frame.len())];
                let tail_start = frame.len().saturating_sub(OVERSIZE_TAIL).max(head.len());
                handler.on_oversize(OversizeFrame {
                    head,
                    tail: &frame[tail_start..],
                    len: frame.len() as u64,
                    limit: self.limit,
                });
            } else {
                handler.on_frame(frame);
            }
        }
    }
}

impl Outbound for FuzzOutbound {
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
        let is_request = msg.get("method").is_some() && msg.get("id").is_some();
        if is_request {
            match self.script.next_group() {
                Some(group) => self.deliver(&group),
                None => self.close("the fuzz input has no more frames", false),
            }
        }
        Ok(())
    }
}

struct FuzzConnection(Arc<FuzzOutbound>);

impl std::fmt::Debug for FuzzConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FuzzConnection")
    }
}

impl Connection for FuzzConnection {
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move { self.0.close("shut down by the client", true) })
    }
}

impl Drop for FuzzConnection {
    fn drop(&mut self) {
        self.0.close("dropped", true);
    }
}
