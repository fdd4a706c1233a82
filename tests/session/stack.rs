//! The standard stack over an in-memory client: order of the layers, retry only when safe,
//! the timeout bounding the whole call, truncation of what comes out. Time is paused.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kaged_mcp::client::ToolCall;
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::stack::{into_error, StackBuilder, StackSettings, TimedOut};
use kaged_mcp::Error;
use kaged_mcp_layers::retry::NotSent;
use tower::{service_fn, BoxError, ServiceExt};

fn counting<F>(
    f: F,
) -> (
    Arc<AtomicU32>,
    impl tower::Service<ToolCall, Response = ToolResult, Error = BoxError, Future = impl Send>
        + Clone
        + Send
        + Sync,
)
where
    F: Fn(u32) -> Result<ToolResult, BoxError> + Clone + Send + Sync + 'static,
{
    let n = Arc::new(AtomicU32::new(0));
    let seen = n.clone();
    let svc = service_fn(move |_: ToolCall| {
        let i = seen.fetch_add(1, Ordering::SeqCst);
        let f = f.clone();
        async move { f(i) }
    });
    (n, svc)
}

#[tokio::test(start_paused = true)]
async fn a_call_that_may_have_reached_the_server_is_never_sent_twice() {
    let (n, client) = counting(|_| Err("connection reset after the write".into()));
    let stack = StackBuilder::new(StackSettings::new("s")).build(client);
    let e = stack.oneshot(ToolCall::new("delete")).await.unwrap_err();
    assert_eq!(n.load(Ordering::SeqCst), 1);
    assert!(e.to_string().contains("connection reset"));
}

#[tokio::test(start_paused = true)]
async fn a_request_that_never_left_is_retried_with_backoff() {
    let (n, client) = counting(|i| {
        if i < 2 {
            Err(NotSent::new("spawn failed").into())
        } else {
            Ok(ToolResult::text("ok"))
        }
    });
    let stack = StackBuilder::new(StackSettings::new("s")).build(client);
    let r = stack.oneshot(ToolCall::new("delete")).await.unwrap();
    assert_eq!(r.joined_text(), "ok");
    assert_eq!(n.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn a_retry_safe_call_is_retried_after_a_sent_failure() {
    let (n, client) = counting(|i| {
        if i == 0 {
            Err("server closed the stream".into())
        } else {
            Ok(ToolResult::text("read"))
        }
    });
    let stack = StackBuilder::new(StackSettings::new("s")).build(client);
    let r = stack
        .oneshot(ToolCall::new("list").with_retry_safe(true))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "read");
    assert_eq!(n.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn the_timeout_bounds_the_whole_call_retries_included_and_names_the_server() {
    let (n, client) = counting(|_| Err(NotSent::new("not connected").into()));
    // Enough attempts that the retries would go on past the timeout.
    let policy = kaged_mcp_layers::retry::RetryPolicy::new(
        Duration::from_millis(20),
        Duration::from_millis(40),
    )
    .unwrap()
    .max_attempts(1000);
    let settings = StackSettings::new("github")
        .timeout(Duration::from_millis(150))
        .retry(policy);
    let stack = StackBuilder::new(settings).build(client);
    let start = tokio::time::Instant::now();
    let e = stack.oneshot(ToolCall::new("x")).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_millis(150));
    let t = e.downcast_ref::<TimedOut>().expect("a TimedOut");
    assert_eq!(&*t.server, "github");
    assert!(n.load(Ordering::SeqCst) >= 1);
    match into_error("github", "x", e) {
        Error::Timeout {
            server, timeout, ..
        } => {
            assert_eq!(server, "github");
            assert_eq!(timeout, Duration::from_millis(150));
        }
        other => panic!("{other}"),
    }
}

#[tokio::test(start_paused = true)]
async fn what_comes_out_is_capped_and_marked() {
    let (_, client) = counting(|_| Ok(ToolResult::text("x".repeat(1000))));
    let stack = StackBuilder::new(StackSettings::new("s").result_max_bytes(10)).build(client);
    let r = stack.oneshot(ToolCall::new("big")).await.unwrap();
    assert!(r.truncated);
    assert_eq!(
        r.joined_text(),
        format!("{}\n[... truncated at 10 bytes]", "x".repeat(10))
    );
}

#[tokio::test(start_paused = true)]
async fn a_slow_server_times_out_without_being_called_again() {
    let n = Arc::new(AtomicU32::new(0));
    let seen = n.clone();
    let client = service_fn(move |_: ToolCall| {
        seen.fetch_add(1, Ordering::SeqCst);
        async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, BoxError>(ToolResult::text("late"))
        }
    });
    let stack =
        StackBuilder::new(StackSettings::new("s").timeout(Duration::from_secs(2))).build(client);
    let e = stack
        .oneshot(ToolCall::new("x").with_retry_safe(true))
        .await
        .unwrap_err();
    assert!(e.is::<TimedOut>());
    assert_eq!(n.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn not_sent_errors_reach_the_operator_without_the_marker() {
    let (_, client) =
        counting(|_| Err(NotSent::new("server `s` is restarting: next attempt in 900 ms").into()));
    let stack = StackBuilder::new(StackSettings::new("s")).build(client);
    let e = stack.oneshot(ToolCall::new("x")).await.unwrap_err();
    let shown = into_error("s", "x", e).to_string();
    assert!(shown.contains("next attempt in 900 ms"), "{shown}");
    // The marker's own words (`NotSent`'s Display) never reach the operator.
    assert!(
        !shown.contains("the request was not sent to the server"),
        "{shown}"
    );
}

/// The limit on calls in flight sits inside the timeout: a call waiting for its place waits on
/// the clock, and one that waits too long fails as a timeout naming the server.
#[tokio::test(start_paused = true)]
async fn waiting_for_a_place_counts_against_the_timeout() {
    let slow = service_fn(|_: ToolCall| async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok::<_, BoxError>(ToolResult::text("done"))
    });
    let stack = StackBuilder::new(
        StackSettings::new("demo")
            .timeout(Duration::from_millis(1500))
            .max_in_flight(1),
    )
    .build(slow);
    let first = stack.clone().oneshot(ToolCall::new("a"));
    let second = stack.clone().oneshot(ToolCall::new("b"));
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.unwrap().joined_text(), "done");
    let err = second.unwrap_err();
    let timed_out = err.downcast_ref::<TimedOut>().expect("a TimedOut");
    assert_eq!(&*timed_out.server, "demo");
    assert_eq!(timed_out.timeout, Duration::from_millis(1500));
}
