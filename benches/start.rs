//! The start path of the library alone (issue 41): a [`Session`] of 16 bundled demo servers
//! (`kaged-mcp demo-server`, stdio) embedded in a minimal tokio program (this one: a
//! multi-thread runtime, as `#[tokio::main]` builds it, and nothing else).
//!
//! Prints, and checks:
//! - **peak memory**: this process's peak resident set (`VmHWM`) once the first session has
//!   its full catalog, and after every run (printed; the bound is the issue's, for the
//!   command line: see benches/README.md);
//! - **time to a full catalog**: from `Session::start_with` to its return with every server's
//!   tools registered (spawning, era probe, `tools/list`, catalog), the median of the runs; checked
//!   at ≤ 40 ms when benchmarking;
//! - **idle wake-ups**: with the 16 servers started and nothing asked of them, the context
//!   switches of this process's threads while the main thread sleeps (the runtime's worker and
//!   blocking threads and whatever the session runs on them); checked at 0 when benchmarking.
//!
//! A plain binary (`harness = false`): `cargo bench --bench start` runs 10 starts and idles
//! 20 s; under `cargo test --benches` 2 starts and 1 s, and the figures are only printed (a
//! debug build on a busy CI machine proves neither bound).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use kaged_mcp::config::Sources;
use kaged_mcp::{Session, SessionOptions};

const SERVERS: usize = 16;
const DEMO: &str = env!("CARGO_BIN_EXE_kaged-mcp");
/// The bound on 16 stdio servers to a full catalog.
const CATALOG_LIMIT: Duration = Duration::from_millis(40);

/// `VmHWM` or `VmRSS` of this process, in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The context switches of every thread of this process but `except` (the main thread),
/// voluntary and not.
fn switches(except: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| t.file_name() != except)
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .map(|s| {
            s.lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

fn project() -> String {
    let mut yaml = String::from("mcp:\n");
    for i in 0..SERVERS {
        yaml.push_str(&format!(
            "  demo{i:02}:\n    transport: stdio\n    command: [{DEMO:?}, demo-server]\n"
        ));
    }
    yaml
}

async fn start() -> Result<(Session, Duration), String> {
    let config = Sources::new(project())
        .load()
        .map_err(|e| format!("configuration: {e}"))?;
    let started = Instant::now();
    let session = Session::start_with(config, SessionOptions::new())
        .await
        .map_err(|e| format!("session: {e}"))?;
    let elapsed = started.elapsed();
    let tools = session.registry().names().len();
    let failed = session.start_failures();
    if !failed.is_empty() || tools == 0 || tools % SERVERS != 0 {
        return Err(format!(
            "{tools} tools registered; {} server(s) failed",
            failed.len()
        ));
    }
    Ok((session, elapsed))
}

fn main() -> ExitCode {
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let (runs, idle) = if benchmarking {
        (10, Duration::from_secs(20))
    } else {
        (2, Duration::from_secs(1))
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("start: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut times = Vec::new();
    let mut tools = 0;
    let mut first_peak = 0;
    let mut wakes = 0;
    for run in 0..runs {
        let (session, elapsed) = match rt.block_on(start()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("start: FAILED: {e}");
                return ExitCode::FAILURE;
            }
        };
        times.push(elapsed);
        tools = session.registry().names().len();
        if run == 0 {
            first_peak = status_kib("VmHWM:");
            // Idle: the main thread sleeps outside the runtime; nothing else should run.
            let main = std::process::id().to_string();
            let before = switches(&main);
            std::thread::sleep(idle);
            wakes = switches(&main) - before;
        }
        rt.block_on(session.shutdown());
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "{SERVERS} demo servers to a full catalog ({tools} tools): median {median:.1?} of {runs} (min {:.1?}, max {:.1?})",
        times[0],
        times[times.len() - 1]
    );
    println!(
        "peak resident set (VmHWM): {first_peak} KiB after the first session, {} KiB after {runs}",
        status_kib("VmHWM:")
    );
    println!("wake-ups of the runtime's threads in {idle:.0?} idle: {wakes}");
    let mut failed = false;
    if benchmarking && wakes != 0 {
        eprintln!("start: FAILED: {wakes} wake-ups while idle");
        failed = true;
    }
    if benchmarking && median > CATALOG_LIMIT {
        eprintln!("start: FAILED: median {median:.1?} over {CATALOG_LIMIT:?}");
        failed = true;
    }
    if failed {
        return ExitCode::FAILURE;
    }
    println!("start: ok");
    ExitCode::SUCCESS
}
