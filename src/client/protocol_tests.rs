//! Unit tests of the rest of the client protocol over the scripted transport: subscriptions
//! kept across restarts and the log level sent at each start (legacy), the modern resource
//! stream opened again when the set changes, reads that follow `input_required` with the
//! client's roots, and capabilities that are checked before anything is sent.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::protocol::{LoggingLevel, ResourceContents};
use crate::test_util::{Act, MockTransport};

fn method(msg: &Value) -> &str {
    msg.get("method").and_then(Value::as_str).unwrap_or("")
}

/// A legacy server offering resources (`subscribe` as given) and logging.
fn legacy(subscribe: bool) -> MockTransport {
    MockTransport::new(move |msg| match method(msg) {
        "initialize" => vec![Act::reply(
            msg,
            json!({"protocolVersion": "2025-11-25",
                "capabilities": {"resources": {"subscribe": subscribe}, "logging": {}},
                "serverInfo": {"name": "mock", "version": "1"}}),
        )],
        "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            vec![Act::reply(msg, json!({}))]
        }
        "resources/read" => vec![Act::reply(
            msg,
            json!({"contents": [{"uri": msg["params"]["uri"], "blob": "AAEC", "mimeType": "x/y"}]}),
        )],
        _ => vec![],
    })
}

/// Lets the client's spawned tasks run (the scripted server answers synchronously).
async fn settle() {
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn legacy_options() -> ClientOptions {
    ClientOptions::default()
        .era(EraPreference::Legacy)
        .backoff_jitter(kaged_mcp_layers::retry::Jitter::None)
}

/// The `(method, params)` of every request after the `n`-th `notifications/initialized`.
fn after_start(t: &MockTransport, n: usize) -> Vec<(String, Value)> {
    let seen = t.seen();
    let start = seen
        .iter()
        .enumerate()
        .filter(|(_, m)| method(m) == "notifications/initialized")
        .nth(n)
        .map(|(i, _)| i + 1)
        .unwrap_or_else(|| panic!("no start #{n}: {seen:?}"));
    let end = seen[start..]
        .iter()
        .position(|m| method(m) == "initialize")
        .map_or(seen.len(), |p| start + p);
    seen[start..end]
        .iter()
        .map(|m| (method(m).to_owned(), m["params"].clone()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_legacy_subscription_and_the_log_level_are_sent_again_at_every_start() {
    let t = legacy(true);
    let c = McpClient::new(
        "mock",
        t.clone(),
        legacy_options().log_level(LoggingLevel::Warning),
    );
    let mut changes = c.changes();
    c.subscribe_resource("a://x").await.unwrap();
    settle().await;
    let first = after_start(&t, 0);
    assert!(
        first.contains(&("logging/setLevel".into(), json!({"level": "warning"}))),
        "{first:?}"
    );
    assert!(
        first.contains(&("resources/subscribe".into(), json!({"uri": "a://x"}))),
        "{first:?}"
    );
    // An update reaches the embedder.
    t.push(vec![Act::Reply(json!({"jsonrpc": "2.0",
        "method": "notifications/resources/updated", "params": {"uri": "a://x"}}))]);
    assert_eq!(
        changes.recv().await.unwrap(),
        ServerChange::ResourceUpdated {
            uri: "a://x".into()
        }
    );
    // The server exits; the next start subscribes again and sets the level again, unasked.
    t.push(vec![Act::close("exited (exit status: 1)")]);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    c.start().await.unwrap();
    settle().await;
    let second = after_start(&t, 1);
    assert_eq!(
        second,
        [
            ("logging/setLevel".into(), json!({"level": "warning"})),
            ("resources/subscribe".into(), json!({"uri": "a://x"})),
        ]
    );
    // Unsubscribed: forgotten, and not sent again at the next start.
    c.unsubscribe_resource("a://x").await.unwrap();
    assert!(c.subscribed_resources().is_empty());
    assert!(t
        .seen_methods()
        .contains(&"resources/unsubscribe".to_owned()));
}

#[tokio::test(start_paused = true)]
async fn no_subscription_is_sent_to_a_server_that_does_not_offer_them() {
    let t = legacy(false);
    let c = McpClient::new("mock", t.clone(), legacy_options());
    let err = c.subscribe_resource("a://x").await.unwrap_err();
    assert!(
        matches!(err.parts(), Kind::NotOffered { capability, method, .. } if &**capability == "resources.subscribe" && *method == "resources/subscribe"),
        "{err}"
    );
    assert!(err.to_string().contains("a://x"), "{err}");
    assert!(!t.seen_methods().contains(&"resources/subscribe".to_owned()));
    assert!(c.subscribed_resources().is_empty());
    // No level set: no setLevel either.
    assert!(!t.seen_methods().contains(&"logging/setLevel".to_owned()));
}

#[tokio::test(start_paused = true)]
async fn a_read_returns_the_blob_as_sent() {
    let c = McpClient::new("mock", legacy(false), legacy_options());
    let read = c.read_resource("a://bin").await.unwrap();
    assert!(
        matches!(&read.contents[0], ResourceContents::Blob(b) if b.blob == "AAEC" && b.uri == "a://bin")
    );
    assert!(!read.truncated);
}

/// A modern server offering resources (subscriptions, list changes): it acknowledges each
/// `subscriptions/listen` and answers a read `input_required` for the roots once.
fn modern() -> MockTransport {
    MockTransport::new(modern_script).modern()
}

fn modern_script(msg: &Value) -> Vec<Act> {
    match method(msg) {
        "server/discover" => vec![Act::reply(
            msg,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"resources": {"subscribe": true, "listChanged": true}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mock", "version": "1"}}}),
        )],
        "subscriptions/listen" => vec![Act::Reply(json!({"jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": msg["id"]},
                "notifications": msg["params"]["notifications"]}}))],
        "resources/read" if msg["params"].get("inputResponses").is_none() => vec![Act::reply(
            msg,
            json!({"resultType": "input_required",
                "inputRequests": {"roots": {"method": "roots/list"}}, "requestState": "st-1"}),
        )],
        "resources/read" => vec![Act::reply(
            msg,
            json!({"resultType": "complete", "contents": [{"uri": msg["params"]["uri"],
                "text": msg["params"]["inputResponses"]["roots"]["roots"][0]["uri"]}]}),
        )],
        _ => vec![],
    }
}

/// The `subscriptions/listen` requests sent, and the ids of the requests cancelled.
fn listens(t: &MockTransport) -> (Vec<(Value, Value)>, Vec<Value>) {
    let seen = t.seen();
    let listens = seen
        .iter()
        .filter(|m| method(m) == "subscriptions/listen")
        .map(|m| (m["id"].clone(), m["params"]["notifications"].clone()))
        .collect();
    let cancelled = seen
        .iter()
        .filter(|m| method(m) == "notifications/cancelled")
        .map(|m| m["params"]["requestId"].clone())
        .collect();
    (listens, cancelled)
}

#[tokio::test(start_paused = true)]
async fn the_modern_resource_stream_is_opened_again_with_every_change_of_the_set() {
    let t = modern();
    let c = McpClient::new(
        "mock",
        t.clone(),
        ClientOptions::default().era(EraPreference::Modern),
    );
    let mut changes = c.changes();
    c.start().await.unwrap();
    settle().await;
    // The list stream: the resource list changes the server offers, nothing it does not.
    let (l, _) = listens(&t);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(l[0].1, json!({"resourcesListChanged": true}));

    c.subscribe_resource("a://1").await.unwrap();
    settle().await;
    c.subscribe_resource("a://2").await.unwrap();
    settle().await;
    let (l, cancelled) = listens(&t);
    assert_eq!(l.len(), 3, "{l:?}");
    assert_eq!(l[1].1, json!({"resourceSubscriptions": ["a://1"]}));
    assert_eq!(l[2].1, json!({"resourceSubscriptions": ["a://1", "a://2"]}));
    assert_eq!(
        cancelled,
        [l[1].0.clone()],
        "the stream of the old set ends"
    );
    assert!(!t.seen_methods().contains(&"resources/subscribe".to_owned()));

    // Updates on the stream reach the embedder, as do list changes on the other.
    t.push(vec![Act::Reply(
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
        "params": {"uri": "a://2", "_meta": {"io.modelcontextprotocol/subscriptionId": l[2].0}}}),
    )]);
    t.push(vec![Act::Reply(
        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": l[0].0}}}),
    )]);
    assert_eq!(
        changes.recv().await.unwrap(),
        ServerChange::ResourceUpdated {
            uri: "a://2".into()
        }
    );
    assert_eq!(
        changes.recv().await.unwrap(),
        ServerChange::ResourcesListChanged
    );

    // Empty set: the stream ends and none opens.
    c.unsubscribe_resource("a://1").await.unwrap();
    settle().await;
    c.unsubscribe_resource("a://2").await.unwrap();
    settle().await;
    let (l2, cancelled) = listens(&t);
    assert_eq!(l2.len(), 4, "{l2:?}");
    assert_eq!(l2[3].1, json!({"resourceSubscriptions": ["a://2"]}));
    assert_eq!(cancelled, [l[1].0.clone(), l[2].0.clone(), l2[3].0.clone()]);
}

#[tokio::test(start_paused = true)]
async fn a_modern_read_asked_for_the_roots_is_sent_again_with_them() {
    let t = modern();
    let roots = vec![Root::for_dir(
        std::path::Path::new("/p/data"),
        Some("./data".into()),
    )];
    let options = ClientOptions::default()
        .era(EraPreference::Modern)
        .roots(roots)
        .log_level(LoggingLevel::Error);
    let c = McpClient::new("mock", t.clone(), options);
    let read = c.read_resource("a://x").await.unwrap();
    assert_eq!(read.joined_text(), "file:///p/data");
    let reads: Vec<Value> = t
        .seen()
        .into_iter()
        .filter(|m| method(m) == "resources/read")
        .collect();
    assert_eq!(reads.len(), 2);
    assert_ne!(
        reads[0]["id"], reads[1]["id"],
        "a retry has an id of its own"
    );
    assert_eq!(reads[1]["params"]["requestState"], "st-1");
    assert_eq!(
        reads[1]["params"]["inputResponses"],
        json!({"roots": {"roots": [{"uri": "file:///p/data", "name": "./data"}]}})
    );
    let meta = &reads[0]["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"]["roots"],
        json!({"listChanged": false})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/logLevel"], "error",
        "the level rides _meta"
    );
    assert!(
        !t.seen_methods().contains(&"logging/setLevel".to_owned()),
        "no logging/setLevel in 2026-07-28"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_modern_subscription_fails_and_is_not_kept() {
    let t = MockTransport::new(|msg| match method(msg) {
        "subscriptions/listen"
            if msg["params"]["notifications"]
                .get("resourceSubscriptions")
                .is_some() =>
        {
            vec![Act::error(msg, -32602, "no such resource")]
        }
        _ => modern_script(msg),
    })
    .modern();
    let c = McpClient::new(
        "mock",
        t.clone(),
        ClientOptions::default().era(EraPreference::Modern),
    );
    let err = c.subscribe_resource("a://gone").await.unwrap_err();
    assert!(
        matches!(err.parts(), Kind::JsonRpc { code: -32602, message, .. } if message == "no such resource"),
        "{err}"
    );
    assert!(c.subscribed_resources().is_empty());
}

#[tokio::test(start_paused = true)]
async fn updates_reach_the_embedder_only_for_subscribed_resources() {
    let t = legacy(true);
    let c = McpClient::new("mock", t.clone(), legacy_options());
    let mut changes = c.changes();
    c.subscribe_resource("file:///notes").await.unwrap();
    let update = |uri: &str| {
        Act::Reply(
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": uri}}),
        )
    };
    t.push(vec![
        update("file:///other"),
        update("file:///notesx"),
        update("file:///notes/a.txt"),
        update("file:///notes"),
    ]);
    // The sub-resource and the resource itself; not a sibling whose name starts the same.
    assert_eq!(
        changes.recv().await.unwrap(),
        ServerChange::ResourceUpdated {
            uri: "file:///notes/a.txt".into()
        }
    );
    assert_eq!(
        changes.recv().await.unwrap(),
        ServerChange::ResourceUpdated {
            uri: "file:///notes".into()
        }
    );
    assert!(changes.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn a_uri_the_acknowledgement_leaves_out_is_not_subscribed() {
    // The server honours every URI but `a://secret`.
    let t = MockTransport::new(|msg| match method(msg) {
        "subscriptions/listen" => {
            let mut asked = msg["params"]["notifications"].clone();
            if let Some(uris) = asked
                .get_mut("resourceSubscriptions")
                .and_then(Value::as_array_mut)
            {
                uris.retain(|u| u != "a://secret");
            }
            vec![Act::Reply(json!({"jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": msg["id"]},
                    "notifications": asked}}))]
        }
        _ => modern_script(msg),
    })
    .modern();
    let c = McpClient::new(
        "mock",
        t,
        ClientOptions::default().era(EraPreference::Modern),
    );
    c.subscribe_resource("a://open").await.unwrap();
    let err = c.subscribe_resource("a://secret").await.unwrap_err();
    assert!(
        matches!(err.parts(), Kind::NotOffered { name, .. } if &**name == "a://secret"),
        "{err}"
    );
    assert_eq!(c.subscribed_resources(), ["a://open"]);
}

#[tokio::test(start_paused = true)]
async fn a_restart_announces_every_subscribed_resource_as_changed() {
    let t = legacy(true);
    let c = McpClient::new("mock", t.clone(), legacy_options());
    c.subscribe_resource("a://x").await.unwrap();
    let mut changes = c.changes();
    t.push(vec![Act::close("exited (exit status: 1)")]);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    c.start().await.unwrap();
    // An update may have come while no session listened: the embedder reads it again.
    assert_eq!(
        changes.recv().await.unwrap(),
        ServerChange::ResourceUpdated {
            uri: "a://x".into()
        }
    );
    assert_eq!(
        changes.recv().await.unwrap(),
        ServerChange::ResourcesListChanged
    );
}

/// A legacy server that offers everything and answers only the handshake, `ping`-like
/// requests of the start, and `tools/list`: every other request stays unanswered.
fn silent_after_start() -> MockTransport {
    MockTransport::new(move |msg| match method(msg) {
        "initialize" => vec![Act::reply(
            msg,
            json!({"protocolVersion": "2025-11-25",
                "capabilities": {"resources": {}, "prompts": {}, "completions": {},
                    "logging": {}, "tools": {}},
                "serverInfo": {"name": "mock", "version": "1"}}),
        )],
        "tools/list" => vec![Act::reply(msg, json!({"tools": []}))],
        _ => vec![],
    })
}

/// Every request the client sends is bounded by its request timeout, not only `tools/list`
/// and `initialize` (issue 40, point 5): a read, a prompt, a completion, a task's requests
/// and a request of any kind end in `RequestTimeout` naming their method, and each is
/// cancelled on the wire; `logging/setLevel` at the start is bounded too (the start goes on
/// without it).
#[tokio::test(start_paused = true)]
async fn every_request_kind_times_out_naming_its_method_and_is_cancelled() {
    use crate::protocol::method::{CancelTask, GetTask, Request as _, UpdateTask};
    use crate::protocol::params::{TaskRequestParams, UpdateTaskRequestParams};
    use serde_json::Map;
    let limit = Duration::from_secs(3);
    let t = silent_after_start();
    let c = McpClient::new(
        "mock",
        t.clone(),
        legacy_options()
            .request_timeout(limit)
            .log_level(LoggingLevel::Debug),
    );
    // The start waits out the unanswered logging/setLevel, then is ready.
    c.start().await.unwrap();
    let timed_out = |e: ClientError, want: &str| match e.parts() {
        Kind::RequestTimeout { after } => {
            assert_eq!((e.request().unwrap().method, *after), (want, limit));
        }
        _ => panic!("{want}: {e}"),
    };
    timed_out(
        c.read_resource("a://x").await.unwrap_err(),
        "resources/read",
    );
    timed_out(c.get_prompt("p", None).await.unwrap_err(), "prompts/get");
    let reference = crate::protocol::CompletionRef::Prompt { name: "p".into() };
    timed_out(
        c.complete(&reference, "a", "x", None).await.unwrap_err(),
        "completion/complete",
    );
    let task = TaskRequestParams::new("t1");
    timed_out(
        c.request::<GetTask>(task.clone()).await.unwrap_err(),
        GetTask::METHOD,
    );
    timed_out(
        c.request::<UpdateTask>(UpdateTaskRequestParams::new("t1", Map::new()))
            .await
            .unwrap_err(),
        UpdateTask::METHOD,
    );
    timed_out(
        c.request::<CancelTask>(task).await.unwrap_err(),
        CancelTask::METHOD,
    );
    let seen = t.seen();
    let asked: Vec<&Value> = seen
        .iter()
        .filter(|m| m.get("id").is_some() && !matches!(method(m), "initialize" | "tools/list"))
        .collect();
    let methods: Vec<&str> = asked.iter().map(|m| method(m)).collect();
    assert_eq!(
        methods,
        [
            "logging/setLevel",
            "resources/read",
            "prompts/get",
            "completion/complete",
            "tasks/get",
            "tasks/update",
            "tasks/cancel"
        ]
    );
    for m in asked {
        let cancelled = seen
            .iter()
            .any(|n| method(n) == "notifications/cancelled" && n["params"]["requestId"] == m["id"]);
        assert!(cancelled, "{} was not cancelled: {seen:?}", method(m));
    }
}

/// Params that do not serialize to JSON (a map keyed by something other than strings) fail
/// the request as `BadParams` naming its method, and nothing reaches the server; typed params
/// go out as their kind's fields.
#[tokio::test(start_paused = true)]
async fn params_that_are_not_json_are_refused_before_anything_is_sent() {
    use crate::protocol::method::{GetPrompt, Request};
    use crate::protocol::params::GetPromptRequestParams;
    use std::collections::BTreeMap;

    struct Odd;
    impl Request for Odd {
        const METHOD: &'static str = "example/odd";
        type Params = BTreeMap<(u8, u8), u8>;
        type Result = Value;
    }
    let t = silent_after_start();
    let c = McpClient::new(
        "mock",
        t.clone(),
        legacy_options().request_timeout(Duration::from_secs(1)),
    );
    c.start().await.unwrap();
    let e = c
        .request::<Odd>(BTreeMap::from([((1, 2), 3)]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadParams);
    assert_eq!(e.class(), ErrorClass::Unsupported);
    assert!(
        e.to_string()
            .starts_with("MCP server `mock`: example/odd not sent: its params are not JSON: "),
        "{e}"
    );
    // A typed kind: its fields, as the protocol names them (the silent server lets it time out).
    let _ = c
        .request::<GetPrompt>(GetPromptRequestParams::new("p"))
        .await
        .unwrap_err();
    let seen = t.seen();
    assert!(!seen.iter().any(|m| method(m) == "example/odd"), "{seen:?}");
    let prompt = seen
        .iter()
        .find(|m| method(m) == "prompts/get")
        .expect("prompts/get sent");
    assert_eq!(prompt["params"], json!({"name": "p"}));
}

/// An answer whose id the client never sent is dropped (logged at DEBUG): the real answer
/// still reaches its caller, and the session goes on (it was only shown by the fuzzer).
#[tokio::test(start_paused = true)]
async fn an_answer_to_an_id_never_sent_is_dropped_and_the_session_goes_on() {
    let t = MockTransport::new(move |msg| match method(msg) {
        "initialize" => vec![Act::reply(
            msg,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "mock", "version": "1"}}),
        )],
        "tools/list" => vec![
            Act::Reply(
                json!({"jsonrpc": "2.0", "id": 4242, "result": {"tools": [{"name": "ghost",
                "inputSchema": {"type": "object"}}]}}),
            ),
            Act::Reply(json!({"jsonrpc": "2.0", "id": "never-sent", "error":
                {"code": -32603, "message": "stray"}})),
            Act::reply(
                msg,
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
            ),
        ],
        _ => vec![],
    });
    let c = McpClient::new("mock", t.clone(), legacy_options());
    let tools = c.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["echo"], "the stray answers were not taken for it");
    assert_eq!(
        c.list_tools().await.unwrap().len(),
        1,
        "the session goes on"
    );
    assert_eq!(c.state(), ServerState::Ready);
}

/// `notify::<N>()` sends the notification with its params, and with none when they are empty.
#[tokio::test(start_paused = true)]
async fn notify_sends_a_notification_of_any_kind_with_its_params() {
    struct Custom;
    impl crate::protocol::method::Notification for Custom {
        const METHOD: &'static str = "notifications/example/custom";
    }
    let t = silent_after_start();
    let c = McpClient::new("mock", t.clone(), legacy_options());
    let params = serde_json::Map::from_iter([("k".to_owned(), json!(1))]);
    c.notify::<Custom>(params).await.unwrap();
    c.notify::<Custom>(serde_json::Map::new()).await.unwrap();
    settle().await;
    let sent: Vec<Value> = t
        .seen()
        .into_iter()
        .filter(|m| method(m) == "notifications/example/custom")
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0]["params"], json!({"k": 1}));
    assert!(sent[0].get("id").is_none());
    assert!(sent[1].get("params").is_none(), "{:?}", sent[1]);
}
