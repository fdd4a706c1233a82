//! Telemetry: a session's spans and metrics in the OpenTelemetry semantic conventions for MCP,
//! printed by OpenTelemetry's stdout exporters.
//!
//! ```sh
//! cargo run --example telemetry
//! ```
//! What an embedder does to see kaged-mcp in its OpenTelemetry backend: install a tracer
//! provider behind `tracing-opentelemetry`'s layer (kaged-mcp's spans are `tracing` spans of
//! target `kaged_mcp::telemetry`), a meter provider and a propagator, then start the session.
//! Here both exporters print to stdout; a daemon would use `opentelemetry-otlp` instead. One
//! `tools/call` span is printed (`tools/call echo`, kind Client, with `mcp.method.name`,
//! `gen_ai.tool.name`, `network.transport`…), and at shutdown the two histograms
//! (`mcp.client.operation.duration`, `mcp.client.session.duration`).

#[path = "demo/support.rs"]
mod support;

use std::process::ExitCode;

use kaged_mcp::Session;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

fn main() -> ExitCode {
    if let Some(code) = support::serve_demo_if_asked() {
        return code;
    }
    let tracer_provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let meter_provider = SdkMeterProvider::builder()
        .with_reader(
            PeriodicReader::builder(opentelemetry_stdout::MetricExporter::default()).build(),
        )
        .build();
    // The session's metrics come from the global meter provider and its trace context goes
    // through the global propagator: both are set before the session starts.
    opentelemetry::global::set_meter_provider(meter_provider.clone());
    kaged_mcp::telemetry::set_metrics(true);
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new(
            "kaged_mcp::telemetry=info",
        ))
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(tracer_provider.tracer("telemetry-example"))
                // Only the conventions' attributes: no code location, thread or busy/idle times.
                .with_location(false)
                .with_target(false)
                .with_threads(false)
                .with_tracked_inactivity(false),
        )
        .init();

    let result = run();

    // Exports what is left (the metrics, here) before the process ends.
    let _ = tracer_provider.shutdown();
    let _ = meter_provider.shutdown();
    support::report(result)
}

#[tokio::main(flavor = "current_thread")]
async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::start(support::demo_config()?).await?;
    let args = json!({"message": "traced"});
    let result = session
        .call("mcp.demo.echo", args.as_object().cloned())
        .await?;
    println!("mcp.demo.echo -> {}", result.joined_text());
    session.shutdown().await;
    Ok(())
}
