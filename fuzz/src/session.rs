//! `jsonrpc_decode`: inbound frames through the client session, the way a transport delivers
//! them.
//!
//! The client decodes an inbound frame in `client::inbound::decode`, which is crate-private; the
//! public way to reach it is the [`Transport`](kaged_mcp::transport::Transport) trait. So this
//! harness plugs the crate's scripted transport ([`MockTransport`]) into a real [`McpClient`]:
//! every request the client writes is answered with the next *group* of frames from the fuzz
//! input, delivered as frames (or as an oversize report for a frame over the limit, with head
//! and tail as the stdio transport keeps them). When the input has no group left, the
//! connection closes. The mock checks that every frame the client writes is one JSON-RPC 2.0
//! object on one line.
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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kaged_mcp::client::{ClientError, ClientOptions, McpClient, ToolCall};
use kaged_mcp::test_util::{Act, MockTransport};
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
    let left = Arc::new(Mutex::new(groups(data)));
    let script = {
        let left = Arc::clone(&left);
        move |msg: &Value| {
            let is_request = msg.get("method").is_some() && msg.get("id").is_some();
            if !is_request {
                return Vec::new();
            }
            match next_group(&left) {
                Some(group) => acts(group),
                None => vec![Act::close("the fuzz input has no more frames")],
            }
        }
    };
    let transport = MockTransport::new(script).max_connects(MAX_CONNECTS);
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
        let client = McpClient::new(SERVER, transport.clone(), options);
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
        while let Some(group) = next_group(&left) {
            if !transport.push(acts(group)) {
                break;
            }
        }
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

/// The next group of frames left in the input.
fn next_group(left: &Mutex<VecDeque<Vec<Vec<u8>>>>) -> Option<Vec<Vec<u8>>> {
    left.lock().expect("not poisoned").pop_front()
}

/// A group of frames as the server's acts: a frame over the limit is reported by its edges, as
/// the stdio transport keeps them (scaled down with the limit).
fn acts(group: Vec<Vec<u8>>) -> Vec<Act> {
    group
        .into_iter()
        .map(|frame| {
            if frame.len() > FRAME_LIMIT {
                let head = frame[..OVERSIZE_HEAD.min(frame.len())].to_vec();
                let tail_start = frame.len().saturating_sub(OVERSIZE_TAIL).max(head.len());
                Act::Oversize {
                    tail: frame[tail_start..].to_vec(),
                    len: frame.len() as u64,
                    head,
                }
            } else {
                Act::Raw(frame)
            }
        })
        .collect()
}
