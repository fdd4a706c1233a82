//! Lifecycle edges through the built `kaged-mcp` binary (issue 14): a call that times out has
//! its `notifications/cancelled` delivered before the process exits, and a call to a tool of a
//! server that is not ready says so.

mod common;

use std::process::Command;

use common::peers::{self, Fault};

fn project(yaml: &str, local: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("project.yaml"), yaml).unwrap();
    std::fs::write(d.path().join("local.toml"), local).unwrap();
    d
}

fn kaged(args: &[&str], dir: &tempfile::TempDir) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kaged-mcp"))
        .args(&args[..1])
        .arg("--project")
        .arg(dir.path())
        .args(&args[1..])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
