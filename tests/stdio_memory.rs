//! Bounded memory whatever a stdio server writes: a 100 MiB stdout line (over the 16 MiB frame
//! limit), a 20 MiB stderr flood in lines, and a 20 MiB stderr line. The peak resident memory
//! of this test process (`VmHWM`, reset through `/proc/self/clear_refs` before each phase) must
//! stay far below what buffering the data would take.
//!
//! One test, phases in sequence, alone in its binary: nothing else runs in this process.

#[path = "common/peers.rs"]
mod peers;

use kaged_mcp::client::{ClientError, ClientOptions, ErrorKind, McpClient, ToolCall};
use kaged_mcp::protocol::RequestId;
use kaged_mcp::transport::{StdioConfig, StdioTransport, DEFAULT_FRAME_LIMIT};
use kaged_mcp_layers::retry::NotSent;
use peers::Fault;
use serde_json::json;
use tower::ServiceExt;

const MIB: u64 = 1024 * 1024;

/// Peak resident set size of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Resets the peak to the current resident size (Linux ≥ 4.0); `false` if not allowed.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn faulty(mode: Fault) -> McpClient {
    let config = StdioConfig::from_command(&peers::faulty(mode)).unwrap();
    McpClient::new(
        format!("faulty-{}", mode.as_str()),
        StdioTransport::new(config),
        ClientOptions::default(),
    )
}

fn echo(message: &str) -> ToolCall {
    ToolCall::new("echo").with_json_arguments(json!({ "message": message }))
}

#[tokio::test]
async fn memory_stays_bounded_for_a_huge_line_and_stderr_floods() {
    assert_eq!(DEFAULT_FRAME_LIMIT as u64, 16 * MIB);

    // --- a 100 MiB line on stdout -------------------------------------------------------------
    let client = faulty(Fault::Huge);
    client.start().await.unwrap();
    let can_reset = reset_peak();
    // Without the reset the bounds cannot be asserted: a skip no setting catches, so under
    // CI it is a failure (issue 40, point 7), as benches/memory.rs fails.
    assert!(
        can_reset || std::env::var_os("CI").is_none(),
        "/proc/self/clear_refs is not writable here, so the memory bounds cannot be checked; \
         CI is set, so that is a failure"
    );
    if !can_reset {
        eprintln!("SKIPPED: the memory bounds (/proc/self/clear_refs is not writable)");
    }
    let before = peak_rss();
    let huge = ToolCall::new("huge").with_json_arguments(json!({ "bytes": 100 * MIB }));
    let err = client.clone().oneshot(huge).await.unwrap_err();
    let grew = peak_rss().saturating_sub(before);
    assert!(!NotSent::in_chain(&*err));
    let failed = ClientError::find(&*err).expect("a ClientError");
    assert_eq!(failed.kind(), ErrorKind::FrameTooLarge, "{failed}");
    assert_eq!(failed.server(), "faulty-huge");
    assert_eq!(failed.limit(), Some(DEFAULT_FRAME_LIMIT));
    let len = failed.frame_len().unwrap();
    assert!(len > 100 * MIB, "{len}");
    let request = failed.request().expect("the id was found in the line");
    assert_eq!(request.method, "tools/call");
    assert!(matches!(request.id, RequestId::Number(_)));
    eprintln!(
        "huge line: peak grew by {} KiB (reset {can_reset})",
        grew / 1024
    );
    if can_reset {
        assert!(
            grew < 48 * MIB,
            "peak grew by {} MiB for a 100 MiB line",
            grew / MIB
        );
    }
    // The stream is still in sync: the next call is answered.
    let answer = client
        .clone()
        .oneshot(echo("after the flood"))
        .await
        .unwrap();
    assert_eq!(answer.joined_text(), "Echo: after the flood");
    client.shutdown().await;

    // --- 20 MiB of stderr in lines, then one 20 MiB stderr line --------------------------------
    for mode in [Fault::StderrFlood, Fault::StderrOneLine] {
        let client = faulty(mode);
        reset_peak();
        let before = peak_rss();
        client.start().await.unwrap();
        let answer = client.clone().oneshot(echo("quiet now")).await.unwrap();
        let grew = peak_rss().saturating_sub(before);
        assert_eq!(answer.joined_text(), "Echo: quiet now");
        eprintln!("{mode:?}: peak grew by {} KiB", grew / 1024);
        if can_reset {
            assert!(grew < 16 * MIB, "{mode:?}: peak grew by {} MiB", grew / MIB);
        }
        client.shutdown().await;
    }
}
