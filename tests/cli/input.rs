//! What the operator gives the commands (issue 37 points 5, 8, 10, 12): `--arg key=value`
//! typed by the tool's schema (also in the shell and for prompts), ad-hoc servers without a
//! project (`-- COMMAND`, `--url`), `--log-level` and `ping`, hints that work when pasted.

use std::path::Path;

use common::cli::{kaged, project, run, shell, wait_bounded, Out, OutputBounded};
use common::peers::{self, Fault, SseFault, SsePeer};
use serde_json::Value;

use crate::common;

/// The binary itself, serving the demo server: `[kaged-mcp, demo-server]`.
fn demo() -> [&'static str; 2] {
    [env!("CARGO_BIN_EXE_kaged-mcp"), "demo-server"]
}

/// `kaged-mcp <args…>` run in `cwd` (a directory with no project.yaml above it, usually).
fn run_in(cwd: &Path, args: &[&str]) -> Out {
    kaged().current_dir(cwd).args(args).output_bounded().into()
}

/// A project with the demo server (`demo`) and the identity server (`ident`).
fn demo_project() -> tempfile::TempDir {
    let demo = serde_json::to_string(&demo()).unwrap();
    let ident = serde_json::to_string(&[
        "python3".to_owned(),
        peers::server_script("identity_server.py")
            .display()
            .to_string(),
    ])
    .unwrap();
    project(
        &format!(
            "mcp:\n  demo:\n    transport: stdio\n    command: {demo}\n  ident:\n    transport: stdio\n    command: {ident}\n"
        ),
        "",
    )
}

#[test]
fn call_arg_values_are_typed_by_the_tools_input_schema() {
    let d = demo_project();
    // Numbers parsed as JSON where the schema says number; the demo's `add` checks them.
    let o = run(
        &["call", "mcp.demo.add", "--arg", "a=2", "--arg", "b=3.5"],
        d.path(),
    );
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (Some(0), "5.5\n"),
        "{}",
        o.stderr
    );
    // A string property takes the text as it is, even when it reads as a number.
    let o = run(&["call", "mcp.demo.echo", "--arg", "message=42"], d.path());
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (Some(0), "Echo: 42\n"),
        "{}",
        o.stderr
    );
    // `--args` and `--arg` merge, `--arg` winning.
    let o = run(
        &[
            "call",
            "mcp.demo.add",
            "--args",
            r#"{"a": 1, "b": 1}"#,
            "--arg",
            "b=10",
        ],
        d.path(),
    );
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (Some(0), "11\n"),
        "{}",
        o.stderr
    );
}

#[test]
fn an_arg_value_not_of_its_type_is_a_usage_error_naming_key_and_type() {
    let d = demo_project();
    let o = run(
        &["call", "mcp.demo.add", "--arg", "a=x", "--arg", "b=1"],
        d.path(),
    );
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert_eq!(o.stderr, "error: --arg a: expected number, got `x`\n");
    let o = run(
        &[
            "call",
            "mcp.ident.show",
            "--arg",
            "kind=all",
            "--arg",
            "count=1.5",
            "--json",
        ],
        d.path(),
    );
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(v["error"]["kind"], "usage");
    assert_eq!(
        v["error"]["message"],
        "--arg count: expected integer, got number `1.5`"
    );
    assert_eq!(v["error"]["tool"], "mcp.ident.show");
    // A pair without `=` is refused before anything starts.
    let o = run(&["call", "mcp.demo.add", "--arg", "a"], d.path());
    assert_eq!(o.code, Some(2));
    assert!(o.stderr.contains("give `key=value`"), "{}", o.stderr);
}

#[test]
fn the_shells_call_takes_arg_pairs_beside_its_json() {
    let d = demo_project();
    let o = shell(
        d.path(),
        &[],
        &[
            "call mcp.demo.add --arg a=2 --arg b=3",
            r#"call mcp.demo.add {"a": 1, "b": 2}"#,
            r#"call mcp.demo.add --args '{"a": 1}' --arg b=4"#,
            "call mcp.demo.add --arg a=x",
            "quit",
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // The answers on stdout, the failure on stderr (issue 37 point 11).
    assert_eq!(o.stdout, "5\n3\n5\n", "{}", o.stderr);
    assert!(
        o.stderr
            .contains("error: --arg a: expected number, got `x`\n"),
        "{}",
        o.stderr
    );
}

#[test]
fn prompt_takes_arg_pairs_as_strings() {
    let Some(everything) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let mut args = vec!["prompt", "adhoc", "args-prompt", "--arg", "city=Oslo", "--"];
    args.extend(everything.iter().map(String::as_str));
    let tmp = tempfile::tempdir().unwrap();
    let o = run_in(tmp.path(), &args);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("Oslo"), "{}", o.stdout);
}

#[test]
fn an_adhoc_stdio_server_needs_no_project() {
    let tmp = tempfile::tempdir().unwrap();
    let [k, serve] = demo();
    let o = run_in(tmp.path(), &["tools", "--", k, serve]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout.starts_with("mcp.adhoc.add(a: number, b: number)"),
        "{}",
        o.stdout
    );
    let o = run_in(
        tmp.path(),
        &[
            "call",
            "mcp.adhoc.echo",
            "--args",
            r#"{"message": "hi"}"#,
            "--",
            k,
            serve,
        ],
    );
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (Some(0), "Echo: hi\n"),
        "{}",
        o.stderr
    );
    let o = run_in(
        tmp.path(),
        &["status", "--name", "dm", "--json", "--", k, serve],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(v[0]["server"], "dm");
    assert_eq!(v[0]["state"], "ready");
    let o = run_in(
        tmp.path(),
        &["describe", "mcp.dm.echo", "--name", "dm", "--", k, serve],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let lines = ["call mcp.adhoc.echo --arg message=yo", "quit"];
    let mut child = kaged()
        .current_dir(tmp.path())
        .args(["shell", "--", k, serve])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", lines.join("\n")).as_bytes())
        .unwrap();
    let o: Out = wait_bounded(child).into();
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (Some(0), "Echo: yo\n"),
        "{}",
        o.stderr
    );
}

#[test]
fn an_adhoc_url_server_speaks_streamable_http_or_sse_with_secret_headers() {
    const SECRET: &str = "tok-adhoc-7f3a-secret";
    let tmp = tempfile::tempdir().unwrap();
    let peer =
        SsePeer::start_reporting_port(&peers::http_fault_server("auth", &["--secret", SECRET]))
            .unwrap();
    let url = peer.mcp_url();
    let bearer = format!("Authorization: Bearer {SECRET}");
    let o = run_in(
        tmp.path(),
        &[
            "call",
            "mcp.adhoc.echo",
            "--arg",
            "message=over http",
            "--url",
            &url,
            "--header",
            &bearer,
        ],
    );
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (Some(0), "Echo: over http\n"),
        "{}",
        o.stderr
    );
    // Without the header: refused, and the error never shows a header value.
    let o = run_in(
        tmp.path(),
        &[
            "tools",
            "-vv",
            "--url",
            &url,
            "--header",
            "Authorization: Bearer wrong-1234-secret",
        ],
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(!o.stderr.contains("wrong-1234-secret"), "{}", o.stderr);
    let sse = SsePeer::start_fault(SseFault::Auth, &["--secret", SECRET]).unwrap();
    let o = run_in(
        tmp.path(),
        &[
            "status",
            "--json",
            "--url",
            &sse.sse_url(),
            "--transport",
            "sse",
            "--header",
            &bearer,
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(v[0]["transport"], "sse");
    assert!(!o.stdout.contains(SECRET));
}

#[test]
fn an_adhoc_server_with_a_project_or_for_lock_is_a_usage_error() {
    let d = demo_project();
    let [k, serve] = demo();
    let o = run(&["tools", "--", k, serve], d.path());
    assert_eq!(o.code, Some(2));
    assert!(o.stderr.contains("drop --project"), "{}", o.stderr);
    let tmp = tempfile::tempdir().unwrap();
    let o = run_in(tmp.path(), &["lock", "--", k, serve]);
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr.contains("`lock` needs a project directory"),
        "{}",
        o.stderr
    );
    let o = run_in(tmp.path(), &["check", "--", k, serve]);
    assert_eq!(o.code, Some(2));
    let o = run_in(tmp.path(), &["tools", "--header", "A: b", "--", k, serve]);
    assert_eq!(o.code, Some(2));
    assert!(o.stderr.contains("add --url URL"), "{}", o.stderr);
    let o = run_in(
        tmp.path(),
        &["tools", "--name", "Not A Key", "--", k, serve],
    );
    assert_eq!(o.code, Some(2));
    assert!(o.stderr.contains("not a server key"), "{}", o.stderr);
}

#[test]
fn log_level_asks_the_servers_and_shows_their_messages_on_stderr() {
    let d = demo_project();
    let o = run(
        &[
            "call",
            "mcp.ident.show",
            "--arg",
            "kind=all",
            "--log-level",
            "warning",
        ],
        d.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        o.stderr,
        "ident: warning: show called (warning)\nident: error: show called (error)\n"
    );
    // Told once with -v too; nothing without --log-level.
    let o = run(
        &[
            "call",
            "-v",
            "mcp.ident.show",
            "--arg",
            "kind=all",
            "--log-level",
            "debug",
        ],
        d.path(),
    );
    assert_eq!(o.stderr.matches("show called").count(), 3, "{}", o.stderr);
    assert!(
        o.stderr.contains("ident: debug: show called (debug)"),
        "{}",
        o.stderr
    );
    let o = run(&["call", "mcp.ident.show", "--arg", "kind=all"], d.path());
    assert!(!o.stderr.contains("show called"), "{}", o.stderr);
    let o = run(&["call", "mcp.ident.show", "--log-level", "loud"], d.path());
    assert_eq!(o.code, Some(2));
}

#[test]
fn ping_prints_each_round_trip_and_a_summary() {
    let d = demo_project();
    let o = run(&["ping", "demo", "-c", "2", "-i", "0.05"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", o.stdout);
    // The demo server speaks 2026-07-28, whose protocol has no ping.
    assert!(
        lines[0].starts_with(
            "PING demo (server/discover round trip: its protocol, 2026-07-28, has no ping"
        ),
        "{}",
        o.stdout
    );
    assert!(
        lines[1].starts_with("answer from demo: seq=1 time="),
        "{}",
        o.stdout
    );
    assert!(
        lines[2].starts_with("answer from demo: seq=2 time="),
        "{}",
        o.stdout
    );
    assert_eq!(lines[3], "--- demo ping statistics ---");
    assert_eq!(lines[4], "2 pings sent, 2 answered, 0% lost");
    assert!(
        lines[5].starts_with("round trip min/avg/max = "),
        "{}",
        o.stdout
    );
    // Ad-hoc: the server is the one given.
    let tmp = tempfile::tempdir().unwrap();
    let [k, serve] = demo();
    let o = run_in(tmp.path(), &["ping", "-c", "1", "--", k, serve]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout.contains("1 pings sent, 1 answered"),
        "{}",
        o.stdout
    );
}

#[test]
fn ping_of_a_2026_server_measures_server_discover_and_says_so() {
    let script = peers::server_script("era_server.py");
    let command = serde_json::to_string(&["python3", script.to_str().unwrap(), "stdio"]).unwrap();
    let d = project(
        &format!("mcp:\n  modern:\n    transport: stdio\n    command: {command}\n"),
        "",
    );
    let o = run(&["ping", "modern", "-c", "2", "-i", "0"], d.path());
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert!(
        lines[0].starts_with(
            "PING modern (server/discover round trip: its protocol, 2026-07-28, has no ping; up to "
        ),
        "{}",
        o.stdout
    );
    assert!(
        lines[1].starts_with("answer from modern: seq=1 time="),
        "{}",
        o.stdout
    );
    assert_eq!(
        lines[4], "2 pings sent, 2 answered, 0% lost",
        "{}",
        o.stdout
    );
    // For machines: one object, the method measured named.
    let o = run(&["ping", "modern", "-c", "1", "--json"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).expect("one JSON object");
    assert_eq!(v["server"], "modern");
    assert_eq!(v["method"], "server/discover");
    assert_eq!(
        (v["sent"].as_u64(), v["answered"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["lost_percent"], 0);
    assert_eq!(v["pings"][0]["seq"], 1);
    assert!(v["pings"][0]["rtt_ms"].as_f64().is_some(), "{v}");
    assert_eq!(v["rtt_ms"].as_array().map(Vec::len), Some(1), "{v}");
}

#[test]
fn ping_json_of_a_legacy_server_names_ping_and_a_failure_is_the_error_object() {
    let Some(cmd) = peers::require(
        peers::python_server(peers::PyMcp::V1, peers::PyMode::Stdio),
        "python mcp 1.30.0",
    ) else {
        return;
    };
    let d = project(
        &format!(
            "mcp:\n  py:\n    transport: stdio\n    command: {}\n",
            serde_json::to_string(&cmd).unwrap()
        ),
        "[mcp.py]\nera = \"legacy\"\n",
    );
    let o = run(&["ping", "py", "-c", "1", "--json"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).expect("one JSON object");
    assert_eq!(v["method"], "ping", "{v}");
    assert_eq!(v["answered"], 1, "{v}");
    let o = run(&["ping", "--json"], d.path());
    assert_eq!(o.code, Some(2));
    let v: Value = serde_json::from_str(o.stdout.trim()).expect("one JSON object");
    assert_eq!(v["error"]["kind"], "usage", "{v}");
}

#[test]
fn ping_exits_1_when_nothing_answers_and_2_without_a_server() {
    let broken = serde_json::to_string(&peers::faulty(Fault::ExitBeforeInit)).unwrap();
    let d = project(
        &format!("mcp:\n  broken:\n    transport: stdio\n    command: {broken}\n"),
        "",
    );
    let o = run(&["ping", "broken", "-c", "1"], d.path());
    assert_eq!(o.code, Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("error: server `broken`"), "{}", o.stderr);
    let o = run(&["ping", "broken", "-c", "1", "--json"], d.path());
    assert_eq!(o.code, Some(1), "{}\n{}", o.stdout, o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).expect("one JSON object");
    assert_eq!(v["error"]["kind"], "server_not_ready", "{v}");
    assert_eq!(v["error"]["server"], "broken", "{v}");
    let o = run(&["ping"], d.path());
    assert_eq!(o.code, Some(2));
    let o = run(&["ping", "nope"], d.path());
    assert_eq!(o.code, Some(2));
}

#[test]
fn hints_for_an_adhoc_server_or_given_files_paste_as_they_are() {
    // An ad-hoc stdio server: the hint ends with its command, and pasted, it works.
    let tmp = tempfile::tempdir().unwrap();
    let [k, serve] = demo();
    let o = run_in(tmp.path(), &["describe", "mcp.adhoc.nope", "--", k, serve]);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    let hint = format!("`kaged-mcp tools adhoc -- {k} {serve}`");
    assert!(
        o.stderr
            .contains(&format!("{hint} lists the tools of `adhoc`")),
        "{}",
        o.stderr
    );
    let pasted: Vec<String> = shlex::split(hint.trim_matches('`')).unwrap();
    let o = run_in(
        tmp.path(),
        &pasted[1..].iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("mcp.adhoc.echo"), "{}", o.stdout);
    // A project given with --local and --config: the hint carries both.
    let d = demo_project();
    let config = d.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let local = d.path().join("local.toml");
    let o = run(
        &[
            "describe",
            "mcp.demo.nope",
            "--local",
            local.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        d.path(),
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!(
            "`kaged-mcp tools --project {} --local {} --config {} demo` lists the tools",
            d.path().display(),
            local.display(),
            config.display()
        )),
        "{}",
        o.stderr
    );
}

#[test]
fn hints_carry_the_project_that_was_used_and_name_the_shells_verbs() {
    let d = demo_project();
    let dir = d.path().display().to_string();
    let o = run(&["describe", "mcp.demo.nope"], d.path());
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains(&format!(
            "`kaged-mcp tools --project {dir} demo` lists the tools"
        )),
        "{}",
        o.stderr
    );
    let o = run(&["lock", "--check"], d.path());
    assert!(
        o.stderr
            .contains(&format!("`kaged-mcp lock --project {dir}` writes it")),
        "{}",
        o.stderr
    );
    // Found upward from the current directory: the hint names that project.
    let sub = d.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let o = run_in(&sub, &["call", "mcp.demo.nope"]);
    assert!(
        o.stderr.contains(&format!(
            "(`kaged-mcp tools --project {dir}` lists the catalog)"
        )),
        "{}",
        o.stderr
    );
    // Inside the shell, the shell's own verb.
    let o = shell(d.path(), &[], &["call mcp.demo.nope", "quit"]);
    assert!(
        o.stderr.contains("(`tools` lists the catalog)"),
        "{}",
        o.stderr
    );
}

#[test]
fn help_lists_each_command_in_one_line_and_help_cmd_gives_its_paragraph() {
    let o: Out = kaged().arg("--help").output_bounded().into();
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let commands: Vec<&str> = o
        .stdout
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(commands.len() >= 18, "{}", o.stdout);
    for line in &commands {
        assert!(
            line.chars().count() <= 90,
            "a summary, not a paragraph: {line}"
        );
    }
    assert!(
        commands.contains(&"  tools        List the servers' tools, one line each"),
        "{}",
        o.stdout
    );
    let o: Out = kaged().args(["help", "tools"]).output_bounded().into();
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout.starts_with(
            "List the servers' tools, one line each.\n\nStart the servers (all, or those named) and print their tools"
        ),
        "{}",
        o.stdout
    );
    let o: Out = kaged().args(["auth", "--help"]).output_bounded().into();
    assert!(
        o.stdout
            .contains("  login   Log in to an OAuth server and store its tokens\n"),
        "{}",
        o.stdout
    );
}

/// Each usage error of an ad-hoc server is one exact `error:` line on stderr, exit 2, nothing
/// on stdout and nothing started: the name and a header's name shown escaped, a header's value
/// (a secret) never shown.
#[test]
fn an_adhoc_servers_usage_errors_are_exact_operator_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:9/mcp";
    let name_esc = "Bad\u{1b}[31m";
    let header_esc = "X\u{1b}K: v";
    let secret_header = "X-Key: s3cr3t\u{1}v";
    let cases: [(&[&str], &str); 10] = [
        (
            &["tools", "--url", url, "--", "true"],
            "give one ad-hoc server: `--url URL` or `-- COMMAND ARGS…`, not both",
        ),
        (
            &["tools", "--header", "X: 1", "--", "true"],
            "--header and --transport are for an ad-hoc remote server: add --url URL",
        ),
        (
            &["tools", "--transport", "sse", "--", "true"],
            "--header and --transport are for an ad-hoc remote server: add --url URL",
        ),
        (
            &["tools", "--name", "foo"],
            "--name names an ad-hoc server: add `--url URL` or `-- COMMAND ARGS…`",
        ),
        (
            &["tools", "--name", name_esc, "--", "true"],
            "--name `Bad\\u{1b}[31m` is not a server key: lowercase letters, digits, `-` and `_`, \
             starting with a letter, 2 to 32 characters",
        ),
        (
            &["tools", "--url", url, "--header", "nocolon-s3cr3t"],
            "--header ``: no `:`; give `--header 'Name: value'`",
        ),
        (
            &["tools", "--url", url, "--header", header_esc],
            "--header `X\\u{1b}K`: not a header name; give `--header 'Name: value'`",
        ),
        (
            &["tools", "--url", url, "--header", secret_header],
            "--header `X-Key`: the value has a character a header cannot carry; give \
             `--header 'Name: value'`",
        ),
        (
            &["tools", "--project", ".", "--", "true"],
            "an ad-hoc server (`-- COMMAND` or `--url`) is used without a project: drop \
             --project, or declare the server in project.yaml",
        ),
        (
            &["lock", "--", "true"],
            "`lock` needs a project directory (it writes or reads its mcp.lock); an ad-hoc \
             server (`-- COMMAND`, `--url`) has none: declare it in project.yaml",
        ),
    ];
    for (args, line) in cases {
        let o = run_in(tmp.path(), args);
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (Some(2), "", format!("error: {line}\n").as_str()),
            "{args:?}"
        );
        assert!(!o.stderr.contains("s3cr3t"), "{args:?}: {}", o.stderr);
    }
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "nothing written"
    );
}
