//! The validation layer against real servers (issue 25): server-everything's `get-sum` and
//! `get-structured-content` (its arguments refused before they leave, its real output schema
//! checked), the Python SDK's typed tools (FastMCP and MCPServer derive the schemas from the
//! signature), and the fault servers' schema tools in both eras: structured content of the wrong
//! shape or missing, a draft-07 schema, a remote `$ref` never fetched, an invalid schema, a
//! schema that changes with the catalog, and the `validate` knob.

use std::path::Path;
use std::time::Duration;

use kaged_mcp::config::Sources;
use kaged_mcp::validate::Violation;
use kaged_mcp::{Error, Session};
use serde_json::{json, Map, Value};

use crate::common::peers::{self, PyMcp, PyMode, SsePeer};

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

async fn session(project: String, local: &str) -> Session {
    let config = Sources::new(project)
        .local(local.to_owned())
        .load()
        .unwrap();
    Session::start(config).await.unwrap()
}

fn stdio_project(key: &str, command: &[String]) -> String {
    format!(
        "mcp:\n  {key}:\n    transport: stdio\n    command: {}\n",
        serde_json::to_string(command).unwrap()
    )
}

fn http_project(key: &str, peer: &SsePeer) -> String {
    format!(
        "mcp:\n  {key}:\n    transport: streamable-http\n    url: {}\n",
        peer.mcp_url()
    )
}

/// The violations of an `InvalidArguments` (`arguments`) or `InvalidResult` error.
fn violations(e: &Error, arguments: bool) -> Vec<(String, String)> {
    let v: &[Violation] = match (e, arguments) {
        (Error::InvalidArguments { violations, .. }, true) => violations,
        (Error::InvalidResult { violations, .. }, false) => violations,
        _ => panic!(
            "expected Invalid{}: {e:?}",
            if arguments { "Arguments" } else { "Result" }
        ),
    };
    v.iter()
        .map(|v| (v.pointer.clone(), v.keyword.clone()))
        .collect()
}

#[tokio::test]
async fn server_everything_arguments_are_refused_before_they_leave_and_its_output_schema_checked() {
    let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stdin.log");
    let s = session(
        stdio_project("everything", &peers::with_stdin_log(&cmd, &log)),
        "",
    )
    .await;

    let e = s
        .call("mcp.everything.get-sum", args(json!({"a": "one", "b": 2})))
        .await
        .unwrap_err();
    assert_eq!(violations(&e, true), [("/a".into(), "type".into())], "{e}");
    assert!(e.to_string().contains("(not sent)"), "{e}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("tools/list"), "{text}");
    assert!(
        !text.contains("tools/call"),
        "nothing reached the server: {text}"
    );

    let ok = s
        .call("mcp.everything.get-sum", args(json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(ok.joined_text(), "The sum of 1 and 2 is 3.");

    // A real outputSchema: the structured weather passes; an unknown city breaks the enum.
    let weather = s
        .call(
            "mcp.everything.get-structured-content",
            args(json!({"location": "Chicago"})),
        )
        .await
        .unwrap();
    assert_eq!(weather.structured_content.as_ref().unwrap()["humidity"], 82);
    let e = s
        .call(
            "mcp.everything.get-structured-content",
            args(json!({"location": "Paris"})),
        )
        .await
        .unwrap_err();
    assert_eq!(violations(&e, true), [("/location".into(), "enum".into())]);
    assert!(
        s.registry().unvalidated().is_empty(),
        "{:?}",
        s.registry().unvalidated()
    );
    s.shutdown().await;
}

#[tokio::test]
async fn python_sdk_typed_tools_are_validated_both_ways() {
    for version in [PyMcp::V1, PyMcp::V2] {
        let Some(cmd) = peers::require(
            peers::python_server(version, PyMode::Stdio),
            &version.name(),
        ) else {
            continue;
        };
        let s = session(stdio_project("py", &cmd), "").await;
        let e = s
            .call("mcp.py.add", args(json!({"a": "x", "b": 1})))
            .await
            .unwrap_err();
        assert_eq!(
            violations(&e, true),
            [("/a".into(), "type".into())],
            "{}",
            version.name()
        );
        let sum = s
            .call("mcp.py.add", args(json!({"a": 2, "b": 3})))
            .await
            .unwrap();
        assert_eq!(sum.structured_content, Some(json!({"result": 5})));
        let w = s
            .call("mcp.py.weather", args(json!({"city": "Oslo"})))
            .await
            .unwrap();
        assert_eq!(
            w.structured_content,
            Some(json!({"temperature": 21.5, "conditions": "sunny in Oslo"}))
        );
        s.shutdown().await;
    }
}

/// Starts `http_fault_server.py` (2025-11-25) logging every request to `dir/log.jsonl`.
fn fault_server(dir: &Path) -> SsePeer {
    let log = dir.join("log.jsonl");
    SsePeer::start_reporting_port(&peers::http_fault_server(
        "ok",
        &["--log", log.to_str().unwrap(), "--answers", "json"],
    ))
    .unwrap()
}

fn calls_of(dir: &Path, tool: &str) -> usize {
    peers::read_request_log(&dir.join("log.jsonl"))
        .iter()
        .filter(|e| e["method"] == "tools/call" && e["tool"] == tool)
        .count()
}

#[tokio::test]
async fn structured_results_of_the_wrong_shape_or_missing_are_errors_in_the_legacy_era() {
    let dir = tempfile::tempdir().unwrap();
    let peer = fault_server(dir.path());
    let s = session(http_project("fa", &peer), "").await;
    let shaped = |mode: &str| s.call("mcp.fa.shaped", args(json!({ "mode": mode })));

    assert_eq!(
        shaped("good").await.unwrap().structured_content,
        Some(json!({"n": 1}))
    );
    let e = shaped("wrong").await.unwrap_err();
    assert_eq!(violations(&e, false), [("/n".into(), "type".into())], "{e}");
    assert!(
        e.to_string().starts_with(
            "server `fa`: tool `shaped`: the result breaks the tool's outputSchema: /n: type: "
        ),
        "{e}"
    );
    let e = shaped("none").await.unwrap_err();
    assert_eq!(
        violations(&e, false),
        [("".into(), "structuredContent".into())]
    );
    // A tool error is not checked.
    assert!(shaped("error").await.unwrap().is_error);

    // Draft 7 honoured: the tuple's first item must be a string; not sent.
    let e = s
        .call("mcp.fa.draft7", args(json!({"list": [1]})))
        .await
        .unwrap_err();
    assert_eq!(violations(&e, true), [("/list/0".into(), "type".into())]);
    assert_eq!(calls_of(dir.path(), "draft7"), 0);
    assert_eq!(
        s.call("mcp.fa.draft7", args(json!({"list": ["a", 1]})))
            .await
            .unwrap()
            .joined_text(),
        "draft7 ok"
    );

    // A remote `$ref` and an invalid schema: unvalidated, said so, callable; nothing fetched.
    let unvalidated = s.registry().unvalidated();
    let names: Vec<&str> = unvalidated.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["mcp.fa.bad_schema", "mcp.fa.remote_ref"],
        "{unvalidated:?}"
    );
    assert!(unvalidated
        .iter()
        .all(|(_, why)| why[0].starts_with("inputSchema: ")));
    for tool in ["remote_ref", "bad_schema"] {
        let r = s
            .call(&format!("mcp.fa.{tool}"), args(json!({"any": 1})))
            .await
            .unwrap();
        assert_eq!(r.joined_text(), format!("{tool} ok"));
    }
    s.shutdown().await;
    let log = peers::read_request_log(&dir.path().join("log.jsonl"));
    assert!(
        log.iter().all(|e| e["path"] != "/schema.json"),
        "the remote $ref was fetched: {log:#?}"
    );
}

#[tokio::test]
async fn validate_arguments_lets_results_through_and_off_checks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let peer = fault_server(dir.path());
    let s = session(
        http_project("fa", &peer),
        "[mcp.fa]\nvalidate = \"arguments\"\n",
    )
    .await;
    let wrong = s
        .call("mcp.fa.shaped", args(json!({"mode": "wrong"})))
        .await
        .unwrap();
    assert_eq!(wrong.structured_content, Some(json!({"n": "one"})));
    assert!(s
        .call("mcp.fa.draft7", args(json!({"list": [1]})))
        .await
        .is_err());
    s.shutdown().await;

    let s = session(http_project("fa", &peer), "[mcp.fa]\nvalidate = \"off\"\n").await;
    assert!(s.registry().unvalidated().is_empty(), "nothing compiled");
    let r = s
        .call("mcp.fa.draft7", args(json!({"list": [1]})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "draft7 ok");
    assert_eq!(calls_of(dir.path(), "draft7"), 1);
    s.shutdown().await;
}

#[tokio::test]
async fn the_2026_07_28_era_is_validated_and_the_validators_follow_a_changed_catalog() {
    let peer = SsePeer::start_reporting_port(&peers::era_server_http("modern-only", &[])).unwrap();
    let s = session(http_project("mo", &peer), "[mcp.mo]\nera = \"modern\"\n").await;
    let e = s
        .call("mcp.mo.shaped", args(json!({"mode": "wrong"})))
        .await
        .unwrap_err();
    assert_eq!(violations(&e, false), [("/n".into(), "type".into())]);
    let e = s
        .call("mcp.mo.draft7", args(json!({"list": [1]})))
        .await
        .unwrap_err();
    assert_eq!(violations(&e, true), [("/list/0".into(), "type".into())]);

    // `versioned` takes v = the bump count; a bump changes its schema and the catalog.
    let versioned = |v: i64| s.call("mcp.mo.versioned", args(json!({ "v": v })));
    assert_eq!(versioned(0).await.unwrap().joined_text(), "versioned 0");
    s.call("mcp.mo.bump", None).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !s
        .catalog()
        .iter()
        .any(|t| t.name == "mcp.mo.versioned" && t.parameters["properties"]["v"]["const"] == 1)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the catalog never changed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let e = versioned(0).await.unwrap_err();
    assert_eq!(violations(&e, true), [("/v".into(), "const".into())]);
    assert_eq!(versioned(1).await.unwrap().joined_text(), "versioned 1");
    s.shutdown().await;
}
