//! The SSE transport under the real client (`McpClient`): real peers end to end (sampling
//! refused by the client's own stack), a call in flight when the stream ends, reconnection
//! through the client's supervision (a reconnect is a new `connect`, a new `initialize`), the
//! backoff and the failed state with paused time, and an auth refusal.

use std::time::Duration;

use harness::mini::{Mini, MiniConfig};
use harness::{read_log, PATIENCE};
use kaged_mcp::client::{ClientError, ClientOptions, ErrorKind, McpClient, ServerState, ToolCall};
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::transport::sse::{SseConfig, SseTransport};
use kaged_mcp_layers::auth::AuthHeader;
use peers::{PyMcp, PyMode, SseFault, SsePeer};
use serde_json::json;
use tower::{BoxError, Service, ServiceExt};

use crate::common::peers;
use crate::sse_harness as harness;

fn sse(url: &str) -> SseTransport {
    SseTransport::new(SseConfig::new(url.parse().unwrap())).unwrap()
}

async fn call(
    client: &McpClient,
    tool: &str,
    args: serde_json::Value,
) -> Result<ToolResult, BoxError> {
    let mut client = client.clone();
    client
        .ready()
        .await?
        .call(ToolCall::new(tool).with_json_arguments(args))
        .await
}

fn client_error(err: &BoxError) -> &ClientError {
    ClientError::find(&**err).unwrap_or_else(|| panic!("not a ClientError: {err}"))
}

async fn python_through_the_client(version: PyMcp) {
    let port = peers::free_port();
    let Some(cmd) = peers::require(
        peers::python_server(version, PyMode::Sse { port }),
        &version.name(),
    ) else {
        return;
    };
    let peer = SsePeer::start(&cmd, &[], port).unwrap();
    let client = McpClient::new("py", sse(&peer.sse_url()), ClientOptions::default());
    // A failure shows the server's own log too (a rare closed stream was once seen here).
    let failed =
        |e: &dyn std::fmt::Display| -> ! { panic!("{e}\nserver stderr:\n{}", peer.stderr()) };
    let tools = client.list_tools().await.unwrap_or_else(|e| failed(&e));
    assert!(tools.iter().any(|t| t.name == "big"), "{tools:?}");
    assert!(client.protocol_version().is_some());
    let echo = call(&client, "echo", json!({ "message": "hi" }))
        .await
        .unwrap_or_else(|e| failed(&e));
    assert_eq!(echo.joined_text(), "Echo: hi");
    let big = call(&client, "big", json!({ "n": 1_000_000 }))
        .await
        .unwrap_or_else(|e| failed(&e));
    assert_eq!(big.joined_text().len(), 1_000_000);
    let sample = call(&client, "sample", json!({}))
        .await
        .unwrap_or_else(|e| failed(&e));
    assert!(
        sample.joined_text().starts_with("sampling error:"),
        "{}",
        sample.joined_text()
    );
    assert_eq!(client.sampling_refused_count(), 1);
    client.shutdown().await;
}

#[tokio::test]
async fn python_mcp_1_30_over_sse_through_the_client_refuses_sampling() {
    python_through_the_client(PyMcp::V1).await;
}

#[tokio::test]
async fn python_mcp_2_3_over_sse_through_the_client_refuses_sampling() {
    python_through_the_client(PyMcp::V2).await;
}

#[tokio::test]
async fn server_everything_over_sse_through_the_client() {
    let port = peers::free_port();
    let Some((cmd, env)) = peers::require(peers::everything_sse(port), "server-everything") else {
        return;
    };
    let peer = SsePeer::start(&cmd, &env, port).unwrap();
    let client = McpClient::new("everything", sse(&peer.sse_url()), ClientOptions::default());
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    assert!(!tools.iter().any(|t| t.name == "trigger-sampling-request"));
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    let echo = call(&client, "echo", json!({ "message": "hello" }))
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "Echo: hello");
    client.shutdown().await;
}

#[tokio::test]
async fn a_call_in_flight_fails_at_once_naming_the_server_when_the_stream_ends() {
    let mini = Mini::start(MiniConfig {
        answer: true,
        ..MiniConfig::default()
    })
    .await;
    let client = McpClient::new("hangup", sse(&mini.url()), ClientOptions::default());
    client.start().await.unwrap();
    let pending = tokio::spawn({
        let client = client.clone();
        async move { call(&client, "wait", json!({})).await }
    });
    // Once the server has the call, it goes away.
    let wait = async {
        while !mini
            .seen()
            .iter()
            .any(|s| String::from_utf8_lossy(&s.body).contains("tools/call"))
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, wait).await.unwrap();
    mini.hang_up();
    let err = tokio::time::timeout(PATIENCE, pending)
        .await
        .expect("the call fails without waiting for a timeout")
        .unwrap()
        .unwrap_err();
    let failed = client_error(&err);
    assert_eq!(failed.server(), "hangup");
    assert!(
        failed.kind() == ErrorKind::Exited
            && failed.reason().starts_with("the event stream ended")
            && failed.request().is_some_and(|r| r.method == "tools/call"),
        "{failed}"
    );
    assert!(failed.to_string().contains("`hangup`"), "{failed}");
}

#[tokio::test]
async fn after_the_stream_drops_the_client_reconnects_and_initializes_a_new_session() {
    let log = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let peer =
        SsePeer::start_fault(SseFault::DropAfterFirst, &["--log", log.to_str().unwrap()]).unwrap();
    let options =
        ClientOptions::default().backoff(Duration::from_millis(20), Duration::from_secs(1));
    let client = McpClient::new("flaky", sse(&peer.sse_url()), options);
    let one = call(&client, "echo", json!({ "message": "one" }))
        .await
        .unwrap();
    assert_eq!(one.joined_text(), "Echo: one");

    // The stream ends after that answer; the next calls either back off (fail fast, not sent)
    // or go through on a new connection. One call may race the end of the stream: sent before
    // the client sees the stream end, it fails at once naming itself (never hangs), and only
    // the first call can be in that window.
    let retry = async {
        let mut raced = 0;
        loop {
            match call(&client, "echo", json!({ "message": "two" })).await {
                Ok(result) => return result,
                Err(err) => {
                    let e = client_error(&err);
                    assert_eq!(e.server(), "flaky");
                    let caught_in_the_drop = e.kind() == ErrorKind::Exited
                        && e.reason().starts_with("the event stream ended")
                        && e.request().is_some_and(|r| r.method == "tools/call");
                    if caught_in_the_drop {
                        raced += 1;
                        assert_eq!(raced, 1, "only one call can race the drop: {e}");
                    }
                    assert!(
                        caught_in_the_drop
                            || matches!(
                                e.kind(),
                                ErrorKind::BackingOff | ErrorKind::ConnectionClosed
                            ),
                        "{e}"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    };
    let two = tokio::time::timeout(PATIENCE, retry).await.unwrap();
    assert_eq!(two.joined_text(), "Echo: two");
    assert_eq!(client.state(), ServerState::Ready);
    let entries = read_log(&log);
    let gets = entries.iter().filter(|e| e["verb"] == "GET").count();
    let inits = entries
        .iter()
        .filter(|e| e["method"] == "initialize")
        .count();
    assert_eq!((gets, inits), (2, 2), "{entries:?}");
    client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_sse_server_backs_off_then_is_marked_failed_after_five_failures() {
    let url = format!("http://127.0.0.1:{}/sse", peers::free_port());
    let transport = SseTransport::new(
        SseConfig::new(url.parse().unwrap()).connect_timeout(Duration::from_secs(5)),
    )
    .unwrap();
    // The exact doubling schedule (the jitter below it is tested in `options.rs`).
    let options = ClientOptions::default().backoff_jitter(kaged_mcp_layers::retry::Jitter::None);
    let client = McpClient::new("gone", transport, options);
    let mut waited = Vec::new();
    for attempt in 1..=5u32 {
        let err = client.start().await.unwrap_err();
        assert!(
            err.kind() == ErrorKind::ConnectFailed && err.server() == "gone",
            "attempt {attempt}: {err}"
        );
        if attempt == 5 {
            break;
        }
        let err = call(&client, "echo", json!({})).await.unwrap_err();
        let Some(retry_in) = client_error(&err).retry_in() else {
            panic!("attempt {attempt}: {err}");
        };
        // Rounded up to whole seconds: time may have moved a little during the attempt.
        waited.push(retry_in.as_secs_f64().ceil() as u64);
        tokio::time::advance(retry_in).await;
    }
    assert_eq!(waited, [1, 2, 4, 8]);
    assert_eq!(client.state(), ServerState::Failed);
    let err = call(&client, "echo", json!({})).await.unwrap_err();
    assert_eq!(client_error(&err).failures(), Some(5));
    assert!(client.last_error().unwrap().contains("server `gone`"));
}

#[tokio::test]
async fn a_wrong_secret_is_an_auth_error_naming_the_server_and_the_server_is_failed_without_retries(
) {
    let log = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let peer = SsePeer::start_fault(
        SseFault::Auth,
        &["--secret", "right", "--log", log.to_str().unwrap()],
    )
    .unwrap();
    let cfg =
        SseConfig::new(peer.sse_url().parse().unwrap()).auth(AuthHeader::bearer("wrong").unwrap());
    let client = McpClient::new(
        "github",
        SseTransport::new(cfg).unwrap(),
        ClientOptions::default(),
    );
    let err = client.start().await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("`github`"), "{text}");
    assert!(text.contains("authentication refused"), "{text}");
    assert!(text.contains("401 Unauthorized"), "{text}");
    // A refusal is not retried: the server is failed at once, and later calls fail fast
    // without another request, until the operator re-enables it.
    assert_eq!(client.state(), ServerState::Failed);
    let err = client.start().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ServerFailed, "{err}");
    // The server writes its log line after answering: wait for the `n`th GET's line, then
    // count (a GET sent again would be there by the next count at the latest).
    assert_eq!(gets_logged(&log, 1).await, 1);
    client.reenable();
    assert!(client.start().await.is_err());
    assert_eq!(gets_logged(&log, 2).await, 2, "re-enabling tries once more");
}

/// The GETs in the server's request log at `log`, once there are `n` (at most [`PATIENCE`]).
async fn gets_logged(log: &std::path::Path, n: usize) -> usize {
    let gets = || read_log(log).iter().filter(|e| e["verb"] == "GET").count();
    tokio::time::timeout(PATIENCE, async {
        while gets() < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("GET {n} never logged: {:?}", read_log(log)));
    gets()
}

/// An answer event that never ends fails its call as too large once it passes the frame
/// limit, naming the request: the call does not wait for an end that never comes (the wait
/// here is only a hang guard).
#[tokio::test]
async fn an_endless_answer_event_fails_its_call_once_it_passes_the_limit() {
    let peer = SsePeer::start_fault(SseFault::Ok, &[]).unwrap();
    let options = ClientOptions::default().frame_limit(64 * 1024);
    let client = McpClient::new("endless", sse(&peer.sse_url()), options);
    let err = tokio::time::timeout(PATIENCE, call(&client, "endless", json!({})))
        .await
        .unwrap_or_else(|_| panic!("no failure within {PATIENCE:?}: {}", peer.stderr()))
        .unwrap_err();
    let failed = client_error(&err);
    assert_eq!(failed.kind(), ErrorKind::FrameTooLarge, "{failed}");
    assert_eq!(failed.limit(), Some(65536), "{failed}");
    assert!(failed.frame_len().unwrap() > 65536, "{failed}");
    assert_eq!(failed.request().unwrap().method, "tools/call");
    let text = failed.to_string();
    assert!(
        text.contains("MCP server `endless` sent a message too large: at least")
            && text.contains("over the frame limit of 65536 bytes during request")
            && text.contains("`frame_limit_bytes`"),
        "{text}"
    );
    drop(client);
}

#[tokio::test]
async fn an_answer_over_the_frame_limit_fails_that_call_like_an_over_long_stdio_line() {
    let peer = SsePeer::start_fault(SseFault::Crlf, &[]).unwrap();
    let options = ClientOptions::default().frame_limit(64 * 1024);
    let client = McpClient::new("huge", sse(&peer.sse_url()), options);
    let err = call(&client, "big", json!({ "n": 300_000 }))
        .await
        .unwrap_err();
    let failed = client_error(&err);
    assert!(
        failed.kind() == ErrorKind::FrameTooLarge
            && failed.limit() == Some(65536)
            && failed.request().is_some_and(|r| r.method == "tools/call"),
        "{failed}"
    );
    assert!(failed.to_string().contains("`huge`"), "{failed}");
    // The stream stayed in sync: the session goes on.
    let echo = call(&client, "echo", json!({ "message": "still here" }))
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "Echo: still here");
    assert_eq!(client.state(), ServerState::Ready);
}

#[tokio::test]
async fn a_refused_post_fails_the_call_as_not_delivered_and_only_a_passing_refusal_is_resent() {
    use kaged_mcp::stack::{StackBuilder, StackSettings};
    use kaged_mcp_layers::retry::NotSent;

    let log = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let peer = SsePeer::start_fault(SseFault::Ok, &["--log", log.to_str().unwrap()]).unwrap();
    let client = McpClient::new("refusing", sse(&peer.sse_url()), ClientOptions::default());

    // 429: the server refused the POST; the call fails at once, naming server, request and
    // status, and is marked not delivered (NotSent) so a retry is safe whatever the tool.
    let err = tokio::time::timeout(PATIENCE, call(&client, "http_429", json!({})))
        .await
        .expect("fails at once, not at a timeout")
        .unwrap_err();
    let failed = client_error(&err);
    assert!(
        failed
            .send_failure()
            .is_some_and(|failure| failure.not_delivered()
                && failure.is_retryable()
                && failure.message().contains("429 Too Many Requests"))
            && failed.request().is_some_and(|r| r.method == "tools/call"),
        "{failed:?}"
    );
    let text = failed.to_string();
    assert!(
        text.starts_with("MCP server `refusing`: sending request ")
            && text.contains(
                "(tools/call) failed (not delivered): the server refused the POST: 429 Too Many \
                 Requests at http://127.0.0.1:"
            ),
        "{text}"
    );
    assert!(NotSent::in_chain(&*err), "{err}");

    // 400: refused, so not delivered, but sending it again would only be refused again.
    // 500: the server may have processed it: not NotSent, and not said to be undelivered.
    for (tool, delivered_unknown) in [("http_400", false), ("http_500", true)] {
        let err = call(&client, tool, json!({})).await.unwrap_err();
        assert!(
            client_error(&err)
                .send_failure()
                .is_some_and(|failure| !failure.is_retryable()
                    && failure.not_delivered() != delivered_unknown),
            "{tool}: {err}"
        );
        assert!(!NotSent::in_chain(&*err), "{tool}: {err}");
        assert_eq!(
            err.to_string().contains("not delivered"),
            !delivered_unknown,
            "{tool}: {err}"
        );
    }
    // The session is still fine.
    let echo = call(&client, "echo", json!({ "message": "still here" }))
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "Echo: still here");

    // Through the standard stack (the tools are not retry-safe): the 429 is sent three times
    // (the retry policy's attempts), the 400 and the 500 once.
    let stack = StackBuilder::new(StackSettings::new("refusing")).build(client.clone());
    let posts = |tool: &str| {
        read_log(&log)
            .iter()
            .filter(|e| e["verb"] == "POST" && e["tool"] == tool)
            .count()
    };
    for (tool, sent) in [("http_429", 3), ("http_400", 1), ("http_500", 1)] {
        let before = posts(tool);
        let err = stack.clone().oneshot(ToolCall::new(tool)).await;
        assert!(err.is_err(), "{tool}");
        assert_eq!(posts(tool) - before, sent, "{tool}: {:?}", read_log(&log));
    }
    client.shutdown().await;
}

/// A redirect of the event stream is never followed, and trying again cannot help: the start
/// fails at once, naming where it pointed, and the server is marked failed without a restart
/// loop (it was an ordinary failure, restarted five times with backoff).
#[tokio::test]
async fn a_redirected_stream_fails_the_start_at_once_and_marks_the_server_failed() {
    let mini = Mini::start(MiniConfig {
        get_status: 307,
        location: "http://127.0.0.2:9/sse",
        ..MiniConfig::default()
    })
    .await;
    let client = McpClient::new("moved", sse(&mini.url()), ClientOptions::default());
    let err = tokio::time::timeout(PATIENCE, client.start())
        .await
        .expect("fails at once")
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("307") && text.contains("another origin (http://127.0.0.2:9)"),
        "{text}"
    );
    assert!(text.contains("redirects are not followed"), "{text}");
    assert_eq!(client.state(), ServerState::Failed);
    let gets = mini.seen().iter().filter(|s| s.method == "GET").count();
    assert_eq!(
        gets, 1,
        "the redirect was not followed, nor the GET sent again"
    );
}
