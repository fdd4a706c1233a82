//! `tools/call` round trips over stdio: kaged-mcp's full default stack against `rmcp` (the
//! official Rust SDK, `rmcp` client + `TokioChildProcess`), both talking to the bundled demo
//! server (`kaged-mcp demo-server`), in the same run.
//!
//! # Scenarios
//! | name | calls in flight | result |
//! |---|---|---|
//! | `sequential` | 1 | `Echo: hello` |
//! | `in_flight_16` | 16 | `Echo: hello` |
//! | `in_flight_64` | 64 | `Echo: hello` |
//! | `result_64k` | 1 | `Echo: hello` + 65 536 bytes (`pad: 65536`) |
//!
//! Each runs on a current-thread and on a multi-thread tokio runtime (two workers on this
//! machine). The calls are made by one task spawned on the runtime, as an agent's task would
//! make them, keeping N futures in flight in a `FuturesUnordered` (closed loop: a call starts as
//! soon as one ends). One criterion iteration is N calls.
//!
//! kaged-mcp calls go through the standard stack exactly as the registry dispatches them:
//! `stack.clone().oneshot(call)` on `StackBuilder::new(StackSettings::new("demo")).build(client)`,
//! so every call pays Trace → Truncate (64 KiB cap: the 64 KiB result is cut to the cap, marker
//! appended) → Timeout (30 s) → Retry. rmcp calls are `peer.call_tool(..)`, rmcp asked for
//! protocol `2025-11-25` (its default, `2026-07-28`, has no `initialize`).
//!
//! After criterion's own report the benchmark prints a summary: per scenario and runtime, the
//! calls per second of each client (median over criterion's samples), the median latency of
//! one call (over every call made), and the ratio kaged/rmcp against the target.
//!
//! Run with `cargo bench --bench stdio -- --warm-up-time 1 --measurement-time 3`.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use futures::stream::{FuturesUnordered, StreamExt};
use kaged_mcp::client::{ClientOptions, McpClient, ToolCall};
use kaged_mcp::stack::{StackBuilder, StackSettings, ToolService};
use kaged_mcp::transport::{StdioConfig, StdioTransport};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt as _;
use serde_json::{json, Map, Value};
use tokio::runtime::Runtime;
use tower::ServiceExt as _;

/// The bundled demo server, built by cargo with this benchmark.
const DEMO: &str = env!("CARGO_BIN_EXE_kaged-mcp");
/// The text both clients send.
const MESSAGE: &str = "hello";

/// One scenario of the benchmark.
#[derive(Debug, Clone, Copy)]
struct Scenario {
    name: &'static str,
    in_flight: usize,
    pad: u64,
    /// The kaged/rmcp calls-per-second ratio the issue asks for.
    target: f64,
}

const SCENARIOS: [Scenario; 4] = [
    Scenario {
        name: "sequential",
        in_flight: 1,
        pad: 0,
        target: 1.75,
    },
    Scenario {
        name: "in_flight_16",
        in_flight: 16,
        pad: 0,
        target: 4.5,
    },
    Scenario {
        name: "in_flight_64",
        in_flight: 64,
        pad: 0,
        target: 5.0,
    },
    Scenario {
        name: "result_64k",
        in_flight: 1,
        pad: 65_536,
        target: 2.5,
    },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Flavor {
    CurrentThread,
    MultiThread,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "current_thread",
            Flavor::MultiThread => "multi_thread",
        }
    }

    fn runtime(self) -> Runtime {
        let mut builder = match self {
            Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
            Flavor::MultiThread => tokio::runtime::Builder::new_multi_thread(),
        };
        builder.enable_all().build().expect("a tokio runtime")
    }
}

// --- what each sample measured --------------------------------------------------------------

/// What one (runtime, scenario, client) measured: per-sample throughput and per-call latency.
#[derive(Debug, Default)]
struct Stats {
    /// Calls per second of each criterion sample.
    rates: Vec<f64>,
    /// The latency of every call made, in nanoseconds.
    latencies: Vec<u64>,
}

type Key = (Flavor, &'static str, &'static str);

static STATS: Mutex<BTreeMap<Key, Stats>> = Mutex::new(BTreeMap::new());

fn record(key: Key, calls: u64, elapsed: Duration, latencies: Vec<u64>) {
    let mut stats = STATS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let entry = stats.entry(key).or_default();
    entry.rates.push(calls as f64 / elapsed.as_secs_f64());
    entry.latencies.extend(latencies);
}

fn median_f64(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn median_u64(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

// --- the two clients ---------------------------------------------------------------------------

/// The arguments of one `echo` call.
fn arguments(pad: u64) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("message".into(), json!(MESSAGE));
    if pad > 0 {
        args.insert("pad".into(), json!(pad));
    }
    args
}

/// kaged-mcp: the full default stack over an `McpClient` on the demo server, started.
async fn kaged() -> ToolService {
    let transport = StdioTransport::new(StdioConfig::new(DEMO).args(["demo-server"]));
    let client = McpClient::new("demo", transport, ClientOptions::default());
    client
        .start()
        .await
        .expect("kaged-mcp starts the demo server");
    StackBuilder::new(StackSettings::new("demo")).build(client)
}

async fn kaged_call(stack: &ToolService, pad: u64) -> usize {
    let call = ToolCall::new("echo").with_arguments(arguments(pad));
    let result = stack
        .clone()
        .oneshot(call)
        .await
        .expect("kaged-mcp: tools/call succeeds");
    result.content.len()
}

/// rmcp: a client over `TokioChildProcess` on the demo server, initialized.
async fn rmcp() -> RunningService<RoleClient, ClientConfig> {
    let mut command = tokio::process::Command::new(DEMO);
    command.arg("demo-server");
    let transport = TokioChildProcess::new(command).expect("rmcp spawns the demo server");
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("rmcp-bench", "0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
    .serve(transport)
    .await
    .expect("rmcp initializes the demo server")
}

async fn rmcp_call(peer: &Peer<RoleClient>, pad: u64) -> usize {
    let params = CallToolRequestParams::new("echo").with_arguments(arguments(pad));
    let result = peer
        .call_tool(params)
        .await
        .expect("rmcp: tools/call succeeds");
    result.content.len()
}

/// Checks once that both clients get the echo back, and prints what each received.
async fn check_answers(stack: &ToolService, peer: &Peer<RoleClient>, pad: u64) {
    let call = ToolCall::new("echo").with_arguments(arguments(pad));
    let k = stack.clone().oneshot(call).await.expect("kaged-mcp answer");
    let k_text = k.joined_text();
    let params = CallToolRequestParams::new("echo").with_arguments(arguments(pad));
    let r = peer.call_tool(params).await.expect("rmcp answer");
    let r_text = r.content[0].as_text().expect("a text block").text.clone();
    assert!(k_text.starts_with("Echo: hello"), "{k_text:.40}");
    assert!(r_text.starts_with("Echo: hello"), "{r_text:.40}");
    println!(
        "pad {pad}: kaged-mcp received {} bytes of text (truncated: {}), rmcp {} bytes",
        k_text.len(),
        k.truncated,
        r_text.len()
    );
}

// --- the closed loop ---------------------------------------------------------------------------

/// Makes `calls` calls with `in_flight` of them running at a time; returns the elapsed time
/// and the latency of each call in nanoseconds.
async fn closed_loop<F, Fut>(calls: u64, in_flight: usize, mut call: F) -> (Duration, Vec<u64>)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = usize>,
{
    let mut latencies = Vec::with_capacity(usize::try_from(calls).unwrap_or(0));
    let timed = |fut: Fut| {
        let start = Instant::now();
        async move {
            std::hint::black_box(fut.await);
            start.elapsed().as_nanos() as u64
        }
    };
    let start = Instant::now();
    if in_flight <= 1 {
        for _ in 0..calls {
            latencies.push(timed(call()).await);
        }
        return (start.elapsed(), latencies);
    }
    let mut running = FuturesUnordered::new();
    let mut issued = 0;
    while issued < calls && running.len() < in_flight {
        running.push(timed(call()));
        issued += 1;
    }
    while let Some(latency) = running.next().await {
        latencies.push(latency);
        if issued < calls {
            running.push(timed(call()));
            issued += 1;
        }
    }
    (start.elapsed(), latencies)
}

fn bench_flavor(c: &mut Criterion, flavor: Flavor) {
    let rt = flavor.runtime();
    let (stack, rmcp_service) = rt.block_on(async { (kaged().await, rmcp().await) });
    let peer = rmcp_service.peer().clone();
    for scenario in SCENARIOS {
        rt.block_on(check_answers(&stack, &peer, scenario.pad));
        let mut group = c.benchmark_group(format!("{}/{}", flavor.name(), scenario.name));
        let n = scenario.in_flight;
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function("kaged", |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let stack = stack.clone();
                let calls = iters * n as u64;
                async move {
                    let driver = async move {
                        closed_loop(calls, n, || kaged_call(&stack, scenario.pad)).await
                    };
                    let (elapsed, latencies) = tokio::spawn(driver).await.expect("driver task");
                    record((flavor, scenario.name, "kaged"), calls, elapsed, latencies);
                    elapsed
                }
            });
        });
        group.bench_function("rmcp", |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let peer = peer.clone();
                let calls = iters * n as u64;
                async move {
                    let driver = async move {
                        closed_loop(calls, n, || rmcp_call(&peer, scenario.pad)).await
                    };
                    let (elapsed, latencies) = tokio::spawn(driver).await.expect("driver task");
                    record((flavor, scenario.name, "rmcp"), calls, elapsed, latencies);
                    elapsed
                }
            });
        });
        group.finish();
    }
    rt.block_on(async {
        drop(stack);
        let _ = rmcp_service.cancel().await;
    });
}

/// Prints the calls/s, median latencies and ratios of this run as a Markdown table.
fn summary() {
    let mut stats = STATS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if stats.values().all(|s| s.rates.len() < 5) {
        return; // test mode or a filtered run: nothing worth a table
    }
    println!();
    println!("| runtime | scenario | kaged calls/s | kaged p50 | rmcp calls/s | rmcp p50 | kaged/rmcp | target | met |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---|");
    for flavor in [Flavor::CurrentThread, Flavor::MultiThread] {
        for scenario in SCENARIOS {
            let mut get = |client: &'static str| {
                let s = stats.get_mut(&(flavor, scenario.name, client))?;
                if s.rates.is_empty() || s.latencies.is_empty() {
                    return None;
                }
                Some((median_f64(&mut s.rates), median_u64(&mut s.latencies)))
            };
            let (Some((k_rate, k_p50)), Some((r_rate, r_p50))) = (get("kaged"), get("rmcp")) else {
                continue;
            };
            let ratio = k_rate / r_rate;
            println!(
                "| {} | {} | {:.0} | {:.1} µs | {:.0} | {:.1} µs | {:.2} | {:.2} | {} |",
                flavor.name(),
                scenario.name,
                k_rate,
                k_p50 as f64 / 1000.0,
                r_rate,
                r_p50 as f64 / 1000.0,
                ratio,
                scenario.target,
                if ratio >= scenario.target {
                    "yes"
                } else {
                    "no"
                },
            );
        }
    }
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args();
    for flavor in [Flavor::CurrentThread, Flavor::MultiThread] {
        bench_flavor(&mut c, flavor);
    }
    c.final_summary();
    summary();
}
