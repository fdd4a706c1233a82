//! `InFlightLimit`: at most `max` calls at once across clones, the rest wait in order inside
//! their futures (so an outer timeout bounds the wait), a caller that gives up leaves the
//! queue, and a place is freed however a call ends. Time is paused: durations are exact.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::join_all;
use kaged_mcp_layers::limit::{InFlightLimit, InFlightLimitLayer};
use kaged_mcp_layers::ServiceBuilderExt;
use tokio::time::Instant;
use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};

/// A service whose calls take `n` seconds (the request), counting the calls running at once
/// and recording the order they started in.
#[derive(Clone, Default)]
struct Slow {
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    started: Arc<Mutex<Vec<u64>>>,
}

impl Slow {
    fn service(&self) -> impl Service<u64, Response = u64, Error = BoxError, Future: Send> + Clone {
        let this = self.clone();
        service_fn(move |secs: u64| {
            let this = this.clone();
            async move {
                let now = this.running.fetch_add(1, Ordering::SeqCst) + 1;
                this.most.fetch_max(now, Ordering::SeqCst);
                this.started.lock().unwrap().push(secs);
                tokio::time::sleep(Duration::from_secs(secs)).await;
                this.running.fetch_sub(1, Ordering::SeqCst);
                if secs == 0 {
                    return Err(BoxError::from("zero seconds is a failure"));
                }
                Ok(secs)
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn at_most_max_run_at_once_across_clones_and_the_rest_wait_in_order() {
    let slow = Slow::default();
    let svc = InFlightLimit::new(slow.service(), 2);
    let started = Instant::now();
    // Five one-second calls, each on its own clone: two at a time.
    let calls = [1, 1, 1, 1, 1].map(|s| svc.clone().oneshot(s));
    let answers = join_all(calls).await;
    assert!(answers.iter().all(|a| matches!(a, Ok(1))));
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!(slow.most.load(Ordering::SeqCst), 2);
    assert_eq!(svc.available(), 2);
}

#[tokio::test(start_paused = true)]
async fn waiting_calls_start_in_the_order_they_came() {
    let slow = Slow::default();
    let svc = InFlightLimit::new(slow.service(), 1);
    let calls = [5, 1, 4, 2, 3].map(|s| svc.clone().oneshot(s));
    join_all(calls).await;
    assert_eq!(*slow.started.lock().unwrap(), [5, 1, 4, 2, 3]);
}

#[tokio::test(start_paused = true)]
async fn an_outer_timeout_bounds_the_wait() {
    let slow = Slow::default();
    let svc = ServiceBuilder::new()
        .timeout(Duration::from_millis(1500))
        .in_flight_limit(1)
        .service(slow.service());
    let first = svc.clone().oneshot(1);
    let second = svc.clone().oneshot(1);
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.unwrap(), 1);
    // It waited 1 s for the place, and would have needed 1 s more.
    let err = second.unwrap_err();
    assert!(err.is::<tower::timeout::error::Elapsed>(), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_gives_up_leaves_the_queue_and_frees_nothing_twice() {
    let slow = Slow::default();
    let mut svc = InFlightLimit::new(slow.service(), 1);
    let holder = tokio::spawn(svc.clone().oneshot(2));
    tokio::task::yield_now().await;
    assert_eq!(svc.available(), 0);
    // A call over the limit, given up on while it waits.
    let mut given_up = Box::pin(svc.ready().await.unwrap().call(1));
    assert!(futures::poll!(given_up.as_mut()).is_pending());
    drop(given_up);
    let started = Instant::now();
    assert_eq!(svc.clone().oneshot(1).await.unwrap(), 1);
    // It ran right after the holder (2 s) for its own second, not behind the caller that left
    // (4 s).
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!(holder.await.unwrap().unwrap(), 2);
    assert_eq!(svc.available(), 1);
    assert_eq!(*slow.started.lock().unwrap(), [2, 1]);
}

#[tokio::test(start_paused = true)]
async fn a_place_is_freed_however_the_call_ends() {
    let slow = Slow::default();
    let svc = InFlightLimit::new(slow.service(), 1);
    // A failed call.
    assert!(svc.clone().oneshot(0).await.is_err());
    assert_eq!(svc.available(), 1);
    // A running call dropped midway.
    let running = tokio::time::timeout(Duration::from_millis(10), svc.clone().oneshot(5)).await;
    assert!(running.is_err());
    assert_eq!(svc.available(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_limit_of_zero_is_taken_as_one() {
    let slow = Slow::default();
    let svc = InFlightLimit::new(slow.service(), 0);
    assert_eq!(svc.max(), 1);
    assert_eq!(svc.clone().oneshot(1).await.unwrap(), 1);
}

#[tokio::test]
async fn the_layer_gives_each_service_a_limit_of_its_own() {
    let layer = InFlightLimitLayer::new(3);
    let a = tower::Layer::layer(&layer, Slow::default().service());
    let b = tower::Layer::layer(&layer, Slow::default().service());
    let held = a.clone().oneshot(1);
    let mut held = Box::pin(held);
    assert!(futures::poll!(held.as_mut()).is_pending());
    assert_eq!((a.available(), b.available()), (2, 3));
}

/// A service ready `n` times in all (shared by its clones), then failing readiness; a call
/// takes 1 s.
#[derive(Clone)]
struct ReadyTimes(Arc<AtomicUsize>);

impl Service<u64> for ReadyTimes {
    type Response = u64;
    type Error = BoxError;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<u64, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        let left = self.0.load(Ordering::SeqCst);
        if left == 0 {
            return Poll::Ready(Err("not connected".into()));
        }
        self.0.store(left - 1, Ordering::SeqCst);
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, n: u64) -> Self::Future {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(n)
        })
    }
}

/// A waiting call makes its own clone of the inner service ready when its turn comes; if that
/// fails, the call fails with the inner error, the request is never sent, and the place is
/// free at once.
#[tokio::test(start_paused = true)]
async fn a_waiter_whose_service_is_not_ready_at_its_turn_fails_and_frees_its_place() {
    // Ready twice: the first call's readiness, the second call's outer readiness; the
    // second call's own readiness check at its turn fails.
    let svc = InFlightLimit::new(ReadyTimes(Arc::new(AtomicUsize::new(2))), 1);
    let first = svc.clone().oneshot(1);
    let second = svc.clone().oneshot(2);
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.unwrap(), 1);
    assert_eq!(second.unwrap_err().to_string(), "not connected");
    assert_eq!(svc.available(), 1);
}

/// tower's contract: a waiting call polls its service ready before calling it (a `tower_test`
/// mock clone panics when called unready), and each request reaches the service in turn.
#[tokio::test]
async fn a_waiter_polls_its_service_ready_before_calling_it() {
    let (mock, mut handle) = tower_test::mock::pair::<u64, u64>();
    let svc = InFlightLimit::new(mock, 1);
    let first = tokio::spawn(svc.clone().oneshot(1));
    let second = tokio::spawn(svc.clone().oneshot(2));
    let (req, reply) = handle.next_request().await.unwrap();
    assert_eq!(req, 1);
    tokio::task::yield_now().await;
    assert_eq!(svc.available(), 0, "the second call waits");
    reply.send_response(10);
    let (req, reply) = handle.next_request().await.unwrap();
    assert_eq!(req, 2);
    reply.send_response(20);
    assert_eq!(first.await.unwrap().unwrap(), 10);
    assert_eq!(second.await.unwrap().unwrap(), 20);
    assert_eq!(svc.available(), 1);
}
