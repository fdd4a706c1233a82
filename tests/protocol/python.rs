//! `tests/servers/py_resources_server.py` on the PyPI `mcp` SDK, over stdio and Streamable
//! HTTP, in three configurations: 1.30.0 (legacy only; `Auto` falls back to `initialize`), 2.3.0 held to the
//! legacy era (`EraPreference::Legacy`) and 2.3.0 in the 2026-07-28 era (`Auto`, which
//! `server/discover` settles on). The server's answers are written down in its docstring; the
//! era differences these tests pin:
//! - the log level: legacy sends `logging/setLevel` at start (the `log_level` tool reports
//!   it); modern has no such method, and the level rides each request's `_meta`
//!   (`io.modelcontextprotocol/logLevel`), which the `log` tool honours;
//! - roots: legacy is a server→client `roots/list` in the middle of the call; modern an
//!   `input_required` answer the client retries with `inputResponses`;
//! - subscriptions: legacy `resources/subscribe` / `resources/unsubscribe` (the `subscribed`
//!   tool tells what reached the server) with updates for any touched URI; modern a
//!   `subscriptions/listen` stream naming the subscribed URIs, updates only for those.
//!
//! Each configuration and transport is its own test (a macro below), so a failure names it.
//! Over HTTP each client gets a server process of its own (its state is process-wide). Legacy
//! HTTP servers send updates and list changes on the standalone GET stream; modern ones on the
//! `subscriptions/listen` POST's event stream.

use kaged_mcp::client::{
    ClientOptions, Era, EraPreference, ErrorKind, McpClient, Root, ServerChange,
};
use kaged_mcp::protocol::content::ResourceContents;
use kaged_mcp::protocol::{CompletionRef, LoggingLevel};
use peers::{PyMcp, SsePeer};
use serde_json::json;

use crate::common::capture::Captured;
use crate::common::peers;
use crate::{base64_decode, call, map, wait_for_change, CHANGE_TIMEOUT};

/// The 16 bytes of `data://pixel.png`.
const PIXEL: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x01\x02\x03\x04\x05\x06\x07";
const README: &str = "file:///notes/readme.txt";

/// One SDK line in one era, over stdio or Streamable HTTP.
#[derive(Debug, Clone, Copy)]
struct Case {
    version: PyMcp,
    prefer: EraPreference,
    era: Era,
    http: bool,
}

const V1_LEGACY: Case = Case {
    version: PyMcp::V1,
    prefer: EraPreference::Auto,
    era: Era::Legacy,
    http: false,
};
const V2_LEGACY: Case = Case {
    version: PyMcp::V2,
    prefer: EraPreference::Legacy,
    era: Era::Legacy,
    http: false,
};
const V2_MODERN: Case = Case {
    version: PyMcp::V2,
    prefer: EraPreference::Auto,
    era: Era::Modern,
    http: false,
};

/// A client and, over HTTP, the server process it talks to (killed on drop).
struct Peer {
    client: McpClient,
    _http: Option<SsePeer>,
}

impl std::ops::Deref for Peer {
    type Target = McpClient;
    fn deref(&self) -> &McpClient {
        &self.client
    }
}

impl Case {
    fn over_http(self) -> Self {
        Self { http: true, ..self }
    }

    fn who(self) -> String {
        let transport = if self.http { "http" } else { "stdio" };
        format!("{} {:?} {transport}", self.version.name(), self.era)
    }

    fn modern(self) -> bool {
        self.era == Era::Modern
    }

    /// A started client of a server process of its own, with `options` (the era preference
    /// set here), its era checked; `None` (skipped) without the venv.
    async fn client(self, options: ClientOptions) -> Option<Peer> {
        let cmd = peers::require(
            peers::py_resources_server(self.version, self.http),
            &self.version.name(),
        )?;
        let options = options.era(self.prefer);
        let (client, http) = if self.http {
            let peer = SsePeer::start_reporting_port(&cmd)
                .unwrap_or_else(|e| panic!("{}: {e}", self.who()));
            let client = crate::http_client("py", &peer.mcp_url(), options);
            (client, Some(peer))
        } else {
            (crate::stdio_client("py", &cmd, options), None)
        };
        if let Err(e) = client.start().await {
            let stderr = http.as_ref().map(SsePeer::stderr).unwrap_or_default();
            panic!("{}: start: {e}\n{stderr}", self.who());
        }
        assert_eq!(client.era(), Some(self.era), "{}", self.who());
        Some(Peer {
            client,
            _http: http,
        })
    }
}

/// Runs `$check` for each configuration, one test each, over stdio and over Streamable HTTP.
macro_rules! per_case {
    ($check:ident: $v1:ident, $v2_legacy:ident, $v2_modern:ident,
     $http_v1:ident, $http_v2_legacy:ident, $http_v2_modern:ident) => {
        #[tokio::test]
        async fn $v1() {
            $check(V1_LEGACY).await;
        }
        #[tokio::test]
        async fn $v2_legacy() {
            $check(V2_LEGACY).await;
        }
        #[tokio::test]
        async fn $v2_modern() {
            $check(V2_MODERN).await;
        }
        #[tokio::test]
        async fn $http_v1() {
            $check(V1_LEGACY.over_http()).await;
        }
        #[tokio::test]
        async fn $http_v2_legacy() {
            $check(V2_LEGACY.over_http()).await;
        }
        #[tokio::test]
        async fn $http_v2_modern() {
            $check(V2_MODERN.over_http()).await;
        }
    };
}

// --- resources, templates, prompts, completions -----------------------------------------------

async fn resources_prompts_and_completions(case: Case) {
    let who = case.who();
    let Some(client) = case.client(ClientOptions::default()).await else {
        return;
    };
    let resources = client.list_resources().await.unwrap();
    let listed: Vec<(&str, &str, Option<&str>)> = resources
        .iter()
        .map(|r| (r.uri.as_str(), r.name.as_str(), r.mime_type.as_deref()))
        .collect();
    assert_eq!(
        listed,
        [
            (README, "readme", Some("text/plain")),
            ("data://pixel.png", "pixel", Some("image/png")),
            ("data://big.txt", "big", Some("text/plain")),
        ],
        "{who}"
    );
    assert_eq!(
        resources[0].description.as_deref(),
        Some("A short text note."),
        "{who}"
    );
    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1, "{who}: {templates:?}");
    assert_eq!(templates[0].uri_template, "greeting://{name}", "{who}");
    assert_eq!(templates[0].name, "greeting", "{who}");

    // Reads: text (which says which SDK line answered), a 16-byte blob, a template, 200 000
    // bytes of text (whole: the client itself never caps), an unknown URI.
    let readme = client.read_resource(README).await.unwrap();
    let line = match case.version {
        PyMcp::V1 => 1,
        PyMcp::V2 => 2,
    };
    assert_eq!(
        readme.joined_text(),
        format!("hello from mcp {line}"),
        "{who}"
    );
    let pixel = client.read_resource("data://pixel.png").await.unwrap();
    match &pixel.contents[..] {
        [ResourceContents::Blob(b)] => {
            assert_eq!(b.mime_type.as_deref(), Some("image/png"), "{who}");
            assert_eq!(b.blob, "iVBORw0KGgoAAQIDBAUGBw==", "{who}");
            assert_eq!(base64_decode(&b.blob).unwrap(), PIXEL, "{who}");
        }
        other => panic!("{who}: expected one blob, got {other:?}"),
    }
    let hello = client.read_resource("greeting://world").await.unwrap();
    assert_eq!(hello.joined_text(), "Hello, world!", "{who}");
    let big = client.read_resource("data://big.txt").await.unwrap();
    assert_eq!(big.joined_text(), "0123456789".repeat(20_000), "{who}");
    assert!(!big.truncated, "{who}");
    let err = client.read_resource("nope://x").await.unwrap_err();
    // 1.30 answers with code 0 (its generic mapping), 2.3 with -32602.
    let want_code = match case.version {
        PyMcp::V1 => 0,
        PyMcp::V2 => -32602,
    };
    assert!(
        err.kind() == ErrorKind::JsonRpc
            && err.code() == Some(want_code)
            && err
                .message()
                .is_some_and(|m| m.contains("Unknown resource: nope://x")),
        "{who}: {err:?}"
    );

    // Prompts with their arguments.
    let prompts = client.list_prompts().await.unwrap();
    let shape: Vec<(&str, Vec<(&str, bool)>)> = prompts
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.arguments
                    .iter()
                    .map(|a| (a.name.as_str(), a.required))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("summarize", vec![("topic", true), ("style", false)]),
            ("pair", vec![("language", true), ("framework", true)]),
        ],
        "{who}"
    );
    let plain = client
        .get_prompt("summarize", Some(&map(json!({"topic": "bees"}))))
        .await
        .unwrap();
    assert_eq!(plain.messages.len(), 1, "{who}: {plain:?}");
    assert_eq!(plain.messages[0].role, "user", "{who}");
    assert_eq!(
        plain.messages[0].content.as_text(),
        Some("Summarize bees in a plain style"),
        "{who}"
    );
    assert_eq!(
        plain.description.as_deref(),
        Some("Summarize a topic, in a style."),
        "{who}"
    );
    let styled = client
        .get_prompt(
            "summarize",
            Some(&map(json!({"topic": "bees", "style": "terse"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        styled.messages[0].content.as_text(),
        Some("Summarize bees in a terse style"),
        "{who}"
    );
    let pair = client
        .get_prompt(
            "pair",
            Some(&map(json!({"language": "rust", "framework": "axum"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        pair.messages[0].content.as_text(),
        Some("Pair rust with axum"),
        "{who}"
    );
    // A missing required argument is refused (code 0 in the legacy SDKs, -32603 in modern).
    let err = client.get_prompt("summarize", None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::JsonRpc, "{who}: {err:?}");

    // Completions: one argument narrowed by another already chosen, a prefix, a template.
    let pair_ref = CompletionRef::Prompt {
        name: "pair".into(),
    };
    let python = client
        .complete(
            &pair_ref,
            "framework",
            "",
            Some(&map(json!({"language": "python"}))),
        )
        .await
        .unwrap();
    assert_eq!(python.values, ["django", "flask"], "{who}");
    assert_eq!(python.total, Some(2), "{who}");
    assert_eq!(python.has_more, Some(false), "{who}");
    let rust_a = client
        .complete(
            &pair_ref,
            "framework",
            "a",
            Some(&map(json!({"language": "rust"}))),
        )
        .await
        .unwrap();
    assert_eq!(rust_a.values, ["axum", "actix"], "{who}");
    let no_context = client
        .complete(&pair_ref, "framework", "", None)
        .await
        .unwrap();
    assert!(no_context.values.is_empty(), "{who}: {no_context:?}");
    let languages = client
        .complete(&pair_ref, "language", "", None)
        .await
        .unwrap();
    assert_eq!(languages.values, ["python", "rust", "go"], "{who}");
    let names = client
        .complete(
            &CompletionRef::ResourceTemplate {
                uri: "greeting://{name}".into(),
            },
            "name",
            "al",
            None,
        )
        .await
        .unwrap();
    assert_eq!(names.values, ["alice", "albert"], "{who}");
    client.shutdown().await;
}

per_case!(resources_prompts_and_completions:
    v1_resources_prompts_and_completions,
    v2_legacy_resources_prompts_and_completions,
    v2_modern_resources_prompts_and_completions,
    http_v1_resources_prompts_and_completions,
    http_v2_legacy_resources_prompts_and_completions,
    http_v2_modern_resources_prompts_and_completions);

// --- log levels ---------------------------------------------------------------------------------

/// With `log_level(Warning)`: an `info` message is dropped by the server and a `warning` one
/// sent, and it reaches `tracing` ("server log"). Legacy: the server was told by
/// `logging/setLevel` at start (its `log_level` tool says "warning"). Modern: that method is
/// gone (the tool stays "unset"); the level rode the request's `_meta`, which the `log` tool
/// reads (it says which it did). Without a level, legacy sends everything and modern nothing
/// (a 2026-07-28 server must not log for a request that did not opt in).
///
/// The capture is this thread's subscriber: `#[tokio::test]`'s current-thread runtime polls the
/// client's tasks on this thread too, and other tests of the binary run on theirs.
async fn log_level(case: Case) {
    let who = case.who();
    let (captured, _guard) = Captured::install_local();
    let Some(client) = case
        .client(ClientOptions::default().log_level(LoggingLevel::Warning))
        .await
    else {
        return;
    };
    // Legacy: `logging/setLevel` is answered before the session is ready, so the first call
    // already sees it (the race it once lost is pinned by
    // `legacy_log_level_is_set_before_the_first_request`). Modern: no setLevel at all.
    let want = if case.modern() { "unset" } else { "warning" };
    let level = call(&client, &who, "log_level", json!({}))
        .await
        .joined_text();
    assert_eq!(level, want, "{who}");

    let info = call(
        &client,
        &who,
        "log",
        json!({"level": "info", "message": "quiet-info-line"}),
    )
    .await;
    let dropped = if case.modern() {
        "dropped info (the request's _meta did not opt in at that level)"
    } else {
        "dropped info (below warning)"
    };
    assert_eq!(info.joined_text(), dropped, "{who}");
    let warning = call(
        &client,
        &who,
        "log",
        json!({"level": "warning", "message": "loud-warning-line"}),
    )
    .await;
    assert_eq!(warning.joined_text(), "logged warning", "{who}");
    let error = call(
        &client,
        &who,
        "log",
        json!({"level": "error", "message": "loud-error-line"}),
    )
    .await;
    assert_eq!(error.joined_text(), "logged error", "{who}");
    // The notifications came before the answers (on stdio, on the same pipe).
    let logs = captured.text();
    for line in ["loud-warning-line", "loud-error-line"] {
        assert!(
            logs.lines()
                .any(|l| l.contains("server log") && l.contains(line)),
            "{who}: no `server log` with {line} in:\n{logs}"
        );
    }
    assert!(!logs.contains("quiet-info-line"), "{who}: {logs}");
    client.shutdown().await;

    // No level set.
    let Some(client) = case.client(ClientOptions::default()).await else {
        return;
    };
    let level = call(&client, &who, "log_level", json!({})).await;
    assert_eq!(
        level.joined_text(),
        "unset",
        "{who}: no logging/setLevel sent"
    );
    let debug = call(
        &client,
        &who,
        "log",
        json!({"level": "debug", "message": "unasked-debug-line"}),
    )
    .await;
    let want = if case.modern() {
        "dropped debug (the request's _meta did not opt in at that level)"
    } else {
        "logged debug"
    };
    assert_eq!(debug.joined_text(), want, "{who}");
    client.shutdown().await;
}

/// The level set in the options is in force for the first request made once `start()` has
/// returned: `ClientOptions::log_level` says `logging/setLevel` is "sent at each start", and
/// `Shared::prepare` that it is sent "before anything else the client asks". Several fresh
/// sessions per legacy configuration, each asking `log_level` at once.
///
/// It once failed over Streamable HTTP: `logging/setLevel` went out from a spawned task, and
/// the first `tools/call` (its own POST) was often handled first ("unset"). `Shared::prepare`
/// now awaits it before the session is ready.
#[tokio::test]
async fn legacy_log_level_is_set_before_the_first_request() {
    let mut answers = Vec::new();
    // A quarter or so of the HTTP sessions lost the race before the fix: 8 each make a pass by
    // luck unlikely (about 1 %).
    for (case, sessions) in [
        (V1_LEGACY, 2),
        (V2_LEGACY, 2),
        (V1_LEGACY.over_http(), 8),
        (V2_LEGACY.over_http(), 8),
    ] {
        for _ in 0..sessions {
            let Some(client) = case
                .client(ClientOptions::default().log_level(LoggingLevel::Warning))
                .await
            else {
                return;
            };
            let level = call(&client, &case.who(), "log_level", json!({})).await;
            answers.push((case.who(), level.joined_text()));
            client.shutdown().await;
        }
    }
    let early: Vec<_> = answers.iter().filter(|(_, l)| l != "warning").collect();
    assert!(
        early.is_empty(),
        "the first request overtook logging/setLevel in {} of {} sessions: {early:?}",
        early.len(),
        answers.len()
    );
}

per_case!(log_level: v1_log_level, v2_legacy_log_level, v2_modern_log_level,
    http_v1_log_level, http_v2_legacy_log_level, http_v2_modern_log_level);

// --- roots --------------------------------------------------------------------------------------

/// With roots set, the `roots` tool gets them (legacy: the server's `roots/list` request in the
/// middle of the call; modern: `input_required`, retried with `inputResponses`); without, the
/// tool reports an error (legacy: the client answered "method not found"; modern: the request's
/// `_meta` declared no `roots` capability).
async fn roots(case: Case) {
    let who = case.who();
    let dir = tempfile::tempdir().unwrap();
    let with_space = dir.path().join("my data");
    std::fs::create_dir(&with_space).unwrap();
    let a = Root::for_dir(dir.path(), Some("top".into()));
    let b = Root::for_dir(&with_space, None);
    assert!(b.uri.ends_with("/my%20data"), "{b:?}");
    let Some(client) = case
        .client(ClientOptions::default().roots(vec![a.clone(), b.clone()]))
        .await
    else {
        return;
    };
    let got = call(&client, &who, "roots", json!({})).await;
    assert!(!got.is_error, "{who}: {}", got.joined_text());
    let uris: Vec<String> = serde_json::from_str(&got.joined_text())
        .unwrap_or_else(|e| panic!("{who}: {e}: {}", got.joined_text()));
    assert_eq!(uris, [a.uri.clone(), b.uri.clone()], "{who}");
    assert!(uris[0].starts_with("file:///"), "{who}: {uris:?}");
    // Asked again on the same session: the same answer.
    let again = call(&client, &who, "roots", json!({})).await;
    assert_eq!(again.joined_text(), got.joined_text(), "{who}");
    client.shutdown().await;

    let Some(client) = case.client(ClientOptions::default()).await else {
        return;
    };
    let refused = call(&client, &who, "roots", json!({})).await;
    assert!(refused.is_error, "{who}: {}", refused.joined_text());
    // Legacy: the SDK puts the client's JSON-RPC error message after "roots error: " (ours is
    // "Method not found: roots/list").
    let want = if case.modern() {
        "roots error: the client did not declare the roots capability"
    } else {
        "roots error: Method not found"
    };
    assert!(
        refused.joined_text().starts_with(want),
        "{who}: {}",
        refused.joined_text()
    );
    client.shutdown().await;
}

per_case!(roots: v1_roots, v2_legacy_roots, v2_modern_roots,
    http_v1_roots, http_v2_legacy_roots, http_v2_modern_roots);

// --- subscriptions and list changes -----------------------------------------------------------

/// Calls `touch` on `uri` once and waits for its update on `changes`.
async fn touch_and_wait(
    client: &McpClient,
    who: &str,
    uri: &str,
    changes: &mut tokio::sync::broadcast::Receiver<ServerChange>,
) {
    let touched = call(client, who, "touch", json!({"uri": uri})).await;
    assert_eq!(touched.joined_text(), format!("touched {uri}"), "{who}");
    wait_for_change(
        changes,
        CHANGE_TIMEOUT,
        who,
        |c| matches!(c, ServerChange::ResourceUpdated { uri: u } if u == uri),
    )
    .await;
}

/// Subscribe, touch → `ResourceUpdated`: once `subscribe_resource` has returned, the
/// subscription is in force. Legacy: `resources/subscribe` was answered, and the server holds
/// it (its `subscribed` tool); unsubscribing removes it there (this server sends updates for
/// any touched URI, so the server's list is the check). Modern: right after
/// `unsubscribe_resource` returns, a touch delivers nothing. Then `add_resource` →
/// `ResourcesListChanged` (legacy: sent by the server on its own; modern: on the list stream the
/// client opened at start, since the server offers `resources.listChanged`), and the new
/// resource is listed and readable.
///
/// The first touch after `subscribe_resource` returns is delivered in both eras: a modern
/// subscription returns once the server acknowledged a stream naming the URI (it once returned
/// before the stream was even sent, and that update went to no stream).
async fn subscriptions(case: Case) {
    let who = case.who();
    let Some(client) = case.client(ClientOptions::default()).await else {
        return;
    };
    let caps = client.initialize_result().unwrap().capabilities.clone();
    assert_eq!(caps["resources"]["subscribe"], true, "{who}: {caps}");
    assert_eq!(caps["resources"]["listChanged"], true, "{who}: {caps}");
    let mut changes = client.changes();
    client.subscribe_resource(README).await.unwrap();
    assert_eq!(client.subscribed_resources(), [README], "{who}");
    // Subscribing twice is one subscription.
    client.subscribe_resource(README).await.unwrap();
    assert_eq!(client.subscribed_resources(), [README], "{who}");
    if !case.modern() {
        let held = call(&client, &who, "subscribed", json!({})).await;
        assert_eq!(held.joined_text(), format!("[\"{README}\"]"), "{who}");
    }
    touch_and_wait(&client, &who, README, &mut changes).await;

    client.unsubscribe_resource(README).await.unwrap();
    assert!(client.subscribed_resources().is_empty(), "{who}");
    if case.modern() {
        let touched = call(&client, &who, "touch", json!({"uri": README})).await;
        assert_eq!(touched.joined_text(), format!("touched {README}"), "{who}");
    } else {
        let held = call(&client, &who, "subscribed", json!({})).await;
        assert_eq!(held.joined_text(), "[]", "{who}");
    }
    let after = list_change_checks(&client, &who, &mut changes, "memo://added/1").await;
    assert!(
        !after.iter().any(is_update),
        "{who}: an update after unsubscribe_resource returned: {after:?}"
    );
    client.shutdown().await;
}

per_case!(subscriptions: v1_subscriptions, v2_legacy_subscriptions, v2_modern_subscriptions,
    http_v1_subscriptions, http_v2_legacy_subscriptions, http_v2_modern_subscriptions);

/// `add_resource` → `ResourcesListChanged`, and the resource `uri` is then listed and read.
/// Returns the changes that came before the list change: the fence a check that nothing
/// came reads (the server sent any of them before it, on the stdio pipe or a stream of
/// its own written a round trip earlier).
async fn list_change_checks(
    client: &McpClient,
    who: &str,
    changes: &mut tokio::sync::broadcast::Receiver<ServerChange>,
    uri: &str,
) -> Vec<ServerChange> {
    let reply = call(
        client,
        who,
        "add_resource",
        json!({"uri": uri, "text": "new"}),
    )
    .await;
    assert_eq!(reply.joined_text(), format!("added {uri}"), "{who}");
    let mut before = wait_for_change(changes, CHANGE_TIMEOUT, who, |c| {
        *c == ServerChange::ResourcesListChanged
    })
    .await;
    before.pop();
    let listed: Vec<String> = client
        .list_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert!(listed.iter().any(|u| u == uri), "{who}: {listed:?}");
    assert_eq!(
        client.read_resource(uri).await.unwrap().joined_text(),
        "new",
        "{who}"
    );
    before
}

fn is_update(change: &ServerChange) -> bool {
    matches!(change, ServerChange::ResourceUpdated { .. })
}

/// The modern era: once `subscribe_resource` has returned (the server acknowledged a stream
/// naming the URI), updates of it arrive on the `subscriptions/listen` stream, one per touch,
/// the first touch included; a URI not subscribed gets none; once `unsubscribe_resource` has
/// returned none either; list changes arrive on the list stream.
async fn subscription_stream_once_open(case: Case) {
    let who = case.who();
    let Some(client) = case.client(ClientOptions::default()).await else {
        return;
    };
    let mut changes = client.changes();
    client.subscribe_resource(README).await.unwrap();
    // Acknowledged: each touch is one update, the first too.
    for _ in 0..4 {
        touch_and_wait(&client, &who, README, &mut changes).await;
    }
    let touched = call(&client, &who, "touch", json!({"uri": "data://pixel.png"})).await;
    assert_eq!(touched.joined_text(), "touched data://pixel.png", "{who}");
    // The fence: a touch of the subscribed URI, whose update comes on the same stream after
    // any the pixel's touch caused.
    let touched = call(&client, &who, "touch", json!({"uri": README})).await;
    assert_eq!(touched.joined_text(), format!("touched {README}"), "{who}");
    let readme =
        |c: &ServerChange| matches!(c, ServerChange::ResourceUpdated { uri } if uri == README);
    let mut after = wait_for_change(&mut changes, CHANGE_TIMEOUT, &who, readme).await;
    after.pop();
    assert!(
        !after.iter().any(is_update),
        "{who}: an update of a URI not subscribed: {after:?}"
    );

    client.unsubscribe_resource(README).await.unwrap();
    let touched = call(&client, &who, "touch", json!({"uri": README})).await;
    assert_eq!(touched.joined_text(), format!("touched {README}"), "{who}");
    let after = list_change_checks(&client, &who, &mut changes, "memo://added/2").await;
    assert!(
        !after.iter().any(is_update),
        "{who}: an update after unsubscribing: {after:?}"
    );
    client.shutdown().await;
}

/// Once `unsubscribe_resource` has returned, no update of that URI reaches `changes()`, even
/// for a touch sent right after it (the stream naming it has ended, and an update that overtook
/// the end is not passed on).
async fn no_update_once_unsubscribe_returns(case: Case) {
    let who = case.who();
    let Some(client) = case.client(ClientOptions::default()).await else {
        return;
    };
    let mut changes = client.changes();
    client.subscribe_resource(README).await.unwrap();
    touch_and_wait(&client, &who, README, &mut changes).await;
    client.unsubscribe_resource(README).await.unwrap();
    assert!(client.subscribed_resources().is_empty(), "{who}");
    let touched = call(&client, &who, "touch", json!({"uri": README})).await;
    assert_eq!(touched.joined_text(), format!("touched {README}"), "{who}");
    let after = list_change_checks(&client, &who, &mut changes, "memo://added/3").await;
    assert!(
        !after.iter().any(is_update),
        "{who}: an update of {README} after unsubscribe_resource returned: {after:?}"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn v2_modern_subscription_stream_once_open() {
    subscription_stream_once_open(V2_MODERN).await;
}

#[tokio::test]
async fn http_v2_modern_subscription_stream_once_open() {
    subscription_stream_once_open(V2_MODERN.over_http()).await;
}

#[tokio::test]
async fn v2_modern_no_update_once_unsubscribe_returns() {
    no_update_once_unsubscribe_returns(V2_MODERN).await;
}

#[tokio::test]
async fn http_v2_modern_no_update_once_unsubscribe_returns() {
    no_update_once_unsubscribe_returns(V2_MODERN.over_http()).await;
}

/// Subscriptions are the client's and outlive a session: after a restart (a new server
/// process, which knows none) the client sends them again: `resources/subscribe` in the legacy
/// era (the new process's `subscribed` tool lists the URI), the resource stream in the modern
/// one (a touch is delivered). Sent before the new session is ready, so the first request
/// after the start already finds them. Stdio only: an HTTP server process keeps its state
/// across sessions.
async fn resubscribed_after_a_restart(case: Case) {
    let who = case.who();
    let Some(client) = case.client(ClientOptions::default()).await else {
        return;
    };
    client.subscribe_resource(README).await.unwrap();
    let first_pid = client.process_id();
    client.shutdown().await;
    client.reenable();
    let mut changes = client.changes();
    client.start().await.unwrap();
    // A restart announces every subscribed resource as changed (an update may have been missed
    // while no session listened); that is not the stream, so it is read first.
    wait_for_change(
        &mut changes,
        CHANGE_TIMEOUT,
        &who,
        |c| matches!(c, ServerChange::ResourceUpdated { uri } if uri == README),
    )
    .await;
    // Nothing else is announced: the touch's update is the next change (a second
    // announcement would be a bug of its own; what has come is dropped).
    while changes.try_recv().is_ok() {}
    if case.modern() {
        touch_and_wait(&client, &who, README, &mut changes).await;
    } else {
        let held = call(&client, &who, "subscribed", json!({}))
            .await
            .joined_text();
        assert_eq!(held, format!("[\"{README}\"]"), "{who}");
    }
    assert_eq!(client.restarts(), 1, "{who}");
    assert_ne!(client.process_id(), first_pid, "{who}: a new process");
    assert_eq!(client.subscribed_resources(), [README], "{who}");
    client.shutdown().await;
}

#[tokio::test]
async fn v1_resubscribed_after_a_restart() {
    resubscribed_after_a_restart(V1_LEGACY).await;
}

#[tokio::test]
async fn v2_legacy_resubscribed_after_a_restart() {
    resubscribed_after_a_restart(V2_LEGACY).await;
}

#[tokio::test]
async fn v2_modern_resubscribed_after_a_restart() {
    resubscribed_after_a_restart(V2_MODERN).await;
}
