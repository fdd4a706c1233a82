//! The 2026-07-28 revision: era negotiation against every peer, over stdio and Streamable HTTP,
//! through the whole session and stack (a project, a `local.toml` with `era`, `Session::start`,
//! the catalog, `Session::call`).
//!
//! - `auto` ends in the newest era both sides speak: modern with PyPI `mcp` 2.3.0 (dual-era),
//!   rmcp 3.11 and a modern-only server of our own; legacy with `mcp` 1.30.0, the everything
//!   server, and our legacy servers that exit on (or ignore) a request before `initialize`.
//! - `modern` works against 2.3.0 and fails clearly against a legacy server; `legacy` never
//!   probes.
//! - a modern request carries the three `_meta` entries (and over HTTP the mirrored headers),
//!   checked by the server itself (`whoami`).
//!
//! Each test prints how long the session took to start, in each era, for the closing note's
//! probe-cost figures (never asserted). Missing peers skip the test, or fail it when `CI` is
//! set.

use std::time::{Duration, Instant};

use kaged_mcp::config::Sources;
use kaged_mcp::{Session, SessionOptions};
use peers::{PyMcp, PyMode, SsePeer};
use serde_json::{json, Map, Value};

use crate::common::peers;

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

fn stdio_project(cmd: &[String]) -> String {
    format!(
        "mcp:\n  srv:\n    transport: stdio\n    command: {}\n",
        serde_json::to_string(cmd).unwrap()
    )
}

fn http_project(url: &str) -> String {
    format!("mcp:\n  srv:\n    transport: streamable-http\n    url: {url}\n")
}

/// A session on the one server `s` of `project`, with `era` in `local.toml`; and how long
/// `Session::start` took.
async fn start(project: String, era: &str, options: SessionOptions) -> (Session, Duration) {
    let config = Sources::new(project)
        .local(format!("[mcp.srv]\nera = \"{era}\"\n"))
        .config("[mcp]\nstartup_timeout_ms = 40000\n")
        .load()
        .unwrap();
    let started = Instant::now();
    let session = Session::start_with(config, options).await.unwrap();
    (session, started.elapsed())
}

/// The server is ready in `era` speaking `version`, was never restarted, lists `echo` and
/// answers it through the stack.
async fn check(session: &Session, era: &str, version: &str, who: &str) {
    let st = &session.status()[0];
    assert_eq!(st.state, "ready", "{who}: {st:?}");
    assert_eq!(st.era, Some(era), "{who}: {st:?}");
    assert_eq!(
        st.protocol_version.as_deref(),
        Some(version),
        "{who}: {st:?}"
    );
    assert_eq!(st.restarts, 0, "{who}: {st:?}");
    let names: Vec<String> = session.catalog().into_iter().map(|t| t.name).collect();
    assert!(
        names.iter().any(|n| n == "mcp.srv.echo"),
        "{who}: {names:?}"
    );
    let echo = session
        .call("mcp.srv.echo", args(json!({"message": "héllo"})))
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(echo.joined_text(), "Echo: héllo", "{who}");
}

/// Starts the stdio server `cmd` in `era`, checks it, and prints the start time.
async fn stdio_case(cmd: &[String], era: &str, want: (&str, &str), who: &str) {
    let (session, took) = start(stdio_project(cmd), era, SessionOptions::default()).await;
    check(&session, want.0, want.1, who).await;
    eprintln!(
        "START stdio {who} era={era}: {} ms -> {} {}",
        took.as_millis(),
        want.0,
        want.1
    );
    session.shutdown().await;
}

/// Starts the Streamable HTTP server at `url` in `era`, checks it, and prints the start time.
async fn http_case(url: &str, era: &str, want: (&str, &str), who: &str) {
    let (session, took) = start(http_project(url), era, SessionOptions::default()).await;
    check(&session, want.0, want.1, who).await;
    eprintln!(
        "START http {who} era={era}: {} ms -> {} {}",
        took.as_millis(),
        want.0,
        want.1
    );
    session.shutdown().await;
}

const MODERN: (&str, &str) = ("modern", "2026-07-28");
const LEGACY: (&str, &str) = ("legacy", "2025-11-25");

// --- stdio ------------------------------------------------------------------------------------

#[tokio::test]
async fn stdio_auto_reaches_the_newest_common_era_with_every_peer() {
    let py2 = peers::require(
        peers::python_server(PyMcp::V2, PyMode::Stdio),
        &PyMcp::V2.name(),
    );
    let py1 = peers::require(
        peers::python_server(PyMcp::V1, PyMode::Stdio),
        &PyMcp::V1.name(),
    );
    let everything = peers::require(peers::everything_stdio(), "server-everything");
    let rmcp = peers::require(peers::rmcp_server(), "rmcp_server");
    if let Some(cmd) = py2 {
        stdio_case(&cmd, "auto", MODERN, "mcp 2.3.0").await;
        stdio_case(&cmd, "legacy", LEGACY, "mcp 2.3.0").await;
    }
    if let Some(cmd) = py1 {
        stdio_case(&cmd, "auto", LEGACY, "mcp 1.30.0").await;
        stdio_case(&cmd, "legacy", LEGACY, "mcp 1.30.0").await;
    }
    if let Some(cmd) = everything {
        stdio_case(&cmd, "auto", LEGACY, "server-everything").await;
        stdio_case(&cmd, "legacy", LEGACY, "server-everything").await;
    }
    if let Some(cmd) = rmcp {
        stdio_case(&cmd, "auto", MODERN, "rmcp 3.11").await;
        stdio_case(&cmd, "legacy", LEGACY, "rmcp 3.11").await;
    }
}

#[tokio::test]
async fn stdio_auto_survives_a_legacy_server_that_exits_on_the_probe() {
    let cmd = peers::era_server_stdio("exit-before-init", &[]);
    // Ready in the legacy era, restarts 0: the exit on server/discover is no crash.
    stdio_case(&cmd, "auto", LEGACY, "exit-before-init").await;
}

#[tokio::test]
async fn stdio_auto_falls_back_when_the_probe_gets_no_answer() {
    let cmd = peers::era_server_stdio("silent-before-init", &[]);
    let project = stdio_project(&cmd);
    // The default probe timeout is 10 s; local.toml's probe_timeout_ms shortens it to 1.5 s,
    // within a start-up timeout of 6 s that the default would overrun (the server then fails).
    let config = Sources::new(project)
        .local("[mcp.srv]\nera = \"auto\"\nprobe_timeout_ms = 1500\n")
        .config("[mcp]\nstartup_timeout_ms = 6000\n")
        .load()
        .unwrap();
    let started = Instant::now();
    let session = Session::start(config).await.unwrap();
    let elapsed = started.elapsed();
    check(&session, "legacy", "2025-11-25", "silent-before-init").await;
    eprintln!(
        "START stdio silent-before-init era=auto (probe timeout 1.5 s): {} ms",
        elapsed.as_millis()
    );
    session.shutdown().await;
}

/// A legacy HTTP server that answers the probe `202 Accepted` with no body (era_server
/// `silent-before-init` over HTTP) is a legacy one: `initialize` follows, no failed start.
#[tokio::test]
async fn http_auto_takes_a_probe_answered_202_for_a_legacy_server() {
    let peer =
        SsePeer::start_reporting_port(&peers::era_server_http("silent-before-init", &[])).unwrap();
    let (session, _) = start(
        http_project(&peer.mcp_url()),
        "auto",
        SessionOptions::default(),
    )
    .await;
    check(&session, "legacy", "2025-11-25", "http silent-before-init").await;
    session.shutdown().await;
}

#[tokio::test]
async fn stdio_modern_only_server_is_spoken_to_in_the_modern_era() {
    let cmd = peers::era_server_stdio("modern-only", &[]);
    stdio_case(&cmd, "auto", MODERN, "era_server modern-only").await;
    stdio_case(&cmd, "modern", MODERN, "era_server modern-only").await;
    // A legacy client has no way to reach it: the start fails, naming what the server said.
    let (session, _) = start(stdio_project(&cmd), "legacy", SessionOptions::default()).await;
    let st = &session.status()[0];
    assert_eq!(st.state, "failed", "{st:?}");
    let error = st.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("initialize is not supported"), "{error}");
    session.shutdown().await;
}

#[tokio::test]
async fn stdio_modern_against_2_3_0_and_against_a_legacy_server() {
    if let Some(cmd) = peers::require(
        peers::python_server(PyMcp::V2, PyMode::Stdio),
        &PyMcp::V2.name(),
    ) {
        stdio_case(&cmd, "modern", MODERN, "mcp 2.3.0").await;
    }
    if let Some(cmd) = peers::require(
        peers::python_server(PyMcp::V1, PyMode::Stdio),
        &PyMcp::V1.name(),
    ) {
        let (session, _) = start(stdio_project(&cmd), "modern", SessionOptions::default()).await;
        let st = &session.status()[0];
        assert_eq!(st.state, "failed", "{st:?}");
        let error = st.last_error.as_deref().unwrap_or_default();
        assert!(
            error.contains("era = \"modern\"") && error.contains("server/discover"),
            "{error}"
        );
        session.shutdown().await;
    }
}

#[tokio::test]
async fn stdio_modern_requests_carry_the_meta_entries() {
    let cmd = peers::era_server_stdio("modern-only", &[]);
    let (session, _) = start(stdio_project(&cmd), "auto", SessionOptions::default()).await;
    let who = session.call("mcp.srv.whoami", None).await.unwrap();
    let seen: Value = serde_json::from_str(&who.joined_text()).unwrap();
    let meta = &seen["meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    // The tasks extension is declared unless `tasks = "off"` (issue 23), the skills extension
    // always (issue 49).
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {}}})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "kaged-mcp"
    );
    session.shutdown().await;
}

// --- Streamable HTTP --------------------------------------------------------------------------

async fn python_http(version: PyMcp, stateless: bool, era: &str, want: (&str, &str)) {
    let port = peers::free_port();
    let mode = PyMode::StreamableHttp {
        port,
        stateless,
        json: stateless,
    };
    let who = format!("{} stateless={stateless}", version.name());
    let Some(cmd) = peers::require(peers::python_server(version, mode), &version.name()) else {
        return;
    };
    let peer = SsePeer::start(&cmd, &[], port).unwrap_or_else(|e| panic!("{who}: {e}"));
    http_case(&peer.mcp_url(), era, want, &who).await;
}

#[tokio::test]
async fn http_auto_reaches_the_newest_common_era_with_every_peer() {
    for stateless in [false, true] {
        python_http(PyMcp::V2, stateless, "auto", MODERN).await;
        python_http(PyMcp::V1, stateless, "auto", LEGACY).await;
    }
    let port = peers::free_port();
    if let Some((cmd, env)) = peers::require(peers::everything_http(port), "server-everything") {
        let peer = SsePeer::start(&cmd, &env, port).unwrap();
        http_case(&peer.mcp_url(), "auto", LEGACY, "server-everything").await;
    }
    for stateless in [false, true] {
        if let Some(cmd) = peers::require(
            peers::rmcp_http_server(stateless, stateless),
            "rmcp_http_server",
        ) {
            let peer = SsePeer::start_reporting_port(&cmd).unwrap();
            let who = format!("rmcp 3.11 stateless={stateless}");
            http_case(&peer.mcp_url(), "auto", MODERN, &who).await;
        }
    }
    let peer = SsePeer::start_reporting_port(&peers::era_server_http("modern-only", &[])).unwrap();
    http_case(&peer.mcp_url(), "auto", MODERN, "era_server modern-only").await;
}

#[tokio::test]
async fn http_modern_against_2_3_0_and_legacy_never_probes() {
    python_http(PyMcp::V2, false, "modern", MODERN).await;
    python_http(PyMcp::V2, true, "modern", MODERN).await;
    python_http(PyMcp::V2, false, "legacy", LEGACY).await;
}

#[tokio::test]
async fn http_modern_requests_carry_meta_and_the_mirrored_headers() {
    let peer = SsePeer::start_reporting_port(&peers::era_server_http("modern-only", &[])).unwrap();
    let (session, _) = start(
        http_project(&peer.mcp_url()),
        "modern",
        SessionOptions::default(),
    )
    .await;
    let who = session
        .call("mcp.srv.whoami", None)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", peer.stderr()));
    let seen: Value = serde_json::from_str(&who.joined_text()).unwrap();
    assert_eq!(
        seen["meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(seen["headers"]["mcp-protocol-version"], "2026-07-28");
    assert_eq!(seen["headers"]["mcp-method"], "tools/call");
    assert_eq!(seen["headers"]["mcp-name"], "whoami");
    assert!(seen["headers"].get("mcp-session-id").is_none(), "{seen}");
    session.shutdown().await;
}

/// Over Streamable HTTP a modern request's answer comes only on its own response: one answered
/// `202 Accepted` with no body (era_server `no_answer`), or whose event stream ends before the
/// answer after an event with an id (`cut_stream`), fails at once naming what happened, not at
/// its timeout and with no `GET` resuming the stream (2026-07-28 has neither); the session goes
/// on.
#[tokio::test]
async fn http_a_modern_request_without_its_answer_fails_at_once_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let peer = SsePeer::start_reporting_port(&peers::era_server_http(
        "modern-only",
        &["--stats-file", stats.to_str().unwrap()],
    ))
    .unwrap();
    let config = Sources::new(http_project(&peer.mcp_url()))
        .local("[mcp.srv]\nera = \"modern\"\ntimeout_ms = 60000\n".to_owned())
        .load()
        .unwrap();
    let session = Session::start(config).await.unwrap();
    for (tool, want) in [
        ("no_answer", "answered `202 Accepted` with no answer"),
        (
            "cut_stream",
            "the response stream ended before the answer (2026-07-28 streams are not resumed)",
        ),
    ] {
        let error = session
            .call(&format!("mcp.srv.{tool}"), None)
            .await
            .expect_err("no answer came")
            .to_string();
        assert!(
            error.contains(want) && !error.contains("timed out"),
            "{tool}: {error}"
        );
    }
    let echo = session
        .call("mcp.srv.echo", args(json!({"message": "after"})))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", peer.stderr()));
    assert_eq!(echo.joined_text(), "Echo: after");
    let st = &session.status()[0];
    assert_eq!((st.state.as_str(), st.restarts), ("ready", 0), "{st:?}");
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(seen["mcp_gets"], 0, "a GET reached the server: {seen}");
    session.shutdown().await;
}

#[tokio::test]
async fn http_a_server_speaking_only_an_unknown_version_fails_naming_its_versions() {
    let peer = SsePeer::start_reporting_port(&peers::era_server_http(
        "modern-only",
        &["--versions", "2099-01-01"],
    ))
    .unwrap();
    let (session, _) = start(
        http_project(&peer.mcp_url()),
        "auto",
        SessionOptions::default(),
    )
    .await;
    let st = &session.status()[0];
    assert_eq!(st.state, "failed", "{st:?}");
    let error = st.last_error.as_deref().unwrap_or_default();
    assert!(
        error.contains("speaks protocol versions 2099-01-01") && error.contains("2026-07-28"),
        "{error}"
    );
    session.shutdown().await;
}

/// A server that stops speaking 2026-07-28 mid-life (era_server `--legacy-after 1`: after one
/// modern call it answers every modern request -32022 listing only 2025-11-25, and accepts
/// `initialize`): the call it refuses fails with that error, the session ends, and the next
/// call finds the era again and goes through: `then` is what it finds (over stdio the restart
/// is a new process, which speaks 2026-07-28 again; over HTTP the same server, now legacy).
/// Over HTTP the session's `subscriptions/listen` goes out on a POST of its own, beside the
/// first call: should it reach the server after that call switched it, the server refuses it
/// -32022 and the session restarts before the call this case means to be refused. So the first
/// call waits until the server has counted the listen (`stats`, the server's `--stats-file`).
async fn switch_case(
    project: String,
    then: (&str, &str),
    who: &str,
    stats: Option<&std::path::Path>,
) {
    let (session, _) = start(project, "auto", SessionOptions::default()).await;
    if let Some(stats) = stats {
        let listened = || {
            std::fs::read_to_string(stats)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|st| st["requests"]["subscriptions/listen"].as_u64() >= Some(1))
        };
        for _ in 0..200 {
            if listened() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            listened(),
            "{who}: the server never counted subscriptions/listen"
        );
    }
    check(&session, "modern", "2026-07-28", who).await;
    let e = session
        .call("mcp.srv.echo", args(json!({"message": "x"})))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("-32022"), "{who}: {e}");
    let echo = session
        .call("mcp.srv.echo", args(json!({"message": "again"})))
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(echo.joined_text(), "Echo: again", "{who}");
    let st = &session.status()[0];
    assert_eq!(st.era, Some(then.0), "{who}: {st:?}");
    assert_eq!(st.protocol_version.as_deref(), Some(then.1), "{who}");
    assert_eq!(st.restarts, 1, "{who}: {st:?}");
    session.shutdown().await;
}

#[tokio::test]
async fn a_server_that_stops_speaking_2026_07_28_is_probed_again() {
    let cmd = peers::era_server_stdio("modern-only", &["--legacy-after", "1"]);
    switch_case(stdio_project(&cmd), MODERN, "stdio", None).await;
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let peer = SsePeer::start_reporting_port(&peers::era_server_http(
        "modern-only",
        &[
            "--legacy-after",
            "1",
            "--stats-file",
            stats.to_str().unwrap(),
        ],
    ))
    .unwrap();
    switch_case(http_project(&peer.mcp_url()), LEGACY, "http", Some(&stats)).await;
}

/// `x-mcp-header` parameters are mirrored as `Mcp-Param-*` headers, and still are on a new
/// session that did not list the tools again (the map belongs to the client, not the session).
#[tokio::test]
async fn http_annotated_parameters_are_mirrored_also_after_a_restart() {
    use kaged_mcp::client::{ClientOptions, McpClient, ToolCall};
    use tower::ServiceExt;
    let peer = SsePeer::start_reporting_port(&peers::era_server_http("modern-only", &[])).unwrap();
    let config = Sources::new(http_project(&peer.mcp_url())).load().unwrap();
    let server = &config.project.servers[0];
    let transport = kaged_mcp::assemble::transport(&config, server, None, None).unwrap();
    let client = McpClient::new("srv", transport, ClientOptions::default());
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "whoami"));
    let region = |client: McpClient| async move {
        let call = ToolCall::new("whoami").with_json_arguments(json!({"region": "eu west"}));
        let r = client.oneshot(call).await.unwrap();
        let seen: Value = serde_json::from_str(&r.joined_text()).unwrap();
        seen["headers"]["mcp-param-region"].clone()
    };
    assert_eq!(region(client.clone()).await, "eu west");
    client.shutdown().await;
    client.reenable();
    assert_eq!(region(client.clone()).await, "eu west", "after a restart");
    assert_eq!(client.restarts(), 1);
    client.shutdown().await;
}
