//! The SSE transport against real servers, straight through the `Transport` trait:
//! `@modelcontextprotocol/server-everything` in SSE mode and `tests/servers/py_server.py` on the
//! PyPI `mcp` SDK 1.30.0 and 2.3.0. Missing peers skip the test, or fail it when `CI` is set.

use harness::Session;
use kaged_mcp::transport::sse::{SseConfig, SseTransport};
use peers::{PyMcp, PyMode, SsePeer};
use serde_json::json;

use crate::common::peers;
use crate::sse_harness as harness;

const LIMIT: usize = 16 * 1024 * 1024;

fn transport(peer: &SsePeer) -> SseTransport {
    SseTransport::new(SseConfig::new(peer.sse_url().parse().unwrap())).unwrap()
}

fn start_python(version: PyMcp) -> Option<SsePeer> {
    let port = peers::free_port();
    let cmd = peers::require(
        peers::python_server(version, PyMode::Sse { port }),
        &version.name(),
    )?;
    Some(SsePeer::start(&cmd, &[], port).unwrap_or_else(|e| panic!("{}: {e}", version.name())))
}

async fn python_session(version: PyMcp) {
    let Some(peer) = start_python(version) else {
        return;
    };
    let session = Session::connect(&transport(&peer), "py", LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}; stderr:\n{}", version.name(), peer.stderr()));
    let init = session.initialize().await;
    assert_eq!(init["protocolVersion"], "2024-11-05");
    let tools = session.tool_names().await;
    for tool in ["echo", "big", "slow", "fail", "sample"] {
        assert!(tools.iter().any(|t| t == tool), "{tools:?}");
    }
    let echo = session.call("echo", json!({ "message": "héllo" })).await;
    assert_eq!(Session::text(&echo), "Echo: héllo");
    let big = session.call("big", json!({ "n": 1_000_000 })).await;
    assert_eq!(Session::text(&big).len(), 1_000_000);
    // The server asks for sampling; the answer (-32601 from this harness) is POSTed back to the
    // same endpoint, and the tool reports the refusal.
    let sample = session.call("sample", json!({})).await;
    let text = Session::text(&sample);
    assert!(text.starts_with("sampling error:"), "{text}");
    let asked = session.recorder.server_requests();
    assert!(
        asked
            .iter()
            .any(|r| r["method"] == "sampling/createMessage"),
        "{asked:?}"
    );
    let recorder = session.close().await;
    assert_eq!(recorder.close_calls(), (1, false));
}

#[tokio::test]
async fn python_mcp_1_30_serves_a_whole_session_over_sse() {
    python_session(PyMcp::V1).await;
}

#[tokio::test]
async fn python_mcp_2_3_serves_a_whole_session_over_sse() {
    python_session(PyMcp::V2).await;
}

#[tokio::test]
async fn server_everything_serves_a_whole_session_over_sse() {
    let port = peers::free_port();
    let Some((cmd, env)) = peers::require(peers::everything_sse(port), "server-everything") else {
        return;
    };
    let peer = SsePeer::start(&cmd, &env, port).unwrap();
    let session = Session::connect(&transport(&peer), "everything", LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{e}; stderr:\n{}", peer.stderr()));
    let init = session.initialize().await;
    assert_eq!(init["protocolVersion"], "2024-11-05");
    let tools = session.tool_names().await;
    assert!(tools.iter().any(|t| t == "echo"), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "trigger-sampling-request"),
        "no sampling capability was offered: {tools:?}"
    );
    let echo = session.call("echo", json!({ "message": "hi there" })).await;
    assert_eq!(Session::text(&echo), "Echo: hi there");
    let image = session.call("get-tiny-image", json!({})).await;
    let blocks = image["result"]["content"].as_array().unwrap();
    assert!(blocks.iter().any(|b| b["type"] == "image"), "{image}");
    // Many calls in flight on one stream, answered out of any order we chose.
    let calls = (0..20).map(|i| session.call("echo", json!({ "message": format!("m{i}") })));
    let answers = futures::future::join_all(calls).await;
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(Session::text(answer), format!("Echo: m{i}"));
    }
    session.close().await;
}
