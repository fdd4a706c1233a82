//! Multi round-trip requests (2026-07-28): a `tools/call` answered `resultType:
//! "input_required"`, against `tests/servers/era_server.py --mode input-required` over stdio
//! and Streamable HTTP, through the whole session and stack.
//!
//! - an elicitation goes to the embedder's handler and the call is retried with its answer and
//!   the server's `requestState` (the server checks both, and that the retry has a new id);
//!   without a handler it is declined and the call still completes;
//! - sampling is refused (ADR-0043 §6): the call fails naming the input, and is never retried
//!   with an answer;
//! - `roots/list` goes to the server-request handler, whose default refuses it;
//! - a state-only answer is retried with the state, round after round;
//! - a server that never stops asking is given up after `MAX_INPUT_ROUNDS`;
//! - a handler slower than the call's timeout ends the call at the timeout.

use std::path::Path;
use std::time::Duration;

use kaged_mcp::client::elicitation::{ElicitRequest, ElicitResult, ElicitationService};
use kaged_mcp::client::MAX_INPUT_ROUNDS;
use kaged_mcp::config::Sources;
use kaged_mcp::{Session, SessionOptions};
use peers::SsePeer;
use serde_json::{json, Map, Value};
use tower::BoxError;

use crate::common::peers;

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

/// A handler that answers every elicitation with `{"name": "Ada"}`, after `delay`.
fn ada(delay: Duration) -> ElicitationService {
    ElicitationService::new(tower::service_fn(move |req: ElicitRequest| async move {
        assert_eq!(req.params.message, "What is your name?");
        tokio::time::sleep(delay).await;
        let mut content = Map::new();
        content.insert("name".into(), json!("Ada"));
        Ok::<_, BoxError>(ElicitResult::Accept(content))
    }))
}

/// Where the server runs.
enum Peer {
    Stdio(Vec<String>),
    Http(SsePeer),
}

impl Peer {
    fn start(http: bool, stats: &Path) -> Peer {
        let extra = ["--stats-file", stats.to_str().unwrap()];
        if http {
            let cmd = peers::era_server_http("input-required", &extra);
            Peer::Http(SsePeer::start_reporting_port(&cmd).unwrap())
        } else {
            Peer::Stdio(peers::era_server_stdio("input-required", &extra))
        }
    }

    fn project(&self) -> String {
        match self {
            Peer::Stdio(cmd) => format!(
                "mcp:\n  srv:\n    transport: stdio\n    command: {}\n",
                serde_json::to_string(cmd).unwrap()
            ),
            Peer::Http(peer) => format!(
                "mcp:\n  srv:\n    transport: streamable-http\n    url: {}\n",
                peer.mcp_url()
            ),
        }
    }
}

fn stats(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

async fn session(peer: &Peer, timeout_ms: u64, options: SessionOptions) -> Session {
    let config = Sources::new(peer.project())
        .local(format!(
            "[mcp.srv]\nera = \"modern\"\ntimeout_ms = {timeout_ms}\n"
        ))
        .config("[mcp]\nstartup_timeout_ms = 30000\n")
        .load()
        .unwrap();
    let session = Session::start_with(config, options).await.unwrap();
    let st = &session.status()[0];
    assert_eq!(st.state, "ready", "{st:?}");
    assert_eq!(st.era, Some("modern"), "{st:?}");
    session
}

async fn every_input_kind(http: bool) {
    let dir = tempfile::tempdir().unwrap();
    let stats_file = dir.path().join("stats.json");
    let peer = Peer::start(http, &stats_file);
    let with_handler = SessionOptions::default().elicitation_handler(ada(Duration::ZERO));
    let s = session(&peer, 20_000, with_handler).await;

    // Elicitation, answered by the handler: the retry carries the answer and the state.
    let r = s.call("mcp.srv.ask", None).await.unwrap();
    assert_eq!(r.joined_text(), "hello Ada", "{r:?}");

    // State only: echoed round after round.
    let r = s
        .call("mcp.srv.state_only", args(json!({"rounds": 3})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "done after 3 rounds", "{r:?}");

    // Sampling: refused, and the call is not retried with an answer.
    let e = s
        .call("mcp.srv.sample", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("asked for input `llm` (sampling/createMessage)") && e.contains("sampling"),
        "{e}"
    );
    // roots/list: the default server-request handler refuses it.
    let e = s.call("mcp.srv.roots", None).await.unwrap_err().to_string();
    assert!(
        e.contains("asked for input `r` (roots/list)") && e.contains("roots/list"),
        "{e}"
    );

    // A server that never stops asking.
    let e = s.call("mcp.srv.loop", None).await.unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "still asked for input after {MAX_INPUT_ROUNDS} rounds"
        )),
        "{e}"
    );
    s.shutdown().await;

    let st = stats(&stats_file);
    assert_eq!(st["sampling_answered"], 0, "{st}");
    // The first request and MAX_INPUT_ROUNDS retries.
    assert_eq!(st["loop_rounds"], MAX_INPUT_ROUNDS + 1, "{st}");
    // ask 2, state_only 4, sample 1, roots 1, loop 9.
    assert_eq!(
        st["tool_calls"]["sample"], 1,
        "sampling must never be retried: {st}"
    );
    assert_eq!(st["tool_calls"]["ask"], 2, "{st}");
    assert_eq!(st["tool_calls"]["state_only"], 4, "{st}");

    // Without a handler, the elicitation is declined and the call completes.
    let s = session(&peer, 20_000, SessionOptions::default()).await;
    let r = s.call("mcp.srv.ask", None).await.unwrap();
    assert_eq!(r.joined_text(), "declined", "{r:?}");
    s.shutdown().await;
}

#[tokio::test]
async fn stdio_input_requests_are_answered_declined_or_refused() {
    every_input_kind(false).await;
}

#[tokio::test]
async fn http_input_requests_are_answered_declined_or_refused() {
    every_input_kind(true).await;
}

#[tokio::test]
async fn a_slow_answer_to_an_input_request_is_bounded_by_the_call_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::start(false, &dir.path().join("stats.json"));
    let slow = SessionOptions::default().elicitation_handler(ada(Duration::from_secs(30)));
    let s = session(&peer, 800, slow).await;
    let e = s.call("mcp.srv.ask", None).await.unwrap_err().to_string();
    assert!(e.contains("timed out after 800 ms"), "{e}");
    s.shutdown().await;
}
