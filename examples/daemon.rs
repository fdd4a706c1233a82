//! A daemon-style dispatcher: a builtin tool registered beside the MCP tools, and two agents
//! with different grants served from the same registry.
//!
//! ```sh
//! cargo run --example daemon
//! ```
//! The grants come from `examples/demo/project.yaml`: `primary` gets `mcp.demo` and the
//! builtin `notes` namespace, the subagent `researcher` only `mcp.demo.echo`.

#[path = "demo/support.rs"]
mod support;

use kaged_mcp::client::ToolCall;
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::registry::{ToolDefinition, ToolSource};
use kaged_mcp::stack::ToolService;
use kaged_mcp::Session;
use serde_json::json;
use tower::{service_fn, BoxError};

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

    // A builtin tool: any tower service from ToolCall to ToolResult.
    let notes = service_fn(|call: ToolCall| async move {
        let topic = call
            .arguments
            .as_ref()
            .and_then(|a| a.get("topic"))
            .and_then(|t| t.as_str());
        Ok::<_, BoxError>(ToolResult::text(format!(
            "no notes about {}",
            topic.unwrap_or("anything")
        )))
    });
    session.registry().register(
        ToolDefinition::new("notes.search", ToolSource::Builtin)
            .with_description("Searches the operator's notes.")
            .with_parameters(
                json!({"type": "object", "properties": {"topic": {"type": "string"}}}),
            ),
        ToolService::new(notes),
    )?;

    for agent in ["primary", "researcher"] {
        let names: Vec<String> = session
            .catalog_for(agent)?
            .into_iter()
            .map(|t| t.name)
            .collect();
        println!("{agent} may call: {}", names.join(", "));
    }

    let topic = json!({"topic": "mcp"}).as_object().cloned();
    let r = session
        .call_as("primary", "notes.search", topic.clone())
        .await?;
    println!("primary notes.search -> {}", r.joined_text());
    let r = session
        .call_as(
            "researcher",
            "mcp.demo.echo",
            json!({"message": "hi"}).as_object().cloned(),
        )
        .await?;
    println!("researcher mcp.demo.echo -> {}", r.joined_text());
    match session.call_as("researcher", "notes.search", topic).await {
        Err(e) => println!("researcher notes.search -> refused: {e}"),
        Ok(_) => println!("researcher notes.search -> unexpectedly allowed"),
    }
    session.shutdown().await;
    Ok(())
}
