//! Running the built `kaged-mcp` binary from a test: `kaged()` for a command of its own,
//! [`run`] for `kaged-mcp <command> --project DIR <args…>` with its exit code and output, and
//! [`shell`] to feed `kaged-mcp shell` its stdin. Every run is waited on with a bound
//! ([`BOUND`]): a child still running then is killed and its test fails with what it had printed,
//! so a hung CLI fails its test instead of stalling CI. A test spawning the binary itself waits
//! with [`wait_bounded`] (or `Command::output_bounded`, from [`OutputBounded`]).
#![allow(dead_code)] // each test crate uses a different part of this module

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one run of the binary may take before its test kills it and fails: far above any
/// run's time on a loaded two-core machine (the slowest wait a test provokes on purpose is a
/// 30-second timeout), far below CI's own limit.
pub(crate) const BOUND: Duration = Duration::from_secs(120);

/// `Command::output` with a bound: see [`wait_bounded`].
pub(crate) trait OutputBounded {
    /// Runs the command (stdin from `/dev/null`, stdout and stderr captured, as `output`
    /// does) and waits for it within [`BOUND`].
    fn output_bounded(&mut self) -> Output;
}

impl OutputBounded for Command {
    fn output_bounded(&mut self) -> Output {
        let child = self
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {self:?}: {e}"));
        wait_bounded(child)
    }
}

/// `Child::wait_with_output` within [`BOUND`]; see [`wait_within`].
pub(crate) fn wait_bounded(child: Child) -> Output {
    wait_within(child, BOUND)
}

/// `Child::wait_with_output`, but a child still running after `bound` is killed and the test
/// panics with the output read so far. The pipes are read on their own threads (a child blocked
/// on a full pipe would otherwise never exit), and reading them is bounded too: a grandchild
/// (an MCP server the CLI started) may hold them open after the child is gone.
pub(crate) fn wait_within(mut child: Child, bound: Duration) -> Output {
    let deadline = Instant::now() + bound;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = loop {
        match child.try_wait().expect("poll the child") {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => break None,
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        let grace = Instant::now() + Duration::from_secs(1);
        let (out, err) = (stdout.collect(grace), stderr.collect(grace));
        panic!(
            "the child (pid {}) did not exit within {bound:?} and was killed\n\
             --- stdout ---\n{}\n--- stderr ---\n{}",
            child.id(),
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&err),
        );
    };
    // What the child wrote before exiting is in the pipe already; a grandchild holding the pipe
    // open gets until the deadline (and one second more) to close it.
    let grace = deadline.max(Instant::now()) + Duration::from_secs(1);
    Output {
        status,
        stdout: stdout.collect(grace),
        stderr: stderr.collect(grace),
    }
}

/// A pipe being read to its end on a thread of its own.
struct Drain {
    /// Everything, once the pipe closed (`None`: there was no pipe).
    done: Option<mpsc::Receiver<Vec<u8>>>,
    /// What was read so far.
    seen: Arc<Mutex<Vec<u8>>>,
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> Drain {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let Some(mut pipe) = pipe else {
        return Drain { done: None, seen };
    };
    let (tx, rx) = mpsc::channel();
    let partial = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => partial.lock().unwrap().extend_from_slice(&buf[..n]),
            }
        }
        let all = std::mem::take(&mut *partial.lock().unwrap());
        let _ = tx.send(all);
    });
    Drain {
        done: Some(rx),
        seen,
    }
}

impl Drain {
    /// Everything the pipe carried if it closes before `until`, else what was read so far.
    fn collect(self, until: Instant) -> Vec<u8> {
        let Some(rx) = self.done else {
            return Vec::new();
        };
        match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(all) => all,
            Err(_) => self.seen.lock().unwrap().clone(),
        }
    }
}

/// The built binary, with `XDG_STATE_HOME` where no directory can be made (under
/// `/dev/null`): every run starts as the first, remembering no server's era (a test that means
/// to share state between runs sets its own), and no test writes to the operator's state
/// directory.
pub(crate) fn kaged() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kaged-mcp"));
    command.env("XDG_STATE_HOME", NO_STATE);
    command
}

/// An `XDG_STATE_HOME` under which nothing can be read or written.
pub(crate) const NO_STATE: &str = "/dev/null/state";

/// What a run printed and how it exited.
#[derive(Debug)]
pub(crate) struct Out {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl From<std::process::Output> for Out {
    fn from(out: std::process::Output) -> Self {
        Out {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// `kaged-mcp <args[0]> --project <dir> <args[1..]>`.
pub(crate) fn run(args: &[&str], dir: &Path) -> Out {
    run_env(args, dir, &[])
}

/// [`run`] with `env` added to the binary's environment.
pub(crate) fn run_env(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Out {
    kaged()
        .args(&args[..1])
        .arg("--project")
        .arg(dir)
        .args(&args[1..])
        .envs(env.iter().copied())
        .output_bounded()
        .into()
}

/// A project directory holding `project.yaml` and `local.toml` with these texts.
pub(crate) fn project(yaml: &str, local: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("project.yaml"), yaml).unwrap();
    std::fs::write(d.path().join("local.toml"), local).unwrap();
    d
}

/// `kaged-mcp shell --project <dir> <extra…>` with `lines` on its stdin (each ended by `\n`),
/// run to its end.
pub(crate) fn shell(dir: &Path, extra: &[&str], lines: &[&str]) -> Out {
    let mut child = kaged()
        .args(["shell", "--project"])
        .arg(dir)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for line in lines {
        input.push_str(line);
        input.push('\n');
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    wait_bounded(child).into()
}
