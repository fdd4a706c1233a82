//! Session start against several real servers at once: one failing, one disabled, one
//! filtered; per-agent catalogs; a tool not granted; list_changed rediscovery; an embedder's
//! audit layer seeing every call.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use common::peers::{self, Fault};
use kaged_mcp::client::ToolCall;
use kaged_mcp::config::{load, ConfigPaths};
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::{Error, Session, SessionOptions};
use serde_json::json;
use tower::{BoxError, Layer, Service};

use crate::common;

fn yaml_list(cmd: &[String]) -> String {
    serde_json::to_string(cmd).unwrap()
}

fn demo_cmd() -> Vec<String> {
    vec![env!("CARGO_BIN_EXE_kaged-mcp").into(), "demo-server".into()]
}

fn project(yaml: &str, local: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("project.yaml"), yaml).unwrap();
    std::fs::write(d.path().join("local.toml"), local).unwrap();
    d
}

fn args(v: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    v.as_object().cloned()
}

#[tokio::test]
async fn several_servers_one_failing_one_disabled_one_filtered() {
    let yaml = format!(
        r#"
mcp:
  demo:
    transport: stdio
    command: {demo}
  filtered:
    transport: stdio
    command: {demo}
    tools:
      allow: ["e*", "add"]
      deny: ["add"]
  broken:
    transport: stdio
    command: {broken}
  off:
    transport: stdio
    command: ["/nonexistent/never-run"]
primary:
  tools:
    mcp.demo: {{ enabled: true }}
    mcp.demo.lorem: {{ enabled: false }}
    "mcp.filtered.*": {{ enabled: true }}
  subagents:
    researcher:
      tools:
        mcp.demo.echo: {{ enabled: true }}
"#,
        demo = yaml_list(&demo_cmd()),
        broken = yaml_list(&peers::faulty(Fault::ExitBeforeInit)),
    );
    let d = project(&yaml, "[mcp.off]\ndisabled = true\n");
    let config = load(&ConfigPaths::new(d.path())).unwrap();
    let session = Session::start(config).await.unwrap();

    let names: Vec<String> = session.catalog().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "mcp.demo.add",
            "mcp.demo.crash",
            "mcp.demo.echo",
            "mcp.demo.lorem",
            "mcp.demo.slow",
            "mcp.filtered.echo"
        ]
    );

    let status = session.status();
    let by = |k: &str| status.iter().find(|s| s.server == k).unwrap().clone();
    assert_eq!(by("demo").state, "ready");
    assert_eq!(by("demo").tools, 5);
    assert_eq!(by("filtered").tools, 1);
    assert_eq!(by("off").state, "disabled");
    assert_eq!(by("off").tools, 0);
    // One failed start: restarting (the next call tries again after the backoff), one
    // failure, as the supervisor's log says; the start failure is listed.
    let broken = by("broken");
    assert_eq!(broken.state, "restarting", "{broken:?}");
    assert_eq!(broken.consecutive_failures, 1, "{broken:?}");
    assert!(broken.last_error.unwrap().contains("exited"));
    let err = broken.error_detail.unwrap();
    assert!(err.contains("broken"), "the error names the server: {err}");
    let failures = session.start_failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].server, "broken");

    // Per-agent catalogs.
    let primary: Vec<String> = session
        .catalog_for("primary")
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        primary,
        [
            "mcp.demo.add",
            "mcp.demo.crash",
            "mcp.demo.echo",
            "mcp.demo.slow",
            "mcp.filtered.echo"
        ]
    );
    let researcher: Vec<String> = session
        .catalog_for("researcher")
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(researcher, ["mcp.demo.echo"]);
    assert!(matches!(
        session.catalog_for("nobody"),
        Err(Error::UnknownAgent { .. })
    ));

    // Calls: granted, not granted, unknown, and on the failed server.
    let r = session
        .call_as(
            "researcher",
            "mcp.demo.echo",
            args(json!({"message": "hi"})),
        )
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "Echo: hi");
    let e = session
        .call_as("researcher", "mcp.demo.add", args(json!({"a": 1, "b": 2})))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotGranted { .. }), "{e}");
    let e = session
        .call_as("primary", "mcp.demo.lorem", args(json!({"bytes": 3})))
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::NotGranted { .. }),
        "most specific key wins: {e}"
    );
    let e = session.call("mcp.filtered.add", None).await.unwrap_err();
    assert!(matches!(e, Error::UnknownTool { .. }), "{e}");
    // A tool of a server that failed to start: the error says the server is not ready, and
    // why (a filtered tool of a ready server, above, stays unknown).
    let e = session.call("mcp.broken.echo", None).await.unwrap_err();
    assert!(
        matches!(&e, Error::ServerNotReady { server, state, last_error: Some(_) }
            if server == "broken" && state == "restarting"),
        "{e}"
    );
    let r = session
        .call("mcp.demo.add", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"sum": 42.0})));
    session.shutdown().await;
}

#[tokio::test]
async fn a_not_granted_call_never_reaches_the_server() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let yaml = format!(
        "mcp:\n  logged:\n    transport: stdio\n    command: {}\n    env:\n      KAGED_REQUEST_LOG: {}\nprimary:\n  subagents:\n    reader:\n      tools:\n        mcp.logged.other: {{ enabled: true }}\n",
        yaml_list(&peers::faulty(Fault::RequestLog)),
        log.path().display()
    );
    let d = project(&yaml, "");
    let session = Session::start(load(&ConfigPaths::new(d.path())).unwrap())
        .await
        .unwrap();
    let e = session
        .call_as("reader", "mcp.logged.echo", args(json!({"message": "x"})))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotGranted { .. }));
    session.shutdown().await;
    let methods: Vec<String> = peers::read_request_log(log.path())
        .iter()
        .map(|e| e["method"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(methods.contains(&"tools/list".to_owned()), "{methods:?}");
    assert!(!methods.contains(&"tools/call".to_owned()), "{methods:?}");
}

#[tokio::test]
async fn a_missing_secret_refuses_the_session() {
    let d = project(
        "mcp:\n  gh:\n    transport: sse\n    url: http://127.0.0.1:9/sse\n    auth: { type: bearer, secret_ref: api.gh }\n",
        "",
    );
    let e = Session::start(load(&ConfigPaths::new(d.path())).unwrap())
        .await
        .unwrap_err();
    let Error::Config(errs) = e else {
        panic!("{e}")
    };
    assert!(
        errs.to_string()
            .contains("server `gh` needs secret `api.gh`"),
        "{errs}"
    );
}

#[tokio::test]
async fn list_changed_rediscovers_and_swaps_the_tools() {
    let yaml = format!(
        "mcp:\n  growing:\n    transport: stdio\n    command: {}\n",
        yaml_list(&peers::faulty(Fault::ListChanged))
    );
    let d = project(&yaml, "");
    let session = Session::start(load(&ConfigPaths::new(d.path())).unwrap())
        .await
        .unwrap();
    assert_eq!(session.status()[0].tools, 1);
    // Each call makes the server add a tool and send notifications/tools/list_changed.
    session
        .call("mcp.growing.echo", args(json!({"message": "a"})))
        .await
        .unwrap();
    let mut names = Vec::new();
    for _ in 0..200 {
        names = session.catalog().into_iter().map(|t| t.name).collect();
        if names.len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(names, ["mcp.growing.echo", "mcp.growing.extra1"]);
    let r = session.call("mcp.growing.extra1", None).await.unwrap();
    assert_eq!(r.joined_text(), "called extra1");
    session.shutdown().await;
}

#[tokio::test]
async fn everything_server_list_changed_after_initialized_keeps_a_full_catalog() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let yaml = format!(
        "mcp:\n  everything:\n    transport: stdio\n    command: {}\n    tools:\n      deny: [\"gzip-*\"]\n",
        yaml_list(&cmd)
    );
    let d = project(&yaml, "");
    let session = Session::start(load(&ConfigPaths::new(d.path())).unwrap())
        .await
        .unwrap();
    // server-everything sends tools/list_changed right after initialized; rediscovery must
    // happen (the catalog is replaced: it once never was, the notification arriving before the
    // watcher subscribed) and leave the same, filtered catalog in place.
    let first = session.registry().server_catalog("everything").unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while session
        .registry()
        .server_catalog("everything")
        .is_some_and(|now| std::sync::Arc::ptr_eq(&now, &first))
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no rediscovery after server-everything's tools/list_changed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let names: Vec<String> = session.catalog().into_iter().map(|t| t.name).collect();
    assert!(
        names.contains(&"mcp.everything.echo".to_owned()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("gzip")), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("trigger-sampling-request")),
        "we never advertise sampling: {names:?}"
    );
    let r = session
        .call(
            "mcp.everything.echo",
            args(json!({"message": "round trip"})),
        )
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "Echo: round trip");
    session.shutdown().await;
}

/// An embedder's layer: records the name of every tool it sees.
#[derive(Clone, Default)]
struct AuditLayer {
    seen: Arc<Mutex<Vec<String>>>,
}

impl<S> Layer<S> for AuditLayer {
    type Service = Audit<S>;
    fn layer(&self, inner: S) -> Audit<S> {
        Audit {
            inner,
            seen: self.seen.clone(),
        }
    }
}

#[derive(Clone)]
struct Audit<S> {
    inner: S,
    seen: Arc<Mutex<Vec<String>>>,
}

impl<S: Service<ToolCall, Response = ToolResult, Error = BoxError>> Service<ToolCall> for Audit<S> {
    type Response = ToolResult;
    type Error = BoxError;
    type Future = S::Future;
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }
    fn call(&mut self, call: ToolCall) -> S::Future {
        self.seen.lock().unwrap().push(call.name.to_string());
        self.inner.call(call)
    }
}

#[tokio::test]
async fn an_embedders_audit_layer_sees_every_call_to_a_real_server() {
    let yaml = format!(
        "mcp:\n  demo:\n    transport: stdio\n    command: {}\n",
        yaml_list(&demo_cmd())
    );
    let d = project(&yaml, "");
    let outer = AuditLayer::default();
    let inner = AuditLayer::default();
    let (o, i) = (outer.clone(), inner.clone());
    let options = SessionOptions::new().customize_stack(move |server, b| {
        assert_eq!(server, "demo");
        b.outer_layer(o.clone()).inner_layer(i.clone())
    });
    let session = Session::start_with(load(&ConfigPaths::new(d.path())).unwrap(), options)
        .await
        .unwrap();
    session
        .call("mcp.demo.echo", args(json!({"message": "1"})))
        .await
        .unwrap();
    session
        .call("mcp.demo.add", args(json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    let _ = session.call("mcp.demo.nope", None).await;
    assert_eq!(*outer.seen.lock().unwrap(), ["echo", "add"]);
    assert_eq!(*inner.seen.lock().unwrap(), ["echo", "add"]);
    session.shutdown().await;
}

#[tokio::test]
async fn results_over_the_cap_are_truncated_with_the_marker() {
    let yaml = format!(
        "mcp:\n  demo:\n    transport: stdio\n    command: {}\n",
        yaml_list(&demo_cmd())
    );
    let d = project(&yaml, "");
    std::fs::write(
        d.path().join("config.toml"),
        "[mcp]\nresult_max_bytes = 100\n",
    )
    .unwrap();
    let config = load(&ConfigPaths::new(d.path()).config(d.path().join("config.toml"))).unwrap();
    let session = Session::start(config).await.unwrap();
    let r = session
        .call("mcp.demo.lorem", args(json!({"bytes": 5000})))
        .await
        .unwrap();
    assert!(r.truncated);
    let text = r.joined_text();
    assert!(text.ends_with("\n[... truncated at 100 bytes]"), "{text}");
    assert!(text.starts_with("lorem ipsum"));
    let r = session
        .call("mcp.demo.lorem", args(json!({"bytes": 100})))
        .await
        .unwrap();
    assert!(!r.truncated, "exactly the cap is untouched");
    assert_eq!(r.joined_text().len(), 100);
    session.shutdown().await;
}

#[tokio::test]
async fn a_timeout_names_the_server_and_the_timeout() {
    let yaml = format!(
        "mcp:\n  demo:\n    transport: stdio\n    command: {}\n",
        yaml_list(&demo_cmd())
    );
    let d = project(&yaml, "[mcp.demo]\ntimeout_ms = 200\n");
    let session = Session::start(load(&ConfigPaths::new(d.path())).unwrap())
        .await
        .unwrap();
    let e = session
        .call("mcp.demo.slow", args(json!({"ms": 5000})))
        .await
        .unwrap_err();
    match &e {
        Error::Timeout {
            server, timeout, ..
        } => {
            assert_eq!(server, "demo");
            assert_eq!(timeout.as_millis(), 200);
        }
        other => panic!("not a timeout: {other}"),
    }
    assert!(e.to_string().contains("timed out after 200 ms"), "{e}");
    session.shutdown().await;
}

#[tokio::test]
async fn a_call_reporting_progress_resets_its_timeout_until_the_cap() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let yaml = format!(
        "mcp:\n  everything:\n    transport: stdio\n    command: {}\n",
        yaml_list(&cmd)
    );
    // 3 s of work with progress every 0.5 s, against a 1.2 s timeout.
    let d = project(&yaml, "[mcp.everything]\ntimeout_ms = 1200\n");
    let session = Session::start(load(&ConfigPaths::new(d.path())).unwrap())
        .await
        .unwrap();
    let work = || args(json!({"duration": 3, "steps": 6}));
    let e = session
        .call("mcp.everything.trigger-long-running-operation", work())
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "without progress: {e}");

    let handle = kaged_mcp_layers::timeout::ProgressHandle::new();
    let r = session
        .call_with_progress(
            None,
            "mcp.everything.trigger-long-running-operation",
            work(),
            handle.clone(),
        )
        .await
        .unwrap();
    assert!(!r.is_error, "{r:?}");
    assert!(
        handle.notifications() >= 5,
        "{} notifications",
        handle.notifications()
    );
    session.shutdown().await;
}

/// `config.toml` `max_in_flight` bounds the calls of one server running at once, and the rest
/// wait their turn: era_server over Streamable HTTP serves each request on a thread and counts
/// the `hold` calls running at once. Six concurrent calls all succeed; with `max_in_flight = 2`
/// at most two ran at once (exactly two: they overlap), with the default (64) more than two.
#[tokio::test]
async fn max_in_flight_bounds_the_calls_running_at_once_and_the_rest_wait() {
    for limit in [Some(2), None] {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join("stats.json");
        let peer = common::peers::SsePeer::start_reporting_port(&peers::era_server_http(
            "modern-only",
            &["--stats-file", stats.to_str().unwrap()],
        ))
        .unwrap();
        let project = format!(
            "mcp:\n  srv:\n    transport: streamable-http\n    url: {}\n",
            peer.mcp_url()
        );
        let daemon = limit.map_or(String::new(), |n| format!("[mcp]\nmax_in_flight = {n}\n"));
        let config = kaged_mcp::config::Sources::new(project)
            .config(daemon)
            .load()
            .unwrap();
        let session = Session::start(config).await.unwrap();
        let calls = (0..6).map(|_| session.call("mcp.srv.hold", args(json!({"ms": 400}))));
        for answer in futures::future::join_all(calls).await {
            let answer = answer.unwrap_or_else(|e| panic!("{limit:?}: {e}\n{}", peer.stderr()));
            assert_eq!(answer.joined_text(), "held 400 ms");
        }
        let seen: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        let most = seen["holds_most"].as_u64().unwrap();
        match limit {
            Some(n) => assert_eq!(most, n, "{seen}"),
            None => assert!(most > 2, "the default limit held calls back: {seen}"),
        }
        session.shutdown().await;
    }
}

#[tokio::test]
async fn a_server_that_failed_its_start_is_tried_again_when_its_tool_is_asked_for() {
    // The first start exits before initialize; every later one is the demo server.
    let marker = tempfile::tempdir().unwrap();
    let seen = marker.path().join("started-once");
    let demo = demo_cmd();
    let script = format!(
        "if [ -f '{seen}' ]; then exec '{program}' demo-server; else touch '{seen}'; exit 1; fi",
        seen = seen.display(),
        program = demo[0],
    );
    let yaml = format!(
        "mcp:\n  flaky:\n    transport: stdio\n    command: {}\n",
        yaml_list(&["sh".to_owned(), "-c".to_owned(), script])
    );
    // One spawn a start (no era probe before `initialize`).
    let d = project(&yaml, "[mcp.flaky]\nera = \"legacy\"\n");
    let session = Session::start(load(&ConfigPaths::new(d.path())).unwrap())
        .await
        .unwrap();
    assert_eq!(session.status()[0].state, "restarting");
    let e = session
        .call("mcp.flaky.echo", args(json!({"message": "x"})))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::ServerNotReady { .. }), "{e}");
    // The call started it again in the background, after the backoff: its tools come back.
    let mut names = Vec::new();
    for _ in 0..200 {
        names = session.catalog().into_iter().map(|t| t.name).collect();
        if !names.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(names.contains(&"mcp.flaky.echo".to_owned()), "{names:?}");
    let st = &session.status()[0];
    // Ready, the failure still counted until the new process proves stable (it answers a
    // call or lives `stable_after`): one that dies at once keeps counting towards `failed`.
    assert_eq!(
        (st.state.as_str(), st.consecutive_failures),
        ("ready", 1),
        "{st:?}"
    );
    let r = session
        .call("mcp.flaky.echo", args(json!({"message": "back"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "Echo: back");
    assert!(session.start_failures().is_empty());
    session.shutdown().await;
}

/// A program that is not an MCP server (it prints a line on stdout and waits) fails its start
/// naming what it wrote and that stdout carries JSON-RPC only, instead of blaming the startup
/// timeout alone (issue 36, point 5: the line showed only with `-v`).
#[tokio::test]
async fn a_program_that_is_not_an_mcp_server_is_told_by_what_it_wrote() {
    let script = "print('hello, I am not MCP', flush=True)\nimport time\ntime.sleep(60)\n";
    // A program that prints a credential: it is not repeated in the operator's line.
    let leaky =
        "print('token ntn_0123456789abcdefghij', flush=True)\nimport time\ntime.sleep(60)\n";
    let yaml = format!(
        "mcp:\n  notmcp:\n    transport: stdio\n    command: {}\n  leaky:\n    transport: stdio\n    command: {}\n",
        yaml_list(&["python3".into(), "-c".into(), script.into()]),
        yaml_list(&["python3".into(), "-c".into(), leaky.into()])
    );
    let config = kaged_mcp::config::Sources::new(yaml)
        .config("[mcp]\nstartup_timeout_ms = 2000\n")
        .load()
        .unwrap();
    let session = Session::start(config).await.unwrap();
    let failures = session.start_failures();
    assert_eq!(failures.len(), 2, "{failures:?}");
    let leaked = failures.iter().find(|f| f.server == "leaky").unwrap();
    assert!(
        leaked.reason.contains("it wrote `token ***` on stdout")
            && !leaked.detail.contains("ntn_0123456789"),
        "{leaked:?}"
    );
    let reason = &failures
        .iter()
        .find(|f| f.server == "notmcp")
        .unwrap()
        .reason;
    assert!(
        reason.contains("it wrote `hello, I am not MCP` on stdout")
            && reason.contains("JSON-RPC messages only"),
        "{reason}"
    );
    session.shutdown().await;
}
