//! `RejectSampling` over a `tower_test` mock: sampling is refused without reaching the mock,
//! other requests pass, readiness is the inner service's.

mod common;

use common::Logs;
use kaged_mcp_layers::reject_sampling::{
    error::Rejected, JsonRpcMethod, RejectSamplingLayer, SAMPLING_METHOD,
};
use tokio_test::{assert_pending, assert_ready, assert_ready_ok};
use tower_test::{assert_request_eq, mock};

#[derive(Debug, Clone, PartialEq)]
struct ServerRequest {
    id: u64,
    method: &'static str,
}

impl JsonRpcMethod for ServerRequest {
    fn method(&self) -> &str {
        self.method
    }
    fn request_id(&self) -> Option<String> {
        Some(self.id.to_string())
    }
}

fn req(id: u64, method: &'static str) -> ServerRequest {
    ServerRequest { id, method }
}

#[tokio::test]
async fn passes_ping_to_the_inner_service() {
    let (mut svc, mut handle) =
        mock::spawn_layer::<ServerRequest, &str, _>(RejectSamplingLayer::new("github"));
    assert_ready_ok!(svc.poll_ready());
    let response = svc.call(req(1, "ping"));
    assert_request_eq!(handle, req(1, "ping")).send_response("{}");
    assert_eq!(response.await.unwrap(), "{}");
}

#[tokio::test]
async fn refuses_sampling_without_a_request_reaching_the_inner_service() {
    let layer = RejectSamplingLayer::new("github");
    let counter = layer.counter();
    let (mut svc, mut handle) = mock::spawn_layer::<ServerRequest, &str, _>(layer);

    assert_ready_ok!(svc.poll_ready());
    let err = svc.call(req(0, SAMPLING_METHOD)).await.unwrap_err();
    let rejected = err.downcast_ref::<Rejected>().expect("a Rejected error");
    assert_eq!(rejected.request_id(), Some("0"));
    assert_eq!(rejected.server(), "github");
    assert_eq!(counter.get(), 1);
    assert_eq!(svc.get_ref().rejected_count(), 1);

    // Nothing reached the mock: the next request it sees is the ping.
    assert_ready_ok!(svc.poll_ready());
    let response = svc.call(req(2, "ping"));
    assert_request_eq!(handle, req(2, "ping")).send_response("{}");
    assert_eq!(response.await.unwrap(), "{}");
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn is_ready_only_when_the_inner_service_is() {
    let (mut svc, mut handle) =
        mock::spawn_layer::<ServerRequest, &str, _>(RejectSamplingLayer::new("s"));
    handle.allow(0);
    assert_pending!(svc.poll_ready());
    handle.allow(1);
    assert!(svc.is_woken());
    assert_ready_ok!(svc.poll_ready());
}

#[tokio::test]
async fn boxes_readiness_errors_of_the_inner_service() {
    let (mut svc, mut handle) =
        mock::spawn_layer::<ServerRequest, &str, _>(RejectSamplingLayer::new("s"));
    handle.send_error("transport closed");
    let err = assert_ready!(svc.poll_ready()).unwrap_err();
    assert_eq!(err.to_string(), "transport closed");
    assert!(!err.is::<Rejected>());
}

#[tokio::test(flavor = "current_thread")]
async fn warns_with_server_method_request_id_and_total() {
    let (logs, _guard) = Logs::capture();
    let (mut svc, _handle) =
        mock::spawn_layer::<ServerRequest, &str, _>(RejectSamplingLayer::new("github"));
    for id in [7, 8] {
        assert_ready_ok!(svc.poll_ready());
        assert!(svc.call(req(id, SAMPLING_METHOD)).await.is_err());
    }
    let text = logs.text();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("server=\"github\""), "{text}");
    assert!(
        lines[0].contains("method=\"sampling/createMessage\""),
        "{text}"
    );
    assert!(lines[0].contains("request_id=\"7\""), "{text}");
    assert!(lines[0].contains("rejected_total=1"), "{text}");
    assert!(lines[1].contains("rejected_total=2"), "{text}");
}
