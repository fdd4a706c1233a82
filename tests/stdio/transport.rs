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

/// The pid a shell wrote to `path`, once it is there.
async fn pid_in(path: &std::path::Path) -> i32 {
    let mut text = String::new();
    wait_until(|| {
        text = std::fs::read_to_string(path).unwrap_or_default();
        text.ends_with('\n')
    })
    .await;
    text.trim().parse().unwrap()
}

/// A server's `setsid` descendants end with it, none left running or as a zombie: one it
/// still holds at shutdown (its own child, in a session of its own), and one orphaned long
/// before (its parent, a shell, exited at once), which this process adopted as a child
/// subreaper. Each is outside the server's process group, so ending the group alone left
/// both running.
///
/// The server keeps its stdout (`exec cat`): a server that closes stdout is done for the
/// transport, which closes stdin and ends it, and with it the orphans already adopted, before
/// the test's shutdown (`exec cat >/dev/null` made this test see them gone early).
#[tokio::test]
async fn a_servers_setsid_descendants_end_with_it() {
    kaged_mcp::transport::stdio::become_subreaper().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (held, orphan) = (dir.path().join("held"), dir.path().join("orphan"));
    // The grandchild calls setsid(2) itself and sleeps: its pid is the one the shell gives.
    let grandchild = "python3 -c 'import os, time; os.setsid(); time.sleep(120)' \
                      </dev/null >/dev/null 2>&1";
    let script = format!(
        "{grandchild} & echo $! > '{}'; \
         sh -c \"{grandchild} & echo \\$! > '{}'\"; \
         echo '{{\"ready\":true}}'; exec cat",
        held.display(),
        orphan.display()
    );
    let config = StdioConfig::new("sh")
        .args(["-c", &script])
        .shutdown_grace(Duration::from_millis(300));
    let handler = Arc::new(Record::default());
    let connection = StdioTransport::new(config)
        .connect(context(&handler, 1 << 20))
        .await
        .unwrap();
    wait_until(|| handler.frames.lock().unwrap().len() == 1).await;
    let pids = [pid_in(&held).await, pid_in(&orphan).await];
    let proc_of = |pid: i32| std::path::PathBuf::from(format!("/proc/{pid}"));
    // Each runs, in a session of its own.
    let sid = |pid: i32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rfind(')').map_or("", |i| &stat[i + 1..]);
        after
            .split_whitespace()
            .nth(3)
            .and_then(|s| s.parse::<i32>().ok())
    };
    wait_until(|| pids.iter().all(|&pid| sid(pid) == Some(pid))).await;
    // The server still runs: nothing has ended it, or them, before the shutdown.
    assert!(handler.closed.lock().unwrap().is_empty());
    connection.close().await;
    // (A zombie keeps its /proc entry: gone means ended and reaped.)
    wait_until(|| pids.iter().all(|&pid| !proc_of(pid).exists())).await;
    assert_eq!(handler.closed.lock().unwrap().len(), 1);
}
