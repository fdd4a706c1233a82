//! The stdio transport on its own, through the public [`Transport`] trait: shutdown escalation
//! (close stdin, SIGTERM, SIGKILL to the group), the handler's contract (`on_open` first,
//! `on_closed` once), frames in order, and a configurable frame limit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kaged_mcp::protocol::RequestId;
use kaged_mcp::transport::{
    CloseReason, ConnectContext, InboundHandler, Outbound, OversizeFrame, SendFailure, StdioConfig,
    StdioTransport, Transport,
};

use crate::common::peers;

#[derive(Default)]
struct Record {
    opened: Mutex<Option<Arc<dyn Outbound>>>,
    frames: Mutex<Vec<String>>,
    oversize: Mutex<Vec<u64>>,
    closed: Mutex<Vec<CloseReason>>,
    order_ok: Mutex<bool>,
}

impl InboundHandler for Record {
    fn on_open(&self, outbound: Arc<dyn Outbound>) {
        let mut opened = self.opened.lock().unwrap();
        *self.order_ok.lock().unwrap() = opened.is_none() && self.frames.lock().unwrap().is_empty();
        *opened = Some(outbound);
    }
    fn on_frame(&self, frame: &[u8]) {
        assert!(self.opened.lock().unwrap().is_some(), "on_open comes first");
        self.frames
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(frame).into_owned());
    }
    fn on_oversize(&self, frame: OversizeFrame<'_>) {
        self.oversize.lock().unwrap().push(frame.len);
    }
    fn on_send_failed(&self, _: &RequestId, _: SendFailure) {}
    fn on_closed(&self, reason: CloseReason) {
        self.closed.lock().unwrap().push(reason);
    }
}

fn context(handler: &Arc<Record>, frame_limit: usize) -> ConnectContext {
    ConnectContext::new("raw".into(), frame_limit, Arc::clone(handler) as _)
}

async fn wait_until(mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not met in time");
}

async fn assert_group_gone(pgid: u32) {
    let pgid = i32::try_from(pgid).unwrap();
    wait_until(|| peers::processes_in_group(pgid).is_empty()).await;
}

#[tokio::test]
async fn close_escalates_to_sigkill_for_a_server_that_ignores_stdin_and_sigterm() {
    // The shell ignores SIGTERM, and so does `sleep`, which it starts with the signal ignored.
    let config = StdioConfig::new("sh")
        .args([
            "-c",
            "trap '' TERM; echo '{\"ready\":true}'; sleep 1000; sleep 1000",
        ])
        .shutdown_grace(Duration::from_millis(100));
    let transport = StdioTransport::new(config);
    assert_eq!(
        transport.describe(),
        "stdio: sh -c trap '' TERM; echo '{\"ready\":true}'; sleep 1000; sleep 1000"
    );
    let handler = Arc::new(Record::default());
    let connection = transport.connect(context(&handler, 1 << 20)).await.unwrap();
    assert!(*handler.order_ok.lock().unwrap());
    let pid = connection.process_id().unwrap();
    wait_until(|| handler.frames.lock().unwrap().len() == 1).await;
    connection.close().await;
    assert_group_gone(pid).await;
    let closed = handler.closed.lock().unwrap();
    assert_eq!(closed.len(), 1, "on_closed exactly once");
    assert!(closed[0].requested);
    let outbound = handler.opened.lock().unwrap().clone().unwrap();
    assert!(outbound.send(b"{}").is_err(), "no sending after close");
}

#[tokio::test]
async fn frames_arrive_in_order_and_an_over_long_one_is_reported_not_kept() {
    let script = r#"
        for i in 1 2 3; do echo "{\"n\":$i}"; done
        head -c 5000 /dev/zero | tr '\0' 'x'; echo
        echo '{"n":4}'
    "#;
    let config = StdioConfig::new("sh")
        .args(["-c", script])
        .frame_limit(1000);
    let transport = StdioTransport::new(config);
    let handler = Arc::new(Record::default());
    let connection = transport.connect(context(&handler, 1 << 20)).await.unwrap();
    wait_until(|| !handler.closed.lock().unwrap().is_empty()).await;
    assert_eq!(
        *handler.frames.lock().unwrap(),
        ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}", "{\"n\":4}"]
    );
    assert_eq!(*handler.oversize.lock().unwrap(), [5000]);
    let closed = handler.closed.lock().unwrap();
    assert!(!closed[0].requested);
    assert_eq!(closed[0].exit_status().and_then(|s| s.code()), Some(0));
    drop(closed);
    drop(connection);
}

#[tokio::test]
async fn env_is_added_over_the_daemons_environment_and_cwd_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        r#"printf '{"v":"%s","home":"%s","pwd":"%s"}\n' "$KAGED_TEST_VAR" "${HOME:+set}" "$(pwd)""#;
    let config = StdioConfig::new("sh")
        .args(["-c", script])
        .cwd(dir.path())
        .env([("KAGED_TEST_VAR", "hello")]);
    // Secrets in env stay out of Debug output.
    assert!(!format!("{config:?}").contains("hello"));
    let handler = Arc::new(Record::default());
    let connection = StdioTransport::new(config)
        .connect(context(&handler, 1 << 20))
        .await
        .unwrap();
    wait_until(|| !handler.closed.lock().unwrap().is_empty()).await;
    let frame: serde_json::Value =
        serde_json::from_str(&handler.frames.lock().unwrap()[0]).unwrap();
    assert_eq!(frame["v"], "hello");
    assert_eq!(
        frame["home"],
        if std::env::var_os("HOME").is_some() {
            "set"
        } else {
            ""
        }
    );
    assert_eq!(
        std::fs::canonicalize(frame["pwd"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(dir.path()).unwrap()
    );
    drop(connection);
}

#[tokio::test]
async fn a_closed_stderr_tail_is_attached_to_the_close_reason() {
    let config = StdioConfig::new("sh")
        .args([
            "-c",
            "echo 'first words' >&2; echo 'last words' >&2; exit 7",
        ])
        .stderr_tail_bytes(11);
    let handler = Arc::new(Record::default());
    let _connection = StdioTransport::new(config)
        .connect(context(&handler, 1 << 20))
        .await
        .unwrap();
    wait_until(|| !handler.closed.lock().unwrap().is_empty()).await;
    let closed = handler.closed.lock().unwrap();
    assert_eq!(closed[0].stderr_tail(), "last words\n");
    assert_eq!(closed[0].exit_status().and_then(|s| s.code()), Some(7));
    assert!(
        closed[0].to_string().contains("exit status: 7"),
        "{}",
        closed[0]
    );
}
