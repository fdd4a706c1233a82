//! Telemetry against real peers (issue 26): the request spans in the OpenTelemetry MCP
//! conventions, their trace context reaching an official SDK server through `params._meta`
//! (PyPI `mcp` 2.3 with `opentelemetry-sdk`, `tests/servers/otel_server.py`) over stdio and
//! Streamable HTTP in both eras, and the CLI's OTLP/HTTP export decoded by a receiver built
//! on the official protobuf definitions (`tests/servers/otlp_receiver.py`).
//!
//! One binary of its own: the tracer provider, the propagator and the `tracing` subscriber
//! are process-wide. Each test runs its calls under a root span of its own and reads only the
//! spans of that trace.

#[path = "../common/mod.rs"]
#[allow(dead_code)]
mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use common::peers::{self, PyMcp, SsePeer};
use kaged_mcp::config::Sources;
use kaged_mcp::telemetry::attributes as attr;
use kaged_mcp::{Session, SessionOptions};
use opentelemetry::trace::{SpanKind, TraceContextExt as _, TracerProvider as _};
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{json, Value};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The process's in-memory span exporter, installed once with the propagator and the layer.
fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::filter::Targets::new()
                    .with_target(kaged_mcp::telemetry::TARGET, tracing::Level::INFO)
                    .with_target("telemetry", tracing::Level::INFO),
            )
            .with(
                tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("tests"))
                    .with_location(false)
                    .with_target(false)
                    .with_threads(false)
                    .with_tracked_inactivity(false),
            )
            .init();
        exporter
    })
}

/// Where the server is, and how the session speaks to it.
enum Transport {
    Stdio,
    Http,
}

/// `otel_server.py` writing its spans to `spans`, and the project that reaches it.
struct OtelServer {
    _http: Option<SsePeer>,
    project: String,
    port: Option<u16>,
}

fn otel_server(transport: Transport, spans: &Path) -> Option<OtelServer> {
    let python = PyMcp::V2.python();
    let python = peers::require(python.is_file().then_some(python), "python mcp 2.3.0")?;
    let mut command = vec![
        python.display().to_string(),
        peers::server_script("otel_server.py").display().to_string(),
        "--spans".into(),
        spans.display().to_string(),
    ];
    Some(match transport {
        Transport::Stdio => OtelServer {
            _http: None,
            project: format!(
                "mcp:\n  srv:\n    transport: stdio\n    command: {}\n",
                serde_json::to_string(&command).unwrap()
            ),
            port: None,
        },
        Transport::Http => {
            command.extend(["--http".into(), "0".into()]);
            let peer = SsePeer::start_reporting_port(&command).unwrap();
            OtelServer {
                project: format!(
                    "mcp:\n  srv:\n    transport: streamable-http\n    url: {}\n",
                    peer.mcp_url()
                ),
                port: Some(peer.port()),
                _http: Some(peer),
            }
        }
    })
}

async fn session(project: &str, era: &str) -> Session {
    let config = Sources::new(project.to_owned())
        .local(format!("[mcp.srv]\nera = \"{era}\"\n"))
        .config("[mcp]\nstartup_timeout_ms = 30000\n")
        .load()
        .unwrap();
    let session = Session::start_with(config, SessionOptions::default())
        .await
        .unwrap();
    assert_eq!(session.status()[0].state, "ready");
    session
}

fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

/// The spans exported so far of the trace of `root`.
fn spans_of(root: &tracing::Span) -> Vec<SpanData> {
    let trace = root.context().span().span_context().trace_id();
    exporter()
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .collect()
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|v| v.as_str().into_owned())
}

/// The exported client span named `name` of `root`'s trace.
fn client_span(root: &tracing::Span, name: &str) -> SpanData {
    let spans = spans_of(root);
    spans
        .iter()
        .find(|s| s.name == name)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no span `{name}` in {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        })
}

/// The server's spans, as `otel_server.py` wrote them.
fn server_spans(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every attribute of a request span is one the conventions define, and those that must be
/// there are.
fn assert_conventions(span: &SpanData, method: &str) {
    assert_eq!(span.span_kind, SpanKind::Client, "{}", span.name);
    let keys: BTreeSet<&str> = span.attributes.iter().map(|kv| kv.key.as_str()).collect();
    for key in &keys {
        assert!(
            attr::SPAN_ATTRIBUTES.contains(key),
            "{}: `{key}` is not an attribute of the conventions",
            span.name
        );
    }
    assert_eq!(text(span, attr::MCP_METHOD_NAME).as_deref(), Some(method));
    assert!(keys.contains(attr::JSONRPC_REQUEST_ID), "{}", span.name);
    assert!(keys.contains(attr::MCP_PROTOCOL_VERSION), "{}", span.name);
    assert!(keys.contains(attr::NETWORK_TRANSPORT), "{}", span.name);
    let tool = method == "tools/call";
    assert_eq!(keys.contains(attr::GEN_AI_TOOL_NAME), tool, "{}", span.name);
    assert_eq!(
        text(span, attr::GEN_AI_OPERATION_NAME).as_deref(),
        tool.then_some("execute_tool"),
        "{}",
        span.name
    );
}

/// A `tools/call` under a root span reaches the server with its trace context: the server's
/// `tools/call echo` span is a child of kaged's client span (same trace, parent = our span).
async fn joins_the_servers_trace(transport: Transport, era: &str) {
    exporter();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spans.jsonl");
    let http = matches!(transport, Transport::Http);
    let Some(server) = otel_server(transport, &file) else {
        return;
    };
    let s = session(&server.project, era).await;
    let root = tracing::info_span!(target: "telemetry", "test root");
    let r = s
        .call("mcp.srv.echo", args(json!({"message": "traced"})))
        .instrument(root.clone())
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "traced");
    let fail = s
        .call("mcp.srv.fail", args(json!({})))
        .instrument(root.clone())
        .await
        .unwrap();
    assert!(fail.is_error);
    s.shutdown().await;

    let client = client_span(&root, "tools/call echo");
    assert_conventions(&client, "tools/call");
    assert_eq!(
        text(&client, attr::GEN_AI_TOOL_NAME).as_deref(),
        Some("echo")
    );
    assert!(attribute(&client, attr::ERROR_TYPE).is_none());
    let version = text(&client, attr::MCP_PROTOCOL_VERSION).unwrap();
    assert_eq!(
        version,
        if era == "modern" {
            "2026-07-28"
        } else {
            "2025-11-25"
        }
    );
    if http {
        assert_eq!(
            text(&client, attr::NETWORK_TRANSPORT).as_deref(),
            Some("tcp")
        );
        assert_eq!(
            text(&client, attr::NETWORK_PROTOCOL_NAME).as_deref(),
            Some("http")
        );
        assert_eq!(
            text(&client, attr::SERVER_ADDRESS).as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            attribute(&client, attr::SERVER_PORT),
            Some(&OtelValue::I64(i64::from(server.port.unwrap())))
        );
    } else {
        assert_eq!(
            text(&client, attr::NETWORK_TRANSPORT).as_deref(),
            Some("pipe")
        );
        assert!(attribute(&client, attr::SERVER_ADDRESS).is_none());
    }
    // A 2025-era Streamable HTTP session shows its session id only as a digest; stdio and a
    // 2026-07-28 session have none.
    match text(&client, attr::MCP_SESSION_ID) {
        Some(digest) => {
            assert!(http && era == "legacy", "session id on {era} http={http}");
            assert_eq!(digest.len(), 32);
            assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        None => assert!(
            !(http && era == "legacy"),
            "no session digest on a legacy HTTP session"
        ),
    }

    let failed = client_span(&root, "tools/call fail");
    assert_conventions(&failed, "tools/call");
    assert_eq!(
        text(&failed, attr::ERROR_TYPE).as_deref(),
        Some("tool_error")
    );
    assert!(attribute(&failed, attr::RPC_RESPONSE_STATUS_CODE).is_none());
    assert!(matches!(
        failed.status,
        opentelemetry::trace::Status::Error { .. }
    ));

    let server = server_spans(&file);
    let theirs = server
        .iter()
        .find(|s| s["name"] == "tools/call echo")
        .unwrap_or_else(|| panic!("the server wrote no `tools/call echo` span: {server:?}"));
    assert_eq!(theirs["kind"], "SERVER");
    assert_eq!(
        theirs["trace_id"].as_str().unwrap(),
        client.span_context.trace_id().to_string(),
        "the server's span is in kaged's trace"
    );
    assert_eq!(
        theirs["parent_span_id"].as_str().unwrap(),
        client.span_context.span_id().to_string(),
        "the server's span is a child of kaged's tools/call span"
    );
    // The failing call's context reached the server too.
    let theirs = server
        .iter()
        .find(|s| s["name"] == "tools/call fail")
        .unwrap();
    assert_eq!(
        theirs["parent_span_id"].as_str().unwrap(),
        failed.span_context.span_id().to_string()
    );
}

#[tokio::test]
async fn stdio_legacy_joins_the_servers_trace() {
    joins_the_servers_trace(Transport::Stdio, "legacy").await;
}

#[tokio::test]
async fn stdio_modern_joins_the_servers_trace() {
    joins_the_servers_trace(Transport::Stdio, "modern").await;
}

#[tokio::test]
async fn http_legacy_joins_the_servers_trace() {
    joins_the_servers_trace(Transport::Http, "legacy").await;
}

#[tokio::test]
async fn http_modern_joins_the_servers_trace() {
    joins_the_servers_trace(Transport::Http, "modern").await;
}

/// A JSON-RPC error ends the span with the code as `error.type` and
/// `rpc.response.status_code`, and the server's message as the ERROR status (rmcp answers a
/// call of a tool it does not have with -32602; the client is used below the registry, which
/// would refuse the name before sending).
#[tokio::test]
async fn a_json_rpc_error_is_the_spans_error_type_and_status() {
    use kaged_mcp::client::{ClientOptions, McpClient, ToolCall};
    use kaged_mcp::transport::{StdioConfig, StdioTransport};
    use tower::ServiceExt as _;
    exporter();
    let Some(cmd) = peers::require(peers::rmcp_server(), "rmcp_server") else {
        return;
    };
    let transport = StdioTransport::new(StdioConfig::new(&cmd[0]).args(cmd[1..].iter().cloned()));
    let client = McpClient::new("rmcp", transport, ClientOptions::default());
    client.start().await.unwrap();
    let root = tracing::info_span!(target: "telemetry", "test root");
    let err = client
        .clone()
        .oneshot(ToolCall::new("no_such_tool"))
        .instrument(root.clone())
        .await
        .unwrap_err();
    let err = kaged_mcp::client::ClientError::find(&*err).unwrap();
    let (Some(code), Some(message)) = (err.code(), err.message().map(str::to_owned)) else {
        panic!("{err:?}");
    };
    client.shutdown().await;
    let span = client_span(&root, "tools/call no_such_tool");
    assert_conventions(&span, "tools/call");
    let code = code.to_string();
    assert_eq!(
        text(&span, attr::ERROR_TYPE).as_deref(),
        Some(code.as_str())
    );
    assert_eq!(
        text(&span, attr::RPC_RESPONSE_STATUS_CODE).as_deref(),
        Some(code.as_str())
    );
    assert_eq!(
        span.status,
        opentelemetry::trace::Status::error(message.clone()),
        "the status carries the server's message"
    );
}

mod otlp;
