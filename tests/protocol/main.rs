//! Resources, prompts, completions, log levels and roots (issue 24) against real servers, one
//! test binary:
//! - `everything`: `@modelcontextprotocol/server-everything` 2026.8.31 over stdio and
//!   Streamable HTTP (legacy era only: its TypeScript SDK 1.32.2 has no 2026-07-28 code);
//! - `python`: `tests/servers/py_resources_server.py` on the PyPI `mcp` SDK 1.30.0 (legacy),
//!   2.3.0 in the legacy era and 2.3.0 in the 2026-07-28 era;
//! - `filesystem`: `@modelcontextprotocol/server-filesystem` 2026.8.31 given its directory only
//!   through the session's `roots:`;
//! - `session`: the session's reads (grants, the result cap) and the configuration of roots and
//!   log levels (what is refused, and where).
//!
//! The wire each peer speaks is written down in `tests/servers/py_resources_server.py`'s
//! docstring (the Python server) and in the comments here. Missing peers skip a test, or fail
//! it when `CI` is set (`.ci/install-peers` installs them all).

#[path = "../common/mod.rs"]
mod common;

mod everything;
mod filesystem;
mod python;
mod session;
mod skills;

use std::time::Duration;

use kaged_mcp::client::{ClientOptions, McpClient, ServerChange, ToolCall};
use kaged_mcp::config::Sources;
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::transport::{StdioConfig, StdioTransport};
use serde_json::{Map, Value};
use tokio::sync::broadcast;
use tower::ServiceExt;

/// How long a test waits for a notification the server should send at once (or, for
/// server-everything's 5 s timer, within one period): generous, for a loaded CI machine.
pub(crate) const CHANGE_TIMEOUT: Duration = Duration::from_secs(20);

/// A JSON object literal as a map (panics on anything else).
pub(crate) fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("a JSON object")
}

/// A client of the stdio server `command`.
pub(crate) fn stdio_client(name: &str, command: &[String], options: ClientOptions) -> McpClient {
    let config = StdioConfig::from_command(command).expect("a command");
    McpClient::new(name, StdioTransport::new(config), options)
}

/// A client of the Streamable HTTP server at `url` (the transport built from a one-server
/// project, as the session builds it, so this file needs no `http` feature of its own).
pub(crate) fn http_client(name: &str, url: &str, options: ClientOptions) -> McpClient {
    let project = format!("mcp:\n  {name}:\n    transport: streamable-http\n    url: {url}\n");
    let config = Sources::new(project).load().expect("a valid project");
    let server = &config.project.servers[0];
    let transport = kaged_mcp::assemble::transport(&config, server, None, None)
        .expect("a Streamable HTTP transport (the `http` feature)");
    McpClient::new(name, transport, options)
}

/// Calls the tool `name` with `arguments` through the client (no stack), panicking with `who`
/// on a failure of the call itself (a tool error comes back as `is_error`).
pub(crate) async fn call(
    client: &McpClient,
    who: &str,
    name: &str,
    arguments: Value,
) -> ToolResult {
    client
        .clone()
        .oneshot(ToolCall::new(name).with_json_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{who}: tools/call {name}: {e}"))
}

/// Waits (at most `limit`) for a change `wanted` accepts on `rx`, skipping the others; panics
/// naming `what` when none comes. Returns every change seen, the wanted one last.
pub(crate) async fn wait_for_change(
    rx: &mut broadcast::Receiver<ServerChange>,
    limit: Duration,
    what: &str,
    wanted: impl Fn(&ServerChange) -> bool,
) -> Vec<ServerChange> {
    let mut seen = Vec::new();
    let outcome = tokio::time::timeout(limit, async {
        loop {
            match rx.recv().await {
                Ok(change) => {
                    let hit = wanted(&change);
                    seen.push(change);
                    if hit {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    panic!("{what}: the changes receiver lagged by {n}")
                }
                Err(broadcast::error::RecvError::Closed) => {
                    panic!("{what}: the changes channel closed; seen {seen:?}")
                }
            }
        }
    })
    .await;
    if outcome.is_err() {
        panic!("{what}: nothing within {limit:?}; changes seen: {seen:?}");
    }
    seen
}

/// The changes that arrive on `rx` within `window` (none expected, typically).
pub(crate) async fn changes_within(
    rx: &mut broadcast::Receiver<ServerChange>,
    window: Duration,
) -> Vec<ServerChange> {
    let mut seen = Vec::new();
    let _ = tokio::time::timeout(window, async {
        while let Ok(change) = rx.recv().await {
            seen.push(change);
        }
    })
    .await;
    seen
}

/// Standard base64 (as servers send blobs, with or without padding) decoded; `None` when it
/// is not base64.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(text.trim()).ok()
}
