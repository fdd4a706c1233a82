//! `@modelcontextprotocol/server-filesystem` 2026.8.31 started with no directory argument: the
//! only directories it may touch are the roots the session gives it (`project.yaml`
//! `mcp.<key>.roots: [./data]`). It asks `roots/list` as soon as `notifications/initialized`
//! arrives and replaces its (empty) allowed list with the valid roots (realpath'd).
//!
//! The race: `Session::start` returns once `tools/list` is answered, and the server may not
//! have had the `roots/list` answer yet (or may not have finished its `realpath`s), so a first
//! read could still see no allowed directory ("Access denied … not in "). The test asks
//! `list_allowed_directories` until it shows the root (bounded), then reads.

use std::time::Duration;

use kaged_mcp::client::ErrorKind;
use kaged_mcp::config::{load, ConfigPaths};
use kaged_mcp::protocol::CompletionRef;
use kaged_mcp::{Error, Session};
use serde_json::json;

use crate::common::peers;
use crate::map;

#[tokio::test]
async fn roots_are_the_only_directories_the_server_may_read() {
    let Some(cmd) = peers::require(peers::filesystem_stdio(), "server-filesystem") else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    let data = project.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("inside.txt"), "inside the root\n").unwrap();
    std::fs::write(project.path().join("outside.txt"), "next to the root\n").unwrap();
    // A symlink in the root pointing out of it: the server checks the target.
    std::os::unix::fs::symlink(project.path().join("outside.txt"), data.join("sneaky.txt"))
        .unwrap();
    let yaml = format!(
        "mcp:\n  fs:\n    transport: stdio\n    command: {}\n    roots: [./data]\n",
        serde_json::to_string(&cmd).unwrap()
    );
    std::fs::write(project.path().join("project.yaml"), yaml).unwrap();
    let config = load(&ConfigPaths::new(project.path())).unwrap();
    let session = Session::start(config).await.unwrap();
    let status = &session.status()[0];
    assert_eq!(status.state, "ready", "{status:?}");
    assert_eq!(status.era, Some("legacy"), "{status:?}");

    let real_data = data.canonicalize().unwrap();
    let mut allowed = String::new();
    for _ in 0..100 {
        allowed = session
            .call("mcp.fs.list_allowed_directories", Some(map(json!({}))))
            .await
            .unwrap()
            .joined_text();
        if allowed.lines().any(|l| l == real_data.to_str().unwrap()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        allowed,
        format!("Allowed directories:\n{}", real_data.display()),
        "the root, and only it"
    );

    let inside = session
        .call(
            "mcp.fs.read_text_file",
            Some(map(json!({"path": real_data.join("inside.txt")}))),
        )
        .await
        .unwrap();
    assert!(!inside.is_error, "{}", inside.joined_text());
    assert_eq!(inside.joined_text(), "inside the root\n");

    let outside_path = project.path().canonicalize().unwrap().join("outside.txt");
    let outside = session
        .call(
            "mcp.fs.read_text_file",
            Some(map(json!({"path": outside_path}))),
        )
        .await
        .unwrap();
    assert!(outside.is_error, "{}", outside.joined_text());
    let text = outside.joined_text();
    assert!(
        text.contains("Access denied") && text.contains("outside allowed directories"),
        "{text}"
    );
    assert!(!text.contains("next to the root"), "{text}");

    let sneaky = session
        .call(
            "mcp.fs.read_text_file",
            Some(map(json!({"path": real_data.join("sneaky.txt")}))),
        )
        .await
        .unwrap();
    assert!(sneaky.is_error, "{}", sneaky.joined_text());
    assert!(
        sneaky.joined_text().contains("Access denied"),
        "{}",
        sneaky.joined_text()
    );

    // It offers tools only: the lists are empty without a request, completions and
    // subscriptions are refused by the client, naming the capability.
    let (resources, templates) = session.resources("fs").await.unwrap();
    assert!(resources.is_empty() && templates.is_empty());
    assert!(session.prompts("fs").await.unwrap().is_empty());
    let err = session
        .complete(
            "fs",
            &CompletionRef::Prompt { name: "p".into() },
            "a",
            "",
            None,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Request { method: "completion/complete", source, .. }
            if source.kind() == ErrorKind::NotOffered && source.capability() == Some("completions")),
        "{err:?}"
    );
    let err = session
        .subscribe_resource("fs", "file:///x")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Request { source, .. }
            if source.kind() == ErrorKind::NotOffered && source.capability() == Some("resources.subscribe")),
        "{err:?}"
    );
    assert!(session
        .client("fs")
        .unwrap()
        .subscribed_resources()
        .is_empty());
    session.shutdown().await;
}
