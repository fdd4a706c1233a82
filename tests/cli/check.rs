//! `kaged-mcp check` run as the built binary: exit codes and what it prints.

use std::process::Command;

use crate::common::cli::OutputBounded;

fn kaged() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kaged-mcp"))
}

#[test]
fn check_accepts_the_bundled_demo_project() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo");
    let out = kaged()
        .args(["check", "-v", "--project", dir])
        .output_bounded();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("demo (stdio)"), "{stdout}");
    assert!(stdout.contains("deny [slow]"), "{stdout}");
    assert!(
        stdout.contains("  validate: both: arguments against inputSchema, structured results against outputSchema (default; set `validate` under [mcp.<key>] in local.toml)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  tasks: required: tools that require it run as tasks (default; set `tasks` under [mcp.<key>] in local.toml)"),
        "{stdout}"
    );
}

#[test]
fn check_exits_2_naming_file_key_and_line_on_a_broken_copy() {
    let d = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/demo/project.yaml"
    ))
    .unwrap();
    let broken = good.replace("transport: stdio", "transport: websocket");
    std::fs::write(d.path().join("project.yaml"), &broken).unwrap();
    let line = broken
        .lines()
        .position(|l| l.contains("websocket"))
        .unwrap()
        + 1;
    let out = kaged()
        .args(["check", "-v", "--project"])
        .arg(d.path())
        .output_bounded();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let want =
        format!("project.yaml:{line}:16: mcp.demo.transport: unsupported transport `websocket`");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains(&want), "wanted {want}\n{stderr}");
}

#[test]
fn check_exits_2_on_a_missing_secret_and_never_prints_secrets() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("project.yaml"),
        "mcp:\n  gh:\n    transport: sse\n    url: https://example.test/sse\n    auth:\n      type: bearer\n      secret_ref: api_keys.gh\n  kv:\n    transport: sse\n    url: https://example.test/sse\n    auth:\n      type: header\n      header_name: X-Key\n      secret_ref: api_keys.kv\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("local.toml"),
        "[secrets.api_keys]\nkv = \"TOPSECRET-1\"\n",
    )
    .unwrap();
    let out = kaged()
        .args(["check", "-v", "--project"])
        .arg(d.path())
        .output_bounded();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("server `gh` needs secret `api_keys.gh`"),
        "{stderr}"
    );
    assert!(stdout.contains("secret_ref api_keys.kv (set)"), "{stdout}");
    assert!(!stdout.contains("TOPSECRET") && !stderr.contains("TOPSECRET"));
}

#[test]
fn check_honours_local_and_config_flags() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("project.yaml"),
        "mcp:\n  db:\n    transport: stdio\n    command: [x]\n",
    )
    .unwrap();
    let local = d.path().join("ops.toml");
    std::fs::write(
        &local,
        "[mcp.db]\ndisabled = true\ntimeout_ms = 1234\nprobe_timeout_ms = 2500\nvalidate = \"results\"\ntasks = \"off\"\n",
    )
    .unwrap();
    let cfg = d.path().join("config.toml");
    std::fs::write(&cfg, "[mcp]\nresult_max_bytes = 99\n").unwrap();
    let out = kaged()
        .args(["check", "-v", "--project"])
        .arg(d.path())
        .arg("--local")
        .arg(&local)
        .arg("--config")
        .arg(&cfg)
        .output_bounded();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout.contains("disabled: yes"), "{stdout}");
    assert!(stdout.contains("timeout: 1234 ms"), "{stdout}");
    assert!(
        stdout.contains("probe timeout: 2500 ms (local.toml)"),
        "{stdout}"
    );
    assert!(stdout.contains("result cap 99 bytes"), "{stdout}");
    assert!(
        stdout.contains("  validate: results: structured results against outputSchema; arguments unchecked (local.toml)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  tasks: off: no call runs as a task; tools that require one are not registered (local.toml)"),
        "{stdout}"
    );
}

#[test]
fn usage_errors_exit_2() {
    // No --project, and no project.yaml from the current directory up.
    let empty = tempfile::tempdir().unwrap();
    let out = kaged()
        .args(["check"])
        .current_dir(empty.path())
        .output_bounded();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("or any directory above it; give --project DIR"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kaged()
        .args(["check", "--project", "/nonexistent/dir"])
        .output_bounded();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: /nonexistent/dir/project.yaml"));
}

#[test]
fn check_prints_an_env_secret_as_stars_and_plain_values_as_written() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("project.yaml"),
        "mcp:\n  notion:\n    transport: stdio\n    command: [notion-mcp]\n    env:\n      TOKEN: {secret_ref: s.token}\n      LOG_LEVEL: warn\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("local.toml"),
        "[secrets.s]\ntoken = \"ntn_supersecret\"\n",
    )
    .unwrap();
    let out = kaged()
        .args(["check", "-v", "--project"])
        .arg(d.path())
        .env("RUST_LOG", "kaged_mcp=trace")
        .output_bounded();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("  env: LOG_LEVEL=warn TOKEN=***\n"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("ntn_supersecret") && !stderr.contains("ntn_supersecret"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn check_exits_2_on_a_missing_env_secret_naming_file_key_line_and_ref() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("project.yaml"),
        "mcp:\n  notion:\n    transport: stdio\n    command: [notion-mcp]\n    env:\n      TOKEN: {secret_ref: s.token}\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("local.toml"),
        "[secrets.s]\nother = \"ntn_supersecret\"\n",
    )
    .unwrap();
    let out = kaged()
        .args(["check", "-v", "--project"])
        .arg(d.path())
        .output_bounded();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "project.yaml:6:27: mcp.notion.env.TOKEN: server `notion` needs secret `s.token` for its environment variable `TOKEN`, which is not set in "
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("add `token = \"…\"` under [secrets.s]"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("ntn_supersecret") && !stderr.contains("ntn_supersecret"),
        "{stdout}\n{stderr}"
    );
}

/// The `era:` line `check` prints for the only server of the project in `dir`.
fn era_line(dir: &std::path::Path) -> String {
    let out = kaged()
        .args(["check", "-v", "--project"])
        .arg(dir)
        .output_bounded();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let line = stdout.lines().find(|l| l.starts_with("  era: "));
    line.unwrap_or_else(|| panic!("no era line: {stdout}"))
        .to_owned()
}

#[test]
fn check_on_an_sse_server_names_exactly_the_era_values_it_accepts() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("project.yaml"),
        "mcp:\n  old:\n    transport: sse\n    url: https://example.test/sse\n",
    )
    .unwrap();
    let line = era_line(d.path());
    assert!(line.starts_with("  era: legacy"), "{line}");
    // Every value the line names loads; every value that loads is named.
    for era in ["auto", "legacy", "modern"] {
        std::fs::write(
            d.path().join("local.toml"),
            format!("[mcp.old]\nera = \"{era}\"\n"),
        )
        .unwrap();
        let accepted = kaged()
            .args(["check", "-v", "--project"])
            .arg(d.path())
            .output_bounded()
            .status
            .success();
        let named = line.contains(&format!("\"{era}\""));
        assert_eq!(named, accepted, "era {era:?}, accepted {accepted}: {line}");
        if accepted {
            assert!(era_line(d.path()).starts_with("  era: legacy"), "{era}");
        }
    }
}

#[test]
fn check_shows_the_log_level_and_the_roots_and_refuses_roots_that_do_not_resolve() {
    use crate::common::cli::{project, run};
    let d = project(
        "mcp:\n  fs:\n    transport: stdio\n    command: [\"srv\"]\n    roots: [./data]\n  other:\n    transport: stdio\n    command: [\"srv\"]\n",
        "[mcp.fs]\nlog_level = \"warning\"\n",
    );
    std::fs::create_dir(d.path().join("data")).unwrap();
    let o = run(&["check", "-v"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("  log level: warning\n"), "{}", o.stdout);
    assert!(o.stdout.contains("  roots: [./data]\n"), "{}", o.stdout);
    assert!(
        o.stdout.contains("  log level: none: the server decides (set `log_level` under [mcp.<key>] in local.toml)\n"),
        "{}",
        o.stdout
    );
    // A root that is not there: found by check, not only at start.
    std::fs::remove_dir(d.path().join("data")).unwrap();
    let o = run(&["check", "-v"], d.path());
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("server `fs`: roots") && o.stderr.contains("data"),
        "{}",
        o.stderr
    );
}
