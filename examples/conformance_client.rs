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
use std::sync::Arc;

use kaged_mcp::config::Sources;
use kaged_mcp::oauth::FetchAuthorizer;
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
    let mut project = format!(
        "mcp:\n  conformance:\n    transport: streamable-http\n    url: {}\n",
        Value::String(url.to_owned())
    );
    let mut local = String::new();
    let mut options = session_options(scenario);
    // Token files of this run only: a token of an earlier run would be refused.
    let token_dir = tempfile_dir()?;
    if scenario.starts_with("auth/") {
        let (auth, secrets) = oauth_block(scenario, &token_dir)?;
        project.push_str(&auth);
        local = secrets;
        options = options
            .oauth_authorizer(Arc::new(FetchAuthorizer))
            .oauth_token_dir(&token_dir);
    }
    // Arguments the suite gives, and the empty ones this client sends to every tool of a
    // scenario that names none, are the scenario's input, sent as given: a validating client
    // would refuse some on purpose (http-custom-headers calls a tool with `"verbose": null`
    // for a boolean, to check that a null parameter sends no header; http-invalid-tool-headers'
    // `valid_tool` requires a `region` the empty call lacks). Results stay checked, and so do
    // the arguments of the scenarios whose calls are this client's own.
    if !own_calls(scenario) {
        local.push_str("\n[mcp.conformance]\nvalidate = \"results\"\n");
    }
    let config = Sources::new(project).local(local).load()?;
    let result = session_run(config, options, scenario).await;
    let _ = std::fs::remove_dir_all(&token_dir);
    result
}

/// A fresh directory for this run's token files.
fn tempfile_dir() -> Result<std::path::PathBuf, std::io::Error> {
    let dir = std::env::temp_dir().join(format!("kaged-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    Ok(dir)
}

/// The `auth:` block of the server and the `local.toml` secrets for an auth scenario, from
/// `MCP_CONFORMANCE_CONTEXT` where the scenario gives client credentials. A workload's
/// identity token (`valid_jwt`) is written to a file in `dir`, as a platform mounts one.
fn oauth_block(
    scenario: &str,
    dir: &std::path::Path,
) -> Result<(String, String), Box<dyn std::error::Error>> {
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text)?,
        Err(_) => Value::Null,
    };
    let field = |k: &str| {
        context
            .get(k)
            .and_then(Value::as_str)
            .map(|s| Value::String(s.to_owned()))
    };
    // The client ID metadata document the suite expects (used where the server supports it).
    let mut auth = String::from(
        "    auth:\n      type: oauth\n      client_metadata_url: https://conformance-test.local/client-metadata.json\n",
    );
    let mut secrets = String::from("[secrets.conformance]\n");
    if let Some(id) = field("client_id") {
        auth.push_str(&format!("      client_id: {id}\n"));
    }
    if let Some(secret) = field("client_secret") {
        auth.push_str("      secret_ref: conformance.client_secret\n");
        secrets.push_str(&format!("client_secret = {secret}\n"));
    }
    if let Some(key) = field("private_key_pem") {
        auth.push_str("      private_key_ref: conformance.private_key\n      token_endpoint_auth_method: private_key_jwt\n");
        secrets.push_str(&format!("private_key = {key}\n"));
    }
    if scenario.starts_with("auth/client-credentials") {
        auth.push_str("      grant: client_credentials\n");
    }
    if let (true, Some(Value::String(jwt))) =
        (scenario == "auth/wif-jwt-bearer", field("valid_jwt"))
    {
        let path = dir.join("workload-token");
        std::fs::write(&path, jwt)?;
        auth.push_str(&format!(
            "      grant: jwt_bearer\n      assertion_file: {}\n",
            Value::String(path.display().to_string())
        ));
    }
    // SEP-990: the enterprise IdP's ID token, exchanged there for an ID-JAG at each grant.
    if let (true, Some(Value::String(id_token)), Some(endpoint)) = (
        // (0.1.16 names the same scenario `auth/cross-app-access-complete-flow`.)
        matches!(
            scenario,
            "auth/enterprise-managed-authorization" | "auth/cross-app-access-complete-flow"
        ),
        field("idp_id_token"),
        field("idp_token_endpoint"),
    ) {
        let path = dir.join("id-token");
        std::fs::write(&path, id_token)?;
        auth.push_str(&format!(
            "      grant: jwt_bearer\n      identity_provider:\n        token_endpoint: {endpoint}\n        id_token_file: {}\n",
            Value::String(path.display().to_string())
        ));
        if let Some(id) = field("idp_client_id") {
            auth.push_str(&format!("        client_id: {id}\n"));
        }
    }
    if scenario.starts_with("auth/dpop") {
        auth.push_str("      dpop: true\n");
    }
    Ok((auth, secrets))
}

async fn session_run(
    config: kaged_mcp::config::Config,
    options: SessionOptions,
    scenario: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::start_with(config, options).await?;
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
    if let Some(mode) = scenario.strip_prefix("sep-2640-client-") {
        return skills_run(session, mode).await;
    }
    let catalog = session.catalog();
    println!("{} tools", catalog.len());
    let calls: Vec<(String, Value)> = match scenario {
        // The handshake (or the probe) and the listing are the scenario.
        "initialize" | "json-schema-ref-no-deref" => Vec::new(),
        // (Every scenario above and in the next two arms is one of `own_calls`.)
        "tools_call" => vec![("add_numbers".into(), json!({"a": 2, "b": 3}))],
        // The schema as the catalog holds it, sent back to be compared with the server's.
        "json-schema-2020-12-preservation" => {
            let schema = catalog
                .iter()
                .find(|t| t.mcp_tool_name.as_deref() == Some("json_schema_2020_12_tool"))
                .map(|t| t.parameters.clone())
                .ok_or("the catalog has no json_schema_2020_12_tool")?;
            vec![("json_schema_echo".into(), json!({ "schema": schema }))]
        }
        // The calls the scenario asks for, with its arguments.
        _ if context_tool_calls().is_some() => context_tool_calls().unwrap_or_default(),
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

/// The skills scenarios (SEP-2640): the skills are listed; `no-prefetch` stops there (no file
/// may be read before a skill is loaded), the `verify-*` scenarios load each skill, as an agent
/// would, and read its listed files once it is verified. A skill refused by a check is the
/// expected outcome of a tampered one: reported, and none of its files read after it.
async fn skills_run(session: Session, mode: &str) -> Result<(), Box<dyn std::error::Error>> {
    let skills = session.skills("conformance").await?;
    println!("{} skills", skills.len());
    if mode != "no-prefetch" {
        for skill in skills.iter() {
            match session.load_skill("conformance", skill.name()).await {
                Ok(loaded) => {
                    println!("skill {} loaded", loaded.entry.name());
                    for file in &skill.resources {
                        session
                            .skill_file("conformance", skill.name(), &file.uri)
                            .await?;
                    }
                }
                Err(e) => println!("skill {} refused: {}", skill.name(), e.reason()),
            }
        }
    }
    session.shutdown().await;
    Ok(())
}

/// The scenarios whose calls (if any) this client makes up with well-formed arguments; every
/// other one sends the suite's arguments, or none, as given.
fn own_calls(scenario: &str) -> bool {
    matches!(
        scenario,
        "initialize"
            | "json-schema-ref-no-deref"
            | "tools_call"
            | "json-schema-2020-12-preservation"
    )
}

/// The `toolCalls` of `MCP_CONFORMANCE_CONTEXT` (`[{"name", "arguments"}]`), if it has any.
fn context_tool_calls() -> Option<Vec<(String, Value)>> {
    let context: Value =
        serde_json::from_str(&std::env::var("MCP_CONFORMANCE_CONTEXT").ok()?).ok()?;
    let calls = context.get("toolCalls")?.as_array()?;
    Some(
        calls
            .iter()
            .filter_map(|c| {
                let name = c.get("name")?.as_str()?.to_owned();
                let arguments = c.get("arguments").cloned().unwrap_or_else(|| json!({}));
                Some((name, arguments))
            })
            .collect(),
    )
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
