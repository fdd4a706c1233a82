//! The official MCP conformance suite runs `examples/conformance_client.rs` through its client
//! scenarios, installed by `.ci/install-peers` with the Node 22 it needs:
//!
//! - `@modelcontextprotocol/conformance` 0.1.16 (the release): EVERY client scenario
//!   `conformance list` prints (core, `auth/*`, draft and extension ones), each at the version
//!   the suite picks for it;
//! - 0.2.0-alpha.12 (the pre-release with the 2026-07-28 client scenarios): every client
//!   scenario it lists for 2026-07-28, run with `--spec-version 2026-07-28` (request metadata,
//!   the standard and `x-mcp-header` headers, multi round-trip request state, JSON Schema
//!   2020-12, and the auth scenarios against the stateless server), and every extension
//!   scenario it lists (skills, the OAuth grants for workloads), run at the suite's default.
//!
//! Each must pass with no failure and no warning (the suite's own verdict: it exits 0 only
//! then) and with at least one check that ran (a scenario whose checks were all skipped
//! exercised nothing), except those listed with a reason in
//! `tests/conformance-expected-failures.txt` (and `conformance-2026-expected-failures.txt`,
//! `conformance-extensions-expected-failures.txt`), which must still fail, and only for the
//! checks listed (a listed scenario that passes fails the test, so the list cannot go stale;
//! one that fails for another reason, a crash say, fails it too).
//!
//! By hand: `node <peers>/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
//! client --command target/debug/examples/conformance_client --scenario sse-retry` (and the
//! same with `<peers>/conformance-next/…` and `--spec-version 2026-07-28`).

#[path = "common/peers.rs"]
mod peers;

use std::path::Path;
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

/// The client scenarios of `conformance list`: the ` - name [versions]` lines right after
/// "Client scenarios", as `(name, versions)`.
fn client_scenarios(node: &Path, entry: &Path) -> Vec<(String, String)> {
    let out = Command::new(node).arg(entry).arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip_while(|l| !l.starts_with("Client scenarios"))
        .skip(1)
        // The section ends at the first line that is not a `  - ` item (the next section).
        .map_while(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?.to_owned();
            Some((name, words.next().unwrap_or_default().to_owned()))
        })
        .collect()
}

/// One expected failure: the scenario, and the ids of the checks it must fail (and no other).
#[derive(Debug)]
struct Expected {
    scenario: String,
    checks: Vec<String>,
}

/// The expected failures of a file under `tests/`: one scenario a line, followed by the ids of
/// the checks it fails (`#` starts a comment).
fn expected_failures(file: &str) -> Vec<Expected> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(file);
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut words = l.split_whitespace().map(str::to_owned);
            let scenario = words.next().unwrap_or_default();
            let checks: Vec<String> = words.collect();
            assert!(
                !checks.is_empty(),
                "tests/{file}: {scenario} names no check id it fails"
            );
            Expected { scenario, checks }
        })
        .collect()
}

/// The checks the suite printed: `(id, status)` from its `[id] STATUS description` lines
/// (colour codes removed).
fn checks(text: &str) -> Vec<(String, String)> {
    let plain = strip_ansi(text);
    plain
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once('[')?;
            let (id, rest) = rest.split_once(']')?;
            let status = rest.split_whitespace().next()?;
            matches!(
                status,
                "SUCCESS" | "FAILURE" | "WARNING" | "SKIPPED" | "INFO"
            )
            .then(|| (id.trim().to_owned(), status.to_owned()))
        })
        .collect()
}

/// `text` without ANSI escape sequences.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn a_scenario_passes_only_with_a_check_that_ran_and_none_that_failed() {
    let skipped = "\u{1b}[90m2026\u{1b}[0m [sep-2640-host-no-prefetch] \u{1b}[0mSKIPPED\u{1b}[0m Hosts\nPassed: 0/0, 0 failed, 0 warnings\n";
    assert_eq!(
        checks(skipped),
        [("sep-2640-host-no-prefetch".to_owned(), "SKIPPED".to_owned())]
    );
    assert!(
        !verdict(true, skipped).passed,
        "all checks skipped: nothing was exercised"
    );
    let ran = "2026 [tool-add-numbers] SUCCESS Validates\nPassed: 1/1, 0 failed, 0 warnings\n";
    assert!(verdict(true, ran).passed);
    assert!(!verdict(false, ran).passed, "a client that exits non-zero");
    let failed = "x [complete-flow-jwt-bearer       ] FAILURE no\nx [token-request] SUCCESS yes\nPassed: 1/2, 1 failed, 0 warnings\n";
    let v = verdict(true, failed);
    assert!(!v.passed);
    assert_eq!(v.failed_checks, ["complete-flow-jwt-bearer"]);
}

/// What one scenario's run showed.
struct Verdict {
    /// It passed: the client exited 0, the suite said `Passed:`, at least one check ran and
    /// succeeded, and none failed or warned. A scenario whose checks were all skipped
    /// exercised nothing, and does not pass.
    passed: bool,
    /// The ids of the checks that failed or warned.
    failed_checks: Vec<String>,
}

fn verdict(exited_ok: bool, text: &str) -> Verdict {
    let checks = checks(text);
    let failed_checks: Vec<String> = checks
        .iter()
        .filter(|(_, status)| status == "FAILURE" || status == "WARNING")
        .map(|(id, _)| id.clone())
        .collect();
    let ran = checks.iter().any(|(_, status)| status == "SUCCESS");
    let passed = exited_ok
        && text.contains("Passed:")
        && ran
        && failed_checks.is_empty()
        && !text.contains("FAILURE")
        && !text.contains("WARNING");
    Verdict {
        passed,
        failed_checks,
    }
}

/// Runs `scenarios` of the suite at `entry` (with `extra` arguments) against the
/// conformance client; fails on a scenario that fails and is not in `expected`, or that is and
/// passes.
fn run_scenarios(
    node: &Path,
    entry: &Path,
    client: &Path,
    scenarios: &[String],
    extra: &[&str],
    expected: &[Expected],
    expected_file: &str,
) {
    for e in expected {
        assert!(
            scenarios.contains(&e.scenario),
            "expected failure {} is not a client scenario that runs",
            e.scenario
        );
    }
    let out_dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    let mut stale = Vec::new();
    for scenario in scenarios {
        let out = Command::new(node)
            .arg(entry)
            .args(["client", "--scenario", scenario, "--timeout", "30000", "-o"])
            .arg(out_dir.path())
            .args(extra)
            .arg("--command")
            .arg(client)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let shown: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.contains("SUCCESS")
                    || l.contains("FAILURE")
                    || l.contains("WARNING")
                    || l.contains("Passed:")
                    || l.contains("OVERALL")
                    || l.contains("SKIPPED")
            })
            .collect();
        eprintln!("--- {scenario}\n{}", shown.join("\n"));
        let v = verdict(out.status.success(), &text);
        match (v.passed, expected.iter().find(|e| &e.scenario == scenario)) {
            (false, None) => failed.push(format!("{scenario}:\n{text}")),
            (true, Some(_)) => stale.push(scenario.clone()),
            // An expected failure must fail for its listed checks, and for nothing else (a
            // crash, a check that did not run, another check failing).
            (false, Some(e)) => {
                let listed_only = !v.failed_checks.is_empty()
                    && v.failed_checks.iter().all(|id| e.checks.contains(id));
                if !listed_only {
                    failed.push(format!(
                        "{scenario} (an expected failure of {:?}) failed with checks {:?} instead:\n{text}",
                        e.checks, v.failed_checks
                    ));
                }
            }
            (true, None) => {}
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
        "listed in tests/{expected_file} but passing now: {stale:?}"
    );
}

/// Each of `must` is among the `scenarios` the suite lists (a renamed or dropped scenario
/// must not pass unnoticed).
fn must_be_listed(scenarios: &[String], must: &[&str]) {
    for m in must {
        assert!(
            scenarios.iter().any(|s| s == m),
            "`conformance list` has no client scenario {m}: {scenarios:?}"
        );
    }
}

/// The conformance client, built first: `cargo test` builds examples only as test binaries,
/// and a `target/<profile>/examples/conformance_client` left from an earlier build would test
/// old code (a validation change once passed here that way and failed in a clean clone).
fn client() -> Option<std::path::PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = std::process::Command::new(cargo);
    build
        .args(["build", "--quiet", "--example", "conformance_client"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let built = build.status().is_ok_and(|s| s.success());
    assert!(
        built || std::env::var_os("CI").is_none(),
        "cargo build --example conformance_client failed"
    );
    peers::require(
        peers::example("conformance_client"),
        "conformance_client (cargo build --example conformance_client)",
    )
}

#[test]
fn the_conformance_client_passes_the_suites_client_scenarios() {
    let Some((node, entry)) =
        peers::require(peers::conformance(), "@modelcontextprotocol/conformance")
    else {
        return;
    };
    let Some(client) = client() else { return };
    let scenarios: Vec<String> = client_scenarios(&node, &entry)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    must_be_listed(&scenarios, MUST_LIST);
    let file = "conformance-expected-failures.txt";
    let expected = expected_failures(file);
    run_scenarios(&node, &entry, &client, &scenarios, &[], &expected, file);
}

/// 2026-07-28 scenarios that must be among the listed ones.
const MUST_LIST_2026: &[&str] = &[
    "tools_call",
    "request-metadata",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "sep-2322-client-request-state",
    "json-schema-2020-12-preservation",
    "auth/metadata-default",
];

#[test]
fn the_conformance_client_passes_the_2026_07_28_client_scenarios() {
    run_pre_release(
        "2026-07-28",
        MUST_LIST_2026,
        "conformance-2026-expected-failures.txt",
        &["--spec-version", "2026-07-28"],
    );
}

/// Runs the pre-release's client scenarios whose versions name `versions` (with `extra`
/// arguments), `must` among them, against `expected_file`.
fn run_pre_release(versions: &str, must: &[&str], expected_file: &str, extra: &[&str]) {
    run_pre_release_where(
        |listed| listed.contains(versions),
        must,
        expected_file,
        extra,
    );
}

/// [`run_pre_release`] for the scenarios whose listed versions `pick` accepts.
fn run_pre_release_where(
    pick: impl Fn(&str) -> bool,
    must: &[&str],
    expected_file: &str,
    extra: &[&str],
) {
    let Some((node, entry)) = peers::require(
        peers::conformance_next(),
        "@modelcontextprotocol/conformance (pre-release, conformance-next)",
    ) else {
        return;
    };
    let Some(client) = client() else { return };
    let scenarios: Vec<String> = client_scenarios(&node, &entry)
        .into_iter()
        .filter(|(_, listed)| pick(listed))
        .map(|(name, _)| name)
        .collect();
    must_be_listed(&scenarios, must);
    let expected = expected_failures(expected_file);
    run_scenarios(
        &node,
        &entry,
        &client,
        &scenarios,
        extra,
        &expected,
        expected_file,
    );
}

/// Extension scenarios that must be among the listed ones: the skills extension's client
/// scenarios, whose checks all ran SKIPPED before the client listed skills (issue 40).
const MUST_LIST_EXTENSIONS: &[&str] = &[
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
    "auth/client-credentials-jwt",
];

#[test]
fn the_conformance_client_passes_the_pre_releases_extension_scenarios() {
    run_pre_release(
        "extension",
        MUST_LIST_EXTENSIONS,
        "conformance-extensions-expected-failures.txt",
        &[],
    );
}

/// The pre-release's client scenarios of the earlier revisions (neither 2026-07-28 nor an
/// extension: `initialize`, `sse-retry`, the 2025-03-26 OAuth back-compatibility ones, …), run
/// at the suite's default as 0.1.16 runs them: with the two tests above, every client scenario
/// the pre-release lists (48 in 0.2.0-alpha.12).
#[test]
fn the_conformance_client_passes_the_pre_releases_earlier_scenarios() {
    run_pre_release_where(
        |listed| !listed.contains("2026-07-28") && !listed.contains("extension"),
        &["initialize", "sse-retry"],
        "conformance-expected-failures.txt",
        &[],
    );
}
