//! The client over stdio against misbehaving servers (`tests/servers/faulty/faulty.py`, one
//! fault per `--mode`). Each test asserts the promised outcome: a prompt error naming the
//! server, a session that goes on where it can, and no process left behind (checked in
//! `/proc` for the server's process group).

use std::time::Duration;

use kaged_mcp::client::{ClientError, ClientOptions, ErrorKind, McpClient, ServerState, ToolCall};
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::transport::{StdioConfig, StdioTransport};
use kaged_mcp_layers::retry::NotSent;
use peers::Fault;
use serde_json::{json, Value};
use tower::{BoxError, ServiceExt};

use crate::common::peers;

fn server_name(mode: Fault) -> String {
    format!("faulty-{}", mode.as_str())
}

fn faulty_with(mode: Fault, env: &[(&str, String)], options: ClientOptions) -> McpClient {
    let config = StdioConfig::from_command(&peers::faulty(mode))
        .unwrap()
        .env(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    McpClient::new(server_name(mode), StdioTransport::new(config), options)
}

fn faulty(mode: Fault) -> McpClient {
    faulty_with(mode, &[], ClientOptions::default())
}

async fn call(client: &McpClient, call: ToolCall) -> Result<ToolResult, BoxError> {
    client.clone().oneshot(call).await
}

fn echo(message: &str) -> ToolCall {
    ToolCall::new("echo").with_json_arguments(json!({ "message": message }))
}

fn client_error(err: &BoxError) -> &ClientError {
    ClientError::find(&**err).unwrap_or_else(|| panic!("not a ClientError: {err}"))
}

/// Waits (bounded) until no process of group `pgid` is left, zombies included, then asserts it.
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

/// Our own child processes whose command line contains `needle`, with their state.
fn own_children_matching(needle: &str) -> Vec<(i32, String)> {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.to_owned();
        let ppid = fields.next()?;
        (ppid == me && cmdline.contains(needle)).then_some((pid, state))
    })
    .collect()
}

async fn assert_no_child_matching(needle: &str) {
    for _ in 0..500 {
        if own_children_matching(needle).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("children left: {:?}", own_children_matching(needle));
}

#[tokio::test]
async fn the_well_behaved_baseline_answers_and_shuts_down_cleanly() {
    let client = faulty(Fault::Ok);
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(
        call(&client, echo("hi")).await.unwrap().joined_text(),
        "Echo: hi"
    );
    let pid = client.process_id().unwrap();
    client.shutdown().await;
    assert_group_gone(pid).await;
}

#[tokio::test]
async fn a_crash_mid_call_fails_the_call_at_once_naming_the_server_with_status_and_stderr() {
    let client = faulty(Fault::Crash);
    client.start().await.unwrap();
    let pid = client.process_id().unwrap();
    let err = call(&client, echo("boom")).await.unwrap_err();
    assert!(!NotSent::in_chain(&*err), "the call was sent");
    match client_error(&err) {
        e if e.kind() == ErrorKind::Exited => {
            let stderr_tail = e.stderr_tail().unwrap();
            assert_eq!(e.server(), "faulty-crash");
            assert_eq!(e.exit_status().and_then(|s| s.code()), Some(3));
            assert!(stderr_tail.contains("crashing mid-call"), "{stderr_tail}");
            assert_eq!(e.request().unwrap().method, "tools/call");
        }
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("faulty-crash") && text.contains("exit status: 3"),
        "{text}"
    );
    assert_eq!(client.state(), ServerState::Restarting);
    assert_group_gone(pid).await;
    // The restart waits for its backoff: the next call fails fast, not sent.
    let err = call(&client, echo("again")).await.unwrap_err();
    assert!(NotSent::in_chain(&*err));
    assert_eq!(client_error(&err).kind(), ErrorKind::BackingOff);
}

#[tokio::test]
async fn a_call_given_up_on_is_cancelled_and_the_session_goes_on() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let client = faulty_with(
        Fault::NeverAnswer,
        &[("KAGED_REQUEST_LOG", log.path().display().to_string())],
        ClientOptions::default(),
    );
    client.start().await.unwrap();
    let given_up =
        tokio::time::timeout(Duration::from_millis(300), call(&client, echo("never"))).await;
    assert!(given_up.is_err(), "the server never answers");
    // A round trip after the cancellation: the server has read it by then.
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    let entries = peers::read_request_log(log.path());
    let call_id = entries
        .iter()
        .find(|e| e["method"] == "tools/call")
        .map(|e| e["id"].clone())
        .expect("the call reached the server");
    let cancelled: Vec<&Value> = entries
        .iter()
        .filter(|e| e["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{entries:?}");
    assert_eq!(cancelled[0]["requestId"], call_id);
    assert!(
        !entries
            .iter()
            .any(|e| e["method"] == "notifications/cancelled" && e["requestId"] == 0),
        "initialize (id 0) is never cancelled"
    );
    assert_eq!(client.state(), ServerState::Ready);
    let pid = client.process_id().unwrap();
    client.shutdown().await;
    assert_group_gone(pid).await;
}

#[tokio::test]
async fn garbage_on_stdout_is_skipped_and_answers_still_arrive() {
    let client = faulty(Fault::Garbage);
    assert_eq!(client.list_tools().await.unwrap()[0].name, "echo");
    for i in 0..5 {
        let text = call(&client, echo(&format!("g{i}")))
            .await
            .unwrap()
            .joined_text();
        assert_eq!(text, format!("Echo: g{i}"));
    }
    assert_eq!(client.state(), ServerState::Ready);
    let pid = client.process_id().unwrap();
    client.shutdown().await;
    assert_group_gone(pid).await;
}

/// A program that prints text and then nothing MCP (issue 49, point 8) fails its start once
/// the noise grace has passed after that text, not at the end of the probe and initialize
/// timeouts, naming the command and the line, escaped; its process is ended.
#[tokio::test]
async fn a_program_that_prints_text_and_no_json_rpc_fails_its_start_naming_the_line() {
    let config = StdioConfig::new("sh").args([
        "-c",
        "printf 'hello \\033[31mred\\033[0m\\n'; exec sleep 61",
    ]);
    let options = ClientOptions::default()
        .noise_grace(Duration::from_millis(300))
        .probe_timeout(Duration::from_secs(30))
        .initialize_timeout(Duration::from_secs(30));
    let client = McpClient::new("notmcp", StdioTransport::new(config), options);
    // A bound on a hang, not a timing assertion: without the grace the start would wait out
    // the 30 s probe timeout, then initialize's.
    let err = tokio::time::timeout(Duration::from_secs(15), client.start())
        .await
        .expect("the start failed before the probe timeout")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolViolation, "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with("MCP server `notmcp`")
            && text.contains("`stdio: sh -c printf 'hello \\033[31mred")
            && text.contains("wrote `hello \\u{1b}[31mred\\u{1b}[0m` on stdout")
            && text.contains("no JSON-RPC message within 300 ms")
            && !text.contains('\x1b'),
        "{text}"
    );
    client.shutdown().await;
    assert_no_child_matching("sleep 61").await;
}

/// A banner before the JSON-RPC stays tolerated, with a short grace: the answers follow it.
#[tokio::test]
async fn text_followed_by_json_rpc_within_the_grace_starts() {
    let options = ClientOptions::default().noise_grace(Duration::from_millis(300));
    let client = faulty_with(Fault::Garbage, &[], options);
    client.start().await.unwrap();
    // The grace passes: the session stays.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(client.list_tools().await.unwrap()[0].name, "echo");
    assert_eq!(client.state(), ServerState::Ready);
    client.shutdown().await;
}

#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_keep_the_call_or_any_process_alive() {
    let client = faulty(Fault::Grandchild);
    client.start().await.unwrap();
    let pid = client.process_id().unwrap();
    let err = call(&client, echo("spawn")).await.unwrap_err();
    match client_error(&err) {
        e if e.kind() == ErrorKind::Exited => {
            let stderr_tail = e.stderr_tail().unwrap();
            assert_eq!(e.server(), "faulty-grandchild");
            assert_eq!(e.exit_status().and_then(|s| s.code()), Some(0));
            assert!(stderr_tail.contains("grandchild pid"), "{stderr_tail}");
        }
        other => panic!("{other}"),
    }
    // `sleep 1000` was in the server's process group: it is gone too.
    assert_group_gone(pid).await;
}

#[tokio::test]
async fn a_cursor_that_never_advances_stops_list_tools_naming_the_server() {
    let client = faulty(Fault::CursorLoop);
    let err = client.list_tools().await.unwrap_err();
    assert!(
        err.kind() == ErrorKind::Pagination && err.server() == "faulty-cursor_loop",
        "{err}"
    );
    assert!(
        err.to_string().contains("\"same-cursor\" came back twice"),
        "{err}"
    );
    // The session itself is fine.
    assert_eq!(
        call(&client, echo("x")).await.unwrap().joined_text(),
        "Echo: x"
    );
    let pid = client.process_id().unwrap();
    client.shutdown().await;
    assert_group_gone(pid).await;
}

#[tokio::test]
async fn paginated_tools_are_all_listed() {
    let client = faulty(Fault::Paginated);
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["t1", "t2", "t3", "t4", "t5", "t6", "t7"]);
    client.shutdown().await;
}

#[tokio::test]
async fn ping_and_sampling_in_the_middle_of_a_call_are_answered_and_refused() {
    let client = faulty(Fault::ServerRequests);
    let result = call(&client, echo("dance")).await.unwrap();
    let answers: Value = serde_json::from_str(&result.joined_text()).unwrap();
    assert_eq!(answers["ping"], json!({"id": "p1", "result": {}}));
    assert_eq!(answers["sampling"]["id"], 7);
    assert_eq!(answers["sampling"]["error"]["code"], -32601);
    assert!(answers["sampling"].get("result").is_none());
    let message = answers["sampling"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("sampling"), "{message}");
    assert_eq!(client.sampling_refused_count(), 1);
    client.shutdown().await;
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_refused_and_the_server_stopped() {
    let client = faulty(Fault::BadVersion);
    let err = client.start().await.unwrap_err();
    assert!(
        err.kind() == ErrorKind::UnsupportedProtocolVersion
            && err.server() == "faulty-bad_version"
            && err.version() == Some("1999-01-01"),
        "{err}"
    );
    assert_eq!(client.state(), ServerState::Restarting);
    assert_eq!(client.process_id(), None);
    assert_no_child_matching("--mode bad_version").await;
}

#[tokio::test]
async fn a_server_that_exits_before_initialize_fails_with_its_stderr_and_the_call_was_not_sent() {
    let client = faulty(Fault::ExitBeforeInit);
    let err = call(&client, echo("x")).await.unwrap_err();
    assert!(NotSent::in_chain(&*err), "never reached the server: {err}");
    match client_error(&err) {
        e if e.kind() == ErrorKind::Exited => {
            let stderr_tail = e.stderr_tail().unwrap();
            assert_eq!(e.server(), "faulty-exit_before_init");
            assert_eq!(e.exit_status().and_then(|s| s.code()), Some(1));
            assert!(
                stderr_tail.contains("exiting with code 1 before initialize"),
                "{stderr_tail}"
            );
            assert_eq!(e.request().unwrap().method, "initialize");
        }
        other => panic!("{other}"),
    }
    assert_no_child_matching("--mode exit_before_init").await;
}

#[tokio::test]
async fn repeated_start_failures_mark_the_server_failed_until_reenabled() {
    let options =
        ClientOptions::default().backoff(Duration::from_millis(5), Duration::from_millis(20));
    let client = faulty_with(Fault::ExitBeforeInit, &[], options);
    let mut attempts = 0;
    while client.state() != ServerState::Failed {
        let err = call(&client, echo("x")).await.unwrap_err();
        assert!(NotSent::in_chain(&*err));
        match client_error(&err) {
            e if e.kind() == ErrorKind::BackingOff => {
                tokio::time::sleep(e.retry_in().unwrap()).await
            }
            e if e.kind() == ErrorKind::Exited => attempts += 1,
            other => panic!("{other}"),
        }
        assert!(attempts <= 5, "more than five attempts");
    }
    assert_eq!(attempts, 5);
    let err = call(&client, echo("x")).await.unwrap_err();
    let failed = client_error(&err);
    assert!(
        failed.kind() == ErrorKind::ServerFailed && failed.failures() == Some(5),
        "{failed}"
    );
    assert!(
        failed.to_string().contains("exiting with code 1"),
        "{failed}"
    );
    client.reenable();
    assert_eq!(client.start().await.unwrap_err().kind(), ErrorKind::Exited);
    assert_no_child_matching("--mode exit_before_init").await;
}

#[tokio::test]
async fn a_program_that_does_not_exist_fails_to_spawn_naming_server_and_program() {
    let config = StdioConfig::new("/nonexistent/kaged-test-server");
    let client = McpClient::new(
        "ghost",
        StdioTransport::new(config),
        ClientOptions::default(),
    );
    let err = call(&client, echo("x")).await.unwrap_err();
    assert!(NotSent::in_chain(&*err));
    let text = client_error(&err).to_string();
    assert!(
        text.contains("`ghost`") && text.contains("/nonexistent/kaged-test-server"),
        "{text}"
    );
}

#[tokio::test]
async fn list_changed_notifications_bump_the_generation_and_the_list_grows() {
    let client = faulty(Fault::ListChanged);
    let generation = client.tools_changed();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    call(&client, echo("one")).await.unwrap();
    // The notification follows the answer: a round trip makes sure it was read.
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["echo", "extra1"]);
    assert_eq!(*generation.borrow(), 1);
    client.shutdown().await;
}

#[tokio::test]
async fn dropping_the_client_in_a_runtime_kills_the_group() {
    let client = faulty(Fault::Ok);
    client.start().await.unwrap();
    let pid = client.process_id().unwrap();
    drop(client);
    assert_group_gone(pid).await;
}

#[test]
fn dropping_the_client_outside_a_runtime_kills_and_reaps_the_group_synchronously() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime.block_on(async {
        let client = faulty(Fault::Ok);
        client.start().await.unwrap();
        client
    });
    let pid = i32::try_from(client.process_id().unwrap()).unwrap();
    drop(runtime);
    assert!(!peers::processes_in_group(pid).is_empty());
    drop(client);
    assert_eq!(peers::processes_in_group(pid), Vec::new());
}

/// A server that exits as it starts is restarted with backoff until it is marked failed; its
/// first start probes the era and falls back to `initialize` on a new process, and the era
/// that probe found is kept across the restarts (the failure is not about the era), so each
/// restart spawns it once (every start forgot it and spawned it twice: 10 processes for 5
/// attempts).
#[tokio::test]
async fn a_server_that_exits_at_start_is_spawned_once_per_restart() {
    let dir = tempfile::tempdir().unwrap();
    let spawns = dir.path().join("spawns");
    let script = format!("echo spawned >> '{}'; exit 3", spawns.display());
    let transport = StdioTransport::new(StdioConfig::new("sh").args(["-c", script.as_str()]));
    let options = ClientOptions::default()
        .backoff(Duration::from_millis(1), Duration::from_millis(1))
        .wait_for_restart(Duration::from_secs(5));
    let client = McpClient::new("crashy", transport, options);
    for _ in 0..5 {
        assert!(client.start().await.is_err());
    }
    assert_eq!(client.state(), ServerState::Failed);
    assert_eq!(client.restarts(), 4);
    assert_eq!(client.era(), Some(kaged_mcp::client::Era::Legacy));
    let spawned = std::fs::read_to_string(&spawns).unwrap().lines().count();
    assert_eq!(
        spawned, 6,
        "the first start twice (probe, then initialize), then once each"
    );
}
