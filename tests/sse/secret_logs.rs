//! No secret in logs: a TRACE-level subscriber captures everything while bearer and custom-header
//! sessions run over SSE (a working one, a refused one, a POST refused mid-session), and the
//! captured text must not contain the secret.

use capture::Captured;
use harness::mini::{Mini, MiniConfig};
use harness::Session;
use kaged_mcp::config::{AuthConfig, Secret, SecretRef, SseServerConfig};
use kaged_mcp::transport::sse::{SseConfig, SseTransport};
use kaged_mcp_layers::auth::AuthHeader;
use peers::{SseFault, SsePeer};
use serde_json::json;

use crate::common::capture;
use crate::common::peers;
use crate::sse_harness as harness;

const SECRET: &str = "sk-live-SECRET-0b9d7e55";
const LIMIT: usize = 16 * 1024 * 1024;

#[tokio::test]
async fn no_secret_appears_in_trace_level_logs() {
    let captured = Captured::install_trace();

    let peer = SsePeer::start_fault(SseFault::Auth, &["--secret", SECRET]).unwrap();

    // From the configuration types, as the daemon builds it: bearer auth.
    let sse = SseServerConfig::new(peer.sse_url().parse().unwrap())
        .with_header("x-feature-flag".parse().unwrap(), "on".parse().unwrap());
    let auth = AuthConfig::bearer(SecretRef::parse("api_keys.example").unwrap());
    let secret = Secret::new(SECRET);
    let transport = kaged_mcp::assemble::sse("github", &sse, Some((&auth, &secret))).unwrap();
    tracing::info!(transport = ?transport, "built");
    let session = Session::connect(&transport, "github", LIMIT).await.unwrap();
    session.initialize().await;
    let echo = session.call("echo", json!({ "message": "hi" })).await;
    assert_eq!(Session::text(&echo), "Echo: hi");
    session.close().await;

    // A custom header, refused (wrong secret in a neighbour's clothes).
    let wrong = format!("{SECRET}-wrong");
    let cfg = SseConfig::new(peer.sse_url().parse().unwrap())
        .auth(AuthHeader::header("X-API-Key", &wrong).unwrap());
    tracing::info!(config = ?cfg, "config");
    let err = Session::connect(&SseTransport::new(cfg).unwrap(), "github", LIMIT)
        .await
        .err()
        .expect("refused");
    tracing::warn!(error = %err, debug = ?err, "refused as expected");

    // A POST refused mid-session.
    let mini = Mini::start(MiniConfig {
        post_status: 401,
        ..MiniConfig::default()
    })
    .await;
    let cfg = SseConfig::new(mini.url().parse().unwrap()).auth(AuthHeader::bearer(SECRET).unwrap());
    let session = Session::connect(&SseTransport::new(cfg).unwrap(), "github", LIMIT)
        .await
        .unwrap();
    let answer = session.request("tools/list", json!({})).await;
    assert_eq!(answer["send_failed"]["not_delivered"], true, "{answer}");
    session.close().await;

    let text = captured.text();
    // The capture works: events from the transport and the HTTP layers are in it.
    assert!(text.contains("SSE stream open"), "{text}");
    assert!(text.contains("TRACE") || text.contains("DEBUG"), "{text}");
    assert!(text.contains("authentication refused"), "{text}");
    assert!(
        !text.contains(SECRET),
        "the secret leaked into the logs:\n{text}"
    );
    // Debug output of the configuration shows the header name and stars.
    assert!(text.contains("x-api-key"), "{text}");
}
