//! The standard stack built with `ServiceBuilderExt` over a `tower_test` mock client:
//! Truncate → Timeout → Retry → client, in that order.

use std::time::Duration;

use kaged_mcp_layers::reject_sampling::{error::Rejected, JsonRpcMethod, SAMPLING_METHOD};
use kaged_mcp_layers::retry::{Jitter, NotSent, RetryPolicy, RetrySafe};
use kaged_mcp_layers::timeout::{Elapsed, ProgressAware, ProgressHandle};
use kaged_mcp_layers::ServiceBuilderExt;
use tokio_test::{assert_pending, assert_ready_err, assert_ready_ok};
use tower::ServiceBuilder;
use tower_test::{assert_request_eq, mock};

#[derive(Clone, Debug, PartialEq)]
struct ToolCall(&'static str);

impl RetrySafe for ToolCall {
    fn retry_safe(&self) -> bool {
        false
    }
}

impl ProgressAware for ToolCall {
    fn progress(&self) -> Option<&ProgressHandle> {
        None
    }
}

impl JsonRpcMethod for ToolCall {
    fn method(&self) -> &str {
        self.0
    }
    fn request_id(&self) -> Option<String> {
        None
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(8))
        .unwrap()
        .jitter(Jitter::None)
        .max_attempts(10)
}

#[tokio::test(start_paused = true)]
async fn truncates_what_a_retried_call_returns() {
    let (client, mut handle) = mock::pair::<ToolCall, String>();
    let mut svc = mock::Spawn::new(
        ServiceBuilder::new()
            .truncate(5)
            .timeout(Duration::from_secs(30))
            .retry_policy(policy())
            .service(client),
    );
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(ToolCall("tools/call")));
    assert_pending!(response.poll());
    assert_request_eq!(handle, ToolCall("tools/call")).send_error(NotSent::new("refused"));
    assert_pending!(response.poll());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_pending!(response.poll());
    assert_request_eq!(handle, ToolCall("tools/call")).send_response("0123456789".into());
    assert_eq!(assert_ready_ok!(response.poll()), "01234");
}

#[tokio::test(start_paused = true)]
async fn the_timeout_bounds_retries_and_backoff() {
    let (client, mut handle) = mock::pair::<ToolCall, String>();
    let mut svc = mock::Spawn::new(
        ServiceBuilder::new()
            .truncate(5)
            .timeout(Duration::from_secs(2))
            .retry_policy(policy())
            .service(client),
    );
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(ToolCall("tools/call")));
    assert_pending!(response.poll());
    assert_request_eq!(handle, ToolCall("tools/call")).send_error(NotSent::new("refused"));
    assert_pending!(response.poll());
    tokio::time::advance(Duration::from_secs(1)).await; // first backoff over: attempt 1
    assert_pending!(response.poll());
    assert_request_eq!(handle, ToolCall("tools/call")).send_error(NotSent::new("refused"));
    assert_pending!(response.poll()); // second backoff: 2s, past the 2s timeout
    tokio::time::advance(Duration::from_secs(1)).await;
    let err = assert_ready_err!(response.poll());
    assert!(err.is::<tower::timeout::error::Elapsed>(), "{err}");
}

#[tokio::test(start_paused = true)]
async fn progress_timeout_and_reject_sampling_compose() {
    let (client, mut handle) = mock::pair::<ToolCall, String>();
    let mut svc = mock::Spawn::new(
        ServiceBuilder::new()
            .reject_sampling("github")
            .progress_timeout(Duration::from_secs(5), Duration::from_secs(60))
            .service(client),
    );
    assert_ready_ok!(svc.poll_ready());
    let err = svc.call(ToolCall(SAMPLING_METHOD)).await.unwrap_err();
    assert!(err.is::<Rejected>());

    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(ToolCall("ping")));
    assert_pending!(response.poll());
    let _send = assert_request_eq!(handle, ToolCall("ping"));
    tokio::time::advance(Duration::from_secs(5)).await;
    let err = assert_ready_err!(response.poll());
    assert!(err.is::<Elapsed>(), "{err}");
}
