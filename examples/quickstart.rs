//! Quickstart: a session on the bundled demo project, its catalog and one call.
//!
//! ```sh
//! cargo run --example quickstart
//! ```
//! `examples/demo/project.yaml` declares one stdio server (the bundled `kaged-mcp demo-server`)
//! with a `tools:` filter; the session spawns it, discovers its tools and calls one through the
//! full stack (trace, result cap, timeout, retry).

use kaged_mcp::config::{load, ConfigPaths};
use kaged_mcp::Session;
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo");
    let config = load(&ConfigPaths::new(dir).config(format!("{dir}/config.toml")))?;
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
