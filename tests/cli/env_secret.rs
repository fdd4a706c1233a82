//! A stdio server's `env` secret (`{ secret_ref: a.b }`) through the built `kaged-mcp` binary:
//! the child process gets the value from `local.toml`, and nothing the CLI prints holds it,
//! even at `RUST_LOG=kaged_mcp=trace`.

use common::cli::Out;
use common::peers;

use crate::common;

const SECRET: &str = "ntn_supersecret-6f1c";

/// A project with two `tests/servers/env_server.py` servers comparing `$TOKEN` with
/// `$EXPECTED`: `right` gets the secret `s.token`, `wrong` the secret `s.other`.
fn project() -> tempfile::TempDir {
    let script = peers::server_script("env_server.py");
    let command =
        serde_json::to_string(&["python3", script.to_str().unwrap(), "TOKEN", "EXPECTED"]).unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("project.yaml"),
        format!(
            "mcp:\n  right:\n    transport: stdio\n    command: {command}\n    env:\n      TOKEN: {{ secret_ref: s.token }}\n  wrong:\n    transport: stdio\n    command: {command}\n    env:\n      TOKEN: {{ secret_ref: s.other }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        d.path().join("local.toml"),
        format!("[secrets.s]\ntoken = \"{SECRET}\"\nother = \"not-it\"\n"),
    )
    .unwrap();
    d
}

/// `kaged-mcp <args[0]> --project DIR <args[1..]>` at trace level, with the expected value in
/// the daemon's environment (the servers inherit it; the project never holds it).
fn run(args: &[&str], dir: &tempfile::TempDir) -> Out {
    common::cli::run_env(
        args,
        dir.path(),
        &[("RUST_LOG", "kaged_mcp=trace"), ("EXPECTED", SECRET)],
    )
}

#[test]
fn a_stdio_server_gets_its_env_secret_and_no_output_shows_it() {
    let d = project();
    let o = run(&["call", "mcp.right.compare", "--args", "{}"], &d);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "match", "{}", o.stderr);
    assert!(
        o.stderr.contains("server process spawned"),
        "the logs to search are missing: {}",
        o.stderr
    );
    assert!(
        !o.stdout.contains(SECRET) && !o.stderr.contains(SECRET),
        "{}\n{}",
        o.stdout,
        o.stderr
    );

    // The comparison tells values apart: the other secret does not match.
    let o = run(&["call", "mcp.wrong.compare", "--args", "{}"], &d);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "mismatch", "{}", o.stderr);
    assert!(!o.stdout.contains(SECRET) && !o.stderr.contains(SECRET));

    for args in [&["check"][..], &["check", "-v"], &["status"], &["tools"]] {
        let o = run(args, &d);
        assert_eq!(o.code, Some(0), "{args:?}: {}", o.stderr);
        assert!(
            !o.stdout.contains(SECRET) && !o.stderr.contains(SECRET),
            "{args:?}: {}\n{}",
            o.stdout,
            o.stderr
        );
    }
}

/// One server's unfilled `env` secret fails that server alone (issue 49 point 6), as an
/// unfilled `auth` secret does: a call to the other server runs with its own secret; a call to
/// this one, and `check`, name the variable, the ref, the line and where to set it, exit 2.
#[test]
fn an_unfilled_env_secret_fails_its_server_alone() {
    let d = project();
    let script = peers::server_script("env_server.py");
    let command =
        serde_json::to_string(&["python3", script.to_str().unwrap(), "TOKEN", "EXPECTED"]).unwrap();
    let yaml = std::fs::read_to_string(d.path().join("project.yaml")).unwrap();
    std::fs::write(
        d.path().join("project.yaml"),
        format!(
            "{yaml}  unfilled:\n    transport: stdio\n    command: {command}\n    env:\n      TOKEN: {{ secret_ref: s.unset }}\n"
        ),
    )
    .unwrap();

    let o = run(&["call", "mcp.right.compare", "--args", "{}"], &d);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "match", "{}", o.stderr);

    let needs = "mcp.unfilled.env.TOKEN: server `unfilled` needs secret `s.unset` for its \
                 environment variable `TOKEN`, which is not set in ";
    let o = run(&["call", "mcp.unfilled.compare", "--args", "{}"], &d);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("project.yaml:16:28: {needs}")),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("spawned"), "not started: {}", o.stderr);

    let o = run(&["check"], &d);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains(needs), "{}", o.stderr);
    assert_eq!(o.stderr.matches("needs secret").count(), 1, "{}", o.stderr);
    let states: Vec<(&str, &str)> = o
        .stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 4).then(|| (f[0], f[3]))
        })
        .collect();
    assert_eq!(
        states,
        [
            ("right", "ok"),
            ("wrong", "ok"),
            ("unfilled", "secret MISSING: s.unset")
        ],
        "{}",
        o.stdout
    );
    for text in [&o.stdout, &o.stderr] {
        assert!(!text.contains(SECRET), "{text}");
    }
}
