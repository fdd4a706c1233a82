//! An MCP stdio server built with `rmcp`, the official Rust SDK: a real peer for kaged-mcp's
//! integration tests.
//!
//! Build with `cargo build --example rmcp_server`, run as `target/<profile>/examples/rmcp_server`
//! (`tests/common/peers.rs` finds it). It speaks newline-delimited JSON-RPC on stdin/stdout,
//! logs one line to stderr on start and exits when stdin closes.
//!
//! Tools:
//! - `echo {message}` → `Echo: <message>`
//! - `add {a, b}` → the sum of two integers, as text

use rmcp::ServiceExt;

#[path = "rmcp_tools.rs"]
mod tools;

use tools::TestServer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    eprintln!(
        "rmcp_server: starting (pid {}), rmcp stdio transport",
        std::process::id()
    );
    let service = TestServer::new()
        .serve(rmcp::transport::stdio())
        .await
        .inspect_err(|e| eprintln!("rmcp_server: initialize failed: {e}"))?;
    let reason = service.waiting().await?;
    eprintln!("rmcp_server: stopped: {reason:?}");
    Ok(())
}
