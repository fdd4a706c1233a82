//! The built `kaged-mcp` binary through `tools`, `call`, `status` and `shell`, and every exit
//! code: 0 success (an `isError` result included), 1 a failed call or session, 2 usage or
//! configuration.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use common::cli::{kaged, wait_bounded, Out, OutputBounded};
use common::peers::{self, Fault};
use serde_json::Value;

use crate::common;

fn run(args: &[&str], dir: &tempfile::TempDir) -> Out {
    common::cli::run(args, dir.path())
}

fn project() -> tempfile::TempDir {
    let demo = serde_json::to_string(&[env!("CARGO_BIN_EXE_kaged-mcp"), "demo-server"]).unwrap();
    let broken = serde_json::to_string(&peers::faulty(Fault::ExitBeforeInit)).unwrap();
    let yaml = format!(
        "mcp:\n  demo:\n    transport: stdio\n    command: {demo}\n  broken:\n    transport: stdio\n    command: {broken}\n  off:\n    transport: stdio\n    command: [\"/nonexistent\"]\nprimary:\n  tools:\n    mcp.demo: {{ enabled: true }}\n  subagents:\n    researcher:\n      tools:\n        mcp.demo.echo: {{ enabled: true }}\n"
    );
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("project.yaml"), yaml).unwrap();
    std::fs::write(
        d.path().join("local.toml"),
        "[mcp.off]\ndisabled = true\n[mcp.demo]\ntimeout_ms = 3000\n",
    )
    .unwrap();
    d
}

#[test]
fn tools_prints_the_catalog_and_lists_failed_servers_on_stderr() {
    let d = project();
    // `broken` did not start: the others' catalog is printed, and the exit code says it (1).
    let o = run(&["tools"], &d);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stdout.contains(
            "mcp.demo.echo(message: string, pad?: integer) [read-only]\tEchoes a message"
        ),
        "{}",
        o.stdout
    );
    assert!(
        o.stderr.contains("error: server `broken`: exited"),
        "{}",
        o.stderr
    );

    let o = run(&["tools", "--json", "--agent", "researcher"], &d);
    assert_eq!(o.code, Some(1));
    let v: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 1);
    assert_eq!(arr[0]["name"], "mcp.demo.echo");
    assert_eq!(arr[0]["source"], "mcp");
    assert_eq!(arr[0]["mcp_tool_name"], "echo");

    let o = run(&["tools", "--agent", "ghost"], &d);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("unknown agent `ghost`"), "{}", o.stderr);
}

#[test]
fn call_prints_text_or_json_and_uses_the_exit_codes() {
    let d = project();
    let o = run(
        &["call", "mcp.demo.echo", "--args", r#"{"message":"hello"}"#],
        &d,
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout, "Echo: hello\n");

    let o = run(
        &[
            "call",
            "mcp.demo.add",
            "--args",
            r#"{"a":2,"b":3}"#,
            "--json",
        ],
        &d,
    );
    assert_eq!(o.code, Some(0));
    let v: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(v["content"][0]["text"], "5");
    assert_eq!(v["structuredContent"]["sum"], 5.0);
    assert_eq!(v["isError"], false);
    assert_eq!(v["truncated"], false);

    // Arguments that break the tool's input schema are refused before they leave: exit 1.
    let o = run(&["call", "mcp.demo.echo", "--args", "{}"], &d);
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains("the arguments break the tool's inputSchema (not sent): (root): required: \"message\" is a required property"),
        "{}",
        o.stderr
    );

    // A tool error is still exit 0, said on stderr (validation off, so the server sees the
    // call and answers it with its own error).
    std::fs::write(
        d.path().join("local.toml"),
        "[mcp.off]\ndisabled = true\n[mcp.demo]\ntimeout_ms = 3000\nvalidate = \"off\"\n",
    )
    .unwrap();
    let o = run(&["call", "mcp.demo.echo", "--args", "{}"], &d);
    assert_eq!(o.code, Some(0));
    assert!(
        o.stderr.contains("reported an error (isError: true)"),
        "{}",
        o.stderr
    );

    // Exit 1: unknown tool, not granted, timeout.
    let o = run(&["call", "mcp.demo.nope"], &d);
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains("error: unknown tool `mcp.demo.nope`"),
        "{}",
        o.stderr
    );
    let o = run(
        &[
            "call",
            "--agent",
            "researcher",
            "mcp.demo.add",
            "--args",
            r#"{"a":1,"b":1}"#,
        ],
        &d,
    );
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains("not granted to agent `researcher`"),
        "{}",
        o.stderr
    );
    let o = run(&["call", "mcp.demo.slow", "--args", r#"{"ms":10000}"#], &d);
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr
            .contains("server `demo`: tool `slow` timed out after 3000 ms"),
        "{}",
        o.stderr
    );

    // Exit 2: bad --args, configuration error, missing secret, usage.
    let o = run(&["call", "mcp.demo.echo", "--args", "[1]"], &d);
    assert_eq!(o.code, Some(2));
    assert!(o.stderr.contains("must be a JSON object"), "{}", o.stderr);
    let o = run(&["call", "mcp.demo.echo", "--args", "{nope"], &d);
    assert_eq!(o.code, Some(2));
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(
        bad.path().join("project.yaml"),
        "mcp:\n  gh:\n    transport: sse\n    url: http://127.0.0.1:9/sse\n    auth: { type: bearer, secret_ref: k.gh }\n",
    )
    .unwrap();
    let o = run(&["call", "mcp.gh.x"], &bad);
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr.contains("server `gh` needs secret `k.gh`"),
        "{}",
        o.stderr
    );
    std::fs::write(
        bad.path().join("project.yaml"),
        "mcp:\n  gh:\n    transport: smoke\n",
    )
    .unwrap();
    let o = run(&["tools"], &bad);
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr.contains("project.yaml:3:16: mcp.gh.transport"),
        "{}",
        o.stderr
    );
    let out = kaged().args(["call"]).output_bounded();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn status_prints_state_tools_and_last_error() {
    let d = project();
    // `broken` is not ready: exit 1.
    let o = run(&["status", "--json"], &d);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    let st = v.as_array().unwrap();
    assert_eq!(st.len(), 3);
    assert_eq!(st[0]["server"], "demo");
    assert_eq!(st[0]["state"], "ready");
    assert_eq!(st[0]["tools"], 5);
    assert_eq!(st[1]["server"], "broken");
    // One failed start: a one-shot command will not start it again, so it is `failed` (the
    // shell, which lasts, says `restarting`).
    assert_eq!(st[1]["state"], "failed");
    assert_eq!(st[1]["consecutive_failures"], 1);
    assert!(st[1]["last_error"].as_str().unwrap().contains("exited"));
    assert!(st[1]["error_detail"].as_str().unwrap().contains("broken"));
    assert_eq!(st[2]["state"], "disabled");
    let o = run(&["status"], &d);
    assert!(
        o.stdout
            .starts_with("demo\tready\t5 tools\tmodern 2026-07-28\n"),
        "{}",
        o.stdout
    );
}

/// Sends one line to the shell and reads its one-line JSON answer.
fn ask(stdin: &mut impl Write, stdout: &mut impl BufRead, line: &str) -> Value {
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    serde_json::from_str(answer.trim()).unwrap_or_else(|e| panic!("{line}: {e}: {answer:?}"))
}

#[test]
fn shell_answers_each_command_and_shows_a_crash_and_restart() {
    let d = project();
    let mut child = kaged()
        .args(["shell", "--json", "--project"])
        .arg(d.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());

    let tools = ask(&mut stdin, &mut stdout, "tools");
    assert_eq!(tools.as_array().unwrap().len(), 5);
    let r = ask(
        &mut stdin,
        &mut stdout,
        r#"call mcp.demo.echo {"message":"one"}"#,
    );
    assert_eq!(r["content"][0]["text"], "Echo: one");
    let st = ask(&mut stdin, &mut stdout, "status");
    let first_pid_state = st[0]["state"].clone();
    assert_eq!(first_pid_state, "ready");

    // The server dies mid-call: the call fails at once, naming the server.
    let r = ask(&mut stdin, &mut stdout, "call mcp.demo.crash");
    let err = r["error"]["message"].as_str().unwrap();
    assert!(err.contains("demo"), "{err}");
    let st = ask(&mut stdin, &mut stdout, "status");
    assert_eq!(st[0]["state"], "restarting", "{st}");
    assert!(st[0]["last_error"].as_str().is_some(), "{st}");

    // A call during the 1 s backoff waits for the restart (its 3 s timeout allows it) and goes
    // through on the restarted server.
    // (The wait itself is timed in the client's unit tests, on a paused clock.)
    let r = ask(
        &mut stdin,
        &mut stdout,
        r#"call mcp.demo.echo {"message":"early"}"#,
    );
    assert_eq!(r["content"][0]["text"], "Echo: early", "{r}");
    let r = ask(
        &mut stdin,
        &mut stdout,
        r#"call mcp.demo.echo {"message":"back"}"#,
    );
    assert_eq!(r["content"][0]["text"], "Echo: back", "{r}");
    let st = ask(&mut stdin, &mut stdout, "status");
    assert_eq!(st[0]["state"], "ready");

    // A failing command never ends the shell.
    let r = ask(&mut stdin, &mut stdout, "call mcp.demo.nope");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown tool"));
    assert_eq!(r["error"]["kind"], "unknown_tool", "{r}");
    let r = ask(&mut stdin, &mut stdout, "frobnicate");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown command"));
    assert_eq!(r["error"]["kind"], "usage", "{r}");
    let r = ask(&mut stdin, &mut stdout, "call mcp.demo.echo [1]");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("JSON object"));
    let r = ask(&mut stdin, &mut stdout, "enable nosuch");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown MCP server"));
    let r = ask(&mut stdin, &mut stdout, "enable broken");
    assert_eq!(r["enabled"], "broken");

    writeln!(stdin, "quit").unwrap();
    drop(stdin);
    let status = wait_bounded(child).status;
    assert_eq!(status.code(), Some(0));
}

#[test]
fn shell_for_an_agent_lists_only_its_tools_and_ends_at_eof() {
    let d = project();
    let mut child = kaged()
        .args(["shell", "--json", "--agent", "researcher", "--project"])
        .arg(d.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let tools = ask(&mut stdin, &mut stdout, "tools");
    assert_eq!(tools[0]["name"], "mcp.demo.echo");
    assert_eq!(tools.as_array().unwrap().len(), 1);
    let r = ask(&mut stdin, &mut stdout, "call mcp.demo.crash");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not granted"));
    drop(stdin);
    assert_eq!(wait_bounded(child).status.code(), Some(0));
}

#[test]
fn call_with_arguments_that_break_the_input_schema_fails_at_once_naming_where() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("stdin.log");
    std::fs::write(
        d.path().join("project.yaml"),
        format!(
            "mcp:\n  everything:\n    transport: stdio\n    command: {}\n",
            serde_json::to_string(&peers::with_stdin_log(&cmd, &log)).unwrap()
        ),
    )
    .unwrap();
    let o = run(
        &[
            "call",
            "mcp.everything.get-sum",
            "--args",
            r#"{"a": "one", "b": 2}"#,
        ],
        &d,
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stderr.contains(
            "error: server `everything`: tool `get-sum`: the arguments break the tool's inputSchema (not sent): /a: type: \"one\" is not of type \"number\""
        ),
        "{}",
        o.stderr
    );
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(sent.contains("\"tools/list\""), "{sent}");
    assert!(
        !sent.contains("\"tools/call\""),
        "the server was contacted: {sent}"
    );
}

#[test]
fn tools_says_which_tools_are_not_validated() {
    let dir = tempfile::tempdir().unwrap();
    let peer = peers::SsePeer::start_reporting_port(&peers::http_fault_server("ok", &[])).unwrap();
    std::fs::write(
        dir.path().join("project.yaml"),
        format!(
            "mcp:\n  fa:\n    transport: streamable-http\n    url: {}\n",
            peer.mcp_url()
        ),
    )
    .unwrap();
    let o = run(&["tools"], &dir);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("mcp.fa.remote_ref("), "{}", o.stdout);
    let notes: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.starts_with("note: "))
        .collect();
    assert_eq!(notes.len(), 2, "{}", o.stderr);
    assert!(
        notes[0].starts_with("note: mcp.fa.bad_schema is not validated: inputSchema: "),
        "{}",
        notes[0]
    );
    assert!(
        notes[1].starts_with("note: mcp.fa.remote_ref is not validated: inputSchema: "),
        "{}",
        notes[1]
    );
}
