//! What the commands show of servers and tools (issue 37): every content block of a result,
//! whole tool definitions (`tools --json`, `describe`), who a server is (`status`), the one
//! JSON failure of every command, `tools`/`status SERVER…` starting only those servers, the
//! project found upward from the current directory, and `check`'s one line per server.

use std::path::Path;

use common::cli::{kaged, project, run, Out, OutputBounded};
use common::peers::{self, Fault};
use serde_json::Value;

use crate::common;

/// A project with the identity server (`ident`), the demo server and a server that exits
/// before `initialize` (`broken`).
fn identity_project() -> tempfile::TempDir {
    let ident = serde_json::to_string(&[
        "python3".to_owned(),
        peers::server_script("identity_server.py")
            .display()
            .to_string(),
    ])
    .unwrap();
    let demo = serde_json::to_string(&[env!("CARGO_BIN_EXE_kaged-mcp"), "demo-server"]).unwrap();
    let broken = serde_json::to_string(&peers::faulty(Fault::ExitBeforeInit)).unwrap();
    project(
        &format!(
            "mcp:\n  ident:\n    transport: stdio\n    command: {ident}\n  demo:\n    transport: stdio\n    command: {demo}\n  broken:\n    transport: stdio\n    command: {broken}\n"
        ),
        "",
    )
}

fn json_of(o: &Out) -> Value {
    serde_json::from_str(o.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", o.stdout, o.stderr))
}

#[test]
fn call_shows_every_content_block_and_json_keeps_the_results_meta() {
    let d = identity_project();
    let o = run(
        &["call", "mcp.ident.show", "--args", r#"{"kind":"all"}"#],
        d.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "every kind follows\n[image image/png, 4 bytes]\n[audio audio/wav, 3 bytes]\n\
         [resource link test://doc/1: Doc One, text/markdown]\n\
         [resource test://doc/2, text/plain]\nembedded text\n\
         [resource test://bin/3: blob application/zip, 2 bytes]\n"
    );
    let o = run(
        &[
            "call",
            "mcp.ident.show",
            "--args",
            r#"{"kind":"all"}"#,
            "--json",
        ],
        d.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v = json_of(&o);
    assert_eq!(v["_meta"]["trace"], "t-1", "{v}");
    assert_eq!(v["content"].as_array().unwrap().len(), 6, "{v}");
}

#[test]
fn call_and_prompt_show_the_blocks_of_server_everything() {
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
    let o = run(&["call", "mcp.everything.get-tiny-image"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let image = o
        .stdout
        .lines()
        .find(|l| l.starts_with("[image image/png, "))
        .unwrap_or_else(|| panic!("{}", o.stdout));
    let bytes: usize = image
        .trim_start_matches("[image image/png, ")
        .trim_end_matches(" bytes]")
        .parse()
        .unwrap();
    assert!(bytes > 100, "{image}");

    let o = run(
        &[
            "call",
            "mcp.everything.get-resource-links",
            "--args",
            r#"{"count": 2}"#,
        ],
        d.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let links = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("[resource link demo://resource/") && l.ends_with("]"))
        .count();
    assert_eq!(links, 2, "{}", o.stdout);

    let o = run(&["call", "mcp.everything.get-resource-reference"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout
            .contains("[resource demo://resource/dynamic/text/1, text/plain]\nResource 1:"),
        "{}",
        o.stdout
    );

    // `prompt` shows an embedded resource as `call` does (one renderer).
    let o = run(
        &[
            "prompt",
            "everything",
            "resource-prompt",
            "--args",
            r#"{"resourceType": "Text", "resourceId": "1"}"#,
        ],
        d.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout
            .contains("user: [resource demo://resource/dynamic/text/1, text/plain]\nResource 1:"),
        "{}",
        o.stdout
    );
}

#[test]
fn tools_keeps_whole_definitions_and_shows_parameters_and_hints() {
    let d = identity_project();
    let o = run(&["tools", "ident", "--json"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v = json_of(&o);
    let tool = &v[0];
    assert_eq!(tool["name"], "mcp.ident.show", "{v}");
    let listed = &tool["mcp_tool"];
    assert_eq!(listed["title"], "Show Everything", "{v}");
    assert_eq!(listed["annotations"]["readOnlyHint"], true, "{v}");
    assert_eq!(listed["annotations"]["futureHint"], 7, "{v}");
    assert_eq!(listed["execution"]["taskSupport"], "forbidden", "{v}");
    assert_eq!(
        listed["icons"][0]["src"], "https://example.test/show.png",
        "{v}"
    );
    assert_eq!(listed["_meta"]["vendor/key"], "tool-meta", "{v}");
    assert_eq!(
        listed["outputSchema"]["properties"]["ok"]["type"],
        "boolean"
    );
    assert_eq!(listed["inputSchema"]["required"][0], "kind");

    let o = run(&["tools", "ident"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "mcp.ident.show(kind: string, count?: integer) [read-only, closed-world]\tAnswers one block of every kind.\n"
    );
}

#[test]
fn describe_shows_title_parameters_output_schema_and_annotations() {
    let d = identity_project();
    let o = run(&["describe", "mcp.ident.show"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let want = [
        "mcp.ident.show — Show Everything",
        "  The second line of the description.",
        "  NAME   TYPE     REQUIRED  DEFAULT  VALUES  DESCRIPTION",
        "  kind   string   yes       -        \"all\"   Which blocks",
        "  count  integer  no        1        -       How many times",
        "output schema:",
        "        \"type\": \"boolean\"",
        "  read-only    yes",
        "  destructive  yes (moot: the tool is read-only)",
        "  open-world   no",
        "  futureHint   7",
        "task support: forbidden",
    ];
    for line in want {
        assert!(
            o.stdout.lines().any(|l| l == line),
            "no line {line:?} in\n{}",
            o.stdout
        );
    }
    // Only the tool's server is started: `broken` says nothing.
    assert!(!o.stderr.contains("broken"), "{}", o.stderr);

    let o = run(&["describe", "mcp.ident.show", "--json"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(json_of(&o)["mcp_tool"]["title"], "Show Everything");

    let o = run(&["describe", "mcp.ident.nope", "--json"], d.path());
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    let v = json_of(&o);
    assert_eq!(v["error"]["kind"], "unknown_tool", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains(&format!(
        "kaged-mcp tools --project {} ident",
        d.path().display()
    )));
}

#[test]
fn status_says_who_each_server_is_and_documents_every_json_key() {
    let d = identity_project();
    let o = run(&["status", "ident"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert!(
        lines[0].starts_with("ident\tready\t1 tool\tlegacy "),
        "{}",
        o.stdout
    );
    assert_eq!(
        lines[1],
        "  server: identity-server 3.1.4 (Identity Server, https://example.test/identity)"
    );
    assert_eq!(lines[2], "  capabilities: logging, tools (listChanged)");
    assert_eq!(lines[3], "  offers: tools");
    assert_eq!(
        lines[4],
        "  instructions: Call show first. (…; --json has all of them)"
    );

    let o = run(&["status", "ident", "--json"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v = json_of(&o);
    let s = &v[0];
    assert_eq!(s["server_info"]["name"], "identity-server", "{v}");
    assert_eq!(s["server_info"]["version"], "3.1.4", "{v}");
    assert_eq!(
        s["server_info"]["websiteUrl"],
        "https://example.test/identity"
    );
    assert_eq!(s["capabilities"]["tools"]["listChanged"], true, "{v}");
    assert_eq!(
        s["instructions"],
        "Call show first.\nThen look at every block.\nThat is all."
    );
    assert_eq!(s["era"], "legacy");
    assert!(s["protocol_version"].is_string(), "{v}");

    let help = kaged().args(["status", "--help"]).output_bounded();
    let help = String::from_utf8_lossy(&help.stdout);
    for key in s.as_object().unwrap().keys() {
        assert!(
            help.contains(key.as_str()),
            "`{key}` is not in status --help:\n{help}"
        );
    }
}

#[test]
fn tools_and_status_start_only_the_servers_named() {
    let d = identity_project();
    // `broken` exits before initialize; naming only the others never starts it: exit 0.
    let o = run(&["tools", "demo", "ident"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("mcp.demo.echo("), "{}", o.stdout);
    assert!(o.stdout.contains("mcp.ident.show("), "{}", o.stdout);
    assert!(!o.stderr.contains("broken"), "{}", o.stderr);
    let o = run(&["status", "demo"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let servers: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(servers, ["demo"], "{}", o.stdout);
    // All of them, `broken` included: exit 1.
    assert_eq!(run(&["status"], d.path()).code, Some(1));

    for cmd in ["tools", "status"] {
        let o = run(&[cmd, "demo", "nosuch"], d.path());
        assert_eq!(o.code, Some(2), "{cmd}: {}", o.stderr);
        assert!(
            o.stderr.contains(
                "error: no server `nosuch` in the project; the declared servers: ident, demo, broken"
            ),
            "{cmd}: {}",
            o.stderr
        );
        let o = run(&[cmd, "nosuch", "--json"], d.path());
        assert_eq!(json_of(&o)["error"]["kind"], "unknown_server", "{cmd}");
    }
}

/// `kaged-mcp <args>` run in `cwd`, without `--project`.
fn run_in(cwd: &Path, args: &[&str]) -> Out {
    kaged().args(args).current_dir(cwd).output_bounded().into()
}

#[test]
fn the_project_is_the_nearest_directory_upward_holding_project_yaml() {
    let d = identity_project();
    let deep = d.path().join("src/a/b");
    std::fs::create_dir_all(&deep).unwrap();
    let o = run_in(&deep, &["tools", "demo"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("mcp.demo.echo("), "{}", o.stdout);
    // A nearer project.yaml wins.
    std::fs::write(d.path().join("src/project.yaml"), "mcp: {}\n").unwrap();
    let o = run_in(&deep, &["check"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("0 server(s)"), "{}", o.stdout);

    let help = run_in(&deep, &["tools", "--help"]);
    assert!(
        help.stdout
            .contains("the nearest directory holding project.yaml"),
        "{}",
        help.stdout
    );
}

#[test]
fn every_json_failure_is_one_error_object_on_stdout() {
    let d = identity_project();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["read", "demo", "demo://nothing", "--json"],
            1,
            "request_failed",
        ),
        (&["prompt", "demo", "nope", "--json"], 1, "request_failed"),
        (
            &["complete", "demo", "--prompt", "p", "a", "", "--json"],
            1,
            "request_failed",
        ),
        (&["read", "nosuch", "x://y", "--json"], 2, "unknown_server"),
        (
            &["prompt", "demo", "p", "--args", "[1]", "--json"],
            2,
            "usage",
        ),
        (
            &["call", "mcp.demo.echo", "--args", "{", "--json"],
            2,
            "usage",
        ),
        (&["call", "mcp.demo.nope", "--json"], 1, "unknown_tool"),
        (&["skill", "demo", "nope", "--json"], 1, "request_failed"),
        (&["tools", "--json", "--bogus-flag"], 2, "usage"),
    ];
    for (args, code, kind) in cases {
        let o = run(args, d.path());
        assert_eq!(o.code, Some(*code), "{args:?}: {}", o.stderr);
        assert_eq!(o.stdout.lines().count(), 1, "{args:?}: {}", o.stdout);
        let v = json_of(&o);
        let error = v["error"]
            .as_object()
            .unwrap_or_else(|| panic!("{args:?}: {v}"));
        assert_eq!(error["kind"], *kind, "{args:?}: {v}");
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{v}"
        );
        assert!(o.stderr.contains("error: "), "{args:?}: {}", o.stderr);
    }
    // A project that does not load, with --json: the same object.
    let bad = project("mcp:\n  x:\n    transport: websocket\n", "");
    for cmd in ["tools", "status", "resources", "prompts", "skills", "shell"] {
        let o = run(&[cmd, "--json"], bad.path());
        assert_eq!(o.code, Some(2), "{cmd}: {}", o.stderr);
        assert_eq!(json_of(&o)["error"]["kind"], "config", "{cmd}");
    }
    // The shell answers a failed line with the same object.
    let o = common::cli::shell(
        d.path(),
        &["--json"],
        &["call mcp.demo.echo [1]", "nonsense"],
    );
    let answers: Vec<Value> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers[0]["error"]["kind"], "usage", "{answers:?}");
    assert_eq!(answers[1]["error"]["kind"], "usage", "{answers:?}");
    // Every command that prints JSON documents its exit codes.
    for cmd in [
        &["tools"][..],
        &["describe"],
        &["call"],
        &["status"],
        &["shell"],
        &["resources"],
        &["read"],
        &["prompts"],
        &["prompt"],
        &["complete"],
        &["skills"],
        &["skill"],
        &["auth", "status"],
    ] {
        let o: Out = kaged().args(cmd).arg("--help").output_bounded().into();
        assert!(
            o.stdout.contains("Exit codes: 0") && o.stdout.contains("{\"error\": {\"kind\""),
            "{cmd:?} --help:\n{}",
            o.stdout
        );
    }
}

#[test]
fn check_prints_one_line_per_server_and_the_detail_with_v() {
    let d = identity_project();
    let o = run(&["check"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // The project's line, one per server, then what mcp.lock pins.
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", o.stdout);
    assert!(lines[4].starts_with("no mcp.lock: "), "{}", o.stdout);
    assert!(
        lines[0].ends_with(": 3 server(s) (-v for each one's settings)"),
        "{}",
        o.stdout
    );
    let demo: Vec<&str> = lines[2].split('\t').collect();
    assert_eq!(demo[0], "demo");
    assert_eq!(demo[1], "stdio");
    assert!(demo[2].ends_with("kaged-mcp demo-server"), "{}", lines[2]);
    assert_eq!(demo[3], "ok");
    let o = run(&["check", "-v"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout.contains("\ndemo (stdio)\n  command: "),
        "{}",
        o.stdout
    );
    assert!(o.stdout.lines().count() > 20, "{}", o.stdout);

    // A disabled server and a missing secret are its state.
    let d = project(
        "mcp:\n  off:\n    transport: stdio\n    command: [x]\n  web:\n    transport: streamable-http\n    url: https://u:pw@example.test/mcp?key=abc\n    auth: {type: bearer, secret_ref: k.web}\n",
        "[mcp.off]\ndisabled = true\n",
    );
    let o = run(&["check"], d.path());
    assert!(
        o.stdout.contains("off\tstdio\tx\tdisabled (local.toml)\n"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("web\tstreamable-http\thttps://example.test/mcp?…\tsecret MISSING: k.web\n"),
        "{}",
        o.stdout
    );
}
