//! The era remembered between runs (`$XDG_STATE_HOME/kaged-mcp/eras`): a legacy server is
//! probed with `server/discover` at its first start only, afresh when its command changes, and
//! forgotten when a start fails for a reason about the era. Each test watches the server's
//! side: what its stderr says, run after run.

use std::path::Path;

use common::cli::{project, run_env, Out};
use common::peers::{self, PyMcp};

use crate::common;

/// `kaged-mcp <args>` in `dir`, remembering eras under `state`.
fn run_in(args: &[&str], dir: &Path, state: &Path) -> Out {
    run_env(args, dir, &[("XDG_STATE_HOME", state.to_str().unwrap())])
}

/// The files of the era memory under `state`.
fn remembered(state: &Path) -> Vec<String> {
    match std::fs::read_dir(state.join("kaged-mcp").join("eras")) {
        Ok(dir) => dir
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// `words` quoted for `sh`.
fn quoted(words: &[String]) -> String {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    quoted.join(" ")
}

/// A stdio server run as `sh -c 'exec <command> 2>>"$SERVER_LOG"' <name>` (`command` already
/// quoted for `sh`), so its stderr accumulates in the file the environment names (a value: not
/// part of what identifies the server).
fn logged_server(command: &str, name: &str, log: &Path, extra_env: &str) -> String {
    let script = format!("exec {command} 2>>\"$SERVER_LOG\"");
    format!(
        "mcp:\n  py:\n    transport: stdio\n    command: {}\n    env:\n      SERVER_LOG: {}\n{extra_env}",
        serde_json::to_string(&["sh", "-c", &script, name]).unwrap(),
        serde_json::to_string(log.to_str().unwrap()).unwrap(),
    )
}

/// What the PyPI `mcp` 1.30 SDK writes on its stderr for a request it cannot validate (the
/// era probe), each time.
const PROBE_COMPLAINT: &str = "Failed to validate request";

#[test]
fn a_legacy_python_server_is_probed_once_then_again_when_its_command_changes() {
    let Some(cmd) = peers::require(
        peers::python_server(PyMcp::V1, peers::PyMode::Stdio),
        "python mcp 1.30.0",
    ) else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let log = state.path().join("server.log");
    let complaints = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches(PROBE_COMPLAINT)
            .count()
    };
    let cmd = quoted(&cmd);
    let d = project(&logged_server(&cmd, "py-a", &log, ""), "");
    let call = ["call", "mcp.py.echo", "--arg", "message=hi"];

    let o = run_in(&call, d.path(), state.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "Echo: hi");
    assert_eq!(complaints(), 1, "the first start probes");
    assert_eq!(remembered(state.path()), ["legacy\n"]);

    // The second run goes straight to `initialize`: the server sees no probe.
    let o = run_in(&call, d.path(), state.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "Echo: hi");
    assert_eq!(complaints(), 1, "the second start does not probe");

    // Another command is another server: probed, and remembered beside the first.
    std::fs::write(
        d.path().join("project.yaml"),
        logged_server(&cmd, "py-b", &log, ""),
    )
    .unwrap();
    let o = run_in(&call, d.path(), state.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(complaints(), 2, "a changed command is probed again");
    assert_eq!(remembered(state.path()), ["legacy\n", "legacy\n"]);

    // `era` in local.toml overrides the memory: forced modern, the probe is sent (and fails).
    std::fs::write(d.path().join("local.toml"), "[mcp.py]\nera = \"modern\"\n").unwrap();
    let o = run_in(&call, d.path(), state.path());
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert_eq!(
        complaints(),
        3,
        "era = \"modern\" probes whatever is remembered"
    );
    assert_eq!(
        remembered(state.path()).len(),
        2,
        "and leaves the memory alone"
    );
}

#[test]
fn a_remembered_era_the_server_refuses_is_forgotten_and_the_same_start_probes() {
    if peers::require(Some(()).filter(|()| python3()), "python3").is_none() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let log = state.path().join("server.log");
    // The server's mode is an environment value, so switching it keeps the server's identity:
    // the operator upgraded the server behind the same command.
    let script = peers::server_script("era_server.py");
    let cmd = format!(
        "{} --mode \"$MODE\"",
        quoted(&[
            "python3".into(),
            script.to_str().unwrap().into(),
            "stdio".into()
        ])
    );
    let yaml = |mode: &str| logged_server(&cmd, "era", &log, &format!("      MODE: {mode}\n"));
    let d = project(&yaml("exit-before-init"), "");
    let call = ["call", "mcp.py.echo", "--arg", "message=hi", "-vv"];

    // A legacy server that exits on the probe: found legacy, remembered.
    let o = run_in(&call, d.path(), state.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "Echo: hi");
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        log_text().matches("arrived before initialize").count(),
        1,
        "{}",
        log_text()
    );
    assert_eq!(remembered(state.path()), ["legacy\n"]);

    // Upgraded to a modern-only server: the remembered `initialize` is refused (a failure
    // about the era), the memory is forgotten and the same start probes: the call succeeds.
    std::fs::write(d.path().join("project.yaml"), yaml("modern-only")).unwrap();
    let o = run_in(&call, d.path(), state.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "Echo: hi");
    assert!(
        o.stderr
            .contains("the remembered legacy era was refused: forgotten, the server is probed"),
        "{}",
        o.stderr
    );
    // The server's side: the first process was asked `initialize` (and refused it), the
    // second `server/discover`.
    let stats: Vec<serde_json::Value> = log_text()
        .lines()
        .filter_map(|l| l.strip_prefix("STATS "))
        .map(|s| serde_json::from_str(s).unwrap())
        .filter(|s: &serde_json::Value| s["mode"] == "modern-only")
        .collect();
    assert!(
        stats
            .iter()
            .any(|s| s["requests"]["initialize"] == 1 && s["errors"]["-32601"] == 1),
        "{stats:?}"
    );
    assert!(
        stats.iter().any(|s| s["requests"]["server/discover"] == 1),
        "{stats:?}"
    );
    assert!(
        remembered(state.path()).is_empty(),
        "a modern server is not remembered"
    );
}

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
