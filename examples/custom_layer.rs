//! An embedder adds its own layers to the standard stack: an audit log that sees every call
//! first (outermost), and a concurrency limit just above the client.
//!
//! ```sh
//! cargo run --example custom_layer
//! ```

#[path = "demo/support.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use kaged_mcp::client::ToolCall;
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::{Session, SessionOptions};
use serde_json::json;
use tower::limit::ConcurrencyLimitLayer;
use tower::{BoxError, Layer, Service};

/// Records `server.tool outcome latency` for every call.
#[derive(Clone)]
struct AuditLayer {
    server: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl<S> Layer<S> for AuditLayer {
    type Service = Audit<S>;
    fn layer(&self, inner: S) -> Audit<S> {
        Audit {
            inner,
            server: self.server.clone(),
            log: self.log.clone(),
        }
    }
}

#[derive(Clone)]
struct Audit<S> {
    inner: S,
    server: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl<S> Service<ToolCall> for Audit<S>
where
    S: Service<ToolCall, Response = ToolResult, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = ToolResult;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<ToolResult, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ToolCall) -> Self::Future {
        let entry = format!("{}.{}", self.server, call.name);
        let (log, start) = (self.log.clone(), Instant::now());
        let fut = self.inner.call(call);
        Box::pin(async move {
            let out = fut.await;
            let outcome = match &out {
                Ok(r) if r.is_error => "tool error",
                Ok(_) => "ok",
                Err(_) => "failed",
            };
            log.lock()
                .unwrap()
                .push(format!("{entry} {outcome} in {:?}", start.elapsed()));
            out
        })
    }
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::serve_demo_if_asked() {
        return code;
    }
    support::report(run())
}

#[tokio::main(flavor = "current_thread")]
async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let config = support::demo_config()?;
    let log = Arc::new(Mutex::new(Vec::new()));
    let audit_log = log.clone();
    let options = SessionOptions::new().customize_stack(move |server, stack| {
        stack
            .outer_layer(AuditLayer {
                server: server.to_owned(),
                log: audit_log.clone(),
            })
            .inner_layer(ConcurrencyLimitLayer::new(8))
    });
    let session = Session::start_with(config, options).await?;

    session
        .call(
            "mcp.demo.echo",
            json!({"message": "audited"}).as_object().cloned(),
        )
        .await?;
    session
        .call(
            "mcp.demo.add",
            json!({"a": 20, "b": 22}).as_object().cloned(),
        )
        .await?;
    // Arguments that break the tool's input schema (`message` is required) are refused by the
    // validation layer before they leave; the audit layer, outermost, sees the call fail.
    let refused = session
        .call("mcp.demo.echo", json!({}).as_object().cloned())
        .await
        .expect_err("echo without its required message is refused");
    println!("refused: {refused}");

    for line in log.lock().unwrap().iter() {
        println!("audit: {line}");
    }
    session.shutdown().await;
    Ok(())
}
