//! No secret in logs over Streamable HTTP: a TRACE-level subscriber captures everything while
//! sessions with the right secret (calls, a server request, shutdown with DELETE) and a wrong
//! one (401 on the handshake) run through the whole stack, and while the configuration, the
//! transport, the session and the errors are printed with `Debug` and `Display`. The captured
//! text must not contain either secret.

use capture::Captured;
use kaged_mcp::config::Sources;
use kaged_mcp::transport::streamable_http::{StreamableHttpConfig, StreamableHttpTransport};
use kaged_mcp::Session;
use kaged_mcp_layers::auth::AuthHeader;
use peers::SsePeer;
use serde_json::json;

use crate::common::capture;
use crate::common::peers;

const SECRET: &str = "sk-live-HTTPSECRET-6c1f0a";
const WRONG: &str = "sk-live-WRONGSECRET-93be22";

async fn session(peer: &SsePeer, secret: &str) -> Session {
    let project = format!(
        "mcp:\n  remote:\n    transport: streamable-http\n    url: {}\n    auth: {{ type: bearer, secret_ref: api_keys.remote }}\n",
        peer.mcp_url()
    );
    let config = Sources::new(project)
        .local(format!("[secrets.api_keys]\nremote = \"{secret}\"\n"))
        .load()
        .unwrap();
    tracing::info!(config = ?config, "config");
    Session::start(config).await.unwrap()
}

#[tokio::test]
async fn no_secret_appears_in_trace_level_logs() {
    let captured = Captured::install_trace();

    let peer =
        SsePeer::start_reporting_port(&peers::http_fault_server("auth", &["--secret", SECRET]))
            .unwrap();

    // The right secret: calls, a server request answered on the response stream, shutdown.
    let good = session(&peer, SECRET).await;
    tracing::info!(session = ?good, status = ?good.status(), "started");
    let echo = good
        .call(
            "mcp.remote.echo",
            json!({"message": "hi"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "Echo: hi");
    let ask = good
        .call("mcp.remote.ask", json!({}).as_object().cloned())
        .await
        .unwrap();
    tracing::info!(result = ?ask, "ask");
    good.shutdown().await;

    // The wrong secret: refused on the handshake, the server failed at once.
    let bad = session(&peer, WRONG).await;
    let status = bad.status();
    assert_eq!(status[0].state, "failed", "{status:?}");
    let err = bad
        .call(
            "mcp.remote.echo",
            json!({"message": "x"}).as_object().cloned(),
        )
        .await
        .unwrap_err();
    tracing::warn!(error = %err, debug = ?err, status = ?status, "refused as expected");

    // The transport and its configuration, printed.
    let cfg = StreamableHttpConfig::new(peer.mcp_url().parse().unwrap())
        .auth(AuthHeader::header("X-API-Key", SECRET).unwrap());
    tracing::info!(config = ?cfg, transport = ?StreamableHttpTransport::new(cfg.clone()).unwrap(), "built");

    let text = captured.text();
    // The capture works: the transport's and the HTTP layers' events are in it.
    assert!(text.contains("mcp.http"), "{text}");
    assert!(text.contains("TRACE") || text.contains("DEBUG"), "{text}");
    assert!(text.contains("401 Unauthorized"), "{text}");
    assert!(text.contains("x-api-key"), "{text}");
    for secret in [SECRET, WRONG] {
        assert!(
            !text.contains(secret),
            "a secret leaked into the logs:\n{text}"
        );
    }
}
