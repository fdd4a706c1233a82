//! What issue 36 found operators meet at the end of a command and at its start: SIGINT and
//! SIGTERM cancel what is in flight on the wire and shut the servers down (130 / 143, one
//! line); a one-shot command leaves no server behind, even one that stays after stdin closes;
//! a server that exits at once is reported as an exit whichever way the start races; a
//! one-shot call to server-filesystem sees the roots the project gives it.
//!
//! No durations are asserted: each test waits for the event it needs (a line in a log, a file,
//! the process's end) within a generous bound.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::peers::{self, Fault};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::common;

/// How long a test waits for what should come at once: generous, for a loaded CI machine.
const PATIENCE: Duration = Duration::from_secs(30);

/// Waits until `ready` is true, at most [`PATIENCE`].
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !ready() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` is alive (a zombie counts as gone: it runs nothing).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// A project with one stdio server `srv` running `faulty.py --mode <mode>`, its request log and
/// pid file in the project directory.
fn faulty_project(mode: Fault, local: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let command = serde_json::to_string(&peers::faulty(mode)).unwrap();
    let log = serde_json::to_string(dir.path().join("requests.jsonl").to_str().unwrap()).unwrap();
    let pid = serde_json::to_string(dir.path().join("pid").to_str().unwrap()).unwrap();
    std::fs::write(
        dir.path().join("project.yaml"),
        format!(
            "mcp:\n  srv:\n    transport: stdio\n    command: {command}\n    env: {{ KAGED_REQUEST_LOG: {log}, KAGED_PID_FILE: {pid} }}\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("local.toml"), local).unwrap();
    dir
}

fn server_pid(dir: &Path) -> i32 {
    let path = dir.join("pid");
    wait_until("the server's pid file", || {
        std::fs::read_to_string(&path).is_ok_and(|t| !t.trim().is_empty())
    });
    std::fs::read_to_string(&path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn spawn(args: &[&str], dir: &Path) -> Child {
    common::cli::kaged()
        .args(&args[..1])
        .arg("--project")
        .arg(dir)
        .args(&args[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends `signal` to the running `kaged-mcp` once the server logged a `tools/call`, and returns
/// its exit code, stderr and the server's request log.
fn interrupt_a_call(
    child: Child,
    dir: &Path,
    signal: Signal,
) -> (Option<i32>, String, Vec<serde_json::Value>, i32) {
    let log = dir.join("requests.jsonl");
    wait_until("the tools/call at the server", || {
        peers::read_request_log(&log)
            .iter()
            .any(|e| e["method"] == "tools/call")
    });
    let pid = server_pid(dir);
    kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), signal).unwrap();
    let out = wait_bounded(child);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status.code(),
        stderr,
        peers::read_request_log(&log),
        pid,
    )
}

fn assert_cancelled_and_gone(
    code: Option<i32>,
    expected: i32,
    stderr: &str,
    name: &str,
    log: &[serde_json::Value],
    pid: i32,
) {
    assert_eq!(code, Some(expected), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("interrupted"))
        .collect();
    assert_eq!(lines.len(), 1, "one line says so: {stderr}");
    assert!(lines[0].contains(name), "{stderr}");
    let call = log
        .iter()
        .find(|e| e["method"] == "tools/call")
        .unwrap_or_else(|| panic!("{log:?}"));
    let cancelled = log
        .iter()
        .find(|e| e["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {log:?}"));
    assert_eq!(cancelled["requestId"], call["id"], "{log:?}");
    assert!(!alive(pid), "the server (pid {pid}) outlived the command");
}

#[test]
fn sigint_during_a_call_cancels_it_on_the_wire_and_exits_130() {
    let dir = faulty_project(Fault::NeverAnswer, "");
    let child = spawn(
        &["call", "mcp.srv.echo", "--args", r#"{"message": "x"}"#],
        dir.path(),
    );
    let (code, stderr, log, pid) = interrupt_a_call(child, dir.path(), Signal::SIGINT);
    assert_cancelled_and_gone(code, 130, &stderr, "SIGINT", &log, pid);
}

#[test]
fn sigterm_during_a_call_cancels_it_on_the_wire_and_exits_143() {
    let dir = faulty_project(Fault::NeverAnswer, "");
    let child = spawn(
        &["call", "mcp.srv.echo", "--args", r#"{"message": "x"}"#],
        dir.path(),
    );
    let (code, stderr, log, pid) = interrupt_a_call(child, dir.path(), Signal::SIGTERM);
    assert_cancelled_and_gone(code, 143, &stderr, "SIGTERM", &log, pid);
}

#[test]
fn sigint_during_a_call_in_the_shell_cancels_it_and_exits_130() {
    let dir = faulty_project(Fault::NeverAnswer, "");
    let mut child = spawn(&["shell"], dir.path());
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"call mcp.srv.echo {\"message\": \"x\"}\n").unwrap();
    // stdin stays open: the shell waits for the call, not for the end of its input.
    let (code, stderr, log, pid) = interrupt_a_call(child, dir.path(), Signal::SIGINT);
    drop(stdin);
    assert_cancelled_and_gone(code, 130, &stderr, "SIGINT", &log, pid);
}

#[test]
fn a_one_shot_call_leaves_no_server_behind_that_stays_after_stdin_closes() {
    let dir = faulty_project(Fault::Linger, "");
    let out = common::cli::run(
        &["call", "mcp.srv.echo", "--args", r#"{"message": "hi"}"#],
        dir.path(),
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout.trim(), "Echo: hi", "{out:?}");
    let pid = server_pid(dir.path());
    assert!(!alive(pid), "the server (pid {pid}) outlived the command");
}

#[test]
fn a_server_that_exits_at_once_among_many_is_reported_as_exited() {
    let dir = tempfile::tempdir().unwrap();
    let ok = serde_json::to_string(&peers::faulty(Fault::Ok)).unwrap();
    let mut yaml = String::from("mcp:\n");
    for i in 0..8 {
        yaml.push_str(&format!(
            "  s{i}:\n    transport: stdio\n    command: {ok}\n"
        ));
    }
    yaml.push_str("  quits:\n    transport: stdio\n    command: [sh, -c, \"exit 0\"]\n");
    std::fs::write(dir.path().join("project.yaml"), yaml).unwrap();
    std::fs::write(dir.path().join("local.toml"), "").unwrap();
    let out = common::cli::run(&["tools"], dir.path());
    assert_eq!(out.code, Some(1), "{out:?}");
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("`quits`"))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        line.contains("exited (exit status: 0)") && !line.contains("could not be queued"),
        "{line}"
    );
}

#[test]
fn a_one_shot_call_to_server_filesystem_sees_the_project_roots() {
    let Some(cmd) = peers::require(peers::filesystem_stdio(), "server-filesystem") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let yaml = format!(
        "mcp:\n  filesystem:\n    transport: stdio\n    command: {}\n    roots: [./data]\n",
        serde_json::to_string(&cmd).unwrap()
    );
    std::fs::write(dir.path().join("project.yaml"), yaml).unwrap();
    std::fs::write(dir.path().join("local.toml"), "").unwrap();
    let root = dir.path().join("data").canonicalize().unwrap();
    // Each one-shot call is a new server: every one must see the root, not only most.
    for _ in 0..5 {
        let out = common::cli::run(
            &["call", "mcp.filesystem.list_allowed_directories"],
            dir.path(),
        );
        assert_eq!(out.code, Some(0), "{out:?}");
        assert_eq!(
            out.stdout.trim(),
            format!("Allowed directories:\n{}", root.display()),
            "{out:?}"
        );
    }
}

/// Every command, not only `call` and `shell`: a `ping` the server never answers is
/// cancelled on the wire when SIGINT comes, the server is shut down and reaped, one line says
/// so, exit 130 (issue 36 point 3, the other commands; until this, their servers were killed
/// as the session dropped, with nothing cancelled).
#[test]
fn sigint_during_any_command_cancels_its_request_on_the_wire() {
    let dir = faulty_project(Fault::NeverAnswer, "");
    let child = spawn(&["ping", "srv", "-c", "1"], dir.path());
    let log = dir.path().join("requests.jsonl");
    wait_until("the ping at the server", || {
        peers::read_request_log(&log)
            .iter()
            .any(|e| e["method"] == "ping")
    });
    let pid = server_pid(dir.path());
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
    let out = wait_bounded(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("interrupted"))
        .collect();
    assert_eq!(lines.len(), 1, "one line says so: {stderr}");
    assert!(
        lines[0].contains("cancelled what was in flight"),
        "{stderr}"
    );
    let log = peers::read_request_log(&log);
    let ping = log.iter().find(|e| e["method"] == "ping").unwrap();
    let cancelled = log
        .iter()
        .find(|e| e["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {log:?}"));
    assert_eq!(cancelled["requestId"], ping["id"], "{log:?}");
    assert!(!alive(pid), "the server (pid {pid}) outlived the command");
}

// ---- tasks over Streamable HTTP (issue 49 point 3) ---------------------------------------------

/// Waits for `child` at most [`PATIENCE`]; a CLI still running then is killed and the test
/// fails (a hung CLI must not stall the suite).
fn wait_bounded(child: Child) -> std::process::Output {
    common::cli::wait_within(child, PATIENCE)
}

/// `tests/servers/tasks_server.py` over Streamable HTTP, and a project whose server `srv` is it,
/// in `era` with `timeout_ms`.
fn http_task_server(era: &str, timeout_ms: u64) -> (peers::SsePeer, tempfile::TempDir) {
    http_task_server_with(era, timeout_ms, &[])
}

/// [`http_task_server`] with `extra` flags for the server.
fn http_task_server_with(
    era: &str,
    timeout_ms: u64,
    extra: &[&str],
) -> (peers::SsePeer, tempfile::TempDir) {
    let script = peers::server_script("tasks_server.py");
    let mut cmd: Vec<String> = vec![
        "python3".into(),
        script.to_string_lossy().into_owned(),
        "http".into(),
        "--port".into(),
        "0".into(),
    ];
    cmd.extend(extra.iter().map(|s| (*s).to_owned()));
    let peer = peers::SsePeer::start_reporting_port(&cmd).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("project.yaml"),
        format!(
            "mcp:\n  srv:\n    transport: streamable-http\n    url: {}\n",
            peer.mcp_url()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("local.toml"),
        format!("[mcp.srv]\nera = \"{era}\"\ntimeout_ms = {timeout_ms}\n"),
    )
    .unwrap();
    (peer, dir)
}

/// The server's log lines (`tasks_server: <era> <method> id=…`, `tasks_server: DELETE session`).
fn server_lines(peer: &peers::SsePeer) -> Vec<String> {
    peer.stderr()
        .lines()
        .filter_map(|l| l.strip_prefix("tasks_server: ").map(str::to_owned))
        .collect()
}

/// The server logged `tasks/cancel` in `era` and, in a 2025-11-25 session (which has a session
/// id), `DELETE` after it; a 2026-07-28 one has no session to delete.
fn assert_cancel_then_delete(peer: &peers::SsePeer, era: &str) {
    let wire = if era == "legacy" { "legacy" } else { "modern" };
    let lines = server_lines(peer);
    let cancel = lines
        .iter()
        .position(|l| l.starts_with(&format!("{wire} tasks/cancel")))
        .unwrap_or_else(|| panic!("no tasks/cancel reached the server: {lines:#?}"));
    let delete = lines.iter().position(|l| l == "DELETE session");
    if era == "legacy" {
        let delete = delete.unwrap_or_else(|| panic!("no DELETE reached the server: {lines:#?}"));
        assert!(
            cancel < delete,
            "tasks/cancel before the DELETE: {lines:#?}"
        );
    } else {
        assert_eq!(delete, None, "{lines:#?}");
    }
}

/// SIGINT while `call` follows a task over Streamable HTTP: `tasks/cancel` reaches the server,
/// then (2025-11-25) `DELETE`; exit 130, one line. (Before issue 49 the connection was closed
/// with the `tasks/cancel` POST not yet sent: the task ran on.)
fn sigint_cancels_a_task_over_http(era: &str) {
    let (peer, dir) = http_task_server(era, 60_000);
    let child = spawn(&["call", "mcp.srv.never_ends"], dir.path());
    wait_until("the task being polled", || {
        server_lines(&peer).iter().any(|l| l.contains("tasks/get"))
    });
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
    let out = wait_bounded(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("interrupted"))
        .collect();
    assert_eq!(lines.len(), 1, "one line says so: {stderr}");
    assert!(
        !stderr.contains("could not cancel"),
        "everything was cancelled: {stderr}"
    );
    assert_cancel_then_delete(&peer, era);
}

#[test]
fn sigint_cancels_a_legacy_task_over_streamable_http_then_deletes_the_session() {
    sigint_cancels_a_task_over_http("legacy");
}

#[test]
fn sigint_cancels_a_modern_task_over_streamable_http() {
    sigint_cancels_a_task_over_http("modern");
}

/// A one-shot `call` whose task times out over Streamable HTTP: `tasks/cancel` reaches the
/// server before the command ends the session (before issue 49 it did over stdio only).
fn a_timed_out_task_is_cancelled_over_http(era: &str) {
    let (peer, dir) = http_task_server(era, 1_500);
    let child = spawn(&["call", "mcp.srv.never_ends", "--quiet"], dir.path());
    let out = wait_bounded(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("tool `never_ends` timed out after 1500 ms"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("could not cancel"),
        "the server answered the cancel: {stderr}"
    );
    assert_cancel_then_delete(&peer, era);
}

#[test]
fn a_timed_out_legacy_task_is_cancelled_over_streamable_http() {
    a_timed_out_task_is_cancelled_over_http("legacy");
}

#[test]
fn a_timed_out_modern_task_is_cancelled_over_streamable_http() {
    a_timed_out_task_is_cancelled_over_http("modern");
}

// ---- what could not be cancelled (issue 49 point 3) --------------------------------------------

/// The task ids the server received a `tasks/cancel` for (its stats file, `--stats-file`).
fn cancelled_task_ids(stats_file: &Path) -> Vec<String> {
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats_file).unwrap()).unwrap();
    stats["tasks_cancel"]
        .as_array()
        .unwrap_or_else(|| panic!("{stats}"))
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect()
}

/// The lines of `stderr` that say a cancel was not confirmed: exactly one, for `task_id` on
/// `srv`, saying the `tasks/cancel` got no answer; and it is not an `interrupted` line.
fn assert_one_unconfirmed(stderr: &str, task_id: &str) {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("could not cancel"))
        .collect();
    assert_eq!(
        lines,
        [format!(
            "could not cancel task `{task_id}` on `srv`: tasks/cancel got no answer; it may still run"
        )],
        "{stderr}"
    );
}

/// A project whose stdio server `srv` is `tasks_server.py --ignore-cancel`, its stats in
/// `stats.json` of the project directory.
fn stdio_task_server_ignoring_cancel(timeout_ms: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let script = peers::server_script("tasks_server.py");
    std::fs::write(
        dir.path().join("project.yaml"),
        format!(
            "mcp:\n  srv:\n    transport: stdio\n    command: [python3, {}, stdio, --ignore-cancel, --stats-file, {}]\n",
            serde_json::to_string(&script).unwrap(),
            serde_json::to_string(&dir.path().join("stats.json")).unwrap()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("local.toml"),
        format!("[mcp.srv]\ntimeout_ms = {timeout_ms}\n"),
    )
    .unwrap();
    dir
}

/// SIGINT while `call` follows a task whose server never answers `tasks/cancel`, over
/// Streamable HTTP in `era`: exit 130, the one `interrupted` line, then one line naming the
/// server, the task and why (before issue 49 nothing said the task was left running).
fn sigint_says_what_it_could_not_cancel_over_http(era: &str) {
    let stats = tempfile::tempdir().unwrap();
    let stats_file = stats.path().join("stats.json");
    let (peer, dir) = http_task_server_with(
        era,
        60_000,
        &[
            "--ignore-cancel",
            "--stats-file",
            stats_file.to_str().unwrap(),
        ],
    );
    let child = spawn(&["call", "mcp.srv.never_ends"], dir.path());
    wait_until("the task being polled", || {
        server_lines(&peer).iter().any(|l| l.contains("tasks/get"))
    });
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
    let out = wait_bounded(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let interrupted: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("interrupted"))
        .collect();
    assert_eq!(interrupted.len(), 1, "one line says so: {stderr}");
    let cancelled = cancelled_task_ids(&stats_file);
    assert_eq!(cancelled.len(), 1, "{cancelled:?}: {stderr}");
    assert_one_unconfirmed(&stderr, &cancelled[0]);
}

#[test]
fn sigint_says_which_legacy_task_it_could_not_cancel_over_streamable_http() {
    sigint_says_what_it_could_not_cancel_over_http("legacy");
}

#[test]
fn sigint_says_which_modern_task_it_could_not_cancel_over_streamable_http() {
    sigint_says_what_it_could_not_cancel_over_http("modern");
}

/// The same over stdio: the server reads `tasks/cancel` and never answers it.
#[test]
fn sigint_says_which_task_it_could_not_cancel_over_stdio() {
    let dir = stdio_task_server_ignoring_cancel(60_000);
    let stats_file = dir.path().join("stats.json");
    let child = spawn(&["call", "mcp.srv.never_ends"], dir.path());
    wait_until("the task being created", || {
        std::fs::read_to_string(&stats_file)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|s| s["tasks_get"].as_u64().unwrap_or(0) > 0)
    });
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
    let out = wait_bounded(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let interrupted: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("interrupted"))
        .collect();
    assert_eq!(interrupted.len(), 1, "one line says so: {stderr}");
    let cancelled = cancelled_task_ids(&stats_file);
    assert_eq!(cancelled.len(), 1, "{cancelled:?}: {stderr}");
    assert_one_unconfirmed(&stderr, &cancelled[0]);
}

/// A timeout: the one-shot `call` fails (exit 1), and says which task it could not cancel;
/// over stdio and over Streamable HTTP (modern).
#[test]
fn a_timed_out_call_says_which_task_it_could_not_cancel_over_stdio() {
    let dir = stdio_task_server_ignoring_cancel(1_500);
    let child = spawn(&["call", "mcp.srv.never_ends", "--quiet"], dir.path());
    let out = wait_bounded(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("tool `never_ends` timed out after 1500 ms"),
        "{stderr}"
    );
    let cancelled = cancelled_task_ids(&dir.path().join("stats.json"));
    assert_eq!(cancelled.len(), 1, "{cancelled:?}: {stderr}");
    assert_one_unconfirmed(&stderr, &cancelled[0]);
}

#[test]
fn a_timed_out_call_says_which_task_it_could_not_cancel_over_streamable_http() {
    let stats = tempfile::tempdir().unwrap();
    let stats_file = stats.path().join("stats.json");
    let (_peer, dir) = http_task_server_with(
        "modern",
        1_500,
        &[
            "--ignore-cancel",
            "--stats-file",
            stats_file.to_str().unwrap(),
        ],
    );
    let child = spawn(&["call", "mcp.srv.never_ends", "--quiet"], dir.path());
    let out = wait_bounded(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let cancelled = cancelled_task_ids(&stats_file);
    assert_eq!(cancelled.len(), 1, "{cancelled:?}: {stderr}");
    assert_one_unconfirmed(&stderr, &cancelled[0]);
}
