//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, installed by
//! `.ci/install-peers` with the Node 22 it needs) runs `examples/conformance_client.rs` through
//! its client scenarios over Streamable HTTP. Each scenario must pass with no failure and no
//! warning (the suite's own verdict: it exits 0 only then).
//!
//! By hand: `node <peers>/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
//! client --command target/debug/examples/conformance_client --scenario sse-retry`.

#[path = "common/peers.rs"]
mod peers;

use std::process::Command;

/// The client scenarios this client passes.
const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
];

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
    let out_dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
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
        if !out.status.success() || text.contains("FAILURE") || text.contains("WARNING") {
            failed.push(format!("{scenario}:\n{text}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
