//! Per-call overhead of each layer of the standard stack, and of the whole stack, over a bare
//! in-memory `service_fn` that answers with a small [`ToolResult`].
//!
//! Every benchmark times `ready().await` + `call(..).await` on one kept service, the request
//! cloned from a prepared [`ToolCall`] each time (the bare service pays that clone too), on a
//! current-thread tokio runtime. The difference to `bare` is the layer's cost per call.
//!
//! Two bare services, two groups:
//! - `ready/…`: the bare service answers at once. A timeout layer then never arms its timer
//!   (it polls the inner future first), so this is the floor of each layer.
//! - `pending/…`: the bare service yields once before answering, as a real client's answer
//!   always comes later: every timer is registered and cleared, every waker is taken. The bare
//!   cost here includes one trip through the scheduler.
//!
//! In each group:
//! - `truncate`, `progress_timeout`, `stats`, `limit`, `retry`: one layer each, as the standard
//!   stack configures it (64 KiB cap; 30 s idle timeout with a 600 s cap; 64 calls in flight;
//!   [`default_retry_policy`]); `timeout` is tower's plain `Timeout` (30 s), for comparison.
//! - `truncate+progress_timeout+retry`: the three, unboxed, without the trace layer.
//! - `full_stack`: `StackBuilder::new(StackSettings::new("bench")).build(..)`: Trace → Stats →
//!   Truncate → ProgressTimeout → Limit → Retry, type-erased into a `ToolService`. The trace
//!   layer is private to the stack, so its cost is `full_stack` minus the others (the type
//!   erasure included).
//! - `full_stack/clone+oneshot`: as the registry dispatches: clone the stored stack, `oneshot`.
//! - `full_stack/info_subscriber` and `full_stack/debug_subscriber`: with a `fmt` subscriber at
//!   INFO (the `mcp.call` span and the DEBUG events are off, as in a daemon's default setting)
//!   and at DEBUG (all on, written to a sink).
//!
//! Target: the full stack adds at most 1 µs per call. Run with
//! `cargo bench --bench layers -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use kaged_mcp::client::ToolCall;
use kaged_mcp::protocol::ToolResult;
use kaged_mcp::stack::{default_retry_policy, StackBuilder, StackSettings};
use kaged_mcp_layers::stats::{CallStats, StatsLayer};
use kaged_mcp_layers::ServiceBuilderExt;
use serde_json::json;
use tokio::runtime::Runtime;
use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};
use tracing::level_filters::LevelFilter;

/// The standard stack's result cap.
const CAP: usize = 65_536;
/// The standard stack's timeout.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The standard stack's cap on a call that reports progress.
const PROGRESS_CAP: Duration = Duration::from_secs(600);

/// What every bare service and every stack over it is.
trait ToolSvc:
    Service<ToolCall, Response = ToolResult, Error = BoxError, Future: Send>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> ToolSvc for S where
    S: Service<ToolCall, Response = ToolResult, Error = BoxError, Future: Send>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// Answers every call at once with a small result.
fn bare_ready() -> impl ToolSvc {
    service_fn(|_: ToolCall| async { Ok::<_, BoxError>(ToolResult::text("Echo: hi")) })
}

/// Answers every call with a small result after yielding once to the scheduler.
fn bare_pending() -> impl ToolSvc {
    service_fn(|_: ToolCall| async {
        tokio::task::yield_now().await;
        Ok::<_, BoxError>(ToolResult::text("Echo: hi"))
    })
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

/// Every layer and the whole stack over `bare`, named `<group>/<benchmark>`.
fn group(c: &mut Criterion, rt: &Runtime, group: &str, bare: impl ToolSvc) {
    let name = |bench: &str| format!("{group}/{bench}");
    bench_service(c, rt, &name("bare"), bare.clone());
    bench_service(
        c,
        rt,
        &name("truncate"),
        ServiceBuilder::new().truncate(CAP).service(bare.clone()),
    );
    bench_service(
        c,
        rt,
        &name("timeout"),
        ServiceBuilder::new().timeout(TIMEOUT).service(bare.clone()),
    );
    bench_service(
        c,
        rt,
        &name("progress_timeout"),
        ServiceBuilder::new()
            .progress_timeout(TIMEOUT, PROGRESS_CAP)
            .service(bare.clone()),
    );
    bench_service(
        c,
        rt,
        &name("stats"),
        ServiceBuilder::new()
            .layer(StatsLayer::new(Arc::new(CallStats::new())))
            .service(bare.clone()),
    );
    bench_service(
        c,
        rt,
        &name("limit"),
        ServiceBuilder::new()
            .in_flight_limit(64)
            .service(bare.clone()),
    );
    bench_service(
        c,
        rt,
        &name("retry"),
        ServiceBuilder::new()
            .retry_policy(default_retry_policy())
            .service(bare.clone()),
    );
    bench_service(
        c,
        rt,
        &name("truncate+progress_timeout+retry"),
        ServiceBuilder::new()
            .truncate(CAP)
            .progress_timeout(TIMEOUT, PROGRESS_CAP)
            .retry_policy(default_retry_policy())
            .service(bare.clone()),
    );
    let stack = StackBuilder::new(StackSettings::new("bench")).build(bare);
    bench_service(c, rt, &name("full_stack"), stack.clone());

    let call = request();
    c.bench_function(&name("full_stack/clone+oneshot"), |b| {
        b.to_async(rt).iter_custom(|iters| {
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

    for (bench, level) in [
        ("full_stack/info_subscriber", LevelFilter::INFO),
        ("full_stack/debug_subscriber", LevelFilter::DEBUG),
    ] {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::sink)
            .finish();
        // The runtime is current-thread: the calls run on this thread, under this subscriber.
        let _guard = tracing::subscriber::set_default(subscriber);
        bench_service(c, rt, &name(bench), stack.clone());
    }
}

fn layers(c: &mut Criterion) {
    let rt = runtime();
    group(c, &rt, "ready", bare_ready());
    group(c, &rt, "pending", bare_pending());
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = layers
}
criterion_main!(benches);
