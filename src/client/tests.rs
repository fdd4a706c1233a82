//! Unit tests of the session and its supervision over an in-memory transport.
//!
//! [`MockTransport`] (the crate's one mock, `crate::test_util`) runs a scripted server in the
//! test's process: every frame the client sends is parsed and handed to the script, which
//! answers through the handler (synchronously, so the tests need no sleeps) or closes the
//! connection. Time-dependent behaviour (backoff, the failed state) runs on tokio's paused
//! clock.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kaged_mcp_layers::retry::NotSent;
use kaged_mcp_layers::timeout::ProgressHandle;
use serde_json::{json, Value};
use tower::{BoxError, Service, ServiceExt};

use super::listen::listen_refused;
use super::*;
use crate::test_util::{Act, MockTransport};

fn method(msg: &Value) -> &str {
    msg.get("method").and_then(Value::as_str).unwrap_or("")
}

fn init_reply(msg: &Value, version: &str) -> Act {
    Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
        "protocolVersion": version, "capabilities": {"tools": {}},
        "serverInfo": {"name": "mock", "version": "1.0"}}}))
}

/// A well-behaved server: initialize, one tool, `echo`.
fn well_behaved(msg: &Value) -> Vec<Act> {
    match method(msg) {
        "initialize" => vec![init_reply(msg, "2025-11-25")],
        "tools/list" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}))],
        "tools/call" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "content":[{"type":"text","text": format!("Echo: {}", msg["params"]["arguments"]["message"].as_str().unwrap_or(""))}]}}))],
        _ => vec![],
    }
}

/// A client whose restart delays are the exact doubling ceilings (the schedule is pinned
/// here; the jitter drawn below it has its own test in `options.rs`).
fn client(transport: MockTransport) -> McpClient {
    McpClient::new("mock", transport, exact())
}

/// Options whose restart delays are the exact doubling ceilings.
fn exact() -> ClientOptions {
    ClientOptions::default().backoff_jitter(kaged_mcp_layers::retry::Jitter::None)
}

fn echo(message: &str) -> ToolCall {
    ToolCall::new("echo").with_json_arguments(json!({ "message": message }))
}

async fn call(c: &McpClient, call: ToolCall) -> Result<crate::protocol::ToolResult, BoxError> {
    c.clone().oneshot(call).await
}

fn client_error(err: &BoxError) -> &ClientError {
    ClientError::find(&**err).unwrap_or_else(|| panic!("not a ClientError: {err}"))
}

// --- the handshake --------------------------------------------------------------------------

#[tokio::test]
async fn initialize_offers_the_latest_version_no_sampling_and_then_sends_initialized() {
    let t = MockTransport::new(well_behaved);
    let c = client(t.clone());
    assert_eq!(c.state(), ServerState::Idle);
    c.start().await.unwrap();
    assert_eq!(c.state(), ServerState::Ready);
    let seen = t.seen();
    assert_eq!(
        t.seen_methods(),
        ["initialize", "notifications/initialized"]
    );
    let params = &seen[0]["params"];
    assert_eq!(params["protocolVersion"], "2025-11-25");
    // No capability but the skills extension, which the client speaks (issue 49).
    assert_eq!(
        params["capabilities"],
        json!({"extensions": {"io.modelcontextprotocol/skills": {}}})
    );
    assert_eq!(params["clientInfo"]["name"], "kaged-mcp");
    assert_eq!(params["clientInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(c.server_info().unwrap().name, "mock");
    assert_eq!(c.protocol_version().as_deref(), Some("2025-11-25"));
}

#[tokio::test]
async fn every_supported_version_is_accepted() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let t = MockTransport::new(move |msg| match method(msg) {
            "initialize" => vec![init_reply(msg, version)],
            _ => well_behaved(msg),
        });
        let c = client(t);
        c.start().await.unwrap();
        assert_eq!(c.protocol_version().as_deref(), Some(version));
    }
}

#[tokio::test]
async fn an_unsupported_version_is_refused_naming_server_and_version() {
    let t = MockTransport::new(|msg| match method(msg) {
        "initialize" => vec![init_reply(msg, "2099-01-01")],
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    let err = c.start().await.unwrap_err();
    assert!(err.version() == Some("2099-01-01"));
    let text = err.to_string();
    assert!(
        text.contains("`mock`") && text.contains("2099-01-01"),
        "{text}"
    );
    assert_eq!(c.state(), ServerState::Restarting);
    assert!(!t
        .seen_methods()
        .contains(&"notifications/initialized".to_owned()));
}

// --- calls ----------------------------------------------------------------------------------

#[tokio::test]
async fn a_call_waits_for_the_start_up_then_returns_the_answer() {
    let c = client(MockTransport::new(well_behaved));
    let result = call(&c, echo("hi")).await.unwrap();
    assert_eq!(result.joined_text(), "Echo: hi");
    assert!(!result.is_error);
}

#[tokio::test]
async fn a_result_before_its_id_is_routed_too() {
    let t = MockTransport::new(|msg| {
        match method(msg) {
        "tools/call" => vec![Act::Raw(
            format!(
                r#"{{"result":{{"content":[{{"text":"late id","type":"text"}}],"isError":true}},"jsonrpc":"2.0","id":{}}}"#,
                msg["id"]
            )
            .into_bytes(),
        )],
        _ => well_behaved(msg),
    }
    });
    let c = client(t);
    let result = call(&c, echo("x")).await.unwrap();
    assert_eq!(result.joined_text(), "late id");
    assert!(result.is_error);
}

#[tokio::test]
async fn a_jsonrpc_error_names_server_request_and_code_and_was_sent() {
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],
            "error":{"code":-32602,"message":"Unknown tool: nope","data":{"x":1}}}))],
        _ => well_behaved(msg),
    });
    let c = client(t);
    let err = call(&c, ToolCall::new("nope")).await.unwrap_err();
    assert!(!NotSent::in_chain(&*err), "the request reached the server");
    let failed = client_error(&err);
    assert_eq!(failed.kind(), ErrorKind::JsonRpc, "{failed}");
    assert_eq!(failed.code(), Some(-32602));
    assert_eq!(failed.message(), Some("Unknown tool: nope"));
    assert_eq!(failed.request().unwrap().method, "tools/call");
    assert_eq!(failed.data().unwrap()["x"], 1);
    assert!(err.to_string().contains("`mock`"));
}

#[tokio::test]
async fn an_invalid_result_fails_the_call_as_a_protocol_violation() {
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],
            "result":{"content":[{"type":"text"}]}}))],
        _ => well_behaved(msg),
    });
    let c = client(t);
    let err = call(&c, echo("x")).await.unwrap_err();
    assert!(
        client_error(&err).kind() == ErrorKind::ProtocolViolation
            && client_error(&err).request().unwrap().method == "tools/call"
    );
    // The session goes on.
    assert_eq!(c.state(), ServerState::Ready);
}

#[tokio::test]
async fn garbage_lines_are_skipped_and_the_session_goes_on() {
    let t = MockTransport::new(|msg| {
        let mut acts = vec![
            Act::Raw("not json at all".into()),
            Act::Raw("{\"broken\":".into()),
            Act::Raw("[1,2,3]".into()),
            Act::Raw("{\"jsonrpc\":\"2.0\"}".into()),
        ];
        acts.extend(well_behaved(msg));
        acts
    });
    let c = client(t);
    assert_eq!(
        call(&c, echo("still")).await.unwrap().joined_text(),
        "Echo: still"
    );
}

#[tokio::test]
async fn a_dropped_call_sends_cancelled_and_its_late_answer_is_dropped_quietly() {
    let late: Arc<Mutex<Option<Value>>> = Arc::default();
    let keep = Arc::clone(&late);
    let t = MockTransport::new(move |msg| match method(msg) {
        "tools/call" if msg["params"]["name"] == "slow" => {
            *keep.lock().unwrap() = Some(msg["id"].clone());
            vec![]
        }
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    c.start().await.unwrap();
    let mut fut = c.clone().call(ToolCall::new("slow"));
    assert!(futures::poll!(&mut fut).is_pending());
    drop(fut);
    let id = late.lock().unwrap().clone().expect("the call was sent");
    let seen = t.seen();
    let cancelled = seen.last().unwrap();
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], id);
    // The late answer arrives now: nobody waits for it, nothing breaks.
    let handler_answer = json!({"jsonrpc":"2.0","id":id,"result":{"content":[]}});
    let session = c.shared.lock().session.clone().unwrap();
    crate::transport::InboundHandler::on_frame(&*session, handler_answer.to_string().as_bytes());
    assert_eq!(
        call(&c, echo("after")).await.unwrap().joined_text(),
        "Echo: after"
    );
}

#[tokio::test]
async fn initialize_is_never_cancelled() {
    let t = MockTransport::new(|msg| match method(msg) {
        "initialize" => vec![],
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    let mut fut = c.clone().call(echo("x"));
    assert!(futures::poll!(&mut fut).is_pending());
    tokio::task::yield_now().await;
    drop(fut);
    tokio::task::yield_now().await;
    assert_eq!(t.seen_methods(), ["initialize"]);
}

#[tokio::test]
async fn progress_reaches_the_calls_handle_and_the_token_is_the_request_id() {
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" if msg["params"].get("_meta").is_some() => {
            let token = msg["params"]["_meta"]["progressToken"].clone();
            assert_eq!(token, msg["id"]);
            let progress = |p: u32| {
                Act::Reply(json!({"jsonrpc":"2.0","method":"notifications/progress",
                    "params":{"progressToken":token,"progress":p,"total":2}}))
            };
            let mut acts = vec![progress(1), progress(2)];
            acts.extend(well_behaved(msg));
            acts
        }
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    let handle = ProgressHandle::new();
    call(&c, echo("p").with_progress(handle.clone()))
        .await
        .unwrap();
    assert_eq!(handle.notifications(), 2);
    // Without a handle, no token is sent.
    call(&c, echo("q")).await.unwrap();
    let last_call = t
        .seen()
        .into_iter()
        .rev()
        .find(|m| m["method"] == "tools/call")
        .unwrap();
    assert!(last_call["params"].get("_meta").is_none());
}

#[tokio::test]
async fn list_changed_bumps_the_tools_generation() {
    let t = MockTransport::new(|msg| {
        let mut acts = well_behaved(msg);
        if method(msg) == "tools/call" {
            acts.push(Act::Reply(
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
            ));
        }
        acts
    });
    let c = client(t);
    let rx = c.tools_changed();
    assert_eq!(*rx.borrow(), 0);
    call(&c, echo("a")).await.unwrap();
    call(&c, echo("b")).await.unwrap();
    assert_eq!(*rx.borrow(), 2);
}

#[tokio::test]
async fn server_requests_get_ping_answered_and_everything_else_refused() {
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => {
            let mut acts: Vec<Act> = [
                json!({"jsonrpc":"2.0","id":"p1","method":"ping"}),
                json!({"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}),
                json!({"jsonrpc":"2.0","id":0,"method":"roots/list"}),
                json!({"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}),
                json!({"jsonrpc":"2.0","id":2,"method":"x/unknown"}),
            ]
            .into_iter()
            .map(Act::Reply)
            .collect();
            acts.extend(well_behaved(msg));
            acts
        }
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    call(&c, echo("x")).await.unwrap();
    let answers: Vec<Value> = t
        .seen()
        .into_iter()
        .filter(|m| m.get("method").is_none())
        .collect();
    assert_eq!(answers.len(), 5, "{answers:?}");
    assert_eq!(answers[0], json!({"jsonrpc":"2.0","id":"p1","result":{}}));
    for (answer, id) in answers[1..]
        .iter()
        .zip([json!(7), json!(0), json!(1), json!(2)])
    {
        assert_eq!(answer["id"], id);
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        assert!(answer.get("result").is_none());
    }
    assert!(answers[1]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("sampling"));
    assert_eq!(c.sampling_refused_count(), 1);
}

/// An elicitation handler that accepts with no values, keeping the servers that asked.
fn accepting_handler() -> (elicitation::ElicitationService, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    let handler = elicitation::ElicitationService::new(tower::service_fn(
        move |req: elicitation::ElicitRequest| {
            log.lock().unwrap().push(req.server.to_string());
            async { Ok::<_, BoxError>(elicitation::ElicitResult::Accept(Default::default())) }
        },
    ));
    (handler, asked)
}

#[tokio::test]
async fn elicitation_is_advertised_only_with_a_handler() {
    let t = MockTransport::new(well_behaved);
    client(t.clone()).start().await.unwrap();
    assert_eq!(
        t.seen()[0]["params"]["capabilities"],
        json!({"extensions": {"io.modelcontextprotocol/skills": {}}})
    );

    let t = MockTransport::new(well_behaved);
    let (handler, _) = accepting_handler();
    let options = exact().elicitation_handler(handler);
    McpClient::new("mock", t.clone(), options)
        .start()
        .await
        .unwrap();
    assert_eq!(
        t.seen()[0]["params"]["capabilities"],
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    );
}

#[tokio::test]
async fn an_elicitation_during_a_call_is_answered_with_the_schemas_defaults() {
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => {
            let mut acts = vec![Act::Reply(json!({"jsonrpc":"2.0","id":"e1",
                "method":"elicitation/create","params":{"message":"confirm",
                "requestedSchema":{"type":"object","properties":{
                    "name":{"type":"string","default":"John Doe"},
                    "verified":{"type":"boolean","default":true}}}}}))];
            acts.extend(well_behaved(msg));
            acts
        }
        _ => well_behaved(msg),
    });
    let (handler, asked) = accepting_handler();
    let options = exact().elicitation_handler(handler);
    let c = McpClient::new("mock", t.clone(), options);
    call(&c, echo("x")).await.unwrap();
    let answer = t
        .seen()
        .into_iter()
        .find(|m| m["id"] == "e1")
        .expect("the elicitation was answered");
    assert_eq!(
        answer,
        json!({"jsonrpc":"2.0","id":"e1","result":{"action":"accept",
            "content":{"name":"John Doe","verified":true}}})
    );
    assert_eq!(*asked.lock().unwrap(), ["mock"]);
}

#[tokio::test]
async fn a_server_request_with_an_id_like_ours_is_not_taken_for_an_answer() {
    // Our first tools/call has id 1 (initialize took 0); the server sends a request with id 1
    // before answering.
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => {
            let mut acts = vec![Act::Raw(
                format!(r#"{{"id":{},"jsonrpc":"2.0","method":"ping"}}"#, msg["id"]).into_bytes(),
            )];
            acts.extend(well_behaved(msg));
            acts
        }
        _ => well_behaved(msg),
    });
    let c = client(t);
    assert_eq!(
        call(&c, echo("same id")).await.unwrap().joined_text(),
        "Echo: same id"
    );
}

#[tokio::test]
async fn too_many_calls_in_flight_fail_fast_without_being_sent() {
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => vec![],
        _ => well_behaved(msg),
    });
    let options = ClientOptions {
        max_in_flight: 2,
        ..exact()
    };
    let c = McpClient::new("mock", t, options);
    c.start().await.unwrap();
    let mut a = c.clone().call(echo("a"));
    let mut b = c.clone().call(echo("b"));
    assert!(futures::poll!(&mut a).is_pending());
    assert!(futures::poll!(&mut b).is_pending());
    let err = call(&c, echo("c")).await.unwrap_err();
    assert!(NotSent::in_chain(&*err));
    let failed = client_error(&err);
    assert_eq!(failed.kind(), ErrorKind::TooManyInFlight, "{failed}");
    assert_eq!(failed.limit(), Some(2));
}

// --- tools/list -----------------------------------------------------------------------------

fn paged(pages: usize, per_page: usize, cursor_of: fn(usize) -> String) -> MockTransport {
    MockTransport::new(move |msg| match method(msg) {
        "tools/list" => {
            let page: usize = msg["params"]["cursor"]
                .as_str()
                .map_or(0, |c| c.rsplit('-').next().unwrap().parse().unwrap());
            let tools: Vec<Value> = (0..per_page)
                .map(|i| json!({"name": format!("t{page}_{i}"), "inputSchema": {"type":"object"}}))
                .collect();
            let mut result = json!({ "tools": tools });
            if page + 1 < pages {
                result["nextCursor"] = json!(cursor_of(page + 1));
            }
            vec![Act::Reply(
                json!({"jsonrpc":"2.0","id":msg["id"],"result":result}),
            )]
        }
        _ => well_behaved(msg),
    })
}

#[tokio::test]
async fn list_tools_follows_next_cursor_to_the_end() {
    let c = client(paged(3, 2, |n| format!("page-{n}")));
    let names: Vec<String> = c
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["t0_0", "t0_1", "t1_0", "t1_1", "t2_0", "t2_1"]);
}

#[tokio::test]
async fn a_cursor_seen_twice_stops_list_tools_naming_the_server() {
    let c = client(paged(5, 1, |_| "same-1".into()));
    let err = c.list_tools().await.unwrap_err();
    assert!(
        err.kind() == ErrorKind::Pagination && err.server() == "mock",
        "{err}"
    );
    assert!(err.to_string().contains("came back twice"), "{err}");
}

#[tokio::test]
async fn more_than_a_hundred_pages_stops_list_tools() {
    let c = client(paged(1000, 1, |n| format!("p-{n}")));
    let err = c.list_tools().await.unwrap_err();
    assert!(err.to_string().contains("more than 100 pages"), "{err}");
    let c = client(paged(100, 1, |n| format!("p-{n}")));
    assert_eq!(c.list_tools().await.unwrap().len(), 100);
}

#[tokio::test]
async fn more_than_ten_thousand_tools_stops_list_tools() {
    let c = client(paged(3, 4000, |n| format!("p-{n}")));
    let err = c.list_tools().await.unwrap_err();
    assert!(err.to_string().contains("more than 10000 tools"), "{err}");
}

// --- supervision ----------------------------------------------------------------------------

fn crash_on_call() -> MockTransport {
    MockTransport::new(|msg| match method(msg) {
        "tools/call" => vec![Act::close("exited (exit status: 3)")],
        _ => well_behaved(msg),
    })
}

#[tokio::test(start_paused = true)]
async fn a_crash_fails_the_call_at_once_then_the_next_call_restarts_after_the_backoff() {
    let t = crash_on_call();
    let c = client(t.clone());
    let err = call(&c, echo("x")).await.unwrap_err();
    assert!(!NotSent::in_chain(&*err), "the call had been sent");
    let failed = client_error(&err);
    match failed.parts() {
        Kind::Exited {
            reason,
            stderr_tail,
            ..
        } => {
            assert_eq!(failed.server(), "mock");
            assert_eq!(reason, "exited (exit status: 3)");
            assert_eq!(stderr_tail, "mock stderr line");
            assert_eq!(failed.request().unwrap().method, "tools/call");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.state(), ServerState::Restarting);
    assert!(c.last_error().unwrap().contains("exit status: 3"));

    // Within the backoff: fail fast, not sent, no new process.
    let err = call(&c, echo("y")).await.unwrap_err();
    assert!(NotSent::in_chain(&*err));
    assert!(client_error(&err).retry_in() == Some(Duration::from_secs(1)));
    assert_eq!(t.connects(), 1);

    // After it, the next call starts the server again.
    tokio::time::advance(Duration::from_secs(1)).await;
    c.start().await.unwrap();
    assert_eq!(t.connects(), 2);
    assert_eq!(c.state(), ServerState::Ready);
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_and_five_failures_mark_the_server_failed_until_reenabled() {
    let t = MockTransport::new(well_behaved);
    t.refuse(true);
    let c = client(t.clone());
    let mut waited = Vec::new();
    for attempt in 1..=5u32 {
        let err = call(&c, echo("x")).await.unwrap_err();
        assert!(NotSent::in_chain(&*err), "attempt {attempt}: {err}");
        assert!(
            client_error(&err).kind() == ErrorKind::ConnectFailed,
            "attempt {attempt}"
        );
        assert_eq!(t.connects(), attempt as usize);
        if attempt == 5 {
            break;
        }
        let err = call(&c, echo("x")).await.unwrap_err();
        let Kind::BackingOff {
            retry_in,
            last_error,
        } = client_error(&err).parts()
        else {
            panic!("{err}");
        };
        assert!(last_error.contains("no such program"));
        waited.push(retry_in.as_secs());
        tokio::time::advance(*retry_in).await;
    }
    assert_eq!(waited, [1, 2, 4, 8]);
    assert_eq!(c.state(), ServerState::Failed);

    // Failed: fail fast, whatever the time, without trying.
    tokio::time::advance(Duration::from_secs(3600)).await;
    let err = call(&c, echo("x")).await.unwrap_err();
    assert!(NotSent::in_chain(&*err));
    let failed = client_error(&err);
    assert!(failed.failures() == Some(5), "{failed}");
    assert!(failed.to_string().contains("re-enable"), "{failed}");
    assert_eq!(t.connects(), 5);

    // Re-enabled: the next call tries again at once.
    t.refuse(false);
    c.reenable();
    assert_eq!(
        call(&c, echo("back")).await.unwrap().joined_text(),
        "Echo: back"
    );
    assert_eq!(c.state(), ServerState::Ready);
}

#[tokio::test(start_paused = true)]
async fn the_backoff_is_capped_at_sixty_seconds() {
    let t = MockTransport::new(well_behaved);
    t.refuse(true);
    let options = ClientOptions {
        max_consecutive_failures: 20,
        ..exact()
    };
    let c = McpClient::new("mock", t, options);
    let mut waited = Vec::new();
    for _ in 0..9 {
        let _ = call(&c, echo("x")).await.unwrap_err();
        let err = call(&c, echo("x")).await.unwrap_err();
        let Some(retry_in) = &client_error(&err).retry_in() else {
            panic!("{err}")
        };
        waited.push(retry_in.as_secs());
        tokio::time::advance(*retry_in).await;
    }
    assert_eq!(waited, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
}

#[tokio::test(start_paused = true)]
async fn crashes_soon_after_start_count_and_a_long_healthy_run_resets_the_count() {
    let t = crash_on_call();
    let c = client(t.clone());
    // Four quick crashes in a row: 1 s, 2 s, 4 s, 8 s of backoff.
    for n in 1..=4u32 {
        c.start().await.unwrap();
        let _ = call(&c, echo("x")).await.unwrap_err();
        assert_eq!(c.shared.lock().failures, n);
        tokio::time::advance(exact().backoff_delay(n)).await;
    }
    // This session lives long before it crashes: its crash starts a new count.
    c.start().await.unwrap();
    tokio::time::advance(Duration::from_secs(31)).await;
    let _ = call(&c, echo("x")).await.unwrap_err();
    assert_eq!(c.shared.lock().failures, 1);
    assert_eq!(c.state(), ServerState::Restarting);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_answers_each_call_then_dies_is_restarted_and_never_marked_failed() {
    // Each connection answers one call, then ends at once (a server that crashes after every
    // answer, or an SSE stream cut right after it).
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => {
            let mut acts = well_behaved(msg);
            acts.push(Act::close("exited (exit status: 3)"));
            acts
        }
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    for n in 1..=8usize {
        assert_eq!(
            call(&c, echo("x")).await.unwrap().joined_text(),
            "Echo: x",
            "call {n}"
        );
        // Each crash is one failure of a new run: 1 s of backoff every time.
        assert_eq!(c.shared.lock().failures, 1, "after call {n}");
        assert_eq!(c.state(), ServerState::Restarting);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(t.connects(), n);
    }
    assert_ne!(c.state(), ServerState::Failed);
}

#[tokio::test(start_paused = true)]
async fn a_call_during_the_restart_backoff_waits_for_the_restart_when_its_timeout_allows() {
    // The server exits right after answering a call: 1 s of backoff before the next start.
    let script = |msg: &Value| match method(msg) {
        "tools/call" => {
            let mut acts = well_behaved(msg);
            acts.push(Act::close("exited (exit status: 0)"));
            acts
        }
        _ => well_behaved(msg),
    };
    let t = MockTransport::new(script);
    let c = McpClient::new(
        "mock",
        t.clone(),
        exact().wait_for_restart(Duration::from_secs(5)),
    );
    call(&c, echo("a")).await.unwrap();
    assert_eq!(c.state(), ServerState::Restarting);
    tokio::time::advance(Duration::from_millis(300)).await;
    // 700 ms of backoff left, 5 s allowed: the call waits, the server restarts, it goes through.
    let started = Instant::now();
    assert_eq!(call(&c, echo("b")).await.unwrap().joined_text(), "Echo: b");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(700) && waited < Duration::from_millis(800),
        "{waited:?}"
    );
    assert_eq!(t.connects(), 2);
    assert_eq!(c.restarts(), 1);

    // Allowed less than the backoff still to run: it fails at once, saying when.
    let c = McpClient::new(
        "mock",
        MockTransport::new(script),
        exact().wait_for_restart(Duration::from_millis(500)),
    );
    call(&c, echo("a")).await.unwrap();
    let err = call(&c, echo("b")).await.unwrap_err();
    assert!(
        client_error(&err)
            .retry_in()
            .is_some_and(|r| r > Duration::from_millis(500)),
        "{err}"
    );
    // Shut down while a call waits out the backoff: the call fails, nothing restarts.
    let t = MockTransport::new(script);
    let c = McpClient::new(
        "mock",
        t.clone(),
        exact().wait_for_restart(Duration::from_secs(5)),
    );
    call(&c, echo("a")).await.unwrap();
    let mut waiting = c.clone().call(echo("b"));
    assert!(futures::poll!(&mut waiting).is_pending());
    c.shutdown().await;
    let err = waiting.await.unwrap_err();
    assert!(client_error(&err).kind() == ErrorKind::Disabled, "{err}");
    tokio::time::advance(Duration::from_secs(2)).await;
    tokio::task::yield_now().await;
    assert_eq!(t.connects(), 1, "nothing restarted");
    assert_eq!(c.restarts(), 0, "no restart happened, none is counted");

    // A failed server is never waited on.
    c.shared.lock().state = ServerState::Failed;
    let err = call(&c, echo("c")).await.unwrap_err();
    assert!(
        client_error(&err).kind() == ErrorKind::ServerFailed,
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_expired_session_that_worked_restarts_at_once_and_one_that_never_did_backs_off() {
    // Each session answers one call, then expires: restarted at once, no failure counted.
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => {
            let mut acts = well_behaved(msg);
            acts.push(Act::Expire);
            acts
        }
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    for n in 1..=4usize {
        assert_eq!(call(&c, echo("x")).await.unwrap().joined_text(), "Echo: x");
        assert_eq!(c.shared.lock().failures, 0, "after call {n}");
        assert_eq!(c.shared.lock().next_attempt, None, "after call {n}");
        assert_eq!(t.connects(), n);
    }
    // Each session expires before it answers anything (a load balancer without sticky
    // sessions): a failure each time, with backoff, and failed after five.
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/list" => vec![Act::Expire],
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    for n in 1..=5u32 {
        c.start().await.unwrap();
        assert!(c.list_tools().await.is_err());
        assert_eq!(c.shared.lock().failures, n);
        if n < 5 {
            assert_eq!(c.state(), ServerState::Restarting);
            tokio::time::advance(Duration::from_secs(60)).await;
        }
    }
    assert_eq!(c.state(), ServerState::Failed);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_initialize_times_out() {
    let t = MockTransport::new(|msg| match method(msg) {
        "initialize" => vec![],
        _ => well_behaved(msg),
    });
    let c = client(t);
    let err = c.start().await.unwrap_err();
    assert!(err.kind() == ErrorKind::InitializeTimeout, "{err}");
    assert_eq!(c.state(), ServerState::Restarting);
}

#[tokio::test]
async fn shutdown_fails_calls_in_flight_and_disables_until_reenabled() {
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" => vec![],
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    c.start().await.unwrap();
    let mut pending = c.clone().call(echo("x"));
    assert!(futures::poll!(&mut pending).is_pending());
    c.shutdown().await;
    let err = pending.await.unwrap_err();
    assert!(
        client_error(&err).kind() == ErrorKind::ConnectionClosed
            && client_error(&err).request().is_some(),
        "{err}"
    );
    assert_eq!(c.state(), ServerState::Disabled);
    let err = call(&c, echo("y")).await.unwrap_err();
    assert!(NotSent::in_chain(&*err));
    assert!(client_error(&err).kind() == ErrorKind::Disabled);
    c.reenable();
    c.start().await.unwrap();
    assert_eq!(t.connects(), 2);
}

#[test]
fn a_call_outside_a_runtime_fails_naming_the_server() {
    let c = client(MockTransport::new(well_behaved));
    let err = futures::executor::block_on(c.clone().call(echo("x"))).unwrap_err();
    assert!(NotSent::in_chain(&*err));
    assert!(client_error(&err).kind() == ErrorKind::NoRuntime);
}

#[tokio::test]
async fn an_oversized_answer_fails_its_call_only() {
    let t = MockTransport::new(|msg| match method(msg) {
        "tools/call" if msg["params"]["name"] == "hang" => vec![],
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    c.start().await.unwrap();
    let mut pending = c.clone().call(ToolCall::new("hang"));
    assert!(futures::poll!(&mut pending).is_pending());
    let id = t.seen().last().unwrap()["id"].as_u64().unwrap();
    let session = c.shared.lock().session.clone().unwrap();
    // What the transport kept of a 1 GiB answer whose id comes last.
    let tail = format!(r#"xxxx"}}]}},"jsonrpc":"2.0","id":{id}}}"#);
    crate::transport::InboundHandler::on_oversize(
        &*session,
        crate::transport::OversizeFrame::new(
            br#"{"result":{"content":[{"type":"text","text":"xxxx"#,
            tail.as_bytes(),
            1 << 30,
            1 << 24,
        ),
    );
    let err = pending.await.unwrap_err();
    assert!(!NotSent::in_chain(&*err));
    let failed = client_error(&err);
    assert_eq!(failed.kind(), ErrorKind::FrameTooLarge, "{failed}");
    assert_eq!(failed.frame_len(), Some(1 << 30));
    assert_eq!(failed.limit(), Some(1 << 24));
    assert_eq!(
        failed.request().unwrap().id,
        crate::protocol::RequestId::from(id)
    );
    assert_eq!(c.state(), ServerState::Ready);
    assert_eq!(
        call(&c, echo("next")).await.unwrap().joined_text(),
        "Echo: next"
    );
}

#[test]
fn the_client_is_send_and_sync_and_its_future_is_send_and_unpin() {
    fn send_sync<T: Send + Sync + Clone>() {}
    fn send_unpin<T: Send + Unpin>() {}
    send_sync::<McpClient>();
    send_unpin::<ResponseFuture>();
    send_sync::<ToolCall>();
}

#[test]
fn a_flood_of_garbage_lines_logs_only_a_few_warnings() {
    use std::sync::atomic::AtomicU64;
    use tracing_subscriber::layer::SubscriberExt;

    struct CountWarnings(Arc<AtomicU64>);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CountWarnings {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if *event.metadata().level() == tracing::Level::WARN {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    let warnings = Arc::new(AtomicU64::new(0));
    let subscriber = tracing_subscriber::registry().with(CountWarnings(Arc::clone(&warnings)));
    tracing::subscriber::with_default(subscriber, || {
        let session = RpcSession::new(
            "mock".into(),
            1,
            Arc::new(|_: &RpcSession, _: super::rpc::SessionEvent<'_>| {}),
            server_requests::stack("mock", None, None, None, RejectedCounter::new()),
            super::rpc::SessionSettings {
                max_in_flight: 8,
                elicitation: false,
                mirrors_headers: false,
                param_headers: Default::default(),
                task_ttl: std::time::Duration::from_secs(600),
                tasks_declared: true,
                telemetry: Arc::new(crate::telemetry::SessionTelemetry::new(
                    crate::transport::Peer::Unknown,
                )),
                router: Arc::default(),
            },
        );
        for i in 0..1000 {
            crate::transport::InboundHandler::on_frame(
                &*session,
                format!("garbage {i}").as_bytes(),
            );
        }
    });
    // The first ten, then 16, 32, 64, 128, 256, 512.
    assert_eq!(warnings.load(Ordering::Relaxed), 16);
}

#[test]
fn a_listen_ended_by_a_refusal_is_not_asked_again_and_a_cut_is() {
    let server: Arc<str> = Arc::from("srv");
    let request = RequestRef {
        id: crate::protocol::RequestId::from(7u64),
        method: "subscriptions/listen",
    };
    let rpc = ClientError::new(
        Arc::clone(&server),
        Some(request.clone()),
        Kind::JsonRpc {
            code: -32601,
            message: "Method not found".into(),
            data: None,
        },
    );
    let http = |status: Option<u16>, permanent: bool| {
        let failure = match (status, permanent) {
            (_, true) => crate::transport::SendFailure::permanent("refused"),
            (Some(s @ 400..=499), false) => crate::transport::SendFailure::refused("refused", s),
            (Some(s), false) => crate::transport::SendFailure::unknown("refused").status(s),
            (None, false) => crate::transport::SendFailure::unknown("cut"),
        };
        ClientError::new(
            Arc::clone(&server),
            Some(request.clone()),
            Kind::SendFailed { failure },
        )
    };
    let at_once = Duration::from_millis(30);
    let working = LISTEN_STEADY + Duration::from_secs(1);
    assert!(listen_refused(&rpc, at_once));
    assert!(
        !listen_refused(&rpc, working),
        "an error after a working stream"
    );
    for status in [202, 400, 401, 403, 404, 405] {
        assert!(
            listen_refused(&http(Some(status), false), at_once),
            "{status}"
        );
    }
    assert!(listen_refused(&http(None, true), at_once), "permanent");
    for status in [408, 425, 429, 500, 502, 503] {
        assert!(
            !listen_refused(&http(Some(status), false), at_once),
            "{status}"
        );
    }
    assert!(!listen_refused(&http(None, false), at_once), "a cut stream");
    let closed = ClientError::new(
        server,
        None,
        Kind::ConnectionClosed {
            detail: "could not be queued".into(),
        },
    );
    assert!(!listen_refused(&closed, at_once));
}

// --- tasks ----------------------------------------------------------------------------------

/// A 2025-11-25 server that runs `research` as a task: `tools/call` with `params.task` answers
/// a task polled every `interval` ms, which completes at the `done_after`-th `tasks/get`
/// (never, with `u32::MAX`); `tasks/result` answers `"done"`. Every `tasks/get` time is kept.
fn task_server(
    interval: u64,
    done_after: u32,
    gets: Arc<Mutex<Vec<tokio::time::Instant>>>,
) -> impl Fn(&Value) -> Vec<Act> + Send + Sync + 'static {
    move |msg: &Value| match method(msg) {
        "initialize" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "mock", "version": "1.0"}}}))],
        "tools/call" => {
            assert!(msg["params"]["task"]["ttl"].is_u64(), "{msg}");
            vec![Act::Reply(
                json!({"jsonrpc":"2.0","id":msg["id"],"result":{"task":{
                "taskId": "t1", "status": "working", "pollInterval": interval}}}),
            )]
        }
        "tasks/get" => {
            let n = {
                let mut gets = gets.lock().unwrap();
                gets.push(tokio::time::Instant::now());
                gets.len() as u32
            };
            let status = if n >= done_after {
                "completed"
            } else {
                "working"
            };
            vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
                "taskId": "t1", "status": status, "pollInterval": interval}}))]
        }
        "tasks/result" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "content": [{"type": "text", "text": "done"}]}}))],
        "tasks/cancel" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "taskId": "t1", "status": "cancelled"}}))],
        _ => vec![],
    }
}

fn legacy_client(t: MockTransport) -> McpClient {
    McpClient::new("mock", t, exact().era(EraPreference::Legacy))
}

#[tokio::test(start_paused = true)]
async fn a_task_is_polled_at_the_servers_interval_within_bounds_and_its_tool_called_once() {
    for (interval, gap) in [
        (250, Duration::from_millis(250)),
        (0, tasks::POLL_MIN),
        (3_600_000, tasks::POLL_MAX),
    ] {
        let gets = Arc::new(Mutex::new(Vec::new()));
        let t = MockTransport::new(task_server(interval, 3, Arc::clone(&gets)));
        let c = legacy_client(t.clone());
        let r = call(&c, ToolCall::new("research").with_task(true))
            .await
            .unwrap();
        assert_eq!(r.joined_text(), "done");
        let gets = gets.lock().unwrap().clone();
        assert_eq!(gets.len(), 3, "polled until completed");
        for pair in gets.windows(2) {
            assert_eq!(pair[1] - pair[0], gap, "pollInterval {interval}");
        }
        let methods = t.seen_methods();
        let count = |m: &str| methods.iter().filter(|x| *x == m).count();
        assert_eq!(
            (count("tools/call"), count("tasks/result")),
            (1, 1),
            "{methods:?}"
        );
        assert_eq!(
            c.task_counts(),
            TaskCounts {
                in_flight: 0,
                completed: 1,
                failed: 0,
                cancelled: 0
            }
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_task_call_that_is_dropped_cancels_its_task() {
    let gets = Arc::new(Mutex::new(Vec::new()));
    let t = MockTransport::new(task_server(100, u32::MAX, gets));
    let c = legacy_client(t.clone());
    let progress = ProgressHandle::new();
    let pending = call(
        &c,
        ToolCall::new("research")
            .with_task(true)
            .with_progress(progress.clone()),
    );
    assert!(tokio::time::timeout(Duration::from_secs(2), pending)
        .await
        .is_err());
    // Only the task's creation was news: a poll that finds it still `working` is not
    // progress, so a progress-aware timeout is not kept alive by a stuck task.
    assert_eq!(progress.notifications(), 1);
    // The cancel goes out on a task of its own.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let cancels: Vec<Value> = t
        .seen()
        .into_iter()
        .filter(|m| method(m) == "tasks/cancel")
        .collect();
    assert_eq!(cancels.len(), 1, "{:?}", t.seen_methods());
    assert_eq!(cancels[0]["params"]["taskId"], "t1");
    let counts = c.task_counts();
    assert_eq!((counts.in_flight, counts.cancelled), (0, 1), "{counts:?}");
}

#[tokio::test(start_paused = true)]
async fn a_plain_call_of_a_legacy_server_asks_for_no_task() {
    let gets = Arc::new(Mutex::new(Vec::new()));
    let t = MockTransport::new(move |msg: &Value| {
        if method(msg) == "tools/call" {
            assert!(msg["params"].get("task").is_none(), "{msg}");
            return well_behaved(msg);
        }
        task_server(100, 1, Arc::clone(&gets))(msg)
    });
    let c = legacy_client(t);
    let r = call(&c, echo("hi")).await.unwrap();
    assert_eq!(r.joined_text(), "Echo: hi");
    assert!(
        c.runs_tool_tasks(),
        "the server offers tasks for tools/call"
    );
    assert_eq!(c.task_counts(), TaskCounts::default());
}

#[tokio::test(start_paused = true)]
async fn a_task_answering_a_call_given_up_on_is_cancelled() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen_calls = Arc::clone(&calls);
    let gets = Arc::new(Mutex::new(Vec::new()));
    let server = task_server(100, u32::MAX, gets);
    let t = MockTransport::new(move |msg: &Value| {
        if method(msg) == "tools/call" {
            // Answered late, below.
            seen_calls.lock().unwrap().push(msg["id"].clone());
            return vec![];
        }
        server(msg)
    });
    let c = legacy_client(t.clone());
    let pending = call(&c, ToolCall::new("research").with_task(true));
    assert!(tokio::time::timeout(Duration::from_secs(1), pending)
        .await
        .is_err());
    let id = calls.lock().unwrap()[0].clone();
    assert!(t.push(vec![Act::Reply(json!({"jsonrpc": "2.0", "id": id,
        "result": {"task": {"taskId": "late", "status": "working"}}}))]));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let cancels: Vec<Value> = t
        .seen()
        .into_iter()
        .filter(|m| method(m) == "tasks/cancel")
        .collect();
    assert_eq!(cancels.len(), 1, "{:?}", t.seen_methods());
    assert_eq!(cancels[0]["params"]["taskId"], "late");
    assert_eq!(c.task_counts().cancelled, 1);
}

#[tokio::test(start_paused = true)]
async fn a_modern_task_that_ends_without_its_outcome_fails_once_without_polling_on() {
    let gets = Arc::new(Mutex::new(0u32));
    let counted = Arc::clone(&gets);
    let t = MockTransport::new(move |msg: &Value| match method(msg) {
        "server/discover" => vec![Act::reply(
            msg,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mock", "version": "1"}}}),
        )],
        "tools/call" => {
            let caps = &msg["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
            assert_eq!(
                caps["extensions"],
                json!({"io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {}})
            );
            vec![Act::reply(
                msg,
                json!({"resultType": "task", "taskId": "m1", "status": "working",
                    "pollIntervalMs": 100}),
            )]
        }
        "tasks/get" => {
            *counted.lock().unwrap() += 1;
            vec![Act::reply(
                msg,
                json!({"resultType": "complete", "taskId": "m1", "status": "failed",
                    "statusMessage": "expired"}),
            )]
        }
        _ => vec![],
    });
    let t = t.modern();
    let c = McpClient::new("mock", t.clone(), exact().era(EraPreference::Modern));
    let err = call(&c, ToolCall::new("research")).await.unwrap_err();
    assert!(
        kaged_mcp_layers::retry::Final::in_chain(&*err),
        "{err}: {:?}",
        ClientError::find(&*err)
    );
    let failed = client_error(&err);
    assert_eq!(failed.kind(), ErrorKind::TaskFailed, "{failed}");
    assert_eq!(
        (failed.task_id(), failed.message()),
        (Some("m1"), Some("expired"))
    );
    assert_eq!(*gets.lock().unwrap(), 1, "no poll after the end");
    assert!(c.runs_tool_tasks());
    let counts = c.task_counts();
    assert_eq!((counts.in_flight, counts.failed), (0, 1), "{counts:?}");
}

// --- telemetry: every request's span ends once, saying how ----------------------------------

/// The `mcp.request` spans of a test: the fields each was opened with and recorded later, and
/// how many times each field was recorded after it opened; a span moves to `closed` when it
/// closes.
#[derive(Clone, Default)]
struct Spans {
    open: Arc<Mutex<std::collections::HashMap<u64, SpanFields>>>,
    closed: Arc<Mutex<Vec<SpanFields>>>,
}

#[derive(Clone, Default, Debug)]
struct SpanFields {
    values: std::collections::BTreeMap<String, String>,
    records: std::collections::BTreeMap<String, usize>,
}

struct Visit<'a>(&'a mut SpanFields, bool);

impl tracing::field::Visit for Visit<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.values.insert(
            field.name().into(),
            format!("{value:?}").trim_matches('"').into(),
        );
        if self.1 {
            *self.0.records.entry(field.name().into()).or_default() += 1;
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().target() != crate::telemetry::TARGET {
            return;
        }
        let mut fields = SpanFields::default();
        attrs.record(&mut Visit(&mut fields, false));
        self.open.lock().unwrap().insert(id.into_u64(), fields);
    }
    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Some(fields) = self.open.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Visit(fields, true));
        }
    }
    fn on_close(&self, id: tracing::span::Id, _: tracing_subscriber::layer::Context<'_, S>) {
        let closed = self.open.lock().unwrap().remove(&id.into_u64());
        if let Some(fields) = closed {
            self.closed.lock().unwrap().push(fields);
        }
    }
}

impl Spans {
    /// Installs the capture on this thread until the guard drops.
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        use tracing_subscriber::layer::SubscriberExt as _;
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }

    /// The `error.type` of each closed span of `method` (`-` for none), in closing order; no
    /// span may still be open, and none may have recorded a field twice.
    fn ended(&self, method: &str) -> Vec<String> {
        let closed = self.closed.lock().unwrap();
        for span in closed.iter() {
            for (field, n) in &span.records {
                assert_eq!(*n, 1, "{field} recorded {n} times: {span:?}");
            }
        }
        closed
            .iter()
            .filter(|s| s.values["mcp.method.name"] == method)
            .map(|s| {
                s.values
                    .get("error.type")
                    .cloned()
                    .unwrap_or_else(|| "-".into())
            })
            .collect()
    }

    fn still_open(&self) -> usize {
        self.open.lock().unwrap().len()
    }
}

#[tokio::test]
async fn every_request_span_ends_once_with_how_the_request_ended() {
    let spans = Spans::default();
    let _guard = spans.install();
    let t = MockTransport::new(|msg| match (method(msg), msg["params"]["name"].as_str()) {
        ("tools/call", Some("tool_error")) => {
            vec![Act::reply(msg, json!({"content": [], "isError": true}))]
        }
        ("tools/call", Some("rpc_error")) => vec![Act::error(msg, -32602, "no such tool")],
        ("tools/call", Some("rpc_secret")) => vec![Act::error(
            msg,
            -32001,
            "bad key sk-live0123456789abcdefghij",
        )],
        ("tools/call", Some("bad_result")) => {
            vec![Act::reply(msg, json!({"content": [{"type": "text"}]}))]
        }
        ("tools/call", Some("never")) => vec![],
        ("tools/call", Some("exit")) => vec![Act::close("the server quit")],
        _ => well_behaved(msg),
    });
    let c = client(t.clone());
    c.start().await.unwrap();
    call(&c, echo("fine")).await.unwrap();
    assert!(
        call(&c, ToolCall::new("tool_error"))
            .await
            .unwrap()
            .is_error
    );
    call(&c, ToolCall::new("rpc_error")).await.unwrap_err();
    call(&c, ToolCall::new("bad_result")).await.unwrap_err();
    call(&c, ToolCall::new("rpc_secret")).await.unwrap_err();
    let mut dropped = c.clone().call(ToolCall::new("never"));
    assert!(futures::poll!(&mut dropped).is_pending());
    drop(dropped);
    let mut pending = c.clone().call(ToolCall::new("never"));
    assert!(futures::poll!(&mut pending).is_pending());
    call(&c, ToolCall::new("exit")).await.unwrap_err();
    let closed = pending.await.unwrap_err();
    assert!(matches!(
        client_error(&closed).kind(),
        ErrorKind::Exited | ErrorKind::ConnectionClosed
    ));
    c.shutdown().await;

    assert_eq!(spans.ended("initialize"), ["-"]);
    let calls = spans.ended("tools/call");
    assert_eq!(
        calls[..6],
        [
            "-",
            "tool_error",
            "-32602",
            "protocol_violation",
            "-32001",
            "cancelled"
        ],
        "{calls:?}"
    );
    // The call the server quit on and the one pending then: both ended by the close.
    assert_eq!(calls.len(), 8, "{calls:?}");
    for ended in &calls[6..] {
        assert!(
            ["server_exited", "connection_closed"].contains(&ended.as_str()),
            "{calls:?}"
        );
    }
    assert_eq!(spans.still_open(), 0, "every span closed");
    let rpc = spans
        .closed
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.values.get("error.type").map(String::as_str) == Some("-32602"))
        .cloned()
        .unwrap();
    assert_eq!(rpc.values["rpc.response.status_code"], "-32602");
    assert_eq!(rpc.values["otel.status_description"], "no such tool");
    assert_eq!(rpc.values["otel.name"], "tools/call rpc_error");
    // A credential the server echoes into its message is hidden from the span.
    let secret = spans
        .closed
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.values.get("error.type").map(String::as_str) == Some("-32001"))
        .cloned()
        .unwrap();
    assert_eq!(secret.values["otel.status_description"], "bad key ***");
}

/// A task server polled every 5 s whose status message changes at each `tasks/get`
/// (`changing`) or never; it completes at the third `tasks/get`.
fn slow_poll_server(changing: bool) -> impl Fn(&Value) -> Vec<Act> + Send + Sync + 'static {
    let gets = Arc::new(Mutex::new(0u32));
    move |msg: &Value| match method(msg) {
        "initialize" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "mock", "version": "1.0"}}}))],
        "tools/call" => vec![Act::Reply(
            json!({"jsonrpc":"2.0","id":msg["id"],"result":{"task":{
            "taskId": "t1", "status": "working", "statusMessage": if changing { "step 0" } else { "busy" },
            "pollInterval": 5000}}}),
        )],
        "tasks/get" => {
            let n = {
                let mut gets = gets.lock().unwrap();
                *gets += 1;
                *gets
            };
            let status = if n >= 3 { "completed" } else { "working" };
            let message = if changing {
                format!("step {n}")
            } else {
                "busy".to_owned()
            };
            vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
                "taskId": "t1", "status": status, "statusMessage": message, "pollInterval": 5000}}))]
        }
        "tasks/result" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "content": [{"type": "text", "text": "done"}]}}))],
        "tasks/cancel" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "taskId": "t1", "status": "cancelled"}}))],
        _ => vec![],
    }
}

/// FastMCP's tasks ask to be polled every 5 s; with a 1.5 s idle timeout a task that changed
/// at every poll timed out before its first one (issue 36 point 8). The timeout never fires
/// between two polls the server asked for: a task that changes completes, and one that does
/// not times out at the first poll that sees it unchanged, saying the server's pace was why.
#[tokio::test(start_paused = true)]
async fn a_slow_poll_interval_never_times_out_between_polls_and_says_so_when_it_does() {
    use kaged_mcp_layers::timeout::{Elapsed, ElapsedKind, ProgressTimeoutLayer};
    let timed = |c: McpClient| {
        tower::ServiceBuilder::new()
            .layer(ProgressTimeoutLayer::new(
                Duration::from_millis(1500),
                Duration::from_secs(600),
            ))
            .service(c)
    };
    let t = MockTransport::new(slow_poll_server(true));
    let c = legacy_client(t);
    let start = tokio::time::Instant::now();
    let r = timed(c.clone())
        .oneshot(
            ToolCall::new("research")
                .with_task(true)
                .with_progress(ProgressHandle::new()),
        )
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "done");
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(15),
        "three polls, 5 s apart"
    );

    let t = MockTransport::new(slow_poll_server(false));
    let c = legacy_client(t.clone());
    let start = tokio::time::Instant::now();
    let err = timed(c.clone())
        .oneshot(
            ToolCall::new("research")
                .with_task(true)
                .with_progress(ProgressHandle::new()),
        )
        .await
        .unwrap_err();
    let elapsed = err.downcast_ref::<Elapsed>().expect("the idle timeout");
    assert_eq!(elapsed.kind(), ElapsedKind::Idle);
    assert_eq!(elapsed.asked_interval(), Some(Duration::from_secs(5)));
    assert!(
        err.to_string().contains("asked to be polled every 5s"),
        "{err}"
    );
    // At the first poll, which found the task as it was; not at 1.5 s, between polls.
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    let gets = t
        .seen_methods()
        .iter()
        .filter(|m| *m == "tasks/get")
        .count();
    assert_eq!(gets, 1);
}

// --- timeouts of the client's own requests ---------------------------------------------------

/// A 2025-11-25 server offering resources (with subscribe), prompts and the skills extension,
/// that answers `initialize` and the tools but never `ping`, a list, `resources/subscribe` or
/// `skills/list`.
fn deaf_to_all_but_tools(msg: &Value) -> Vec<Act> {
    match method(msg) {
        "initialize" => vec![Act::Reply(json!({"jsonrpc":"2.0","id":msg["id"],"result":{
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "resources": {"subscribe": true}, "prompts": {},
                "extensions": {crate::protocol::skills::SKILLS_EXTENSION: {}}},
            "serverInfo": {"name": "mock", "version": "1.0"}}}))],
        "tools/list" | "tools/call" => well_behaved(msg),
        _ => vec![],
    }
}

/// Asserts that `result` failed as a `RequestTimeout` of `method` after `after`, naming the
/// server, the method and the bound.
fn timed_out<T: std::fmt::Debug>(
    result: Result<T, ClientError>,
    method: &str,
    after: Duration,
) -> ClientError {
    let err = result.expect_err(method);
    assert_eq!(err.kind(), ErrorKind::RequestTimeout, "{method}: {err}");
    assert_eq!(err.request().map(|r| r.method), Some(method), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("`mock`")
            && text.contains(&format!("({method})"))
            && text.contains(&format!("within {} ms", after.as_millis())),
        "{method}: {text}"
    );
    err
}

/// Each request the client sends on its own (`resources/list`, `resources/templates/list`,
/// `prompts/list`, `resources/subscribe`, `skills/list`, `ping`) fails at the request timeout
/// as a `RequestTimeout` naming its method (and is cancelled), and the session goes on.
#[tokio::test(start_paused = true)]
async fn each_unanswered_request_of_the_client_times_out_naming_its_method() {
    let limit = Duration::from_secs(5);
    let t = MockTransport::new(deaf_to_all_but_tools);
    let c = McpClient::new("mock", t.clone(), exact().request_timeout(limit));
    c.start().await.unwrap();
    let began = tokio::time::Instant::now();
    timed_out(c.list_resources().await, "resources/list", limit);
    timed_out(
        c.list_resource_templates().await,
        "resources/templates/list",
        limit,
    );
    timed_out(c.list_prompts().await, "prompts/list", limit);
    timed_out(
        c.subscribe_resource("file:///a").await,
        "resources/subscribe",
        limit,
    );
    // Kept (as documented), to be sent again at the next start.
    assert_eq!(c.subscribed_resources(), ["file:///a"]);
    timed_out(c.list_skills().await, "skills/list", limit);
    timed_out(
        c.request::<crate::protocol::method::Ping>(()).await,
        "ping",
        limit,
    );
    // Each waited its bound, not more (paused time: exact).
    assert_eq!(tokio::time::Instant::now() - began, limit * 6);
    let cancelled = t
        .seen()
        .iter()
        .filter(|m| method(m) == "notifications/cancelled")
        .count();
    assert_eq!(cancelled, 6, "{:?}", t.seen_methods());
    assert_eq!(
        call(&c, echo("after")).await.unwrap().joined_text(),
        "Echo: after"
    );
    assert_eq!(c.state(), ServerState::Ready);
}

/// A completed task whose `tasks/result` is never answered: each `tasks/result` is bounded by
/// the request timeout and cancelled (it waited forever: `legacy_result` had no bound), asked
/// again up to the poll-failure limit, and the call then fails as `TaskLost` naming the task
/// and `tasks/result`; the tool was called once.
#[tokio::test(start_paused = true)]
async fn a_task_whose_result_is_never_answered_fails_naming_tasks_result() {
    let gets = Arc::new(Mutex::new(Vec::new()));
    let tasks = task_server(250, 1, gets);
    let t = MockTransport::new(move |msg| match method(msg) {
        "tasks/result" => vec![],
        _ => tasks(msg),
    });
    let limit = Duration::from_secs(5);
    let c = McpClient::new(
        "mock",
        t.clone(),
        exact().era(EraPreference::Legacy).request_timeout(limit),
    );
    let err = tokio::time::timeout(
        Duration::from_secs(3600),
        call(&c, ToolCall::new("research").with_task(true)),
    )
    .await
    .expect("the call ends")
    .unwrap_err();
    assert_eq!(client_error(&err).kind(), ErrorKind::TaskLost, "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with("MCP server `mock`: task t1 of request ")
            && text.contains(&format!(
                "{} requests for it failed in a row",
                tasks::MAX_POLL_FAILURES
            ))
            && text.contains("(tasks/result) within 5000 ms"),
        "{text}"
    );
    let methods = t.seen_methods();
    let count = |m: &str| methods.iter().filter(|x| *x == m).count();
    assert_eq!(
        (
            count("tools/call"),
            count("tasks/result"),
            count("notifications/cancelled")
        ),
        (
            1,
            tasks::MAX_POLL_FAILURES as usize,
            tasks::MAX_POLL_FAILURES as usize
        ),
        "{methods:?}"
    );
}
