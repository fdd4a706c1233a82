//! Unit tests of [`ClientError`](super::ClientError): its messages and its classification.

use super::*;

fn server() -> Arc<str> {
    "github".into()
}

#[test]
fn exited_names_the_server_the_request_and_the_stderr_tail() {
    let e = ClientError::new(
        server(),
        Some(RequestRef {
            id: RequestId::Number(4),
            method: "tools/call",
        }),
        Kind::Exited {
            reason: "exited (exit status: 3)".into(),
            exit_status: None,
            stderr_tail: "boom\n".into(),
        },
    );
    assert_eq!(
        e.to_string(),
        "MCP server `github` exited (exit status: 3) during request 4 (tools/call); last stderr:\nboom"
    );
    assert_eq!(e.server(), "github");
    assert_eq!(e.request().unwrap().id, RequestId::Number(4));
}

#[test]
fn unsupported_version_lists_what_is_supported() {
    let e = ClientError::new(
        server(),
        None,
        Kind::UnsupportedProtocolVersion {
            version: "1999-01-01".into(),
        },
    );
    let text = e.to_string();
    assert!(
        text.contains("`github`") && text.contains("\"1999-01-01\""),
        "{text}"
    );
    assert!(text.contains("2025-11-25"), "{text}");
}

#[test]
fn find_looks_through_not_sent() {
    let e = ClientError::new(server(), None, Kind::Disabled);
    let boxed = e.clone().boxed(true);
    assert!(boxed.is::<NotSent>());
    assert!(NotSent::in_chain(&*boxed));
    assert_eq!(ClientError::find(&*boxed).unwrap().server(), "github");
    let boxed = e.boxed(false);
    assert!(!NotSent::in_chain(&*boxed));
    assert!(ClientError::find(&*boxed).is_some());
}

fn req(method: &'static str) -> RequestRef {
    RequestRef {
        id: RequestId::Number(7),
        method,
    }
}

#[test]
fn the_operators_line_is_the_display_without_the_server_and_never_an_edited_message() {
    let errors = [
        ClientError::new(
            server(),
            Some(req("tools/call")),
            Kind::JsonRpc {
                code: -32602,
                message: "MCP server `github` is a name a server may echo".into(),
                data: None,
            },
        ),
        ClientError::new(server(), None, Kind::Disabled),
        ClientError::new(
            server(),
            None,
            Kind::ConnectionClosed {
                detail: "gone".into(),
            },
        ),
        ClientError::new(
            server(),
            None,
            Kind::NotModern {
                detail: "it answered -32601".into(),
            },
        ),
    ];
    for e in errors {
        let shown = e.to_string();
        let reason = e.reason();
        assert!(
            shown == format!("MCP server `github` {reason}")
                || shown == format!("MCP server `github`: {reason}"),
            "{shown:?} / {reason:?}"
        );
    }
    // A message that itself starts like a server's name is left whole.
    let echoed = ClientError::new(
        server(),
        None,
        Kind::ProtocolViolation { detail: "x".into() },
    );
    assert_eq!(echoed.reason(), "violated the protocol: x");
}

#[test]
fn one_classification_feeds_retry_supervision_and_telemetry() {
    let refused = ClientError::new(
        server(),
        Some(req("initialize")),
        Kind::JsonRpc {
            code: -32601,
            message: "no".into(),
            data: None,
        },
    );
    assert_eq!(refused.class(), ErrorClass::Refused);
    assert_eq!(refused.error_type(), "-32601");
    assert!(refused.is_about_the_era(), "a refused handshake");
    assert!(refused.restart_cannot_fix(true), "with the era forced");
    assert!(
        !refused.restart_cannot_fix(false),
        "auto finds the era again"
    );
    let call_refused = ClientError::new(
        server(),
        Some(req("tools/call")),
        Kind::JsonRpc {
            code: -32601,
            message: "no".into(),
            data: None,
        },
    );
    assert!(!call_refused.is_about_the_era());
    let version = ClientError::new(server(), None, Kind::NoCommonVersion { supported: vec![] });
    assert_eq!(version.class(), ErrorClass::Version);
    assert!(version.is_about_the_era() && version.restart_cannot_fix(false));
    assert_eq!(version.error_type(), "unsupported_protocol_version");
    let timeout = ClientError::new(
        server(),
        Some(req("resources/read")),
        Kind::RequestTimeout {
            after: Duration::from_secs(1),
        },
    );
    assert_eq!(
        (timeout.class(), &*timeout.error_type()),
        (ErrorClass::Timeout, "timeout")
    );
    assert!(!timeout.is_resendable() && !timeout.is_about_the_era());
    let held = ClientError::new(server(), None, Kind::TooManyInFlight { limit: 4 });
    assert_eq!(held.class(), ErrorClass::Held);
    assert_eq!(held.class().as_str(), "held");
    assert_eq!(held.error_type(), "too_many_in_flight");
}

#[test]
fn a_refused_skill_reads_as_one_line_naming_the_server_the_file_and_the_check() {
    let e = ClientError::new(
        server(),
        None,
        Kind::SkillRefused {
            skill: "pdf".into(),
            file: "skill://pdf/SKILL.md".into(),
            check: SkillCheck::Size,
            detail: "it is 9 bytes; the listing says 8".into(),
        },
    );
    assert_eq!(
        e.to_string(),
        "MCP server `github`: skill `pdf` refused: skill://pdf/SKILL.md failed its size check (it is 9 bytes; the listing says 8); none of it was used"
    );
    assert_eq!(e.class(), ErrorClass::Protocol);
}
