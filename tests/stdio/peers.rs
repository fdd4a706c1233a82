//! The client over stdio against real MCP servers: rmcp (the Rust SDK),
//! `@modelcontextprotocol/server-everything` (the TypeScript SDK) and the Python SDK
//! (`mcp` 1.30.0 and 2.3.0). Each test asserts on real answers, then shuts the server down and
//! checks that no process of its group is left.
//!
//! Peers come from `.ci/install-peers` (and `cargo build --example rmcp_server`); a missing one
//! skips the test, or fails it when `CI` is set.

use std::time::Duration;

use kaged_mcp::client::{ClientError, ClientOptions, ErrorKind, McpClient, ServerState, ToolCall};
use kaged_mcp::protocol::{ContentBlock, ToolResult};
use kaged_mcp::transport::{StdioConfig, StdioTransport};
use kaged_mcp_layers::retry::NotSent;
use kaged_mcp_layers::timeout::ProgressHandle;
use peers::PyMcp;
use serde_json::json;
use tower::{BoxError, ServiceExt};

use crate::common::peers;

fn stdio_client(server: &str, command: &[String]) -> McpClient {
    stdio_client_with(server, command, ClientOptions::default())
}

fn stdio_client_with(server: &str, command: &[String], options: ClientOptions) -> McpClient {
    let config = StdioConfig::from_command(command).expect("a command");
    McpClient::new(server, StdioTransport::new(config), options)
}

async fn call(client: &McpClient, call: ToolCall) -> Result<ToolResult, BoxError> {
    client.clone().oneshot(call).await
}

fn tool(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(name).with_json_arguments(args)
}

/// Shuts the client down and checks that its process group is gone (no process, no zombie).
async fn shutdown_and_check_group(client: &McpClient) {
    let pid = client.process_id().expect("a running server has a pid");
    client.shutdown().await;
    assert_eq!(client.state(), ServerState::Disabled);
    assert_group_gone(pid).await;
}

/// Waits (bounded) until no process of group `pgid` is left, then asserts it.
async fn assert_group_gone(pgid: u32) {
    let pgid = i32::try_from(pgid).unwrap();
    for _ in 0..500 {
        if peers::processes_in_group(pgid).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "processes left in group {pgid}: {:?}",
        peers::processes_in_group(pgid)
    );
}

// --- rmcp ------------------------------------------------------------------------------------

#[tokio::test]
async fn rmcp_server_lists_and_answers_its_tools() {
    let Some(cmd) = peers::require(peers::rmcp_server(), "rmcp_server") else {
        return;
    };
    let client = stdio_client("rmcp", &cmd);
    let mut names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    assert_eq!(names, ["add", "ask_task", "echo", "slow_task"]);
    assert!(client.protocol_version().is_some());
    let echo = call(&client, tool("echo", json!({"message": "from kaged"})))
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "Echo: from kaged");
    assert!(!echo.is_error);
    let sum = call(&client, tool("add", json!({"a": 40, "b": 2})))
        .await
        .unwrap();
    assert_eq!(sum.joined_text(), "42");
    shutdown_and_check_group(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_server_answers_sixty_four_calls_in_flight_each_to_its_caller() {
    let Some(cmd) = peers::require(peers::rmcp_server(), "rmcp_server") else {
        return;
    };
    let client = stdio_client("rmcp", &cmd);
    client.start().await.unwrap();
    let calls = (0..64).map(|i| {
        let client = client.clone();
        async move {
            let r = call(&client, tool("echo", json!({"message": format!("m{i}")})))
                .await
                .unwrap();
            (i, r.joined_text())
        }
    });
    for (i, text) in futures::future::join_all(calls).await {
        assert_eq!(text, format!("Echo: m{i}"));
    }
    shutdown_and_check_group(&client).await;
}

#[tokio::test]
async fn rmcp_server_reports_an_unknown_tool_as_an_error_naming_the_server() {
    let Some(cmd) = peers::require(peers::rmcp_server(), "rmcp_server") else {
        return;
    };
    let client = stdio_client("rmcp", &cmd);
    let err = call(&client, ToolCall::new("no-such-tool")).await;
    // rmcp answers a JSON-RPC error; either way the session survives.
    match err {
        Err(e) => {
            let ce = ClientError::find(&*e).expect("a ClientError");
            assert_eq!(ce.server(), "rmcp");
            assert!(!NotSent::in_chain(&*e));
        }
        Ok(r) => assert!(r.is_error),
    }
    assert_eq!(
        call(&client, tool("echo", json!({"message": "still"})))
            .await
            .unwrap()
            .joined_text(),
        "Echo: still"
    );
    shutdown_and_check_group(&client).await;
}

// --- server-everything -------------------------------------------------------------------------

#[tokio::test]
async fn everything_lists_its_tools_without_the_sampling_one() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let client = stdio_client("everything", &cmd);
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "get-tiny-image",
        "get-structured-content",
        "trigger-long-running-operation",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(
        !names.contains(&"trigger-sampling-request"),
        "we do not advertise sampling, so the server must not offer it: {names:?}"
    );
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert!(echo.is_retry_safe(), "echo is annotated read-only");
    assert_eq!(client.server_info().unwrap().name, "mcp-servers/everything");
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    // Calling it anyway: the server says it does not know the tool.
    let r = call(&client, ToolCall::new("trigger-sampling-request")).await;
    match r {
        Ok(r) => assert!(r.is_error && r.joined_text().contains("not found"), "{r:?}"),
        Err(e) => assert!(e.to_string().contains("everything"), "{e}"),
    }
    assert_eq!(client.sampling_refused_count(), 0);
    shutdown_and_check_group(&client).await;
}

#[tokio::test]
async fn everything_echoes_and_returns_an_image_and_structured_content() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let client = stdio_client("everything", &cmd);
    let echo = call(&client, tool("echo", json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "Echo: hi");

    let image = call(&client, ToolCall::new("get-tiny-image"))
        .await
        .unwrap();
    let img = image
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::Image(i) => Some(i),
            _ => None,
        })
        .expect("an image block");
    assert_eq!(img.mime_type, "image/png");
    assert!(!img.data.is_empty());

    let structured = call(
        &client,
        tool("get-structured-content", json!({"location": "Chicago"})),
    )
    .await
    .unwrap();
    let value = structured.structured_content.expect("structuredContent");
    assert!(value.is_object(), "{value}");
    assert!(!structured.content.is_empty());
    shutdown_and_check_group(&client).await;
}

#[tokio::test]
async fn everything_reports_progress_of_a_long_running_operation() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let client = stdio_client("everything", &cmd);
    let progress = ProgressHandle::new();
    let result = call(
        &client,
        tool(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
        )
        .with_progress(progress.clone()),
    )
    .await
    .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(progress.notifications(), 4);
    shutdown_and_check_group(&client).await;
}

#[tokio::test]
async fn everything_bumps_the_tools_generation_when_it_says_the_list_changed() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let client = stdio_client("everything", &cmd);
    let mut generation = client.tools_changed();
    client.start().await.unwrap();
    // server-everything sends notifications/tools/list_changed right after initialized.
    tokio::time::timeout(Duration::from_secs(30), generation.changed())
        .await
        .expect("a tools/list_changed notification")
        .unwrap();
    assert!(*generation.borrow() >= 1);
    shutdown_and_check_group(&client).await;
}

// --- Python SDK ----------------------------------------------------------------------------------

fn python(version: PyMcp) -> Option<McpClient> {
    let cmd = peers::require(
        peers::python_server(version, peers::PyMode::Stdio),
        &version.name(),
    )?;
    Some(stdio_client(&format!("py{}", version.version()), &cmd))
}

#[tokio::test]
async fn python_servers_list_their_tools_with_annotations() {
    for version in PyMcp::ALL {
        let Some(client) = python(version) else {
            continue;
        };
        let tools = client.list_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "add",
                "big",
                "echo",
                "fail",
                "idem",
                "sample",
                "sample_raw",
                "slow",
                "weather"
            ],
            "{}",
            version.name()
        );
        let idem = tools.iter().find(|t| t.name == "idem").unwrap();
        assert!(idem.is_retry_safe(), "{}", version.name());
        let echo = tools.iter().find(|t| t.name == "echo").unwrap();
        assert!(!echo.is_retry_safe(), "{}", version.name());
        shutdown_and_check_group(&client).await;
    }
}

#[tokio::test]
async fn python_servers_answer_echo_big_and_fail() {
    for version in PyMcp::ALL {
        let Some(client) = python(version) else {
            continue;
        };
        let name = version.name();
        let echo = call(&client, tool("echo", json!({"message": "ß→✓"})))
            .await
            .unwrap();
        assert_eq!(echo.joined_text(), "Echo: ß→✓", "{name}");
        let big = call(&client, tool("big", json!({"n": 200_000})))
            .await
            .unwrap();
        assert_eq!(big.joined_text().len(), 200_000, "{name}");
        assert!(big.joined_text().bytes().all(|b| b == b'x'));
        let fail = call(&client, ToolCall::new("fail")).await.unwrap();
        assert!(fail.is_error, "{name}: {fail:?}");
        assert!(fail.joined_text().contains("failed on purpose"), "{name}");
        shutdown_and_check_group(&client).await;
    }
}

#[tokio::test]
async fn python_servers_get_their_sampling_requests_refused() {
    for version in PyMcp::ALL {
        // Server→client requests are a legacy-era thing: a 2.3.0 server spoken to in the
        // 2026-07-28 era has no back-channel for them ("Cannot send 'sampling/createMessage'");
        // sampling refused in that era's form is in tests/http/mrtr.rs.
        let Some(cmd) = peers::require(
            peers::python_server(version, peers::PyMode::Stdio),
            &version.name(),
        ) else {
            continue;
        };
        let legacy = ClientOptions::default().era(kaged_mcp::client::EraPreference::Legacy);
        let client = stdio_client_with(&format!("py{}", version.version()), &cmd, legacy);
        let name = version.name();
        let sample = call(&client, ToolCall::new("sample")).await.unwrap();
        let text = sample.joined_text();
        assert!(text.starts_with("sampling error:"), "{name}: {text}");
        assert!(text.contains("not supported"), "{name}: {text}");
        assert_eq!(client.sampling_refused_count(), 1, "{name}");

        // Uncaught: 1.x makes it an isError result, 2.x fails the call with our JSON-RPC error.
        match call(&client, ToolCall::new("sample_raw")).await {
            Ok(r) => assert!(r.is_error, "{name}: {r:?}"),
            Err(e) => {
                let ce = ClientError::find(&*e).expect("a ClientError");
                assert!(
                    ce.kind() == ErrorKind::JsonRpc && ce.code() == Some(-32601),
                    "{name}: {ce}"
                );
            }
        }
        assert_eq!(client.sampling_refused_count(), 2, "{name}");
        // Nothing broke.
        assert_eq!(
            call(&client, tool("echo", json!({"message": "ok"})))
                .await
                .unwrap()
                .joined_text(),
            "Echo: ok"
        );
        shutdown_and_check_group(&client).await;
    }
}

#[tokio::test]
async fn python_servers_go_on_after_a_call_is_given_up() {
    for version in PyMcp::ALL {
        let Some(client) = python(version) else {
            continue;
        };
        let name = version.name();
        client.start().await.unwrap();
        // The caller gives up on a slow call: the client sends notifications/cancelled.
        let slow = tokio::time::timeout(
            Duration::from_millis(200),
            call(&client, tool("slow", json!({"ms": 5_000}))),
        )
        .await;
        assert!(
            slow.is_err(),
            "{name}: the slow call should still be running"
        );
        // Calls in flight at once all get their own answer.
        let calls = (0..20).map(|i| {
            let client = client.clone();
            async move { call(&client, tool("echo", json!({"message": i.to_string()}))).await }
        });
        for (i, r) in futures::future::join_all(calls)
            .await
            .into_iter()
            .enumerate()
        {
            assert_eq!(r.unwrap().joined_text(), format!("Echo: {i}"), "{name}");
        }
        shutdown_and_check_group(&client).await;
    }
}

/// `@playwright/mcp` 0.0.86 lists zod `.default()` fields as `required`
/// (`browser_take_screenshot.scale`, `browser_console_messages.level`,
/// `browser_network_requests.static`) and accepts them missing. Against its real `tools/list`
/// (no browser needed to list), the calls an operator made are valid locally; a property that
/// is required without a default (`browser_navigate.url`) is still demanded. On 79ff2ee each of
/// the three calls was refused: `required: "scale" is a required property`.
#[tokio::test]
async fn playwright_calls_that_leave_defaulted_fields_out_pass_local_validation() {
    use kaged_mcp::validate::{ToolSchemas, Validation};
    let Some(cmd) = peers::require(peers::playwright_stdio(), "@playwright/mcp 0.0.86") else {
        return;
    };
    let client = stdio_client("playwright", &cmd);
    let tools = client.list_tools().await.unwrap();
    let schemas = |name: &str| {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        std::sync::Arc::new(ToolSchemas::compile("playwright", tool, Validation::Both))
    };
    for (name, args) in [
        ("browser_take_screenshot", json!({"type": "png"})),
        ("browser_console_messages", json!({})),
        ("browser_network_requests", json!({})),
    ] {
        let mut arguments = args.as_object().cloned().map(std::sync::Arc::new);
        let checked = schemas(name).check_arguments(&mut arguments);
        assert!(checked.is_ok(), "{name} {args}: {checked:?}");
    }
    let mut no_url = Some(std::sync::Arc::new(serde_json::Map::new()));
    let (violations, _) = schemas("browser_navigate")
        .check_arguments(&mut no_url)
        .unwrap_err();
    assert!(
        violations.iter().any(|v| v.message.contains("\"url\"")),
        "{violations:?}"
    );
    shutdown_and_check_group(&client).await;
}
