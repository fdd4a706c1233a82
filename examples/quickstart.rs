//! Quickstart: a session on the bundled demo project, its catalog and one call.
//!
//! ```sh
//! cargo run --example quickstart
//! ```
//! `examples/demo/project.yaml` declares one stdio server (the bundled `kaged-mcp demo-server`)
//! with a `tools:` filter; the session spawns it, discovers its tools and calls one through the
//! full stack (trace, result cap, timeout, retry).

#[path = "demo/support.rs"]
mod support;

use kaged_mcp::Session;
use serde_json::json;

fn main() -> std::process::ExitCode {
    if let Some(code) = support::serve_demo_if_asked() {
        return code;
    }
    support::report(run())
}

#[tokio::main(flavor = "current_thread")]
async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let config = support::demo_config()?;
    let session = Session::start(config).await?;

    println!("catalog:");
    for tool in session.catalog() {
        println!("  {:<16} {}", tool.name, tool.description);
    }

    let args = json!({"message": "hello from kaged"});
    let result = session
        .call("mcp.demo.echo", args.as_object().cloned())
        .await?;
    println!("mcp.demo.echo -> {}", result.joined_text());

    for s in session.status() {
        println!("server {}: {} ({} tools)", s.server, s.state, s.tools);
    }
    session.shutdown().await;
    Ok(())
}
