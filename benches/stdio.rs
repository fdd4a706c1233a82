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
//! Each runs on a current-thread and on a multi-thread tokio runtime (as many workers as
//! cores). The calls are made by one task spawned on the runtime, as an agent's task would make
//! them, keeping N futures in flight in a `FuturesUnordered` (a closed loop: a call starts as
//! soon as one ends).
//!
//! kaged-mcp calls go through the standard stack exactly as the registry dispatches them:
//! `stack.clone().oneshot(call)` on `StackBuilder::new(StackSettings::new("demo")).build(client)`,
//! so every call pays Trace → Truncate (64 KiB cap: the 64 KiB result is cut to the cap and the
//! marker appended) → Timeout (30 s) → Retry. rmcp calls are `peer.call_tool(..)`.
//!
//! # Eras
//! `KAGED_STDIO_ERA=legacy|modern` (default `modern`) chooses the protocol era of both clients
//! (the demo server speaks both): `legacy` is `initialize` at `2025-11-25` (kaged-mcp with
//! `EraPreference::Legacy`), `modern` is 2026-07-28 (kaged-mcp with `EraPreference::Modern`:
//! every request carries the three `_meta` entries; rmcp with `ProtocolVersion::V_2026_07_28`,
//! its default). Run it once per era to compare them.
//!
//! # Two phases
//! 1. **criterion**: one benchmark per runtime, scenario and client (`current_thread/
//!    in_flight_16/kaged`, …); one iteration is N calls, so criterion's throughput is calls/s.
//! 2. **the ratio table**: criterion runs one client after the other, so a change in the
//!    machine's load between them skews their ratio. The table is measured apart, in
//!    interleaved rounds: per runtime and scenario, `support::ROUNDS` (10) rounds of about
//!    `support::ROUND_TIME` (200 ms) per client, alternating which client goes first. It prints, per client,
//!    the median calls/s over the rounds, the median latency over every call and the CPU time
//!    per call of the client (this process, all threads, from `/proc/self/task/*/schedstat`)
//!    and of its demo server, then the ratio kaged/rmcp of the medians against the issue's
//!    target. CPU per call does not depend on what else the machine runs; calls/s does.
//!    `KAGED_STDIO_ROUNDS=<n>` sets the number of rounds (0 skips the table);
//!    `KAGED_STDIO_ONLY=<text>` measures only the rows whose `placement/runtime/scenario`
//!    contains `<text>`. The table is not measured in test mode
//!    (`cargo test --benches`) nor with `--profile-time`.
//!
//! # Placement
//! Where the client and its server run matters more than anything they do on this kind of
//! machine (a 2-vCPU KVM guest): when each side sleeps on its own otherwise idle vCPU, every
//! round trip wakes a halted vCPU twice, which costs ~25 µs of CPU per wake-up on each side
//! here, ten times the per-call work of kaged-mcp's client, and which comes and goes with the
//! scheduler's choices (one run sequential p50 5.9 µs, the next 78 µs). The benchmark therefore
//! measures two placements, the same for both clients:
//! - `shared_core`: the benchmark process and (by inheritance) both servers are pinned to one
//!   CPU, as in a busy daemon whose client and server share a core: a wake-up is a context
//!   switch, so the figures measure the work per call. Criterion's phase runs in the first placement
//!   chosen, this one by default.
//! - `free`: no pinning, the scheduler places the threads; the ratio table only.
//!
//! `KAGED_STDIO_PLACEMENT=shared_core|free|both` (default `both`) chooses.
//!
//! Run with `cargo bench --bench stdio -- --warm-up-time 1 --measurement-time 3`.
//! `KAGED_STDIO_SERVER="<program> <args>…"` runs another server instead of the demo server (it
//! must answer `echo {message, pad}` like the demo server).

#[path = "support/mod.rs"]
mod support;

use support::{median_f64, median_u64, micros, round_calls, table_rounds, Flavor, Placement};

use std::future::Future;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use futures::stream::{FuturesUnordered, StreamExt};
use kaged_mcp::client::{ClientOptions, EraPreference, McpClient, ToolCall};
use kaged_mcp::stack::{StackBuilder, StackSettings, ToolService};
use kaged_mcp::transport::{StdioConfig, StdioTransport};
use nix::sched::sched_getaffinity;
use nix::unistd::Pid;
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
/// The server command both clients run: `$KAGED_STDIO_SERVER` (split on whitespace) when set,
/// else the demo server.
fn server_command() -> (String, Vec<String>) {
    if let Ok(command) = std::env::var("KAGED_STDIO_SERVER") {
        let mut words = command.split_whitespace().map(str::to_owned);
        if let Some(program) = words.next() {
            return (program, words.collect());
        }
    }
    (DEMO.to_owned(), vec!["demo-server".to_owned()])
}

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

// --- the two clients ---------------------------------------------------------------------------

/// Whether the run is in the modern era (`KAGED_STDIO_ERA`, default `modern`).
fn modern() -> bool {
    match std::env::var("KAGED_STDIO_ERA").as_deref() {
        Ok("legacy") => false,
        Ok("modern") | Err(_) => true,
        Ok(other) => panic!("KAGED_STDIO_ERA={other}: expected legacy or modern"),
    }
}

/// The arguments of one `echo` call.
fn arguments(pad: u64) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("message".into(), json!(MESSAGE));
    if pad > 0 {
        args.insert("pad".into(), json!(pad));
    }
    args
}

/// kaged-mcp: the full default stack over an `McpClient` on the demo server, started; and the
/// server's process id.
async fn kaged() -> (ToolService, Option<u32>) {
    let (program, args) = server_command();
    let transport = StdioTransport::new(StdioConfig::new(program).args(args));
    let era = if modern() {
        EraPreference::Modern
    } else {
        EraPreference::Legacy
    };
    let client = McpClient::new("demo", transport, ClientOptions::default().era(era));
    client
        .start()
        .await
        .expect("kaged-mcp starts the demo server");
    let pid = client.process_id();
    (
        StackBuilder::new(StackSettings::new("demo")).build(client),
        pid,
    )
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

/// rmcp: a client over `TokioChildProcess` on the demo server, initialized; and the server's
/// process id.
async fn rmcp() -> (RunningService<RoleClient, ClientConfig>, Option<u32>) {
    let (program, args) = server_command();
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let transport = TokioChildProcess::new(command).expect("rmcp spawns the demo server");
    let pid = transport.id();
    let service = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("rmcp-bench", "0"),
    )
    .with_protocol_version(if modern() {
        ProtocolVersion::V_2026_07_28
    } else {
        ProtocolVersion::V_2025_11_25
    })
    .serve(transport)
    .await
    .expect("rmcp initializes the demo server");
    (service, pid)
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
            u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
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

/// The clients of one runtime.
struct Clients {
    stack: ToolService,
    peer: Peer<RoleClient>,
    /// The process ids of the two demo servers, kaged-mcp's and rmcp's.
    servers: [Option<u32>; 2],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Kaged,
    Rmcp,
}

impl Clients {
    /// Runs `calls` calls of `scenario` on a task of `rt`, from outside the runtime.
    fn run(
        &self,
        rt: &Runtime,
        which: Which,
        scenario: Scenario,
        calls: u64,
    ) -> (Duration, Vec<u64>) {
        rt.block_on(self.run_async(which, scenario, calls))
    }

    /// Runs `calls` calls of `scenario` on a task of its own, as an agent's task would.
    fn run_async(
        &self,
        which: Which,
        scenario: Scenario,
        calls: u64,
    ) -> impl Future<Output = (Duration, Vec<u64>)> + 'static {
        let (n, pad) = (scenario.in_flight, scenario.pad);
        let stack = self.stack.clone();
        let peer = self.peer.clone();
        async move {
            let task =
                match which {
                    Which::Kaged => tokio::spawn(async move {
                        closed_loop(calls, n, || kaged_call(&stack, pad)).await
                    }),
                    Which::Rmcp => tokio::spawn(async move {
                        closed_loop(calls, n, || rmcp_call(&peer, pad)).await
                    }),
                };
            task.await.expect("the benchmark task")
        }
    }
}

// --- phase 1: criterion ------------------------------------------------------------------------

fn criterion_phase(c: &mut Criterion, rt: &Runtime, clients: &Clients, flavor: Flavor) {
    for scenario in SCENARIOS {
        rt.block_on(check_answers(&clients.stack, &clients.peer, scenario.pad));
        let mut group = c.benchmark_group(format!("{}/{}", flavor.name(), scenario.name));
        let n = scenario.in_flight as u64;
        group.throughput(Throughput::Elements(n));
        for (name, which) in [("kaged", Which::Kaged), ("rmcp", Which::Rmcp)] {
            group.bench_function(name, |b| {
                b.to_async(rt).iter_custom(|iters| {
                    let run = clients.run_async(which, scenario, iters * n);
                    async move { run.await.0 }
                });
            });
        }
        group.finish();
    }
}

// --- phase 2: the ratio table ------------------------------------------------------------------

/// What one client measured in the rounds of one runtime and scenario.
#[derive(Debug)]
struct Measured {
    /// Median calls/s over the rounds.
    rate: f64,
    /// Median latency over every call.
    p50: Duration,
    /// Median CPU time of this process (all threads) per call.
    client_cpu: Duration,
    /// Median CPU time of the server per call.
    server_cpu: Duration,
}

/// One line of the ratio table.
#[derive(Debug)]
struct Row {
    placement: Placement,
    flavor: Flavor,
    scenario: Scenario,
    kaged: Measured,
    rmcp: Measured,
}

/// CPU time so far of every thread of process `pid` (this process for `None`), in nanoseconds,
/// from `/proc/<pid>/task/*/schedstat`; 0 when unreadable.
fn cpu_ns(pid: Option<u32>) -> u64 {
    let dir = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_owned(),
    };
    let Ok(tasks) = std::fs::read_dir(dir) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn table_phase(
    rt: &Runtime,
    clients: &Clients,
    placement: Placement,
    flavor: Flavor,
    rounds: usize,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let only = std::env::var("KAGED_STDIO_ONLY").unwrap_or_default();
    for scenario in SCENARIOS {
        let label = format!("{}/{}/{}", placement.name(), flavor.name(), scenario.name);
        if !label.contains(&only) {
            continue;
        }
        let which = [Which::Kaged, Which::Rmcp];
        // Warm up and size the rounds: one short run each.
        let size = which.map(|w| {
            let calls = 20 * scenario.in_flight as u64;
            let (elapsed, _) = clients.run(rt, w, scenario, calls);
            round_calls(calls as f64 / elapsed.as_secs_f64(), scenario.in_flight)
        });
        let mut rates = [Vec::new(), Vec::new()];
        let mut latencies = [Vec::new(), Vec::new()];
        let mut client_cpu = [Vec::new(), Vec::new()];
        let mut server_cpu = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let (client_before, server_before) = (cpu_ns(None), cpu_ns(clients.servers[i]));
                let (elapsed, lat) = clients.run(rt, which[i], scenario, size[i]);
                let (client_after, server_after) = (cpu_ns(None), cpu_ns(clients.servers[i]));
                rates[i].push(size[i] as f64 / elapsed.as_secs_f64());
                latencies[i].extend(lat);
                client_cpu[i].push(client_after.saturating_sub(client_before) / size[i]);
                server_cpu[i].push(server_after.saturating_sub(server_before) / size[i]);
            }
        }
        let mut measured = (0..2).map(|i| Measured {
            rate: median_f64(&mut rates[i]),
            p50: Duration::from_nanos(median_u64(&mut latencies[i])),
            client_cpu: Duration::from_nanos(median_u64(&mut client_cpu[i])),
            server_cpu: Duration::from_nanos(median_u64(&mut server_cpu[i])),
        });
        let row = Row {
            placement,
            flavor,
            scenario,
            kaged: measured.next().expect("two clients"),
            rmcp: measured.next().expect("two clients"),
        };
        eprintln!(
            "table: {}/{}/{}: kaged {:.0} calls/s, rmcp {:.0} calls/s",
            placement.name(),
            flavor.name(),
            scenario.name,
            row.kaged.rate,
            row.rmcp.rate
        );
        rows.push(row);
    }
    rows
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "Calls/s: median over the rounds; p50: median latency of one call; CPU: client process"
    );
    println!("(all threads) and demo server, per call. Ratio: kaged/rmcp calls/s.");
    println!(
        "Era: {} (KAGED_STDIO_ERA).",
        if modern() {
            "modern 2026-07-28"
        } else {
            "legacy 2025-11-25"
        }
    );
    println!();
    println!(
        "| placement | runtime | scenario | kaged calls/s | kaged p50 | kaged CPU client / server | \
         rmcp calls/s | rmcp p50 | rmcp CPU client / server | kaged/rmcp | target | met |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for row in rows {
        let ratio = row.kaged.rate / row.rmcp.rate;
        let (k, r) = (&row.kaged, &row.rmcp);
        println!(
            "| {} | {} | {} | {:.0} | {:.1} µs | {:.2} / {:.2} µs | {:.0} | {:.1} µs | {:.2} / {:.2} µs \
             | {:.2} | {:.2} | {} |",
            row.placement.name(),
            row.flavor.name(),
            row.scenario.name,
            k.rate,
            micros(k.p50),
            micros(k.client_cpu),
            micros(k.server_cpu),
            r.rate,
            micros(r.p50),
            micros(r.client_cpu),
            micros(r.server_cpu),
            ratio,
            row.scenario.target,
            if ratio >= row.scenario.target {
                "yes"
            } else {
                "no"
            },
        );
    }
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args();
    let rounds = table_rounds("KAGED_STDIO");
    let all_cpus = sched_getaffinity(Pid::from_raw(0)).expect("sched_getaffinity");
    let mut rows = Vec::new();
    for (i, placement) in Placement::chosen("KAGED_STDIO").into_iter().enumerate() {
        placement.apply(&all_cpus);
        for flavor in [Flavor::CurrentThread, Flavor::MultiThread] {
            // Built after `apply`, so its threads and the servers inherit the placement.
            let rt = flavor.runtime();
            let ((stack, kaged_pid), (rmcp_service, rmcp_pid)) =
                rt.block_on(async { (kaged().await, rmcp().await) });
            let clients = Clients {
                stack,
                peer: rmcp_service.peer().clone(),
                servers: [kaged_pid, rmcp_pid],
            };
            if i == 0 {
                criterion_phase(&mut c, &rt, &clients, flavor);
            }
            if rounds > 0 {
                rows.extend(table_phase(&rt, &clients, placement, flavor, rounds));
            }
            rt.block_on(async {
                drop(clients);
                let _ = rmcp_service.cancel().await;
            });
        }
    }
    // Give the main thread back every CPU it started with.
    Placement::Free.apply(&all_cpus);
    c.final_summary();
    if !rows.is_empty() {
        print_table(&rows);
    }
}
