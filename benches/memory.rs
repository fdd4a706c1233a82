//! The client's peak memory when a server answers a `tools/call` with one 1 GiB line.
//!
//! The server is `tests/servers/faulty/faulty.py --mode huge`, a separate `python3` process that
//! pours the line into the pipe in 1 MiB chunks (it never holds it whole). The call goes through
//! kaged-mcp's full default stack with the default client options (16 MiB frame limit). The
//! benchmark resets this process's peak resident set (`/proc/self/clear_refs`) just before the
//! call, reads `VmHWM` from `/proc/self/status` after it, and checks that:
//!
//! - the call ends with [`ErrorKind::FrameTooLarge`](kaged_mcp::client::ErrorKind::FrameTooLarge) naming the server, the limit and the
//!   request (a clear error, not a hang or a crash);
//! - the peak resident set stays under 64 MiB;
//! - the stream stays in sync: the next call on the same session succeeds.
//!
//! It is a plain binary (`harness = false`, no criterion): `cargo bench --bench memory`.
//! Under `cargo test --benches` (no `--bench` argument) it pours 64 MiB instead of 1 GiB, to
//! stay quick; `KAGED_MEMORY_BYTES=<n>` sets the size either way.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use kaged_mcp::client::{ClientError, ClientOptions, McpClient, ToolCall};
use kaged_mcp::stack::{StackBuilder, StackSettings};
use kaged_mcp::transport::{StdioConfig, StdioTransport};
use serde_json::json;
use tower::ServiceExt;

const MIB: u64 = 1024 * 1024;
/// The bound the issue sets on the client's peak resident set.
const PEAK_LIMIT: u64 = 64 * MIB;

/// A `VmHWM:` or `VmRSS:` figure of this process, in bytes.
fn status_bytes(field: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("/proc/self/status: {e}"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .ok_or_else(|| format!("/proc/self/status: no {field} line"))?;
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("/proc/self/status: unreadable {line:?}"))?;
    Ok(kib * 1024)
}

/// Resets `VmHWM` to the current resident set (Linux ≥ 4.0).
fn reset_peak() -> Result<(), String> {
    std::fs::write("/proc/self/clear_refs", "5").map_err(|e| format!("/proc/self/clear_refs: {e}"))
}

fn size() -> u64 {
    if let Some(n) = std::env::var("KAGED_MEMORY_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    let benchmarking = std::env::args().any(|a| a == "--bench");
    if benchmarking {
        1024 * MIB
    } else {
        64 * MIB
    }
}

async fn run() -> Result<(), String> {
    let bytes = size();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers/faulty/faulty.py");
    let config = StdioConfig::new("python3").args([
        script.to_string_lossy().into_owned(),
        "--mode".into(),
        "huge".into(),
    ]);
    let client = McpClient::new(
        "huge",
        StdioTransport::new(config),
        ClientOptions::default(),
    );
    client
        .start()
        .await
        .map_err(|e| format!("starting the server: {e}"))?;
    let stack = StackBuilder::new(StackSettings::new("huge")).build(client.clone());

    let rss_before = status_bytes("VmRSS:")?;
    reset_peak()?;
    let start = Instant::now();
    let huge = ToolCall::new("huge").with_json_arguments(json!({ "bytes": bytes }));
    let outcome = stack.clone().oneshot(huge).await;
    let elapsed = start.elapsed();
    let peak = status_bytes("VmHWM:")?;

    let err = match outcome {
        Ok(result) => {
            return Err(format!(
                "expected a frame-limit error, got a result of {} bytes (truncated: {})",
                result.size(),
                result.truncated
            ))
        }
        Err(e) => e,
    };
    let detail = match ClientError::find(&*err) {
        Some(e) if e.kind() == kaged_mcp::client::ErrorKind::FrameTooLarge => e.to_string(),
        _ => return Err(format!("expected a FrameTooLarge ClientError, got: {err}")),
    };
    println!(
        "line of {bytes} bytes ({} MiB) poured in {elapsed:.2?}",
        bytes / MIB
    );
    println!("error: {detail}");
    println!(
        "resident before the call: {:.1} MiB; peak during it (VmHWM): {:.1} MiB; limit {} MiB",
        rss_before as f64 / MIB as f64,
        peak as f64 / MIB as f64,
        PEAK_LIMIT / MIB
    );

    let echo = ToolCall::new("echo").with_json_arguments(json!({ "message": "still in sync" }));
    let next = stack
        .oneshot(echo)
        .await
        .map_err(|e| format!("the call after the huge line failed: {e}"))?;
    println!("next call on the same session: {:?}", next.joined_text());
    client.shutdown().await;

    if peak >= PEAK_LIMIT {
        return Err(format!(
            "peak resident set {:.1} MiB is over {} MiB",
            peak as f64 / MIB as f64,
            PEAK_LIMIT / MIB
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("memory: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run()) {
        Ok(()) => {
            println!("memory: ok");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("memory: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
