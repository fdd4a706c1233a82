//! Running the built `kaged-mcp` binary from a test: `kaged()` for a command of its own,
//! [`run`] for `kaged-mcp <command> --project DIR <args…>` with its exit code and output, and
//! [`shell`] to feed `kaged-mcp shell` its stdin.
#![allow(dead_code)] // each test crate uses a different part of this module

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

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
        .output()
        .unwrap()
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
    child.wait_with_output().unwrap().into()
}
