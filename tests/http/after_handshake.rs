//! The Streamable HTTP transport's failures after the handshake, against
//! `tests/servers/http_fault_server.py`: a redirect on a later POST, on the GET stream and on
//! the DELETE; a 401/403 on an established session; a POST on a connection the server closed;
//! a message over the frame limit on the GET stream; a `429` (with `Retry-After`) or a `5xx` to a
//! call, and which of them the stack sends again.

use kaged_mcp::client::ClientError;
use kaged_mcp::Session;
use serde_json::Value;

use crate::common::capture::Captured;
use crate::common::peers::SsePeer;
use crate::fault::{calls, echo, log, posts_of, session, start, until_logged, SECRET};

const AUTH: &str = "    auth: { type: bearer, secret_ref: api_keys.remote }\n";

fn local_secret() -> String {
    format!("[secrets.api_keys]\nremote = \"{SECRET}\"\n")
}

fn statuses(log: &[Value], verb: &str) -> Vec<Value> {
    log.iter()
        .filter(|e| e["verb"] == verb)
        .map(|e| e["status"].clone())
        .collect()
}

/// The WARN lines of `captured` that hold every one of `words`.
fn warnings(captured: &Captured, words: &[&str]) -> Vec<String> {
    captured
        .text()
        .lines()
        .filter(|l| l.contains(" WARN ") && words.iter().all(|w| l.contains(w)))
        .map(str::to_owned)
        .collect()
}

/// The WARN lines holding every one of `words`, once there is one (at most 30 s): the GET
/// stream says its refusal on its own task.
async fn warned(captured: &Captured, words: &[&str]) -> Vec<String> {
    let wait = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while warnings(captured, words).is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    wait.await
        .unwrap_or_else(|_| panic!("no WARN with {words:?}: {}", captured.text()));
    warnings(captured, words)
}

/// A session on the `later` server refusing `verbs` with `status` after the handshake, with a
/// static bearer token; ready, and its GET stream asked for (and refused, if GET is one).
async fn refusing_later(status: &str, verbs: &str, dir: &std::path::Path) -> (SsePeer, Session) {
    let peer = start(
        "later",
        &["--status", status, "--verbs", verbs, "--secret", SECRET],
        dir,
    );
    let session = session(&peer, AUTH, &local_secret(), "").await;
    assert_eq!(session.status()[0].state, "ready", "{status}");
    until_logged(dir, |e| e["verb"] == "GET").await;
    (peer, session)
}

/// A redirect met after the handshake is not followed and is said, naming where it pointed and
/// that only the configured url is used: a call's POST fails (not delivered, never sent again
/// nor elsewhere); the GET stream and the DELETE at shutdown, which no caller waits for, are
/// each a WARN (they were DEBUG lines, `the server offers no GET stream` and `DELETE failed`,
/// that no operator sees).
#[tokio::test]
async fn a_redirect_after_the_handshake_is_never_followed_and_is_reported() {
    let (captured, _guard) = Captured::install_local();
    for (status, reason) in [("307", "Temporary Redirect"), ("308", "Permanent Redirect")] {
        let dir = tempfile::tempdir().unwrap();
        let (peer, session) = refusing_later(status, "POST,GET,DELETE", dir.path()).await;
        let elsewhere = format!("to another origin (http://127.0.0.2:{})", peer.port());
        let said = "redirects are not followed, so nothing is sent anywhere but the configured url";
        let err = echo(&session, "x").await.unwrap_err().to_string();
        assert!(
            err.contains("(not delivered)")
                && err.contains(&format!(
                    "the POST was answered {status} {reason} {elsewhere}"
                ))
                && err.contains(said),
            "{err}"
        );
        let st = &session.status()[0];
        assert_eq!((st.state.as_str(), st.failed_calls), ("ready", 1), "{st:?}");
        session.shutdown().await;
        let log = log(dir.path());
        assert_eq!(
            statuses(&log, "DELETE"),
            [Value::from(status.parse::<u16>().unwrap())]
        );
        assert_eq!(posts_of(&log, "tools/call").len(), 1, "{log:#?}");
        assert!(calls(dir.path()).is_empty());
        assert!(
            !log.iter().any(|e| e["listener"] == "127.0.0.2"),
            "{log:#?}"
        );
        for what in ["the GET", "the DELETE"] {
            let answered = format!("{what} was answered {status} {reason} {elsewhere}");
            let lines = warned(&captured, &[&answered, said]).await;
            assert_eq!(lines.len(), 1, "{what}: {}", captured.text());
        }
    }
}

/// A static token refused after the handshake (`401` with `invalid_token`, or a plain `403`):
/// the call fails, not delivered and sent once, saying so as the first request does (a `401`
/// names the secret to check, a plain `403` does not: the server did not say it was about
/// credentials); each later call is sent and refused alike. The session is not restarted: the
/// server stays ready and counts the failed calls. The GET stream and the DELETE, which no
/// caller waits for, say it in a WARN (they were DEBUG lines).
#[tokio::test]
async fn a_token_refused_after_the_handshake_fails_the_call_naming_the_secret_ref() {
    let (captured, _guard) = Captured::install_local();
    for (status, reason, names_secret) in
        [("401", "Unauthorized", true), ("403", "Forbidden", false)]
    {
        let dir = tempfile::tempdir().unwrap();
        let (peer, session) = refusing_later(status, "POST,GET,DELETE", dir.path()).await;
        let at = format!("{status} {reason} at {}", peer.mcp_url());
        for message in ["x", "y"] {
            let err = echo(&session, message).await.unwrap_err().to_string();
            assert!(
                err.contains("(not delivered)")
                    && err.contains(&format!("the POST was answered {at}")) == names_secret
                    && err.contains(&at)
                    && err.contains("`api_keys.remote`") == names_secret
                    && err.contains("authentication refused") == names_secret,
                "{status}: {err}"
            );
            assert!(!err.contains(SECRET), "{err}");
        }
        let st = &session.status()[0];
        assert_eq!(
            (st.state.as_str(), st.failed_calls, st.restarts),
            ("ready", 2, 0),
            "{st:?}"
        );
        session.shutdown().await;
        let log = log(dir.path());
        assert_eq!(posts_of(&log, "tools/call").len(), 2, "{log:#?}");
        assert_eq!(posts_of(&log, "initialize").len(), 1, "{log:#?}");
        assert!(calls(dir.path()).is_empty());
        for what in ["the GET", "the DELETE"] {
            let lines = warned(&captured, &[what, &at]).await;
            assert_eq!(lines.len(), 1, "{status} {what}: {}", captured.text());
            assert_eq!(
                lines[0].contains("`api_keys.remote`"),
                names_secret,
                "{}",
                lines[0]
            );
            assert!(!lines[0].contains(SECRET), "{}", lines[0]);
        }
    }
}

/// A POST whose connection the server closed after reading it, without an answer (as a
/// server closing an idle keep-alive connection just as the client reuses it): the request
/// may have been delivered, so it is never sent again (the GET and DELETE, which are, have
/// their own test in `fault`), and the call fails as an unknown delivery; the session goes on.
#[tokio::test]
async fn a_post_on_a_connection_closed_under_it_is_never_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("drop_call", &[], dir.path());
    let session = session(&peer, "", "", "").await;
    let err = echo(&session, "once").await.unwrap_err();
    let Some(failure) = ClientError::find(&err).and_then(ClientError::send_failure) else {
        panic!("{err:?}");
    };
    assert!(
        !failure.not_delivered() && !failure.is_retryable(),
        "{failure:?}"
    );
    let text = err.to_string();
    assert!(
        !text.contains("not delivered")
            && text.contains(&format!("the POST to {} got no answer", peer.mcp_url())),
        "{text}"
    );
    assert_eq!(echo(&session, "after").await.unwrap(), "Echo: after");
    assert_eq!(session.status()[0].state, "ready");
    session.shutdown().await;
    let log = log(dir.path());
    let posted: Vec<&Value> = posts_of(&log, "tools/call");
    assert_eq!(posted.len(), 2, "{log:#?}");
    assert_eq!(posted[0]["status"], "dropped", "{log:#?}");
    assert_eq!(calls(dir.path()), ["\"after\""]);
}

/// An event over `frame_limit_bytes` on the GET stream (3 MB against 1 MiB) is discarded
/// and said (WARN, naming the limit and the size); the stream stays open and in sync (the
/// next event, `hello from GET`, is delivered on it, and the GET was not opened again), and
/// calls go on.
#[tokio::test]
async fn a_get_stream_event_over_the_frame_limit_is_discarded_and_the_stream_goes_on() {
    let (captured, _guard) = Captured::install_local();
    let dir = tempfile::tempdir().unwrap();
    let peer = start("big_get", &["--size", "3000000"], dir.path());
    let config = "[mcp]\nframe_limit_bytes = 1048576\n";
    let session = session(&peer, "", "", config).await;
    let hello = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while !captured.text().contains("hello from GET") {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    if hello.await.is_err() {
        let text = captured.text();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("GET") || l.contains("frame") || l.contains("WARN"))
            .collect();
        panic!(
            "no event after the oversized one: {lines:#?}\n{:#?}",
            log(dir.path())
        );
    }
    let over = warnings(
        &captured,
        &["over the frame limit", "limit=1048576", "len=3000"],
    );
    assert!(!over.is_empty(), "{}", captured.text());
    let text = captured.text();
    assert!(
        text.find("limit=1048576") < text.find("hello from GET"),
        "{text}"
    );
    assert_eq!(echo(&session, "still").await.unwrap(), "Echo: still");
    session.shutdown().await;
    let log = log(dir.path());
    assert_eq!(statuses(&log, "GET"), [Value::from(200)], "{log:#?}");
}

/// A client of the `remote` server at `peer`, driven directly (the `http_NNN` tools are not
/// listed, so a session would not call them), its handshake done by one echo.
async fn direct_client(peer: &SsePeer) -> kaged_mcp::client::McpClient {
    use kaged_mcp::client::{ClientOptions, McpClient, ToolCall};
    use tower::ServiceExt;
    let project = format!(
        "mcp:\n  remote:\n    transport: streamable-http\n    url: {}\n",
        peer.mcp_url()
    );
    let config = kaged_mcp::config::Sources::new(project).load().unwrap();
    let transport =
        kaged_mcp::assemble::transport(&config, &config.project.servers[0], None, None).unwrap();
    let client = McpClient::new("remote", transport, ClientOptions::default());
    let echo = ToolCall::new("echo").with_json_arguments(serde_json::json!({"message": "up"}));
    let answer = client.clone().oneshot(echo).await.unwrap();
    assert_eq!(answer.joined_text(), "Echo: up");
    client
}

/// A `429` (with `Retry-After` and a body) or a `5xx` to a call's POST after the handshake:
/// the call fails at once as `SendFailed`, its message naming the server, the request, the
/// status, the URL, the server's words and its `Retry-After`; a `429` was not processed (not
/// delivered, retryable, `NotSent`), after a `5xx` nobody knows. The session survives: the
/// next call is answered on the same session (one `initialize` in all, no restart).
#[tokio::test]
async fn a_429_or_5xx_after_the_handshake_fails_the_call_naming_status_and_retry_after() {
    use kaged_mcp::client::{ErrorKind, ServerState, ToolCall};
    use kaged_mcp_layers::retry::NotSent;
    use tower::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let peer = start("ok", &[], dir.path());
    let client = direct_client(&peer).await;
    let url = peer.mcp_url();
    for (tool, reason, not_delivered) in [
        ("http_429", "429 Too Many Requests", true),
        ("http_500", "500 Internal Server Error", false),
        ("http_503", "503 Service Unavailable", false),
    ] {
        let call = ToolCall::new(tool)
            .with_json_arguments(serde_json::json!({"retry_after": "7", "body": "slow down"}));
        let err = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            client.clone().oneshot(call),
        )
        .await
        .expect("fails at once, not at a timeout")
        .unwrap_err();
        let failed = ClientError::find(&*err).unwrap_or_else(|| panic!("{tool}: {err:?}"));
        assert_eq!(failed.kind(), ErrorKind::SendFailed, "{tool}: {failed:?}");
        assert_eq!(failed.server(), "remote");
        assert_eq!(failed.request().map(|r| r.method), Some("tools/call"));
        let failure = failed.send_failure().unwrap();
        assert_eq!(
            (
                failure.http_status(),
                failure.not_delivered(),
                failure.is_retryable()
            ),
            (
                Some(reason[..3].parse().unwrap()),
                not_delivered,
                not_delivered
            ),
            "{tool}: {failure:?}"
        );
        assert_eq!(NotSent::in_chain(&*err), not_delivered, "{tool}: {err}");
        let text = failed.to_string();
        let refused = format!("{reason} at {url}: \"slow down\"");
        assert!(
            text.starts_with("MCP server `remote`: sending request ")
                && text.contains("(tools/call) failed")
                && text.contains(&refused)
                && text.contains("Retry-After: 7")
                && text.contains("not delivered") == not_delivered,
            "{tool}: {text}"
        );
    }
    let echo = ToolCall::new("echo").with_json_arguments(serde_json::json!({"message": "after"}));
    assert_eq!(
        client.clone().oneshot(echo).await.unwrap().joined_text(),
        "Echo: after"
    );
    assert_eq!(client.state(), ServerState::Ready);
    client.shutdown().await;
    let log = log(dir.path());
    assert_eq!(posts_of(&log, "initialize").len(), 1, "{log:#?}");
    assert_eq!(calls(dir.path()), ["\"up\"", "\"after\""]);
}

/// Through the standard stack, a refused call is sent again only where that is safe: a `429`
/// (not processed) up to the retry policy's three attempts whatever the tool; a `500` once
/// for a tool that is not retry-safe (it may have run), three times for one that is; a
/// `400` (refused, but sending it again would be refused again) once. The session survives.
#[tokio::test]
async fn the_stack_resends_a_429_always_and_a_5xx_only_when_retry_safe() {
    use kaged_mcp::client::ToolCall;
    use kaged_mcp::stack::{StackBuilder, StackSettings};
    use tower::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let peer = start("ok", &[], dir.path());
    let client = direct_client(&peer).await;
    let stack = StackBuilder::new(StackSettings::new("remote")).build(client.clone());
    let posts = |tool: &str| {
        log(dir.path())
            .iter()
            .filter(|e| e["verb"] == "POST" && e["tool"] == tool)
            .count()
    };
    for (tool, safe, sent) in [
        ("http_429", false, 3),
        ("http_500", false, 1),
        ("http_500", true, 3),
        ("http_503", false, 1),
        ("http_400", false, 1),
    ] {
        let before = posts(tool);
        let call = ToolCall::new(tool).with_retry_safe(safe);
        let result = stack.clone().oneshot(call).await;
        assert!(result.is_err(), "{tool}");
        assert_eq!(
            posts(tool) - before,
            sent,
            "{tool} (retry-safe {safe}): {:#?}",
            log(dir.path())
        );
    }
    let echo = ToolCall::new("echo").with_json_arguments(serde_json::json!({"message": "after"}));
    assert_eq!(
        stack.clone().oneshot(echo).await.unwrap().joined_text(),
        "Echo: after"
    );
    client.shutdown().await;
    assert_eq!(posts_of(&log(dir.path()), "initialize").len(), 1);
}
