//! The start's wait for roots (see [`roots`](super::roots)) and the bounded shutdown
//! ([`McpClient::shutdown_within`]), over the scripted transport on tokio's paused clock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tower::ServiceExt;

use super::*;
use crate::test_util::{Act, MockTransport};
use crate::transport::{BoxFuture, ConnectContext, TransportError};

fn init_reply(msg: &Value) -> Act {
    Act::reply(
        msg,
        json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
               "serverInfo": {"name": "fs", "version": "1"}}),
    )
}

fn with_roots() -> ClientOptions {
    ClientOptions::default()
        .era(EraPreference::Legacy)
        .roots(vec![Root::new("file:///data", None)])
}

/// A server that asks `roots/list` on `notifications/initialized` (when `asks`) and, like
/// server-filesystem, applies the answer only after handling the next message it reads (its
/// `realpath`s run while that message is served); `tools/call dirs` says what it has. Pings
/// are answered unless `deaf`.
fn roots_server(asks: bool, deaf: bool) -> MockTransport {
    let answered = Arc::new(Mutex::new((false, false))); // (answer read, applied)
    MockTransport::new(move |msg| {
        let mut state = answered.lock().unwrap();
        if msg.get("method").is_none() && msg["id"] == "r1" {
            state.0 = true;
            return vec![];
        }
        let acts = match msg["method"].as_str() {
            Some("initialize") => vec![init_reply(msg)],
            Some("notifications/initialized") if asks => vec![Act::Reply(
                json!({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}),
            )],
            Some("ping") if !deaf => vec![Act::reply(msg, json!({}))],
            Some("tools/call") => {
                let text = if state.1 { "/data" } else { "(none)" };
                vec![Act::reply(
                    msg,
                    json!({"content": [{"type": "text", "text": text}]}),
                )]
            }
            _ => vec![],
        };
        if state.0 {
            state.1 = true;
        }
        acts
    })
}

async fn dirs(client: &McpClient) -> String {
    let result = client.clone().oneshot(ToolCall::new("dirs")).await.unwrap();
    result.joined_text()
}

#[tokio::test(start_paused = true)]
async fn the_first_call_goes_after_the_server_had_its_roots() {
    let server = roots_server(true, false);
    let client = McpClient::new("fs", server.clone(), with_roots());
    assert_eq!(dirs(&client).await, "/data", "{:?}", server.seen());
    assert_eq!(
        server.seen_methods(),
        [
            "initialize",
            "notifications/initialized",
            "<answer>",
            "ping",
            "ping",
            "tools/call"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_that_does_not_ask_for_roots_costs_one_ping() {
    let server = roots_server(false, false);
    let client = McpClient::new("fs", server.clone(), with_roots());
    assert_eq!(dirs(&client).await, "(none)");
    assert_eq!(
        server.seen_methods(),
        [
            "initialize",
            "notifications/initialized",
            "ping",
            "tools/call"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_wait_for_roots_is_bounded_by_roots_wait() {
    let server = roots_server(true, true);
    let options = with_roots().roots_wait(Duration::from_millis(700));
    let client = McpClient::new("fs", server.clone(), options);
    let started = tokio::time::Instant::now();
    client.start().await.unwrap();
    // The paused clock moves only as far as the bound: virtual time, not a measurement.
    assert_eq!(started.elapsed(), Duration::from_millis(700));
}

#[tokio::test(start_paused = true)]
async fn without_roots_nothing_is_awaited() {
    let server = roots_server(true, false);
    let options = ClientOptions::default().era(EraPreference::Legacy);
    let client = McpClient::new("fs", server.clone(), options);
    client.start().await.unwrap();
    assert_eq!(
        server.seen_methods(),
        ["initialize", "notifications/initialized", "<answer>"],
        "roots/list refused, nothing awaited"
    );
}

/// A transport whose connections never finish closing (a stuck server), and say when they
/// are dropped (torn down).
#[derive(Clone)]
struct Stuck {
    inner: MockTransport,
    dropped: Arc<AtomicBool>,
}

#[derive(Debug)]
struct StuckConnection {
    _inner: Box<dyn Connection>,
    dropped: Arc<AtomicBool>,
}

impl Drop for StuckConnection {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

impl Connection for StuckConnection {
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _keep = self;
            std::future::pending::<()>().await;
        })
    }
}

impl Transport for Stuck {
    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
        let connect = self.inner.connect(ctx);
        let dropped = Arc::clone(&self.dropped);
        Box::pin(async move {
            let inner = connect.await?;
            Ok(Box::new(StuckConnection {
                _inner: inner,
                dropped,
            }) as Box<dyn Connection>)
        })
    }

    fn describe(&self) -> String {
        "stuck".into()
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_within_tears_down_a_server_that_will_not_leave_at_the_deadline() {
    let dropped = Arc::new(AtomicBool::new(false));
    let transport = Stuck {
        inner: roots_server(false, false),
        dropped: Arc::clone(&dropped),
    };
    let options = ClientOptions::default().era(EraPreference::Legacy);
    let client = McpClient::new("stuck", transport, options);
    client.start().await.unwrap();
    let started = tokio::time::Instant::now();
    client.shutdown_within(Duration::from_millis(240)).await;
    assert_eq!(started.elapsed(), Duration::from_millis(240));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the connection was torn down"
    );
    assert_eq!(client.state(), ServerState::Disabled);
}
