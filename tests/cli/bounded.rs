//! The bounded wait every CLI test uses (`tests/common/cli.rs`): a child still running at its
//! bound is killed and fails its test, instead of stalling CI.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::cli::{wait_within, OutputBounded};

/// A child that outlives the bound is killed, and the wait panics with what it printed.
#[test]
fn a_child_outliving_its_bound_is_killed_and_fails_the_test() {
    let child = Command::new("sh")
        .args(["-c", "echo started; echo on-stderr >&2; exec sleep 600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let panicked = std::panic::catch_unwind(|| wait_within(child, Duration::from_millis(500)))
        .expect_err("the wait must fail the test");
    let message = panicked
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    assert!(message.contains("did not exit within 500ms"), "{message}");
    assert!(message.contains("started"), "{message}");
    assert!(message.contains("on-stderr"), "{message}");
    // Killed and reaped: no process with that id is left (a zombie would still be in /proc).
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} still exists"
    );
}

/// A child that exits in time gives its status and its whole output, even past a pipe's size.
#[test]
fn a_child_exiting_in_time_gives_its_status_and_output() {
    let out = Command::new("sh")
        .args(["-c", "head -c 200000 /dev/zero; echo err >&2; exit 3"])
        .output_bounded();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout.len(), 200_000);
    assert_eq!(out.stderr, b"err\n");
}
