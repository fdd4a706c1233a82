//! tower's `Retry` with `RetryPolicy` over a `tower_test` mock, on paused time: the backoff
//! sequence, the safety rule, the attempt limit and the budget.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::Logs;
use kaged_mcp_layers::retry::{Final, Jitter, NotSent, RetryPolicy, RetrySafe};
use tokio_test::{assert_pending, assert_ready_err, assert_ready_ok};
use tower::retry::budget::TpsBudget;
use tower::retry::RetryLayer;
use tower::BoxError;
use tower_test::assert_request_eq;
use tower_test::mock::{self, Handle};

#[derive(Clone, Debug, PartialEq)]
struct Call {
    id: u32,
    retry_safe: bool,
}

impl RetrySafe for Call {
    fn retry_safe(&self) -> bool {
        self.retry_safe
    }
}

const UNSAFE: Call = Call {
    id: 1,
    retry_safe: false,
};
const SAFE: Call = Call {
    id: 2,
    retry_safe: true,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(4))
        .unwrap()
        .jitter(Jitter::None)
        .max_attempts(max_attempts)
}

fn not_sent() -> BoxError {
    NotSent::new("connection refused").into()
}

fn no_request(handle: &mut Handle<Call, &'static str>) -> bool {
    handle.poll_request().is_pending()
}

#[tokio::test(start_paused = true)]
async fn waits_one_two_four_then_the_cap_between_attempts() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(5)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(UNSAFE));
    assert_pending!(response.poll());
    assert_request_eq!(handle, UNSAFE).send_error(not_sent());

    for delay in [1000, 2000, 4000, 4000] {
        assert_pending!(response.poll());
        tokio::time::advance(ms(delay - 1)).await;
        assert_pending!(response.poll());
        assert!(no_request(&mut handle), "retried before {delay} ms");
        tokio::time::advance(ms(1)).await;
        assert!(response.is_woken());
        assert_pending!(response.poll());
        assert_request_eq!(handle, UNSAFE).send_error(not_sent());
    }
    // Five attempts made: the last error comes back.
    let err = assert_ready_err!(response.poll());
    assert!(err.is::<NotSent>());
    assert!(no_request(&mut handle));
}

#[tokio::test(start_paused = true)]
async fn calls_a_request_that_is_not_retry_safe_once_after_a_sent_error() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(5)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(UNSAFE));
    assert_pending!(response.poll());
    assert_request_eq!(handle, UNSAFE).send_error("connection reset after the write");
    let err = assert_ready_err!(response.poll());
    assert_eq!(err.to_string(), "connection reset after the write");
    tokio::time::advance(Duration::from_secs(60)).await;
    assert!(no_request(&mut handle));
}

#[tokio::test(start_paused = true)]
async fn retries_a_retry_safe_request_after_a_sent_error() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(5)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(SAFE));
    assert_pending!(response.poll());
    assert_request_eq!(handle, SAFE).send_error("502 from the server");
    assert_pending!(response.poll());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_pending!(response.poll());
    assert_request_eq!(handle, SAFE).send_response("listed");
    assert_eq!(assert_ready_ok!(response.poll()), "listed");
}

#[tokio::test(start_paused = true)]
async fn never_retries_a_final_error_even_for_a_retry_safe_request() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(5)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(SAFE));
    assert_pending!(response.poll());
    assert_request_eq!(handle, SAFE).send_error(Final::new("task 7 failed"));
    let err = assert_ready_err!(response.poll());
    assert!(Final::in_chain(&*err), "{err}");
    assert_eq!(err.to_string(), "task 7 failed");
    tokio::time::advance(Duration::from_secs(10)).await;
    assert!(
        no_request(&mut handle),
        "the server ran it: never sent again"
    );
}

#[tokio::test(start_paused = true)]
async fn retries_not_sent_up_to_max_attempts() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(3)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(UNSAFE));
    for attempt in 0..3 {
        assert_pending!(response.poll());
        tokio::time::advance(Duration::from_secs(60)).await; // past any backoff
        assert_pending!(response.poll());
        assert_request_eq!(handle, UNSAFE, "attempt {attempt}").send_error(not_sent());
    }
    let err = assert_ready_err!(response.poll());
    assert!(err.is::<NotSent>());
    assert!(no_request(&mut handle));
}

#[tokio::test(start_paused = true)]
async fn never_retries_an_ok_response() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(5)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(SAFE));
    assert_pending!(response.poll());
    assert_request_eq!(handle, SAFE).send_response("ok");
    assert_eq!(assert_ready_ok!(response.poll()), "ok");
    assert!(no_request(&mut handle));
}

#[tokio::test(start_paused = true)]
async fn stops_retrying_when_the_budget_runs_out() {
    // Deposits earn nothing; the reserve allows one retry in the one-second window.
    let budget = Arc::new(TpsBudget::new(Duration::from_secs(1), 1, 0.0));
    let (mut svc, mut handle) =
        mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(5).budget(budget)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(UNSAFE));
    assert_pending!(response.poll());
    assert_request_eq!(handle, UNSAFE).send_error(not_sent());
    assert_pending!(response.poll());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_pending!(response.poll());
    assert_request_eq!(handle, UNSAFE).send_error(not_sent());
    let err = assert_ready_err!(response.poll());
    assert!(err.is::<NotSent>());
    assert!(no_request(&mut handle));
}

#[tokio::test(start_paused = true)]
async fn waits_for_the_client_to_be_ready_before_a_retry() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(3)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(UNSAFE));
    assert_pending!(response.poll());
    handle.allow(0);
    assert_request_eq!(handle, UNSAFE).send_error(not_sent());
    assert_pending!(response.poll());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_pending!(response.poll());
    assert!(
        no_request(&mut handle),
        "called a client that was not ready"
    );
    handle.allow(1);
    assert!(response.is_woken());
    assert_pending!(response.poll());
    assert_request_eq!(handle, UNSAFE).send_response("late but fine");
    assert_eq!(assert_ready_ok!(response.poll()), "late but fine");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn logs_attempt_and_backoff_at_debug() {
    let (logs, _guard) = Logs::capture();
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(RetryLayer::new(policy(2)));
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(UNSAFE));
    assert_pending!(response.poll());
    assert_request_eq!(handle, UNSAFE).send_error(not_sent());
    assert_pending!(response.poll());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_pending!(response.poll());
    assert_request_eq!(handle, UNSAFE).send_error(not_sent());
    assert_ready_err!(response.poll());

    let text = logs.text();
    let retry = text.lines().find(|l| l.contains("retrying")).expect(&text);
    assert!(retry.contains("DEBUG"), "{text}");
    assert!(retry.contains("attempt=1"), "{text}");
    assert!(retry.contains("backoff_ms=1000"), "{text}");
    let give_up = text
        .lines()
        .find(|l| l.contains("not retrying"))
        .expect(&text);
    assert!(give_up.contains("no attempts left"), "{text}");
}
