//! What the round-trip benchmarks (`stdio.rs`, `http.rs`) share: where their threads run
//! ([`Placement`]), which tokio runtime ([`Flavor`]), how many interleaved rounds to run and how
//! long one is, and the medians of the table. Each bench names its own environment variables
//! (`KAGED_STDIO_*`, `KAGED_HTTP_*`).
#![allow(dead_code)] // each bench uses a different part

use std::time::Duration;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use tokio::runtime::Runtime;

/// Rounds of the ratio table unless `<PREFIX>_ROUNDS` says otherwise.
pub(crate) const ROUNDS: usize = 10;
/// About how long one client runs in one round.
pub(crate) const ROUND_TIME: Duration = Duration::from_millis(200);

/// Where the benchmark's threads (servers included) may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Everything pinned to one CPU.
    SharedCore,
    /// The scheduler's choice, on every CPU the process may use.
    Free,
}

impl Placement {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Placement::SharedCore => "shared_core",
            Placement::Free => "free",
        }
    }

    /// The placements asked for by `$<prefix>_PLACEMENT` (both by default).
    pub(crate) fn chosen(prefix: &str) -> Vec<Placement> {
        let var = format!("{prefix}_PLACEMENT");
        match std::env::var(&var).as_deref() {
            Ok("shared_core") => vec![Placement::SharedCore],
            Ok("free") => vec![Placement::Free],
            Ok("both") | Err(_) => vec![Placement::SharedCore, Placement::Free],
            Ok(other) => panic!("{var}={other}: say shared_core, free or both"),
        }
    }

    /// Sets the calling thread's CPU affinity, which the runtime's threads and the servers
    /// started afterwards inherit. `all` is the set the process started with.
    pub(crate) fn apply(self, all: &CpuSet) {
        let set = match self {
            Placement::Free => *all,
            Placement::SharedCore => {
                // The last CPU the process may use (CPU 0 takes most device interrupts).
                let cpu = (0..CpuSet::count())
                    .rev()
                    .find(|&cpu| all.is_set(cpu).unwrap_or(false))
                    .expect("the process may run on some CPU");
                let mut one = CpuSet::new();
                one.set(cpu).expect("a CPU index in range");
                one
            }
        };
        sched_setaffinity(Pid::from_raw(0), &set).expect("sched_setaffinity");
    }
}

/// A tokio runtime flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    CurrentThread,
    MultiThread,
}

impl Flavor {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "current_thread",
            Flavor::MultiThread => "multi_thread",
        }
    }

    pub(crate) fn runtime(self) -> Runtime {
        let mut builder = match self {
            Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
            Flavor::MultiThread => tokio::runtime::Builder::new_multi_thread(),
        };
        builder.enable_all().build().expect("a tokio runtime")
    }
}

pub(crate) fn median_f64(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

pub(crate) fn median_u64(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

/// The calls of one round for a client that made `rate` calls/s: about [`ROUND_TIME`], whole
/// multiples of the calls in flight.
pub(crate) fn round_calls(rate: f64, in_flight: usize) -> u64 {
    let n = in_flight as u64;
    let calls = (rate * ROUND_TIME.as_secs_f64()) as u64;
    (calls / n).max(4) * n
}

pub(crate) fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Rounds of the ratio table: 0 unless the binary runs as a benchmark (not under
/// `cargo test --benches`, `--list` or `--profile-time`), else `$<prefix>_ROUNDS` or
/// [`ROUNDS`].
pub(crate) fn table_rounds(prefix: &str) -> usize {
    let args: Vec<String> = std::env::args().collect();
    let benchmarking = args.iter().any(|a| a == "--bench")
        && !args
            .iter()
            .any(|a| a == "--test" || a == "--list" || a.starts_with("--profile-time"));
    if !benchmarking {
        return 0;
    }
    std::env::var(format!("{prefix}_ROUNDS"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ROUNDS)
}
