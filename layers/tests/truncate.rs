//! `Truncate` over a `tower_test` mock: requests pass unchanged, responses are capped,
//! readiness and errors are the inner service's.

use kaged_mcp_layers::truncate::TruncateLayer;
use tokio_test::{assert_pending, assert_ready_err, assert_ready_ok};
use tower_test::{assert_request_eq, mock};

#[tokio::test]
async fn forwards_the_request_unchanged_and_caps_the_response() {
    let (mut svc, mut handle) = mock::spawn_layer::<&str, String, _>(TruncateLayer::new(4));
    assert_ready_ok!(svc.poll_ready());
    let response = svc.call("tools/call");
    assert_request_eq!(handle, "tools/call").send_response("héllo".into());
    assert_eq!(response.await.unwrap(), "hél");
}

#[tokio::test]
async fn leaves_a_response_within_the_cap_untouched() {
    let (mut svc, mut handle) = mock::spawn_layer::<(), String, _>(TruncateLayer::new(64));
    assert_ready_ok!(svc.poll_ready());
    let response = svc.call(());
    assert_request_eq!(handle, ()).send_response("short".into());
    assert_eq!(response.await.unwrap(), "short");
}

#[tokio::test]
async fn is_ready_only_when_the_inner_service_is() {
    let (mut svc, mut handle) = mock::spawn_layer::<(), String, _>(TruncateLayer::new(4));
    handle.allow(0);
    assert_pending!(svc.poll_ready());
    handle.allow(1);
    assert!(svc.is_woken());
    assert_ready_ok!(svc.poll_ready());
}

#[tokio::test]
async fn passes_readiness_errors_through() {
    let (mut svc, mut handle) = mock::spawn_layer::<(), String, _>(TruncateLayer::new(4));
    handle.send_error("not connected");
    let err = assert_ready_err!(svc.poll_ready());
    assert_eq!(err.to_string(), "not connected");
}

#[tokio::test]
async fn passes_call_errors_through() {
    let (mut svc, mut handle) = mock::spawn_layer::<(), String, _>(TruncateLayer::new(4));
    assert_ready_ok!(svc.poll_ready());
    let response = svc.call(());
    assert_request_eq!(handle, ()).send_error("server crashed");
    assert_eq!(response.await.unwrap_err().to_string(), "server crashed");
}
