//! The 2026-07-28 catalog freshness: a `tools/list` with `ttlMs` is read again once the ttl
//! expired and the catalog is needed (never before), and a modern server that offers list
//! changes is listened to on a `subscriptions/listen` stream; against
//! `tests/servers/era_server.py` (modern-only; its `gen_<k>` tool names the k-th list, `bump`
//! adds a tool and notifies every subscription) over stdio and Streamable HTTP, through the
//! session.

use std::path::Path;
use std::time::Duration;

use kaged_mcp::config::Sources;
use kaged_mcp::Session;
use peers::SsePeer;
use serde_json::Value;

use crate::common::capture::Captured;
use crate::common::peers;

/// The server `srv`, over stdio or HTTP; the HTTP peer lives as long as the returned guard.
fn project(http: bool, extra: &[&str]) -> (String, Option<SsePeer>) {
    if http {
        let peer =
            SsePeer::start_reporting_port(&peers::era_server_http("modern-only", extra)).unwrap();
        let project = format!(
            "mcp:\n  srv:\n    transport: streamable-http\n    url: {}\n",
            peer.mcp_url()
        );
        (project, Some(peer))
    } else {
        let cmd = peers::era_server_stdio("modern-only", extra);
        let project = format!(
            "mcp:\n  srv:\n    transport: stdio\n    command: {}\n",
            serde_json::to_string(&cmd).unwrap()
        );
        (project, None)
    }
}

async fn start(project: String) -> Session {
    let config = Sources::new(project)
        .config("[mcp]\nstartup_timeout_ms = 30000\n")
        .load()
        .unwrap();
    let session = Session::start(config).await.unwrap();
    let st = &session.status()[0];
    assert_eq!(st.state, "ready", "{st:?}");
    assert_eq!(st.era, Some("modern"), "{st:?}");
    session
}

fn names(session: &Session) -> Vec<String> {
    session.catalog().into_iter().map(|t| t.name).collect()
}

fn list_count(stats: &Path) -> u64 {
    let text = std::fs::read_to_string(stats).unwrap_or_default();
    let v: Value = serde_json::from_str(&text).unwrap_or_default();
    v["requests"]["tools/list"].as_u64().unwrap_or(0)
}

/// The `tools/list` count once it reached `at_least` (the stdio server rewrites its stats file
/// just after its answer, so the client can be ahead of it; at most 10 s), and 300 ms more, so
/// a read that should not have happened has time to show.
async fn settled_list_count(stats: &Path, at_least: u64) -> u64 {
    for _ in 0..200 {
        if list_count(stats) >= at_least {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    list_count(stats)
}

/// Reads the catalog until it names `tool` (at most 15 s).
async fn until_listed(session: &Session, tool: &str) {
    for _ in 0..300 {
        if names(session).iter().any(|n| n == tool) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{tool} never appeared: {:?}", names(session));
}

async fn ttl_case(http: bool) {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let (project, _peer) = project(
        http,
        &["--ttl-ms", "3000", "--stats-file", stats.to_str().unwrap()],
    );
    let began = std::time::Instant::now();
    let session = start(project).await;
    assert!(names(&session).iter().any(|n| n == "mcp.srv.gen_1"));
    // Fresh: reading the catalog does not read the list again.
    for _ in 0..20 {
        let _ = names(&session);
    }
    assert_eq!(
        settled_list_count(&stats, 1).await,
        1,
        "read again before its ttl"
    );
    // Read until the ttl passed (the event: the catalog names the list read again), every
    // read before it from the kept list; stale, the next read has it read again, once.
    until_listed(&session, "mcp.srv.gen_2").await;
    // Not before its ttl (a lower bound only: the list was read after `began`).
    assert!(
        began.elapsed() >= Duration::from_millis(3000),
        "{:?}",
        began.elapsed()
    );
    assert!(!names(&session).iter().any(|n| n == "mcp.srv.gen_1"));
    for _ in 0..20 {
        let _ = names(&session);
    }
    assert_eq!(
        settled_list_count(&stats, 2).await,
        2,
        "read more than once at its expiry"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn stdio_a_tool_list_is_read_again_when_its_ttl_expired() {
    ttl_case(false).await;
}

#[tokio::test]
async fn http_a_tool_list_is_read_again_when_its_ttl_expired() {
    ttl_case(true).await;
}

/// `bump` adds `added_1` and notifies exactly one subscription (the client opened one, asking
/// for tool list changes); the catalog then lists it.
async fn bump_reaches_the_catalog(session: &Session) {
    let bumped = session.call("mcp.srv.bump", None).await.unwrap();
    assert_eq!(
        bumped.joined_text(),
        "bumped 1 (notified 1 subscriptions)",
        "{bumped:?}"
    );
    until_listed(session, "mcp.srv.added_1").await;
}

fn stat(stats: &Path, key: &str) -> u64 {
    let text = std::fs::read_to_string(stats).unwrap_or_default();
    let v: Value = serde_json::from_str(&text).unwrap_or_default();
    v[key].as_u64().unwrap_or(0)
}

/// Waits (at most 10 s) until the server holds one open subscription and has acknowledged
/// `total` in all: the client opens its `subscriptions/listen` beside the session's start, so
/// a loaded machine can have a test's first call reach the server before it.
async fn until_subscribed(stats: &Path, total: u64) {
    for _ in 0..200 {
        if stat(stats, "subscriptions_total") == total && stat(stats, "subscriptions_open") == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stat(stats, "subscriptions_total"), total, "not subscribed");
    assert_eq!(stat(stats, "subscriptions_open"), 1);
}

async fn listen_case(http: bool) {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let (project, _peer) = project(http, &["--stats-file", stats.to_str().unwrap()]);
    let session = start(project).await;
    until_subscribed(&stats, 1).await;
    assert!(!names(&session).iter().any(|n| n == "mcp.srv.added_1"));
    bump_reaches_the_catalog(&session).await;
    session.shutdown().await;
}

#[tokio::test]
async fn stdio_list_changes_arrive_on_a_subscription() {
    listen_case(false).await;
}

#[tokio::test]
async fn http_list_changes_arrive_on_a_subscription() {
    listen_case(true).await;
}

/// A subscription the server ends (`end_listen`: gracefully, with a `complete` answer to the
/// listen request, or over HTTP by just ending the stream, as an idle timeout or a proxy
/// would) is opened again, the list is read again (a change may have come in the gap: the
/// catalog shows `gen_2`), and later changes still arrive.
async fn reopen_case(http: bool, graceful: bool) {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let (project, _peer) = project(http, &["--stats-file", stats.to_str().unwrap()]);
    let session = start(project).await;
    assert!(names(&session).iter().any(|n| n == "mcp.srv.gen_1"));
    until_subscribed(&stats, 1).await;
    let args = serde_json::json!({ "graceful": graceful });
    let ended = session
        .call("mcp.srv.end_listen", args.as_object().cloned())
        .await
        .unwrap();
    assert_eq!(ended.joined_text(), "ended 1 subscriptions", "{ended:?}");
    until_listed(&session, "mcp.srv.gen_2").await;
    until_subscribed(&stats, 2).await;
    bump_reaches_the_catalog(&session).await;
    let st = &session.status()[0];
    assert_eq!((st.state.as_str(), st.restarts), ("ready", 0), "{st:?}");
    session.shutdown().await;
}

#[tokio::test]
async fn stdio_a_subscription_the_server_ends_is_opened_again() {
    reopen_case(false, true).await;
}

#[tokio::test]
async fn http_a_subscription_the_server_ends_is_opened_again() {
    reopen_case(true, true).await;
}

#[tokio::test]
async fn http_a_subscription_stream_cut_without_an_answer_is_opened_again() {
    reopen_case(true, false).await;
}

/// A server that refuses `subscriptions/listen` while offering list changes (a JSON-RPC error,
/// or over HTTP a plain `405` such as a proxy's) is not asked again: once the client said the
/// refusal, every pause before a listen is opened again (at most 60 s) is passed on a paused
/// clock, and after a call answered since (the server counts requests as it reads them) it
/// has seen one listen request, and the server is ready.
async fn refused_case(http: bool, how: &str) {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let (project, _peer) = project(
        http,
        &[
            "--refuse-listen",
            how,
            "--stats-file",
            stats.to_str().unwrap(),
        ],
    );
    let (captured, _guard) = Captured::install_local();
    let session = start(project).await;
    let refused = tokio::time::timeout(Duration::from_secs(30), async {
        while !captured
            .text()
            .contains("the server refused subscriptions/listen")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    refused.await.expect("the refusal is said");
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(120)).await;
    // Whatever the pauses woke runs (and writes its request) before the call below is sent.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    tokio::time::resume();
    let echo = serde_json::json!({ "message": "after" });
    let echoed = session.call("mcp.srv.echo", echo.as_object().cloned());
    assert_eq!(echoed.await.unwrap().joined_text(), "Echo: after");
    let mut v = Value::Null;
    for _ in 0..200 {
        v = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        if v["requests"]["tools/call"].as_u64() >= Some(1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(v["requests"]["subscriptions/listen"], 1, "{v}");
    let text = captured.text();
    assert!(!text.contains("opening it again"), "{text}");
    let st = &session.status()[0];
    assert_eq!((st.state.as_str(), st.restarts), ("ready", 0), "{st:?}");
    session.shutdown().await;
}

#[tokio::test]
async fn stdio_a_refused_subscription_is_not_asked_again() {
    refused_case(false, "json").await;
}

#[tokio::test]
async fn http_a_refused_subscription_is_not_asked_again() {
    refused_case(true, "json").await;
}

#[tokio::test]
async fn http_a_subscription_refused_with_a_plain_405_is_not_asked_again() {
    refused_case(true, "plain").await;
}

/// Every request the client sends is bounded: a server that stops answering `tools/list`
/// after it said its list changed leaves the catalog as it was, and the read that timed out
/// (the server's `timeout_ms`) is reported in the server's status (it waited forever).
#[tokio::test]
async fn a_tool_list_that_is_never_answered_times_out_and_the_old_catalog_stays() {
    let (project, _peer) = project(false, &[]);
    let config = Sources::new(project)
        .local("[mcp.srv]\ntimeout_ms = 1000\n".to_owned())
        .config("[mcp]\nstartup_timeout_ms = 30000\n")
        .load()
        .unwrap();
    let session = Session::start(config).await.unwrap();
    let before = names(&session);
    assert!(
        before.iter().any(|n| n == "mcp.srv.freeze_list"),
        "{before:?}"
    );
    let frozen = session
        .call("mcp.srv.freeze_list", None)
        .await
        .unwrap()
        .joined_text();
    assert!(frozen.starts_with("frozen (notified 1"), "{frozen}");
    let mut last_error = None;
    for _ in 0..300 {
        let st = session.status().remove(0);
        if st.last_error.is_some() {
            last_error = st.last_error.zip(st.error_detail);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (last_error, detail) = last_error.expect("the unanswered tools/list is reported");
    assert!(
        last_error.contains("(tools/list)") && last_error.contains("within 1000 ms"),
        "{last_error}"
    );
    assert!(
        detail.contains("`srv`") && detail.contains(&last_error),
        "{detail}"
    );
    assert_eq!(names(&session), before, "the old catalog stays");
    assert_eq!(session.status()[0].state, "ready");
    session.shutdown().await;
}
