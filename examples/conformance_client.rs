//! The client the official MCP conformance suite runs: one `streamable-http` server at the URL
//! it is given, a session, the tools listed and called as the scenario asks.
//!
//! ```sh
//! cargo build --example conformance_client
//! node <conformance>/dist/index.js client --scenario tools_call \
//!     --command "target/debug/examples/conformance_client"
//! ```
//! The suite runs `conformance_client <server-url>` with `MCP_CONFORMANCE_SCENARIO` set. The
//! program uses only the public API, as the daemon does: a project declaring the server, a
//! [`Session`] with the standard stack, [`Session::call`]. It exits 0 when the scenario's
//! calls succeeded, 1 with the error otherwise, and never runs longer than 25 s (the suite
//! waits 30 s).

use std::process::ExitCode;
use std::time::Duration;

use kaged_mcp::client::elicitation::{ElicitMode, ElicitRequest, ElicitResult, ElicitationService};
use kaged_mcp::config::Sources;
use kaged_mcp::{Session, SessionOptions};
use serde_json::{json, Map, Value};
use tower::{service_fn, BoxError};

/// Under the suite's own 30 s timeout.
const DEADLINE: Duration = Duration::from_secs(25);

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!(
            "usage: conformance_client <server-url>  (MCP_CONFORMANCE_SCENARIO names the scenario)"
        );
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match tokio::time::timeout(DEADLINE, run(&url, &scenario)).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("conformance_client ({scenario}): {e}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!(
                "conformance_client ({scenario}): not done within {} s",
                DEADLINE.as_secs()
            );
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str) -> Result<(), Box<dyn std::error::Error>> {
    let project = format!(
        "mcp:\n  conformance:\n    transport: streamable-http\n    url: {}\n",
        Value::String(url.to_owned())
    );
    let config = Sources::new(project).load()?;
    let session = Session::start_with(config, session_options(scenario)).await?;
    let status = session.status();
    if let Some(s) = status.iter().find(|s| s.state != "ready") {
        return Err(format!(
            "server `{}` is {}: {}",
            s.server,
            s.state,
            s.last_error.as_deref().unwrap_or("no error recorded")
        )
        .into());
    }
    let catalog = session.catalog();
    println!("{} tools", catalog.len());
    let calls: Vec<(String, Value)> = match scenario {
        // The handshake and the listing are the scenario.
        "initialize" => Vec::new(),
        "tools_call" => vec![("add_numbers".into(), json!({"a": 2, "b": 3}))],
        // Any other scenario: every tool the server offers, with no arguments.
        _ => catalog
            .iter()
            .filter_map(|t| t.mcp_tool_name.clone())
            .map(|name| (name, json!({})))
            .collect(),
    };
    for (tool, args) in calls {
        let args: Option<Map<String, Value>> = args.as_object().cloned();
        let result = session
            .call(&format!("mcp.conformance.{tool}"), args)
            .await?;
        println!("{tool} -> {}", result.joined_text());
        if result.is_error {
            return Err(format!("{tool} answered an error: {}", result.joined_text()).into());
        }
    }
    session.shutdown().await;
    Ok(())
}

/// The embedder hooks a scenario needs. `elicitation-sep1034-client-defaults` calls a tool that
/// sends `elicitation/create`: an operator who accepts without typing anything, so every value
/// the server receives is a default of its schema, filled in by the client (SEP-1034).
fn session_options(scenario: &str) -> SessionOptions {
    if scenario != "elicitation-sep1034-client-defaults" {
        return SessionOptions::new();
    }
    let accept = ElicitationService::new(service_fn(|req: ElicitRequest| async move {
        println!("elicitation from `{}`: {}", req.server, req.params.message);
        Ok::<_, BoxError>(match req.params.mode {
            ElicitMode::Form { .. } => ElicitResult::Accept(Map::new()),
            _ => ElicitResult::Decline,
        })
    }));
    SessionOptions::new().elicitation_handler(accept)
}
