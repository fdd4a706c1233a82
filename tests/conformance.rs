//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, installed by
//! `.ci/install-peers` with the Node 22 it needs) runs `examples/conformance_client.rs` through
//! EVERY client scenario `conformance list` prints (core, `auth/*`, draft and extension ones).
//! Each must pass with no failure and no warning (the suite's own verdict: it exits 0 only
//! then), except those listed with a reason in `tests/conformance-expected-failures.txt`, which
//! must still fail (a listed scenario that passes fails the test, so the list cannot go stale).
//!
//! By hand: `node <peers>/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
//! client --command target/debug/examples/conformance_client --scenario sse-retry`.

#[path = "common/peers.rs"]
mod peers;

use std::process::Command;

/// Scenarios that must be among the listed ones (the list is read from the suite; these guard
/// against reading it wrong).
const MUST_LIST: &[&str] = &[
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
    "auth/metadata-default",
    "auth/scope-step-up",
    "auth/client-credentials-jwt",
];

/// The client scenarios of `conformance list`: the ` - name [versions]` lines after
/// "Client scenarios".
fn client_scenarios(node: &std::path::Path, entry: &std::path::Path) -> Vec<String> {
    let out = Command::new(node).arg(entry).arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip_while(|l| !l.starts_with("Client scenarios"))
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The scenarios of the expected-failures file.
fn expected_failures() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/conformance-expected-failures.txt"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_conformance_client_passes_the_suites_client_scenarios() {
    let Some((node, entry)) =
        peers::require(peers::conformance(), "@modelcontextprotocol/conformance")
    else {
        return;
    };
    let Some(client) = peers::require(
        peers::example("conformance_client"),
        "conformance_client (cargo build --example conformance_client)",
    ) else {
        return;
    };
    let scenarios = client_scenarios(&node, &entry);
    for must in MUST_LIST {
        assert!(
            scenarios.iter().any(|s| s == must),
            "`conformance list` has no client scenario {must}: {scenarios:?}"
        );
    }
    let expected = expected_failures();
    for e in &expected {
        assert!(
            scenarios.contains(e),
            "expected failure {e} is not a client scenario"
        );
    }
    let out_dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    let mut stale = Vec::new();
    for scenario in &scenarios {
        let out = Command::new(&node)
            .arg(&entry)
            .args(["client", "--scenario", scenario, "--timeout", "30000", "-o"])
            .arg(out_dir.path())
            .arg("--command")
            .arg(&client)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let verdict: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.contains("SUCCESS")
                    || l.contains("FAILURE")
                    || l.contains("WARNING")
                    || l.contains("Passed:")
                    || l.contains("OVERALL")
            })
            .collect();
        eprintln!("--- {scenario}\n{}", verdict.join("\n"));
        let passed = out.status.success() && !text.contains("FAILURE") && !text.contains("WARNING");
        match (passed, expected.contains(scenario)) {
            (false, false) => failed.push(format!("{scenario}:\n{text}")),
            (true, true) => stale.push(scenario.clone()),
            _ => {}
        }
    }
    eprintln!(
        "{} client scenarios, {} expected failures",
        scenarios.len(),
        expected.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    assert!(
        stale.is_empty(),
        "listed in tests/conformance-expected-failures.txt but passing now: {stale:?}"
    );
}
