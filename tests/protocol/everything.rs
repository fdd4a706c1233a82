//! `@modelcontextprotocol/server-everything` 2026.8.31 over stdio and Streamable HTTP, through
//! the client: its resources and templates, reads (text and blob), prompts, completions and
//! resource subscriptions. Its TypeScript SDK (1.32.2) speaks only the handshake era, so every
//! session here is legacy (`Auto` falls back to `initialize`).
//!
//! What it serves (read from its dist/, see /work/notes/wire24.md §3):
//! - seven static text documents `demo://resource/static/document/<file>.md` (`text/markdown`),
//!   and two templates, `demo://resource/dynamic/text/{resourceId}` (text "Resource <id>: This
//!   is a plaintext resource created at <time>") and `…/blob/{resourceId}` (a blob whose bytes
//!   are "Resource <id>: This is a base64 blob created at <time>", its mimeType `text/plain`);
//! - prompts `simple-prompt`, `args-prompt` {city (required), state}, `completable-prompt`
//!   {department, name}, `resource-prompt` {resourceType, resourceId};
//! - completions: `completable-prompt`'s `name` from `context.arguments.department` (Sales →
//!   David, Eve, Frank); a template's `resourceId` → `[value]` when it is a positive integer;
//! - `toggle-subscriber-updates`: on the first call, `notifications/resources/updated` for each
//!   URI this session subscribed to, at once and then every 5 s (the second call stops it).
//!   Over Streamable HTTP those notifications go only to the session's standalone GET stream.
//!
//! Log levels are tested against the Python server (python.rs), whose `log_level` and `log`
//! tools report what the server was told: server-everything's only logging is
//! `toggle-simulated-logging`, one message of a random level every 5 s, which a test could only
//! sample.

use kaged_mcp::client::{ClientOptions, Era, ErrorKind, McpClient, ServerChange};
use kaged_mcp::protocol::content::ResourceContents;
use kaged_mcp::protocol::{CompletionRef, ContentBlock};
use peers::SsePeer;
use serde_json::json;

use crate::common::peers;
use crate::{base64_decode, call, map, wait_for_change, CHANGE_TIMEOUT};

const DOCS: [&str; 7] = [
    "architecture.md",
    "extension.md",
    "features.md",
    "how-it-works.md",
    "instructions.md",
    "startup.md",
    "structure.md",
];
const TEXT_TEMPLATE: &str = "demo://resource/dynamic/text/{resourceId}";
const BLOB_TEMPLATE: &str = "demo://resource/dynamic/blob/{resourceId}";

/// The stdio client, or `None` (skipped) without the peer.
fn stdio() -> Option<McpClient> {
    let cmd = peers::require(peers::everything_stdio(), "server-everything")?;
    Some(crate::stdio_client(
        "everything",
        &cmd,
        ClientOptions::default(),
    ))
}

/// The peer on Streamable HTTP and its client, or `None` (skipped) without the peer.
fn http() -> Option<(SsePeer, McpClient)> {
    let port = peers::free_port();
    let (cmd, env) = peers::require(peers::everything_http(port), "server-everything")?;
    let peer = SsePeer::start(&cmd, &env, port).unwrap();
    let client = crate::http_client("everything", &peer.mcp_url(), ClientOptions::default());
    Some((peer, client))
}

/// Lists, reads, prompts and completions: the same answers over either transport.
async fn catalog_checks(client: &McpClient, who: &str) {
    // Resources: the seven static documents, in order, each text/markdown; no template among
    // them.
    let resources = client
        .list_resources()
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(client.era(), Some(Era::Legacy), "{who}");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    let want: Vec<String> = DOCS
        .iter()
        .map(|d| format!("demo://resource/static/document/{d}"))
        .collect();
    assert_eq!(uris, want, "{who}");
    for r in &resources {
        assert_eq!(
            r.mime_type.as_deref(),
            Some("text/markdown"),
            "{who}: {r:?}"
        );
        assert!(DOCS.contains(&r.name.as_str()), "{who}: {r:?}");
    }

    // Templates: both, with their MIME types.
    let templates = client
        .list_resource_templates()
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    let by_uri = |t: &str| {
        templates
            .iter()
            .find(|x| x.uri_template == t)
            .unwrap_or_else(|| panic!("{who}: no template {t} in {templates:?}"))
    };
    assert_eq!(by_uri(TEXT_TEMPLATE).name, "Dynamic Text Resource", "{who}");
    assert_eq!(
        by_uri(TEXT_TEMPLATE).mime_type.as_deref(),
        Some("text/plain")
    );
    assert_eq!(by_uri(BLOB_TEMPLATE).name, "Dynamic Blob Resource", "{who}");
    assert_eq!(
        by_uri(BLOB_TEMPLATE).mime_type.as_deref(),
        Some("application/octet-stream")
    );

    // A static document reads as its file's text.
    let doc = client
        .read_resource("demo://resource/static/document/features.md")
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(doc.contents.len(), 1, "{who}: {doc:?}");
    assert!(!doc.truncated, "the client itself never caps");
    let on_disk = std::fs::read_to_string(
        peers::everything_entry()
            .unwrap()
            .parent()
            .unwrap()
            .join("docs/features.md"),
    )
    .unwrap();
    assert_eq!(doc.joined_text(), on_disk, "{who}");

    // Template reads: text, and a blob that decodes to the text the server built.
    let text = client
        .read_resource("demo://resource/dynamic/text/1")
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    match &text.contents[..] {
        [ResourceContents::Text(t)] => {
            assert_eq!(t.uri, "demo://resource/dynamic/text/1", "{who}");
            assert_eq!(t.mime_type.as_deref(), Some("text/plain"), "{who}");
            assert!(
                t.text
                    .starts_with("Resource 1: This is a plaintext resource created at "),
                "{who}: {:?}",
                t.text
            );
        }
        other => panic!("{who}: expected one text content, got {other:?}"),
    }
    let blob = client
        .read_resource("demo://resource/dynamic/blob/1")
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    match &blob.contents[..] {
        [ResourceContents::Blob(b)] => {
            assert_eq!(b.uri, "demo://resource/dynamic/blob/1", "{who}");
            let bytes =
                base64_decode(&b.blob).unwrap_or_else(|| panic!("{who}: not base64: {:?}", b.blob));
            let decoded = String::from_utf8(bytes).unwrap();
            assert!(
                decoded.starts_with("Resource 1: This is a base64 blob created at "),
                "{who}: {decoded:?}"
            );
        }
        other => panic!("{who}: expected one blob content, got {other:?}"),
    }
    assert_eq!(blob.joined_text(), "", "a blob has no text");
    // An id the template refuses (it must be a positive integer): a JSON-RPC error, not
    // an empty read.
    let err = client
        .read_resource("demo://resource/dynamic/text/0")
        .await
        .unwrap_err();
    assert!(
        err.kind() == ErrorKind::JsonRpc
            && err
                .message()
                .is_some_and(|m| m.contains("Unknown resource")),
        "{who}: {err:?}"
    );

    // Prompts: the four, args-prompt's city required and state not.
    let prompts = client
        .list_prompts()
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    for want in [
        "simple-prompt",
        "args-prompt",
        "completable-prompt",
        "resource-prompt",
    ] {
        assert!(names.contains(&want), "{who}: {want} not in {names:?}");
    }
    let args_prompt = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    let arg = |n: &str| {
        args_prompt
            .arguments
            .iter()
            .find(|a| a.name == n)
            .unwrap_or_else(|| panic!("{who}: no argument {n}: {args_prompt:?}"))
    };
    assert!(arg("city").required, "{who}: {args_prompt:?}");
    assert!(!arg("state").required, "{who}: {args_prompt:?}");
    assert!(
        prompts
            .iter()
            .find(|p| p.name == "simple-prompt")
            .unwrap()
            .arguments
            .is_empty(),
        "{who}"
    );

    // prompts/get fills the arguments in.
    let got = client
        .get_prompt("args-prompt", Some(&map(json!({"city": "Paris"}))))
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(got.messages.len(), 1, "{who}: {got:?}");
    assert_eq!(got.messages[0].role, "user");
    let said = got.messages[0].content.as_text().unwrap_or_default();
    assert!(said.contains("Paris"), "{who}: {said:?}");
    assert_eq!(said, "What's weather in Paris?", "{who}");
    // A missing required argument is the server's -32602.
    let err = client.get_prompt("args-prompt", None).await.unwrap_err();
    assert!(
        err.kind() == ErrorKind::JsonRpc && err.code() == Some(-32602),
        "{who}: {err:?}"
    );
    // A prompt embedding a resource: the second message is the embedded text resource.
    let embedded = client
        .get_prompt(
            "resource-prompt",
            Some(&map(json!({"resourceType": "Text", "resourceId": "1"}))),
        )
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(embedded.messages.len(), 2, "{who}: {embedded:?}");
    match &embedded.messages[1].content {
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::Text(t) => {
                assert_eq!(t.uri, "demo://resource/dynamic/text/1", "{who}");
                assert!(t.text.starts_with("Resource 1: "), "{who}: {t:?}");
            }
            other => panic!("{who}: {other:?}"),
        },
        other => panic!("{who}: expected an embedded resource, got {other:?}"),
    }

    // Completions: a prompt argument narrowed by the context, and a template variable.
    let prompt_ref = CompletionRef::Prompt {
        name: "completable-prompt".into(),
    };
    let sales = client
        .complete(
            &prompt_ref,
            "name",
            "",
            Some(&map(json!({"department": "Sales"}))),
        )
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(sales.values, ["David", "Eve", "Frank"], "{who}");
    assert_eq!(sales.total, Some(3), "{who}");
    assert_eq!(sales.has_more, Some(false), "{who}");
    let engineering = client
        .complete(
            &prompt_ref,
            "name",
            "",
            Some(&map(json!({"department": "Engineering"}))),
        )
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(engineering.values, ["Alice", "Bob", "Charlie"], "{who}");
    let departments = client
        .complete(&prompt_ref, "department", "S", None)
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(departments.values, ["Sales", "Support"], "{who}");
    let template_ref = CompletionRef::ResourceTemplate {
        uri: TEXT_TEMPLATE.into(),
    };
    let ids = client
        .complete(&template_ref, "resourceId", "5", None)
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(ids.values, ["5"], "{who}");
    let none = client
        .complete(&template_ref, "resourceId", "abc", None)
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert!(none.values.is_empty(), "{who}: {none:?}");
}

/// Subscribes to two documents, starts the server's simulated updates and waits for one of
/// each on `changes()`; then unsubscribes from the first and waits for two more updates of
/// the second. Each of the server's 5 s ticks sends an update for every subscribed URI, the
/// first document's before the second's (in the order they were subscribed), so no update of
/// the first between those two proves `resources/unsubscribe` reached the server (the first
/// update of the second may close a tick that began before it did). The client drops an update
/// of a URI it is not subscribed to before `changes()` (with a DEBUG line), so the server's
/// side is seen in those lines: none for the first document between the two. Then stops the
/// updates.
async fn subscription_checks(client: &McpClient, who: &str) {
    let uri = "demo://resource/static/document/architecture.md";
    let other = "demo://resource/static/document/features.md";
    let (captured, _guard) = crate::common::capture::Captured::install_local();
    let ignored = || {
        captured
            .text()
            .lines()
            .filter(|l| l.contains("update of a resource not subscribed to") && l.contains(uri))
            .count()
    };
    let mut changes = client.changes();
    for u in [uri, other] {
        client
            .subscribe_resource(u)
            .await
            .unwrap_or_else(|e| panic!("{who}: {e}"));
    }
    let mut subscribed = client.subscribed_resources();
    subscribed.sort();
    assert_eq!(subscribed, [uri, other], "{who}");
    let updated = |u: &'static str| move |c: &ServerChange| matches!(c, ServerChange::ResourceUpdated { uri: x } if x == u);
    let started = call(client, who, "toggle-subscriber-updates", json!({})).await;
    assert!(
        started
            .joined_text()
            .starts_with("Started simulated resource updated notifications"),
        "{who}: {}",
        started.joined_text()
    );
    let mut seen = wait_for_change(&mut changes, CHANGE_TIMEOUT, who, updated(uri)).await;
    seen.extend(wait_for_change(&mut changes, CHANGE_TIMEOUT, who, updated(other)).await);
    assert!(
        seen.iter().all(|c| updated(uri)(c) || updated(other)(c)),
        "{who}: only the subscribed URIs are updated: {seen:?}"
    );

    client
        .unsubscribe_resource(uri)
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert_eq!(client.subscribed_resources(), [other], "{who}");
    // A tick already on its way may still update both: it ends with `other`.
    let _ = wait_for_change(&mut changes, CHANGE_TIMEOUT, who, updated(other)).await;
    let before = ignored();
    let later = wait_for_change(&mut changes, CHANGE_TIMEOUT, who, updated(other)).await;
    assert!(
        later.iter().all(updated(other)),
        "{who}: updates of {uri} after unsubscribing: {later:?}"
    );
    assert_eq!(
        ignored(),
        before,
        "{who}: the server still updates {uri}: {}",
        captured.text()
    );
    let stopped = call(client, who, "toggle-subscriber-updates", json!({})).await;
    assert!(
        stopped
            .joined_text()
            .starts_with("Stopped simulated resource updates"),
        "{who}: {}",
        stopped.joined_text()
    );
}

#[tokio::test]
async fn stdio_resources_prompts_and_completions() {
    let Some(client) = stdio() else { return };
    catalog_checks(&client, "everything stdio").await;
    client.shutdown().await;
}

#[tokio::test]
async fn http_resources_prompts_and_completions() {
    let Some((peer, client)) = http() else { return };
    catalog_checks(&client, "everything http").await;
    client.shutdown().await;
    drop(peer);
}

#[tokio::test]
async fn stdio_subscribed_updates_arrive_and_stop_after_unsubscribing() {
    let Some(client) = stdio() else { return };
    subscription_checks(&client, "everything stdio").await;
    client.shutdown().await;
}

/// Over Streamable HTTP the updates ride the standalone GET stream, which the client must hold
/// open for a stateful legacy session.
#[tokio::test]
async fn http_subscribed_updates_arrive_and_stop_after_unsubscribing() {
    let Some((peer, client)) = http() else { return };
    subscription_checks(&client, "everything http").await;
    client.shutdown().await;
    drop(peer);
}

/// The generic entry (`McpClient::request::<R>`) over both transports: a known kind decodes
/// into its typed result (the same prompt `get_prompt` reads), a kind of the caller's own for a
/// method the server does not know comes back as its JSON-RPC refusal naming the method, and
/// the client keeps working after it.
async fn generic_request_checks(client: &McpClient, who: &str) {
    use kaged_mcp::protocol::method::{GetPrompt, ListTools, Request};
    use kaged_mcp::protocol::params::GetPromptRequestParams;

    let prompt = client
        .request::<GetPrompt>(
            GetPromptRequestParams::new("args-prompt").with_arguments(map(json!({"city": "Lyon"}))),
        )
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    let typed = client
        .get_prompt("args-prompt", Some(&map(json!({"city": "Lyon"}))))
        .await
        .unwrap();
    assert_eq!(prompt, typed, "{who}");
    let text = serde_json::to_string(&prompt.messages).unwrap();
    assert!(text.contains("Lyon"), "{who}: {text}");

    /// An extension's method, unknown to server-everything.
    struct ListSkills;
    impl Request for ListSkills {
        const METHOD: &'static str = "skills/list";
        type Params = serde_json::Map<String, serde_json::Value>;
        type Result = serde_json::Value;
    }
    match client.request::<ListSkills>(Default::default()).await {
        Err(e) if e.kind() == ErrorKind::JsonRpc => {
            assert_eq!(e.code(), Some(-32601), "{who}");
            assert_eq!(e.request().unwrap().method, "skills/list", "{who}");
        }
        other => panic!("{who}: skills/list should be refused, got {other:?}"),
    }
    let page = client
        .request::<ListTools>(Default::default())
        .await
        .unwrap_or_else(|e| panic!("{who}: {e}"));
    assert!(page.tools.iter().any(|t| t.name == "echo"), "{who}");
}

#[tokio::test]
async fn stdio_generic_requests_of_any_kind() {
    let Some(client) = stdio() else { return };
    generic_request_checks(&client, "stdio").await;
}

#[tokio::test]
async fn http_generic_requests_of_any_kind() {
    let Some((_peer, client)) = http() else {
        return;
    };
    generic_request_checks(&client, "http").await;
}
