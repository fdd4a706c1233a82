use super::*;

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
    let rpc = ClientError::JsonRpc {
        server: Arc::from("s"),
        request: crate::client::RequestRef {
            id: crate::protocol::RequestId::from(2),
            method: "tools/call",
        },
        code: -32602,
        message: "bad params".into(),
        data: None,
    };
    let e = ErrorType::of(&Outcome::Failed(&rpc)).unwrap();
    assert_eq!(
        (e.kind.as_ref(), e.code, e.message),
        ("-32602", Some(-32602), Some("bad params"))
    );
    let e = ErrorType::of(&Outcome::ToolError).unwrap();
    assert_eq!((e.kind.as_ref(), e.code), ("tool_error", None));
    assert!(ErrorType::of(&Outcome::Answered).is_none());
    let timeout = ClientError::RequestTimeout {
        server: Arc::from("s"),
        request: crate::client::RequestRef {
            id: crate::protocol::RequestId::from(1),
            method: "tools/list",
        },
        after: std::time::Duration::from_secs(1),
    };
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
