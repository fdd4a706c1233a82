//! The session's side of issue 24: an agent reading back a resource a tool result linked
//! (checked against its grants before any server is contacted), reads capped at
//! `result_max_bytes`, and the configuration of `roots:` and `log_level` (what is refused at
//! load, what at start, and what the errors name).

use kaged_mcp::config::{load, ConfigPaths, Sources};
use kaged_mcp::protocol::content::ResourceContents;
use kaged_mcp::protocol::{ContentBlock, LoggingLevel};
use kaged_mcp::{Error, Session};
use serde_json::json;

use crate::common::peers::{self, Fault, PyMcp};
use crate::{base64_decode, map};

fn yaml_list(cmd: &[String]) -> String {
    serde_json::to_string(cmd).unwrap()
}

/// The marker a cut text ends with (ADR: `\n[... truncated at N bytes]`).
fn marker(cap: usize) -> String {
    format!("\n[... truncated at {cap} bytes]")
}

// --- reads for an agent -------------------------------------------------------------------------

/// `get-resource-links` returns `resource_link` blocks (odd ids blobs, even ids texts); an agent
/// granted that tool reads them back. Agents granted none of the server's tools are refused
/// with `ResourceNotGranted`, and no request is sent: proven on a second server whose process
/// records every request it receives (`faulty.py --mode request_log`): after the refused read
/// its log has no `resources/read`, and after the daemon's own (ungated) read of the same URI it
/// has one, so the log would have shown a read that went out.
#[tokio::test]
async fn an_agent_reads_back_a_linked_resource_only_with_a_grant_on_its_server() {
    let Some(everything) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let log = tempfile::NamedTempFile::new().unwrap();
    let yaml = format!(
        r#"
mcp:
  everything:
    transport: stdio
    command: {everything}
  logged:
    transport: stdio
    command: {logged}
    env:
      KAGED_REQUEST_LOG: {log}
primary:
  tools:
    mcp.everything: {{ enabled: true }}
  subagents:
    linker:
      tools:
        mcp.everything.get-resource-links: {{ enabled: true }}
    outsider:
      tools:
        mcp.logged.echo: {{ enabled: true }}
    switched-off:
      tools:
        mcp.everything: {{ enabled: false }}
        mcp.logged: {{ enabled: true }}
"#,
        everything = yaml_list(&everything),
        logged = yaml_list(&peers::faulty(Fault::RequestLog)),
        log = log.path().display(),
    );
    let config = Sources::new(yaml).load().unwrap();
    let session = Session::start(config).await.unwrap();
    for st in session.status() {
        assert_eq!(st.state, "ready", "{st:?}");
    }

    let result = session
        .call_as(
            "linker",
            "mcp.everything.get-resource-links",
            Some(map(json!({"count": 2}))),
        )
        .await
        .unwrap();
    let links: Vec<String> = result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ResourceLink(l) => Some(l.uri.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        links,
        [
            "demo://resource/dynamic/blob/1",
            "demo://resource/dynamic/text/2"
        ],
        "{result:?}"
    );

    // Read back by the agent that got them: a blob, then a text.
    let blob = session
        .read_resource_as("linker", "everything", &links[0])
        .await
        .unwrap();
    match &blob.contents[..] {
        [ResourceContents::Blob(b)] => {
            let bytes = base64_decode(&b.blob).expect("base64");
            let text = String::from_utf8(bytes).unwrap();
            assert!(
                text.starts_with("Resource 1: This is a base64 blob created at "),
                "{text:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let text = session
        .read_resource_as("linker", "everything", &links[1])
        .await
        .unwrap();
    assert!(
        text.joined_text()
            .starts_with("Resource 2: This is a plaintext resource created at "),
        "{text:?}"
    );
    assert!(!text.truncated);
    // The primary agent, granted the whole server, may too.
    session
        .read_resource_as("primary", "everything", &links[1])
        .await
        .unwrap();

    // Granted only another server's tool, or the server switched off: refused.
    for agent in ["outsider", "switched-off"] {
        let err = session
            .read_resource_as(agent, "everything", &links[1])
            .await
            .unwrap_err();
        match &err {
            Error::ResourceNotGranted {
                agent: a,
                server,
                uri,
            } => {
                assert_eq!(a, agent);
                assert_eq!(server, "everything");
                assert_eq!(uri, &links[1]);
            }
            other => panic!("{agent}: {other:?}"),
        }
        assert_eq!(err.kind(), "resource_not_granted");
        assert_eq!(err.server(), Some("everything"));
        let said = err.to_string();
        assert!(
            said.contains(agent) && said.contains("everything") && said.contains(&links[1]),
            "{said}"
        );
    }
    // An unknown agent is not a grant question.
    let err = session
        .read_resource_as("ghost", "everything", &links[1])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnknownAgent { .. }), "{err:?}");

    // No request sent: the recording server saw no resources/read for a refused agent...
    let secret = "secret://logged/1";
    let err = session
        .read_resource_as("linker", "logged", secret)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::ResourceNotGranted { server, .. } if server == "logged"),
        "{err:?}"
    );
    let methods = || -> Vec<String> {
        peers::read_request_log(log.path())
            .iter()
            .map(|e| e["method"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let seen = methods();
    assert!(seen.contains(&"tools/list".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"resources/read".to_owned()), "{seen:?}");
    // ...while the daemon's own read of it does reach the server (which knows no resources/
    // read: -32601), so the log does show reads that go out.
    let err = session.read_resource("logged", secret).await.unwrap_err();
    assert!(
        matches!(&err, Error::Request { server, method: "resources/read", .. } if server == "logged"),
        "{err:?}"
    );
    assert!(
        methods().contains(&"resources/read".to_owned()),
        "{:?}",
        methods()
    );
    session.shutdown().await;
}

// --- the configuration reaching a server --------------------------------------------------------

/// A project's `roots: [./data]` and `local.toml`'s `log_level = "warning"` reach the Python
/// server through the session, in both eras (`era` in `local.toml`): the `roots` tool lists the
/// data directory's `file://` URI (legacy: `roots/list`; modern: `input_required`, through the
/// session's stack), an `info` message is dropped and a `warning` one sent. The session's own
/// prompt, completion and subscription calls reach it too.
#[tokio::test]
async fn python_gets_roots_and_log_level_from_the_configuration() {
    use kaged_mcp::client::ServerChange;
    use kaged_mcp::protocol::CompletionRef;
    let Some(cmd) = peers::require(
        peers::py_resources_server(PyMcp::V2, false),
        &PyMcp::V2.name(),
    ) else {
        return;
    };
    for era in ["legacy", "modern"] {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("data")).unwrap();
        std::fs::write(
            project.path().join("project.yaml"),
            format!(
                "mcp:\n  py:\n    transport: stdio\n    command: {}\n    roots: [./data]\n",
                yaml_list(&cmd)
            ),
        )
        .unwrap();
        std::fs::write(
            project.path().join("local.toml"),
            format!("[mcp.py]\nera = \"{era}\"\nlog_level = \"warning\"\n"),
        )
        .unwrap();
        let session = Session::start(load(&ConfigPaths::new(project.path())).unwrap())
            .await
            .unwrap();
        let st = &session.status()[0];
        assert_eq!(st.state, "ready", "{era}: {st:?}");
        assert_eq!(st.era, Some(era), "{era}: {st:?}");

        let roots = session.call("mcp.py.roots", None).await.unwrap();
        assert!(!roots.is_error, "{era}: {}", roots.joined_text());
        let data = project.path().join("data").canonicalize().unwrap();
        assert_eq!(
            roots.joined_text(),
            format!("[\"file://{}\"]", data.display()),
            "{era}"
        );

        // Legacy: logging/setLevel was answered before the session was ready.
        if era == "legacy" {
            let level = session
                .call("mcp.py.log_level", None)
                .await
                .unwrap()
                .joined_text();
            assert_eq!(level, "warning", "{era}");
        }
        let info = session
            .call(
                "mcp.py.log",
                Some(map(json!({"level": "info", "message": "i"}))),
            )
            .await
            .unwrap()
            .joined_text();
        assert!(info.starts_with("dropped info"), "{era}: {info}");
        let warning = session
            .call(
                "mcp.py.log",
                Some(map(json!({"level": "warning", "message": "w"}))),
            )
            .await
            .unwrap()
            .joined_text();
        assert_eq!(warning, "logged warning", "{era}");

        // The session's own protocol calls.
        let prompt = session
            .prompt(
                "py",
                "pair",
                Some(&map(json!({"language": "go", "framework": "gin"}))),
            )
            .await
            .unwrap();
        assert_eq!(
            prompt.messages[0].content.as_text(),
            Some("Pair go with gin")
        );
        let go = session
            .complete(
                "py",
                &CompletionRef::Prompt {
                    name: "pair".into(),
                },
                "framework",
                "",
                Some(&map(json!({"language": "go"}))),
            )
            .await
            .unwrap();
        assert_eq!(go.values, ["gin"], "{era}");
        let err = session.prompt("py", "nope", None).await.unwrap_err();
        assert!(
            matches!(&err, Error::Request { server, method: "prompts/get", .. } if server == "py"),
            "{era}: {err:?}"
        );
        let mut changes = session.changes("py").unwrap();
        session
            .subscribe_resource("py", "file:///notes/readme.txt")
            .await
            .unwrap();
        // Touched until the update comes (the modern stream opens after subscribe returns).
        let mut updated = false;
        for _ in 0..20 {
            session
                .call(
                    "mcp.py.touch",
                    Some(map(json!({"uri": "file:///notes/readme.txt"}))),
                )
                .await
                .unwrap();
            let seen = crate::changes_within(&mut changes, std::time::Duration::from_secs(1)).await;
            if seen.contains(&ServerChange::ResourceUpdated {
                uri: "file:///notes/readme.txt".into(),
            }) {
                updated = true;
                break;
            }
        }
        assert!(updated, "{era}: no update through the session");
        session
            .unsubscribe_resource("py", "file:///notes/readme.txt")
            .await
            .unwrap();
        session.shutdown().await;
    }
}

// --- the result cap -----------------------------------------------------------------------------

/// With `result_max_bytes = 40`: a text read is cut at 40 bytes and marked, a blob over 40
/// bytes is refused whole, naming its size and the cap. The uncapped reads (the client's own)
/// give the expected values.
#[tokio::test]
async fn everything_reads_are_capped_at_result_max_bytes() {
    let Some(everything) = peers::require(peers::everything_stdio(), "server-everything") else {
        return;
    };
    let yaml = format!(
        "mcp:\n  everything:\n    transport: stdio\n    command: {}\n",
        yaml_list(&everything)
    );
    let config = Sources::new(yaml)
        .config("[mcp]\nresult_max_bytes = 40\n")
        .load()
        .unwrap();
    assert_eq!(config.daemon.result_max_bytes, 40);
    let session = Session::start(config).await.unwrap();
    let client = session.client("everything").unwrap();

    let doc = "demo://resource/static/document/features.md";
    let full = client.read_resource(doc).await.unwrap().joined_text();
    assert!(full.len() > 40, "{full:?}");
    let capped = session.read_resource("everything", doc).await.unwrap();
    assert!(capped.truncated);
    let mut cut = 40;
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    assert_eq!(
        capped.joined_text(),
        format!("{}{}", &full[..cut], marker(40))
    );
    assert!(
        capped
            .joined_text()
            .ends_with("[... truncated at 40 bytes]"),
        "{}",
        capped.joined_text()
    );

    let blob_uri = "demo://resource/dynamic/blob/1";
    let err = session
        .read_resource("everything", blob_uri)
        .await
        .unwrap_err();
    match &err {
        Error::ReadTooLarge { server, source } => {
            assert_eq!(server, "everything");
            assert_eq!(source.uri, blob_uri);
            assert_eq!(source.cap, 40);
            // "Resource 1: This is a base64 blob created at <time>": 45 bytes and the time.
            assert!(source.size > 45, "{source:?}");
            let said = err.to_string();
            assert!(
                said.contains(&format!("{} bytes", source.size))
                    && said.contains("40 bytes")
                    && said.contains("result_max_bytes"),
                "{said}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.kind(), "read_too_large");
    // The same blob through the client is whole (the cap is the session's).
    let whole = client.read_resource(blob_uri).await.unwrap();
    assert!(matches!(&whole.contents[..], [ResourceContents::Blob(_)]));
    session.shutdown().await;
}

/// The cap's edges, on sizes the Python server makes exact: a 16-byte text and a 16-byte blob
/// fit a 16-byte cap untouched; 200 000 bytes of text are cut to 16 and marked; a 16-byte cap
/// refuses the blob (24 bytes as base64) and names both numbers; one byte under each size (15
/// for the text, 23 for the blob) cuts and refuses.
#[tokio::test]
async fn python_reads_at_and_over_the_cap() {
    let Some(cmd) = peers::require(
        peers::py_resources_server(PyMcp::V2, false),
        &PyMcp::V2.name(),
    ) else {
        return;
    };
    let yaml = format!(
        "mcp:\n  py:\n    transport: stdio\n    command: {}\n",
        yaml_list(&cmd)
    );
    let config = Sources::new(yaml.clone())
        .config("[mcp]\nresult_max_bytes = 16\n")
        .load()
        .unwrap();
    let session = Session::start(config).await.unwrap();
    let readme = session
        .read_resource("py", "file:///notes/readme.txt")
        .await
        .unwrap();
    assert_eq!(readme.joined_text(), "hello from mcp 2");
    assert!(!readme.truncated, "16 bytes at a 16-byte cap are untouched");
    let big = session.read_resource("py", "data://big.txt").await.unwrap();
    assert!(big.truncated);
    assert_eq!(big.joined_text(), format!("0123456789012345{}", marker(16)));
    // The 16-byte PNG is 24 bytes as base64, what an agent would receive: over a 16-byte cap,
    // refused whole.
    let err = session
        .read_resource("py", "data://pixel.png")
        .await
        .unwrap_err();
    match &err {
        Error::ReadTooLarge { server, source } => {
            assert_eq!(server, "py");
            assert_eq!(
                (source.uri.as_str(), source.size, source.decoded, source.cap),
                ("data://pixel.png", 24, 16, 16)
            );
            let said = err.to_string();
            assert!(
                said.contains("24 bytes as base64 (16 decoded)")
                    && said.contains("cap of 16 bytes"),
                "{said}"
            );
        }
        other => panic!("{other:?}"),
    }
    session.shutdown().await;

    // At exactly its base64 size, the blob is untouched.
    let config = Sources::new(yaml.clone())
        .config("[mcp]\nresult_max_bytes = 24\n")
        .load()
        .unwrap();
    let session = Session::start(config).await.unwrap();
    let pixel = session
        .read_resource("py", "data://pixel.png")
        .await
        .unwrap();
    assert!(!pixel.truncated);
    assert!(
        matches!(&pixel.contents[..], [ResourceContents::Blob(b)] if b.blob == "iVBORw0KGgoAAQIDBAUGBw==")
    );
    session.shutdown().await;

    // One byte under each size: the 16-byte text is cut to 15 and marked, the blob (24 bytes as
    // base64) is refused at 23.
    for cap in [15, 23] {
        let config = Sources::new(yaml.clone())
            .config(format!("[mcp]\nresult_max_bytes = {cap}\n"))
            .load()
            .unwrap();
        let session = Session::start(config).await.unwrap();
        let readme = session
            .read_resource("py", "file:///notes/readme.txt")
            .await
            .unwrap();
        if cap == 15 {
            assert!(readme.truncated, "16 bytes at a 15-byte cap are cut");
            assert_eq!(
                readme.joined_text(),
                format!("hello from mcp {}", marker(15))
            );
        } else {
            assert!(!readme.truncated);
            assert_eq!(readme.joined_text(), "hello from mcp 2");
        }
        let err = session
            .read_resource("py", "data://pixel.png")
            .await
            .unwrap_err();
        match &err {
            Error::ReadTooLarge { source, .. } => assert_eq!(
                (source.size, source.decoded, source.cap),
                (24, 16, cap),
                "{err}"
            ),
            other => panic!("cap {cap}: {other:?}"),
        }
        session.shutdown().await;
    }
}

// --- configuration: roots and log levels ----------------------------------------------------------

/// A stdio server that is never started by these tests (load errors), or whose start is refused
/// before its process runs (roots checked at start).
fn never_run() -> String {
    yaml_list(&peers::faulty(Fault::Ok))
}

#[test]
fn roots_that_leave_the_project_are_refused_at_load_with_key_and_line() {
    let cases = [
        (
            "[/abs]",
            "mcp.fs.roots[0]",
            5,
            "`/abs` is absolute; `roots` is relative to the project root",
        ),
        (
            "[../out]",
            "mcp.fs.roots[0]",
            5,
            "`../out` escapes the project root",
        ),
        (
            "[data/../../out]",
            "mcp.fs.roots[0]",
            5,
            "`data/../../out` escapes the project root",
        ),
        (
            "\n      - ./data\n      - ../out",
            "mcp.fs.roots[1]",
            7,
            "`../out` escapes the project root",
        ),
    ];
    for (roots, key, line, says) in cases {
        let yaml = format!(
            "mcp:\n  fs:\n    transport: stdio\n    command: {}\n    roots: {roots}\n",
            never_run()
        );
        let errors = Sources::new(yaml.clone()).load().unwrap_err();
        let e = errors
            .iter()
            .find(|e| e.key_path.starts_with("mcp.fs.roots"))
            .unwrap_or_else(|| panic!("{roots}: {errors}"));
        assert_eq!(e.file.to_str(), Some("project.yaml"), "{roots}: {e}");
        assert_eq!(e.key_path, key, "{roots}: {e}");
        assert_eq!(
            e.location.map(|l| l.line),
            Some(line),
            "{roots}: {e}\n{yaml}"
        );
        assert!(e.message.contains(says), "{roots}: {e}");
        let shown = e.to_string();
        assert!(
            shown.contains("project.yaml") && shown.contains(key),
            "{shown}"
        );
    }
    // Not a list, and not strings.
    let yaml = format!(
        "mcp:\n  fs:\n    transport: stdio\n    command: {}\n    roots: ./data\n",
        never_run()
    );
    let errors = Sources::new(yaml).load().unwrap_err();
    assert!(
        errors.iter().any(|e| e.key_path == "mcp.fs.roots"),
        "{errors}"
    );
}

/// Relative roots inside the project load, and resolve to `file://` URIs of the real
/// directories.
#[test]
fn roots_inside_the_project_resolve_to_file_uris() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join("data/sub")).unwrap();
    let yaml = format!(
        "mcp:\n  fs:\n    transport: stdio\n    command: {}\n    roots: [./data, data/sub]\n",
        never_run()
    );
    let mut sources = Sources::new(yaml);
    sources.project_root = project.path().to_path_buf();
    let config = sources.load().unwrap();
    let server = &config.project.servers[0];
    let roots = kaged_mcp::assemble::roots(&config, server)
        .unwrap()
        .expect("roots declared");
    let real = project.path().canonicalize().unwrap();
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            format!("file://{}", real.join("data").display()),
            format!("file://{}", real.join("data/sub").display()),
        ]
    );
}

/// A root that is a symlink out of the project passes the load (the text is fine) and is
/// refused when the server starts, naming the server, the root and "outside the project root";
/// the session goes on without that server. A missing root and a file are refused the same way.
#[tokio::test]
async fn roots_that_resolve_outside_the_project_are_refused_at_start() {
    let project = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), project.path().join("link")).unwrap();
    std::fs::write(project.path().join("file.txt"), "x").unwrap();
    let cases = [
        ("./link", "outside the project root"),
        ("./missing", "missing"),
        ("./file.txt", "is not a directory"),
    ];
    for (root, says) in cases {
        let yaml = format!(
            "mcp:\n  fs:\n    transport: stdio\n    command: {}\n    roots: [{root}]\n",
            never_run()
        );
        std::fs::write(project.path().join("project.yaml"), yaml).unwrap();
        let config = load(&ConfigPaths::new(project.path())).unwrap();
        let session = Session::start(config).await.unwrap();
        let failures = session.start_failures();
        assert_eq!(failures.len(), 1, "{root}: {failures:?}");
        let f = &failures[0];
        assert_eq!(f.server, "fs", "{root}: {f:?}");
        assert!(f.detail.contains("server `fs`"), "{root}: {f:?}");
        assert!(f.reason.contains("roots"), "{root}: {f:?}");
        assert!(f.reason.contains(says), "{root}: {f:?}");
        if root == "./link" {
            let real = elsewhere.path().canonicalize().unwrap();
            assert!(
                f.reason.contains(&real.display().to_string()),
                "{root}: names where it leads: {f:?}"
            );
        }
        // The server never ran: no client, no tools.
        assert!(session.catalog().is_empty(), "{root}");
        assert!(session.client("fs").is_err(), "{root}");
        session.shutdown().await;
    }
}

#[test]
fn an_unknown_log_level_is_refused_naming_the_accepted_ones() {
    let yaml = format!(
        "mcp:\n  db:\n    transport: stdio\n    command: {}\n",
        never_run()
    );
    for (value, found) in [
        ("\"loud\"", "\"loud\""),
        ("3", "an integer"),
        ("\"WARNING\"", "\"WARNING\""),
    ] {
        let errors = Sources::new(yaml.clone())
            .local(format!("[mcp.db]\nlog_level = {value}\n"))
            .load()
            .unwrap_err();
        let e = errors.errors().first().unwrap();
        assert_eq!(errors.errors().len(), 1, "{errors}");
        assert_eq!(e.file.to_str(), Some("local.toml"), "{e}");
        assert_eq!(e.key_path, "mcp.db.log_level", "{e}");
        assert_eq!(e.location.map(|l| l.line), Some(2), "{e}");
        assert_eq!(
            e.message,
            format!(
                "expected one of \"debug\", \"info\", \"notice\", \"warning\", \"error\", \
                 \"critical\", \"alert\", \"emergency\", found {found}"
            ),
            "{e}"
        );
    }
    // A good one reaches the client's options.
    let config = Sources::new(yaml)
        .local("[mcp.db]\nlog_level = \"debug\"\n")
        .load()
        .unwrap();
    assert_eq!(
        config.local.overrides("db").log_level,
        Some(LoggingLevel::Debug)
    );
    let options = kaged_mcp::assemble::client_options(&config, &config.project.servers[0]);
    assert_eq!(options.log_level, Some(LoggingLevel::Debug));
}
