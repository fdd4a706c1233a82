//! The CLI's OpenTelemetry export (feature `otlp`): with the OpenTelemetry environment
//! variables set, every command's spans (the `mcp.request` spans of [`crate::telemetry`]) and
//! metrics go to an OTLP/HTTP (protobuf) endpoint, and are flushed before the process exits.
//!
//! - On when `OTEL_EXPORTER_OTLP_ENDPOINT` (both signals), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//!   or `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (that signal) is set and not empty; off with
//!   `OTEL_SDK_DISABLED=true`, and a signal is off with `OTEL_TRACES_EXPORTER=none` or
//!   `OTEL_METRICS_EXPORTER=none`. Unset, nothing is built: no thread, no propagator, no
//!   layer, nothing slower.
//! - The exporter reads the rest of the standard variables itself (`…_HEADERS`, `…_TIMEOUT`,
//!   `…_COMPRESSION` (`gzip`), `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//!   `OTEL_METRIC_EXPORT_INTERVAL`); the service is `kaged-mcp` unless `OTEL_SERVICE_NAME`
//!   says otherwise. `grpc` as the protocol is not built in: http/protobuf is used.
//! - Requests go through the crate's own HTTP client (hyper, rustls), on a one-thread runtime
//!   of the exporter's own: the SDK's batch processor and periodic reader export from threads
//!   of their own, and a command's runtime is gone by the time the last batch is flushed.
//! - The W3C trace context (and baggage) propagator is installed, so a server that reads
//!   `params._meta` joins the command's trace.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, RetryPolicy, SpanExporter, WithHttpConfig as _};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

use crate::transport::http::client::{fetch, HttpService};

/// The most of a collector's answer that is read, in bytes.
const MAX_ANSWER: usize = 64 * 1024;

/// How long one export may take when `OTEL_EXPORTER_OTLP_TIMEOUT` does not say.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// A command exports at its end and then exits: one retry, soon, for a collector that
/// blinked. The exporter's recommended policy (3 retries, 100 ms to 1.6 s apart) added 1.7 s to
/// the exit of every command whose collector refused connections.
fn retry_policy() -> RetryPolicy {
    RetryPolicy::recommended()
        .with_max_retries(1)
        .with_initial_delay(Duration::from_millis(50))
        .with_max_delay(Duration::from_millis(100))
        .with_max_jitter(Duration::from_millis(20))
}

/// The running export: shut down (flushed) by [`Telemetry::shutdown`] before the process exits.
#[derive(Debug)]
pub(super) struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    /// The runtime the exporter's HTTP requests run on (kept alive until after the flush).
    runtime: tokio::runtime::Runtime,
    /// The first failure of each endpoint, told at shutdown.
    failures: Failures,
    /// `OTEL_EXPORTER_OTLP_TIMEOUT`: also how long the final flush of spans may take.
    timeout: Duration,
}

/// The first failed export to each endpoint: `(URL, reason, the variable that set the URL)`.
type Failures = Arc<Mutex<Vec<(String, String, &'static str)>>>;

/// The value of environment variable `name`, when set and not blank.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether signal `signal` (`TRACES`, `METRICS`) is to be exported.
fn wanted(signal: &str) -> bool {
    let endpoint = env("OTEL_EXPORTER_OTLP_ENDPOINT")
        .or_else(|| env(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")));
    let exporter = env(&format!("OTEL_{signal}_EXPORTER"));
    endpoint.is_some() && !exporter.is_some_and(|e| e.trim().eq_ignore_ascii_case("none"))
}

/// The export the environment asks for: `Ok(None)` when it asks for none.
///
/// # Errors
/// A line for the operator when an exporter cannot be built (the endpoint is not a URL...).
pub(super) fn from_env() -> Result<Option<Telemetry>, String> {
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let (traces, metrics) = (wanted("TRACES"), wanted("METRICS"));
    if !traces && !metrics {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("kaged-otlp")
        .enable_all()
        .build()
        .map_err(|e| format!("telemetry: cannot start the exporter's runtime: {e}"))?;
    let failures = Failures::default();
    let timeout = env("OTEL_EXPORTER_OTLP_TIMEOUT")
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(EXPORT_TIMEOUT, Duration::from_millis);
    let client = OtlpHttp {
        failures: Arc::clone(&failures),
        service: crate::transport::http::client::client(None, timeout),
        runtime: runtime.handle().clone(),
        timeout,
        variable: "OTEL_EXPORTER_OTLP_ENDPOINT",
    };
    let mut resource = Resource::builder();
    let named = env("OTEL_SERVICE_NAME").is_some()
        || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| {
            a.split(',')
                .any(|kv| kv.split('=').next().map(str::trim) == Some("service.name"))
        });
    if !named {
        resource = resource.with_service_name("kaged-mcp");
    }
    let resource = resource.build();
    let tracer = if traces {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_http_client(client.for_signal("TRACES"))
            .with_retry_policy(retry_policy())
            .build()
            .map_err(|e| {
                format!(
                    "telemetry: cannot export spans: {} (check OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_EXPORTER_OTLP_COMPRESSION)",
                    without_endpoints(&e.to_string())
                )
            })?;
        Some(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource.clone())
                .build(),
        )
    } else {
        None
    };
    let meter = if metrics {
        let exporter = MetricExporter::builder()
            .with_http()
            .with_http_client(client.for_signal("METRICS"))
            .with_retry_policy(retry_policy())
            .build()
            .map_err(|e| {
                format!(
                    "telemetry: cannot export metrics: {} (check OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT and OTEL_EXPORTER_OTLP_COMPRESSION)",
                    without_endpoints(&e.to_string())
                )
            })?;
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter).build())
            .with_resource(resource)
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        Some(provider)
    } else {
        None
    };
    opentelemetry::global::set_text_map_propagator(
        opentelemetry::propagation::TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ]),
    );
    Ok(Some(Telemetry {
        tracer,
        meter,
        runtime,
        failures,
        timeout,
    }))
}

/// `message` with the value of each endpoint variable in it replaced by its redacted form
/// (an exporter's error quotes the endpoint, which may carry credentials or a query).
fn without_endpoints(message: &str) -> String {
    let mut message = message.to_owned();
    for name in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ] {
        if let Some(value) = env(name) {
            let shown = url::Url::parse(value.trim()).map_or_else(
                |_| format!("(the value of {name})"),
                |u| crate::transport::http::redacted(&u),
            );
            message = message.replace(&value, &shown);
        }
    }
    message
}

impl Telemetry {
    /// Whether metrics are exported (when not, the library records none).
    pub(super) fn exports_metrics(&self) -> bool {
        self.meter.is_some()
    }

    /// The `tracing` layer that turns kaged-mcp's request spans into exported spans (none
    /// when only metrics are exported). Only the spans of [`crate::telemetry::TARGET`] go
    /// through it, with the conventions' attributes alone (no code location or thread).
    pub(super) fn layer<S>(&self) -> Option<impl tracing_subscriber::Layer<S>>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use tracing_subscriber::Layer as _;
        let tracer = self.tracer.as_ref()?.tracer("kaged-mcp");
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_location(false)
                .with_target(false)
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_filter(
                    tracing_subscriber::filter::Targets::new()
                        .with_target(crate::telemetry::TARGET, tracing::Level::INFO),
                ),
        )
    }

    /// Flushes and stops both exports. The last spans may take the export timeout
    /// (`OTEL_EXPORTER_OTLP_TIMEOUT`, default 10 s), the last metrics the SDK's own bound of
    /// 5 s, and the runtime 1 s more: a hung endpoint delays the exit by at most their sum. A
    /// failed export is one `warning:` line on stderr per endpoint, naming it and the reason;
    /// the command's own outcome and exit code stay as they were.
    pub(super) fn shutdown(self) {
        let mut other = Vec::new();
        if let Some(tracer) = self.tracer {
            if let Err(e) = tracer.shutdown_with_timeout(self.timeout) {
                other.push(format!("spans not exported: {e}"));
            }
        }
        if let Some(meter) = self.meter {
            if let Err(e) = meter.shutdown() {
                other.push(format!("metrics not exported: {e}"));
            }
        }
        self.runtime.shutdown_timeout(Duration::from_secs(1));
        let failures =
            std::mem::take(&mut *self.failures.lock().unwrap_or_else(PoisonError::into_inner));
        // The exporter's own errors say less than ours ("Failed to shutdown"): told only
        // when no request failed.
        if failures.is_empty() {
            for line in other {
                eprintln!("warning: telemetry: {line}");
            }
        }
        if let Some(line) = failure_line(&failures) {
            eprintln!("{line}");
        }
    }
}

/// The exporter's HTTP client: the crate's own, its requests run on the export runtime.
/// The one line that tells every failed endpoint: `nothing exported to <url>: <reason> (check
/// <variable>)`, the endpoints that failed alike named together.
fn failure_line(failures: &[(String, String, &'static str)]) -> Option<String> {
    let mut groups: Vec<(Vec<&str>, &str, &str)> = Vec::new();
    for (url, reason, variable) in failures {
        match groups
            .iter_mut()
            .find(|(_, r, v)| *r == reason.as_str() && *v == *variable)
        {
            Some((urls, _, _)) => urls.push(url),
            None => groups.push((vec![url], reason, variable)),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(urls, reason, variable)| {
            format!(
                "nothing exported to {}: {reason} (check {variable})",
                urls.join(" and ")
            )
        })
        .collect();
    (!parts.is_empty()).then(|| format!("warning: telemetry: {}", parts.join("; ")))
}

#[derive(Debug, Clone)]
struct OtlpHttp {
    failures: Failures,
    service: HttpService,
    runtime: tokio::runtime::Handle,
    timeout: Duration,
    /// The variable that set this exporter's endpoint, for the operator's hint.
    variable: &'static str,
}

impl OtlpHttp {
    /// This client for the exporter of `signal` (`TRACES`, `METRICS`), named by the variable
    /// that sets its endpoint: the signal's own when set, else the shared one.
    fn for_signal(&self, signal: &str) -> Self {
        let variable = match signal {
            "TRACES" if env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() => {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
            }
            "METRICS" if env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").is_some() => {
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
            }
            _ => "OTEL_EXPORTER_OTLP_ENDPOINT",
        };
        Self {
            variable,
            ..self.clone()
        }
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OtlpHttp {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        let url = url::Url::parse(&request.uri().to_string()).map_or_else(
            |_| "the OTLP endpoint".into(),
            |u| crate::transport::http::redacted(&u),
        );
        let exchange = exchange(self.service.clone(), request, self.timeout);
        let result = self.runtime.spawn(exchange).await?;
        let failure = match &result {
            Ok(response) if !response.status().is_success() => {
                Some(format!("HTTP {}", response.status()))
            }
            Ok(_) => None,
            Err(reason) => Some(reason.clone()),
        };
        if let Some(reason) = failure {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            if !failures.iter().any(|(u, _, _)| *u == url) {
                failures.push((url, reason, self.variable));
            }
        }
        result.map_err(Into::into)
    }
}

/// One export request and its answer (at most [`MAX_ANSWER`] bytes of it: a collector answers
/// with a small status message), within `timeout`.
async fn exchange(
    service: HttpService,
    request: http::Request<Bytes>,
    timeout: Duration,
) -> Result<http::Response<Bytes>, String> {
    let request = request.map(http_body_util::Full::new);
    match tokio::time::timeout(timeout, fetch(service, request, MAX_ANSWER)).await {
        Ok(answer) => answer.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}
