//! `kaged-mcp shell` driven through a pipe (issue 37 point 11): `help` and `help VERB`, the
//! verbs with the one-shot commands' arguments, failures on stderr in text mode and one JSON
//! line each with `--json`, and `call`'s progress and notes as the one-shot `call` shows them.

use common::cli::{project, shell};
use common::peers;
use serde_json::Value;

use crate::common;

fn demo_project(local: &str) -> tempfile::TempDir {
    let demo = serde_json::to_string(&[env!("CARGO_BIN_EXE_kaged-mcp"), "demo-server"]).unwrap();
    project(
        &format!("mcp:\n  demo:\n    transport: stdio\n    command: {demo}\n"),
        local,
    )
}

/// Each stdout line as JSON.
fn answers(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn help_lists_the_verbs_and_help_verb_shows_its_arguments() {
    let d = demo_project("");
    let o = shell(d.path(), &[], &["help", "help call", "call --help"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    for verb in [
        "tools [SERVER]...",
        "describe <TOOL>",
        "call [OPTIONS] <TOOL> [JSON]",
        "status [SERVER]...",
        "enable <SERVER>",
        "ping [OPTIONS] [SERVER]",
        "resources [SERVER]",
        "read [OPTIONS] <SERVER> <URI>",
        "prompts [SERVER]",
        "prompt [OPTIONS] <SERVER> <NAME>",
        "complete [OPTIONS] <SERVER> <ARGUMENT> <PREFIX>",
        "skills [SERVER]",
        "skill [OPTIONS] <SERVER> <NAME>",
        "quit",
    ] {
        assert!(
            o.stdout.lines().any(|l| l.trim_start().starts_with(verb)),
            "{verb}: {}",
            o.stdout
        );
    }
    // `help call` and `call --help` are the same text, the one-shot `call`'s arguments.
    let usage = "Usage: call [OPTIONS] <TOOL> [JSON]";
    assert_eq!(o.stdout.matches(usage).count(), 2, "{}", o.stdout);
    for arg in ["--args <JSON|@FILE|->", "--arg <KEY=VALUE>", "-q, --quiet"] {
        assert_eq!(o.stdout.matches(arg).count(), 2, "{arg}: {}", o.stdout);
    }

    let o = shell(d.path(), &["--json"], &["help", "help ping", "help nope"]);
    let a = answers(&o.stdout);
    assert_eq!(a.len(), 3, "{}", o.stdout);
    let names: Vec<&str> = a[0]["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert!(
        names.contains(&"describe") && names.contains(&"skill"),
        "{names:?}"
    );
    assert_eq!(a[1]["verb"], "ping");
    assert!(
        a[1]["help"].as_str().unwrap().contains("--count <N>"),
        "{}",
        a[1]
    );
    assert_eq!(a[2]["error"]["kind"], "usage", "{}", a[2]);
}

#[test]
fn the_verbs_take_the_one_shot_commands_arguments() {
    let d = demo_project("");
    let o = shell(
        d.path(),
        &["--json"],
        &[
            r#"call mcp.demo.echo --args '{"message": "from args"}'"#,
            "call mcp.demo.echo --arg 'message=two words' --arg pad=0",
            r#"call mcp.demo.echo {"message": "unquoted json"}"#,
            r#"call mcp.demo.echo '{"message": "x"}' --arg message=overridden"#,
            "call mcp.demo.add --arg a=2 --arg b=3 --quiet",
            "tools demo",
            "status demo",
            "describe mcp.demo.echo",
            "ping demo -c 2 -i 0",
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let a = answers(&o.stdout);
    assert_eq!(a.len(), 9, "{}", o.stdout);
    assert_eq!(a[0]["content"][0]["text"], "Echo: from args", "{}", a[0]);
    assert_eq!(a[1]["content"][0]["text"], "Echo: two words", "{}", a[1]);
    assert_eq!(
        a[2]["content"][0]["text"], "Echo: unquoted json",
        "{}",
        a[2]
    );
    assert_eq!(a[3]["content"][0]["text"], "Echo: overridden", "{}", a[3]);
    assert_eq!(a[4]["structuredContent"]["sum"], 5.0, "{}", a[4]);
    assert_eq!(a[5].as_array().unwrap().len(), 5, "{}", a[5]);
    assert_eq!(a[6][0]["server"], "demo", "{}", a[6]);
    assert_eq!(a[7]["name"], "mcp.demo.echo", "{}", a[7]);
    assert_eq!(
        (a[8]["sent"].clone(), a[8]["answered"].clone()),
        (2.into(), 2.into())
    );

    // The same in text mode: the one-shot commands' text.
    let o = shell(
        d.path(),
        &[],
        &[
            "describe mcp.demo.echo",
            "ping demo -c 1 -i 0",
            "tools demo",
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("parameters:\n  NAME "), "{}", o.stdout);
    assert!(
        o.stdout.contains("answer from demo: seq=1 time="),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("1 pings sent, 1 answered, 0% lost"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("mcp.demo.echo(message: string, pad?: integer)"),
        "{}",
        o.stdout
    );
}

#[test]
fn failures_go_to_stderr_in_text_mode_and_are_one_json_line_with_json() {
    let d = demo_project("");
    let script = [
        "frobnicate",
        "call",
        "call mcp.demo.echo --arg pad=x",
        "call mcp.demo.echo --args -",
        "call mcp.demo.nope",
        "tools nosuch",
        "describe mcp.demo.nope",
        "call mcp.demo.echo 'unclosed",
        r#"call mcp.demo.echo --arg message=still-alive"#,
    ];
    let o = shell(d.path(), &[], &script);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // Only the last line answers on stdout.
    assert_eq!(o.stdout, "Echo: still-alive\n", "{}", o.stderr);
    let errors: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 8, "{}", o.stderr);
    assert!(
        errors[0].contains("unknown command `frobnicate`"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("<TOOL>") && errors[1].contains("`help call`"),
        "{}",
        errors[1]
    );
    assert!(
        errors[2].contains("--arg pad: expected integer"),
        "{}",
        errors[2]
    );
    assert!(
        errors[3].contains("stdin is the shell's input"),
        "{}",
        errors[3]
    );
    assert!(errors[4].contains("unknown tool"), "{}", errors[4]);
    assert!(errors[5].contains("no server `nosuch`"), "{}", errors[5]);
    assert!(
        errors[6].contains("no tool `mcp.demo.nope`"),
        "{}",
        errors[6]
    );
    assert!(errors[7].contains("a quote is not closed"), "{}", errors[7]);

    let o = shell(d.path(), &["--json"], &script);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let a = answers(&o.stdout);
    assert_eq!(a.len(), script.len(), "{}", o.stdout);
    let kinds: Vec<&str> = a[..8]
        .iter()
        .map(|v| v["error"]["kind"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        kinds,
        [
            "usage",
            "usage",
            "usage",
            "usage",
            "unknown_tool",
            "unknown_server",
            "unknown_tool",
            "usage"
        ]
    );
    assert_eq!(a[2]["error"]["tool"], "mcp.demo.echo", "{}", a[2]);
    assert_eq!(a[8]["content"][0]["text"], "Echo: still-alive");
}

#[test]
fn call_tells_a_truncated_result_and_an_error_result_on_stderr_as_the_one_shot_call() {
    let d = demo_project("");
    let config = d.path().join("config.toml");
    std::fs::write(&config, "[mcp]\nresult_max_bytes = 20\n").unwrap();
    let config = config.display().to_string();
    let o = shell(
        d.path(),
        &["--config", &config, "--json"],
        &[r#"call mcp.demo.add {"a":12345678,"b":1}"#],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let a = answers(&o.stdout);
    assert_eq!(a[0]["truncated"], true, "{}", a[0]);
    assert!(
        o.stderr
            .contains("note: the result was 26 bytes, over the cap of 20 bytes")
            && o.stderr.contains("structuredContent kept whole"),
        "{}",
        o.stderr
    );
}

#[test]
fn call_shows_the_servers_progress_on_stderr_unless_quiet() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let d = project(
        &format!(
            "mcp:\n  everything:\n    transport: stdio\n    command: {}\n",
            serde_json::to_string(&cmd).unwrap()
        ),
        "",
    );
    let tool = "mcp.everything.trigger-long-running-operation";
    let o = shell(
        d.path(),
        &[],
        &[&format!("call {tool} --arg duration=1 --arg steps=4")],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let progress: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.starts_with(&format!("{tool}: ")))
        .collect();
    assert!(progress.len() >= 3, "{}", o.stderr);
    assert!(progress.iter().any(|l| l.contains("/4")), "{}", o.stderr);
    assert!(!o.stdout.contains(&format!("{tool}: ")), "{}", o.stdout);

    let o = shell(
        d.path(),
        &[],
        &[&format!("call {tool} --arg duration=1 --arg steps=2 -q")],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(!o.stderr.contains(&format!("{tool}: ")), "{}", o.stderr);
}

// ---- the shell on a real terminal (issue 49 point 4) -------------------------------------------

/// `kaged-mcp shell` on a pseudo-terminal (util-linux `script`), what it writes gathered as it
/// comes; every wait bounded, the child killed if it outlives the test.
struct OnTerminal {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    seen: std::sync::Arc<std::sync::Mutex<String>>,
}

/// How long a wait for the terminal lasts before the test fails (a hang guard, not a timing
/// check).
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

impl OnTerminal {
    /// `None` (the test is skipped, saying so) where `script` is missing.
    fn start(dir: &std::path::Path) -> Option<Self> {
        Self::start_with(dir, &[])
    }

    /// [`start`](Self::start) with `extra` arguments after the project (no quotes in them).
    fn start_with(dir: &std::path::Path, extra: &[&str]) -> Option<Self> {
        use std::io::Read;
        use std::process::{Command, Stdio};
        if Command::new("script").arg("--version").output().is_err() {
            eprintln!("skipped: util-linux `script` is not installed");
            return None;
        }
        let exe = env!("CARGO_BIN_EXE_kaged-mcp");
        let mut line = format!(
            "exec '{exe}' shell --project '{}'",
            dir.display().to_string().replace('\'', "'\\''")
        );
        for arg in extra {
            line.push_str(&format!(" '{arg}'"));
        }
        let mut child = Command::new("script")
            .current_dir(dir)
            .args(["-qfec", &line, "/dev/null"])
            .env("XDG_STATE_HOME", common::cli::NO_STATE)
            .env("TERM", "dumb")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Some(Self { child, stdin, seen })
    }

    fn seen(&self) -> String {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until the terminal shows `text` `times` times in all.
    fn wait_for(&mut self, text: &str, times: usize) {
        let deadline = std::time::Instant::now() + PATIENCE;
        while self.seen().matches(text).count() < times {
            if std::time::Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "gave up waiting for {text:?}; the terminal showed:\n{}",
                    self.seen()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn type_(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Waits for the shell's end (bounded): its exit code.
    fn exit(mut self) -> Option<i32> {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if std::time::Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the shell still ran; the terminal showed:\n{}", self.seen());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Ctrl-C typed on the terminal during a call ends that call, not the shell: the shell says
/// so, prompts again, and `quit` ends it with 0 (a task the server runs is cancelled).
#[test]
fn ctrl_c_on_a_terminal_ends_the_call_and_the_shell_goes_on() {
    let script = peers::server_script("tasks_server.py");
    let d = project(
        &format!(
            "mcp:\n  srv:\n    transport: stdio\n    command: [python3, {}, stdio, --stats-file, stats.json]\n",
            serde_json::to_string(&script).unwrap()
        ),
        "",
    );
    let stats = d.path().join("stats.json");
    let Some(mut term) = OnTerminal::start(d.path()) else {
        return;
    };
    term.wait_for("kaged-mcp> ", 1);
    term.type_(b"call mcp.srv.never_ends --quiet\r");
    // The call is under way once the server polled its task.
    let deadline = std::time::Instant::now() + PATIENCE;
    while std::fs::read_to_string(&stats)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_none_or(|s| s["tasks_get"].as_u64().unwrap_or(0) == 0)
    {
        assert!(std::time::Instant::now() < deadline, "{}", term.seen());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    term.type_(b"\x03");
    term.wait_for("the command was cancelled; the shell goes on", 1);
    term.wait_for("kaged-mcp> ", 2);
    term.type_(b"quit\r");
    let seen = term.seen();
    assert_eq!(term.exit(), Some(0), "{seen}");
    let stats: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(
        stats["tasks_cancel"].as_array().map(Vec::len),
        Some(1),
        "{stats}"
    );
}

/// A tasks_server.py project on stdio (`confirm_delete` asks a form) with `local` as its
/// local.toml and `config` as config.toml; the server's stats in `stats.json`.
fn form_project(local: &str, config: &str) -> tempfile::TempDir {
    let script = peers::server_script("tasks_server.py");
    let d = project(
        &format!(
            "mcp:\n  srv:\n    transport: stdio\n    command: [python3, {}, stdio, --stats-file, stats.json]\n",
            serde_json::to_string(&script).unwrap()
        ),
        local,
    );
    std::fs::write(d.path().join("config.toml"), config).unwrap();
    d
}

/// The form's first question (src/cli/shell/form.rs).
const ASK_ACTION: &str = "accept, decline or cancel? [a/d/c] ";

/// The call of a form nobody answers times out (its total cap, `progress_cap_ms`: a person's
/// wait holds only `timeout_ms`): the form says it ended, the shell says why the call failed
/// and prompts again, and the `quit` typed next is the shell's (before issue 49 the form kept
/// asking and took it as its answer; the shell then never ended); the task is cancelled.
#[test]
fn a_form_whose_call_times_out_ends_with_it_and_quit_ends_the_shell() {
    let d = form_project(
        "[mcp.srv]\ntimeout_ms = 1000\n",
        "[mcp]\nprogress_cap_ms = 1500\n",
    );
    let config = d.path().join("config.toml").display().to_string();
    let Some(mut term) = OnTerminal::start_with(d.path(), &["--config", &config]) else {
        return;
    };
    term.wait_for("kaged-mcp> ", 1);
    term.type_(b"call mcp.srv.confirm_delete --arg filename=a.txt --quiet\r");
    term.wait_for("server `srv` asks: Delete a.txt?", 1);
    term.wait_for(ASK_ACTION, 1);
    // Nobody answers. The call's end closes the form (before, the form went on asking).
    term.wait_for(
        "the command ended; its form is closed (cancelled); the next line is the shell's",
        1,
    );
    term.wait_for("tool `confirm_delete` timed out after 1500 ms", 1);
    term.type_(b"quit\r");
    let seen = term.seen();
    assert_eq!(term.exit(), Some(0), "{seen}");
    // The form asked once and took no line of the shell's.
    assert_eq!(seen.matches(ASK_ACTION).count(), 1, "{seen}");
    assert!(!seen.contains("type a, d or c"), "{seen}");
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("stats.json")).unwrap())
            .unwrap();
    assert_eq!(
        stats["tasks_cancel"].as_array().map(Vec::len),
        Some(1),
        "{stats}"
    );
}

/// A slow typist with a short `timeout_ms`: each answer takes at least twice the call's
/// timeout to type, and the call still succeeds (the wait for a person does not count against it;
/// before issue 49 the call timed out while the person typed).
#[test]
fn a_slow_typist_with_a_short_timeout_still_gets_the_calls_answer() {
    let d = form_project("[mcp.srv]\ntimeout_ms = 500\n", "");
    let config = d.path().join("config.toml").display().to_string();
    let Some(mut term) = OnTerminal::start_with(d.path(), &["--config", &config]) else {
        return;
    };
    let slowly = |term: &mut OnTerminal, text: &[u8]| {
        for b in text {
            std::thread::sleep(std::time::Duration::from_millis(500));
            term.type_(&[*b]);
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        term.type_(b"\r");
    };
    term.wait_for("kaged-mcp> ", 1);
    term.type_(b"call mcp.srv.confirm_delete --arg filename=a.txt --quiet\r");
    term.wait_for(ASK_ACTION, 1);
    slowly(&mut term, b"ac");
    term.wait_for("type a, d or c", 1);
    term.wait_for(ASK_ACTION, 2);
    slowly(&mut term, b"a");
    term.wait_for("  confirm (y/n, required): ", 1);
    slowly(&mut term, b"y");
    term.wait_for("deleted a.txt", 1);
    term.wait_for("kaged-mcp> ", 2);
    term.type_(b"quit\r");
    let seen = term.seen();
    assert_eq!(term.exit(), Some(0), "{seen}");
    assert!(!seen.contains("no answer within"), "{seen}");
    assert!(!seen.contains("its form is closed"), "{seen}");
}
