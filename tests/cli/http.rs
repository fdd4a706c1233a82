//! The built `kaged-mcp` binary against a Streamable HTTP server (the fault server in `ok` mode
//! and with a wrong secret): `check`, `tools`, `call`, `status` and `shell`, with and without
//! `--json`, work exactly as with the other transports.

use common::peers::{self, SsePeer};
use serde_json::Value;

use crate::common;

const SECRET: &str = "tok-cli-4d2e-secret";

fn project(url: &str, secret: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("project.yaml"),
        format!(
            "mcp:\n  remote:\n    transport: streamable-http\n    url: {url}\n    auth: {{ type: bearer, secret_ref: api_keys.remote }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        d.path().join("local.toml"),
        format!("[secrets.api_keys]\nremote = \"{secret}\"\n"),
    )
    .unwrap();
    d
}

fn run(args: &[&str], dir: &tempfile::TempDir) -> (Option<i32>, String, String) {
    let o = common::cli::run(args, dir.path());
    (o.code, o.stdout, o.stderr)
}

#[test]
fn every_command_works_over_streamable_http() {
    let peer =
        SsePeer::start_reporting_port(&peers::http_fault_server("auth", &["--secret", SECRET]))
            .unwrap();
    let d = project(&peer.mcp_url(), SECRET);

    let (code, out, err) = run(&["check", "-v"], &d);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("remote (streamable-http)"), "{out}");
    assert!(out.contains(&format!("url: {}", peer.mcp_url())), "{out}");
    assert!(out.contains("secret_ref api_keys.remote (set)"), "{out}");

    let (code, out, err) = run(&["tools"], &d);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("mcp.remote.echo"), "{out}");

    let (code, out, err) = run(
        &[
            "call",
            "mcp.remote.echo",
            "--args",
            r#"{"message": "over http"}"#,
        ],
        &d,
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "Echo: over http");

    let (code, out, err) = run(
        &[
            "call",
            "--json",
            "mcp.remote.echo",
            "--args",
            r#"{"message": "j"}"#,
        ],
        &d,
    );
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["content"][0]["text"], "Echo: j");

    let (code, out, err) = run(&["status", "--json"], &d);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v[0]["server"], "remote");
    assert_eq!(v[0]["state"], "ready");
    assert_eq!(v[0]["transport"], "streamable-http");

    let out = common::cli::shell(
        d.path(),
        &["--json"],
        &[
            r#"call mcp.remote.echo {"message": "sh"}"#,
            "status",
            "quit",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("Echo: sh"), "{}", out.stdout);
    for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(!text.contains(SECRET), "{name}: {text}");
    }
}

#[test]
fn a_refused_secret_exits_1_naming_the_server_and_its_secret_ref() {
    let peer =
        SsePeer::start_reporting_port(&peers::http_fault_server("auth", &["--secret", SECRET]))
            .unwrap();
    let d = project(&peer.mcp_url(), "not-it-9c0b");
    let (code, out, err) = run(
        &["call", "mcp.remote.echo", "--args", r#"{"message": "x"}"#],
        &d,
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("`remote`")
            && err.contains("401 Unauthorized")
            && err.contains("`api_keys.remote`"),
        "{err}"
    );
    assert!(
        !err.contains("not-it-9c0b") && !out.contains("not-it-9c0b"),
        "{err}"
    );
    // A failed server: `status` says so in its exit code.
    let (code, out, _) = run(&["status", "--json"], &d);
    assert_eq!(code, Some(1));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v[0]["state"], "failed", "{v}");
}
