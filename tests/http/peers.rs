//! The Streamable HTTP transport against real servers, through the whole session and stack (a
//! project declaring `transport: streamable-http`, `Session::start`, `Session::call`):
//! - `@modelcontextprotocol/server-everything` (`streamableHttp`, stateful, event-stream
//!   answers);
//! - `tests/servers/py_server.py` on the PyPI `mcp` SDK 1.30.0 and 2.3.0, in all four modes
//!   (stateful or stateless, event-stream or JSON answers);
//! - rmcp 3.11's server (`rmcp_http_server`): stateful (event streams with priming events),
//!   stateless, stateless with JSON answers.
//!
//! Missing peers skip the test, or fail it when `CI` is set.

use kaged_mcp::config::Sources;
use kaged_mcp::protocol::ContentBlock;
use kaged_mcp::Session;
use peers::{PyMcp, PyMode, SsePeer};
use serde_json::{json, Map, Value};

use crate::common::peers;

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

/// A session on one `streamable-http` server called `remote` at `url`; panics (with the peer's
/// stderr) unless it is ready.
async fn session(url: &str, peer: &SsePeer) -> Session {
    let project = format!("mcp:\n  remote:\n    transport: streamable-http\n    url: {url}\n");
    let config = Sources::new(project)
        .config("[mcp]\nstartup_timeout_ms = 20000\n")
        .load()
        .unwrap();
    let session = Session::start(config).await.unwrap();
    let status = &session.status()[0];
    assert_eq!(
        status.state,
        "ready",
        "{status:?}\npeer stderr:\n{}",
        peer.stderr()
    );
    session
}

/// What every peer must do: list, call, many calls in flight, a result over the cap.
async fn common_checks(session: &Session, name: &str) {
    let names: Vec<String> = session.catalog().into_iter().map(|t| t.name).collect();
    assert!(
        names.iter().any(|n| n == "mcp.remote.echo"),
        "{name}: {names:?}"
    );
    let echo = session
        .call("mcp.remote.echo", args(json!({"message": "héllo"})))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(echo.joined_text(), "Echo: héllo", "{name}");
    // Calls in flight at once, each on its own POST.
    let calls =
        (0..16).map(|i| session.call("mcp.remote.echo", args(json!({"message": format!("m{i}")}))));
    for (i, answer) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        let answer = answer.unwrap_or_else(|e| panic!("{name}: call {i}: {e}"));
        assert_eq!(answer.joined_text(), format!("Echo: m{i}"), "{name}");
    }
}

async fn python(version: PyMcp, stateless: bool, json: bool) {
    let port = peers::free_port();
    let mode = PyMode::StreamableHttp {
        port,
        stateless,
        json,
    };
    let name = format!("{} stateless={stateless} json={json}", version.name());
    let Some(cmd) = peers::require(peers::python_server(version, mode), &version.name()) else {
        return;
    };
    let peer = SsePeer::start(&cmd, &[], port).unwrap_or_else(|e| panic!("{name}: {e}"));
    let session = session(&peer.mcp_url(), &peer).await;
    common_checks(&session, &name).await;
    // A result over the 64 KiB cap arrives whole (one JSON body or one event) and is cut.
    let big = session
        .call("mcp.remote.big", args(json!({"n": 1_000_000})))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        big.truncated,
        "{name}: {} bytes, is_error {}: {:.200}",
        big.joined_text().len(),
        big.is_error,
        big.joined_text()
    );
    let text = big.joined_text();
    assert!(
        text.starts_with("xxxx") && text.ends_with("\n[... truncated at 65536 bytes]"),
        "{name}: {}",
        &text[text.len().saturating_sub(60)..]
    );
    // A long text under the cap arrives whole; answered as one JSON body, it is a slice of
    // that body rather than a copy (`Text::is_shared`).
    let long = session
        .call("mcp.remote.big", args(json!({"n": 40_000})))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!long.truncated, "{name}");
    match long.content.as_slice() {
        [ContentBlock::Text(t)] => {
            assert_eq!(t.text.len(), 40_000, "{name}");
            assert!(t.text.bytes().all(|b| b == b'x'), "{name}");
            if json {
                assert!(
                    t.text.is_shared(),
                    "{name}: the text was copied out of the body"
                );
            }
        }
        other => panic!("{name}: {other:?}"),
    }
    // The server asks for sampling: on the call's response stream (stateful, event streams)
    // or on the GET stream (stateful, JSON answers). The client refuses it and POSTs the
    // refusal back, and the tool reports it. A stateless 2.x server cannot ask and says so at
    // once; a stateless 1.x server sends the request where no answer can reach it and never
    // finishes the call, so it is not asked.
    if !(stateless && version == PyMcp::V1) {
        let text = session
            .call("mcp.remote.sample", args(json!({})))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .joined_text();
        assert!(text.starts_with("sampling error:"), "{name}: {text}");
    }
    // The session is still good.
    let echo = session
        .call("mcp.remote.echo", args(json!({"message": "after"})))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(echo.joined_text(), "Echo: after", "{name}");
    session.shutdown().await;
}

#[tokio::test]
async fn python_mcp_1_30_in_every_mode() {
    for (stateless, json) in [(false, false), (false, true), (true, false), (true, true)] {
        python(PyMcp::V1, stateless, json).await;
    }
}

#[tokio::test]
async fn python_mcp_2_3_in_every_mode() {
    for (stateless, json) in [(false, false), (false, true), (true, false), (true, true)] {
        python(PyMcp::V2, stateless, json).await;
    }
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let port = peers::free_port();
    let Some((cmd, env)) = peers::require(peers::everything_http(port), "server-everything") else {
        return;
    };
    let peer = SsePeer::start(&cmd, &env, port).unwrap();
    let session = session(&peer.mcp_url(), &peer).await;
    common_checks(&session, "server-everything").await;
    let image = session
        .call("mcp.remote.get-tiny-image", args(json!({})))
        .await
        .unwrap();
    assert!(
        image
            .content
            .iter()
            .any(|b| matches!(b, kaged_mcp::protocol::ContentBlock::Image(_))),
        "{image:?}"
    );
    let sum = session
        .call("mcp.remote.get-sum", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert!(sum.joined_text().contains("42"), "{}", sum.joined_text());
    session.shutdown().await;
}

#[tokio::test]
async fn rmcp_3_11_stateful_stateless_and_json() {
    for (stateless, json) in [(false, false), (true, false), (true, true)] {
        let name = format!("rmcp stateless={stateless} json={json}");
        let Some(cmd) = peers::require(
            peers::rmcp_http_server(stateless, json),
            "rmcp_http_server (cargo build --example rmcp_http_server)",
        ) else {
            return;
        };
        let peer = SsePeer::start_reporting_port(&cmd).unwrap_or_else(|e| panic!("{name}: {e}"));
        let session = session(&peer.mcp_url(), &peer).await;
        common_checks(&session, &name).await;
        let sum = session
            .call("mcp.remote.add", args(json!({"a": 2, "b": 3})))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            sum.joined_text().contains('5'),
            "{name}: {}",
            sum.joined_text()
        );
        session.shutdown().await;
    }
}
