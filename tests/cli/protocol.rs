//! The rest of the client protocol from the operator's seat: `kaged-mcp resources`, `read`,
//! `prompts`, `prompt` and `complete` (and the same verbs in the shell) against
//! server-everything over stdio and Streamable HTTP, and against the Python SDK's 2026-07-28
//! server; every exit code.

use base64::Engine as _;
use common::cli::{project, run, shell};
use common::peers::{self, PyMcp, SsePeer};
use serde_json::Value;

use crate::common;

fn everything_stdio_yaml() -> Option<String> {
    let cmd = peers::require(peers::everything_stdio(), "server-everything")?;
    Some(format!(
        "mcp:\n  everything:\n    transport: stdio\n    command: {}\n",
        serde_json::to_string(&cmd).unwrap()
    ))
}

const TEXT_TEMPLATE: &str = "demo://resource/dynamic/text/{resourceId}";
const BLOB_TEMPLATE: &str = "demo://resource/dynamic/blob/{resourceId}";

/// Everything the issue's "done when" asks of the CLI, against one project.
fn the_verbs_reach_everything(dir: &std::path::Path) {
    // resources: the 7 static documents and both templates.
    let o = run(&["resources"], dir);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let docs = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("everything\tdemo://resource/static/document/"))
        .count();
    assert_eq!(docs, 7, "{}", o.stdout);
    for template in [TEXT_TEMPLATE, BLOB_TEMPLATE] {
        assert!(
            o.stdout
                .lines()
                .any(|l| l.starts_with(&format!("everything\t{template}\t"))
                    && l.ends_with("\ttemplate")),
            "{}",
            o.stdout
        );
    }
    let o = run(&["resources", "everything", "--json"], dir);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["resources"].as_array().unwrap().len(), 7, "{v}");
    assert!(v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["server"] == "everything"));
    let templates: Vec<&str> = v["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(templates, [TEXT_TEMPLATE, BLOB_TEMPLATE], "{v}");

    // read: the text, on stdout.
    let o = run(
        &["read", "everything", "demo://resource/dynamic/text/1"],
        dir,
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout
            .starts_with("Resource 1: This is a plaintext resource"),
        "{}",
        o.stdout
    );
    // read: the blob's bytes, with --out, the same as the JSON's base64.
    let out = dir.join("blob.bin");
    let o = run(
        &[
            "read",
            "everything",
            "demo://resource/dynamic/blob/1",
            "--out",
            out.to_str().unwrap(),
        ],
        dir,
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    let written = std::fs::read(&out).unwrap();
    let o = run(
        &[
            "read",
            "everything",
            "demo://resource/dynamic/blob/1",
            "--json",
        ],
        dir,
    );
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["truncated"], false, "{v}");
    let blob = base64::engine::general_purpose::STANDARD
        .decode(v["contents"][0]["blob"].as_str().unwrap())
        .unwrap();
    // The text names its creation time: compare all but it.
    let head = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .split(" created at ")
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(head(&written), "Resource 1: This is a base64 blob");
    assert_eq!(head(&written), head(&blob));

    // prompts: the four, with the required arguments marked.
    let o = run(&["prompts"], dir);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    for name in [
        "simple-prompt",
        "args-prompt",
        "resource-prompt",
        "completable-prompt",
    ] {
        assert!(
            o.stdout.contains(&format!("everything\t{name}\t")),
            "{}",
            o.stdout
        );
    }
    assert!(o.stdout.contains("  city (required)\t"), "{}", o.stdout);
    let o = run(&["prompts", "--json"], dir);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 4, "{v}");
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .all(|p| p["server"] == "everything"),
        "{v}"
    );

    // prompt: the arguments reach the message.
    let o = run(
        &[
            "prompt",
            "everything",
            "args-prompt",
            "--args",
            r#"{"city":"Paris"}"#,
        ],
        dir,
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "user: What's weather in Paris?");
    let o = run(
        &[
            "prompt",
            "everything",
            "args-prompt",
            "--args",
            r#"{"city":"Paris"}"#,
            "--json",
        ],
        dir,
    );
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        v["messages"][0]["content"]["text"], "What's weather in Paris?",
        "{v}"
    );

    // complete: the department already chosen narrows the names.
    let args = [
        "complete",
        "everything",
        "--prompt",
        "completable-prompt",
        "name",
        "",
        "--context",
        r#"{"department":"Sales"}"#,
    ];
    let o = run(&args, dir);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        o.stdout.lines().collect::<Vec<_>>(),
        ["David", "Eve", "Frank"]
    );
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let o = run(&json_args, dir);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"values": ["David", "Eve", "Frank"], "total": 3, "hasMore": false})
    );
    // A template's variable.
    let o = run(
        &[
            "complete",
            "everything",
            "--template",
            TEXT_TEMPLATE,
            "resourceId",
            "5",
        ],
        dir,
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "5");
}

#[test]
fn the_verbs_reach_server_everything_over_stdio() {
    let Some(yaml) = everything_stdio_yaml() else {
        return;
    };
    let d = project(&yaml, "");
    the_verbs_reach_everything(d.path());
}

#[test]
fn the_verbs_reach_server_everything_over_streamable_http() {
    let port = peers::free_port();
    let Some((cmd, env)) = peers::require(peers::everything_http(port), "server-everything") else {
        return;
    };
    let peer = SsePeer::start(&cmd, &env, port).unwrap();
    let d = project(
        &format!(
            "mcp:\n  everything:\n    transport: streamable-http\n    url: {}\n",
            peer.mcp_url()
        ),
        "",
    );
    the_verbs_reach_everything(d.path());
}

#[test]
fn failures_name_the_server_the_method_and_the_cause_with_the_exit_code() {
    let Some(yaml) = everything_stdio_yaml() else {
        return;
    };
    let d = project(&yaml, "");
    // An undeclared server: a configuration error, nothing started.
    let o = run(&["read", "nope", "demo://x"], d.path());
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert_eq!(o.stderr.trim(), "error: unknown MCP server `nope`");
    // The server refuses: exit 1, its own reason.
    let o = run(&["prompt", "everything", "nope"], d.path());
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stderr
            .starts_with("error: server `everything`: prompts/get: ")
            && o.stderr.contains("Prompt nope not found"),
        "{}",
        o.stderr
    );
    let o = run(&["read", "everything", "demo://nowhere"], d.path());
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stderr
            .starts_with("error: server `everything`: resources/read: ")
            && o.stderr.contains("-32602"),
        "{}",
        o.stderr
    );
    // Bad arguments: exit 2, naming the flag.
    let o = run(
        &[
            "prompt",
            "everything",
            "args-prompt",
            "--args",
            r#"{"city": 3}"#,
        ],
        d.path(),
    );
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("--args: `city` is not a string"),
        "{}",
        o.stderr
    );
    let o = run(&["complete", "everything", "name", "x"], d.path());
    assert_eq!(o.code, Some(2), "{}", o.stderr);
}

#[test]
fn the_shell_answers_the_same_verbs_one_json_line_each() {
    let Some(yaml) = everything_stdio_yaml() else {
        return;
    };
    let d = project(&yaml, "");
    let o = shell(
        d.path(),
        &["--json"],
        &[
            "resources everything",
            r#"prompt everything args-prompt --args '{"city":"Rome"}'"#,
            r#"complete everything --prompt completable-prompt name E --context '{"department":"Sales"}'"#,
            "read everything demo://resource/dynamic/text/2",
            "read everything demo://resource/dynamic/blob/1",
            "prompts everything",
            "complete everything name x",
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let answers: Vec<Value> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(answers.len(), 7, "{}", o.stdout);
    assert_eq!(answers[0]["resources"].as_array().unwrap().len(), 7);
    assert_eq!(
        answers[1]["messages"][0]["content"]["text"],
        "What's weather in Rome?"
    );
    assert_eq!(answers[2]["values"], serde_json::json!(["Eve"]));
    assert!(answers[3]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Resource 2:"));
    assert!(
        answers[4]["contents"][0]["blob"].is_string(),
        "{}",
        answers[4]
    );
    assert_eq!(answers[5].as_array().unwrap().len(), 4);
    assert!(
        answers[6]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--prompt"),
        "{}",
        answers[6]
    );
}

#[test]
fn the_verbs_speak_the_2026_07_28_era_to_the_python_sdk() {
    let python = PyMcp::V2.python();
    let Some(python) = peers::require(python.is_file().then_some(python), "python mcp 2.3.0")
    else {
        return;
    };
    let script = peers::server_script("py_resources_server.py");
    let d = project(
        &format!(
            "mcp:\n  py:\n    transport: stdio\n    command: {}\n",
            serde_json::to_string(&[python.to_str().unwrap(), script.to_str().unwrap(), "stdio"])
                .unwrap()
        ),
        "[mcp.py]\nera = \"modern\"\n",
    );
    let o = run(&["read", "py", "file:///notes/readme.txt"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "hello from mcp 2");
    let o = run(&["resources", "py", "--json"], d.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["templates"][0]["uriTemplate"], "greeting://{name}", "{v}");
    let o = run(
        &[
            "complete",
            "py",
            "--prompt",
            "pair",
            "framework",
            "",
            "--context",
            r#"{"language":"rust"}"#,
        ],
        d.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.lines().collect::<Vec<_>>(), ["axum", "actix"]);
}
