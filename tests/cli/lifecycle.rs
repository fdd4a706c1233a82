//! Lifecycle edges through the built `kaged-mcp` binary (issue 14): a call that times out has
//! its `notifications/cancelled` delivered before the process exits, and a call to a tool of a
//! server that is not ready says so.

use std::process::Command;

use common::cli::OutputBounded;
use common::peers::{self, Fault};

use crate::common;

fn project(yaml: &str, local: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("project.yaml"), yaml).unwrap();
    std::fs::write(d.path().join("local.toml"), local).unwrap();
    d
}

fn kaged(args: &[&str], dir: &tempfile::TempDir) -> (Option<i32>, String, String) {
    let o = common::cli::run(args, dir.path());
    (o.code, o.stdout, o.stderr)
}

#[test]
fn a_call_that_times_out_is_cancelled_on_the_wire_before_the_cli_exits() {
    let log = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let command = serde_json::to_string(&peers::faulty(Fault::NeverAnswer)).unwrap();
    let log_path = serde_json::to_string(&log.to_str().unwrap()).unwrap();
    let d = project(
        &format!(
            "mcp:\n  silent:\n    transport: stdio\n    command: {command}\n    env: {{ KAGED_REQUEST_LOG: {log_path} }}\n"
        ),
        "[mcp.silent]\ntimeout_ms = 500\n",
    );
    let (code, out, err) = kaged(
        &["call", "mcp.silent.echo", "--args", r#"{"message": "x"}"#],
        &d,
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("timed out after 500 ms"), "{err}");
    let entries = peers::read_request_log(&log);
    let call = entries
        .iter()
        .find(|e| e["method"] == "tools/call")
        .unwrap_or_else(|| panic!("{entries:?}"));
    let cancelled = entries
        .iter()
        .find(|e| e["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {entries:?}"));
    assert_eq!(cancelled["requestId"], call["id"], "{entries:?}");
}

#[test]
fn a_call_to_a_tool_of_a_server_that_is_not_ready_says_so() {
    let command = serde_json::to_string(&peers::faulty(Fault::ExitBeforeInit)).unwrap();
    let d = project(
        &format!("mcp:\n  broken:\n    transport: stdio\n    command: {command}\n"),
        "",
    );
    let (code, out, err) = kaged(
        &["call", "mcp.broken.echo", "--args", r#"{"message": "x"}"#],
        &d,
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("error: server `broken` is not ready (failed): ")
            && err.contains("exiting with code 1 before initialize"),
        "{err}"
    );
    assert!(
        !err.contains("UnknownTool") && !err.contains("unknown tool"),
        "{err}"
    );
}

#[test]
fn the_quickstart_example_runs_its_demo_server_without_a_nested_cargo() {
    let Some(exe) = peers::require(
        peers::example("quickstart"),
        "the quickstart example (cargo build --example quickstart; .ci/install-peers builds it)",
    ) else {
        return;
    };
    let out = Command::new(exe)
        // A PATH without cargo: the example must not need it.
        .env("PATH", "/nonexistent")
        .output_bounded();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("mcp.demo.echo -> Echo: hello from kaged"),
        "{stdout}"
    );
}

#[test]
fn status_says_one_tool_not_one_tools() {
    let command = serde_json::to_string(&peers::faulty(Fault::Ok)).unwrap();
    let d = project(
        &format!("mcp:\n  single:\n    transport: stdio\n    command: {command}\n"),
        "",
    );
    let (code, out, err) = kaged(&["status"], &d);
    assert_eq!(code, Some(0), "{err}");
    // The last column is the era and version the server speaks (faulty.py is legacy-only).
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, "single\tready\t1 tool\tlegacy 2025-11-25", "{out}");
}

#[test]
fn status_counts_calls_errors_failures_timeouts_restarts_and_latency() {
    let demo = serde_json::to_string(&[env!("CARGO_BIN_EXE_kaged-mcp"), "demo-server"]).unwrap();
    let d = project(
        &format!("mcp:\n  demo:\n    transport: stdio\n    command: {demo}\n"),
        // Validation off: the bad `add` must reach the server to come back as its tool error.
        "[mcp.demo]\ntimeout_ms = 3000\nvalidate = \"off\"\n",
    );
    let script = [
        r#"call mcp.demo.echo {"message": "a"}"#,
        r#"call mcp.demo.echo {"message": "b"}"#,
        r#"call mcp.demo.add {"a": "not a number"}"#, // a tool error
        r#"call mcp.demo.slow {"ms": 3500}"#,         // a timeout
        r#"call mcp.demo.crash {}"#,                  // a failure: the server exits
        r#"call mcp.demo.echo {"message": "c"}"#,     // waits for the restart
        "status",
        "quit",
    ];
    let out = common::cli::shell(d.path(), &["--json"], &script);
    let stdout = out.stdout;
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 7, "{stdout}");
    assert!(
        lines[5].contains("Echo: c"),
        "the call after the crash waited: {stdout}"
    );
    let status: serde_json::Value = serde_json::from_str(lines[6]).unwrap();
    let s = &status[0];
    assert_eq!(
        (
            &s["calls"],
            &s["tool_errors"],
            &s["timeouts"],
            &s["failed_calls"],
            &s["restarts"]
        ),
        (
            &serde_json::json!(6),
            &serde_json::json!(1),
            &serde_json::json!(1),
            &serde_json::json!(1),
            &serde_json::json!(1)
        ),
        "{s}"
    );
    let (p50, p99) = (s["p50_ms"].as_f64().unwrap(), s["p99_ms"].as_f64().unwrap());
    assert!(p50 > 0.0 && p50 <= p99 && p99 >= 3000.0, "{s}");
}
