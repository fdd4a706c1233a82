//! The SSE transport against `tests/servers/sse_fault_server.py` (every fault mode) and a tiny
//! in-test HTTP server (POST failures, headers, a wrong content type), driven straight through
//! the `Transport` trait by a minimal session (`tests/sse_harness`).

use std::io::ErrorKind;
use std::time::Duration;

use harness::mini::{Mini, MiniConfig};
use harness::{io_kind, read_log, Session};
use kaged_mcp::transport::sse::{InvalidKind, SseConfig, SseTransport};
use kaged_mcp::transport::{SendError, Transport};
use kaged_mcp_layers::auth::AuthHeader;
use peers::{SseFault, SsePeer};
use serde_json::json;

use crate::common::peers;
use crate::sse_harness as harness;

const LIMIT: usize = 16 * 1024 * 1024;
const SECRET: &str = "tok-sse-7f3a9c";

fn fault(mode: SseFault, extra: &[&str]) -> SsePeer {
    SsePeer::start_fault(mode, extra).unwrap_or_else(|e| panic!("fault server {mode:?}: {e}"))
}

fn config(url: &str) -> SseConfig {
    SseConfig::new(url.parse().expect("a URL"))
}

fn transport(config: SseConfig) -> SseTransport {
    SseTransport::new(config).expect("a valid SSE configuration")
}

fn log_file() -> tempfile::TempPath {
    tempfile::NamedTempFile::new()
        .expect("temp file")
        .into_temp_path()
}

/// initialize, tools/list, echo and (optionally) a 1 MB result.
async fn full_session(peer: &SsePeer, big: bool) {
    let session = Session::connect(&transport(config(&peer.sse_url())), "fault", LIMIT)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}; stderr:\n{}", peer.stderr()));
    assert_eq!(session.peek_id(), 0, "the first request id is 0");
    let init = session.initialize().await;
    assert_eq!(init["protocolVersion"], "2024-11-05");
    let tools = session.tool_names().await;
    assert_eq!(tools, ["echo", "big", "ask"]);
    let echo = session
        .call("echo", json!({ "message": "héllo\nwörld" }))
        .await;
    assert_eq!(Session::text(&echo), "Echo: héllo\nwörld");
    if big {
        let answer = session.call("big", json!({ "n": 1_000_000 })).await;
        let text = Session::text(&answer);
        assert_eq!(text.len(), 1_000_000);
        assert!(text.bytes().all(|b| b == b'x'));
    }
    let recorder = session.close().await;
    assert_eq!(recorder.close_calls(), (1, false));
}

#[tokio::test]
async fn a_plain_lf_stream_carries_initialize_tools_list_echo_and_a_one_mb_result() {
    full_session(&fault(SseFault::Ok, &[]), true).await;
}

#[tokio::test]
async fn a_crlf_stream_carries_the_same_session() {
    full_session(&fault(SseFault::Crlf, &[]), true).await;
}

#[tokio::test]
async fn a_stream_written_one_byte_at_a_time_with_bom_comments_retry_and_split_data_works() {
    full_session(&fault(SseFault::ByteAtATime, &[]), false).await;
}

#[tokio::test]
async fn the_servers_ping_and_sampling_requests_are_answered_on_the_same_endpoint() {
    let log = log_file();
    let peer = fault(SseFault::Ok, &["--log", log.to_str().unwrap()]);
    let session = Session::connect(&transport(config(&peer.sse_url())), "fault", LIMIT)
        .await
        .unwrap();
    session.initialize().await;
    let answer = session.call("ask", json!({})).await;
    let report: serde_json::Value = serde_json::from_str(&Session::text(&answer)).unwrap();
    assert_eq!(report["ping"], json!({ "id": "p1", "result": {} }));
    assert_eq!(report["sampling"]["id"], 7);
    assert_eq!(report["sampling"]["error"]["code"], -32601);
    session.close().await;

    let entries = read_log(&log);
    let stream_session = entries[0]["session"].as_str().unwrap().to_owned();
    let answers: Vec<_> = entries.iter().filter(|e| e["response"] == true).collect();
    assert_eq!(answers.len(), 2, "{entries:?}");
    for answer in answers {
        assert_eq!(answer["verb"], "POST");
        assert_eq!(answer["status"], 202);
        assert_eq!(
            answer["path"],
            format!("/messages?session_id={stream_session}")
        );
    }
}

#[tokio::test]
async fn a_bearer_secret_opens_the_stream_and_goes_on_every_post() {
    let log = log_file();
    let peer = fault(
        SseFault::Auth,
        &["--secret", SECRET, "--log", log.to_str().unwrap()],
    );
    let cfg = config(&peer.sse_url()).auth(AuthHeader::bearer(SECRET).unwrap());
    let session = Session::connect(&transport(cfg), "auth", LIMIT)
        .await
        .unwrap();
    session.initialize().await;
    let echo = session.call("echo", json!({ "message": "hi" })).await;
    assert_eq!(Session::text(&echo), "Echo: hi");
    session.close().await;
    let entries = read_log(&log);
    assert!(entries.len() >= 4, "{entries:?}");
    for entry in &entries {
        assert_eq!(entry["authorization"], true, "{entry}");
        assert_ne!(entry["status"], 401, "{entry}");
    }
}

#[tokio::test]
async fn a_custom_auth_header_is_accepted() {
    let peer = fault(SseFault::Auth, &["--secret", SECRET]);
    let cfg = config(&peer.sse_url()).auth(AuthHeader::header("X-API-Key", SECRET).unwrap());
    let session = Session::connect(&transport(cfg), "auth", LIMIT)
        .await
        .unwrap();
    session.initialize().await;
    assert_eq!(session.tool_names().await.len(), 3);
    session.close().await;
}

#[tokio::test]
async fn a_wrong_or_missing_secret_is_an_auth_error_naming_the_server() {
    let peer = fault(SseFault::Auth, &["--secret", SECRET]);
    let attempts = [
        Some(AuthHeader::bearer("not-the-secret").unwrap()),
        None,
        Some(AuthHeader::header("X-API-Key", "not-the-secret").unwrap()),
    ];
    for auth in attempts {
        let mut cfg = config(&peer.sse_url());
        if let Some(auth) = auth {
            cfg = cfg.auth(auth);
        }
        let err = Session::connect(&transport(cfg), "github", LIMIT)
            .await
            .err()
            .expect("a 401 refuses the connection");
        let text = err.to_string();
        assert!(text.contains("server `github`"), "{text}");
        assert!(text.contains("authentication refused"), "{text}");
        assert!(
            text.contains(&format!(
                "401 Unauthorized at {}: \"unauthorized\"",
                peer.sse_url()
            )),
            "{text}"
        );
        assert!(
            !text.contains(SECRET) && !text.contains("not-the-secret"),
            "{text}"
        );
        assert_eq!(io_kind(&err), Some(ErrorKind::PermissionDenied));
    }
}

/// A plain 403 (no `WWW-Authenticate`: a Host check, an allow-list) names the URL and what
/// the server said, and nothing about credentials; it still fails the server at once.
#[tokio::test]
async fn a_plain_403_is_a_refusal_naming_the_url_and_the_servers_words() {
    let peer = fault(SseFault::Forbidden, &[]);
    let url = peer.sse_url();
    let cfg = config(&url).auth(AuthHeader::bearer(SECRET).unwrap());
    let err = Session::connect(&transport(cfg), "locked", LIMIT)
        .await
        .err()
        .expect("a 403 refuses the connection");
    let text = err.to_string();
    assert_eq!(
        text,
        format!(
            "server `locked`: the server refused the GET: 403 Forbidden at {url}: \"forbidden\""
        )
    );
    assert!(err.is_permanent(), "{err:?}");
    assert_eq!(io_kind(&err), Some(ErrorKind::PermissionDenied));
}

/// A 404 to the GET of the stream questions the URL's path.
#[tokio::test]
async fn a_404_to_the_stream_questions_the_endpoint_path() {
    let peer = fault(SseFault::Ok, &[]);
    let url = format!("http://127.0.0.1:{}/", peer.port());
    let err = Session::connect(&transport(config(&url)), "lost", LIMIT)
        .await
        .err()
        .expect("a 404 refuses the connection");
    let text = err.to_string();
    assert_eq!(
        text,
        format!(
            "server `lost`: the server refused the GET: 404 Not Found at {url}: \"not found\"; is \
             the MCP endpoint path right? (it is often …/sse)"
        )
    );
}

#[tokio::test]
async fn a_dropped_stream_reports_closed_at_once_and_a_new_connect_gets_a_new_session() {
    let log = log_file();
    let peer = fault(SseFault::DropAfterFirst, &["--log", log.to_str().unwrap()]);
    let t = transport(config(&peer.sse_url()));
    let session = Session::connect(&t, "flaky", LIMIT).await.unwrap();
    session.initialize().await;
    let echo = session.call("echo", json!({ "message": "one" })).await;
    assert_eq!(Session::text(&echo), "Echo: one");
    let reason = session.closed().await;
    assert_eq!(reason.message, "the event stream ended");
    assert!(!reason.requested);
    assert!(matches!(
        session.send(&json!({ "jsonrpc": "2.0", "id": 99, "method": "ping" })),
        Err(SendError::Closed)
    ));
    assert_eq!(session.recorder.close_calls(), (1, false));

    // A reconnect is a new connect: a new stream, a new endpoint, a new MCP session.
    let again = Session::connect(&t, "flaky", LIMIT).await.unwrap();
    again.initialize().await;
    let echo = again.call("echo", json!({ "message": "two" })).await;
    assert_eq!(Session::text(&echo), "Echo: two");
    again.close().await;
    let sessions: std::collections::BTreeSet<_> = read_log(&log)
        .iter()
        .filter(|e| e["verb"] == "GET")
        .map(|e| e["session"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sessions.len(), 2);
}

#[tokio::test]
async fn a_foreign_origin_endpoint_is_refused_and_nothing_is_sent_there() {
    let log = log_file();
    let peer = fault(SseFault::ForeignEndpoint, &["--log", log.to_str().unwrap()]);
    let cfg = config(&peer.sse_url()).auth(AuthHeader::bearer(SECRET).unwrap());
    let err = Session::connect(&transport(cfg), "shady", LIMIT)
        .await
        .err()
        .expect("a foreign endpoint refuses the connection");
    let text = err.to_string();
    assert!(text.contains("server `shady`"), "{text}");
    assert!(
        text.contains(&format!(
            "another origin (http://127.0.0.2:{})",
            peer.port()
        )),
        "{text}"
    );
    assert_eq!(io_kind(&err), Some(ErrorKind::PermissionDenied));
    // No wait: the connection was refused before it handed out a sending half, so nothing
    // was or can be POSTed by it, and the server logged the GET as it began the stream.
    let entries = read_log(&log);
    assert!(
        entries
            .iter()
            .all(|e| e["listener"] == "127.0.0.1" && e["verb"] == "GET"),
        "{entries:?}"
    );
}

#[tokio::test]
async fn a_slow_endpoint_event_times_out_with_an_error_naming_the_server() {
    let peer = fault(SseFault::SlowEndpoint, &["--endpoint-delay", "30"]);
    let cfg = config(&peer.sse_url()).endpoint_timeout(Duration::from_millis(300));
    let err = Session::connect(&transport(cfg), "sluggish", LIMIT)
        .await
        .err()
        .expect("no endpoint in time");
    let text = err.to_string();
    assert!(
        text.contains("server `sluggish`: no endpoint event on"),
        "{text}"
    );
    assert!(text.contains("within 300 ms"), "{text}");
    assert_eq!(io_kind(&err), Some(ErrorKind::TimedOut));
}

#[tokio::test]
async fn an_answer_over_the_frame_limit_is_reported_and_the_stream_stays_in_sync() {
    let peer = fault(SseFault::Ok, &[]);
    let limit = 64 * 1024;
    let session = Session::connect(&transport(config(&peer.sse_url())), "big", limit)
        .await
        .unwrap();
    session.initialize().await;
    let id = session.peek_id();
    session
        .send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": { "name": "big", "arguments": { "n": 300_000 } } }))
        .unwrap();
    let report = session.oversize(1).await;
    assert_eq!(report.limit, limit);
    assert!(report.len > 300_000, "{}", report.len);
    let head = String::from_utf8_lossy(&report.head);
    assert!(
        head.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},")),
        "{head}"
    );
    assert!(report.head.len() <= 4096 && report.tail.len() <= 512);
    assert!(
        report.tail.ends_with(b"}}"),
        "{:?}",
        String::from_utf8_lossy(&report.tail)
    );
    // The next answer comes through: the stream is in sync.
    let next = Session::text(&session_call_after(&session, id + 1).await);
    assert_eq!(next, "Echo: after");
    session.close().await;
}

async fn session_call_after(session: &Session, id: i64) -> serde_json::Value {
    session
        .send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "message": "after" } } }))
        .unwrap();
    session.answer(id, "echo after the oversized answer").await
}

#[tokio::test]
async fn close_reports_closed_once_as_requested() {
    let peer = fault(SseFault::Ok, &[]);
    let session = Session::connect(&transport(config(&peer.sse_url())), "x", LIMIT)
        .await
        .unwrap();
    session.initialize().await;
    let recorder = session.close().await;
    assert_eq!(recorder.close_calls(), (1, false));
}

/// What was sent before `close` reaches the server before the stream ends: a cancelled
/// call's `notifications/cancelled` (and an interrupted task's `tasks/cancel`) queued just
/// before the client closes is POSTed, not dropped with the queue (issue 49 point 3; before,
/// close cleared the queue and aborted the writer, and the server never heard of them).
#[tokio::test]
async fn close_delivers_what_was_queued_before_it() {
    let log = log_file();
    let peer = fault(SseFault::Ok, &["--log", log.to_str().unwrap()]);
    let session = Session::connect(&transport(config(&peer.sse_url())), "x", LIMIT)
        .await
        .unwrap();
    session.initialize().await;
    for id in 100..105 {
        session
            .send(
                &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": { "requestId": id, "reason": "interrupted" } }),
            )
            .unwrap();
    }
    let recorder = session.close().await;
    assert_eq!(recorder.close_calls(), (1, false));
    let cancelled = read_log(&log)
        .into_iter()
        .filter(|e| e["method"] == "notifications/cancelled")
        .count();
    assert_eq!(cancelled, 5, "{:#?}", read_log(&log));
}

#[tokio::test]
async fn dropping_the_connection_reports_closed_once() {
    let peer = fault(SseFault::Ok, &[]);
    let mut session = Session::connect(&transport(config(&peer.sse_url())), "x", LIMIT)
        .await
        .unwrap();
    session.initialize().await;
    drop(session.connection.take());
    let reason = session.closed().await;
    assert!(reason.requested);
    assert_eq!(session.recorder.close_calls(), (1, false));
    assert!(matches!(
        session.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
        Err(SendError::Closed)
    ));
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_naming_the_server() {
    let port = peers::free_port();
    let url = format!("http://127.0.0.1:{port}/sse");
    let err = Session::connect(&transport(config(&url)), "nobody", LIMIT)
        .await
        .err()
        .expect("nothing listens there");
    let text = err.to_string();
    assert!(
        text.contains(&format!("server `nobody`: cannot connect to {url}")),
        "{text}"
    );
    assert_eq!(io_kind(&err), Some(ErrorKind::ConnectionRefused));
}

#[tokio::test]
async fn a_static_header_colliding_with_the_auth_header_is_a_configuration_error() {
    let cfg = config("http://127.0.0.1:1/sse")
        .header(
            "authorization".parse().unwrap(),
            "Bearer other".parse().unwrap(),
        )
        .auth(AuthHeader::bearer(SECRET).unwrap());
    let err = SseTransport::new(cfg).unwrap_err();
    assert!(matches!(err.kind(), InvalidKind::Collision(h) if h == "authorization"));
    assert!(
        err.to_string().contains("collides with the auth header"),
        "{err}"
    );
    let cfg = config("http://127.0.0.1:1/sse")
        .header("x-api-key".parse().unwrap(), "static".parse().unwrap())
        .auth(AuthHeader::header("X-API-Key", SECRET).unwrap());
    assert!(SseTransport::new(cfg).is_err());
}

// --- the in-test server -------------------------------------------------------------------------

#[tokio::test]
async fn static_and_auth_headers_go_on_the_get_and_every_post() {
    let mini = Mini::start(MiniConfig::default()).await;
    let cfg = config(&mini.url())
        .header(
            "x-feature-flag".parse().unwrap(),
            "mcp-beta".parse().unwrap(),
        )
        .auth(AuthHeader::header("X-API-Key", SECRET).unwrap());
    let session = Session::connect(&transport(cfg), "mini", LIMIT)
        .await
        .unwrap();
    session
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .unwrap();
    session
        .send(&json!({ "jsonrpc": "2.0", "id": 0, "method": "ping" }))
        .unwrap();
    let seen = wait_seen(&mini, 3).await;
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].header("accept"), Some("text/event-stream"));
    for request in &seen {
        assert_eq!(request.header("x-feature-flag"), Some("mcp-beta"));
        assert_eq!(request.header("x-api-key"), Some(SECRET));
    }
    for post in &seen[1..] {
        assert_eq!(post.method, "POST");
        assert_eq!(post.path, "/post?s=1");
        assert_eq!(post.header("content-type"), Some("application/json"));
    }
    // In order.
    assert!(String::from_utf8_lossy(&seen[1].body).contains("notifications/initialized"));
    assert!(String::from_utf8_lossy(&seen[2].body).contains("\"ping\""));
    session.close().await;
}

async fn wait_seen(mini: &Mini, n: usize) -> Vec<harness::mini::Seen> {
    let wait = async {
        loop {
            let seen = mini.seen();
            if seen.len() >= n {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(harness::PATIENCE, wait)
        .await
        .expect("the mini server saw the requests")
}

#[tokio::test]
async fn a_post_answered_500_fails_that_request_naming_the_status_as_maybe_delivered() {
    let mini = Mini::start(MiniConfig {
        post_status: 500,
        ..MiniConfig::default()
    })
    .await;
    let session = Session::connect(&transport(config(&mini.url())), "broken", LIMIT)
        .await
        .unwrap();
    // A notification that fails is only logged; the request after it fails at once.
    session
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .unwrap();
    let answer = session.request("tools/list", json!({})).await;
    let failed = &answer["send_failed"];
    let message = failed["message"].as_str().unwrap();
    assert!(message.contains("500 Internal Server Error"), "{message}");
    // A 5xx may come after the server processed the request.
    assert_eq!(failed["not_delivered"], false, "{answer}");
    session.close().await;
}

#[tokio::test]
async fn a_post_answered_401_fails_that_request_as_an_auth_error() {
    let mini = Mini::start(MiniConfig {
        post_status: 401,
        ..MiniConfig::default()
    })
    .await;
    let cfg = config(&mini.url()).auth(AuthHeader::bearer(SECRET).unwrap());
    let session = Session::connect(&transport(cfg), "halfauth", LIMIT)
        .await
        .unwrap();
    let answer = session.request("initialize", json!({})).await;
    let failed = &answer["send_failed"];
    let message = failed["message"].as_str().unwrap();
    assert!(message.starts_with("authentication refused"), "{message}");
    assert!(message.contains("401"), "{message}");
    // A 4xx is a refusal: the server did not process the request; an auth refusal would
    // only be refused again.
    assert_eq!(failed["not_delivered"], true, "{answer}");
    assert_eq!(failed["retryable"], false, "{answer}");
    assert!(!message.contains(SECRET));
    session.close().await;
}

#[tokio::test]
async fn a_stream_that_is_not_text_event_stream_is_refused() {
    let mini = Mini::start(MiniConfig {
        content_type: "text/html",
        ..MiniConfig::default()
    })
    .await;
    let err = Session::connect(&transport(config(&mini.url())), "web", LIMIT)
        .await
        .err()
        .expect("not an event stream");
    let text = err.to_string();
    assert!(text.contains("server `web`"), "{text}");
    assert!(text.contains("not text/event-stream"), "{text}");
}

#[tokio::test]
async fn messages_sent_before_the_endpoint_event_are_ignored_and_later_ones_delivered() {
    let mini = Mini::start(MiniConfig {
        stream: "data: {\"early\":true}\n\n: hi\nevent: endpoint\ndata: /post?s=1\n\n\
                 event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n"
            .into(),
        ..MiniConfig::default()
    })
    .await;
    let session = Session::connect(&transport(config(&mini.url())), "early", LIMIT)
        .await
        .unwrap();
    // The notification after the endpoint event arrives; the early message does not.
    let note = session
        .wait_frame("the notification", |f| f["method"] == "notifications/x")
        .await;
    assert_eq!(note["jsonrpc"], "2.0");
    assert_eq!(session.recorder.frames().len(), 1);
    session.close().await;
}

#[test]
fn describe_shows_the_url() {
    let t = transport(config("http://127.0.0.1:8/sse"));
    assert_eq!(t.describe(), "sse: http://127.0.0.1:8/sse");
    assert_eq!(t.url().as_str(), "http://127.0.0.1:8/sse");
}

#[tokio::test]
async fn an_https_url_speaks_tls_and_a_plain_http_server_there_is_a_connect_error() {
    // The rustls client is built (ring provider, webpki roots) and starts a TLS handshake; the
    // plain HTTP server there never answers it, so the connect timeout ends the attempt.
    let mini = Mini::start(MiniConfig::default()).await;
    let url = format!("https://127.0.0.1:{}/sse", mini.port);
    let cfg = config(&url).connect_timeout(Duration::from_millis(300));
    let err = Session::connect(&transport(cfg), "tls", LIMIT)
        .await
        .err()
        .expect("no TLS there");
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "server `tls`: the GET to {url} got no answer within 300 ms"
        )),
        "{text}"
    );
    assert_eq!(io_kind(&err), Some(ErrorKind::TimedOut));
    assert!(mini.seen().is_empty(), "nothing was readable as HTTP");
}
