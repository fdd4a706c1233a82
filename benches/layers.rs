//! Per-call overhead of each layer of the standard stack, and of the whole stack, over a bare
//! in-memory `service_fn` that answers at once with a small [`ToolResult`].
//!
//! Every benchmark times `ready().await` + `call(..).await` on one kept service, the request
//! cloned from a prepared [`ToolCall`] each time (the bare service pays that clone too), on a
//! current-thread tokio runtime. The difference to `bare` is the layer's cost per call.
//!
//! - `truncate`, `timeout`, `retry`: one layer each, as the standard stack configures it
//!   (64 KiB cap, 30 s timeout, [`default_retry_policy`]).
//! - `truncate+timeout+retry`: the three, unboxed, without the trace layer.
//! - `full_stack`: [`StackBuilder::new(StackSettings::new("bench")).build(..)`](StackBuilder):
//!   Trace → Truncate → Timeout → Retry, type-erased into a `ToolService`. The trace layer is
//!   private to the stack, so its cost is `full_stack` minus `truncate+timeout+retry` (the
//!   type erasure included).
//! - `full_stack/clone+oneshot`: as the registry dispatches: clone the stored stack, `oneshot`.
//! - `full_stack/info_subscriber` and `full_stack/debug_subscriber`: with a `fmt` subscriber at
//!   INFO (the `mcp.call` span and the DEBUG events are off, as in a daemon's default setting)
//!   and at DEBUG (all on, written to a sink).
//!
//! Target: the full stack adds at most 1 µs per call. Run with
//! `cargo bench --bench layers -- --warm-up-time 1 --measurement-time 3`.

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use kaged_mcp::client::ToolCall;
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::stack::{default_retry_policy, StackBuilder, StackSettings};
use kaged_mcp_layers::ServiceBuilderExt;
use serde_json::json;
use tokio::runtime::Runtime;
use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};
use tracing::level_filters::LevelFilter;

/// The standard stack's result cap.
const CAP: usize = 65_536;
/// The standard stack's timeout.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A service that answers every call at once with a small result: the floor.
fn bare() -> impl Service<
    ToolCall,
    Response = ToolResult,
    Error = BoxError,
    Future = impl Future<Output = Result<ToolResult, BoxError>> + Send,
> + Clone
       + Send
       + Sync
       + 'static {
    service_fn(|_: ToolCall| async { Ok::<_, BoxError>(ToolResult::text("Echo: hi")) })
}

/// The request every benchmark sends (cloned per call).
fn request() -> ToolCall {
    ToolCall::new("echo").with_json_arguments(json!({ "message": "hi" }))
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread tokio runtime")
}

/// Times `iters` calls through `svc`, one after the other.
fn bench_service<S>(c: &mut Criterion, rt: &Runtime, name: &str, svc: S)
where
    S: Service<ToolCall, Response = ToolResult, Error = BoxError> + Clone,
{
    let call = request();
    c.bench_function(name, |b| {
        b.to_async(rt).iter_custom(|iters| {
            let mut svc = svc.clone();
            let call = call.clone();
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let ready = svc.ready().await.expect("the service is always ready");
                    let result = ready.call(call.clone()).await.expect("the call succeeds");
                    black_box(result);
                }
                start.elapsed()
            }
        });
    });
}

fn layers(c: &mut Criterion) {
    let rt = runtime();
    bench_service(c, &rt, "bare", bare());
    bench_service(
        c,
        &rt,
        "truncate",
        ServiceBuilder::new().truncate(CAP).service(bare()),
    );
    bench_service(
        c,
        &rt,
        "timeout",
        ServiceBuilder::new().timeout(TIMEOUT).service(bare()),
    );
    bench_service(
        c,
        &rt,
        "retry",
        ServiceBuilder::new()
            .retry_policy(default_retry_policy())
            .service(bare()),
    );
    bench_service(
        c,
        &rt,
        "truncate+timeout+retry",
        ServiceBuilder::new()
            .truncate(CAP)
            .timeout(TIMEOUT)
            .retry_policy(default_retry_policy())
            .service(bare()),
    );
    let stack = StackBuilder::new(StackSettings::new("bench")).build(bare());
    bench_service(c, &rt, "full_stack", stack.clone());

    let call = request();
    c.bench_function("full_stack/clone+oneshot", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let stack = stack.clone();
            let call = call.clone();
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let result = stack
                        .clone()
                        .oneshot(call.clone())
                        .await
                        .expect("the call succeeds");
                    black_box(result);
                }
                start.elapsed()
            }
        });
    });

    for (name, level) in [
        ("full_stack/info_subscriber", LevelFilter::INFO),
        ("full_stack/debug_subscriber", LevelFilter::DEBUG),
    ] {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::sink)
            .finish();
        // The runtime is current-thread: the calls run on this thread, under this subscriber.
        let _guard = tracing::subscriber::set_default(subscriber);
        bench_service(c, &rt, name, stack.clone());
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = layers
}
criterion_main!(benches);
