//! The stdio transport: a supervised child process speaking newline-delimited JSON.
//!
//! [`StdioTransport::connect`] spawns the configured command in its own process group
//! (`process_group(0)`), with `env` added over the daemon's environment and `cwd` as given
//! (already resolved against the project root and checked by the configuration). Four tasks
//! serve the connection:
//!
//! - the **reader** owns stdout: frames go straight to the session's handler
//!   (module `reader`); an over-long line is discarded up to its newline and reported with its head
//!   and tail, so the stream stays in sync and memory stays bounded;
//! - the **writer** sends what callers left queued (module `writer`); callers write eagerly
//!   themselves, so a lone request needs no task hop;
//! - the **stderr drain** logs each line at DEBUG and keeps the last
//!   [`StdioConfig::stderr_tail_bytes`] for errors (module `stderr`);
//! - the **exit watcher** reaps the child; when it exits, the rest of its process group (a
//!   grandchild holding stdout open, say) is killed, so the reader sees end of file.
//!
//! When stdout ends, the handler's `on_closed` gets the exit status and the stderr tail.
//!
//! # Shutdown
//! [`Connection::close`] writes what is still queued (a timed-out call's
//! `notifications/cancelled`) and closes stdin, both within [`StdioConfig::shutdown_grace`]
//! together with the wait for the exit, then sends SIGTERM to the process group, waits again,
//! then SIGKILL; the child is reaped by the exit watcher.
//! Dropping the connection sends SIGKILL to the group at once; outside a runtime it also reaps
//! the child synchronously. No orphans, no zombies.
//!
//! A descendant that left the group (`setsid`) is ended too, after the group, with the same
//! SIGTERM and SIGKILL: the server's descendants as `/proc` shows them when the shutdown
//! starts, and, when the process is a child subreaper ([`become_subreaper`]: the command line
//! is, a daemon opts in), the orphans of the server it adopted, found by the tag every server
//! gets in its environment (`KAGED_MCP_STDIO_TAG`). When the server exits on its own, the
//! orphans adopted so far are ended likewise. SIGKILL of the client itself ends nothing: the
//! server sees end of file on stdin, and a descendant outside its group runs on under init
//! (or the next subreaper).
//!
//! # Example
//! ```no_run
//! use kaged_mcp::client::{ClientOptions, McpClient};
//! use kaged_mcp::transport::{StdioConfig, StdioTransport};
//!
//! # async fn run() -> Result<(), kaged_mcp::client::ClientError> {
//! let config = StdioConfig::new("node")
//!     .args(["server.js", "stdio"])
//!     .env([("LOG_LEVEL", "warn")]);
//! let client = McpClient::new("everything", StdioTransport::new(config), ClientOptions::default());
//! client.start().await?;
//! # Ok(()) }
//! ```

mod leftovers;
mod reader;
mod stderr;
mod writer;

pub use self::leftovers::become_subreaper;

/// The line reader, for the fuzz targets in `fuzz/` and their regression tests only: not part
/// of the API, no stability promise.
#[doc(hidden)]
pub use self::reader::{LineReader, OVERSIZE_HEAD, OVERSIZE_TAIL};

use std::fmt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use self::stderr::StderrTail;
use self::writer::{Gathering, StdioOutbound};
use super::{
    BoxFuture, CloseReason, ConnectContext, Connection, InboundHandler, ProcessExit, Transport,
    TransportError,
};

/// The default number of stderr bytes kept for errors: 4 KiB.
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 4 * 1024;
/// The default time a server gets to exit after stdin closes, and again after SIGTERM.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// The most bytes that may wait for a server that does not read its stdin.
pub const DEFAULT_MAX_QUEUED: usize = 64 * 1024 * 1024;

/// The stdout pipe size asked of the kernel (the default is 64 KiB).
const STDOUT_PIPE_BYTES: i32 = 1024 * 1024;

/// How to run a stdio MCP server.
///
/// Build it with [`StdioConfig::new`] and the setters; every field is public for a struct
/// literal with `..StdioConfig::new(program)`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The program to run (looked up on `PATH` when it has no slash).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory, already resolved and checked; `None` inherits the daemon's.
    pub cwd: Option<PathBuf>,
    /// Variables added over the daemon's environment. Values may be secrets: they never appear
    /// in `Debug` output, logs or errors.
    pub env: Vec<(String, String)>,
    /// How many of the last stderr bytes are kept for errors (default 4 KiB).
    pub stderr_tail_bytes: usize,
    /// The longest stdout line accepted, in bytes; `None` takes the client's
    /// [`ClientOptions::frame_limit`](crate::client::ClientOptions::frame_limit).
    pub frame_limit: Option<usize>,
    /// How long the server gets to take what is queued and exit after stdin closes (one period
    /// for both), and again after SIGTERM.
    pub shutdown_grace: Duration,
}

impl StdioConfig {
    /// Runs `program` without arguments, in the daemon's directory and environment.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES,
            frame_limit: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }

    /// Runs `command[0]` with the rest as arguments; `None` for an empty command.
    pub fn from_command<S: AsRef<str>>(command: &[S]) -> Option<Self> {
        let (program, args) = command.split_first()?;
        Some(Self::new(program.as_ref()).args(args.iter().map(AsRef::as_ref)))
    }

    /// Sets the arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the working directory.
    #[must_use]
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the variables added over the daemon's environment.
    #[must_use]
    pub fn env<I, K, V>(mut self, env: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self
    }

    /// Sets how many stderr bytes are kept for errors.
    #[must_use]
    pub fn stderr_tail_bytes(mut self, bytes: usize) -> Self {
        self.stderr_tail_bytes = bytes;
        self
    }

    /// Sets the frame limit of this server, overriding the client's.
    #[must_use]
    pub fn frame_limit(mut self, bytes: usize) -> Self {
        self.frame_limit = Some(bytes);
        self
    }

    /// Sets the shutdown grace period.
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self.env.iter().map(|(k, _)| format!("{k}=***")).collect();
        f.debug_struct("StdioConfig")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &env)
            .field("stderr_tail_bytes", &self.stderr_tail_bytes)
            .field("frame_limit", &self.frame_limit)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish()
    }
}

/// Runs an MCP server as a child process. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct StdioTransport {
    config: Arc<StdioConfig>,
}

impl StdioTransport {
    /// A transport that runs `config`.
    pub fn new(config: StdioConfig) -> Self {
        Self {
            config: Arc::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &StdioConfig {
        &self.config
    }
}

impl Transport for StdioTransport {
    fn connect(
        &self,
        ctx: ConnectContext,
    ) -> BoxFuture<'static, Result<Box<dyn Connection>, TransportError>> {
        let config = Arc::clone(&self.config);
        Box::pin(async move {
            spawn(&config, ctx)
                .await
                .map(|c| Box::new(c) as Box<dyn Connection>)
        })
    }

    fn peer(&self) -> super::Peer {
        super::Peer::Pipe
    }

    fn describe(&self) -> String {
        let mut text = format!("stdio: {}", self.config.program);
        for arg in &self.config.args {
            text.push(' ');
            text.push_str(arg);
        }
        text
    }

    fn speaks_modern(&self) -> bool {
        true
    }
}

/// What the exit watcher learned.
#[derive(Debug, Clone)]
enum ExitState {
    Running,
    Exited(ExitStatus),
    /// Reaped elsewhere, or `wait` failed.
    Unknown(String),
}

/// What the tasks of one connection share.
struct Proc {
    server: Arc<str>,
    pid: i32,
    /// The tag in the server's environment (see the `leftovers` module).
    tag: String,
    grace: Duration,
    exit: watch::Sender<ExitState>,
    stderr_tail: Arc<Mutex<StderrTail>>,
    stderr_done: watch::Sender<bool>,
    reader_done: watch::Sender<bool>,
    /// The client asked for the end (close or drop).
    requested: AtomicBool,
    /// `on_closed` was called.
    closed: AtomicBool,
    handler: Arc<dyn InboundHandler>,
    outbound: Arc<StdioOutbound>,
}

impl Proc {
    fn exited(&self) -> bool {
        !matches!(*self.exit.borrow(), ExitState::Running)
    }

    /// Waits until the child is reaped, at most `limit`; `true` if it was.
    async fn wait_exit(&self, limit: Duration) -> bool {
        let mut rx = self.exit.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|s| !matches!(s, ExitState::Running)))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// SIGTERM, then SIGKILL after `grace`, until the child is reaped.
    async fn terminate(&self, grace: Duration) {
        if self.wait_exit(Duration::ZERO).await {
            return;
        }
        kill_group(self.pid, Signal::SIGTERM);
        if self.wait_exit(grace).await {
            return;
        }
        kill_group(self.pid, Signal::SIGKILL);
        // SIGKILL cannot be ignored; the bound only guards against a stuck reaper.
        self.wait_exit(grace.max(Duration::from_secs(5))).await;
    }

    /// The graceful end (see [`Connection::close`]), each wait bounded by `grace`.
    async fn close(self: Arc<Self>, grace: Duration) {
        self.requested.store(true, Ordering::Release);
        // The server's descendants while it still holds them: the ones outside its process
        // group are ended after it.
        let descendants = leftovers::descendants(self.pid);
        // Closing stdin is the polite way to ask an MCP stdio server to leave; what is
        // queued (cancellations of calls that just gave up) goes out first, within the
        // same grace period as the wait for the exit.
        let started = tokio::time::Instant::now();
        self.outbound.flush_and_close(grace).await;
        let left = grace.saturating_sub(started.elapsed());
        if !self.wait_exit(left).await {
            self.terminate(grace).await;
        }
        let mut left = descendants;
        left.extend(leftovers::adopted(&self.tag, self.pid));
        leftovers::end(&self.server, left, grace).await;
        let mut done = self.reader_done.subscribe();
        let _ = tokio::time::timeout(grace, done.wait_for(|d| *d)).await;
        self.finish("shut down by the client");
    }

    /// Calls the handler's `on_closed` once, with what is known now.
    fn finish(&self, what: &str) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.outbound.close();
        let requested = self.requested.load(Ordering::Acquire);
        let exit = self.exit.borrow().clone();
        let (message, exit_status) = match exit {
            _ if requested => ("shut down by the client".to_owned(), exit_status_of(&exit)),
            ExitState::Exited(status) => (format!("exited ({status})"), Some(status)),
            ExitState::Unknown(why) => (format!("exited (status unknown: {why})"), None),
            ExitState::Running => (what.to_owned(), None),
        };
        let stderr_tail = self
            .stderr_tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .text();
        let mut reason = CloseReason::new(message).process(ProcessExit {
            status: exit_status,
            stderr_tail,
        });
        reason.requested = requested;
        self.handler.on_closed(reason);
    }
}

fn exit_status_of(state: &ExitState) -> Option<ExitStatus> {
    match state {
        ExitState::Exited(status) => Some(*status),
        _ => None,
    }
}

/// Sends `signal` to the process group `pgid`; a group already gone is not an error.
fn kill_group(pgid: i32, signal: Signal) {
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pgid, %signal, error = %e, "could not signal the process group"),
    }
}

/// Kills the process group if spawning fails half-way.
struct SpawnGuard(Option<i32>);

impl Drop for SpawnGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            kill_group(pid, Signal::SIGKILL);
        }
    }
}

/// Spawns the server and starts the tasks that serve it: the writer, the stderr drain, the
/// reader and the exit watcher.
async fn spawn(
    config: &StdioConfig,
    ctx: ConnectContext,
) -> Result<StdioConnection, TransportError> {
    let tag = leftovers::new_tag();
    let (mut child, pid) = leftovers::starting(|| start_child(config, &tag))?;
    let mut guard = SpawnGuard(Some(pid));
    let (stdin, stdout, stderr) = pipes(&mut child).await?;
    let outbound = Arc::new(StdioOutbound::new(stdin, DEFAULT_MAX_QUEUED));
    let proc = Proc::new(config, &ctx, pid, tag, Arc::clone(&outbound));

    ctx.handler.on_open(Arc::clone(&outbound) as _);

    tokio::spawn(Arc::clone(&outbound).run_writer());
    tokio::spawn(Arc::clone(&proc).run_stderr_drain(stderr));
    let frame_limit = config.frame_limit.unwrap_or(ctx.frame_limit);
    let reader = tokio::spawn(Arc::clone(&proc).run_reader(stdout, frame_limit));
    tokio::spawn(Arc::clone(&proc).run_exit_watcher(child, reader.abort_handle()));

    guard.0 = None;
    tracing::debug!(server = &*ctx.server, pid, "server process spawned");
    Ok(StdioConnection { proc })
}

/// Spawns the configured command in its own process group with piped stdin, stdout and
/// stderr; the child and its pid.
fn start_child(config: &StdioConfig, tag: &str) -> Result<(Child, i32), TransportError> {
    let mut cmd = Command::new(&config.program);
    cmd.args(&config.args)
        .envs(config.env.iter().map(|(k, v)| (k, v)))
        .env(leftovers::TAG_VAR, tag)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    if let Some(cwd) = &config.cwd {
        cmd.current_dir(cwd);
    }
    let child = cmd.spawn().map_err(|e| {
        let cwd = config
            .cwd
            .as_ref()
            .map(|c| format!(" in {}", c.display()))
            .unwrap_or_default();
        // A program that is not there, or may not be run, is not there at the next attempt
        // either: the server is marked failed at once instead of restarted in a loop
        // (`enable` tries again).
        let permanent = matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
        );
        let error =
            TransportError::io(format!("could not spawn `{}`{cwd}: {e}", config.program), e);
        if permanent {
            error.permanent()
        } else {
            error
        }
    })?;
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| TransportError::new("the spawned process has no pid"))?;
    Ok((child, pid))
}

/// Takes the child's pipes: stdin as a pipe sender of our own, ready to write; stdout, with a
/// larger pipe when the kernel allows it; stderr.
async fn pipes(
    child: &mut Child,
) -> Result<(pipe::Sender, ChildStdout, ChildStderr), TransportError> {
    let io_err = |what: &str, e: std::io::Error| TransportError::io(format!("{what}: {e}"), e);
    let (stdin, stdout, stderr) =
        match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => return Err(TransportError::new("the child's pipes are missing")),
        };
    // A larger stdout pipe lets a big answer (64 KiB and more) arrive in one write and one
    // read instead of several wake-ups. Best effort: the kernel may refuse (pipe-max-size).
    let _ = nix::fcntl::fcntl(
        &stdout,
        nix::fcntl::FcntlArg::F_SETPIPE_SZ(STDOUT_PIPE_BYTES),
    );
    // A pipe sender of our own, so callers can write without awaiting (`try_write`).
    let stdin = stdin.into_owned_fd().map_err(|e| io_err("stdin", e))?;
    let stdin = pipe::Sender::from_owned_fd(stdin).map_err(|e| io_err("stdin", e))?;
    // Let the reactor see the empty pipe is writable, so `initialize` goes out at once.
    stdin.writable().await.map_err(|e| io_err("stdin", e))?;
    Ok((stdin, stdout, stderr))
}

// The tasks of a connection, each owning a handle on what they share.
impl Proc {
    /// What the tasks of the child `pid` share, before anything is known of its exit.
    fn new(
        config: &StdioConfig,
        ctx: &ConnectContext,
        pid: i32,
        tag: String,
        outbound: Arc<StdioOutbound>,
    ) -> Arc<Self> {
        let (exit, _) = watch::channel(ExitState::Running);
        let (stderr_done, _) = watch::channel(false);
        let (reader_done, _) = watch::channel(false);
        Arc::new(Proc {
            server: Arc::clone(&ctx.server),
            pid,
            tag,
            grace: config.shutdown_grace,
            exit,
            stderr_tail: Arc::new(Mutex::new(StderrTail::new(config.stderr_tail_bytes))),
            stderr_done,
            reader_done,
            requested: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            handler: Arc::clone(&ctx.handler),
            outbound,
        })
    }

    /// The stderr drain: logs each line and keeps the tail, then says it is done.
    async fn run_stderr_drain(self: Arc<Self>, stderr: ChildStderr) {
        stderr::drain(
            stderr,
            Arc::clone(&self.server),
            Arc::clone(&self.stderr_tail),
        )
        .await;
        self.stderr_done.send_replace(true);
    }

    /// The reader: hands stdout's frames to the handler until it ends, then sees the child out
    /// (terminating it if it lingers) and closes the connection.
    async fn run_reader(self: Arc<Self>, mut stdout: ChildStdout, frame_limit: usize) {
        let mut lines = LineReader::new(frame_limit);
        // Input means the requests before it are out: the next one may go at once, or once the
        // callers its frames answered have sent theirs (the writer counts them).
        let end_burst = || self.outbound.end_burst();
        let handler = Gathering::new(Arc::clone(&self.handler), Arc::clone(&self.outbound));
        let what = match lines.run(&mut stdout, &handler, &end_burst).await {
            Ok(()) => "stdout closed".to_owned(),
            Err(e) => format!("reading stdout failed: {e}"),
        };
        drop(stdout);
        self.outbound.close();
        // The server closed stdout: it is exiting, or it is of no more use.
        if !self.wait_exit(self.grace).await {
            self.terminate(self.grace).await;
        }
        let mut stderr_done = self.stderr_done.subscribe();
        let _ = tokio::time::timeout(self.grace, stderr_done.wait_for(|d| *d)).await;
        self.finish(&what);
        self.reader_done.send_replace(true);
    }

    /// The exit watcher: reaps the child, kills the rest of its group, and closes the
    /// connection itself (stopping the reader) if stdout stays open after the exit.
    async fn run_exit_watcher(self: Arc<Self>, mut child: Child, reader_abort: AbortHandle) {
        let state = match child.wait().await {
            Ok(status) => ExitState::Exited(status),
            Err(e) => ExitState::Unknown(e.to_string()),
        };
        self.exit.send_replace(state);
        // Whatever is left of the group (a grandchild holding stdout) goes with the leader,
        // and so do the orphans of the server this process adopted (as a subreaper).
        kill_group(self.pid, Signal::SIGKILL);
        let adopted = leftovers::adopted(&self.tag, self.pid);
        if !adopted.is_empty() {
            let (server, grace) = (Arc::clone(&self.server), self.grace);
            tokio::spawn(async move { leftovers::end(&server, adopted, grace).await });
        }
        let mut done = self.reader_done.subscribe();
        if tokio::time::timeout(self.grace, done.wait_for(|d| *d))
            .await
            .is_err()
        {
            // Something outside the group holds stdout open: stop reading anyway.
            reader_abort.abort();
            tracing::warn!(
                server = &*self.server,
                "server exited but its stdout stays open; closing the connection"
            );
            self.finish("stdout still open after exit");
        }
    }
}

/// An open stdio connection. See the [module docs](self) for shutdown and drop.
pub struct StdioConnection {
    proc: Arc<Proc>,
}

impl fmt::Debug for StdioConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioConnection")
            .field("server", &self.proc.server)
            .field("pid", &self.proc.pid)
            .field("exited", &self.proc.exited())
            .finish()
    }
}

impl Connection for StdioConnection {
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        let grace = self.proc.grace;
        self.close_within(grace)
    }

    fn close_within(self: Box<Self>, grace: Duration) -> BoxFuture<'static, ()> {
        let proc = Arc::clone(&self.proc);
        proc.requested.store(true, Ordering::Release);
        Box::pin(async move {
            proc.close(grace).await;
            drop(self);
        })
    }

    fn process_id(&self) -> Option<u32> {
        u32::try_from(self.proc.pid).ok()
    }
}

impl Drop for StdioConnection {
    fn drop(&mut self) {
        if self.proc.exited() {
            return;
        }
        self.proc.requested.store(true, Ordering::Release);
        self.proc.outbound.close();
        let mut left = leftovers::descendants(self.proc.pid);
        left.extend(leftovers::adopted(&self.proc.tag, self.proc.pid));
        kill_group(self.proc.pid, Signal::SIGKILL);
        leftovers::kill_now(&left);
        if tokio::runtime::Handle::try_current().is_err() {
            // No runtime, so no exit watcher will ever reap the child: do it here.
            reap_blocking(self.proc.pid);
        }
    }
}

/// Reaps `pid` after a SIGKILL, waiting at most a few seconds.
fn reap_blocking(pid: i32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(Errno::EINTR) => {}
            // Reaped now, reaped before (ECHILD), or out of patience.
            _ => return,
        }
    }
}
