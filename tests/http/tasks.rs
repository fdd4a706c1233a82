//! Tasks (long-running tools), through the whole session and stack, over stdio and Streamable
//! HTTP:
//! - server-everything's `simulate-research-query` (2025-11-25 tasks, `taskSupport:
//!   "required"`): the research report comes back as one call; with `ambiguous: true` its
//!   clarifying `elicitation/create` (sent while `tasks/result` waits) goes to the embedder's
//!   handler and the answer shapes the report;
//! - `tests/servers/tasks_server.py` in both eras: outcomes (completed, tool error, JSON-RPC
//!   error, input), the poll interval's bounds, cancellation on timeout, and faults (a task the
//!   server loses, a cut during polling, an expired session) where the tool must never run
//!   twice.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kaged_mcp::client::elicitation::{ElicitRequest, ElicitResult, ElicitationService};
use kaged_mcp::config::Sources;
use kaged_mcp::{Session, SessionOptions};
use peers::SsePeer;
use serde_json::{json, Map, Value};
use tower::BoxError;

use crate::common::peers;

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

/// Where a server runs.
enum Peer {
    Stdio(Vec<String>),
    Http(SsePeer),
}

impl Peer {
    fn project(&self, key: &str) -> String {
        match self {
            Peer::Stdio(cmd) => format!(
                "mcp:\n  {key}:\n    transport: stdio\n    command: {}\n",
                serde_json::to_string(cmd).unwrap()
            ),
            Peer::Http(peer) => format!(
                "mcp:\n  {key}:\n    transport: streamable-http\n    url: {}\n",
                peer.mcp_url()
            ),
        }
    }
}

async fn session(project: String, local: &str, options: SessionOptions) -> Session {
    let config = Sources::new(project)
        .local(local.to_owned())
        .config("[mcp]\nstartup_timeout_ms = 30000\n")
        .load()
        .unwrap();
    let session = Session::start_with(config, options).await.unwrap();
    let st = &session.status()[0];
    assert_eq!(st.state, "ready", "{st:?}");
    session
}

/// Answers every elicitation with `{"interpretation": "historical"}`.
fn historian() -> ElicitationService {
    ElicitationService::new(tower::service_fn(|req: ElicitRequest| async move {
        assert!(
            req.params.message.contains("multiple interpretations"),
            "{}",
            req.params.message
        );
        let mut content = Map::new();
        content.insert("interpretation".into(), json!("historical"));
        Ok::<_, BoxError>(ElicitResult::Accept(content))
    }))
}

async fn research(peer: &Peer) {
    let s = session(
        peer.project("everything"),
        "",
        SessionOptions::default().elicitation_handler(historian()),
    )
    .await;
    let tool = "mcp.everything.simulate-research-query";
    assert!(
        s.catalog().iter().any(|t| t.name == tool),
        "a required-task tool is registered on a server that offers tasks"
    );
    let r = s.call(tool, args(json!({"topic": "rust"}))).await.unwrap();
    assert!(!r.is_error, "{r:?}");
    let text = r.joined_text();
    assert!(text.contains("# Research Report: rust"), "{text}");
    assert!(!text.contains("requires task augmentation"), "{text}");

    // Ambiguous: the server asks which interpretation (during `tasks/result`), the handler
    // says "historical", and the report is the historical one.
    let r = s
        .call(tool, args(json!({"topic": "rust", "ambiguous": true})))
        .await
        .unwrap();
    let text = r.joined_text();
    assert!(
        text.contains("Research Report: rust (historical)"),
        "{text}"
    );

    let st = &s.status()[0];
    assert_eq!(
        (st.tasks_in_flight, st.tasks_completed, st.tasks_failed),
        (0, 2, 0),
        "{st:?}"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn server_everything_research_runs_as_a_task_over_stdio() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    research(&Peer::Stdio(cmd)).await;
}

#[tokio::test]
async fn server_everything_research_runs_as_a_task_over_streamable_http() {
    let port = peers::free_port();
    let Some((cmd, env)) = peers::require(peers::everything_http(port), "server-everything") else {
        return;
    };
    let peer = SsePeer::start(&cmd, &env, port).unwrap();
    research(&Peer::Http(peer)).await;
}

#[tokio::test]
async fn with_tasks_off_a_required_task_tool_is_not_registered() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let s = session(
        Peer::Stdio(cmd).project("everything"),
        "[mcp.everything]\ntasks = \"off\"\n",
        SessionOptions::default(),
    )
    .await;
    let names: Vec<String> = s.catalog().into_iter().map(|t| t.name).collect();
    assert!(
        !names.iter().any(|n| n.ends_with("simulate-research-query")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n == "mcp.everything.echo"),
        "{names:?}"
    );
    let e = s
        .call(
            "mcp.everything.simulate-research-query",
            args(json!({"topic": "x"})),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("tasks = \"off\""), "{e}");
    s.shutdown().await;
}

// ---- tests/servers/tasks_server.py ------------------------------------------------------------

/// `tests/servers/tasks_server.py` over stdio or HTTP with `extra` options and a stats file.
struct TaskServer {
    peer: Peer,
    stats: PathBuf,
    _dir: tempfile::TempDir,
}

impl TaskServer {
    fn start(http: bool, extra: &[&str]) -> TaskServer {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join("stats.json");
        let mut cmd = vec![
            "python3".to_owned(),
            peers::server_script("tasks_server.py")
                .to_string_lossy()
                .into_owned(),
            if http { "http" } else { "stdio" }.to_owned(),
        ];
        if http {
            cmd.extend(["--port".to_owned(), "0".to_owned()]);
        }
        cmd.extend([
            "--stats-file".to_owned(),
            stats.to_str().unwrap().to_owned(),
        ]);
        cmd.extend(extra.iter().map(|s| (*s).to_owned()));
        let peer = if http {
            Peer::Http(SsePeer::start_reporting_port(&cmd).unwrap())
        } else {
            Peer::Stdio(cmd)
        };
        TaskServer {
            peer,
            stats,
            _dir: dir,
        }
    }

    fn stats(&self) -> Value {
        read_stats(&self.stats)
    }

    /// A session on this server (`srv`) with `local(era, timeout_ms, more)` as its `local.toml`.
    async fn session(
        &self,
        era: &str,
        timeout_ms: u64,
        more: &str,
        options: SessionOptions,
    ) -> Session {
        session(
            self.peer.project("srv"),
            &local(era, timeout_ms, more),
            options,
        )
        .await
    }

    /// Waits (at most 10 s) until `check` holds of the server's stats.
    async fn wait_for(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..200 {
            let st = self.stats();
            if check(&st) {
                return st;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{what}: never seen in {}", self.stats());
    }
}

fn read_stats(path: &Path) -> Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// Answers a delete confirmation with `{"confirm": true}`, any other question with
/// `{"name": "Alice"}`.
fn agreeable() -> ElicitationService {
    ElicitationService::new(tower::service_fn(|req: ElicitRequest| async move {
        let mut content = Map::new();
        if req.params.message.starts_with("Delete") {
            content.insert("confirm".into(), json!(true));
        } else {
            content.insert("name".into(), json!("Alice"));
        }
        Ok::<_, BoxError>(ElicitResult::Accept(content))
    }))
}

/// The `local.toml` of a test: the era forced, the call timeout, more lines.
fn local(era: &str, timeout_ms: u64, more: &str) -> String {
    format!("[mcp.srv]\nera = \"{era}\"\ntimeout_ms = {timeout_ms}\n{more}")
}

async fn outcomes(http: bool, era: &str) {
    let srv = TaskServer::start(http, &[]);
    let s = srv
        .session(
            era,
            20_000,
            "",
            SessionOptions::default().elicitation_handler(agreeable()),
        )
        .await;
    assert_eq!(s.status()[0].era, Some(era));
    let call = |tool: &'static str, a: Value| {
        let s = &s;
        async move { s.call(&format!("mcp.srv.{tool}"), args(a)).await }
    };
    let r = call("slow_compute", json!({"seconds": 0.5})).await.unwrap();
    assert_eq!(
        (r.joined_text().as_str(), r.is_error),
        ("computed 0.5", false)
    );
    // A tool error is the tool's result, not a failure of the call (2025-11-25 reaches it
    // through a `failed` task and `tasks/result`, 2026-07-28 through `completed`).
    for tool in ["tool_error_job", "failing_job"] {
        let r = call(tool, json!({})).await.unwrap();
        assert!(r.is_error, "{tool}: {r:?}");
    }
    // A JSON-RPC error ends the call with an error naming the task.
    let e = call("protocol_error_job", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("server `srv`")
            && e.contains("protocol_error_job")
            && e.contains("task ")
            && e.contains("failed with JSON-RPC error -32603")
            && e.contains("protocol_error_job crashed"),
        "{e}"
    );
    // Input while the task runs: the embedder's elicitation handler answers it.
    let r = call("confirm_delete", json!({"filename": "a.txt"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "deleted a.txt", "{r:?}");
    let r = call("multi_input", json!({})).await.unwrap();
    assert_eq!(r.joined_text(), "inputs: Alice, Alice", "{r:?}");
    // An optional tool: 2025-11-25 asks for a task only with `tasks = "prefer"`; a 2026-07-28
    // server decides itself.
    let r = call("optional_job", json!({})).await.unwrap();
    let expected = if era == "legacy" {
        "ran inline"
    } else {
        "ran as task"
    };
    assert_eq!(r.joined_text(), expected);
    if era == "modern" {
        // A multi round-trip answer, then a task.
        let r = call("test_tool_with_task", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "Hello, Alice!", "{r:?}");
    }

    let st = &s.status()[0];
    let tasks = if era == "legacy" { 6 } else { 8 };
    assert_eq!(
        (
            st.tasks_in_flight,
            st.tasks_completed + st.tasks_failed,
            st.tasks_failed,
            st.tasks_cancelled
        ),
        (0, tasks, 1, 0),
        "{st:?}"
    );
    s.shutdown().await;
    let stats = srv.stats();
    for (tool, runs) in stats["tool_runs"].as_object().unwrap() {
        assert_eq!(runs, 1, "{tool} ran once: {stats}");
    }
    assert_eq!(stats["tasks_created"], tasks, "{stats}");
}

#[tokio::test]
async fn legacy_task_outcomes_over_stdio() {
    outcomes(false, "legacy").await;
}

#[tokio::test]
async fn legacy_task_outcomes_over_streamable_http() {
    outcomes(true, "legacy").await;
}

#[tokio::test]
async fn modern_task_outcomes_over_stdio() {
    outcomes(false, "modern").await;
}

#[tokio::test]
async fn modern_task_outcomes_over_streamable_http() {
    outcomes(true, "modern").await;
}

#[tokio::test]
async fn prefer_runs_optional_tools_as_tasks_on_a_legacy_server() {
    let srv = TaskServer::start(false, &[]);
    let s = srv
        .session(
            "legacy",
            20_000,
            "tasks = \"prefer\"\n",
            SessionOptions::default(),
        )
        .await;
    let r = s.call("mcp.srv.optional_job", None).await.unwrap();
    assert_eq!(r.joined_text(), "ran as task");
    s.shutdown().await;
}

/// The server's `pollInterval` is honoured within bounds: 0 does not spin, an hour does not
/// stall the call (which must end within its timeout).
async fn poll_interval_bounds(http: bool, era: &str) {
    let srv = TaskServer::start(http, &["--poll-interval-ms", "0"]);
    let s = srv
        .session(era, 20_000, "", SessionOptions::default())
        .await;
    let r = s
        .call("mcp.srv.slow_compute", args(json!({"seconds": 1})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "computed 1");
    s.shutdown().await;
    let gets = srv.stats()["tasks_get"].as_u64().unwrap();
    // 1 s of polling at the 50 ms floor is about 20 requests, not thousands.
    assert!(gets <= 60, "tasks/get sent {gets} times for a 1 s task");

    let srv = TaskServer::start(http, &["--poll-interval-ms", "3600000"]);
    let s = srv
        .session(era, 15_000, "", SessionOptions::default())
        .await;
    let r = s
        .call("mcp.srv.slow_compute", args(json!({"seconds": 0.5})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "computed 0.5");
    s.shutdown().await;
}

#[tokio::test]
async fn the_poll_interval_is_bounded_both_ways_legacy_stdio() {
    poll_interval_bounds(false, "legacy").await;
}

#[tokio::test]
async fn the_poll_interval_is_bounded_both_ways_modern_http() {
    poll_interval_bounds(true, "modern").await;
}

/// A call that times out cancels its task on the server, and nothing keeps running here.
async fn timeout_cancels(http: bool, era: &str) {
    let srv = TaskServer::start(http, &[]);
    let s = srv.session(era, 1_500, "", SessionOptions::default()).await;
    let e = s.call("mcp.srv.never_ends", None).await.unwrap_err();
    assert!(matches!(e, kaged_mcp::Error::Timeout { .. }), "{e}");
    let stats = srv
        .wait_for("tasks/cancel of the timed-out task", |st| {
            st["cancelled_tasks"]
                .as_array()
                .is_some_and(|c| c.len() == 1)
        })
        .await;
    let created: Vec<&String> = stats["statuses"].as_object().unwrap().keys().collect();
    assert_eq!(created.len(), 1, "{stats}");
    assert_eq!(stats["tasks_cancel"], json!([created[0]]), "{stats}");
    assert_eq!(stats["statuses"][created[0]], "cancelled", "{stats}");
    let st = &s.status()[0];
    assert_eq!(
        (st.tasks_in_flight, st.tasks_cancelled, st.timeouts),
        (0, 1, 1),
        "{st:?}"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn a_timed_out_task_is_cancelled_legacy_stdio() {
    timeout_cancels(false, "legacy").await;
}

#[tokio::test]
async fn a_timed_out_task_is_cancelled_legacy_http() {
    timeout_cancels(true, "legacy").await;
}

#[tokio::test]
async fn a_timed_out_task_is_cancelled_modern_stdio() {
    timeout_cancels(false, "modern").await;
}

#[tokio::test]
async fn a_timed_out_task_is_cancelled_modern_http() {
    timeout_cancels(true, "modern").await;
}

/// A `tasks/get` whose connection is cut is asked again; the tool runs once.
async fn cut_during_polling(era: &str) {
    let srv = TaskServer::start(true, &["--cut-get", "2"]);
    let s = srv
        .session(era, 20_000, "", SessionOptions::default())
        .await;
    let r = s
        .call("mcp.srv.slow_compute", args(json!({"seconds": 1})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "computed 1");
    s.shutdown().await;
    let stats = srv.stats();
    assert_eq!(stats["tool_runs"], json!({"slow_compute": 1}), "{stats}");
    assert_eq!(stats["tasks_created"], 1, "{stats}");
    assert!(stats["tasks_get"].as_u64().unwrap() >= 3, "{stats}");
}

#[tokio::test]
async fn a_cut_during_polling_never_runs_the_tool_twice_legacy() {
    cut_during_polling("legacy").await;
}

#[tokio::test]
async fn a_cut_during_polling_never_runs_the_tool_twice_modern() {
    cut_during_polling("modern").await;
}

#[tokio::test]
async fn an_expired_session_is_replaced_and_the_task_followed_on_the_new_one() {
    let srv = TaskServer::start(true, &["--expire-session-on-get", "2"]);
    let s = srv
        .session("legacy", 20_000, "", SessionOptions::default())
        .await;
    let r = s
        .call("mcp.srv.slow_compute", args(json!({"seconds": 1})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "computed 1");
    s.shutdown().await;
    let stats = srv.stats();
    assert_eq!(stats["tool_runs"], json!({"slow_compute": 1}), "{stats}");
    assert!(stats["sessions"].as_u64().unwrap() >= 2, "{stats}");
}

/// A stdio server that exits mid-task took its task with it: the call fails once, clearly,
/// and the tool is not called again.
async fn crash_mid_task(era: &str) {
    let srv = TaskServer::start(false, &["--cut-get", "2"]);
    let s = srv
        .session(era, 20_000, "", SessionOptions::default())
        .await;
    let e = s
        .call("mcp.srv.slow_compute", args(json!({"seconds": 2})))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("server `srv`") && e.contains("was lost") && e.contains("exited"),
        "{e}"
    );
    let stats = srv.stats();
    assert_eq!(stats["tool_runs"], json!({"slow_compute": 1}), "{stats}");
    let st = &s.status()[0];
    assert_eq!((st.tasks_in_flight, st.tasks_failed), (0, 1), "{st:?}");
    s.shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_mid_task_fails_the_call_once_legacy() {
    crash_mid_task("legacy").await;
}

#[tokio::test]
async fn a_server_that_exits_mid_task_fails_the_call_once_modern() {
    crash_mid_task("modern").await;
}

async fn lost_task(http: bool, era: &str) {
    let srv = TaskServer::start(http, &["--lose-tasks"]);
    let s = srv
        .session(era, 20_000, "", SessionOptions::default())
        .await;
    let e = s
        .call("mcp.srv.slow_compute", args(json!({"seconds": 0.3})))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("was lost") && e.contains("no longer knows it") && e.contains("Task not found"),
        "{e}"
    );
    s.shutdown().await;
    let stats = srv.stats();
    assert_eq!(stats["tool_runs"], json!({"slow_compute": 1}), "{stats}");
}

#[tokio::test]
async fn a_task_the_server_lost_fails_the_call_legacy_http() {
    lost_task(true, "legacy").await;
}

#[tokio::test]
async fn a_task_the_server_lost_fails_the_call_modern_stdio() {
    lost_task(false, "modern").await;
}

#[tokio::test]
async fn with_tasks_off_a_modern_server_refuses_a_task_only_tool_with_a_typed_error() {
    let srv = TaskServer::start(true, &[]);
    let s = srv
        .session(
            "modern",
            20_000,
            "tasks = \"off\"\n",
            SessionOptions::default(),
        )
        .await;
    let r = s
        .call("mcp.srv.greet", args(json!({"name": "Ada"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "Hello, Ada!");
    // An optional tool runs inline for a client without the extension.
    let r = s.call("mcp.srv.optional_job", None).await.unwrap();
    assert_eq!(r.joined_text(), "ran inline");
    let e = s
        .call("mcp.srv.never_ends", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("needs the client capability")
            && e.contains("io.modelcontextprotocol/tasks")
            && e.contains("tasks = \"required\" under [mcp.srv]"),
        "{e}"
    );
    s.shutdown().await;
    assert_eq!(srv.stats()["tasks_created"], 0);
}

#[tokio::test]
async fn a_legacy_server_without_the_tasks_capability_keeps_its_task_only_tools_out() {
    let srv = TaskServer::start(false, &["--no-task-capability"]);
    let s = srv
        .session("legacy", 20_000, "", SessionOptions::default())
        .await;
    let names: Vec<String> = s.catalog().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"mcp.srv.greet".to_owned()), "{names:?}");
    assert!(
        names.contains(&"mcp.srv.optional_job".to_owned()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"mcp.srv.never_ends".to_owned()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"mcp.srv.slow_compute".to_owned()),
        "{names:?}"
    );
    s.shutdown().await;
}

// ---- the PyPI `mcp` 1.30 SDK (2025-11-25 tasks; `mcp` 2.3 serves none) -----------------------

/// Accepts `Proceed with …?` with `{"ok": true}`.
fn proceed() -> ElicitationService {
    ElicitationService::new(tower::service_fn(|req: ElicitRequest| async move {
        assert!(
            req.params.message.starts_with("Proceed with"),
            "{}",
            req.params.message
        );
        let mut content = Map::new();
        content.insert("ok".into(), json!(true));
        Ok::<_, BoxError>(ElicitResult::Accept(content))
    }))
}

async fn python_sdk_tasks(peer: Peer) {
    let s = session(
        peer.project("py"),
        "",
        SessionOptions::default().elicitation_handler(proceed()),
    )
    .await;
    assert_eq!(s.status()[0].era, Some("legacy"));
    let r = s
        .call("mcp.py.research", args(json!({"topic": "rust"})))
        .await
        .unwrap();
    assert_eq!(
        (r.joined_text().as_str(), r.is_error),
        ("report on rust", false)
    );
    // Input while the task runs: the SDK sends its elicitation only on `tasks/result`.
    let r = s
        .call("mcp.py.confirm", args(json!({"item": "deploy"})))
        .await
        .unwrap();
    assert_eq!(
        (r.joined_text().as_str(), r.is_error),
        ("done deploy", false)
    );
    let r = s.call("mcp.py.counter", None).await.unwrap();
    let counts: Value = serde_json::from_str(&r.joined_text()).unwrap();
    assert_eq!(
        counts,
        json!({"research": 1, "confirm": 1}),
        "each body ran once"
    );
    let st = &s.status()[0];
    assert_eq!((st.tasks_in_flight, st.tasks_completed), (0, 2), "{st:?}");
    s.shutdown().await;
}

fn python_tasks_command() -> Option<Vec<String>> {
    let python = peers::PyMcp::V1.python();
    python.is_file().then(|| {
        vec![
            python.to_string_lossy().into_owned(),
            peers::server_script("py_tasks_server.py")
                .to_string_lossy()
                .into_owned(),
        ]
    })
}

#[tokio::test]
async fn python_sdk_tasks_over_stdio() {
    let Some(mut cmd) = peers::require(python_tasks_command(), "python mcp 1.30.0") else {
        return;
    };
    cmd.push("stdio".into());
    python_sdk_tasks(Peer::Stdio(cmd)).await;
}

#[tokio::test]
async fn python_sdk_tasks_over_streamable_http() {
    let Some(mut cmd) = peers::require(python_tasks_command(), "python mcp 1.30.0") else {
        return;
    };
    cmd.extend(["streamable-http".into(), "--port".into(), "0".into()]);
    python_sdk_tasks(Peer::Http(SsePeer::start_reporting_port(&cmd).unwrap())).await;
}

// ---- rmcp 3.11 (the 2026-07-28 tasks extension) --------------------------------------------

async fn rmcp_tasks(peer: Peer) {
    let s = session(
        peer.project("rs"),
        "",
        SessionOptions::default().elicitation_handler(agreeable()),
    )
    .await;
    assert_eq!(s.status()[0].era, Some("modern"));
    let r = s
        .call(
            "mcp.rs.slow_task",
            args(json!({"seconds": 0.3, "label": "x"})),
        )
        .await
        .unwrap();
    assert_eq!(
        (r.joined_text().as_str(), r.is_error),
        ("slow_task done: x", false)
    );
    // Input during the task: `inputRequests` answered with `tasks/update`.
    let r = s.call("mcp.rs.ask_task", None).await.unwrap();
    assert_eq!(
        (r.joined_text().as_str(), r.is_error),
        ("Hello, Alice!", false)
    );
    // A plain tool is answered plainly.
    let r = s
        .call("mcp.rs.echo", args(json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "Echo: hi");
    let st = &s.status()[0];
    assert_eq!((st.tasks_in_flight, st.tasks_completed), (0, 2), "{st:?}");
    s.shutdown().await;

    // With tasks off the client does not declare the extension: rmcp refuses its task-only
    // tools with -32021, a typed error that names the setting.
    let s = session(
        peer.project("rs"),
        "[mcp.rs]\ntasks = \"off\"\n",
        SessionOptions::default(),
    )
    .await;
    let e = s
        .call("mcp.rs.slow_task", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("needs the client capability")
            && e.contains("tasks = \"required\" under [mcp.rs]"),
        "{e}"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn rmcp_tasks_over_stdio() {
    let Some(cmd) = peers::require(peers::rmcp_server(), "rmcp_server") else {
        return;
    };
    rmcp_tasks(Peer::Stdio(cmd)).await;
}

#[tokio::test]
async fn rmcp_tasks_over_streamable_http() {
    for (stateless, json) in [(false, false), (true, true)] {
        let Some(cmd) =
            peers::require(peers::rmcp_http_server(stateless, json), "rmcp_http_server")
        else {
            return;
        };
        rmcp_tasks(Peer::Http(SsePeer::start_reporting_port(&cmd).unwrap())).await;
    }
}
