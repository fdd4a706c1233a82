//! Instructions per `tools/call`, in each era: `N` echo calls, 64 in flight, through the full
//! default stack of an `McpClient` on the bundled demo server, on a current-thread runtime.
//! It prints the calls and the wall time; the figure that matters is the client's instruction
//! count, which `valgrind --tool=callgrind` gives exactly (no hardware counters needed, and
//! unlike time it does not move with the machine's load). Per call it is the difference of two
//! runs divided by the difference of their `N`, so the start-up cancels out:
//!
//! ```sh
//! cargo bench --bench instructions --no-run
//! B=$(ls -t target/release/deps/instructions-* | grep -v '\.d$' | head -1)
//! for era in legacy modern; do for n in 10000 30000; do
//!   KAGED_ERA=$era N=$n valgrind --tool=callgrind --callgrind-out-file=/dev/null $B --bench 2>&1 |
//!     grep -o 'Collected : [0-9]*'; done; done
//! ```
//!
//! `KAGED_ERA=legacy|modern` (default `legacy`), `N` (default 20 000; 200 when run as a test by
//! `cargo test --benches`). With the `otel` feature, `KAGED_TELEMETRY=1` installs what an
//! embedder exporting telemetry would (issue 26): `tracing-opentelemetry`'s layer for the
//! `kaged_mcp::telemetry` spans over a tracer provider with a batch processor, the W3C
//! propagator (so every request carries its trace context) and a meter provider, with
//! exporters that drop what they are given (the cost measured is kaged-mcp's and the SDK's,
//! not a network's), and turns the histograms on. `KAGED_METRICS=on` turns them on alone (a
//! no-op meter provider: what they cost an embedder that installs none). The demo server's own instructions are not counted (callgrind does
//! not follow children).

use futures::stream::{FuturesUnordered, StreamExt};
use kaged_mcp::client::{ClientOptions, EraPreference, McpClient, ToolCall};
use kaged_mcp::stack::{StackBuilder, StackSettings};
use kaged_mcp::transport::{StdioConfig, StdioTransport};
use serde_json::{Map, Value};
use tower::ServiceExt;

const DEMO: &str = env!("CARGO_BIN_EXE_kaged-mcp");
const IN_FLIGHT: usize = 64;

/// A span exporter that drops every batch.
#[cfg(feature = "otel")]
#[derive(Debug)]
struct Discard;

#[cfg(feature = "otel")]
impl opentelemetry_sdk::trace::SpanExporter for Discard {
    async fn export(
        &self,
        batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        drop(batch);
        Ok(())
    }
}

/// `KAGED_TELEMETRY=1`: the exporting embedder's setup (see the module docs); the providers
/// are kept until the end.
#[cfg(feature = "otel")]
fn telemetry() -> Option<(
    opentelemetry_sdk::trace::SdkTracerProvider,
    opentelemetry_sdk::metrics::SdkMeterProvider,
)> {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    std::env::var_os("KAGED_TELEMETRY")?;
    let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(Discard)
        .build();
    let meter = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
        // Aggregated on every record; exported once a minute (never, in a run).
        .with_reader(
            opentelemetry_sdk::metrics::PeriodicReader::builder(
                opentelemetry_sdk::metrics::InMemoryMetricExporter::default(),
            )
            .build(),
        )
        .build();
    opentelemetry::global::set_meter_provider(meter.clone());
    kaged_mcp::telemetry::set_metrics(true);
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::filter::Targets::new()
                .with_target(kaged_mcp::telemetry::TARGET, tracing::Level::INFO),
        )
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(tracer.tracer("bench"))
                .with_location(false)
                .with_target(false)
                .with_threads(false)
                .with_tracked_inactivity(false),
        )
        .init();
    Some((tracer, meter))
}

fn main() {
    #[cfg(feature = "otel")]
    if std::env::var("KAGED_METRICS").as_deref() == Ok("on") {
        kaged_mcp::telemetry::set_metrics(true);
    }
    #[cfg(feature = "otel")]
    let _telemetry = telemetry();
    let bench = std::env::args().any(|a| a == "--bench");
    let n: usize = match std::env::var("N") {
        Ok(v) => v.parse().expect("N: a number of calls"),
        Err(_) if bench => 20_000,
        Err(_) => 200,
    };
    let era = match std::env::var("KAGED_ERA").as_deref() {
        Ok("modern") => EraPreference::Modern,
        Ok("legacy") | Err(_) => EraPreference::Legacy,
        Ok(other) => panic!("KAGED_ERA={other}: expected legacy or modern"),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async move {
        let transport = StdioTransport::new(StdioConfig::new(DEMO).args(["demo-server"]));
        let client = McpClient::new("demo", transport, ClientOptions::default().era(era));
        client.start().await.expect("the demo server starts");
        let stack = StackBuilder::new(StackSettings::new("demo")).build(client.clone());
        let mut args = Map::new();
        args.insert("message".into(), Value::from("hello"));
        let args = std::sync::Arc::new(args);
        let mut in_flight = FuturesUnordered::new();
        let (mut started, mut done) = (0, 0);
        let t = std::time::Instant::now();
        while done < n {
            while started < n && in_flight.len() < IN_FLIGHT {
                let call = ToolCall::new("echo").with_arguments(std::sync::Arc::clone(&args));
                in_flight.push(stack.clone().oneshot(call));
                started += 1;
            }
            let result = in_flight
                .next()
                .await
                .expect("a call in flight")
                .expect("the call succeeds");
            assert_eq!(result.joined_text(), "Echo: hello");
            done += 1;
        }
        println!(
            "{n} calls ({}, {IN_FLIGHT} in flight) in {:?}",
            client.era().map_or("-", |e| e.as_str()),
            t.elapsed()
        );
        client.shutdown().await;
    });
}
