use super::*;
use crate::client::{ClientError, Kind};

#[test]
fn span_names_carry_the_tool_or_prompt_never_a_uri() {
    let name = |method, target: Option<&str>| {
        let head = RequestHead::new(method).name(target);
        SpanName {
            method,
            target: target_of(method, &head),
        }
        .to_string()
    };
    assert_eq!(name("tools/call", Some("echo")), "tools/call echo");
    assert_eq!(name("prompts/get", Some("greet")), "prompts/get greet");
    assert_eq!(
        name("resources/read", Some("file:///etc/x")),
        "resources/read"
    );
    assert_eq!(name("tools/list", None), "tools/list");
    let head = RequestHead::new("resources/read").name(Some("file:///x"));
    assert_eq!(uri_of("resources/read", &head), Some("file:///x"));
    assert_eq!(tool_of("resources/read", &head), None);
}

#[test]
fn error_types_follow_the_conventions() {
    let rpc = ClientError::new(
        Arc::from("s"),
        Some(crate::client::RequestRef {
            id: crate::protocol::RequestId::from(2),
            method: "tools/call",
        }),
        Kind::JsonRpc {
            code: -32602,
            message: "bad params".into(),
            data: None,
        },
    );
    let e = ErrorType::of(&Outcome::Failed(&rpc)).unwrap();
    assert_eq!(
        (e.kind.as_ref(), e.code, e.message),
        ("-32602", Some(-32602), Some("bad params"))
    );
    let e = ErrorType::of(&Outcome::ToolError).unwrap();
    assert_eq!((e.kind.as_ref(), e.code), ("tool_error", None));
    assert!(ErrorType::of(&Outcome::Answered).is_none());
    let exited = |exit_status| {
        ClientError::new(
            Arc::from("s"),
            None,
            Kind::Exited {
                reason: "gone".into(),
                exit_status,
                stderr_tail: String::new(),
            },
        )
    };
    use std::os::unix::process::ExitStatusExt as _;
    let status = std::process::ExitStatus::from_raw(3 << 8);
    assert_eq!(
        ErrorType::of(&Outcome::Failed(&exited(Some(status))))
            .unwrap()
            .kind,
        "server_exited"
    );
    assert_eq!(
        ErrorType::of(&Outcome::Failed(&exited(None))).unwrap().kind,
        "connection_closed"
    );
    let timeout = ClientError::new(
        Arc::from("s"),
        Some(crate::client::RequestRef {
            id: crate::protocol::RequestId::from(1),
            method: "tools/list",
        }),
        Kind::RequestTimeout {
            after: std::time::Duration::from_secs(1),
        },
    );
    assert_eq!(
        ErrorType::of(&Outcome::Failed(&timeout)).unwrap().kind,
        "timeout"
    );
}

#[cfg(feature = "http")]
#[test]
fn the_session_digest_is_stable_and_does_not_show_the_id() {
    let a = session_digest(b"3f2a-secret-session");
    assert_eq!(a, session_digest(b"3f2a-secret-session"));
    assert_ne!(a, session_digest(b"3f2a-secret-sessioN"));
    assert_eq!(a.len(), 32);
    assert!(!a.contains("secret"));
}

/// The fields (name → value as text) of every `mcp.request` span opened under a capturing
/// subscriber.
#[derive(Clone, Default)]
struct Capture(Arc<std::sync::Mutex<Vec<std::collections::BTreeMap<String, String>>>>);

struct Fields<'a>(&'a mut std::collections::BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = std::collections::BTreeMap::new();
        fields.insert("<level>".into(), attrs.metadata().level().to_string());
        fields.insert("<target>".into(), attrs.metadata().target().into());
        attrs.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(fields);
    }
}

/// The fields a request span is opened with, on a session reached through `peer`.
fn opened(
    peer: Peer,
    agreed: Option<&str>,
    method: &'static str,
    name: Option<&str>,
) -> Vec<String> {
    use tracing_subscriber::layer::SubscriberExt as _;
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        let session = Arc::new(SessionTelemetry::new(peer));
        if let Some(version) = agreed {
            session.agreed(version, Some(Arc::from("0123456789abcdef0123456789abcdef")));
        }
        let head = RequestHead::new(method).name(name);
        RequestTelemetry::start(&session, method, 7, &head).end(Outcome::Answered);
    });
    let spans = capture.0.lock().unwrap();
    assert_eq!(spans.len(), 1);
    let span = &spans[0];
    assert_eq!(span["<level>"], "INFO");
    assert_eq!(span["<target>"], TARGET);
    assert_eq!(span["otel.kind"], "client");
    assert_eq!(span["mcp.method.name"], method);
    assert_eq!(span["jsonrpc.request.id"], "7");
    span.keys()
        .filter(|k| !k.starts_with('<') && !k.starts_with("otel."))
        .cloned()
        .collect()
}

#[test]
fn each_request_kind_opens_its_span_with_the_conventions_attributes() {
    let http = || Peer::Http {
        address: Arc::from("127.0.0.1"),
        port: 8080,
    };
    let all = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Every name is one of the conventions', the target is in the name, and each conditional
    // attribute appears exactly when its condition holds.
    assert_eq!(
        opened(Peer::Pipe, Some("2025-11-25"), "tools/call", Some("echo")),
        all(&[
            "gen_ai.operation.name",
            "gen_ai.tool.name",
            "jsonrpc.request.id",
            "mcp.method.name",
            "mcp.protocol.version",
            "mcp.session.id",
            "network.transport",
        ])
    );
    assert_eq!(
        opened(http(), Some("2025-11-25"), "prompts/get", Some("greet")),
        all(&[
            "gen_ai.prompt.name",
            "jsonrpc.request.id",
            "mcp.method.name",
            "mcp.protocol.version",
            "mcp.session.id",
            "network.protocol.name",
            "network.transport",
            "server.address",
            "server.port",
        ])
    );
    assert_eq!(
        opened(http(), None, "resources/read", Some("file:///a")),
        all(&[
            "jsonrpc.request.id",
            "mcp.method.name",
            "mcp.resource.uri",
            "network.protocol.name",
            "network.transport",
            "server.address",
            "server.port",
        ])
    );
    // `initialize` names the version it asks for; an unknown transport names none.
    assert_eq!(
        opened(Peer::Unknown, None, "initialize", None),
        all(&[
            "jsonrpc.request.id",
            "mcp.method.name",
            "mcp.protocol.version"
        ])
    );
    for name in attributes::SPAN_ATTRIBUTES {
        assert!(name.contains('.'), "{name}");
    }
}

#[test]
fn no_span_without_a_subscriber_interested_in_the_target() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let start = || {
        let session = Arc::new(SessionTelemetry::new(Peer::Pipe));
        let head = RequestHead::new("tools/call").name(Some("echo"));
        let t = RequestTelemetry::start(&session, "tools/call", 1, &head);
        assert!(t.span_is_disabled());
        assert!(t.trace_context().is_none());
        t.end(Outcome::ToolError);
    };
    // Set as the default explicitly: tracing caches a callsite's interest process-wide, and
    // another test's subscriber may have left it "always".
    tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), start);
    // A subscriber that takes everything else at TRACE, but not this target.
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::TRACE)
        .with_target(TARGET, tracing_subscriber::filter::LevelFilter::OFF);
    let subscriber = tracing_subscriber::registry()
        .with(Capture::default())
        .with(filter);
    tracing::subscriber::with_default(subscriber, start);
}

#[test]
fn a_status_description_is_clipped_at_a_character_boundary() {
    assert_eq!(clip("short", 512), "short");
    let long = "é".repeat(300);
    let clipped = clip(&long, 512);
    assert_eq!(clipped.len(), 512);
    assert_eq!(clip(&long, 511).len(), 510);
}
