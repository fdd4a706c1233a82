//! Unit tests of the session's write path, and a bare session for other modules' tests.

use super::*;
use crate::protocol::jsonrpc::OutgoingRequest;

/// A session with no connection and no features, for tests of what it does with frames.
pub(crate) fn bare_session() -> Arc<RpcSession> {
    RpcSession::new(
        "mock".into(),
        1,
        Arc::new(|_: &RpcSession, _: SessionEvent<'_>| {}),
        server_requests::stack("mock", None, None, None, Default::default()),
        SessionSettings {
            max_in_flight: 8,
            elicitation: false,
            mirrors_headers: false,
            param_headers: Default::default(),
            task_ttl: std::time::Duration::from_secs(600),
            tasks_declared: true,
            telemetry: Arc::new(SessionTelemetry::new(crate::transport::Peer::Unknown)),
            router: Arc::default(),
        },
    )
}
use crate::protocol::modern::RequestMeta;
use crate::protocol::tools::CallToolParams;
use serde_json::Map;

fn by_serde<P: Serialize>(id: u64, method: &str, params: Option<&P>) -> Vec<u8> {
    serde_json::to_vec(&OutgoingRequest {
        jsonrpc: Version2,
        id,
        method,
        params,
    })
    .unwrap()
}

fn by_hand<P: Serialize>(id: u64, method: &str, params: Option<&P>) -> Vec<u8> {
    let mut buf = b"left alone".to_vec();
    write_request(&mut buf, id, method, params).unwrap();
    assert_eq!(&buf[..10], b"left alone");
    buf.split_off(10)
}

#[test]
fn requests_are_written_byte_for_byte_as_serde_writes_them() {
    let mut arguments = Map::new();
    arguments.insert("message".into(), Value::from("h\"i\n\u{1}é"));
    let call = CallToolParams {
        name: "na\"me",
        arguments: Some(&arguments),
        meta: RequestMeta {
            progress_token: Some(7),
            modern: None,
        },
        input_responses: None,
        request_state: None,
    };
    for id in [0, 1, 42, u64::MAX] {
        for method in ["tools/call", "we\"ird\\method\u{7}"] {
            assert_eq!(
                by_hand(id, method, Some(&call)),
                by_serde(id, method, Some(&call))
            );
            assert_eq!(
                by_hand::<()>(id, method, None),
                by_serde::<()>(id, method, None)
            );
        }
    }
}

#[test]
fn call_params_are_written_byte_for_byte_as_serde_writes_them() {
    use crate::protocol::tasks::TaskMetadata;
    use crate::protocol::tools::{LegacyCallToolParams, ProgressMeta};
    let mut arguments = Map::new();
    arguments.insert("message".into(), Value::from("h\"i\n\u{1}é"));
    arguments.insert("plain".into(), Value::from("hello"));
    arguments.insert(
        "n".into(),
        serde_json::json!([1, 2.5, -3, null, {"k": true}]),
    );
    let mut responses = Map::new();
    responses.insert("ask-1".into(), serde_json::json!({"action": "accept"}));
    let modern = crate::protocol::modern::ModernMeta::new(
        crate::protocol::MODERN_PROTOCOL_VERSION,
        &crate::protocol::lifecycle::client_capabilities(false, true),
        &crate::protocol::Implementation::this_client(),
        None,
    )
    .unwrap();
    let by_hand = |write: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| {
        let mut buf = Vec::new();
        write_request_with(&mut buf, 9, "tools/call", |b| write(b)).unwrap();
        buf
    };
    for name in ["echo", "na\"me", ""] {
        for args in [None, Some(&arguments)] {
            for progress in [None, Some(9)] {
                for task in [None, Some(TaskMetadata { ttl: 60_000 })] {
                    let legacy = LegacyCallToolParams {
                        name,
                        arguments: args,
                        meta: progress.map(|progress_token| ProgressMeta { progress_token }),
                        task,
                    };
                    assert_eq!(
                        by_hand(&|b| legacy.write_json(b)),
                        by_serde(9, "tools/call", Some(&legacy)),
                        "{legacy:?}"
                    );
                }
                for (responses, state) in [(None, None), (Some(&responses), Some("st\"ate"))] {
                    for meta in [None, Some(&modern)] {
                        let call = CallToolParams {
                            name,
                            arguments: args,
                            meta: RequestMeta {
                                progress_token: progress,
                                modern: meta,
                            },
                            input_responses: responses,
                            request_state: state,
                        };
                        assert_eq!(
                            by_hand(&|b| call.write_json(b)),
                            by_serde(9, "tools/call", Some(&call)),
                            "{call:?}"
                        );
                    }
                }
            }
        }
    }
}
