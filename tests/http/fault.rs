//! The Streamable HTTP transport against `tests/servers/http_fault_server.py`, for what no real
//! peer does on demand: session expiry, a response stream cut before its answer, server requests
//! on a response stream, no GET stream, 401/403, slow headers, bodies over the frame limit or
//! endless, malformed event streams, a redirect to another origin, cancellation. Each test goes
//! through the whole session and stack and reads the server's request log.

use std::path::Path;
use std::time::Duration;

use kaged_mcp::client::{ClientError, ErrorKind};
use kaged_mcp::config::Sources;
use kaged_mcp::{Error, Session};
use peers::SsePeer;
use serde_json::{json, Map, Value};

use crate::common::capture;
use crate::common::peers;
use crate::sse_harness;

pub(crate) const SECRET: &str = "tok-8f3a-very-secret";

pub(crate) fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

/// The fault server in `mode` with `extra` arguments, logging to `dir/log.jsonl` and
/// `dir/calls.txt`.
pub(crate) fn start(mode: &str, extra: &[&str], dir: &Path) -> SsePeer {
    let log = dir.join("log.jsonl");
    let calls = dir.join("calls.txt");
    let mut all = vec![
        "--log",
        log.to_str().unwrap(),
        "--call-log",
        calls.to_str().unwrap(),
    ];
    all.extend_from_slice(extra);
    SsePeer::start_reporting_port(&peers::http_fault_server(mode, &all))
        .unwrap_or_else(|e| panic!("{mode}: {e}"))
}

/// A session on the server as `remote`, with `auth`/`local`/`config` text added.
pub(crate) async fn session(peer: &SsePeer, auth: &str, local: &str, config: &str) -> Session {
    let project = format!(
        "mcp:\n  remote:\n    transport: streamable-http\n    url: {}\n{auth}",
        peer.mcp_url()
    );
    let config = Sources::new(project)
        .local(local.to_owned())
        .config(config.to_owned())
        .load()
        .unwrap();
    Session::start(config).await.unwrap()
}

pub(crate) fn log(dir: &Path) -> Vec<Value> {
    peers::read_request_log(&dir.join("log.jsonl"))
}

pub(crate) fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits (at most 30 s) until the server's request log has an entry for which `seen` holds:
/// the server writes each entry before its answer's last byte.
pub(crate) async fn until_logged(dir: &Path, seen: impl Fn(&Value) -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !log(dir).iter().any(&seen) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never logged: {:#?}", log(dir)));
}

pub(crate) fn posts_of<'a>(log: &'a [Value], method: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|e| e["verb"] == "POST" && e["method"] == method)
        .collect()
}

pub(crate) async fn echo(session: &Session, message: &str) -> Result<String, Error> {
    session
        .call("mcp.remote.echo", args(json!({ "message": message })))
        .await
        .map(|r| r.joined_text())
}

/// A session on an `ok` server: one call, the GET stream seen open, then shut down; the server
/// (kept running) and its request log.
async fn one_call_logged(dir: &Path) -> (SsePeer, Vec<Value>) {
    let peer = start("ok", &[], dir);
    let session = session(&peer, "", "", "").await;
    assert_eq!(echo(&session, "one").await.unwrap(), "Echo: one");
    // The GET stream opened after the handshake.
    until_logged(dir, |e| e["verb"] == "GET" && e["status"] == 200).await;
    session.shutdown().await;
    (peer, log(dir))
}

#[tokio::test]
async fn headers_session_id_protocol_version_get_stream_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let (_peer, log) = one_call_logged(dir.path()).await;
    let init = posts_of(&log, "initialize");
    assert_eq!(init.len(), 1, "{log:#?}");
    assert!(init[0]["session"].is_null() && init[0]["protocol_version"].is_null());
    let sid = init[0]["issued_session"].as_str().unwrap().to_owned();
    // Every later request carries the session id and the negotiated version.
    let later: Vec<&Value> = log
        .iter()
        .skip_while(|e| e["method"] != "initialize")
        .skip(1)
        .collect();
    assert!(later.len() >= 4, "{log:#?}");
    for e in &later {
        assert_eq!(e["session"], sid.as_str(), "{e}");
        assert_eq!(e["protocol_version"], "2025-11-25", "{e}");
    }
    assert!(
        later
            .iter()
            .any(|e| e["verb"] == "GET" && e["status"] == 200),
        "{log:#?}"
    );
    let delete = later
        .iter()
        .find(|e| e["verb"] == "DELETE")
        .expect("a DELETE on shutdown");
    assert_eq!(delete["status"], 200);
    // Notifications were accepted in order: initialized before tools/list.
    let order: Vec<&str> = log.iter().filter_map(|e| e["method"].as_str()).collect();
    let initialized = order.iter().position(|m| *m == "notifications/initialized");
    let list = order.iter().position(|m| *m == "tools/list");
    assert!(initialized.is_some() && initialized < list, "{order:?}");
    // The GET stream opens only once `notifications/initialized` was accepted.
    let at = |f: &dyn Fn(&Value) -> bool| log.iter().position(f).unwrap();
    assert!(
        at(&|e| e["method"] == "notifications/initialized") < at(&|e| e["verb"] == "GET"),
        "{log:#?}"
    );
}

/// The HTTP client writes `Host` for an `http://` URL itself (made once per origin, not by
/// hyper-util per request): every request, whichever its verb, carries it exactly once, with
/// the port.
#[tokio::test]
async fn every_request_carries_one_host_header_with_the_port() {
    let dir = tempfile::tempdir().unwrap();
    let (peer, log) = one_call_logged(dir.path()).await;
    let want = json!([format!("127.0.0.1:{}", peer.port())]);
    for verb in ["POST", "GET", "DELETE"] {
        assert!(log.iter().any(|e| e["verb"] == verb), "no {verb}: {log:#?}");
    }
    for e in &log {
        assert_eq!(e["host"], want, "{e}");
    }
}

#[tokio::test]
async fn an_expired_session_is_replaced_without_the_caller_noticing_and_nothing_runs_twice() {
    for answers in ["sse", "json"] {
        let dir = tempfile::tempdir().unwrap();
        let peer = start("expire_after_first", &["--answers", answers], dir.path());
        let session = session(&peer, "", "", "").await;
        assert_eq!(echo(&session, "first").await.unwrap(), "Echo: first");
        // The server forgot the session as it answered: this call meets a 404, the client
        // starts a new session and sends the call again on it.
        assert_eq!(echo(&session, "second").await.unwrap(), "Echo: second");
        assert_eq!(echo(&session, "third").await.unwrap(), "Echo: third");
        assert_eq!(session.status()[0].state, "ready");
        session.shutdown().await;
        let log = log(dir.path());
        assert_eq!(posts_of(&log, "initialize").len(), 2, "{answers}: {log:#?}");
        let refused = posts_of(&log, "tools/call")
            .into_iter()
            .filter(|e| e["status"] == 404)
            .count();
        assert_eq!(refused, 1, "{answers}: {log:#?}");
        assert_eq!(
            calls(dir.path()),
            ["\"first\"", "\"second\"", "\"third\""],
            "{answers}"
        );
    }
}

#[tokio::test]
async fn calls_on_their_way_when_the_server_ends_the_session_are_all_sent_again() {
    // Eight calls are POSTed to the session; the server ends it and answers each 404 (none was
    // processed). Each 404 proves its call did not run, so each is sent again on the next
    // session, however the 404s and the first one's closing of the session interleave.
    for answers in ["sse", "json"] {
        let dir = tempfile::tempdir().unwrap();
        let peer = start(
            "expire_burst",
            &["--answers", answers, "--burst", "8"],
            dir.path(),
        );
        let session = session(&peer, "", "", "").await;
        let messages: Vec<String> = (0..8).map(|i| format!("b{i}")).collect();
        let results = futures::future::join_all(messages.iter().map(|m| echo(&session, m))).await;
        for (i, r) in results.iter().enumerate() {
            match r {
                Ok(text) => assert_eq!(text, &format!("Echo: b{i}")),
                Err(e) => panic!("{answers}: call b{i} failed: {e}"),
            }
        }
        assert_eq!(session.status()[0].state, "ready");
        session.shutdown().await;
        let log = log(dir.path());
        let refused = posts_of(&log, "tools/call")
            .into_iter()
            .filter(|e| e["status"] == 404)
            .count();
        assert_eq!(refused, 8, "{answers}: {log:#?}");
        let mut ran = calls(dir.path());
        ran.sort();
        let want: Vec<String> = (0..8).map(|i| format!("\"b{i}\"")).collect();
        assert_eq!(ran, want, "{answers}: each call ran once");
    }
}

#[tokio::test]
async fn a_stream_cut_before_its_answer_is_resumed_with_last_event_id_after_retry() {
    for answers in ["sse", "json"] {
        let dir = tempfile::tempdir().unwrap();
        let peer = start(
            "cut_before_answer",
            &["--answers", answers, "--retry-ms", "400"],
            dir.path(),
        );
        let session = session(&peer, "", "", "").await;
        assert_eq!(echo(&session, "once").await.unwrap(), "Echo: once");
        assert_eq!(echo(&session, "twice").await.unwrap(), "Echo: twice");
        session.shutdown().await;
        let log = log(dir.path());
        // Each call was POSTed once and ran once; its answer came on a resuming GET.
        assert_eq!(posts_of(&log, "tools/call").len(), 2, "{answers}: {log:#?}");
        assert_eq!(calls(dir.path()), ["\"once\"", "\"twice\""], "{answers}");
        let resumed: Vec<&Value> = log
            .iter()
            .filter(|e| e["verb"] == "GET" && e["resumed"] == true)
            .collect();
        assert_eq!(resumed.len(), 2, "{answers}: {log:#?}");
        for g in resumed {
            assert!(g["last_event_id"].as_str().unwrap().ends_with("-0"), "{g}");
            assert!(g["since_cut_ms"].as_f64().unwrap() >= 390.0, "{g}");
        }
    }
}

#[tokio::test]
async fn server_requests_on_a_response_stream_are_answered_and_sampling_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("ok", &[], dir.path());
    let session = session(&peer, "", "", "").await;
    let text = session
        .call("mcp.remote.ask", args(json!({})))
        .await
        .unwrap()
        .joined_text();
    let answers: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answers["ping"]["result"], json!({}), "{answers}");
    assert_eq!(answers["sampling"]["error"]["code"], -32601, "{answers}");
    session.shutdown().await;
    let log = log(dir.path());
    let posted: Vec<&Value> = log.iter().filter(|e| e["response"] == true).collect();
    assert_eq!(posted.len(), 2, "{log:#?}");
}

#[tokio::test]
async fn a_server_without_a_get_stream_is_asked_once() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("no_get", &[], dir.path());
    let (captured, _guard) = capture::Captured::install_local();
    let session = session(&peer, "", "", "").await;
    assert_eq!(echo(&session, "a").await.unwrap(), "Echo: a");
    // Once the 405 was taken in, every pause a GET stream is opened again after (at most
    // 60 s) is passed on a paused clock: a GET opened again would show in the log.
    let taken = tokio::time::timeout(Duration::from_secs(30), async {
        while !captured.text().contains("the server offers no GET stream") {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    taken.await.expect("the 405 is taken in");
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(120)).await;
    tokio::time::resume();
    assert_eq!(echo(&session, "b").await.unwrap(), "Echo: b");
    session.shutdown().await;
    let log = log(dir.path());
    let gets: Vec<&Value> = log.iter().filter(|e| e["verb"] == "GET").collect();
    assert_eq!(gets.len(), 1, "{log:#?}");
    assert_eq!(gets[0]["status"], 405);
}

/// A request answered `202 Accepted` with no body can be answered only on the GET stream; when
/// the server refused that stream (405), the call fails at once naming why (it waited for
/// its timeout), and the connection goes on. The `http_202` tool is not listed, so the client
/// is driven directly.
#[tokio::test]
async fn a_request_answered_202_by_a_server_without_a_get_stream_fails_at_once() {
    use kaged_mcp::client::{ClientOptions, McpClient, ToolCall};
    use tower::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let peer = start("no_get", &[], dir.path());
    let project = format!(
        "mcp:\n  remote:\n    transport: streamable-http\n    url: {}\n",
        peer.mcp_url()
    );
    let config = Sources::new(project).load().unwrap();
    let transport =
        kaged_mcp::assemble::transport(&config, &config.project.servers[0], None, None).unwrap();
    let client = McpClient::new("remote", transport, ClientOptions::default());
    let echo = ToolCall::new("echo").with_json_arguments(json!({"message": "a"}));
    assert_eq!(
        client.clone().oneshot(echo).await.unwrap().joined_text(),
        "Echo: a"
    );
    let answer = tokio::time::timeout(
        Duration::from_secs(30),
        client.clone().oneshot(ToolCall::new("http_202")),
    )
    .await
    .expect("waited for an answer that cannot come");
    let error = answer.expect_err("a 202 is no answer").to_string();
    assert!(
        error.contains("answered `202 Accepted` with no answer; the server offers no GET stream"),
        "{error}"
    );
    let echo = ToolCall::new("echo").with_json_arguments(json!({"message": "b"}));
    assert_eq!(
        client.clone().oneshot(echo).await.unwrap().joined_text(),
        "Echo: b"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn a_wrong_secret_or_403_fails_the_server_at_once_naming_it_and_the_secret_ref() {
    let auth = "    auth: { type: bearer, secret_ref: api_keys.remote }\n";
    // A plain 403 (no `WWW-Authenticate`) fails the server the same way, but says nothing of
    // the secret: the server did not say the refusal was about credentials.
    for (mode, secret, status, names_secret) in [
        ("auth", "not-the-secret", "401 Unauthorized", true),
        ("forbidden", SECRET, "403 Forbidden", false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let peer = start(mode, &["--secret", SECRET], dir.path());
        let local = format!("[secrets.api_keys]\nremote = \"{secret}\"\n");
        let session = session(&peer, auth, &local, "").await;
        let status_now = &session.status()[0];
        assert_eq!(status_now.state, "failed", "{mode}: {status_now:?}");
        let err = status_now.last_error.clone().unwrap();
        let detail = status_now.error_detail.clone().unwrap();
        assert!(
            detail.contains("`remote`") && detail.contains(&err),
            "{detail}"
        );
        assert!(
            err.contains(status) && err.contains("`api_keys.remote`") == names_secret,
            "{mode}: {err}"
        );
        assert!(!err.contains(SECRET) && !err.contains(secret), "{err}");
        // No restart loop: one request only (the era probe, `server/discover`, refused; no
        // `initialize` follows a refusal of the credentials); a call says the server is not
        // ready.
        let err = echo(&session, "x").await.unwrap_err().to_string();
        assert!(
            err.contains("server `remote` is not ready (failed)"),
            "{mode}: {err}"
        );
        let log = log(dir.path());
        assert_eq!(posts_of(&log, "server/discover").len(), 1, "{mode}");
        assert_eq!(posts_of(&log, "initialize").len(), 0, "{mode}");
    }
    // The right secret works.
    let dir = tempfile::tempdir().unwrap();
    let peer = start("auth", &["--secret", SECRET], dir.path());
    let local = format!("[secrets.api_keys]\nremote = \"{SECRET}\"\n");
    let session = session(&peer, auth, &local, "").await;
    assert_eq!(echo(&session, "in").await.unwrap(), "Echo: in");
    session.shutdown().await;
}

#[tokio::test]
async fn a_call_that_times_out_is_cancelled_on_the_wire_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("ok", &[], dir.path());
    let local = "[mcp.remote]\ntimeout_ms = 500\n";
    let session = session(&peer, "", local, "").await;
    let err = session
        .call("mcp.remote.slow", args(json!({"ms": 5000})))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert_eq!(echo(&session, "next").await.unwrap(), "Echo: next");
    session.shutdown().await;
    let log = log(dir.path());
    // (The slow call itself is logged only when the server answers it, after 5 s.)
    let cancelled = posts_of(&log, "notifications/cancelled");
    assert_eq!(cancelled.len(), 1, "{log:#?}");
    assert_eq!(cancelled[0]["status"], 202);
}

#[tokio::test]
async fn slow_headers_are_bounded_by_the_call_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("slow_headers", &["--delay", "2"], dir.path());
    // The call's own timeout is 500 ms. (Only calls are slow: every request the client sends
    // is bounded by `timeout_ms`, the tool list's too.)
    let local = "[mcp.remote]\ntimeout_ms = 500\n";
    let session = session(&peer, "", local, "").await;
    assert_eq!(session.status()[0].state, "ready");
    let err = echo(&session, "late").await.unwrap_err();
    assert!(
        matches!(err, Error::Timeout { timeout, .. } if timeout == Duration::from_millis(500)),
        "{err}"
    );
}

#[tokio::test]
async fn answers_over_the_frame_limit_fail_their_call_and_the_session_goes_on() {
    for answers in ["sse", "json"] {
        let dir = tempfile::tempdir().unwrap();
        let peer = start("ok", &["--answers", answers], dir.path());
        let config = "[mcp]\nframe_limit_bytes = 1048576\n";
        let session = session(&peer, "", "", config).await;
        let err = session
            .call("mcp.remote.big", args(json!({"n": 3_000_000})))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("over the frame limit of 1048576 bytes") && text.contains("request"),
            "{answers}: {text}"
        );
        // Under the limit is fine, also just under it, arriving in many chunks; and the
        // session is still good.
        for n in [500_000, 1_048_576 - 300] {
            let ok = session
                .call("mcp.remote.big", args(json!({ "n": n })))
                .await
                .unwrap_or_else(|e| panic!("{answers}: {n}: {e}"));
            assert!(ok.truncated, "{answers}: {n}");
        }
        assert_eq!(echo(&session, "still").await.unwrap(), "Echo: still");
        session.shutdown().await;
    }
}

/// The `ClientError` inside a failed call, and its text.
fn too_large(err: &Error) -> (&ClientError, String) {
    let Error::Call { source, .. } = err else {
        panic!("not a failed call: {err:?}");
    };
    let failed = ClientError::find(&**source).unwrap_or_else(|| panic!("no ClientError: {err}"));
    (failed, err.to_string())
}

/// Waits (at most 30 s) until the server says the client went away from an answer it was
/// still writing.
async fn until_gone(peer: &SsePeer, what: &str) {
    let gone = tokio::time::timeout(Duration::from_secs(30), async {
        while !peer
            .stderr()
            .contains("the client went away while answering")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    gone.await
        .unwrap_or_else(|_| panic!("{what}: {}", peer.stderr()));
    let stderr = peer.stderr();
    assert!(!stderr.contains("Traceback"), "{stderr}");
}

/// An answer that never ends (a chunked JSON body, or one endless `data:` line) fails its
/// call as too large as soon as the bytes read pass the frame limit, not at the call's
/// timeout (60 s here): the error names the limit, the request and the setting, and it is
/// not a timeout. The body is read no further (the server sees the client go away) and the
/// session goes on.
#[tokio::test]
async fn an_endless_answer_fails_as_too_large_once_it_passes_the_limit() {
    for answers in ["sse", "json"] {
        let dir = tempfile::tempdir().unwrap();
        let peer = start("ok", &["--answers", answers], dir.path());
        let local = "[mcp.remote]\ntimeout_ms = 60000\n";
        let config = "[mcp]\nframe_limit_bytes = 1048576\n";
        let session = session(&peer, "", local, config).await;
        let err = session
            .call("mcp.remote.endless", args(json!({})))
            .await
            .unwrap_err();
        assert!(!matches!(err, Error::Timeout { .. }), "{answers}: {err}");
        let (failed, text) = too_large(&err);
        assert_eq!(failed.kind(), ErrorKind::FrameTooLarge, "{answers}: {text}");
        assert_eq!(failed.limit(), Some(1_048_576), "{answers}: {text}");
        let len = failed.frame_len().unwrap();
        // Stopped at the limit: a 64 KiB piece or so past it, not megabytes.
        assert!(len > 1_048_576 && len < 4 << 20, "{answers}: {len}");
        assert_eq!(failed.request().unwrap().method, "tools/call");
        for said in [
            "MCP server `remote` sent a message too large: at least",
            "over the frame limit of 1048576 bytes during request",
            "(tools/call)",
            "`frame_limit_bytes` under [mcp] in config.toml",
        ] {
            assert!(text.contains(said), "{answers}: {said:?} not in {text}");
        }
        until_gone(&peer, answers).await;
        assert_eq!(echo(&session, "after").await.unwrap(), "Echo: after");
        session.shutdown().await;
    }
}

/// A JSON answer whose `Content-Length` (99 999 999 999) is over the frame limit fails its
/// call as too large before its body is read (the server trickles it a byte at a time, so
/// reading it would last until the call's timeout of 60 s), naming the declared length.
#[tokio::test]
async fn a_json_answer_declared_over_the_limit_fails_before_its_body_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("ok", &["--answers", "json"], dir.path());
    let local = "[mcp.remote]\ntimeout_ms = 60000\n";
    let session = session(&peer, "", local, "").await;
    let err = session
        .call("mcp.remote.declared", args(json!({})))
        .await
        .unwrap_err();
    assert!(!matches!(err, Error::Timeout { .. }), "{err}");
    let (failed, text) = too_large(&err);
    assert_eq!(failed.kind(), ErrorKind::FrameTooLarge, "{text}");
    assert_eq!(failed.frame_len(), Some(99_999_999_999), "{text}");
    assert_eq!(failed.limit(), Some(16 << 20), "{text}");
    assert_eq!(failed.request().unwrap().method, "tools/call");
    assert!(
        text.contains("sent a message too large: at least 99999999999 bytes, over the frame limit of 16777216 bytes")
            && text.contains("frame_limit_bytes"),
        "{text}"
    );
    until_gone(&peer, "declared").await;
    // Under the limit, a declared length is read as usual.
    assert_eq!(echo(&session, "after").await.unwrap(), "Echo: after");
    session.shutdown().await;
}

#[tokio::test]
async fn malformed_event_streams_still_deliver_the_real_answer() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("malformed_sse", &[], dir.path());
    let session = session(&peer, "", "", "").await;
    assert_eq!(echo(&session, "clean").await.unwrap(), "Echo: clean");
    session.shutdown().await;
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_nothing_leaks() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("redirect", &["--secret", SECRET], dir.path());
    let auth = "    auth: { type: bearer, secret_ref: api_keys.remote }\n";
    let local = format!("[secrets.api_keys]\nremote = \"{SECRET}\"\n");
    let session = session(&peer, auth, &local, "").await;
    let status = &session.status()[0];
    assert_eq!(status.state, "failed", "{status:?}");
    let err = status.last_error.clone().unwrap();
    assert!(
        err.contains("307") && err.contains("another origin (http://127.0.0.2:"),
        "{err}"
    );
    // The start has returned, so whatever it sent was answered, and the server logs each
    // request before its answer's last byte: the log is complete.
    let log = log(dir.path());
    assert!(
        !log.iter().any(|e| e["listener"] == "127.0.0.2"),
        "{log:#?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_server_backs_off_is_marked_failed_after_five_failures_and_enable_resets() {
    use kaged_mcp::client::{ClientError, ClientOptions, McpClient, ServerState, ToolCall};
    use kaged_mcp::transport::streamable_http::{StreamableHttpConfig, StreamableHttpTransport};
    use tower::{Service, ServiceExt};

    let url = format!("http://127.0.0.1:{}/mcp", peers::free_port());
    let transport =
        StreamableHttpTransport::new(StreamableHttpConfig::new(url.parse().unwrap())).unwrap();
    // The exact doubling schedule (the jitter below it is tested in `options.rs`).
    let options = ClientOptions::default().backoff_jitter(kaged_mcp_layers::retry::Jitter::None);
    let client = McpClient::new("gone", transport, options);
    let call = |client: &McpClient| {
        let mut client = client.clone();
        async move {
            client
                .ready()
                .await?
                .call(ToolCall::new("echo").with_json_arguments(json!({"message": "x"})))
                .await
        }
    };
    let mut waited = Vec::new();
    for attempt in 1..=5u32 {
        let err = client.start().await.unwrap_err();
        assert!(
            err.server() == "gone" && err.send_failure().is_some_and(|f| f.not_delivered()),
            "attempt {attempt}: {err}"
        );
        if attempt == 5 {
            break;
        }
        let err = call(&client).await.unwrap_err();
        let Some(retry_in) = ClientError::find(&*err).and_then(ClientError::retry_in) else {
            panic!("attempt {attempt}: {err}");
        };
        waited.push(retry_in.as_secs_f64().ceil() as u64);
        tokio::time::advance(retry_in).await;
    }
    assert_eq!(waited, [1, 2, 4, 8]);
    assert_eq!(client.state(), ServerState::Failed);
    let err = call(&client).await.unwrap_err();
    assert_eq!(
        ClientError::find(&*err).and_then(ClientError::failures),
        Some(5)
    );
    let last = client.last_error().unwrap();
    // The first request of a start is the era probe.
    assert!(
        last.contains("`gone`") && last.contains("server/discover"),
        "{last}"
    );
    // `enable` starts over: the next start is attempted at once.
    client.reenable();
    assert_eq!(
        client.start().await.unwrap_err().kind(),
        kaged_mcp::client::ErrorKind::SendFailed
    );
    assert_eq!(client.state(), ServerState::Restarting);
}

/// The session tells the transport what each frame is; the transport never guesses from the
/// bytes. An answer to the server whose content happens to hold the string
/// `"notifications/cancelled"` is POSTed like any other in a 2026-07-28 session (it was
/// taken for a cancellation and dropped).
#[tokio::test]
async fn a_modern_session_posts_every_answer_whatever_its_bytes_hold() {
    use kaged_mcp::protocol::RequestId;
    use kaged_mcp::transport::streamable_http::{StreamableHttpConfig, StreamableHttpTransport};
    use kaged_mcp::transport::RequestHead;
    use sse_harness::mini::{Mini, MiniConfig};

    let mini = Mini::start(MiniConfig::default()).await;
    let url = format!("http://127.0.0.1:{}/mcp", mini.port);
    let transport =
        StreamableHttpTransport::new(StreamableHttpConfig::new(url.parse().unwrap())).unwrap();
    let session = sse_harness::Session::connect(&transport, "modern", 1 << 20)
        .await
        .unwrap();
    let out = session.outbound();
    // A modern request (it names its own protocol version): the session is modern from now.
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}}})
    .to_string();
    out.send_request(
        &RequestId::from(1u64),
        &RequestHead::new("tools/call")
            .name(Some("echo"))
            .protocol_version(Some("2026-07-28")),
        &mut |buf| {
            buf.extend_from_slice(request.as_bytes());
            Ok(())
        },
    )
    .unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": "s-1",
        "result": {"method": "notifications/cancelled", "requestId": 1}});
    session.send(&answer).unwrap();
    let posted = tokio::time::timeout(sse_harness::PATIENCE, async {
        loop {
            let bodies: Vec<Value> = mini
                .seen()
                .iter()
                .filter(|s| s.method == "POST")
                .filter_map(|s| serde_json::from_slice(&s.body).ok())
                .collect();
            if bodies.len() == 2 {
                return bodies;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("both frames are POSTed");
    assert!(posted.contains(&answer), "{posted:#?}");
}

/// A GET or DELETE whose pooled connection the server closed before answering (it closed an
/// idle keep-alive connection as the client reused it) is sent once more on a fresh
/// connection, in the HTTP core, as legacy SSE's GET always was: the session's GET stream
/// opens without a failure and backoff, and the DELETE at shutdown reaches the server (it was
/// lost).
#[tokio::test]
async fn a_get_or_delete_on_a_connection_closed_under_it_is_sent_once_more() {
    let dir = tempfile::tempdir().unwrap();
    let peer = start("drop_first", &[], dir.path());
    let (captured, _guard) = capture::Captured::install_local();
    let session = session(&peer, "", "", "").await;
    assert_eq!(echo(&session, "one").await.unwrap(), "Echo: one");
    tokio::time::timeout(Duration::from_secs(30), async {
        while !log(dir.path())
            .iter()
            .any(|e| e["verb"] == "GET" && e["status"] == 200)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the GET stream opens");
    session.shutdown().await;
    let log = log(dir.path());
    let statuses = |verb: &str| -> Vec<Value> {
        log.iter()
            .filter(|e| e["verb"] == verb)
            .map(|e| e["status"].clone())
            .collect()
    };
    assert_eq!(
        statuses("GET")[..2],
        [json!("dropped"), json!(200)],
        "{log:#?}"
    );
    assert_eq!(
        statuses("DELETE"),
        [json!("dropped"), json!(200)],
        "{log:#?}"
    );
    let text = captured.text();
    assert!(
        !text.contains("GET stream could not be opened"),
        "the resend is the core's, not the listen loop's backoff: {text}"
    );
}
