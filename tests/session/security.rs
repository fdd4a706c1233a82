//! Security checks, run as an operator would: the built binary at `RUST_LOG=trace`, real
//! servers, and the files an operator writes.

use std::process::Command;

use common::cli::OutputBounded;
use common::peers::{self, Fault, SseFault, SsePeer};

use crate::common;

const SECRET: &str = "sk-live-TOPSECRET-4242";

/// `kaged-mcp <command> --project <project>`; add the rest and run it.
fn kaged(command: &str, project: &tempfile::TempDir) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kaged-mcp"));
    c.args([command, "--project"]).arg(project.path());
    c
}

fn project(yaml: &str, local: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("project.yaml"), yaml).unwrap();
    std::fs::write(d.path().join("local.toml"), local).unwrap();
    d
}

fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn no_secret_in_any_output_at_trace_level() {
    let peer = SsePeer::start_fault(SseFault::Auth, &["--secret", SECRET]).unwrap();
    let yaml = format!(
        "mcp:\n  good:\n    transport: sse\n    url: {url}\n    auth: {{ type: bearer, secret_ref: keys.good }}\n  custom:\n    transport: sse\n    url: {url}\n    auth: {{ type: header, header_name: X-API-Key, secret_ref: keys.good }}\n  wrong:\n    transport: sse\n    url: {url}\n    auth: {{ type: bearer, secret_ref: keys.wrong }}\n",
        url = peer.sse_url()
    );
    let local = format!("[secrets.keys]\ngood = \"{SECRET}\"\nwrong = \"{SECRET}-but-wrong\"\n");
    let d = project(&yaml, &local);
    for cmd in [
        vec!["check"],
        vec!["tools", "--json"],
        vec!["status", "--json"],
        vec![
            "call",
            "mcp.good.echo",
            "--args",
            r#"{"message":"m"}"#,
            "--json",
        ],
        vec!["call", "mcp.custom.echo", "--args", r#"{"message":"m"}"#],
        vec!["call", "mcp.wrong.echo", "--args", r#"{"message":"m"}"#],
    ] {
        let out = kaged(cmd[0], &d)
            .args(&cmd[1..])
            .env("RUST_LOG", "trace")
            .output_bounded();
        let text = all_output(&out);
        assert!(text.len() > 100, "{cmd:?} printed almost nothing: {text}");
        assert!(
            !text.contains("TOPSECRET"),
            "{cmd:?} leaked the secret:\n{text}"
        );
        if cmd[0] == "check" {
            // `check` reads the configuration and connects nothing: each server's line is `ok`.
            assert_eq!(out.status.code(), Some(0), "{text}");
            for name in ["good", "custom", "wrong"] {
                let line = format!("{name}\tsse\t{}\tok\n", peer.sse_url());
                assert!(text.contains(&line), "no {line:?} in: {text}");
            }
        }
        if cmd.get(1) == Some(&"mcp.good.echo") {
            assert_eq!(out.status.code(), Some(0), "{text}");
            let result: serde_json::Value =
                serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(
                result["content"],
                serde_json::json!([{"type": "text", "text": "Echo: m"}]),
                "{text}"
            );
            assert_eq!(result["isError"], false, "{text}");
        }
        if cmd.get(1) == Some(&"mcp.wrong.echo") {
            assert_eq!(out.status.code(), Some(1), "{text}");
        }
    }
    let st = kaged("status", &d).output_bounded();
    let text = all_output(&st);
    assert!(
        text.contains("wrong\tfailed"),
        "a 401 names the server: {text}"
    );
}

#[test]
fn a_header_value_with_cr_or_lf_is_refused() {
    for bad in ["a\\r\\nX-Evil: 1", "a\\nb", "a\\rb"] {
        let d = project(
            &format!(
                "mcp:\n  s1:\n    transport: sse\n    url: http://127.0.0.1:9/sse\n    headers:\n      X-Flag: \"{bad}\"\n"
            ),
            "",
        );
        let out = kaged("check", &d).output_bounded();
        assert_eq!(out.status.code(), Some(2));
        assert!(all_output(&out).contains("mcp.s1.headers.X-Flag: the value contains CR or LF"));
    }
    // A secret with a line break cannot become a header either; the error does not show it.
    let d = project(
        "mcp:\n  s1:\n    transport: sse\n    url: http://127.0.0.1:9/sse\n    auth: { type: bearer, secret_ref: k.s }\n",
        &format!("[secrets.k]\ns = \"{SECRET}\\r\\nX-Evil: 1\"\n"),
    );
    let out = kaged("status", &d).output_bounded();
    let text = all_output(&out);
    assert!(text.contains("s1\tfailed"), "{text}");
    assert!(!text.contains("TOPSECRET"), "{text}");
}

#[test]
fn a_foreign_origin_endpoint_is_refused_and_nothing_is_posted_there() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let peer = SsePeer::start_fault(
        SseFault::ForeignEndpoint,
        &["--log", log.path().to_str().unwrap(), "--secret", SECRET],
    )
    .unwrap();
    let d = project(
        &format!(
            "mcp:\n  s1:\n    transport: sse\n    url: {}\n    auth: {{ type: bearer, secret_ref: k.s }}\n",
            peer.sse_url()
        ),
        &format!("[secrets.k]\ns = \"{SECRET}\"\n"),
    );
    let out = kaged("status", &d).output_bounded();
    let text = all_output(&out);
    assert!(text.contains("another origin"), "{text}");
    let logged = std::fs::read_to_string(log.path()).unwrap_or_default();
    assert!(
        !logged.contains("\"POST\""),
        "something was POSTed: {logged}"
    );
}

#[test]
fn a_cwd_escaping_through_dotdot_or_a_symlink_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let d = project(
        "mcp:\n  s1:\n    transport: stdio\n    command: [\"true\"]\n    cwd: ../x\n",
        "",
    );
    let out = kaged("check", &d).output_bounded();
    assert_eq!(out.status.code(), Some(2));
    assert!(all_output(&out).contains("mcp.s1.cwd: `../x` escapes the project root"));

    let d = project(
        "mcp:\n  s1:\n    transport: stdio\n    command: [\"true\"]\n    cwd: link\n",
        "",
    );
    std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
    let out = kaged("status", &d).output_bounded();
    let text = all_output(&out);
    assert!(text.contains("s1\tfailed"), "{text}");
    assert!(text.contains("outside the project root"), "{text}");
}

#[test]
fn sampling_is_never_advertised_and_always_refused() {
    let d = project(
        &format!(
            "mcp:\n  s1:\n    transport: stdio\n    command: {}\n",
            serde_json::to_string(&peers::faulty(Fault::ServerRequests)).unwrap()
        ),
        "",
    );
    let out = kaged("call", &d)
        .args(["mcp.s1.echo", "--args", "{}"])
        .env("RUST_LOG", "kaged_mcp=warn")
        .output_bounded();
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The server reports what its ping and sampling requests got back (each answer without
    // its "jsonrpc" member): the ping answered with an empty result, sampling refused.
    let answers: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(
        answers["ping"],
        serde_json::json!({"id": "p1", "result": {}}),
        "{text}"
    );
    assert_eq!(answers["sampling"]["id"], 7, "{text}");
    assert_eq!(answers["sampling"]["error"]["code"], -32601, "{text}");
    assert!(
        text.contains("-32601"),
        "sampling refused with method not found: {text}"
    );
    assert!(
        text.contains("sampling/createMessage"),
        "a WARN names the method: {text}"
    );
}

#[test]
fn a_stdio_server_gets_the_daemons_environment_plus_the_declared_env() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let d = project(
        &format!(
            "mcp:\n  ev:\n    transport: stdio\n    command: {}\n    env:\n      DECLARED_VAR: from-project\n",
            serde_json::to_string(&cmd).unwrap()
        ),
        "",
    );
    let out = kaged("call", &d)
        .args(["mcp.ev.get-env", "--args", "{}"])
        .env("DAEMON_ONLY_VAR", "from-daemon")
        .output_bounded();
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("from-project"),
        "declared env missing: {text}"
    );
    assert!(
        text.contains("from-daemon"),
        "daemon env not inherited: {text}"
    );
}
