//! `ProgressTimeout` over a `tower_test` mock, on paused time: requests pass, progress keeps a
//! slow call alive up to the total cap, silence fails it, readiness is the client's.

use std::time::Duration;

use kaged_mcp_layers::timeout::{
    Elapsed, ElapsedKind, ProgressAware, ProgressHandle, ProgressTimeoutLayer,
};
use tokio_test::{assert_pending, assert_ready_err, assert_ready_ok};
use tower_test::{assert_request_eq, mock};

#[derive(Debug, Clone)]
struct Call {
    id: u32,
    progress: Option<ProgressHandle>,
}

impl PartialEq for Call {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl ProgressAware for Call {
    fn progress(&self) -> Option<&ProgressHandle> {
        self.progress.as_ref()
    }
}

fn plain(id: u32) -> Call {
    Call { id, progress: None }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn layer() -> ProgressTimeoutLayer {
    ProgressTimeoutLayer::new(secs(5), secs(30))
}

fn kind(err: &tower::BoxError) -> ElapsedKind {
    err.downcast_ref::<Elapsed>().expect("an Elapsed").kind()
}

#[tokio::test(start_paused = true)]
async fn forwards_the_request_and_returns_a_timely_answer() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(layer());
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(plain(1)));
    assert_pending!(response.poll());
    assert_request_eq!(handle, plain(1)).send_response("done");
    assert_eq!(assert_ready_ok!(response.poll()), "done");
}

#[tokio::test(start_paused = true)]
async fn fails_a_silent_call_after_idle_and_ignores_the_late_answer() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(layer());
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(plain(2)));
    assert_pending!(response.poll());
    let send = assert_request_eq!(handle, plain(2));
    tokio::time::advance(secs(5)).await;
    let err = assert_ready_err!(response.poll());
    assert_eq!(kind(&err), ElapsedKind::Idle);
    drop(response);
    send.send_response("too late"); // nobody listens any more; must not panic
}

#[tokio::test(start_paused = true)]
async fn progress_keeps_a_slow_call_alive_until_it_answers() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(layer());
    let progress = ProgressHandle::new();
    let call = Call {
        id: 3,
        progress: Some(progress.clone()),
    };
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(call.clone()));
    assert_pending!(response.poll());
    let send = assert_request_eq!(handle, call);
    for _ in 0..5 {
        tokio::time::advance(secs(4)).await;
        progress.notify();
        assert_pending!(response.poll());
    }
    send.send_response("finished after 20s");
    assert_eq!(assert_ready_ok!(response.poll()), "finished after 20s");
}

#[tokio::test(start_paused = true)]
async fn progress_never_extends_past_the_total_cap() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(layer());
    let progress = ProgressHandle::new();
    let call = Call {
        id: 4,
        progress: Some(progress.clone()),
    };
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(call.clone()));
    assert_pending!(response.poll());
    let _send = assert_request_eq!(handle, call);
    for _ in 0..14 {
        tokio::time::advance(secs(2)).await;
        progress.notify();
        assert_pending!(response.poll());
    }
    tokio::time::advance(secs(2)).await; // t = 30
    let err = assert_ready_err!(response.poll());
    assert_eq!(kind(&err), ElapsedKind::Total);
    assert_eq!(err.to_string(), "total cap of 30s reached");
}

#[tokio::test(start_paused = true)]
async fn waiting_for_readiness_is_not_timed() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(layer());
    handle.allow(0);
    assert_pending!(svc.poll_ready());
    tokio::time::advance(secs(60)).await;
    assert_pending!(svc.poll_ready());
    handle.allow(1);
    assert!(svc.is_woken());
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(plain(5)));
    assert_pending!(response.poll());
    assert_request_eq!(handle, plain(5)).send_response("ok");
    assert_eq!(assert_ready_ok!(response.poll()), "ok");
}

/// A hold (a wait the server asked for, such as an MCP task's `pollInterval`) keeps the idle
/// limit from ending the call before it is over; a release after a look that saw nothing new,
/// once the idle limit has passed, ends the call at once, saying the server's pace was why.
#[tokio::test(start_paused = true)]
async fn a_hold_defers_the_idle_limit_and_its_release_after_silence_ends_the_call() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(layer());
    let progress = ProgressHandle::new();
    let call = Call {
        id: 7,
        progress: Some(progress.clone()),
    };
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(call.clone()));
    assert_pending!(response.poll());
    let _send = assert_request_eq!(handle, call);
    assert_eq!(
        progress.idle_limit(),
        Some(secs(5)),
        "the layer tells its limit"
    );
    // The server asks to be polled every 8 s, more than the 5 s idle limit.
    progress.hold_until(tokio::time::Instant::now() + secs(8), secs(8));
    tokio::time::advance(secs(6)).await;
    assert_pending!(response.poll());
    // The poll at 8 s sees a change: the idle limit counts from it.
    tokio::time::advance(secs(2)).await;
    progress.notify();
    progress.release();
    assert_pending!(response.poll());
    // The hold covers the wait and the poll's own answer (2 s at most).
    progress.hold_until(tokio::time::Instant::now() + secs(10), secs(8));
    tokio::time::advance(secs(8)).await; // t = 16: the poll is sent...
    assert_pending!(response.poll());
    tokio::time::advance(Duration::from_millis(100)).await; // ...and sees nothing new.
    assert!(!response.is_woken());
    progress.release();
    assert!(response.is_woken(), "the release wakes the timeout");
    let err = assert_ready_err!(response.poll());
    let elapsed = err.downcast_ref::<Elapsed>().unwrap();
    assert_eq!(elapsed.kind(), ElapsedKind::Idle);
    assert_eq!(elapsed.asked_interval(), Some(secs(8)));
    assert_eq!(
        err.to_string(),
        "no progress for 5s, seen at the server's pace: it asked to be polled every 8s, and nothing had changed when it was"
    );
}

/// Without a hold nothing changes: the idle limit fires between looks as before.
#[tokio::test(start_paused = true)]
async fn without_a_hold_the_idle_limit_is_as_before() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, &str, _>(layer());
    let progress = ProgressHandle::new();
    let call = Call {
        id: 8,
        progress: Some(progress.clone()),
    };
    assert_ready_ok!(svc.poll_ready());
    let mut response = tokio_test::task::spawn(svc.call(call.clone()));
    assert_pending!(response.poll());
    let _send = assert_request_eq!(handle, call);
    tokio::time::advance(secs(5)).await;
    let err = assert_ready_err!(response.poll());
    assert_eq!(err.to_string(), "no progress for 5s");
}
